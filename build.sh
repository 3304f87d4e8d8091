#!/usr/bin/env bash
# Set-up, build and run for csm on Debian 12.
#   ./build.sh run [CONFIG]   install what is missing, build, run CONFIG (default: the bunny of
#                             Bargteil-Jones 2014 Fig 1); meshes a config names are fetched first
#   ./build.sh test           install what is missing, fetch the meshes, build with warnings as
#                             errors, run every test
#   ./build.sh fuzz [SECONDS] install clang, build the libFuzzer targets (in build-fuzz/: the config
#                             loader, the mesh readers, --set, the sweep expansion), run each
#                             from its seed corpus in tests/fuzz/ for SECONDS (default 60; 0 runs
#                             the seeds only)
#   ./build.sh figures        install what is missing, build, regenerate every reproduced figure
#                             and table into out/figures/ (make figures; experiments/README.md)
#   ./build.sh build [DIR]    configure and build the run path in DIR (default build/) with what
#                             is installed: no packages, no tests (make and CI call this)
#   ./build.sh packages KIND  print the Debian packages of one path (build run figures fuzz test)
# Environment: CSM_SANITIZE=ON builds and tests under ASan+UBSan (in build-sanitize/);
#              CSM_WERROR=ON makes warnings errors on the run path (the test path always does);
#              CSM_JOBS sets the build parallelism (default: all cores).
set -euo pipefail
cd "$(dirname "$0")"

# What each path needs. The run path builds without the tests (-DBUILD_TESTING=OFF), so it never
# needs TEST_PKGS; RUN_PKGS include what the README's Python tour reads logs with (h5py, numpy,
# yaml for a log's config as a dict, and venv + pip + setuptools to install python/ offline).
BUILD_PKGS="gcc make cmake pkg-config git libfyaml-dev libhdf5-dev liblapacke-dev libopenblas-dev libsuitesparse-dev"
RUN_PKGS="hdf5-tools python3 python3-h5py python3-numpy python3-yaml python3-venv python3-pip python3-setuptools python3-matplotlib python3-skimage"
FIGURE_PKGS="python3-matplotlib python3-yaml python3-skimage ffmpeg calculix-ccx"
FUZZ_PKGS="clang libclang-rt-14-dev"
TEST_PKGS="libcmocka-dev valgrind python3-matplotlib python3-yaml python3-skimage paraview python3-paraview xvfb xauth libxml2-utils"

install_missing() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "csm: installing Debian packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

configure_and_build() {
    local dir=$1; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j "${CSM_JOBS:-$(nproc)}"
}

# The run path: csm alone, without the tests and their packages.
build_run_path() {
    configure_and_build "${1:-build}" -DBUILD_TESTING=OFF -DCSM_WERROR="${CSM_WERROR:-OFF}"
}

case "${1:-}" in
build)
    build_run_path "${2:-build}"
    ;;
run)
    # shellcheck disable=SC2086
    install_missing $BUILD_PKGS $RUN_PKGS
    build_run_path build
    config=${2:-experiments/configs/bunny.yaml}
    if grep -q "data/meshes/" "$config"; then data/fetch_meshes.sh; fi
    ./build/csm run "$config" --force
    ;;
test)
    # shellcheck disable=SC2086
    install_missing $BUILD_PKGS $RUN_PKGS $TEST_PKGS
    data/fetch_meshes.sh
    if [ "${CSM_SANITIZE:-OFF}" = "ON" ]; then
        dir=build-sanitize
        configure_and_build "$dir" -DCSM_WERROR=ON -DCSM_SANITIZE=ON -DBUILD_TESTING=ON
    else
        dir=build
        configure_and_build "$dir" -DCSM_WERROR=ON -DBUILD_TESTING=ON
    fi
    ctest --test-dir "$dir" --output-on-failure -j "${CSM_JOBS:-$(nproc)}"
    ;;
fuzz)
    # shellcheck disable=SC2086
    install_missing $BUILD_PKGS $FUZZ_PKGS
    CC=clang configure_and_build build-fuzz -DCSM_FUZZ=ON -DCSM_OPENMP=OFF -DBUILD_TESTING=OFF -DCSM_WERROR=ON
    seconds=${2:-60}
    # 0 seconds: replay the seed corpus only (what CI does)
    limit=(-max_total_time="$seconds")
    [ "$seconds" = 0 ] && limit=(-runs=0)
    for target in config mesh set sweep; do
        # the corpus grows in a scratch folder; tests/fuzz/ keeps the seeds
        work=$(mktemp -d)
        echo "csm: fuzzing the $target loader for $seconds s (0: the seeds only)"
        LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp ./build-fuzz/fuzz/fuzz_$target "${limit[@]}" \
            -timeout=10 -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/" "$work" "tests/fuzz/$target" \
            2>"$work/log" || { tail -40 "$work/log"; echo "csm: fuzz_$target failed; the input is in $work"; exit 1; }
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/log" | sed "s/^/  $target: /"
        rm -rf "$work"
    done
    ;;
figures)
    # shellcheck disable=SC2086
    install_missing $BUILD_PKGS $RUN_PKGS $FIGURE_PKGS
    build_run_path build
    make figures
    ;;
packages)
    case "${2:-}" in
    build) echo $BUILD_PKGS ;;
    run) echo $RUN_PKGS ;;
    figures) echo $FIGURE_PKGS ;;
    fuzz) echo $FUZZ_PKGS ;;
    test) echo $TEST_PKGS ;;
    *) echo "usage: ./build.sh packages build|run|figures|fuzz|test" >&2; exit 2 ;;
    esac
    ;;
*)
    echo "usage: ./build.sh run [CONFIG] | test | fuzz [SECONDS] | figures | build [DIR] | packages KIND" >&2
    exit 2
    ;;
esac
