#!/usr/bin/env bash
# Faults during a run cost no finished work: kill -9 leaves a log csm info and h5py read, with
# status running; SIGINT and SIGTERM close it as interrupted (exit 130); a write error (a file
# size limit) stops the run with a message and keeps the frames before it; a blow-up stops the
# run as failed, naming the particle and the frame; and `csm run --resume` continues any of
# these logs to the same bits as a run never stopped.
source "$(dirname "$0")/lib.sh" "$@"

# Every dataset but the timings, byte for byte: prints "same" or what differs.
compare() {
    "$py" - "$1" "$2" <<'PYEOF'
import sys, h5py
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and not n.startswith("timings") else None)
bad = [n for n in names if n not in b or a[n].shape != b[n].shape or a[n][()].tobytes() != b[n][()].tobytes()]
print("same" if names and not bad else "differ: %s" % bad[:5])
PYEOF
}

# Rows of /frames/time, and whether every per-frame dataset holds exactly that many frames.
frames_of() {
    "$py" - "$1" <<'PYEOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    T = len(f["frames/time"])
    whole = all(len(f[n]) == T for n in ("frames/positions", "frames/velocities", "diagnostics/kinetic_energy",
                                          "clusters/count", "checkpoint/frame", "clusters/membership_version")) and len(f["clusters/frame_membership"]) == T + 1
    print(T, "whole" if whole else "ragged", f.attrs["status"].split(":")[0])
PYEOF
}

# Start a long run in the background; wait until its log holds at least $2 frames.
cube="$root/experiments/configs/drop_cube.yaml"
long=(--frames 150 --set time.substeps=40 --threads 1)
start_long() {
    "$csm" run "$cube" "${long[@]}" -o "$1" >"$1.out" 2>&1 &
    pid=$!
    local k fr
    for k in $(seq 600); do
        sleep 0.05
        fr=$("$csm" info "$1" 2>/dev/null | awk '$1 == "frames" {print $2}')
        [ "${fr:-0}" -ge "$2" ] && return 0
        kill -0 $pid 2>/dev/null || return 1
    done
    return 1
}

"$csm" run "$cube" "${long[@]}" -o "$tmp/full.h5" >/dev/null 2>&1
check "the uninterrupted run" [ $? -eq 0 ]

# --- kill -9 -----------------------------------------------------------------------------
start_long "$tmp/kill.h5" 20
check "the run to kill logs frames" [ $? -eq 0 ]
"$csm" info "$tmp/kill.h5" >"$tmp/live.txt" 2>&1
check "csm info reads a log being written" grep -q "a run is writing this log now" "$tmp/live.txt"
"$csm" run --resume "$tmp/kill.h5" >"$tmp/live_resume.txt" 2>&1
rc=$?
check "a running log is not resumed (exit $rc)" [ $rc -eq 2 ]
check "... and says why, naming the writer's pid" grep -qE "cannot be resumed while it runs \(pid [0-9]+\)" "$tmp/live_resume.txt"
# one writer per log: a --force run onto a log being written is refused and leaves it alone
"$csm" run "$cube" "${long[@]}" -o "$tmp/kill.h5" --force >"$tmp/force.txt" 2>&1
rc=$?
check "--force onto a log being written: exit 2 (got $rc)" [ $rc -eq 2 ]
check "... names the writer" grep -q "kill.h5: another csm process (pid $pid) is writing this log" "$tmp/force.txt"
check "... and the writer goes on" kill -0 $pid
kill -9 $pid
wait $pid 2>/dev/null
"$csm" info "$tmp/kill.h5" >"$tmp/killed.txt" 2>&1
check "csm info reads a killed run's log" [ $? -eq 0 ]
check "... and says the run stopped without closing it" grep -q "stopped without closing it" "$tmp/killed.txt"
check "... status running" grep -qE "^  status +running" "$tmp/killed.txt"
read -r T whole status < <(frames_of "$tmp/kill.h5")
ok=no
[ "${T:-0}" -ge 20 ] && [ "$whole" = whole ] && [ "$status" = running ] && ok=yes
check "h5py reads the killed log: $T whole frames ($whole), status $status" [ $ok = yes ]
"$csm" run --resume "$tmp/kill.h5" >/dev/null 2>"$tmp/resume.err"
check "resume after kill -9" [ $? -eq 0 ]
check "... says where it resumes" grep -q "resuming .* at frame" "$tmp/resume.err"
check "resumed after kill -9 = uninterrupted, bit for bit" [ "$(compare "$tmp/full.h5" "$tmp/kill.h5")" = same ]
check "csm info counts the resume" grep -qE "resumed +1 time" <("$csm" info "$tmp/kill.h5")
# --frames below the frame a log holds: refused, and the log is left as it was
cp "$tmp/kill.h5" "$tmp/kill_before.h5"
"$csm" run --resume "$tmp/kill.h5" --frames 3 >/dev/null 2>"$tmp/short.err"
rc=$?
check "resume with --frames below the log's frame: exit 2 (got $rc)" [ $rc -eq 2 ]
check "... says why, in one line" [ "$(grep -c "already holds frame .*, past the 3 frames asked" "$tmp/short.err")" = 1 ]
check "... and leaves the log as it was" [ "$(compare "$tmp/kill_before.h5" "$tmp/kill.h5")" = same ]
check "... status still ok" grep -qE "^  status +ok" <("$csm" info "$tmp/kill.h5")

