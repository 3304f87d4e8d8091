#!/usr/bin/env bash
# Every example command of the README and of docs/ runs: each line of their ```sh blocks (a line
# ending in \ joined to the next) runs in order, each page from a scratch folder of its own that
# holds the repository's configs, scripts, meshes and Python package, with build/csm the csm
# under test, and must exit 0. Three kinds of line are left to the commands that own them: ./build.sh
# (the set-up; CI runs it, and this test runs inside it), make (the figures and the validation
# suite, hours; `make figures` and `make validation` run them) and sbatch (a cluster). So that a
# page runs in seconds, `csm run`, `sweep` and `bench` stop after two frames unless the line
# says how many (--frames 2 is added after the subcommand).
source "$(dirname "$0")/lib.sh" "$@"
export MPLBACKEND=Agg
lib=$(cd "$(dirname "$csm")" && pwd)/libcsm.so
# Python loads a sanitized library only after its runtime; Python's own allocations are not its to judge
if nm -D "$lib" 2>/dev/null | grep -q __asan_init; then
    export LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
fi

# The lines of a page's sh blocks, continuations joined, one per line of output.
commands() {
    awk '/^```sh$/ { inside = 1; next }
         /^```/ { inside = 0; next }
         inside {
             line = line $0
             if (sub(/\\$/, "", line)) next
             print line
             line = ""
         }' "$1"
}

# A scratch folder for one page, as the repository's root looks after ./build.sh run.
scratch() {
    local work=$tmp/$1
    mkdir -p "$work/build"
    ln -s "$csm" "$work/build/csm"
    ln -s "$lib" "$work/build/libcsm.so"
    for d in api core experiments data tests; do ln -s "$root/$d" "$work/$d"; done
    cp -r "$root/python" "$root/docs" "$work/" # pip may write into python/; a plugin path is relative to its config
    echo "$work"
}

ran=0 skipped=0
for page in "$root/README.md" "$root"/docs/*.md; do
    name=${page#"$root"/}
    cd "$(scratch "${name//\//_}")" || exit 1
    while IFS= read -r line; do
        case $line in
        ./build.sh* | make\ * | sbatch\ *)
            skipped=$((skipped + 1))
            continue
            ;;
        esac
        cmd=$line
        if [[ $cmd =~ ^build/csm\ (run|sweep|bench)( |$) ]] && [[ $cmd != *--frames* ]]; then
            cmd="build/csm ${BASH_REMATCH[1]} --frames 2${cmd#build/csm "${BASH_REMATCH[1]}"}"
        fi
        ran=$((ran + 1))
        if out=$(bash -c "$cmd" 2>&1 </dev/null); then
            pass_
        else
            fail_ "$name: $line -> exit $?: $(printf '%s' "$out" | tail -n 5)"
        fi
    done < <(commands "$page")
done
echo "$ran commands run, $skipped left to ./build.sh, make and sbatch"
check "the README and docs/ hold example commands" [ "$ran" -ge 10 ]
finish
