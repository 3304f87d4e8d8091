#!/usr/bin/env bash
# The contact experiments, CI-sized: two bunnies of about 400 particles dropped onto each other
# and the ground, and the stack of five cubes. No pair of particles of two objects is closer than
# 95 % of the contact distance at the end of any frame (one step each), by the broad phase's
# list and by a brute-force search (experiments/analysis/contact.py --check); both runs finish.
# The same for both scenes with contact.method cluster_proxies.
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
