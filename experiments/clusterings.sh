#!/bin/bash
# The cube of experiments/configs/cube_clusterings.yaml with each clustering method, side by side:
# logs in out/clusterings/, then each run's clusters (csm info) and one line of numbers per log.
# Usage: experiments/clusterings.sh [path/to/csm]
set -euo pipefail
cd "$(dirname "$0")/.."
csm=${1:-build/csm}
out=out/clusterings
mkdir -p "$out"
config=experiments/configs/cube_clusterings.yaml
run() { # name clustering
    "$csm" run "$config" -o "$out/$1.h5" --force --set "clustering=$2" >/dev/null
    echo "$1: $("$csm" info "$out/$1.h5" | grep -E '^  (clusters|cluster width) ' | sed 's/^ *//' | paste -sd ';')"
}
run random_radius "{method: random_radius, radius: 0.35}"
run fuzzy_cmeans "{method: fuzzy_cmeans, count: 29}"
run per_particle "{method: per_particle, radius: 0.15}"
/usr/bin/python3 experiments/analysis/summary.py "$out"/*.h5
