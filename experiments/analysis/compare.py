#!/usr/bin/python3
"""Overlay diagnostics of several runs against time: one panel per quantity, one line per run.

    MPLBACKEND=Agg /usr/bin/python3 experiments/analysis/compare.py RUNS... \\
        [-q QUANTITY]... [-o PREFIX] [--title TEXT] [--log] [--until SECONDS]

RUNS are sweep folders (their index.csv) and .h5 logs. Writes PREFIX.png and PREFIX.pdf
(default out/compare) and prints, per run and quantity, the first, last, min and max values.

QUANTITY (default: kinetic_energy, angular_momentum):
  NAME              any /diagnostics dataset: kinetic_energy, potential_energy, elastic_energy,
                    max_strain, volume_ratio, max_cond_Fp, ...; a vector one (angular_momentum,
                    linear_momentum, center_of_mass) is drawn as its length
  NAME.x|y|z        one component of a vector diagnostic (angular_momentum.z)
  energy            kinetic + gravitational potential energy
  total_energy      kinetic + potential + elastic energy (the springs'), and budget: that minus
                    the work of the forces without a potential (work_external), which never rises
                    above its frame-0 value unless the simulation creates energy
  displacement:ID   distance of particle ID from where it was at frame 0
  position:ID.x|y|z one coordinate of particle ID
  clusters          clusters per frame
  timing:STAGE      ms per frame of a stage (dynamics, plasticity, reclustering, embedding, total)
"""
import argparse
import os
import sys
import textwrap

import h5py
import matplotlib
import numpy as np

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as runs_mod  # noqa: E402

AXES = {"x": 0, "y": 1, "z": 2}


def quantity(f, spec):
    """(values over the logged frames, axis label) of one quantity in an open log."""
    if spec == "energy":
        return f["diagnostics/kinetic_energy"][:] + f["diagnostics/potential_energy"][:], "kinetic + potential energy (J)"
    if spec in ("total_energy", "budget"):
        d = f["diagnostics"]
        e = d["kinetic_energy"][:] + d["potential_energy"][:] + d["elastic_energy"][:]
        if spec == "total_energy":
            return e, "kinetic + potential + elastic energy (J)"
        return e - d["work_external"][:], "energy − work of the forces without potential (J)"
    if spec == "clusters":
        return f["clusters/count"][:].astype(float), "clusters"
    if spec.startswith("timing:"):
        stage = spec.split(":", 1)[1]
        if "timings/" + stage not in f:
            sys.exit(f"{f.filename}: no /timings/{stage}")
        return 1e3 * f["timings/" + stage][:], f"{stage} (ms/frame)"
    if spec.startswith("displacement:") or spec.startswith("position:"):
        kind, rest = spec.split(":", 1)
        pid, _, comp = rest.partition(".")
        n = f["frames/positions"].shape[1]
        try:
            i = int(pid)
        except ValueError:
            sys.exit(f"{spec}: expected a particle number")
        if not 0 <= i < n:
            sys.exit(f"{spec}: particle {i} is outside 0..{n - 1}")
        x = f["frames/positions"][:, i, :]
        if kind == "displacement":
            return np.linalg.norm(x - x[0], axis=1), f"particle {i} displacement (m)"
        if comp not in AXES:
            sys.exit(f"{spec}: expected position:ID.x, .y or .z")
        return x[:, AXES[comp]], f"particle {i} {comp} (m)"
    name, _, comp = spec.partition(".")
    path = "diagnostics/" + name
    if path not in f:
        have = ", ".join(sorted(f["diagnostics"].keys()))
        sys.exit(f"{f.filename}: no /{path} (diagnostics here: {have})")
    d = f[path][:]
    units = f[path].attrs.get("units", b"")
    units = units.decode() if isinstance(units, bytes) else str(units)
    unit = f" ({units})" if units and units != "1" else ""
    if d.ndim == 2:
        if comp:
            if comp not in AXES:
                sys.exit(f"{spec}: expected {name}.x, .y or .z")
            return d[:, AXES[comp]], spec + unit
        return np.linalg.norm(d, axis=1), f"|{name}|{unit}"
    if comp:
        sys.exit(f"{spec}: {name} is not a vector")
    return d.astype(float), name + unit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="sweep folders and .h5 logs")
    ap.add_argument("-q", "--quantity", action="append", help="what to plot (repeat for more panels)")
    ap.add_argument("-o", "--output", default="out/compare", help="output prefix (writes .png and .pdf)")
    ap.add_argument("--title", default="")
    ap.add_argument("--log", action="store_true", help="logarithmic y axes")
    ap.add_argument("--until", type=float, help="plot the first SECONDS only (a motion too fast to read over the "
                    "whole run; the table still covers it all)")
    ap.add_argument("--where", action="append", help="KEY=VALUE: only the sweep's runs with this swept value")
    a = ap.parse_args(argv)
    quantities = a.quantity or ["kinetic_energy", "angular_momentum"]
    runs = runs_mod.expand(a.runs, a.where)

    labels, shared, notes = runs_mod.legend_labels(runs)
    fig, axes = plt.subplots(len(quantities), 1, figsize=(7, 2.6 * len(quantities)), sharex=True, squeeze=False)
    print("| run | quantity | first | last | min | max |\n|---|---|---|---|---|---|")
    scene = ""
    for r, label in zip(runs, labels):
        with h5py.File(r.path, "r") as f:
            scene = scene or runs_mod.text(f.attrs.get("name", ""))
            t = f["frames/time"][:]
            for ax, q in zip(axes[:, 0], quantities):
                y, ylabel = quantity(f, q)
                ax.plot(t[: len(y)], y, label=label, lw=1.2)
                ax.set_ylabel(textwrap.fill(ylabel, 28), fontsize=9)
                if a.log:
                    ax.set_yscale("symlog", linthresh=1e-6)
                else:
                    ax.ticklabel_format(axis="y", useOffset=False)  # no "1e-13+8e-1" over the axis
                fy = runs_mod.finite(y)
                if len(fy):
                    print(f"| {r.label} | {q} | {y[0]:.6g} | {y[-1]:.6g} | {fy.min():.6g} | {fy.max():.6g} |")
    for note in notes:
        print(f"\n{note}")
    axes[-1, 0].set_xlabel("time (s)")
    if a.until:
        axes[-1, 0].set_xlim(0.0, a.until)
    runs_mod.legend_outside(axes[0, 0], ncol=2 if len(runs) > 12 else 1)
    title = a.title or ": ".join(x for x in (scene, ", ".join(y for y in (shared, runs_mod.settings(runs)) if y)) if x)
    if title:
        axes[0, 0].set_title(textwrap.fill(title, 70), fontsize=10)
    for path in runs_mod.save(fig, a.output):
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
