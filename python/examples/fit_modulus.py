#!/usr/bin/python3
"""A simple optimiser: the shear modulus that makes a cantilever's tip come to rest a target
distance below where it starts. Each guess runs the small cantilever of the tests
(tests/configs/cantilever.yaml) to rest with projective dynamics; the next guess is Newton's
step on log(deflection) against log(modulus), whose slope linear elasticity puts at -1.

    PYTHONPATH=python /usr/bin/python3 python/examples/fit_modulus.py [--target 0.05]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import csm  # noqa: E402 - the package beside this example, unless one is installed

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--target", type=float, default=0.05, help="m below its start")
parser.add_argument("--tolerance", type=float, default=1e-3, help="relative")
args = parser.parse_args()
config = os.path.join(here, "..", "..", "tests", "configs", "cantilever.yaml")


def deflection(modulus):
    sets = {"solver": {"integrator": "projective_dynamics", "rotation": "polar_apq", "modulus": modulus,
                       "iterations": 30},
            "time": {"dt": 0.05, "frames": 60, "substeps": 1}, "forces": [{"type": "gravity"}]}
    with csm.Simulation(config, set=sets) as sim:
        tip = sim.rest[:, 0] > sim.rest[:, 0].max() - 1e-9
        y0 = sim.x[tip, 1].mean()
        sim.step(sim.frames)
        return y0 - sim.x[tip, 1].mean()


modulus, d = 1000.0, None
for k in range(12):
    d = deflection(modulus)
    print(f"guess {k}: modulus {modulus:10.3f} Pa, tip deflection {d:.6f} m")
    if abs(d / args.target - 1) < args.tolerance:
        break
    modulus *= math.exp(math.log(d / args.target))  # Newton in log space, slope -1
print(f"modulus {modulus:.3f} Pa puts the tip {d:.6f} m down (target {args.target} m) after {k + 1} runs")
sys.exit(0 if abs(d / args.target - 1) < args.tolerance else 1)
