#!/usr/bin/python3
"""What a Python step costs beyond the C step: a 64-particle scene (a 4 x 4 x 4 grid, one cluster
pass of shape matching per step, no log) stepped N frames by one call into the library, and N
times by sim.step(1). The difference per frame is the binding's overhead: ctypes' call, the
argument conversion and the error check. A benchmark, not a test: the figures move with the
machine.

    PYTHONPATH=python /usr/bin/python3 python/examples/overhead.py [--frames 20000]
"""
import argparse
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import csm  # noqa: E402 - the package beside this example, unless one is installed

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--frames", type=int, default=20000)
parser.add_argument("--repeats", type=int, default=5)
args = parser.parse_args()
text = ("time: {frames: 1000000000, dt: 0.01, substeps: 1}\n"
        "objects:\n  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n    sampling: {type: grid, spacing: 0.1}\n"
        "clustering: {method: random_radius, radius: 0.15}\noutput: {every: 1000000000}\n")

with csm.Simulation("tiny.yaml", text=text, threads=1) as sim:
    assert sim.n == 64, sim.n
    lib = csm.simulation.library()
    c_ms, py_ms = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        lib.csm_simulation_frames(sim._s, args.frames)  # the loop in C
        c_ms.append((time.perf_counter() - t) / args.frames * 1e6)
        step = sim.step
        t = time.perf_counter()
        for _ in range(args.frames):
            step(1)
        py_ms.append((time.perf_counter() - t) / args.frames * 1e6)
    tracemalloc.start()
    for _ in range(1000):
        sim.x
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
c, p = sorted(c_ms)[len(c_ms) // 2], sorted(py_ms)[len(py_ms) // 2]
print(f"64 particles, {args.frames} frames, median of {args.repeats}: C {c:.2f} us/frame, "
      f"sim.step(1) {p:.2f} us/frame, overhead {p - c:.2f} us")
print(f"reading sim.x 1000 times: peak {peak} bytes traced (the loop's counter included)")
