#!/usr/bin/python3
"""One line of numbers per csm log: energies, momenta, strain and the first cluster's rotation.

    /usr/bin/python3 experiments/analysis/summary.py out/seeds/*.h5

Columns: KE at frame 0, its maximum, its last value and its mean over the second half (J); angular momentum L_z at frame 0 and
at the end; the largest change of linear momentum from frame 0 (|dp|, kg m/s); the largest and the
last strain beta (Bargteil-Jones Eq 4); the rotation angle of cluster 0 about z at frame 0 (deg).
"""
import argparse

import h5py
import numpy as np


def row(path):
    with h5py.File(path, "r") as f:
        d = f["diagnostics"]
        ke = d["kinetic_energy"][:]
        L = d["angular_momentum"][:]
        p = d["linear_momentum"][:]
        strain = d["max_strain"][:]
        R = f["clusters/R"][0]
        angle = np.degrees(np.arctan2(R[1, 0], R[0, 0]))
        dp = np.abs(p - p[0]).max()
        return (f"{path.split('/')[-1]:34s} {f.attrs['integrator']:15s} {f.attrs['rotation']:10s} "
                f"{ke[0]:9.4g} {ke.max():9.4g} {ke[-1]:9.3g} {ke[len(ke) // 2:].mean():9.3g} {L[0, 2]:9.4g} {L[-1, 2]:9.4g} "
                f"{dp:9.3g} {strain.max():7.3g} {strain[-1]:7.3g} {angle:8.3f}  {f.attrs['status']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", help="csm logs (.h5)")
    a = ap.parse_args(argv)
    print(f"{'log':34s} {'integrator':15s} {'rotation':10s} {'KE0':>9s} {'KEmax':>9s} {'KEend':>9s} {'KEmean2':>9s} "
          f"{'Lz0':>9s} {'Lzend':>9s} {'|dp|':>9s} {'beta_max':>7s} {'beta_end':>7s} {'R0_deg':>8s}  status")
    for path in a.logs:
        print(row(path))


if __name__ == "__main__":
    main()
