#!/usr/bin/env bash
# Valgrind memcheck over one short experiment: a plastic bar that reclusters (run), the same log
# continued (csm run --resume) and read back (csm info); and over the C API's test (test_api: a
# host that creates, steps, checkpoints, restores and destroys simulations). Any invalid access,
# use of an uninitialised value, or memory leaked for good fails the test.
source "$(dirname "$0")/lib.sh" "$@"
vg=(valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --quiet)
vgcheck() { # vgcheck NAME COMMAND...: exit 0 and no report from memcheck
    local name=$1
    shift
    if "${vg[@]}" "$@" >"$tmp/out" 2>&1; then
        pass_
    else
        fail_ "$name"
        tail -30 "$tmp/out"
    fi
}
cfg="$root/tests/configs/recluster_bar.yaml"
vgcheck "csm run" "$csm" run "$cfg" --set 'recluster={method: embedded, cond_max: 1.5, fade_out: 5, fade_in: 3}' \
    --frames 10 --threads 1 -o "$tmp/bar.h5"
vgcheck "csm run --resume" "$csm" run --resume "$tmp/bar.h5" --frames 14 --threads 1
vgcheck "csm info" "$csm" info "$tmp/bar.h5"
vgcheck "test_api" "$3"
finish