# --- SIGINT and SIGTERM ------------------------------------------------------------------
for sig in INT TERM; do
    start_long "$tmp/$sig.h5" 15
    kill -$sig $pid
    wait $pid
    rc=$?
    check "SIG$sig: exit 130 (got $rc)" [ $rc -eq 130 ]
    read -r T whole status < <(frames_of "$tmp/$sig.h5")
    ok=no
    [ "$status" = interrupted ] && [ "$whole" = whole ] && ok=yes
    check "SIG$sig: status interrupted ($status), whole frames" [ $ok = yes ]
    check "SIG$sig: the message says how to continue" grep -q "csm run --resume" "$tmp/$sig.h5.out"
    "$csm" run --resume "$tmp/$sig.h5" --threads 2 >/dev/null 2>&1
    check "SIG$sig: resumed on 2 threads = uninterrupted" [ "$(compare "$tmp/full.h5" "$tmp/$sig.h5")" = same ]
done

# --- a write error: the file may not grow past 3 MB, then 8 MB ----------------------------
# a run whose log cannot fit is refused before it writes anything
(
    ulimit -f 3000
    exec "$csm" run "$cube" "${long[@]}" -o "$tmp/full_disk.h5"
) >"$tmp/nofit.out" 2>&1
rc=$?
check "no fit: a new run whose log needs more than the limit exits 1 (got $rc)" [ $rc -eq 1 ]
check "... saying what it needs and what there is" \
    grep -qE "full_disk.h5: the log needs about [0-9.]+ MB \(151 frames of 1331 particles\) and [0-9.]+ MB are left under the file size limit \(ulimit -f\); nothing was written" "$tmp/nofit.out"
check "... and leaving no file" [ ! -e "$tmp/full_disk.h5" ]
# a limit met in the middle of a run: a short run that fits, resumed for the whole run
short=(--frames 10 --set time.substeps=40 --threads 1)
"$csm" run "$cube" "${short[@]}" -o "$tmp/full_disk.h5" >/dev/null 2>&1
(
    ulimit -f 8000
    exec "$csm" run --resume "$tmp/full_disk.h5" --frames 150
) >"$tmp/disk.out" 2>&1
rc=$?
check "write error: exit 1 (got $rc)" [ $rc -eq 1 ]
check "write error: one line naming the file and frame" grep -qE "full_disk.h5: write error at frame [0-9]+ \(file size limit\)" "$tmp/disk.out"
# a resume with no more room is refused before it writes anything: the log stays readable (a resume
# that found no room used to leave it unreadable)
(
    ulimit -f 8000
    exec "$csm" run --resume "$tmp/full_disk.h5"
) >"$tmp/noroom.out" 2>&1
rc=$?
check "no room: the resume exits 1 (got $rc)" [ $rc -eq 1 ]
check "no room: it says what room there is and what it needs" \
    grep -qE "full_disk.h5: .* left under the file size limit \(ulimit -f\), and a resume needs .*; nothing was written" "$tmp/noroom.out"
