#!/usr/bin/env bash
# csm sweep: expansion, overrides, stable hashes, resume, shards, failed runs, interruption; and
# the analysis scripts (compare, convergence, timings, render) on the sweep they produce.
source "$(dirname "$0")/lib.sh" "$@"
cd "$tmp" || exit 1

cat >tiny.yaml <<'EOF'
name: tiny
time: {dt: 0.0166667, frames: 6}
objects:
  - shape: {type: box, size: [1, 1, 1]}
    sampling: {type: grid, spacing: 0.25}
    angular_velocity: [0, 0, 2]
clustering: {method: fuzzy_cmeans, count: 4}
sweep:
  clustering.count: [2, 4, 8]
  solver.rotation: [polar_apq, polar_f]
EOF

# csm check builds every run of a sweep and gives each its notes (it checked the base run only): a
# modulus too stiff for the step at the most clusters is named in that run
"$csm" check tiny.yaml --set solver.modulus=30 >/dev/null 2>check.txt
check "csm check names the sweep's 6 runs" [ "$(grep -c '^csm: sweep run [0-5] (clustering.count=' check.txt)" -eq 6 ]
check "... and the two runs whose clusters are clamped, the 8-cluster ones" sh -c '[ "$(grep -c "clusters are clamped to 1" "$1")" -eq 2 ] && grep -A1 "^csm: sweep run 4 (clustering.count=8 solver.rotation=polar_apq)" "$1" | grep -q "6 of 8 clusters are clamped"' sh check.txt
printf 'name: bad\nobjects:\n  - shape: {type: box, size: [1, 1, 1]}\n    sampling: {type: grid, spacing: 0.25}\nclustering: {method: fuzzy_cmeans, count: 4}\nsweep:\n  clustering.count: [2, 1000]\n' >bad_sweep.yaml
expect 2 "sweep run 1 \(clustering.count=1000\): bad_sweep.yaml:5: fuzzy_cmeans: count = 1000, but an object has only 125 particles" -- "$csm" check bad_sweep.yaml

# expansion: the product, first key slowest, every run named by a distinct hash
"$csm" sweep tiny.yaml --list >list.txt 2>/dev/null
check "3 x 2 values give 6 runs" [ "$(wc -l <list.txt)" -eq 6 ]
check "6 distinct hashes" [ "$(cut -f1 list.txt | sort -u | wc -l)" -eq 6 ]
check "product order" [ "$(cut -f3 list.txt | tr '\n' ';')" = "clustering.count=2 solver.rotation=polar_apq;clustering.count=2 solver.rotation=polar_f;clustering.count=4 solver.rotation=polar_apq;clustering.count=4 solver.rotation=polar_f;clustering.count=8 solver.rotation=polar_apq;clustering.count=8 solver.rotation=polar_f;" ]
# hashes are stable: across invocations and from a copy of the config elsewhere
# and from a copy elsewhere, its sections reordered, in flow style, with another output path
mkdir -p elsewhere
cat >elsewhere/other_name.yaml <<'EOF'
sweep: {clustering.count: [2, 4, 8], solver.rotation: [polar_apq, polar_f]}
clustering: {count: 4, method: fuzzy_cmeans}
output: {path: somewhere/else.h5}
objects: [{sampling: {spacing: 0.25, type: grid}, angular_velocity: [0, 0, 2], shape: {size: [1, 1, 1], type: box}}]
time: {frames: 6, dt: 0.0166667}
name: tiny
EOF
check "same hashes on a second expansion" [ "$("$csm" sweep tiny.yaml --list 2>/dev/null | cut -f1)" = "$(cut -f1 list.txt)" ]
check "same hashes from a reordered copy of the config" [ "$(cd elsewhere && "$csm" sweep other_name.yaml --list 2>/dev/null | cut -f1)" = "$(cut -f1 list.txt)" ]
# an override changes every run's config, so every hash
"$csm" sweep tiny.yaml --list --set solver.alpha=0.3 2>/dev/null | cut -f1 >alpha.txt
check "--set gives new hashes" [ "$(sort list.txt alpha.txt | cut -f1 | sort | uniq -d | wc -l)" -eq 0 ]
# a swept value equal to the base's default resolves to the base config: one hash for both
check "--set of the swept key is overridden by the sweep" \
    [ "$("$csm" sweep tiny.yaml --list --set clustering.count=99 2>/dev/null | cut -f1)" = "$(cut -f1 list.txt)" ]

