# What every shell test shares. A test starts with
#
#     source "$(dirname "$0")/lib.sh" "$@"
#
# and has then
#     csm, root   the csm binary and the source tree (the test's two arguments)
#     py          Debian's python3, which has h5py and numpy
#     tmp         a folder that is removed when the test exits
#     check NAME COMMAND...             passes when COMMAND exits 0
#     expect CODE PATTERN -- COMMAND... passes when COMMAND exits CODE and its output (stdout and
#                                       stderr) matches the extended regular expression PATTERN
#     pass_ / fail_ NAME                count a result decided by the test itself
#     pylog ARGS... <<'PY' ... PY       runs Python with tests/logcheck.py importable
#     finish                            prints the counts; the test fails when any check did
# Checks go on after a failure, so one run reports every failure.
# shellcheck shell=bash
set -u
csm=$1
root=$2
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

pass_() { pass=$((pass + 1)); }
fail_() {
    fail=$((fail + 1))
    echo "FAIL: $*"
}

check() {
    local name=$1
    shift
    if "$@"; then pass_; else fail_ "$name"; fi
}

expect() {
    local code=$1 pattern=$2
    shift 3
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -eq "$code" ] && printf '%s' "$out" | grep -qE -- "$pattern"; then
        pass_
    else
        fail_ "$* -> exit $rc (want $code), output: $out (want /$pattern/)"
    fi
}

# A Python check from standard input; its own failures count as one.
pylog() {
    if PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "$py" - "$@"; then pass_; else fail_ "python checks (above)"; fi
}

finish() {
    echo "$(basename "$0" .sh): $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
