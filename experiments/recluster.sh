#!/bin/bash
# The reclustering experiments (docs/experiments.md): the rows of Falkenstein 2017 Table 1 --
# the lambda = 0 compressed beam without reclustering, with `embedded` and with `world_space`, the
# lambda = 0.1 beam with `embedded`, the twisted beam -- and the beam without reclustering or
# viscosity, where the paper's failure shows (cond(F^p) grows without bound) -- into FOLDER
# (default out/recluster/), then Table 1 (ms per frame by stage) from the logs' /timings/*, the
# plastic state of each run and its energy budget by stage.
# Usage: experiments/recluster.sh [path/to/csm [FOLDER]]
set -euo pipefail
cd "$(dirname "$0")/.."
csm=${1:-build/csm}
out=${2:-out/recluster}
mkdir -p "$out"
rows=(beam_compress beam_compress_embedded beam_compress_world_space beam_compress_elastic_embedded beam_twist)
for name in "${rows[@]}"; do
    # a run that becomes unstable ends with a failed status and keeps its frames; the table says so
    "$csm" run "experiments/configs/$name.yaml" -o "$out/$name.h5" --force >/dev/null || true
done
"$csm" run experiments/configs/beam_compress.yaml --set solver.viscosity=0 --set name=beam_compress_inviscid \
    -o "$out/beam_compress_inviscid.h5" --force >/dev/null || true
rows+=(beam_compress_inviscid)
logs=("${rows[@]/#/$out/}")
logs=("${logs[@]/%/.h5}")
/usr/bin/python3 experiments/analysis/timings.py "${logs[@]}" \
    --label "beam_compress=Compressed beam (no reclustering)" \
    --label "beam_compress_embedded=Compressed beam (our algorithm)" \
    --label "beam_compress_world_space=Compressed beam (no optimization)" \
    --label "beam_compress_elastic_embedded=Compressed beam (more elastic, our algorithm)" \
    --label "beam_twist=Twisted beam" \
    --label "beam_compress_inviscid=Compressed beam (no reclustering, no viscosity)"
echo
/usr/bin/python3 experiments/analysis/plasticity.py "${logs[@]}"
echo
/usr/bin/python3 experiments/analysis/budget.py "${logs[@]}"
