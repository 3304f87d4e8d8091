#!/usr/bin/env bash
# The bunny of Bargteil-Jones 2014 Fig 1 from Debian's bunny00.off (data/fetch_meshes.sh): about
# 2,020 particles in 26 clusters; it falls, bounces and stays above the ground, undamped and damped.
# The elephant with holes samples like the closed one. A malformed mesh stops `csm run` with exit 2 and the mesh's file and line.
source "$(dirname "$0")/lib.sh" "$@"
set -e # a command that fails ends the test; the checks count and finish reports
"$root/data/fetch_meshes.sh" --check
"$csm" run "$root/experiments/configs/bunny.yaml" -o "$tmp/bunny.h5" >/dev/null
"$csm" run "$root/experiments/configs/bunny_damped.yaml" -o "$tmp/damped.h5" >/dev/null
pylog "$tmp/bunny.h5" "$tmp/damped.h5" <<'PY'
import sys
import h5py
import numpy as np

from logcheck import check, finish

for path, label in zip(sys.argv[1:3], ["undamped", "damped"]):
    f = h5py.File(path, "r")
    n = int(f.attrs["particles"])
    k = int(f.attrs["clusters.count"])
    check(f.attrs["status"] == "ok", f"{label}: status ok")
    check(abs(n - 2020) <= 20, f"{label}: {n} particles, about 2,020")
    check(k == 26, f"{label}: {k} clusters")
    members = f.attrs["clusters.members"]
    per = f.attrs["clusters.per_particle"]
    width = f.attrs["clusters.width"]
    check(members[0] <= members[1] <= members[2] and abs(members[1] * k - per[1] * n) < 1e-6 * n,
          f"{label}: members per cluster {members} agree with clusters per particle {per}")
    check(per[0] >= 1, f"{label}: every particle in a cluster")
    vc = f["/clusters/version_clusters"][:]
    v = f["/clusters/cluster_version"][-1]
    wl = f["/clusters/width"][vc[v]:vc[v + 1]]
    check(np.isclose(wl.max(), width[2]) and np.isclose(wl.mean(), width[1]), f"{label}: /clusters/width matches clusters.width")
    x = f["/frames/positions"]
    low = min(x[t][:, 1].min() for t in range(x.shape[0]))
    check(low >= -1e-9, f"{label}: no particle below the ground in any frame (lowest {low:.3g})")
    com = f["/diagnostics/center_of_mass"][:, 1]
    vy = np.diff(com)
    check(com[-1] > 0.05 and np.all(np.isfinite(com)), f"{label}: the bunny's centre stays above the ground (height {com[-1]:.3f} at the end)")
    # it bounces: the centre of mass falls, then rises again after the first contact
    first_contact = int(np.argmax(np.array([x[t][:, 1].min() for t in range(x.shape[0])]) < 1e-6))
    check(first_contact > 0 and vy[first_contact:].max() > 0, f"{label}: bounces after contact at frame {first_contact}")
    if label == "undamped":
        ke_undamped = f["/diagnostics/kinetic_energy"][-60:].mean()
    else:
        ke_damped = f["/diagnostics/kinetic_energy"][-60:].mean()
check(ke_damped < ke_undamped, f"damping lowers the final kinetic energy ({ke_damped:.4f} < {ke_undamped:.4f} J)")
finish()
PY

# elephant-with-holes.off is the elephant with about a fifth of its faces missing: the winding
# number still finds its inside (a parity test would not), within 3 % of the closed elephant
count() {
    "$csm" run "$root/experiments/configs/bunny.yaml" -o "$tmp/$1.h5" --frames 0 \
        --set "objects.0.shape={type: mesh, path: data/meshes/$1.off, fit: unit_box}" \
        --set "objects.0.sampling={type: grid, spacing: 0.03}" | sed -n 's/^[a-z_]*: \([0-9]*\) particles.*/\1/p'
}
closed=$(count elephant)
holes=$(count elephant-with-holes)
[ "$closed" -gt 1000 ] && [ $((100 * (closed - holes) / closed)) -le 3 ] && [ $((100 * (holes - closed) / closed)) -le 3 ] ||
    { echo "FAIL: elephant $closed particles, elephant with holes $holes"; exit 1; }
echo "ok: elephant $closed particles, elephant with holes $holes"

# a truncated mesh: exit 2, one line naming the mesh file and line
printf 'OFF\n4 4 0\n0 0 0\n1 0 0\n' >"$tmp/bad.off"
set +e
"$csm" run "$root/experiments/configs/bunny.yaml" -o "$tmp/bad.h5" --set "objects.0.shape={type: mesh, path: $tmp/bad.off}" \
    >/dev/null 2>"$tmp/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: a truncated mesh exits $rc, not 2"; exit 1; }
grep -q "bad.off:4: truncated" "$tmp/err.txt" || { cat "$tmp/err.txt"; echo "FAIL: the error does not name bad.off:4"; exit 1; }
[ "$(wc -l <"$tmp/err.txt")" -eq 1 ] || { cat "$tmp/err.txt"; echo "FAIL: more than one line"; exit 1; }
[ ! -e "$tmp/bad.h5" ] || { echo "FAIL: a log was left for a run that never started"; exit 1; }
echo "ok: a truncated mesh stops the run with its file and line"
# a mesh-based run resumes from any working folder: the log keeps its config's absolute path,
# and the mesh is found from the config's folder and those above it
(cd "$root" && "$csm" run experiments/configs/bunny.yaml -o "$tmp/resume.h5" --frames 3 >/dev/null 2>&1) ||
    { echo "FAIL: the bunny did not run from the source folder"; exit 1; }
mkdir -p "$tmp/elsewhere"
(cd "$tmp/elsewhere" && "$csm" run --resume "$tmp/resume.h5" --frames 6 >/dev/null 2>"$tmp/resume.err") ||
    { cat "$tmp/resume.err"; echo "FAIL: resuming the bunny from another folder"; exit 1; }
echo "ok: a mesh-based run resumes from another working folder"
echo "bunny: ok"
finish