# like a crash, the log needs its open-for-writing mark cleared, which csm info does (docs/DESIGN.md)
"$csm" info "$tmp/full_disk.h5" >"$tmp/disk_info.txt" 2>&1
check "write error: csm info reads the log" grep -q "stopped without closing it" "$tmp/disk_info.txt"
read -r T whole status < <(frames_of "$tmp/full_disk.h5")
ok=no
[ "${T:-0}" -ge 2 ] && [ "$whole" = whole ] && ok=yes
check "write error: h5py reads the $T frames before it" [ $ok = yes ]
"$csm" run --resume "$tmp/full_disk.h5" >/dev/null 2>&1
check "write error: resumed with room = uninterrupted" [ "$(compare "$tmp/full.h5" "$tmp/full_disk.h5")" = same ]

# --- a full disk (an 8 MB tmpfs, where this machine lets the test mount one) -----------------
small="$tmp/small"
mkdir -p "$small"
if mount -t tmpfs -o size=8m tmpfs "$small" 2>/dev/null; then
    trap 'umount "$small" 2>/dev/null; rm -rf "$tmp"' EXIT
    "$csm" run "$cube" "${long[@]}" -o "$small/v.h5" >"$tmp/tmpfs.out" 2>&1
    check "full disk: a run whose log cannot fit is refused" grep -qE "the log needs about .* free on its file system; nothing was written" "$tmp/tmpfs.out"
    "$csm" run "$cube" "${short[@]}" -o "$small/v.h5" >/dev/null 2>&1
    "$csm" run --resume "$small/v.h5" --frames 150 >"$tmp/tmpfs.out" 2>&1
    check "full disk: the run stops on a write error" grep -qE "write error at frame [0-9]+ \(disk full\)" "$tmp/tmpfs.out"
    # read as it stands, writing nothing: the killed writer's mark stays until csm clears it
    swmr_frames() { "$py" -c "import sys, h5py; print(len(h5py.File(sys.argv[1], 'r', swmr=True)['frames/time']))" "$1" 2>/dev/null; }
    T0=$(swmr_frames "$small/v.h5")
    "$csm" run --resume "$small/v.h5" >"$tmp/tmpfs_resume.out" 2>&1
    rc=$?
    check "full disk: the resume is refused, exit 1 (got $rc)" [ $rc -eq 1 ]
    check "full disk: it says the room is missing" grep -q "free on its file system, and a resume needs" "$tmp/tmpfs_resume.out"
    T1=$(swmr_frames "$small/v.h5")
    ok=no
    [ "${T0:-0}" -ge 2 ] && [ "${T1:-0}" = "$T0" ] && ok=yes
    check "full disk: the log still reads, all its $T0 frames ($T1 after the refused resume)" [ $ok = yes ]
    mount -o remount,size=64m "$small"
    "$csm" run --resume "$small/v.h5" >/dev/null 2>&1
    check "full disk: with room, the resume = uninterrupted" [ "$(compare "$tmp/full.h5" "$small/v.h5")" = same ]
    umount "$small"
else
    echo "note: no tmpfs here; the file size limit above stands for a full disk"
fi

# --- --force over an old log, killed: no sidecar of the old run is left to describe the new log
printf 'objects:\n  - shape: {type: box, size: [0.4, 0.4, 0.4]}\n    sampling: {spacing: 0.1}\ntime: {frames: 5}\n' >"$tmp/side.yaml"
"$csm" run "$tmp/side.yaml" -o "$tmp/side.h5" >/dev/null 2>&1
had=no
[ -e "$tmp/side.xmf" ] && [ -e "$tmp/side.view.hdf5" ] && had=yes
"$csm" run "$tmp/side.yaml" -o "$tmp/side.h5" --force --frames 10000000 --set output.every=1000 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
    [ -e "$tmp/side.xmf" ] || break
    sleep 0.05
done
sleep 0.3
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
ok=no
[ $had = yes ] && [ ! -e "$tmp/side.xmf" ] && [ ! -e "$tmp/side.view.hdf5" ] && ok=yes
check "--force then kill -9: the old run's sidecar and view file are gone (they had been there: $had)" [ $ok = yes ]

