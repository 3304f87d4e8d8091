#!/usr/bin/python3
"""Stiffness against iterations: the resting tip deflection of a cantilever for each integrator
of a sweep over solver.integrator and solver.iterations (experiments/configs/cantilever_iterations.yaml).

    MPLBACKEND=Agg /usr/bin/python3 experiments/analysis/iterations.py SWEEP [--last SECONDS] [-o PREFIX]

Prints a Markdown table (one row per iteration count, one column per integrator, the deflection
in m and, for the largest count, its change from the smallest) and writes PREFIX.png and .pdf.
"""
import argparse
import os
import sys

import h5py
import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convergence  # noqa: E402
import runs as runs_mod  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep")
    ap.add_argument("--last", type=float, default=0.5, help="seconds at the end of each run to average over")
    ap.add_argument("-o", "--output", default="out/iterations")
    a = ap.parse_args(argv)
    args = argparse.Namespace(quantity="tip", particle=None, axis="y", last=a.last)
    table = {}
    runs = runs_mod.expand([a.sweep])
    for r in runs:
        integrator, iterations = r.values.get("solver.integrator"), r.values.get("solver.iterations")
        if integrator is None or iterations is None:
            sys.exit(f"{a.sweep}: expected a sweep over solver.integrator and solver.iterations")
        table.setdefault(integrator, {})[int(iterations)] = convergence.measure(r.path, args)["value"]
    names = list(table)
    counts = sorted({k for series in table.values() for k in series})
    print("| iterations | " + " | ".join(f"{n} (m)" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for k in counts:
        print(f"| {k} | " + " | ".join(f"{table[n].get(k, float('nan')):.5f}" for n in names) + " |")
    lo, hi = counts[0], counts[-1]
    print(f"| change {lo} → {hi} | " + " | ".join(
        f"{100 * (table[n][hi] - table[n][lo]) / abs(table[n][lo]):+.1f} %" if table[n].get(lo) else "" for n in names) + " |")
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for n, marker in zip(names, "osD^v<>"):  # lines that coincide stay told apart by their markers
        ks = sorted(table[n])
        ax.semilogx(ks, [-table[n][k] for k in ks], marker + "-", mfc="none", label=n)
    ax.set_xlabel("iterations per step")
    ax.set_ylabel("resting tip deflection (m)")
    ax.set_xticks(counts)
    ax.set_xticklabels([str(k) for k in counts])
    ax.minorticks_off()
    runs_mod.legend_outside(ax)
    moduli = []  # pbd takes none: the material is the others' modulus
    for r in runs:
        with h5py.File(r.path, "r") as f:
            scene = runs_mod.text(f.attrs.get("name", ""))
            moduli.append(float(f.attrs.get("solver.modulus", 0.0)))
    modulus = max(moduli)
    ax.set_title(f"{scene}: one material ({modulus:g} Pa), each integrator's stiffness against its iterations",
                 fontsize=9)
    for path in runs_mod.save(fig, a.output):
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
