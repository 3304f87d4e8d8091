#!/usr/bin/env bash
# A kill anywhere costs no finished work: a run of the reclustering bar (40 frames, its events from
# frame 32) is killed (SIGKILL) at HDF5 call boundaries across its whole life, set-up, frames,
# reclustering, the final status and the sidecar (tests/killat.c counts each call that creates,
# writes, grows, flushes or closes something, and kills the process at the N-th), and so is a
# resume of it from frame 20. After every kill, `csm info` reads the log and `csm run --resume`
# finishes it to the uninterrupted log, bit for bit, /recluster/events included (a log killed
# before its first frame was complete starts again from the config it stores); or, killed before
# its header was on disk (the log is made beside its place and moved there whole), there is no
# log, `csm info` and `--resume` say so in one line, and the same run started again makes it.
source "$(dirname "$0")/lib.sh" "$@"
killat=$3
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

bar="$root/tests/configs/recluster_bar.yaml"
run=(--set 'recluster={method: embedded, cond_max: 1.5, fade_out: 5, fade_in: 3}' --threads 1)

"$csm" run "$bar" "${run[@]}" --frames 40 -o "$tmp/full.h5" >/dev/null 2>&1
check "the uninterrupted run" [ $? -eq 0 ]
CSM_KILL_COUNT="$tmp/count" LD_PRELOAD="$killat" "$csm" run "$bar" "${run[@]}" --frames 40 -o "$tmp/counted.h5" \
    >/dev/null 2>&1
total=$(cat "$tmp/count" 2>/dev/null || echo 0)
check "the injector counts the run's HDF5 calls ($total)" [ "$total" -gt 1000 ]
"$csm" run "$bar" "${run[@]}" --frames 20 -o "$tmp/half.h5" >/dev/null 2>&1
cp "$tmp/half.h5" "$tmp/half_counted.h5"
CSM_KILL_COUNT="$tmp/count_resume" LD_PRELOAD="$killat" "$csm" run --resume "$tmp/half_counted.h5" --frames 40 \
    >/dev/null 2>&1
resume_total=$(cat "$tmp/count_resume" 2>/dev/null || echo 0)
check "... and the resume's ($resume_total)" [ "$resume_total" -gt 500 ]

# The kill points: every 40th boundary, and each of the last 60 (the last frame, the status, the
# sidecar and the close).
points() {
    local n=$1
    { seq 1 40 "$n"; seq $((n > 60 ? n - 59 : 1)) "$n"; } | sort -n | uniq
}

# Kill `csm run ARGS` at boundary $1 with the log $2; then read, resume (or start again) and
# keep the log for the comparison. Prints what was wrong, nothing when all was well.
trial() {
    local at=$1 log=$2
    shift 2
    CSM_KILL_AT=$at LD_PRELOAD="$killat" "$csm" run "$@" >/dev/null 2>&1
    local rc=$? out
    [ $rc -eq 137 ] || { echo "boundary $at: exit $rc, not killed"; return; }
    out=$("$csm" info "$log" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        [ $rc -eq 1 ] || [ $rc -eq 2 ] || { echo "boundary $at: csm info exit $rc: $out"; return; }
        [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] || { echo "boundary $at: csm info says more than a line: $out"; return; }
        out=$("$csm" run --resume "$log" --frames 40 2>&1)
        rc=$?
        [ $rc -eq 1 ] || [ $rc -eq 2 ] || { echo "boundary $at: a resume of a log info cannot read: exit $rc: $out"; return; }
        [ ! -e "$log" ] || { echo "boundary $at: csm info cannot read the log there: $out"; return; }
        "$csm" run "$bar" "${run[@]}" --frames 40 -o "$log" >/dev/null 2>&1 ||
            { echo "boundary $at: the run could not start again"; return; }
        echo "$at" >>"$tmp/unreadable"
    else
        out=$("$csm" run --resume "$log" --frames 40 2>&1) || { echo "boundary $at: the resume failed: $out"; return; }
    fi
    echo "$log" >>"$tmp/logs"
}

: >"$tmp/logs"
: >"$tmp/unreadable"
bad=0
for at in $(points "$total"); do
    msg=$(trial "$at" "$tmp/run_$at.h5" "$bar" "${run[@]}" --frames 40 -o "$tmp/run_$at.h5")
    [ -z "$msg" ] || { echo "run: $msg"; bad=$((bad + 1)); }
done
nrun=$(points "$total" | wc -l)
check "a run killed at $nrun boundaries: each log read and resumed ($(wc -l <"$tmp/unreadable") killed before it existed)" \
    [ $bad -eq 0 ]
bad=0
for at in $(points "$resume_total"); do
    cp "$tmp/half.h5" "$tmp/resume_$at.h5"
    msg=$(trial "$at" "$tmp/resume_$at.h5" --resume "$tmp/resume_$at.h5" --frames 40)
    [ -z "$msg" ] || { echo "resume: $msg"; bad=$((bad + 1)); }
done
nresume=$(points "$resume_total" | wc -l)
echo "killed the run at $nrun of its $total boundaries ($(wc -l <"$tmp/unreadable") before its log existed), its resume at $nresume of $resume_total"
check "a resume killed at $nresume boundaries: each log read and resumed" [ $bad -eq 0 ]

# every finished log against the uninterrupted one, datasets but the timings, byte for byte
differ=$("$py" - "$tmp/full.h5" "$tmp/logs" <<'PYEOF'
import sys, h5py
def datasets(f):
    names = []
    f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and not n.startswith("timings") else None)
    return names
with h5py.File(sys.argv[1], "r") as a:
    names = datasets(a)
    want = {n: (a[n].shape, a[n][()].tobytes()) for n in names}
    events = len(a["recluster/events"])
bad = []
for path in open(sys.argv[2]).read().split():
    with h5py.File(path, "r") as b:
        wrong = [n for n in names if n not in b or (b[n].shape, b[n][()].tobytes()) != want[n]]
        if wrong:
            bad.append(f"{path}: {wrong[:4]}")
print(f"{events} events;", "\n".join(bad) if bad else "all the same")
PYEOF
)
echo "$differ" | head -5
check "every killed run and resume, finished, is the uninterrupted log bit for bit" \
    grep -q "all the same" <<<"$differ"
check "... which reclusters" grep -qE "^[1-9][0-9]* events" <<<"$differ"

finish