# shards partition the run set exactly
for k in 0 1 2; do "$csm" sweep tiny.yaml --list --shard $k/3 2>/dev/null | cut -f1 >shard$k.txt; done
check "shards are disjoint and cover the sweep" [ "$(cat shard0.txt shard1.txt shard2.txt | sort)" = "$(cut -f1 list.txt | sort)" ]
check "shard 1/3 takes every third run" [ "$(cat shard1.txt)" = "$(sed -n '2p;5p' list.txt | cut -f1)" ]
check "Slurm array variables select the same shard" \
    [ "$(SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 "$csm" sweep tiny.yaml --list 2>/dev/null | cut -f1)" = "$(cat shard1.txt)" ]
check "an array numbered from 1 counts from its minimum" \
    [ "$(SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 "$csm" sweep tiny.yaml --list 2>/dev/null | cut -f1)" = "$(cat shard1.txt)" ]
# an array with a step shards by each task's rank (--array=0-6:2: tasks 0, 2, 4, 6 are shards 0 to
# 3 of 4; two of them exited 2 and three runs never ran); a bad index and a list are refused
for id in 0 2 4 6; do
    SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_STEP=2 "$csm" sweep tiny.yaml --list 2>/dev/null | cut -f1
done >stepped.txt
check "a stepped array covers the 6 runs once" [ "$(sort stepped.txt)" = "$(cut -f1 list.txt | sort)" ]
expect 2 "SLURM_ARRAY_TASK_ID=abc: not an array index" -- env SLURM_ARRAY_TASK_ID=abc SLURM_ARRAY_TASK_COUNT=4 "$csm" sweep tiny.yaml --list
expect 2 "array task 10 is not min \+ k step of 3 tasks .*give each task --shard K/3" -- env SLURM_ARRAY_TASK_ID=10 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1 "$csm" sweep tiny.yaml --list
"$csm" sweep tiny.yaml --list --shard 3/3 >/dev/null 2>&1
check "--shard 3/3 is refused" [ $? -eq 2 ]

# a run: every log ok and in the index, each holding its swept values; nothing left partial
"$csm" sweep tiny.yaml --jobs 2 >run1.txt 2>&1
check "the sweep succeeds" [ $? -eq 0 ]
check "index has a header and 6 rows" [ "$(wc -l <out/tiny/index.csv)" -eq 7 ]
check "index header" [ "$(head -1 out/tiny/index.csv)" = "run,clustering.count,solver.rotation,status,frames,wall_s,path" ]
check "every run ok with 7 frames" [ "$(tail -n +2 out/tiny/index.csv | cut -d, -f4,5 | sort -u)" = "ok,7" ]
check "no partial logs left" [ -z "$(ls out/tiny/.partial)" ]
check "each run's printed summary names its log where it is, not under .partial/" \
    sh -c '! grep -l "\.partial/" "$1"/*.log && grep -q "^log:     out/tiny/[0-9a-f]*\.h5$" "$1"/*.log' sh out/tiny
