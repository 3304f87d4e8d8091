#!/usr/bin/python3
"""Time per frame against the number of particles (Muller 2005 Fig 8), log-log, one line per
value of a swept key, with the slope of each line (1 = linear in the particle count).

    MPLBACKEND=Agg /usr/bin/python3 experiments/analysis/scaling.py RUNS... [--group KEY] \\
        [--stage total] [-o PREFIX]

RUNS are sweep folders and logs; the time is the median of /timings/STAGE over the logged frames
after frame 0, in ms. Writes PREFIX.png and PREFIX.pdf (default out/scaling) and a Markdown table.
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
import runs as runs_mod  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--group", help="swept key whose values get one line each (e.g. mode)")
    ap.add_argument("--stage", default="total", help="dynamics, plasticity, reclustering, embedding or total")
    ap.add_argument("--where", action="append", help="KEY=VALUE: only the sweep's runs with this swept value")
    ap.add_argument("-o", "--output", default="out/scaling")
    a = ap.parse_args(argv)
    groups = {}
    for r in runs_mod.expand(a.runs, a.where):
        with h5py.File(r.path, "r") as f:
            n = int(f.attrs["particles"])
            memberships = int(f["clusters/frame_membership"][1] - f["clusters/frame_membership"][0])
            t = f["timings/" + a.stage][1:]  # after frame 0 (set-up)
            threads = int(f.attrs.get("threads", 0))
        g = ""
        if a.group:
            g = next((v for k, v in r.values.items() if k == a.group or runs_mod.short_key(k) == a.group), "")
        groups.setdefault(g, []).append((n, 1e3 * float(np.median(t)), memberships, threads))
    fig, ax = plt.subplots(figsize=(5.5, 4))
    print(f"| {a.group or 'run'} | particles | memberships | threads | {a.stage} ms/frame | ns per particle |")
    print("|---|---|---|---|---|---|")
    for g, rows in groups.items():
        rows.sort()
        n = np.array([r[0] for r in rows], float)
        ms = np.array([r[1] for r in rows])
        for (ni, mi, mem, th) in rows:
            print(f"| {g} | {ni} | {mem} | {th} | {mi:.3f} | {1e6 * mi / ni:.1f} |")
        slope = np.polyfit(np.log(n), np.log(ms), 1)[0] if len(n) > 1 else float("nan")
        print(f"| {g} | slope {slope:.2f} | | | | |")
        ax.loglog(n, ms, "o-", label=f"{g or 'runs'} (slope {slope:.2f})")
    ax.set_xlabel("particles")
    ax.set_ylabel(f"{a.stage} (ms/frame)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    for path in runs_mod.save(fig, a.output):
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