# --- blow-ups -----------------------------------------------------------------------------
# an explicit step of a stiff force with no shape matching to hold it diverges
printf 'objects:\n  - shape: {type: box, size: [0.4, 0.4, 0.4]}\n    sampling: {spacing: 0.1}\ntime: {frames: 400}\nsolver: {alpha: 0.0}\nforces: [{type: compress, scale: 1e5, axis: x, until: 100}]\n' >"$tmp/blow.yaml"
"$csm" run "$tmp/blow.yaml" -o "$tmp/blow.h5" >"$tmp/blow.out" 2>&1
rc=$?
check "NaN: exit 1 (got $rc)" [ $rc -eq 1 ]
# it stops at the first frame whose state or budget the diagnostics could not hold: a speed or
# place whose energy overflows, or the work or dissipation summed, before any position is infinite
unstable="(non-finite (position|velocity) of particle [0-9]+|the (speed|position) of particle [0-9]+ \\([^)]*\\) overflows its energy|the work done on the bodies or the energy they dissipated overflows) at frame [0-9]+"
check "NaN: names what and the frame" grep -qE "$unstable" "$tmp/blow.out"
read -r T whole status < <(frames_of "$tmp/blow.h5")
ok=no
[ "${T:-0}" -gt 10 ] && [ "$whole" = whole ] && [ "$status" = failed ] && ok=yes
check "NaN: status failed, the $T frames before it kept" [ $ok = yes ]
check "NaN: the status names the frame" grep -qE "status +failed: .* at frame $T " <("$csm" info "$tmp/blow.h5")
check "NaN: every diagnostic it logged is finite" "$py" -c "import sys, h5py, numpy as np; d = h5py.File(sys.argv[1], 'r')['diagnostics']; sys.exit(0 if all(np.isfinite(d[k][:]).all() for k in d) else 1)" "$tmp/blow.h5"
"$csm" run "$tmp/blow.yaml" -o "$tmp/fast.h5" --set time.max_speed=100 >"$tmp/fast.out" 2>&1
rc=$?
check "max_speed: exit 1 (got $rc)" [ $rc -eq 1 ]
check "max_speed: names particle, speed, bound and frame" \
    grep -qE "particle [0-9]+ moves at [0-9.]+ m/s, beyond time.max_speed = 100, at frame 1 " "$tmp/fast.out"

# --- resume with reclustering, plasticity, fading, the quadratic mode and the lagged flow ----
bar="$root/tests/configs/recluster_bar.yaml"
for mode in linear quadratic lagged; do
    update=immediate
    [ $mode = lagged ] && update=lagged
    sets=(--set 'recluster={method: embedded, cond_max: 1.5, fade_out: 5, fade_in: 3}' --set output.goals=true
          --set solver.mode=${mode/lagged/linear} --set plasticity.update=$update)
    "$csm" run "$bar" "${sets[@]}" --frames 45 -o "$tmp/bar_$mode.h5" >/dev/null 2>&1
    ok=yes
    for cut in 10 33; do
        "$csm" run "$bar" "${sets[@]}" --frames $cut -o "$tmp/bar_${mode}_$cut.h5" >/dev/null 2>&1 &&
            "$csm" run --resume "$tmp/bar_${mode}_$cut.h5" --frames 45 >/dev/null 2>&1 || ok=no
        [ "$(compare "$tmp/bar_$mode.h5" "$tmp/bar_${mode}_$cut.h5")" = same ] || ok=no
    done
    check "reclustering bar ($mode): stopped at 10 and 33, resumed to 45 = uninterrupted" [ $ok = yes ]
done
events=$("$py" -c "import h5py,sys; e=h5py.File(sys.argv[1])['recluster/events'][:]; print(sum(e['frame'] > 33))" "$tmp/bar_linear.h5")
check "the bar reclusters after the last cut ($events events)" [ "${events:-0}" -gt 0 ]
# a write that failed after /recluster/events grew leaves rows of zeros: info and the reader count
# the written rows only, and a resume cuts the zeros with the rest of the unfinished frame
sets=(--set 'recluster={method: embedded, cond_max: 1.5, fade_out: 5, fade_in: 3}' --set output.goals=true
      --set solver.mode=linear --set plasticity.update=immediate)
"$csm" run "$bar" "${sets[@]}" --frames 33 -o "$tmp/zeros.h5" >/dev/null 2>&1
"$py" - "$tmp/zeros.h5" <<'PYEOF'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    e = f["recluster/events"]
    e.resize((e.shape[0] + 7,))
