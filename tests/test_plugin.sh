#!/usr/bin/env bash
# A plugin built apart from csm (docs/example_plugin.c, built as a shared object by the tests):
# it loads from a config's plugins list, its parameters are checked from its table, its force
# moves the object's centre of mass as a spring to the anchor would, and its own dataset and
# timing are in the log. A plugin built for another plugin ABI is refused.
source "$(dirname "$0")/lib.sh" "$@"
plugin=$3
cat >"$tmp/anchor.yaml" <<YAML
name: anchor
plugins: [$plugin]
time: {dt: 0.01, frames: 100}
objects:
  - shape: {type: box, size: [0.4, 0.4, 0.4]}
    sampling: {spacing: 0.1}
    position: [1, 0, 0]
forces: [{type: anchor, k: 4, point: [0, 0, 0]}]
YAML
expect 2 "^csm: --set #1: forces\[0\].k = -1 is outside \[0, 1e\+09\]" -- "$csm" check "$tmp/anchor.yaml" \
    --set 'forces=[{type: anchor, k: -1}]'
expect 2 "unknown key forces\[0\].stiffness \(valid keys: k, point, object, type\)" -- "$csm" check "$tmp/anchor.yaml" \
    --set 'forces=[{type: anchor, stiffness: 1}]'
check "csm run with the plugin" "$csm" run "$tmp/anchor.yaml" -o "$tmp/anchor.h5" --threads 1
# a bare name loads from beside the config, also when csm runs in the config's own folder
mkdir -p "$tmp/beside"
cp "$plugin" "$tmp/beside/anchor.so"
sed "s|plugins: \[.*\]|plugins: [anchor.so]|" "$tmp/anchor.yaml" >"$tmp/beside/anchor.yaml"
check "plugins: [anchor.so] beside the config, from another folder" "$csm" check "$tmp/beside/anchor.yaml"
check "... and from the config's own folder" sh -c 'cd "$1" && "$2" check anchor.yaml' sh "$tmp/beside" "$csm"
pylog "$tmp/anchor.h5" <<'PY'
import sys
import numpy as np
from logcheck import check, finish, log

f = log(sys.argv[1])
T = f["frames/time"].shape[0]
stretch = f["anchor/stretch"][()]
check(stretch.shape == (T, 3), f"the plugin's dataset anchor/stretch is (T, 3): {stretch.shape}")
check(f["anchor/stretch"].attrs["units"] == "m", "its units")
check(f["timings/anchor"].shape == (T,), "its own timing, one row per frame")
# a uniform acceleration -k (c - p) on every particle: the centre of mass is a harmonic
# oscillator of period 2 pi / sqrt(k) = pi s, started at rest 1 m away
com = f["diagnostics/center_of_mass"][()]
t = f["frames/time"][()]
check(np.allclose(com[:, 0], np.cos(2 * t), atol=0.02), f"x of the centre of mass follows cos(2t) (max error {np.max(np.abs(com[:, 0] - np.cos(2 * t))):.3g} m)")
check(np.allclose(stretch[1:, 0], com[:-1, 0], atol=0.03), "the dataset records c - point")
e = f["diagnostics/kinetic_energy"][()] + f["diagnostics/potential_energy"][()]
check(abs(e[-1] - e[0]) < 0.05 * e[0], f"the spring's potential is in the energy: {e[0]:.4g} J then {e[-1]:.4g} J")
finish()
PY
# built for plugin ABI 3: refused by name, before anything of it runs
expect 2 "plugin .*old_plugin.so was built for plugin ABI 3; this csm has ABI [0-9]+: rebuild it" -- \
    "$csm" check "$tmp/anchor.yaml" --set "plugins=[$4]"
finish
