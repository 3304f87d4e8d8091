"""Which logs an analysis reads, and what to call each one.

Every analysis script takes a list of RUNS: sweep folders (written by `csm sweep`, read through
their index.csv) and single .h5 logs, in any mix. A sweep's run is labelled by its swept values
("count=40, rotation=polar_f"), a single log by its config name.
"""
import os
import sys

import h5py
import numpy as np

# the reader in python/, where the script runs from the source tree and csm is not installed
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import csm  # noqa: E402


class Run:
    def __init__(self, path, label, values=None, status=""):
        self.path = path
        self.label = label
        self.values = values or {}
        self.status = status

    def __repr__(self):
        return f"Run({self.path!r}, {self.label!r})"


def short_key(key):
    return key.split(".")[-1]


def read_sweep(folder):
    """The runs of a sweep that wrote a log (csm.sweep), labelled by their swept values."""
    if not os.path.exists(os.path.join(folder, "index.csv")):
        sys.exit(f"{folder}: no index.csv (is it a folder written by csm sweep?)")
    runs = []
    for r in csm.sweep(folder):
        if not r.path:
            continue  # pending, or failed before it wrote a log
        label = ", ".join(f"{short_key(k)}={v}" for k, v in r.values.items()) or r.id
        runs.append(Run(r.path, label, r.values, r.status))
    return runs


def expand(paths, where=None):
    """Sweep folders and logs -> list of Run, in the order given (a sweep's in index order).
    where: "key=value" filters on swept values (key as in the index, or its last part)."""
    runs = []
    for p in paths:
        if os.path.isdir(p):
            runs.extend(read_sweep(p))
        elif os.path.exists(p):
            try:
                with csm.open(p) as log:
                    name = str(log.attrs.get("name", os.path.splitext(os.path.basename(p))[0]))
                    status = str(log.attrs.get("status", ""))
            except ValueError as e:
                sys.exit(str(e))
            runs.append(Run(p, name, {}, status))
        else:
            sys.exit(f"{p}: no such log or sweep folder")
    for cond in where or []:
        key, _, value = cond.partition("=")
        runs = [r for r in runs if any((k == key or short_key(k) == key) and (v == value or str(v) == value
                                                                              or v == csm._value(value))
                                       for k, v in r.values.items())]
    if not runs:
        sys.exit("no logs to read (a sweep with no finished run, or a --where that matches none?)")
    # two logs of the same config get their file names as labels
    labels = [r.label for r in runs]
    for r in runs:
        if labels.count(r.label) > 1:
            r.label = os.path.splitext(os.path.basename(r.path))[0]
    return runs


def frame_clusters(f, t):
    """Cluster centres (k, 3) and stable ids (k,) at logged frame t."""
    c = csm.Clusters(f, t)
    return c.com, c.ids


def frame_index(f, spec):
    """A frame number as given on a command line (negative counts from the end)."""
    T = f["frames/time"].shape[0]
    t = int(spec)
    if t < 0:
        t += T
    if not 0 <= t < T:
        sys.exit(f"{f.filename}: frame {spec} is outside 0..{T - 1}")
    return t


def save(fig, prefix, formats=("png", "pdf")):
    folder = os.path.dirname(prefix)
    if folder:
        os.makedirs(folder, exist_ok=True)
    out = []
    for ext in formats:
        path = f"{prefix}.{ext}"
        fig.savefig(path, dpi=150, bbox_inches="tight")
        out.append(path)
    return out


def text(value):
    """An HDF5 attribute as text."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def legend_labels(runs, longest=24):
    """What tells the runs apart, and what they share: (labels, shared text, notes). A swept key
    whose value is the same in every run goes in the shared text (a title), not in each label; a
    value longer than `longest` characters (a matrix) is named by its key and number, and notes
    says what each number stands for."""
    keys = []
    for r in runs:
        keys += [k for k in r.values if k not in keys]
    varying = [k for k in keys if len({str(r.values.get(k)) for r in runs}) > 1]
    shared = ", ".join(f"{short_key(k)}={runs[0].values[k]}" for k in keys if k not in varying and k in runs[0].values)
    numbers, notes = {}, []
    labels = []
    for r in runs:
        if not r.values:
            labels.append(r.label)
            continue
        parts = []
        for k in varying:
            v = str(r.values.get(k, ""))
            if len(v) > longest:
                if (k, v) not in numbers:
                    numbers[(k, v)] = sum(1 for kk, _ in numbers if kk == k) + 1
                    notes.append(f"{short_key(k)} {numbers[(k, v)]}: {v}")
                v = str(numbers[(k, v)])
                parts.append(f"{short_key(k)} {v}")
            else:
                parts.append(f"{short_key(k)}={v}")
        labels.append(", ".join(parts) or r.label)
    return labels, shared, notes


def settings(runs):
    """The solver settings every run shares, for a title: the integrator, the rotation, the
    material (its modulus in Pa, or the papers' gain alpha), the substeps. One that differs between
    the runs is the labels' to tell, not the title's, and one swept is named with its key."""
    swept = {k.split(".")[-1] for r in runs for k in r.values}
    attrs = []
    for r in runs:
        with h5py.File(r.path, "r") as f:
            attrs.append({k: text(f.attrs[k]) for k in ("integrator", "rotation", "solver.modulus", "solver.alpha",
                                                         "substeps") if k in f.attrs})

    def same(key):
        values = {a.get(key) for a in attrs}
        return values.pop() if len(values) == 1 and key.split(".")[-1] not in swept else None

    parts = [v for v in (same("integrator"), same("rotation")) if v]
    modulus, alpha = same("solver.modulus"), same("solver.alpha")
    if modulus and float(modulus) > 0:
        parts.append(f"modulus {float(modulus):g} Pa")
    elif alpha and modulus is not None:
        parts.append(f"alpha {float(alpha):g}")
    if same("substeps"):
        parts.append(f"{same('substeps')} substeps")
    return ", ".join(parts)


def legend_outside(ax, ncol=1):
    """The legend beside the axes, never over the data (saved with bbox_inches="tight")."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, ncol=ncol, frameon=False)


def finite(x):
    x = np.asarray(x, dtype=float)
    return x[np.isfinite(x)]
