#!/bin/bash
# Runs every variant of the seed papers' small examples (docs/experiments.md) into out/seeds/
# and prints one line of numbers per log. Usage: experiments/seeds.sh [path/to/csm]
set -euo pipefail
cd "$(dirname "$0")/.."
csm=${1:-build/csm}
out=out/seeds
mkdir -p "$out"
c=experiments/configs
run() { # name config [--set ...]
    local name=$1 config=$2
    shift 2
    "$csm" run "$c/$config" -o "$out/$name.h5" --force "$@" >/dev/null
}
run stretch_29 stretch_cube.yaml
run stretch_29_sm stretch_cube.yaml --set solver.iterations=0
run stretch_1 stretch_cube.yaml --set clustering.radius=2
run stretch_1_sm stretch_cube.yaml --set clustering.radius=2 --set solver.iterations=0
run drop drop_cube_strain_limited.yaml
run drop_sm drop_cube_strain_limited.yaml --set solver.iterations=0
run drop_alpha0.1 drop_cube_strain_limited.yaml --set solver.alpha=0.1
run drop_alpha1 drop_cube_strain_limited.yaml --set solver.alpha=1
run drop_alpha1_sm drop_cube_strain_limited.yaml --set solver.alpha=1 --set solver.iterations=0
run drop_gamma0.05 drop_cube_strain_limited.yaml --set solver.gamma=0.05
run drop_gamma0.5 drop_cube_strain_limited.yaml --set solver.gamma=0.5
run drop_iter1 drop_cube_strain_limited.yaml --set solver.iterations=1
run drop_iter20 drop_cube_strain_limited.yaml --set solver.iterations=20
run drop_pbd drop_cube_strain_limited.yaml --set solver.integrator=pbd --set solver.iterations=5
run spin_sm spin_cube.yaml
run spin_sm_apq spin_cube.yaml --set solver.rotation=polar_apq
run spin_pbd spin_cube.yaml --set solver.integrator=pbd
run spin_pbd_apq spin_cube.yaml --set solver.integrator=pbd --set solver.rotation=polar_apq
run spring_sm spring.yaml
run spring_pbd spring.yaml --set solver.integrator=pbd
run rectangle_apq rotation_rectangle.yaml
run rectangle_f rotation_rectangle.yaml --set solver.rotation=polar_f
/usr/bin/python3 experiments/analysis/summary.py "$out"/*.h5
