#!/usr/bin/env bash
# The Python reader (python/csm): it opens a reclustering run's log and gives every frame's
# clusters without CSR arithmetic, the same numbers the datasets hold; it lists a sweep's runs;
# and it installs into a venv with no network (pip --no-index), where the venv module is there,
# carrying libcsm.so, with which it steps a simulation (csm.Simulation) from any folder.
source "$(dirname "$0")/lib.sh" "$@"
"$csm" run "$root/tests/configs/recluster_bar.yaml" --set 'recluster={method: embedded, cond_max: 1.5, fade_out: 5, fade_in: 3}' \
    --frames 45 -o "$tmp/bar.h5" >/dev/null 2>&1
check "the reclustering bar runs" [ -s "$tmp/bar.h5" ]
printf 'name: tiny\ntime: {frames: 2}\nobjects:\n  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n    sampling: {spacing: 0.1}\nsweep:\n  solver.alpha: [0.2, 0.4]\n' >"$tmp/tiny.yaml"
"$csm" sweep "$tmp/tiny.yaml" -o "$tmp/sweep" --jobs 1 >/dev/null 2>&1
check "the tiny sweep runs" [ -s "$tmp/sweep/index.csv" ]
PYTHONPATH="$root/python" pylog "$tmp/bar.h5" "$tmp/sweep" <<'PY'
import sys
import h5py
import numpy as np
import csm
from logcheck import check, finish

with csm.open(sys.argv[1]) as log:
    f = h5py.File(sys.argv[1], "r")
    check(log.frames == f["frames/time"].shape[0] == 46, f"46 frames ({log.frames})")
    check(log.attrs["reclusterer"] == "embedded" and log.config["recluster"]["method"] == "embedded",
          "attributes and the resolved config as a dict")
    check(np.array_equal(log.positions(-1), f["frames/positions"][-1]), "positions of the last frame")
    check(np.array_equal(log.diagnostic("kinetic_energy"), f["diagnostics/kinetic_energy"][()]), "a diagnostic by name")
    check(set(log.timings) >= {"dynamics", "total"}, "timings by name")
    ev = log.events
    check(len(ev) > 0 and set(ev["kind"]) <= {b"removed", b"added"}, f"{len(ev)} reclustering events")
    counts = f["clusters/count"][()]
    worst, agree = 0.0, True
    for t in range(log.frames):
        cl = log.clusters(t)
        agree &= len(cl) == counts[t] and cl.com.shape == (counts[t], 3) and cl.Fp.shape == (counts[t], 3, 3)
        # the CSR arithmetic the reader spares its user, done by hand
        v = f["clusters/membership_version"][t]
        vo, vm = f["clusters/version_offsets"], f["clusters/version_members"]
        off = f["clusters/offsets"][vo[v]:vo[v + 1]]
        mem = f["clusters/members"][vm[v]:vm[v + 1]]
        c = len(cl) // 2
        agree &= np.array_equal(cl.members(c), mem[off[c]:off[c + 1]])
        s = np.bincount(cl.member, cl.weight, minlength=log.particles)
        worst = max(worst, float(np.abs(s - 1).max()))
    check(agree, "every frame's clusters match the datasets (members by hand through the CSR offsets)")
    check(worst < 1e-12, f"weights sum to 1 for every particle in every frame (worst {worst:.1e})")
    check(bool((log.clusters(-1).state >= 0).all()) and len(set(log.clusters(-1).ids)) == len(log.clusters(-1)), "states and stable ids")
runs = csm.sweep(sys.argv[2])
check([r.values["solver.alpha"] for r in runs] == [0.2, 0.4] and all(r.status == "ok" for r in runs),
      f"a sweep's runs with their values (numbers as numbers) and status: {runs}")
with runs[1].open() as log:
    check(log.attrs["solver.alpha"] == 0.4, "a run opens as a log")
try:
    csm.open(sys.argv[2] + "/index.csv")
    check(False, "a file that is not a csm log is refused")
except (OSError, ValueError):
    check(True, "a file that is not a csm log is refused")
finish()
PY
# the validation suite's runs (experiments/validation/run.py): a finished run is kept, one whose
# settings changed runs again, and a refined run gets the substeps csm check asks for
pylog "$csm" "$root" "$tmp" <<'PY'
import os
import sys
sys.path.insert(0, os.path.join(sys.argv[2], "experiments", "validation"))
import run
from logcheck import check, finish

csm, root, tmp = sys.argv[1:4]
cube, out = os.path.join(root, "tests", "configs", "free_cube.yaml"), os.path.join(tmp, "kept.h5")
run.csm_run(csm, cube, out, ["time.frames=2"]).close()
first = os.stat(out).st_mtime_ns
run.csm_run(csm, cube, out, ["time.frames=2"]).close()
check(os.stat(out).st_mtime_ns == first, "a finished validation run is kept")
with run.csm_run(csm, cube, out, ["time.frames=3"]) as f:
    check(f["frames/time"].shape[0] == 4, "a run whose settings changed runs again")
beam = os.path.join(root, "experiments", "configs", "beam_refinement.yaml")
need = run.substeps_needed(csm, beam, ["sweep={}", "clustering.count=10", "time.substeps=8"])
fine = run.substeps_needed(csm, beam, ["sweep={}", "clustering.count=10", "time.substeps=16"])
check(need == 9 and fine is None, f"the substeps csm check asks for: {need} at 8, {fine} at 16")
finish()
PY
# installed as a package with no network, as the README says
if "$py" -m venv --system-site-packages "$tmp/venv" 2>/dev/null && [ -x "$tmp/venv/bin/pip" ]; then
    cp -r "$root/python" "$tmp/python"
    # the library the build made goes in with the package (the copy here has no ../build beside it)
    CSM_LIBRARY=$(cd "$(dirname "$csm")" && pwd)/libcsm.so \
        "$tmp/venv/bin/pip" install --no-index --no-build-isolation "$tmp/python" >"$tmp/pip.txt" 2>&1
    check "pip install --no-index ./python ($(tail -1 "$tmp/pip.txt"))" [ $? -eq 0 ]
    check "the installed package opens a log" "$tmp/venv/bin/python" -c "import csm, sys; csm.open(sys.argv[1]).close()" "$tmp/bar.h5"
    if nm -D "$(dirname "$csm")/libcsm.so" 2>/dev/null | grep -q __asan_init; then
        echo "note: a sanitized libcsm.so is not loaded into the venv's Python"
    else
        check "the installed package steps a simulation with the library it carries" sh -c 'cd / && env -u CSM_LIBRARY \
            "$1/venv/bin/python" -c "import csm, sys; s = csm.Simulation(sys.argv[1]); s.step(2); assert s.frame == 2" "$2"' \
            sh "$tmp" "$root/experiments/configs/drop_cube.yaml"
    fi
else
    echo "note: no python3-venv with pip here; the install is not tried"
fi
finish
