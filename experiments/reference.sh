#!/usr/bin/env bash
# Rewrite the parameter reference of docs/parameters.md (between its two marker lines) from
# `csm list --markdown`: `make reference` after a parameter table changes. With --check, only
# say whether the page is current (exit 1 when stale); tests/test_cli.sh does.
set -euo pipefail
csm=${1:?usage: experiments/reference.sh CSM [PAGE] [--check]}
readme=${2:-docs/parameters.md}
mode=${3:-}
begin='<!-- parameter reference: begin -->'
end='<!-- parameter reference: end -->'
new=$(mktemp)
trap 'rm -f "$new"' EXIT
{
    sed "/^$begin\$/q" "$readme"
    "$csm" list --markdown
    sed -n "/^$end\$/,\$p" "$readme"
} >"$new"
grep -qx -- "$begin" "$readme" && grep -qx -- "$end" "$readme" || { echo "$readme has no reference markers" >&2; exit 2; }
if [ "$mode" = --check ]; then
    cmp -s "$new" "$readme" || { echo "$readme: the parameter reference is stale (make reference)" >&2; exit 1; }
else
    cp "$new" "$readme"
fi
