#!/usr/bin/env bash
# csm run on the default experiment writes a log that h5py reads with the expected shapes, and
# the dropped cube comes to rest above the ground plane.
source "$(dirname "$0")/lib.sh" "$@"
set -e # a command that fails ends the test; the checks count and finish reports
"$csm" run "$root/experiments/configs/drop_cube.yaml" -o "$tmp/drop.h5" >"$tmp/out.txt"
# what csm check says the log will take, against what it took
"$csm" check "$root/experiments/configs/drop_cube.yaml" 2>"$tmp/check.txt" >/dev/null
ESTIMATE=$(grep -o "its log: about [0-9.]* [kMG]B" "$tmp/check.txt" || true) pylog "$tmp/drop.h5" <<'PY'
import os
import sys
import h5py
import numpy as np

from logcheck import check, finish

f = h5py.File(sys.argv[1], "r")
n = f["/rest/positions"].shape[0]
T = f["/frames/time"].shape[0]
frames = int(f.attrs["frames"])
check(f.attrs["status"] == "ok", "status ok")
check(T == 421 and frames == 421, "421 frames (frame 0 + 420)")
est = os.environ["ESTIMATE"].split()
size = os.path.getsize(sys.argv[1])
check(len(est) == 5 and abs(float(est[3]) * {"kB": 1e3, "MB": 1e6, "GB": 1e9}[est[4]] / size - 1) < 0.1,
      f"csm check's size of the log ({os.environ['ESTIMATE']}) is within 10 % of its {size / 1e6:.1f} MB")
check(f["/frames/positions"].shape == (T, n, 3), "positions (T, n, 3)")
check(f["/frames/velocities"].shape == (T, n, 3), "velocities (T, n, 3)")
check(f["/rest/mass"].shape == (n,) and f["/rest/object"].shape == (n,), "rest mass and object (n,)")
datasets = []
f.visititems(lambda name, obj: datasets.append(name) if isinstance(obj, h5py.Dataset) else None)
bare = [d for d in datasets if "units" not in f[d].attrs or "description" not in f[d].attrs]
check(len(datasets) > 40 and not bare, "every one of %d datasets has units and a description (not: %s)" % (len(datasets), bare))
for name in ["alpha_c", "alpha_clamped"]:
    check(f["/diagnostics/" + name].shape[0] == T, name + " per frame")
check(f["/diagnostics/alpha_c"][-1].tolist() == [0.5, 0.5, 0.5], "alpha_c is alpha for every cluster without a modulus")
for name in ["kinetic_energy", "potential_energy", "elastic_energy", "max_strain", "volume_ratio"]:
    check(f["/diagnostics/" + name].shape == (T,), name + " (T,)")
for name in ["linear_momentum", "angular_momentum", "center_of_mass"]:
    check(f["/diagnostics/" + name].shape == (T, 3), name + " (T, 3)")
for name in ["dynamics", "plasticity", "reclustering", "embedding", "total"]:
    check(f["/timings/" + name].shape == (T,), "timings " + name)
k = f["/clusters/count"][:]
check(k.shape == (T,) and k.min() > 0, "cluster count per frame")
fo = f["/clusters/frame_membership"][:]
mv = f["/clusters/membership_version"][:]
vo, vm = f["/clusters/version_offsets"][:], f["/clusters/version_members"][:]
check(mv.shape == (T,) and mv[0] == 0 and (np.diff(mv) >= 0).all() and vm[-1] == f["/clusters/members"].shape[0]
      and vo[-1] == f["/clusters/offsets"].shape[0], "membership versions index offsets and members")
check(len(vm) - 1 < T and fo[-1] == sum(vm[v + 1] - vm[v] for v in mv),
      "memberships are written once per version (%d versions for %d frames)" % (len(vm) - 1, T))
