#!/usr/bin/env bash
# Results are the same bits for any thread count (docs/DESIGN.md, performance rules): the plastic,
# reclustering bar run with --threads 1 and --threads 2 logs identical positions, velocities,
# goals, cluster data, diagnostics and reclustering events (a hash over every dataset but the
# timings). And `csm bench`: its scenes run, its CSV holds what it promises, and the final
# state of a scene is the same for one and two threads.
source "$(dirname "$0")/lib.sh" "$@"

cfg="$root/tests/configs/recluster_bar.yaml"
sets=(--set 'recluster={method: embedded, cond_max: 1.5, fade_out: 5, fade_in: 3}' --set output.goals=true)
for t in 1 2; do
    "$csm" run "$cfg" "${sets[@]}" --frames 45 --threads "$t" -o "$tmp/t$t.h5" >/dev/null 2>"$tmp/t$t.err"
    check "run with $t thread(s)" [ $? -eq 0 ]
done
hash_log() {
    "$py" - "$1" <<'PYEOF'
import hashlib, sys
import h5py, numpy as np
h = hashlib.sha256()
names = []
with h5py.File(sys.argv[1], "r") as f:
    f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and not n.startswith("timings") else None)
    for n in sorted(names):
        h.update(n.encode())
        h.update(np.ascontiguousarray(f[n][()]).tobytes())
    events = len(f["recluster/events"]) if "recluster/events" in f else 0
print(h.hexdigest(), len(names), events)
PYEOF
}
read -r h1 n1 e1 < <(hash_log "$tmp/t1.h5")
read -r h2 n2 e2 < <(hash_log "$tmp/t2.h5")
check "the log holds datasets ($n1)" [ "${n1:-0}" -gt 20 ]
check "the bar reclusters ($e1 events)" [ "${e1:-0}" -gt 0 ]
same=no
[ -n "${h1:-}" ] && [ "${h1:-}" = "${h2:-}" ] && same=yes
check "--threads 1 and --threads 2 give the same bits ($h1 / $h2)" [ $same = yes ]

# csm bench
"$csm" bench bunny regions_5k --frames 3 --threads 1,2 --csv >"$tmp/bench.csv" 2>"$tmp/bench.err"
check "csm bench --csv runs" [ $? -eq 0 ]
pylog "$tmp/bench.csv" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["scene"], r["threads"]) for r in rows] == [("bunny", "1"), ("bunny", "2"), ("regions_5k", "1"), ("regions_5k", "2")], rows
for r in rows:
    assert int(r["particles"]) > 2000 and int(r["clusters"]) > 0 and float(r["memberships"]) > int(r["particles"])
    assert float(r["total_median_ms"]) > 0 and float(r["ns_per_membership_pass"]) > 0 and float(r["peak_mib"]) > 1
    assert float(r["total_median_ms"]) >= float(r["dynamics_median_ms"])
r5 = [r for r in rows if r["scene"] == "regions_5k"][0]
assert r5["particles"] == "4913" and r5["clusters"] == "4913" and r5["memberships"] == "117649.0", r5
assert rows[0]["hash"] == rows[1]["hash"] and rows[2]["hash"] == rows[3]["hash"], "final state depends on threads"
PYEOF
out=$("$csm" bench nosuch 2>&1)
rc=$?
ok=no
[ $rc -eq 2 ] && printf '%s' "$out" | grep -q "unknown scene 'nosuch'" && ok=yes
check "an unknown scene exits 2 with its name" [ $ok = yes ]
out=$("$csm" bench --frames 1 --threads 1 2>&1)
rc=$?
ok=no
[ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -cE '^(bunny|beam|beam_recluster|regions_5k|scale_10k|scale_100k) ')" -eq 6 ] && ok=yes
check "csm bench with no scene runs the default ones" [ $ok = yes ]
out=$("$csm" bench --list 2>&1)
check "csm bench --list names every scene" [ "$(printf '%s\n' "$out" | grep -cE '^(bunny|beam|beam_recluster|regions_5k|scale_10k|scale_100k|scale_1M|scale_N) ')" -eq 8 ]
# every listed scene but the large ones builds from its config and overrides and runs a frame
scenes=$("$csm" bench --list 2>/dev/null | awk '{print $1}' | grep -vE '^(scale_100k|scale_1M|scale_N)$')
out=$("$csm" bench $scenes --frames 1 --threads 1 2>&1)
rc=$?
ran=$(for s in $scenes; do printf '%s\n' "$out" | grep -qE "^$s +1 " && echo "$s"; done | wc -l)
ok=no
[ $rc -eq 0 ] && [ "$ran" -eq "$(echo $scenes | wc -w)" ] && ok=yes
why=$(printf '%s' "$out" | grep '^csm: bench' | head -1)
check "every listed scene runs ($ran of $(echo $scenes | wc -w); $why)" [ $ok = yes ]
out=$("$csm" bench scale_2k --frames 2 2>&1)
ok=no
printf '%s' "$out" | grep -qE '^scale_2k +[0-9]+ +2197 ' && ok=yes
check "scale_N of any N runs ($out)" [ $ok = yes ]

finish
