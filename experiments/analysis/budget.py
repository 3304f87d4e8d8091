#!/usr/bin/python3
"""The energy budget of csm logs by stage, one Markdown table row per log.

    /usr/bin/python3 experiments/analysis/budget.py out/recluster/*.h5 [--at SECONDS]

The energy change minus the work given, E - E0 - W (E = kinetic + potential + elastic +
elastic_lag, W = /diagnostics/work_external), is split into what each stage of the step moved
(J, at the last frame, or at the frame nearest --at):

  dynamics    energy_error - recluster_energy: the springs, the prediction and the volume terms
              (what the integrator creates, > 0, or loses without account, < 0)
  plastic     -dissipated_plastic: what the flow released
  recluster   recluster_energy: what reclustering's weight changes stored
  viscosity   -dissipated_viscosity
  damping     -dissipated_damping
  implicit    -dissipated_numerical: what implicit Euler's steps took (projective_dynamics)
  contact     -dissipated_contact: the change over the frames in which a collider or the contacts
              acted (what contact gave, > 0, as a press does, or took, < 0)

The columns add up to E - E0 - W. `worst` is the largest energy_error up to that frame as a
fraction of the energy given, the most work plus E0 when E0 > 0 (a drop's height above the
ground): energy created beyond the logged dissipation. A log written before these datasets
existed (external_work, no energy_error) gives only E - E0 - W and the largest E - E0 - W as the
same fraction.
"""
import argparse

import h5py
import numpy as np


def series(d, name):
    return d[name][:] if name in d else None


def row(path, at):
    with h5py.File(path, "r") as f:
        d = f["diagnostics"]
        t = f["frames/time"][:]
        i = len(t) - 1 if at is None else int(np.argmin(np.abs(t - at)))
        W = series(d, "work_external")
        if W is None:
            W = series(d, "external_work")
        lag = series(d, "elastic_lag")
        E = d["kinetic_energy"][:] + d["potential_energy"][:] + d["elastic_energy"][:] + (0 if lag is None else lag)
        change = E - E[0] - W
        given = max(float(np.max(W)) + max(float(E[0]), 0.0), 1e-30)
        cells = [path.split("/")[-1], str(f.attrs.get("status", "?")).split(":")[0], f"{t[i]:.2f}", f"{W[i]:.4g}", f"{change[i]:+.4g}"]
        err = series(d, "energy_error")
        if err is None:
            cells += ["—"] * 7 + [f"{100 * float(np.max(change[: i + 1])) / given:+.2f} %"]
            return cells
        recl = series(d, "recluster_energy")
        recl = np.zeros_like(err) if recl is None else recl
        contact = series(d, "dissipated_contact")
        numerical = series(d, "dissipated_numerical")
        stages = [err[i] - recl[i], -d["dissipated_plastic"][i], recl[i], -d["dissipated_viscosity"][i],
                  -d["dissipated_damping"][i], 0.0 if numerical is None else -numerical[i],
                  0.0 if contact is None else -contact[i]]
        cells += [f"{s:+.4g}" for s in stages] + [f"{100 * float(err[: i + 1].max()) / given:+.2f} %"]
        return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--at", type=float, help="the frame nearest this time, not the last")
    a = ap.parse_args()
    head = ["log", "status", "t (s)", "W (J)", "E - E0 - W", "dynamics", "plastic", "recluster", "viscosity", "damping",
            "implicit", "contact", "worst"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for path in a.logs:
        print("| " + " | ".join(row(path, a.at)) + " |")


if __name__ == "__main__":
    main()
