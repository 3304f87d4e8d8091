#!/usr/bin/env bash
# The surface of the dropped cube (experiments/analysis/surface.py): a closed, outward-wound mesh
# whose volume is the particles' volume n s^3, in PLY and OBJ alike, drawn as a PNG; skipped
# (exit 77) where scikit-image is not installed.
source "$(dirname "$0")/lib.sh" "$@"
set -e # a command that fails ends the test; the checks count and finish reports
if ! /usr/bin/python3 -c "import skimage.measure" 2>/dev/null; then
    echo "scikit-image not found: skipped"
    exit 77
fi
"$csm" run "$root/experiments/configs/drop_cube.yaml" -o "$tmp/cube.h5" --frames 40 >/dev/null
surface="$root/experiments/analysis/surface.py"
MPLBACKEND=Agg /usr/bin/python3 "$surface" "$tmp/cube.h5" --frames 0,-1 -o "$tmp/s" --png >/dev/null
/usr/bin/python3 "$surface" "$tmp/cube.h5" --frames 0 -o "$tmp/o" --format obj >/dev/null
check "a PNG of each surface" [ -s "$tmp/s_00000.png" ] && [ -s "$tmp/s_00040.png" ]
pylog "$tmp/cube.h5" "$tmp" "$root/experiments/analysis" <<'PY'
import sys
import h5py
import numpy as np

sys.path.insert(0, sys.argv[3])
from logcheck import check, finish
import surface

f = h5py.File(sys.argv[1], "r")
n, s = f["rest/positions"].shape[0], float(np.atleast_1d(f.attrs["object_spacing"])[0])


def closed_volume(v, faces):
    a, b, c = v[faces[:, 0]], v[faces[:, 1]], v[faces[:, 2]]
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return bool((counts == 2).all()), float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6)


for t in (0, 40):
    v, faces, objects = surface.read_ply(f"{sys.argv[2]}/s_{t:05d}.ply")
    closed, volume = closed_volume(v, faces)
    check(closed and len(faces) > 1000, f"frame {t}: {len(faces)} triangles, every edge shared by two")
    # wound outwards, around the particles' volume (half a spacing beyond the outer layer); the
    # cube's edges and corners are rounded, so a little less at rest
    check(0.94 < volume / (n * s ** 3) < 1.03, f"frame {t}: encloses {volume:.4f} m^3 against n s^3 = {n * s ** 3:.4f}")
    x = f["frames/positions"][t]
    check(np.all(v.min(axis=0) > x.min(axis=0) - s) and np.all(v.max(axis=0) < x.max(axis=0) + s),
          f"frame {t}: within a spacing of the particles")
# the OBJ holds the same mesh
lines = open(f"{sys.argv[2]}/o_00000.obj").read().split("\n")
v0, f0, _ = surface.read_ply(f"{sys.argv[2]}/s_00000.ply")
verts = np.array([[float(w) for w in l.split()[1:]] for l in lines if l.startswith("v ")])
tris = np.array([[int(w.split("/")[0]) - 1 for w in l.split()[1:]] for l in lines if l.startswith("f ")])
check(np.allclose(verts, v0, atol=1e-6) and np.array_equal(tris, f0), "the OBJ holds the PLY's mesh")
finish()
PY
finish