expect 0 "^  6 runs: 6 ok, 0 not" -- "$csm" info out/tiny
expect 0 "^  [0-9a-f]{12}  ok +7 frames  clustering.count=8 solver.rotation=polar_f$" -- "$csm" info out/tiny
$py - out/tiny <<'EOF' && pass_ || fail_ "logs do not hold their swept values"
import csv, sys, h5py
rows = list(csv.DictReader(open(sys.argv[1] + "/index.csv")))
for r in rows:
    with h5py.File(sys.argv[1] + "/" + r["path"]) as f:
        assert f.attrs["status"] == "ok", r
        assert int(f["clusters/count"][0]) == int(r["clustering.count"]), r
        assert f.attrs["rotation"] == r["solver.rotation"], r
        assert "sweep" not in f.attrs["config"], "a run's config holds the sweep"
EOF

# resume: a rerun skips every finished run and touches no log
stamp() { stat -c '%n %Y %s' out/tiny/*.h5 | sort; }
before=$(stamp)
sleep 1
"$csm" sweep tiny.yaml >run2.txt 2>&1
check "rerun succeeds" [ $? -eq 0 ]
check "rerun skips all 6" grep -q "0 ok, 0 failed, 6 skipped" run2.txt
check "rerun leaves logs untouched" [ "$(stamp)" = "$before" ]
# a missing log and one that did not finish are run again, the others skipped
first=$(sed -n 2p out/tiny/index.csv | cut -d, -f1)
second=$(sed -n 3p out/tiny/index.csv | cut -d, -f1)
rm out/tiny/"$first".h5
$py -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f.attrs['status']='interrupted'" out/tiny/"$second".h5
"$csm" sweep tiny.yaml >run3.txt 2>&1
check "only the two unfinished runs run again" grep -q "2 ok, 0 failed, 4 skipped" run3.txt

# a run that fails is recorded as failed and the sweep goes on
cat >failing.yaml <<'EOF'
name: failing
time: {dt: 0.0166667, frames: 4}
objects:
  - shape: {type: box, size: [1, 1, 1]}
    sampling: {type: grid, spacing: 0.25}
clustering: {method: fuzzy_cmeans}
sweep:
  clustering.count: [500, 3]
EOF
"$csm" sweep failing.yaml -o out/f >failed.txt 2>&1
check "a sweep with a failed run exits 1" [ $? -eq 1 ]
check "summary counts it" grep -q "1 ok, 1 failed" failed.txt
check "index marks the failed run with its reason" grep -q ',500,"failed: .*count = 500, but an object has only 125 particles",' out/f/index.csv
check "the other run is ok" grep -q ',3,ok,5,' out/f/index.csv
# --list shows a failed run's whole status (it was cut at 60 bytes, mid-message)
"$csm" sweep failing.yaml -o out/f --list >flist.txt 2>&1
check "--list shows the whole failed status" grep -qE "failed: .*count = 500, but an object has only 125 particles	clustering.count=500" flist.txt

# bad sweeps are refused before anything runs, naming file, line and key
printf 'objects:\n  - shape: {type: box}\nsweep:\n  solver.alpha: [0.5, 7]\n' >badvalue.yaml
out=$("$csm" sweep badvalue.yaml -o out/bad 2>&1)
check "out-of-range swept value: exit 2" [ $? -eq 2 ]
echo "$out" | grep -q "badvalue.yaml:4: sweep solver.alpha = 7: solver.alpha = 7 is outside \[0, 1\]" && pass_ || fail_ "message: $out"
check "nothing written for a bad sweep" [ ! -e out/bad ]
printf 'objects:\n  - shape: {type: box}\nsweep:\n  solver.alpha: []\n' >empty.yaml
out=$("$csm" sweep empty.yaml 2>&1)
check "empty sweep list: exit 2" [ $? -eq 2 ]
echo "$out" | grep -q "empty.yaml:4: sweep.solver.alpha is an empty list" && pass_ || fail_ "message: $out"
printf 'objects:\n  - shape: {type: box}\nsweep: [1, 2]\n' >notmap.yaml
out=$("$csm" sweep notmap.yaml 2>&1)
check "a sweep that is not a mapping: exit 2" [ $? -eq 2 ]
echo "$out" | grep -q "notmap.yaml:3: sweep must be a mapping" && pass_ || fail_ "message: $out"

# SIGTERM stops the sweep: its runs close their logs as interrupted, exit 130, a rerun redoes them
# (a log every 100,000 frames: a million frames logged whole would need 65 GB, which the disk check
# refuses where less is free)
cat >long.yaml <<'EOF'
name: long
time: {dt: 0.0166667, frames: 1000000}
output: {every: 100000}
objects:
  - shape: {type: box, size: [1, 1, 1]}
    sampling: {type: grid, spacing: 0.1}
clustering: {method: fuzzy_cmeans, count: 8}
sweep:
  seed: [1, 2]
EOF
"$csm" sweep long.yaml --jobs 2 >long.txt 2>&1 &
pid=$!
for _ in $(seq 300); do [ "$(ls out/long/.partial 2>/dev/null | grep -c '\.h5$')" -eq 2 ] && break; sleep 0.1; done
sleep 0.5
kill -TERM $pid
wait $pid
check "an interrupted sweep exits 130" [ $? -eq 130 ]
check "both runs interrupted in the index" [ "$(tail -n +2 out/long/index.csv | grep -c ',interrupted,')" -eq 2 ]
check "the interrupted logs are kept" [ "$(ls out/long/*.h5 | wc -l)" -eq 2 ]

# analysis scripts on the tiny sweep
export MPLBACKEND=Agg
$py "$root/experiments/analysis/compare.py" out/tiny -q kinetic_energy -q angular_momentum.z -q displacement:3 -o plots/compare >compare.txt 2>&1 ||
    fail_ "compare.py: $(cat compare.txt)"
check "compare.py writes PNG and PDF" [ -s plots/compare.png -a -s plots/compare.pdf ]
check "compare.py prints a row per run and quantity" [ "$(grep -c '^| count=' compare.txt)" -eq 18 ]
$py "$root/experiments/analysis/convergence.py" out/tiny --where rotation=polar_apq -o plots/convergence >conv.txt 2>&1 ||
    fail_ "convergence.py: $(cat conv.txt)"
# one sweep per folder: a second sweep into a folder a sweep is writing is refused, before it runs
# anything, and so is a shard of it; the first finishes with every run ok
printf 'name: slow\ntime: {dt: 0.0166667, frames: 400, substeps: 4}\nobjects:\n  - shape: {type: box, size: [1, 1, 1]}\n    sampling: {type: grid, spacing: 0.1}\nsweep:\n  solver.alpha: [0.1, 0.2]\n' >slow.yaml
"$csm" sweep slow.yaml -o out/slow --jobs 1 >slow_a.txt 2>&1 &
first=$!
for k in $(seq 100); do [ -e out/slow/.sweep.lock ] && break; sleep 0.05; done
"$csm" sweep slow.yaml -o out/slow --jobs 1 >slow_b.txt 2>&1
check "a second sweep into the same folder is refused (exit 2)" [ $? -eq 2 ]
check "... naming the folder and the sweep that writes it" grep -q "out/slow: another csm process (pid $first) is writing this sweep folder" slow_b.txt
"$csm" sweep slow.yaml -o out/slow --jobs 1 --shard 1/2 >slow_c.txt 2>&1
check "... and so is a shard of it" [ $? -eq 2 ]
wait $first
check "the first sweep finishes its runs" [ $? -eq 0 ]
check "... and its index lists them ok" [ "$(grep -c ',ok,' out/slow/index.csv)" = 2 ]
for script in "$root"/experiments/analysis/*.py; do
    check "$(basename "$script") --help" sh -c "\"$py\" \"$script\" --help >/dev/null"
done
# two rotations per cluster count are two series, not one: refused rather than pooled
check "convergence.py refuses runs that differ in another swept key" \
    sh -c "! $py '$root/experiments/analysis/convergence.py' out/tiny -o plots/pooled 2>&1 | grep -q 'observed rate: error'"
check "convergence.py writes its plot" [ -s plots/convergence.png -a -s plots/convergence.pdf ]
# a rate is fitted only where the distance from the finest run shrinks from run to run and the
# last two changes shrink (where they grow, the finest run is no reference)
check "convergence.py reports a rate exactly when the distances and the changes shrink" "$py" -c '
import sys
rows = [l.split("|") for l in open(sys.argv[1]) if l.startswith("| ") and l[2].isdigit()]
dist = [float(r[7]) for r in rows][:-1]
change = [abs(float(r[5])) for r in rows[-2:]]
shrinking = all(b < a for a, b in zip(dist, dist[1:])) and change[1] < change[0]
text = open(sys.argv[1]).read()
sys.exit(0 if ("observed rate: error ~ clusters^" in text) == shrinking and ("no observed rate" in text) != shrinking else 1)
' conv.txt
check "convergence.py says whether each run settled" grep -qE "^\| [0-9]+ .*\| (yes|no: drifts [0-9.]+ %|-) \|$" conv.txt
$py "$root/experiments/analysis/timings.py" out/tiny >timings.txt 2>&1 || fail_ "timings.py: $(cat timings.txt)"
check "timings.py prints a row per run" [ "$(grep -c '^| count=' timings.txt)" -eq 6 ]
log=out/tiny/$(sed -n 2p out/tiny/index.csv | cut -d, -f1).h5
$py "$root/experiments/analysis/render.py" "$log" --frames 0,-1 --color nearest -o plots/tiny >render.txt 2>&1 ||
    fail_ "render.py: $(cat render.txt)"
check "render.py writes both frames" [ -s plots/tiny_00000.png -a -s plots/tiny_00006.png ]
$py "$root/experiments/analysis/render.py" "$log" --frames -1 --color speed --view iso -o plots/speed >>render.txt 2>&1 ||
    fail_ "render.py --color speed: $(cat render.txt)"
check "render.py by speed" [ -s plots/speed_00006.png ]
if command -v ffmpeg >/dev/null; then
    $py "$root/experiments/analysis/render.py" "$log" --movie plots/tiny.mp4 --fps 10 >>render.txt 2>&1 || fail_ "render.py --movie"
    check "render.py writes a movie" [ -s plots/tiny.mp4 ]
fi

# a large sweep: counted first, refused over the limit before anything is expanded, and with
# --max-runs resolved at thousands of runs a second (10^5 runs took 46 s, 10^6 printed nothing in 2 min)
v22="[$(seq -s ', ' 1 22)]"
printf 'objects:\n  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n    sampling: {spacing: 0.1}\nsweep:\n  seed: %s\n  time.frames: %s\n  solver.iterations: %s\n' \
    "$v22" "$v22" "$v22" >big.yaml
out=$("$csm" sweep big.yaml --list 2>&1)
check "over the limit: exit 2" [ $? -eq 2 ]
echo "$out" | grep -q "big.yaml: the sweep has 10648 runs (22 seed x 22 time.frames x 22 solver.iterations), over the limit of 10000; .* --max-runs 10648" &&
    pass_ || fail_ "over the limit: $out"
"$csm" sweep big.yaml --list --max-runs 10648 >big.txt 2>big.err
check "--max-runs: every run listed" [ "$(wc -l <big.txt)" -eq 10648 ]
check "--max-runs: the count comes first" grep -q "^csm: sweep big: 10648 runs" big.err
check "--max-runs: the listed ids are distinct" [ "$(cut -f1 big.txt | sort -u | wc -l)" -eq 10648 ]

# a run whose log another process is writing (an orphan of a killed sweep) is left alone: not
# started, not renamed, its files untouched, and the sweep says so (it moved the live log into
# place and both wrote one .log); shards of another count in the folder at the same time are refused
id=$("$csm" sweep tiny.yaml --list --frames 2 2>/dev/null | head -1 | cut -f1)
mkdir -p orphan/.partial
"$csm" run tiny.yaml --set 'clustering.count=2' --frames 100000000 --set output.every=1000 -o "orphan/.partial/$id.h5" >/dev/null 2>&1 &
orphan=$!
sleep 1
"$csm" sweep tiny.yaml -o orphan --frames 2 --jobs 1 >orphan.txt 2>&1
code=$?
check "a run held by another process fails the sweep: exit 1 ($code)" [ "$code" -eq 1 ]
check "... which says whose it is" grep -q "run $id: another csm process (pid $orphan) is writing its log; left alone" orphan.txt
check "... and leaves its log where its writer writes it" sh -c '[ -s "orphan/.partial/$1.h5" ] && [ ! -e "orphan/$1.h5" ]' sh "$id"
check "... while the other runs ran" [ "$(ls orphan/*.h5 | wc -l)" -eq 5 ]
kill -INT $orphan
wait $orphan
"$csm" sweep tiny.yaml -o shards --shard 1/2 --frames 100000000 --set output.every=1000 --jobs 1 >/dev/null 2>&1 &
shard=$!
sleep 1
expect 2 "shards of 2 run in this folder now; these are of 3" -- "$csm" sweep tiny.yaml -o shards --shard 1/3 --frames 2
# a run's output goes to .partial/<id>.<the sweep's pid>.log while it runs, and to <id>.log when it
# ends: a second sweep that starts the run at the same moment never writes into the first's file
check "a running run's output is the sweep's own file" sh -c 'ls "$1"/.partial/*."$2".log && ! ls "$1"/*.log' sh shards "$shard"
kill -INT $shard
wait $shard
check "... moved to <id>.log when the run ends" sh -c 'ls "$1"/*.log && ! ls "$1"/.partial/*.log' sh shards

# one value spelt several ways is one run; keys that overlap are refused; the jobs are bounded
"$csm" sweep tiny.yaml --list --set 'sweep={solver.alpha: [0.1, 0.10, 1e-1, 0.100, 0.2]}' >spelt.txt 2>spelt.err
check "0.1, 0.10, 1e-1 and 0.100 are one run, 0.2 another" [ "$(wc -l <spelt.txt)" -eq 2 ]
check "... and a note says so" [ "$(grep -c "resolves to the same config" spelt.err)" -eq 3 ]
expect 2 "sweep keys solver.alpha and solver overlap" -- "$csm" sweep tiny.yaml --list \
    --set 'sweep={solver.alpha: [0.1], solver: [{alpha: 0.2}]}'
expect 2 "sweep keys objects.0 and objects.0.mass overlap" -- "$csm" sweep tiny.yaml --list \
    --set 'sweep={objects.0: [{shape: {type: box}}], objects.0.mass: [2]}'
expect 2 "\-\-jobs 100000: at most [0-9]+ runs at once" -- "$csm" sweep tiny.yaml --jobs 100000
# runs that cannot be started (no process left under the user's limit: one, the sweep itself,
# whose libraries then start no thread either) fail the sweep, with what ran moved in and a count
# of the rest; as root only root can lower the limit of another user (a sanitized build starts
# threads of its own and is left out)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && ! nm -D "$(dirname "$csm")/libcsm.so" | grep -q __asan_init; then
    few=$(mktemp -d)
    chmod 777 "$few"
    cp "$csm" "$(dirname "$csm")/libcsm.so" tiny.yaml "$few/"
    chmod 755 "$few/csm"
    setpriv --reuid=65534 --regid=65534 --clear-groups bash -c \
        'cd "$1" && ulimit -u 1 && OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 LD_LIBRARY_PATH="$1" exec ./csm sweep tiny.yaml -o sw --jobs 2 --frames 2 >out.txt 2>&1' \
        sh "$few"
    code=$?
    check "a sweep whose runs cannot start exits 1 ($code)" [ "$code" -eq 1 ]
    check "... and says how many did not start" grep -q "6 not started" "$few/out.txt"
    rm -rf "$few"
fi

finish