PYEOF
zinfo=$("$csm" info "$tmp/zeros.h5" 2>&1)
check "zero rows: csm info names the rows never written" grep -q "7 rows after them were never written" <(printf '%s\n' "$zinfo")
n33=$("$py" -c "import h5py,sys; e=h5py.File(sys.argv[1])['recluster/events'][:]; print(sum(e['frame'] <= 33))" "$tmp/bar_linear.h5")
nread=$(PYTHONPATH="$root/python" "$py" -c "import csm,sys; print(len(csm.open(sys.argv[1]).events))" "$tmp/zeros.h5")
check "zero rows: the reader returns the $n33 written ($nread)" [ "$nread" = "$n33" ]
"$csm" run --resume "$tmp/zeros.h5" --frames 45 >/dev/null 2>&1
check "zero rows: resumed to 45 = uninterrupted" [ "$(compare "$tmp/bar_linear.h5" "$tmp/zeros.h5")" = same ]

# logs whose datasets disagree in shape: csm info says "corrupt log" and exits 2, the reader raises
# corrupt NAME WHAT EDIT WANT: a copy of the bar's log edited by the Python statement EDIT (on f)
corrupt() {
    cp "$tmp/bar_linear.h5" "$tmp/$1.h5"
    "$py" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); $3" "$tmp/$1.h5"
    "$csm" info "$tmp/$1.h5" >/dev/null 2>"$tmp/$1.txt"
    local rc=$?
    check "$2: csm info exits 2 (got $rc)" [ $rc -eq 2 ]
    check "... and says $4" grep -q "$4" "$tmp/$1.txt"
}
corrupt long_time "a longer /frames/time" "t=f['frames/time']; t.resize((t.shape[0] + 5,))" "corrupt log: /frames/time holds"
corrupt bad_offsets "offsets past the members" "f['clusters/offsets'][-1] = 10**6" "corrupt log: /clusters/offsets row"
# a frame begun but not complete: its rows in the frame datasets, not yet in /frames/time (what a
# reader of a live log sees when the writer goes on between two reads); read with /frames/time's frames
cp "$tmp/bar_linear.h5" "$tmp/begun.h5"
"$py" -c "
import h5py,sys
f=h5py.File(sys.argv[1],'r+')
for n in ('frames/positions','frames/velocities'):
    d=f[n]; d.resize((d.shape[0] + 1,) + d.shape[1:])" "$tmp/begun.h5"
Tb=$("$py" -c "import h5py,sys; print(len(h5py.File(sys.argv[1])['frames/time']))" "$tmp/begun.h5")
"$csm" info "$tmp/begun.h5" >"$tmp/begun.txt" 2>&1
check "a frame begun past /frames/time: csm info reads the log (exit $?)" grep -qE "^  frames +$Tb " "$tmp/begun.txt"
nb=$(grep -c "<Time " "$tmp/begun.xmf" 2>/dev/null)
check "... and the sidecar it writes holds the $Tb complete frames ($nb)" [ "$nb" = "$Tb" ]
out=$(PYTHONPATH="$root/python" "$py" -c "import csm,sys; l=csm.open(sys.argv[1]); l.clusters(len(l.time) - 1)" "$tmp/bad_offsets.h5" 2>&1)
check "... the reader raises, allocating nothing" grep -q "ValueError: corrupt log" <(printf '%s\n' "$out")

# --- what resume refuses ------------------------------------------------------------------
"$csm" run --resume "$tmp/blow.yaml" >"$tmp/r1.txt" 2>&1
check "resume of a non-log: exit 2" [ $? -eq 2 ]
check "... one line naming it" grep -q "blow.yaml: not an HDF5 file" "$tmp/r1.txt"
"$csm" run --resume "$tmp/full.h5" --set solver.alpha=0.2 >"$tmp/r2.txt" 2>&1
check "resume takes no --set: exit 2" [ $? -eq 2 ]
cp "$tmp/bar_linear.h5" "$tmp/moved.h5"
"$py" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f['rest/positions'][0,0] += 1e-9" "$tmp/moved.h5"
"$csm" run --resume "$tmp/moved.h5" --frames 50 >"$tmp/r3.txt" 2>&1
check "resume refuses a log whose config builds other particles: exit 2" [ $? -eq 2 ]
check "... and says so" grep -q "no longer builds the same particles" "$tmp/r3.txt"

