#!/usr/bin/python3
"""What each run keeps: linear momentum, angular momentum and energy, one Markdown row per run.

    /usr/bin/python3 experiments/analysis/momenta.py RUNS... [--where KEY=VALUE]

RUNS are sweep folders (their index.csv) and .h5 logs. Columns: the largest change of linear
momentum |p - p0| (kg m/s) and of angular momentum about the origin |L - L0| (kg m^2/s) over the
run, L_z at the start and the end, the kinetic energy at the start, its maximum and its last value
(J), and how far the centre of mass moved sideways (|x|, |z| in m: a body with no horizontal force
should not drift). Without external forces and colliders the momenta must stay at their first
values; where gravity or the ground act, only the drift tells.
"""
import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as runs_mod  # noqa: E402


def row(run):
    with h5py.File(run.path, "r") as f:
        d = f["diagnostics"]
        p, L, ke = d["linear_momentum"][:], d["angular_momentum"][:], d["kinetic_energy"][:]
        com = d["center_of_mass"][:]
        dp = np.linalg.norm(p - p[0], axis=1).max()
        dL = np.linalg.norm(L - L[0], axis=1).max()
        side = np.hypot(com[-1, 0] - com[0, 0], com[-1, 2] - com[0, 2])
        conserve = str(f.attrs.get("solver.conserve", "none"))
        return (f"| {run.label} | {conserve} | {dp:.3g} | {dL:.3g} | {L[0, 2]:.4g} | {L[-1, 2]:.4g} | "
                f"{ke[0]:.4g} | {ke.max():.4g} | {ke[-1]:.4g} | {side:.3g} | {f.attrs['status']} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--where", action="append", help="KEY=VALUE: only the sweep's runs with this swept value")
    a = ap.parse_args(argv)
    print("\n| run | conserve | max abs(p - p0) (kg m/s) | max abs(L - L0) (kg m^2/s) | L_z first | L_z last | "
          "KE first (J) | KE max (J) | KE last (J) | sideways drift of the centre of mass (m) | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs_mod.expand(a.runs, a.where):
        print(row(run))


if __name__ == "__main__":
    main()
