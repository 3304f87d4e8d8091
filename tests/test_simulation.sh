#!/usr/bin/env bash
# csm.Simulation, a simulation stepped in Python through libcsm.so: shipped configs run for N
# frames in process end where `csm run` of the same config ends, bit for bit; the particle arrays
# are views, read with no allocation; bad input, a NaN force, a force that blows the run up and a
# use after close raise with the command line's message and never crash, the blown-up state kept
# as it was before; 10,000 create/step/close cycles grow the resident memory by less than 1 MiB;
# and the three examples of python/examples run.
source "$(dirname "$0")/lib.sh" "$@"
lib=$(cd "$(dirname "$csm")" && pwd)/libcsm.so
export CSM_LIBRARY=$lib PYTHONPATH=$root/python MPLBACKEND=Agg
# a sanitized library needs its runtime loaded first; Python's own allocations are not its to judge
sanitized=0
if nm -D "$lib" 2>/dev/null | grep -q __asan_init; then
    sanitized=1
    export LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
fi

# csm run of each config for its frames, then the same in process
configs=(drop_cube bunny stretch_cube press two_bunnies beam_compress_embedded plastic_bunny spring)
for c in "${configs[@]}"; do
    "$csm" run "$root/experiments/configs/$c.yaml" --frames 12 -o "$tmp/$c.h5" --threads 1 >/dev/null 2>&1 ||
        fail_ "csm run $c"
done
pylog "$root" "$tmp" "${configs[@]}" <<'PY'
import itertools
import sys
import tracemalloc

import h5py
import numpy as np

import csm
from logcheck import check, finish

root, tmp, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
for c in configs:
    with csm.Simulation(f"{root}/experiments/configs/{c}.yaml", set={"time.frames": 12}, threads=2) as sim:
        sim.step(12)
        f = h5py.File(f"{tmp}/{c}.h5", "r")
        same = np.array_equal(sim.x, f["frames/positions"][-1]) and np.array_equal(sim.v, f["frames/velocities"][-1])
        check(same and sim.frame == 12, f"{c}: 12 frames in process end where csm run's end, bit for bit")

sim = csm.Simulation(f"{root}/experiments/configs/drop_cube.yaml", log=f"{tmp}/py.h5")
x = sim.x
x0 = x.copy()
check(x is sim.x and not x.flags.writeable and sim.v.flags.writeable, "sim.x is one read-only view; sim.v writable")
sim.step(3)
check(not np.array_equal(x, x0) and x is sim.x, "the view taken before the steps shows the positions after them")
loop = itertools.repeat(None, 1000)  # a loop that allocates no counter
tracemalloc.start()
for _ in loop:
    a = sim.x
    b = sim.v
size, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
check(peak == 0, f"reading sim.x and sim.v 1000 times allocates nothing ({peak} bytes)")
d = sim.diagnostics
check(set(d) >= {"kinetic_energy", "linear_momentum", "energy_error", "work_external"}
      and d["linear_momentum"].shape == (3,), "the diagnostics by name")
check(sim.warning is None, "no warning where contact took energy only")
cl = sim.clusters
check(len(cl) == cl.com.shape[0] and cl.R.shape == (len(cl), 3, 3) and len(cl.members(0)) > 0
      and abs(np.bincount(cl.member, cl.weight, minlength=sim.n) - 1).max() < 1e-12, "the clusters, weights summing to 1")
sim.close()
f = h5py.File(f"{tmp}/py.h5", "r")
check(f.attrs["status"] == "ok" and f["frames/time"].shape[0] == 4, "its log: frame 0 and 3 more, status ok")

# errors: a clear exception, never a crash
def raises(kind, fn, text):
    try:
        fn()
    except kind as e:
        check(text in str(e), f"{kind.__name__}: {e}")
        return
    check(False, f"expected {kind.__name__} ({text})")

