#!/usr/bin/env bash
# The contact experiments, CI-sized: two bunnies of about 400 particles dropped onto each other
# and the ground, and the stack of five cubes. No pair of particles of two objects is closer than
# 95 % of the contact distance at the end of any frame (one step each), by the broad phase's
# list and by a brute-force search (experiments/analysis/contact.py --check); both runs finish.
# The same for both scenes with contact.method cluster_proxies; a warning where a run creates
# energy; the beam folding onto itself; the sheet draped over a mesh collider; the press's plates
# as the log keeps them.
source "$(dirname "$0")/lib.sh" "$@"
set -e # a command that fails ends the test
"$root/data/fetch_meshes.sh" --check
"$csm" run "$root/experiments/configs/two_bunnies.yaml" -o "$tmp/two_bunnies.h5" --set time.frames=90 \
    --set objects.0.sampling.particles=400 --set objects.1.sampling.particles=400 >/dev/null
"$csm" run "$root/experiments/configs/stack.yaml" -o "$tmp/stack.h5" --set time.frames=90 >/dev/null
"$py" "$root/experiments/analysis/contact.py" "$tmp/two_bunnies.h5" "$tmp/stack.h5" --check 0.05
for scene in two_bunnies stack; do
    extra=()
    [ "$scene" = two_bunnies ] && extra=(--set objects.0.sampling.particles=400 --set objects.1.sampling.particles=400)
    "$csm" run "$root/experiments/configs/$scene.yaml" -o "$tmp/${scene}_proxies.h5" --set time.frames=90 \
        --set contact.method=cluster_proxies "${extra[@]}" >/dev/null
done
"$py" "$root/experiments/analysis/contact.py" "$tmp/two_bunnies_proxies.h5" "$tmp/stack_proxies.h5" --check 0.05
# Contact that created energy is named: a stiff cube started with its bottom 0.1 m inside the ground
# is thrown out of it (15.8 J from nothing, contact's share of the budget). The run ends, prints a
# one-line warning and keeps it in the log's `warning` attribute; the stack (above) has none.
"$csm" run "$root/experiments/validation/contact/bounce.yaml" -o "$tmp/sunk.h5" --set "objects.0.position=[0, 0.1, 0]" \
    --set time.frames=30 >/dev/null 2>"$tmp/sunk.err"
grep -q "^csm: warning: contact created .* J by frame 1 (t = .* s) with every collider at rest" "$tmp/sunk.err"
"$py" - "$tmp/sunk.h5" "$tmp/stack.h5" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["status"] == "ok" and f.attrs["warning"].startswith("contact created"), dict(f.attrs)
    print("a cube started inside the ground:", f.attrs["warning"])
with h5py.File(sys.argv[2], "r") as f:
    assert "warning" not in f.attrs, f.attrs["warning"]
PY
# The beam that folds onto itself (self contact), as the experiment runs it: no two particles of
# the beam that no cluster holds together come closer than 95 % of d.
"$csm" run "$root/experiments/configs/fold.yaml" -o "$tmp/fold.h5" >/dev/null
"$py" "$root/experiments/analysis/contact.py" "$tmp/fold.h5" --check 0.05
# The sheet draped over the bunny (the mesh collider), coarser and shorter: it runs to the end.
"$csm" run "$root/experiments/configs/drape.yaml" -o "$tmp/drape.h5" --set time.frames=60 \
    --set objects.0.sampling.spacing=0.07 >/dev/null
# The press's plates: the log keeps each collider's pose every frame, and it follows the
# keyframes (0.15 m inwards over the first second, held to 1.5 s, back out by 2 s).
"$csm" run "$root/experiments/configs/press.yaml" -o "$tmp/press.h5" --set time.frames=100 \
    --set objects.0.sampling.particles=300 --set clustering.count=10 >/dev/null
"$py" - "$tmp/press.h5" <<'PY'
import sys
import h5py
import numpy as np
with h5py.File(sys.argv[1], "r") as f:
    t = f["frames/time"][:]
    expect = np.interp(t, [0, 1, 1.5, 2], [0, 0.15, 0.15, 0])
    for k, sign in ((0, 1), (1, -1)):
        c = f[f"colliders/{k}/center"][:]
        R = f[f"colliders/{k}/rotation"][:]
        err = np.abs(c[:, 0] - sign * (-0.5 + expect)).max()
        print(f"colliders/{k}: x from {c[0, 0]:+.3f} to {c[-1, 0]:+.3f} m, largest error {err:.2e} m")
        assert err < 1e-12 and np.abs(c[:, 1:]).max() == 0
        assert np.abs(R - np.eye(3)).max() == 0
PY