fc = f["/clusters/frame_cluster"][:]
check(fc[-1] == f["/clusters/com"].shape[0] == f["/clusters/R"].shape[0], "frame_cluster indexes com and R")
cv, vc = f["/clusters/cluster_version"][:], f["/clusters/version_clusters"][:]
k = f["/clusters/count"][:]
check((cv == 0).all() and list(vc) == [0, k[0]] and f["/clusters/Fp"].shape[0] == f["/clusters/id"].shape[0] == k[0],
      "an elastic run's slow cluster state (Fp, width, id, state) is written once, not per frame")
check(f["/checkpoint/F"].shape[0] == f["/checkpoint/q"].shape[0] == 2 * k[-1],
      "the checkpoint's per-cluster fits are two slots, not one per frame")
w = f["/clusters/weights"][vm[-2]:vm[-1]]
m = f["/clusters/members"][vm[-2]:vm[-1]]
check(np.allclose(np.bincount(m, weights=w, minlength=n), 1.0), "weights of each particle sum to 1")
x = f["/frames/positions"]
check(x.compression is None and x.chunks == (1, n, 3), "positions uncompressed by default, a chunk per frame")
R = f["/clusters/R"][fc[-2]:fc[-1]]
check(np.allclose(np.linalg.det(R), 1.0), "rotations are proper")
for attr in ["csm_version", "git_commit", "config", "seed", "integrator", "rotation", "plasticity",
             "reclusterer", "solver.alpha", "solver.damping"]:
    check(attr in f.attrs, "root attribute " + attr)
x = f["/frames/positions"]
check(np.allclose(x[0], f["/rest/positions"][:] ), "frame 0 is the initial (undeformed) state")
check(f["/frames/time"][0] == 0.0, "frame 0 at t = 0")
ke = f["/diagnostics/kinetic_energy"][:]
com = f["/diagnostics/center_of_mass"][:]
check(x[-1][:, 1].min() >= -1e-9, "no particle below the ground at the end (%.3g)" % x[-1][:, 1].min())
check(ke[-1] < 0.02 * ke.max(), "at rest: final kinetic energy %.3g J vs peak %.3g J" % (ke[-1], ke.max()))
check(0.35 < com[-1, 1] < 0.55, "resting centre of mass height %.3f (cube of side 1)" % com[-1, 1])
finish()
PY
"$csm" info "$tmp/drop.h5" | grep -q "status         ok"
# The view file beside the log, which the sidecar hands to ParaView: speed, displacement from the
# rest position and the nearest centre among each particle's clusters (Falkenstein Fig 2), each
# frame as the log gives it.
pylog "$tmp/drop.h5" "$tmp/drop.view.hdf5" "$root/python" <<'PY'
import sys
import h5py
import numpy as np

sys.path.insert(0, sys.argv[3])
from logcheck import check, finish
import csm