raises(csm.ConfigError, lambda: csm.Simulation(f"{root}/experiments/configs/missing.yaml"), "missing.yaml")
raises(csm.ConfigError, lambda: csm.Simulation("x.yaml", text="time: {dt: -1}\n"), "x.yaml:1: time.dt = -1")
raises(csm.ConfigError, lambda: csm.Simulation(f"{root}/experiments/configs/drop_cube.yaml",
                                                set={"solver.alpha": 7}), "solver.alpha = 7")
sim = csm.Simulation(f"{root}/experiments/configs/drop_cube.yaml")
def assign(value):
    sim.external_force = value
raises(ValueError, lambda: assign(np.zeros((sim.n, 2))), "does not fit")
raises(TypeError, lambda: assign(np.zeros((sim.n, 3), complex)), "real numbers")
raises(ValueError, lambda: assign(np.full((sim.n, 3), np.nan)), "finite")
sim.external_force[5, 1] = np.nan  # written in place: refused at the step
raises(csm.ConfigError, lambda: sim.step(), "particle 5 is not finite")
sim.external_force[:] = 0
sim.step(2)
before = sim.x.copy()
sim.external_force[:, 1] = 1e300  # a force that blows the run up
raises(csm.SimulationError, lambda: sim.step(), "unstable")
check(np.array_equal(before, sim.x) and sim.frame == 2, "the blown-up frame leaves the state before it")
raises(csm.SimulationError, lambda: sim.step(), "until a restore")
raises(csm.ConfigError, lambda: sim.pin(10**6), "particles 0 to")
x = sim.x
kept = x.copy()
sim.close()
raises(csm.CsmError, lambda: sim.step(), "closed")
raises(csm.CsmError, lambda: sim.x, "closed")
check(np.array_equal(x, kept), "a view taken before close() still reads the positions it showed")

# a checkpoint restored continues bit for bit; run() returns the log reader
sim = csm.Simulation(f"{root}/experiments/configs/stretch_cube.yaml")
sim.step(5)
state = sim.checkpoint()
sim.step(10)
x15 = sim.x.copy()
sim.restore(state)
check(sim.frame == 5, "restored to frame 5")
sim.step(10)
check(np.array_equal(x15, sim.x), "a checkpoint restored continues bit for bit")
sim.close()
log = csm.run(f"{root}/experiments/configs/spring.yaml", frames=20, log=f"{tmp}/spring_run.h5")
check(log.frames == 21 and log.attrs["status"] == "ok", f"csm.run returns the log ({log.frames} frames)")
finish()
PY

# 10,000 create, step and close cycles: resident memory grows by less than 1 MiB
if [ "$sanitized" = 0 ]; then
    pylog "$tmp" <<'PY'
import sys

import csm
from logcheck import check, finish

text = "time: {frames: 2}\nobjects:\n  - shape: {type: box, size: [0.2, 0.2, 0.2]}\n    sampling: {spacing: 0.1}\n"

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

def cycles(n):
    for _ in range(n):
        with csm.Simulation("tiny.yaml", text=text) as sim:
            sim.step()
            sim.x, sim.clusters, sim.diagnostics

cycles(1000)  # the allocator's pools and Python's caches fill first
before = rss()
cycles(10000)
grown = rss() - before
print(f"10,000 cycles: resident memory {before / 2**20:.1f} MiB, grown by {grown / 1024:.0f} KiB")
check(grown < 2**20, f"10,000 create/step/close cycles grow the resident memory by {grown} bytes (< 1 MiB)")
finish()
PY
else
    echo "note: the leak check runs on the plain build (the sanitizer's allocator keeps freed memory)"
fi

# the examples
for e in force_field material_sweep fit_modulus; do
    if (cd "$tmp" && "$py" "$root/python/examples/$e.py" >"$tmp/$e.txt" 2>&1); then
        pass_
        tail -1 "$tmp/$e.txt"
    else
        fail_ "python/examples/$e.py: $(tail -5 "$tmp/$e.txt")"
    fi
done
[ -s "$tmp/out/python/material_sweep.png" ] && pass_ || fail_ "material_sweep.png"
finish