# a resume with --frames stores the frames it runs: a later resume without them continues from
# there (it was refused: the stored config still asked for the first run's frames)
printf 'name: more\nobjects:\n  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n    sampling: {spacing: 0.1}\n' >"$tmp/more.yaml"
"$csm" run "$tmp/more.yaml" --frames 5 -o "$tmp/more.h5" >/dev/null 2>&1
"$csm" run --resume "$tmp/more.h5" --frames 12 >/dev/null 2>&1
expect 0 "" -- "$csm" run --resume "$tmp/more.h5"
pylog "$tmp/more.h5" <<'PY'
import sys
from logcheck import check, finish, log
f = log(sys.argv[1])
check("frames: 12" in f.attrs["config"] and f["frames/time"].shape[0] == 13 and f.attrs["status"] == "ok",
      "the log stores the resumed run's 12 frames and holds them, status ok")
finish()
PY

# the output folder moved while the run writes: the status still reaches the file (it went to the
# old path, and the moved log said `running`), and the run says where it stands
mkdir -p "$tmp/mv1"
"$csm" run "$tmp/more.yaml" --frames 100000000 --set output.every=1000 -o "$tmp/mv1/long.h5" >"$tmp/mv.txt" 2>&1 &
pid=$!
sleep 1
mv "$tmp/mv1" "$tmp/mv2"
sleep 0.5
kill -INT $pid
wait $pid
code=$?
check "moved mid-run, interrupted: exit 130 ($code)" [ "$code" -eq 130 ]
check "... the run says the log moved and what it holds" grep -q "moved while it was written; it holds status 'interrupted'" "$tmp/mv.txt"
expect 0 "status +interrupted" -- "$csm" info "$tmp/mv2/long.h5"

