#!/usr/bin/python3
"""Two ways to set stiffness, side by side: the resting tip deflection of a cantilever against the
cluster count for each series (a sweep folder, optionally narrowed to one swept value), on one
figure, with its change relative to the finest run of the series.

    MPLBACKEND=Agg /usr/bin/python3 experiments/analysis/stiffness.py SERIES... [--last SECONDS] [-o PREFIX]

SERIES is a sweep folder or log, optionally followed by @KEY=VALUE to keep only the runs with that
swept value (beam_convergence@rotation=polar_f). A series is labelled by its config's name and
its stiffness setting (alpha, or modulus in Pa). Writes PREFIX.png and PREFIX.pdf and prints a
Markdown table: one row per cluster count, one column per series.
"""
import argparse
import os
import sys

import h5py
import matplotlib
import numpy as np

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convergence  # noqa: E402
import runs as runs_mod  # noqa: E402


def series(spec, last):
    path, _, where = spec.partition("@")
    runs = runs_mod.expand([path], [where] if where else None)
    args = argparse.Namespace(quantity="tip", particle=None, axis="y", last=last)
    rows = sorted((convergence.measure(r.path, args) for r in runs), key=lambda r: r["clusters"])
    with h5py.File(runs[0].path, "r") as f:
        mu = float(f.attrs.get("solver.modulus", 0.0))
        name = str(f.attrs.get("name", os.path.basename(path)))
        setting = f"modulus {mu:g} Pa" if mu > 0 else f"alpha {float(f.attrs.get('solver.alpha', 0)):g}"
    label = f"{name}, {setting}" + (f", {where}" if where else "")
    return label, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("series", nargs="+")
    ap.add_argument("--last", type=float, default=2.0, help="seconds at the end of each run to average over")
    ap.add_argument("-o", "--output", default="out/stiffness")
    a = ap.parse_args(argv)
    all_series = [series(s, a.last) for s in a.series]

    counts = sorted({r["clusters"] for _, rows in all_series for r in rows})
    print("\n| clusters | " + " | ".join(f"{label}: tip (m), vs finest" for label, _ in all_series) + " |")
    print("|---|" + "---|" * len(all_series))
    for k in counts:
        cells = []
        for _, rows in all_series:
            row = next((r for r in rows if r["clusters"] == k), None)
            if row is None:
                cells.append("")
                continue
            finest = rows[-1]["value"]
            cells.append(f"{row['value']:.4g} ({100 * (row['value'] / finest - 1):+.0f} %)")
        print(f"| {k} | " + " | ".join(cells) + " |")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
    for label, rows in all_series:
        k = np.array([r["clusters"] for r in rows], float)
        v = np.array([r["value"] for r in rows])
        axes[0].semilogx(k, v, "o-", label=label)
        axes[1].semilogx(k, v / v[-1], "o-", label=label)
    axes[0].set_ylabel("resting tip displacement (y) (m)")
    axes[1].set_ylabel("tip displacement / finest run's")
    axes[1].axhspan(0.95, 1.05, color="0.9", zorder=0, label="within 5 % of the finest")
    for ax in axes:
        ax.set_xlabel("clusters")
        ax.set_xticks(counts)
        ax.set_xticklabels([str(c) for c in counts], fontsize=7, rotation=45)
        ax.minorticks_off()
    runs_mod.legend_outside(axes[1])
    fig.suptitle("the cantilever's stiffness from a fixed alpha against a material modulus, as clusters shrink",
                 fontsize=10)
    for path in runs_mod.save(fig, a.output):
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
