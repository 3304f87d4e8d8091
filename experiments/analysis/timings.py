#!/usr/bin/python3
"""Falkenstein 2017 Table 1 from csm logs: ms per frame by stage, one Markdown row per log.

    /usr/bin/python3 experiments/analysis/timings.py RUNS... [--label NAME=TEXT ...]

RUNS are .h5 logs and sweep folders (a sweep's runs are named by their swept values).

Columns (from /timings/*, the mean over the logged frames after frame 0; with output.every > 1
the logged frames are a sample of every every-th frame)
  dynamics      forces, integrator and colliders
  plasticity    the plastic flow
  reclustering  the reclusterer, its embedding included (as in the paper, where the embedding is
                about a third of it)
  embedding     the embedding optimisation alone
  total         the whole frame, diagnostics included (logging excluded)
and, from /recluster/events, the clusters removed and added over the run and the median Falkenstein Eq 21
energy of the additions; from experiments/analysis/plasticity.py, whether the run stayed stable.
"""
import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plasticity  # noqa: E402
import runs as runs_mod  # noqa: E402

STAGES = ("dynamics", "plasticity", "reclustering", "embedding", "total")


def timings(path):
    with h5py.File(path, "r") as f:
        row = {"name": str(f.attrs.get("name", os.path.basename(path))), "path": path,
               "reclusterer": str(f.attrs.get("reclusterer", "")), "status": str(f.attrs.get("status", ""))}
        for stage in STAGES:
            t = f["timings/" + stage][1:]
            row[stage] = 1e3 * float(t.mean()) if len(t) else float("nan")
        ev = f["recluster/events"][:] if "recluster/events" in f else np.zeros(0)
        kinds = ev["kind"] if len(ev) else np.zeros(0, dtype="S8")
        row["removed"] = int((kinds == b"removed").sum())
        row["added"] = int((kinds == b"added").sum())
        energy = ev["embedding_energy"][kinds == b"added"] if len(ev) else np.zeros(0)
        energy = energy[np.isfinite(energy)]
        row["energy"] = float(np.median(energy)) if len(energy) else float("nan")
        row["clusters"] = (int(f["clusters/count"][0]), int(f["clusters/count"][-1]))
    row["stable"] = plasticity.analyse(path)["stable"]
    return row


def table(rows, labels):
    out = ["| run | reclusterer | dynamics | plasticity | reclustering | embedding | total | removed / added "
           "| clusters first / last | Falkenstein Eq 21 median | stable |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = labels.get(r["name"], r["name"])
        out.append(f"| {name} | {r['reclusterer']} | {r['dynamics']:.2f} | {r['plasticity']:.2f} | "
                   f"{r['reclustering']:.2f} | {r['embedding']:.2f} | {r['total']:.2f} | "
                   f"{r['removed']} / {r['added']} | {r['clusters'][0]} / {r['clusters'][1]} | "
                   f"{r['energy']:.3g} | {'yes' if r['stable'] else 'no'} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", help="logs and sweep folders")
    ap.add_argument("--label", action="append", default=[], help="NAME=TEXT: show a run by another name")
    a = ap.parse_args()
    labels = dict(item.split("=", 1) for item in a.label)
    rows = []
    for r in runs_mod.expand(a.logs):
        row = timings(r.path)
        if r.values:
            row["name"] = r.label
        rows.append(row)
    print(table(rows, labels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
