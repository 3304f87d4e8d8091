#!/usr/bin/python3
"""A material sweep in a loop: the small cantilever of the tests (tests/configs/cantilever.yaml)
brought to rest under gravity with projective dynamics, for Young's moduli from 1 to 16 kPa and
Poisson's ratios 0 and 0.3, its tip deflection plotted against the modulus. In linear
elasticity a beam's deflection under its own weight goes as 1 / E, and Poisson's ratio changes
little in bending: the product deflection x E stays within a few per cent across the sweep.

    PYTHONPATH=python /usr/bin/python3 python/examples/material_sweep.py [-o out/python]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import csm  # noqa: E402 - the package beside this example, unless one is installed

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("-o", "--output", default="out/python")
args = parser.parse_args()
config = os.path.join(here, "..", "..", "tests", "configs", "cantilever.yaml")

moduli = 1000.0 * 2.0 ** np.arange(5)
curves = {}
for nu in (0.0, 0.3):
    curves[nu] = []
    for E in moduli:
        sets = {"solver": {"integrator": "projective_dynamics", "rotation": "polar_apq", "young": float(E),
                           "poisson": nu, "iterations": 30},
                "time": {"dt": 0.05, "frames": 60, "substeps": 1}, "forces": [{"type": "gravity"}]}
        with csm.Simulation(config, set=sets) as sim:
            tip = sim.rest[:, 0] > sim.rest[:, 0].max() - 1e-9
            y0 = sim.x[tip, 1].mean()
            sim.step(sim.frames)
            curves[nu].append(y0 - sim.x[tip, 1].mean())
        print(f"E = {E:6.0f} Pa, nu = {nu}: tip deflection {curves[nu][-1]:.5f} m, deflection x E = "
              f"{curves[nu][-1] * E:.2f} N/m")
spread = max(np.ptp(np.array(d) * moduli) / np.mean(np.array(d) * moduli) for d in curves.values())
print(f"deflection x E varies by {100 * spread:.1f} % over the sweep")

import matplotlib  # noqa: E402 - only to draw, after the runs
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

os.makedirs(args.output, exist_ok=True)
fig, ax = plt.subplots(figsize=(5, 3.5))
for nu, d in curves.items():
    ax.loglog(moduli, d, "o-", label=f"nu = {nu}")
ax.loglog(moduli, curves[0.0][0] * moduli[0] / moduli, "k:", label="1 / E")
ax.set_xlabel("Young's modulus E (Pa)")
ax.set_ylabel("tip deflection at rest (m)")
ax.set_title("cantilever, projective dynamics")
ax.legend()
fig.tight_layout()
path = os.path.join(args.output, "material_sweep.png")
fig.savefig(path)
print("wrote", path)
sys.exit(0 if spread < 0.1 else 1)