# a log left open for writing outside SWMR (a resume killed while it restores, a run killed
# while it writes its final status: HDF5's plain mark, which h5py refuses) is recovered by csm
# info and by --resume once no process holds its lock, and resumes to the uninterrupted run's bits
"$csm" run "$tmp/more.yaml" --frames 8 -o "$tmp/plain.h5" >/dev/null 2>&1
"$csm" run "$tmp/more.yaml" --frames 20 -o "$tmp/plain_whole.h5" >/dev/null 2>&1
mark() { # leaves the plain open-for-writing mark on $1, as a kill -9 of its writer does
    ("$py" -c 'import h5py, os, sys
f = h5py.File(sys.argv[1], "r+", libver="latest"); f.flush(); os.kill(os.getpid(), 9)' "$1") 2>/dev/null
}
mark "$tmp/plain.h5"
check "the plain mark makes h5py refuse the log" sh -c '! "$1" -c "import h5py, sys; h5py.File(sys.argv[1], \"r\")" "$2" 2>/dev/null' sh "$py" "$tmp/plain.h5"
flock "$tmp/plain.h5.lock" sleep 3 &
holder=$!
sleep 0.5
expect 2 "a run is opening or closing this log now" -- "$csm" run --resume "$tmp/plain.h5" --frames 20
wait $holder
expect 0 "stopped while it held the file open" -- "$csm" info "$tmp/plain.h5"
mark "$tmp/plain.h5"
expect 0 "" -- "$csm" run --resume "$tmp/plain.h5" --frames 20
pylog "$tmp/plain.h5" "$tmp/plain_whole.h5" <<'PY'
import sys
import numpy as np
from logcheck import check, finish, log
a, b = log(sys.argv[1]), log(sys.argv[2])
check(np.array_equal(a["frames/positions"][()], b["frames/positions"][()]) and a.attrs["status"] == "ok",
      "the recovered log resumed to the uninterrupted run's bits")
finish()
PY

# the view file cannot be written (here a folder is in its place): the run says so and exits 1,
# its log complete with status ok and the sidecar naming the log's own datasets (it was silent)
mkdir -p "$tmp/vw/v.view.hdf5"
"$csm" run "$tmp/more.yaml" --frames 3 -o "$tmp/vw/v.h5" >"$tmp/vw.txt" 2>&1
code=$?
check "a view file that cannot be written: exit 1 ($code)" [ "$code" -eq 1 ]
check "... says which and why" grep -q "v.view.hdf5: cannot write the view file (Is a directory)" "$tmp/vw.txt"
check "... with the log ok and its sidecar written" sh -c '"$1" info "$2" | grep -q "status  *ok" && [ -s "$3" ]' sh "$csm" "$tmp/vw/v.h5" "$tmp/vw/v.xmf"

# two writers of one sidecar at once (a run ending and a csm info that found none, or two csm
# info of a killed run's log): each writes its own files and renames them into place, so both
# succeed and the sidecar and view file are whole (they shared one temporary name: the second
# rename failed, and the view file was gone)
cp "$tmp/full.h5" "$tmp/race.h5"
bad=0
for k in 1 2 3 4 5; do
    rm -f "$tmp/race.xmf" "$tmp/race.view.hdf5"
    "$csm" info "$tmp/race.h5" >/dev/null 2>&1 &
    "$csm" info "$tmp/race.h5" >/dev/null 2>&1
    wait $!
    { xmllint --noout "$tmp/race.xmf" && [ -s "$tmp/race.view.hdf5" ] && ! ls "$tmp"/race.*tmp; } >/dev/null 2>&1 || bad=$((bad + 1))
done
check "two csm info writing one sidecar at once: both whole, nothing left behind ($bad of 5 not)" [ $bad -eq 0 ]

# a billion frames asked: the run's bookkeeping stays bounded (it kept 8 bytes a frame, 8 GB, and
# aborted under a memory limit with no message); interrupted, it ends as any run does
if ! nm -D "$(dirname "$csm")/libcsm.so" | grep -q __asan_init; then # the sanitizer reserves terabytes
    printf 'name: long\nobjects:\n  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n    sampling: {spacing: 0.1}\n' >"$tmp/long.yaml"
    # its log of a billion frames cannot fit: refused before anything is written
    expect 1 "long.h5: the log needs about [0-9.]+ [GT]B \(1000000001 frames of 64 particles\) and .* are free on its file system; nothing was written" -- \
        "$csm" run "$tmp/long.yaml" --frames 1000000000 -o "$tmp/long.h5"
    (ulimit -v 3000000 && exec timeout --preserve-status -s INT 3 "$csm" run "$tmp/long.yaml" --frames 1000000000 \
        --set output.every=10000 -o "$tmp/long.h5") >"$tmp/long.txt" 2>&1
    code=$?
    check "--frames 1000000000 (every 10000th logged) under a 3 GB limit runs until interrupted: exit 130 ($code)" [ "$code" -eq 130 ]
    pylog "$tmp/long.h5" <<'PY'
import sys
from logcheck import check, finish, log
f = log(sys.argv[1])
check(f.attrs["status"] == "interrupted" and f["frames/time"].shape[0] >= 2, f"status {f.attrs['status']}, {f['frames/time'].shape[0]} frames")
finish()
PY
    # out of memory anywhere: one line naming where, exit 1 (it aborted with no message); a
    # 1e8-particle object under the same limit
    printf 'name: big\nobjects:\n  - shape: {type: box, size: [1, 1, 1]}\n    sampling: {particles: 100000000}\n' >"$tmp/big.yaml"
    (ulimit -v 3000000 && exec "$csm" run "$tmp/big.yaml" --frames 2 --threads 1 -o "$tmp/big.h5") >"$tmp/big.txt" 2>&1
    code=$?
    check "1e8 particles under a 3 GB limit: exit 1 ($code)" [ "$code" -eq 1 ]
    check "... says out of memory, in one line" sh -c 'grep -q "^csm: out of memory in " "$1" && [ "$(wc -l <"$1")" -eq 1 ]' sh "$tmp/big.txt"
fi

# --- a corrupted chunk index --------------------------------------------------------------
# Each extensible-array index block of a log (HDF5's chunk index, signature EAIB) corrupted in
# turn: csm info and a resume each end within 10 s, exit 0, 1 or 2, and a refusal is one line.
# A resume writes in SWMR mode, where HDF5 retries a metadata read whose checksum fails a hundred
# times, backing off: it hung for minutes on some of these (3 of 17 sampled), before the resume
# read every dataset's last row back first. A corrupted global heap crashes HDF5 itself: csm says
# so, naming the log.
mkdir -p "$tmp/ea"
printf 'name: ea
time: {frames: 6}
objects:
  - shape: {type: box, size: [0.3, 0.3, 0.3]}
    sampling: {spacing: 0.1}
colliders: [{type: plane}]
forces: [{type: gravity}]
' >"$tmp/ea/ea.yaml"
"$csm" run "$tmp/ea/ea.yaml" -o "$tmp/ea/base.h5" --threads 1 >/dev/null 2>&1
# under AddressSanitizer its own report stops HDF5's overread of a corrupted heap first
sanitized=$(ldd "$csm" 2>/dev/null | grep -c libasan)
pylog "$csm" "$tmp/ea" "$sanitized" <<'PY'
import os, re, subprocess, sys
from logcheck import check, finish
csm, folder, sanitized = sys.argv[1], sys.argv[2], sys.argv[3] != "0"
data = open(os.path.join(folder, "base.h5"), "rb").read()
blocks = [m.start() for m in re.finditer(b"EAIB", data)]
check(len(blocks) > 10, f"the log has extensible-array index blocks ({len(blocks)})")


def attempts(path, what, bad):
    """csm info, then a resume, on path: (command, result) for each that ends within 10 s; one
    that does not is noted in bad"""
    for cmd in (["info", path], ["run", "--resume", path, "--frames", "8", "--threads", "1"]):
        try:
            yield cmd[0], subprocess.run([csm] + cmd, capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            bad.append(f"{what}: {cmd[0]} ran past 10 s")


bad = []
for k, at in enumerate(blocks):
    b = bytearray(data)
    b[at + 12] ^= 0xFF  # inside the block: its checksum no longer matches
    path = os.path.join(folder, f"c{k}.h5")
    open(path, "wb").write(b)
    for cmd, r in attempts(path, f"block {k}", bad):
        lines = r.stderr.decode("utf-8", "replace").strip().splitlines()
        if r.returncode not in (0, 1, 2) or (r.returncode == 2 and len(lines) != 1):
            bad.append(f"block {k}: {cmd} exit {r.returncode}: {lines[-2:]}")
check(not bad, f"every corrupted index block ends within 10 s with a clean exit: {bad[:4]}")
# a string attribute's object in the global heap (signature GCOL) given a size past the file: HDF5
# copies that much and crashes reading the attribute, or reads nothing; csm info and a resume say
# the log is corrupt in one line, exit 2
import struct
b = bytearray(data)
at = b.find(b"GCOL")
struct.pack_into("<Q", b, at + 24, 1 << 40)  # the first object's size (after its index, count, reserved)
path = os.path.join(folder, "heap.h5")
open(path, "wb").write(b)
bad = []
for cmd, r in attempts(path, "a corrupted global heap", bad):
    lines = r.stderr.decode("utf-8", "replace").strip().splitlines()
    if sanitized and any("AddressSanitizer" in line for line in lines):
        check(r.returncode != 0, f"a corrupted global heap: {cmd} stopped by AddressSanitizer's report (exit {r.returncode})")
        continue
    check(r.returncode == 2 and len(lines) == 1 and "corrupt" in lines[0] and path in lines[0],
          f"a corrupted global heap: {cmd} says so in one line, exit 2 (got {r.returncode}: {lines[-2:]})")
check(not bad, f"a corrupted global heap: info and resume end within 10 s: {bad}")
# a corpus: 60 copies, each with 6 bytes anywhere set at random (seeded): csm info and a resume
# each end within 10 s with exit 0, 1 or 2 and print text (a corrupted string attribute's bytes
# that are not UTF-8 print as '?')
import random
rng = random.Random(20261127)
bad = []
for k in range(60):
    b = bytearray(data)
    for _ in range(6):
        b[rng.randrange(len(b))] = rng.randrange(256)
    path = os.path.join(folder, f"r{k}.h5")
    open(path, "wb").write(b)
    for cmd, r in attempts(path, f"copy {k}", bad):
        try:
            (r.stdout + r.stderr).decode("utf-8")
        except UnicodeDecodeError:
            bad.append(f"copy {k}: {cmd} printed bytes that are not text")
        if r.returncode not in (0, 1, 2):
            bad.append(f"copy {k}: {cmd} exit {r.returncode}")
    os.remove(path)
check(not bad, f"60 randomly corrupted copies: every info and resume ends within 10 s, exit 0, 1 or 2, in text: {bad[:4]}")
finish()
PY

finish