log, view = csm.open(sys.argv[1]), h5py.File(sys.argv[2], "r")
x, v, rest = log.positions(), log.velocities(), log.rest("positions")
check(view["speed"].dtype == np.float32 and view["speed"].shape == x.shape[:2], "speed (T, n) f32")
check(np.array_equal(view["speed"][()], np.linalg.norm(v, axis=2).astype(np.float32)), "speed is |v| of every frame")
check(np.array_equal(view["displacement"][()], (x - rest).astype(np.float32)), "displacement is x - r of every frame")
worst = 0
for t in (0, len(x) // 2, len(x) - 1):
    cl = log.clusters(t)
    near, best = np.full(len(rest), -1), np.full(len(rest), np.inf)
    d = ((x[t][cl.member] - cl.com[cl.cluster]) ** 2).sum(axis=1)
    j_all = np.arange(len(d))
    for j in np.lexsort((-j_all, -d)):  # the nearest written last, the first of equals last of all
        near[cl.member[j]], best[cl.member[j]] = cl.ids[cl.cluster[j]], d[j]
    worst += int((view["cluster"][t] != near).sum())
check(worst == 0, "cluster is the nearest centre among each particle's clusters (%d differ)" % worst)
finish()
PY

# Fixed summation order: bitwise-identical state for any thread count.
"$csm" run "$root/experiments/configs/drop_cube.yaml" -o "$tmp/t1.h5" --frames 30 --threads 1 >/dev/null
"$csm" run "$root/experiments/configs/drop_cube.yaml" -o "$tmp/t2.h5" --frames 30 --threads 2 --set output.compression=4 >/dev/null
pylog "$tmp/t1.h5" "$tmp/t2.h5" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
for name in ["/frames/positions", "/frames/velocities", "/clusters/R", "/diagnostics/elastic_energy"]:
    if not np.array_equal(a[name][:], b[name][:]):
        sys.exit("threads 1 and 2 differ in " + name)
x = b["/frames/positions"]
if x.compression != "gzip" or x.compression_opts != 4 or not x.shuffle:
    sys.exit("output.compression=4 did not deflate the positions after a shuffle")
print("ok: threads 1 and 2 give bitwise-identical logs, the second deflated (output.compression=4)")
PY
# Every experiment config runs with one `csm run` and logs its solver settings; strain_limited and
# pbd are bitwise-identical across thread counts too.
for config in "$root"/experiments/configs/*.yaml; do
    name=$(basename "$config" .yaml)
    "$csm" run "$config" -o "$tmp/exp_$name.h5" --frames 5 >/dev/null 2>"$tmp/err.txt" ||
        { cat "$tmp/err.txt"; echo "FAIL: $name does not run"; exit 1; }
    echo "ok: experiment $name runs"
done
"$csm" run "$root/experiments/configs/drop_cube_strain_limited.yaml" -o "$tmp/s1.h5" --frames 20 --threads 1 >/dev/null
"$csm" run "$root/experiments/configs/drop_cube_strain_limited.yaml" -o "$tmp/s2.h5" --frames 20 --threads 2 >/dev/null
pylog "$tmp/s1.h5" "$tmp/s2.h5" "$tmp/exp_stretch_cube.h5" <<'PY'
import sys, h5py, numpy as np
a, b, c = (h5py.File(p, "r") for p in sys.argv[1:4])
if not np.array_equal(a["/frames/positions"][:], b["/frames/positions"][:]):
    sys.exit("strain_limited: threads 1 and 2 differ")
print("ok: strain_limited is bitwise-identical for 1 and 2 threads")
attrs = c.attrs
want = {"integrator": "strain_limited", "solver.mode": "rigid", "solver.gamma": 0.2, "solver.iterations": 5}
for key, value in want.items():
    if key not in attrs or attrs[key] != value:
        sys.exit(f"stretch_cube log attribute {key} = {attrs.get(key)!r}, expected {value!r}")
if not isinstance(attrs["solver.iterations"], np.integer):
    sys.exit(f"solver.iterations is stored as {type(attrs['solver.iterations'])}, not an integer")
print("ok: the log carries solver.mode, solver.gamma, solver.iterations (an integer)")
PY
echo "end to end: ok"
# pictures show the ground the cube rests on (its plane collider, edge-on) and a scale bar
MPLBACKEND=Agg "$py" "$root/experiments/analysis/render.py" "$tmp/drop.h5" --frames -1 -o "$tmp/render" >/dev/null
check "render.py writes the last frame" [ -s "$tmp/render_00420.png" ]
PYTHONPATH="$root/experiments/analysis" pylog "$tmp/drop.h5" <<'PY'
import sys
import h5py
from logcheck import check, finish
import render

f = h5py.File(sys.argv[1], "r")
check(render.ground_lines(f, "xy") == [("h", 0.0)], f"the ground y = 0 is a horizontal line in xy: {render.ground_lines(f, 'xy')}")
check(render.ground_lines(f, "yz") == [("v", 0.0)], "and a vertical one in yz")
check(render.ground_lines(f, "iso") == [], "and none in the iso view")
check(render.nice_length(1.3) == 0.2 and render.nice_length(7.0) == 1.0 and render.nice_length(0.26) == 0.05,
      "scale bars are round lengths of about a fifth of the picture")
finish()
PY
finish
