#!/bin/bash
# The plasticity experiments (docs/experiments.md): the compressed beams of Falkenstein 2017
# Sec 4 without reclustering (lambda = 0 and lambda = 0.1) and the plastic bunny, with the bunny's
# elastic and unlimited variants; logs in out/plasticity/, then one table row per log from
# experiments/analysis/plasticity.py and out/plasticity/plasticity.png (.pdf).
# Usage: experiments/plasticity.sh [path/to/csm]
set -euo pipefail
cd "$(dirname "$0")/.."
csm=${1:-build/csm}
out=out/plasticity
mkdir -p "$out"
data/fetch_meshes.sh >/dev/null
run() { # name config [--set ...]
    local name=$1 config=$2
    shift 2
    "$csm" run "experiments/configs/$config.yaml" -o "$out/$name.h5" --force "$@" >/dev/null || true
}
run beam_compress beam_compress
run beam_compress_elastic beam_compress_elastic
run plastic_bunny plastic_bunny
run plastic_bunny_elastic plastic_bunny --set plasticity.model=none
run plastic_bunny_unlimited plastic_bunny --set plasticity.cond_limit=0
/usr/bin/python3 experiments/analysis/plasticity.py "$out"/*.h5 --plot "$out/plasticity.png"
