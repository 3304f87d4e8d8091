#!/usr/bin/python3
"""A force field written in numpy pushing the bunny, through csm.Simulation.

The field is a whirl about the vertical axis through the bunny's centre of mass plus a steady
push along x, each particle's force proportional to its mass and set anew every step from where
the particles are. Gravity and the ground are off, so the field is the only force from outside:
the bunny's momentum must change by the field's impulse, sum over steps of h sum_i f_i, to
round-off (with the goals that keep momentum, solver.conserve: angular), and the whirl spins it up.

    PYTHONPATH=python /usr/bin/python3 python/examples/force_field.py [--frames 60]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import csm  # noqa: E402 - the package beside this example, unless one is installed

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--frames", type=int, default=60)
parser.add_argument("--config", default=os.path.join(here, "..", "..", "experiments", "configs", "bunny.yaml"))
args = parser.parse_args()

whirl, push = 4.0, 0.5  # 1/s^2 times the distance from the axis; m/s^2 along x
# the goals that keep momentum (the config keeps the paper's, whose strain clamp pushes the body)
with csm.Simulation(args.config, set={"forces": [], "colliders": [], "solver.conserve": "angular"}) as sim:
    m = sim.mass[:, None]
    h = sim.dt / sim.substeps
    p0 = (m * sim.v).sum(axis=0)
    impulse = np.zeros(3)
    for _ in range(args.frames * sim.substeps):
        c = (m * sim.x).sum(axis=0) / m.sum()
        r = sim.x - c
        f = m * (whirl * np.stack([-r[:, 2], np.zeros(len(r)), r[:, 0]], axis=1) + [push, 0, 0])
        sim.external_force[:] = f  # applied from the next step on
        impulse += h * f.sum(axis=0)
        sim.steps(1)
    p1 = (m * sim.v).sum(axis=0)
    d = sim.diagnostics
    err = np.abs(p1 - p0 - impulse).max()
    print(f"{sim.n} particles, {sim.frame} frames: momentum change {p1 - p0} kg m/s, the field's impulse {impulse}")
    print(f"largest difference {err:.2e} kg m/s; angular momentum {d['angular_momentum']} kg m^2/s; "
          f"work done by the field {d['work_external']:.4f} J, kinetic energy {d['kinetic_energy']:.4f} J")
    sys.exit(0 if err <= 1e-9 * max(1.0, np.abs(impulse).max()) else 1)
