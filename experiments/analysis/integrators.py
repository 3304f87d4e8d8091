#!/usr/bin/python3
"""The integrators side by side: one Markdown row per run of sweeps over solver.integrator.

    /usr/bin/python3 experiments/analysis/integrators.py SWEEP...

Columns: the scene (config name), the integrator, the other values the sweep varied, the energy
it keeps (kinetic + potential + elastic at the end over at frame 0; for a run with work done by
forces without a potential, over frame 0's plus that work; "-" where nothing was given: pbd's
stretched cube stores no energy in its springs), |L| at the end over at frame 0 ("-"
where the body starts without angular momentum: nothing to keep), the lowest centre-of-mass
height, and the median ms per frame (/timings/total).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as runs_mod  # noqa: E402
import csm  # noqa: E402  (runs puts the reader on the path)


def row(run):
    with csm.open(run.path) as log:
        d = {k: log.diagnostic(k) for k in ("kinetic_energy", "potential_energy", "elastic_energy", "angular_momentum",
                                            "center_of_mass", "work_external")}
        e = d["kinetic_energy"] + d["potential_energy"] + np.nan_to_num(d["elastic_energy"])
        given = e[0] + max(0.0, float(d["work_external"].max()))
        L = np.linalg.norm(d["angular_momentum"], axis=1)
        return {"scene": log.attrs.get("name", ""), "integrator": log.attrs.get("integrator", ""),
                "energy": e[-1] / given if given > 1e-12 else float("nan"),
                "L": L[-1] / L[0] if L[0] > 1e-12 else float("nan"),
                "low": float(d["center_of_mass"][:, 1].min()),
                "ms": 1e3 * float(np.median(log.timings["total"][1:])), "status": log.attrs.get("status", "")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweeps", nargs="+")
    a = ap.parse_args(argv)
    print("| scene | integrator | other settings | energy kept | \\|L\\| kept | lowest centre (m) | ms/frame (median) | status |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs_mod.expand(a.sweeps):
        x = row(r)
        other = ", ".join(f"{runs_mod.short_key(k)}={v}" for k, v in r.values.items() if k != "solver.integrator") or "-"
        L = "-" if np.isnan(x["L"]) else f"{x['L']:.3f}"
        energy = "-" if np.isnan(x["energy"]) else f"{x['energy']:.3f}"
        print(f"| {x['scene']} | {x['integrator']} | {other} | {energy} | {L} | {x['low']:.3f} | {x['ms']:.2f} | "
              f"{x['status']} |")


if __name__ == "__main__":
    main()
