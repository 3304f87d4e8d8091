#!/usr/bin/env bash
# The command line: exit codes and one-line messages for bad input, csm list and csm check.
set -u
csm=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect CODE PATTERN -- command...
expect() {
    local code=$1 pattern=$2
    shift 3
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -eq "$code" ] && printf '%s' "$out" | grep -qE -- "$pattern"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $* -> exit $rc (want $code), output: $out (want /$pattern/)"
    fi
}

printf 'objects:\n  - shape: {type: box}\nsolver: {alpha: 3}\n' >"$tmp/bad.yaml"
printf 'objects:\n  - shape: {type: box, size: [0.2, 0.2, 0.2]}\n    sampling: {spacing: 0.1}\ntime: {frames: 3}\n' >"$tmp/ok.yaml"
# a thin torus whose grid points all fall in its hole or outside its tube
printf 'objects:\n  - shape: {type: torus, major: 0.5, minor: 0.01}\n    sampling: {spacing: 0.45}\n' >"$tmp/empty.yaml"

expect 2 "usage" -- "$csm"
expect 2 "unknown command 'frobnicate'" -- "$csm" frobnicate
expect 0 "integrator \(solver.integrator\)" -- "$csm" list
for plugin in shape_matching polar_apq polar_f random_radius gravity plane none; do
    expect 0 "^  $plugin — " -- "$csm" list
done
expect 0 "alpha +real +default 0.5 in \[0, 1\]" -- "$csm" list
expect 2 "bad.yaml:3: solver.alpha = 3 is outside \[0, 1\]" -- "$csm" check "$tmp/bad.yaml"
expect 2 "bad.yaml:3: solver.alpha = 3 is outside" -- "$csm" run "$tmp/bad.yaml" -o "$tmp/bad.h5"
[ ! -e "$tmp/bad.h5" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a log was left for a bad config"; }
expect 2 "no particle inside the shape" -- "$csm" check "$tmp/empty.yaml"
expect 2 "cannot open config" -- "$csm" check "$tmp/missing.yaml"
expect 2 "is a directory" -- "$csm" run "$tmp"
expect 2 "unknown or incomplete option '--fast'" -- "$csm" run "$tmp/ok.yaml" --fast
expect 2 "--threads x: expected a positive integer" -- "$csm" run "$tmp/ok.yaml" --threads x
expect 0 "substeps: 1" -- "$csm" check "$tmp/ok.yaml"
expect 0 "alpha: 0.25" -- "$csm" check "$tmp/ok.yaml" --set solver.alpha=0.25
expect 0 "log: +$tmp/sub/dir/ok.h5" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/sub/dir/ok.h5"
expect 2 "already exists \(use --force" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/sub/dir/ok.h5"
expect 0 "sidecar: $tmp/sub/dir/ok.xmf" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/sub/dir/ok.h5" --force
expect 0 "status +ok" -- "$csm" info "$tmp/sub/dir/ok.h5"
expect 0 "frames +4 " -- "$csm" info "$tmp/sub/dir/ok.h5"
expect 2 "not an HDF5 file" -- "$csm" info "$tmp/ok.yaml"
# every shipped config validates
for c in "$root"/experiments/configs/*.yaml; do
    expect 0 "is valid" -- "$csm" check "$c"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
