#!/usr/bin/python3
"""Convergence with cluster count (Falkenstein 2017 Fig 3): a quantity of each run against its
number of clusters, and its distance from the run with the most clusters, log-log, with the
observed rate (the slope of a least-squares line through log error against log clusters).

    MPLBACKEND=Agg /usr/bin/python3 experiments/analysis/convergence.py RUNS... \\
        [--quantity tip|positions|final:NAME] [--particle ID] [--axis x|y|z] [--last SECONDS]
        [--by clusters|particles|substeps] [-o PREFIX]

RUNS are sweep folders and logs of one scene that differ in their clustering. The cluster count of
a run is read from its log (clusters at frame 0), so a sweep over clustering.count and one over
clustering.radius both work. --by particles or substeps orders the runs by their particle count
or substeps instead (refining the particles with the clusters, or the step).

--quantity
  tip          (default) the steady-state displacement of a tracked particle along --axis (default
               y), averaged over the last --last seconds (default: the last fifth of the run), and
               whether it settled there: the means of the window's two halves within 1 % of each
               other (else the table says how far it still drifts, and it counts as unsettled). The
               tracked particle is --particle, else the one farthest along +x in the rest shape (a
               cantilever's free end). Apparent stiffness is the inverse of this displacement.
  positions    the rms distance of every particle from where it is in the finest run, averaged
               over the same window (the runs share their particles: only clustering differs)
  final:NAME   a /diagnostics dataset averaged over the window (kinetic_energy, max_strain, ...)
Writes PREFIX.png and PREFIX.pdf (default out/convergence) and prints a Markdown table and the rate.
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
import matplotlib.ticker  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as runs_mod  # noqa: E402

AXES = {"x": 0, "y": 1, "z": 2}


def window(f, last):
    t = f["frames/time"][:]
    if last is None:
        start = t[0] + 0.8 * (t[-1] - t[0])
    else:
        start = t[-1] - last
    return np.nonzero(t >= start - 1e-12)[0]


def tracked(f, particle):
    rest = f["rest/positions"][:]
    if particle is None:
        return int(np.argmax(rest[:, 0]))
    if not 0 <= particle < len(rest):
        sys.exit(f"{f.filename}: particle {particle} is outside 0..{len(rest) - 1}")
    return particle


def measure(path, a):
    with h5py.File(path, "r") as f:
        frames = window(f, a.last)
        row = {"clusters": int(f["clusters/count"][0]), "particles": int(f["frames/positions"].shape[1]),
               "substeps": int(f.attrs["substeps"]), "status": str(f.attrs.get("status", "")),
               # the most clusters whose gain h^2 k_c a modulus asked above 1 and the step held to 1
               "clamped": int(np.max(f["diagnostics/alpha_clamped"][:])) if "diagnostics/alpha_clamped" in f else 0,
               "warning": runs_mod.text(f.attrs.get("warning", ""))}
        if a.quantity == "tip":
            i = tracked(f, a.particle)
            x = f["frames/positions"][:, i, AXES[a.axis]]
            row["value"] = float(np.mean(x[frames] - x[0]))
            row["particle"] = i
            row["drift"] = drift(x[frames] - x[0])
        elif a.quantity == "positions":
            row["positions"] = f["frames/positions"][frames[0]: frames[-1] + 1]
            row["value"] = float("nan")
        elif a.quantity.startswith("final:"):
            name = a.quantity.split(":", 1)[1]
            if "diagnostics/" + name not in f:
                sys.exit(f"{path}: no /diagnostics/{name}")
            d = f["diagnostics/" + name][:]
            if d.ndim == 2:
                d = np.linalg.norm(d, axis=1)
            row["value"] = float(np.mean(d[frames]))
            row["drift"] = drift(d[frames])
        else:
            sys.exit(f"--quantity {a.quantity}: expected tip, positions or final:NAME")
    return row


def drift(v):
    """How far a series still moves over the averaging window: the change between the means of
    its two halves, relative to its mean (nan for fewer than 4 frames)."""
    v = np.asarray(v, float)
    if len(v) < 4 or not np.all(np.isfinite(v)):
        return float("nan")
    h = len(v) // 2
    mean = abs(np.mean(v))
    return abs(np.mean(v[h:]) - np.mean(v[:h])) / mean if mean > 0 else 0.0


SETTLED = 0.01  # the window's halves within 1 % of each other


def rate(k, err):
    """Slope of log err against log k over the runs with a positive error."""
    k, err = np.asarray(k, float), np.asarray(err, float)
    ok = (err > 0) & np.isfinite(err)
    if ok.sum() < 2:
        return float("nan"), None
    p = np.polyfit(np.log(k[ok]), np.log(err[ok]), 1)
    return float(p[0]), p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--quantity", default="tip")
    ap.add_argument("--particle", type=int)
    ap.add_argument("--axis", default="y", choices=sorted(AXES))
    ap.add_argument("--last", type=float, help="seconds at the end of each run to average over")
    ap.add_argument("-o", "--output", default="out/convergence")
    ap.add_argument("--title", default="")
    ap.add_argument("--where", action="append", help="KEY=VALUE: only the sweep's runs with this swept value")
    ap.add_argument("--by", default="clusters", choices=["clusters", "particles", "substeps"],
                    help="what is refined from run to run (the x axis)")
    a = ap.parse_args(argv)
    by = a.by
    runs = runs_mod.expand(a.runs, a.where)
    rows = []
    for r in runs:
        row = measure(r.path, a)
        row["label"] = r.label
        if row["status"] != "ok":
            print(f"note: {r.path} has status '{row['status']}'", file=sys.stderr)
        rows.append(row)
    rows.sort(key=lambda r: (r[by], r["clusters"]))
    if len({r[by] for r in rows}) != len(rows):
        sys.exit(f"convergence needs runs that differ in {by}, one run each (use --where to pick one series)")
    if len(rows) < 2:
        sys.exit(f"convergence needs runs with at least two different {by}")
    finest = rows[-1]
    for r in rows:
        if a.quantity == "positions":
            if r["positions"].shape != finest["positions"].shape:
                sys.exit("--quantity positions needs runs with the same particles and frames")
            d = np.linalg.norm(r["positions"] - finest["positions"], axis=2)
            r["error"] = float(np.mean(np.sqrt(np.mean(d * d, axis=1))))
        else:
            r["error"] = abs(r["value"] - finest["value"])
    coarse = rows[:-1]
    slope, fit = rate([r[by] for r in coarse], [r["error"] for r in coarse])

    what = {"tip": f"tip displacement ({a.axis})", "positions": "rms position"}.get(a.quantity, a.quantity)
    unit = " (m)" if a.quantity in ("tip", "positions") else ""
    extra = "" if by == "clusters" else f" {by} |"
    print(f"| clusters |{extra} run | {what}{unit} | apparent stiffness (1/|value|) | change from the previous run "
          f"| relative change | distance from the finest run | settled |")
    print("|---|---|---|---|---|---|---|---|" + ("" if by == "clusters" else "---|"))
    prev = None
    for r in rows:
        stiff = 1 / abs(r["value"]) if r["value"] and np.isfinite(r["value"]) else float("nan")
        r["change"] = r["value"] - prev if prev is not None and np.isfinite(r["value"]) else float("nan")
        change = f"{r['change']:.3g}" if np.isfinite(r["change"]) else ""
        relative = f"{100 * abs(r['change'] / r['value']):.1f} %" if np.isfinite(r["change"]) and r["value"] else ""
        prev = r["value"]
        col = "" if by == "clusters" else f" {r[by]} |"
        dr = r.get("drift", float("nan"))
        settled = "-" if not np.isfinite(dr) else "yes" if dr <= SETTLED else f"no: drifts {100 * dr:.1f} %"
        print(f"| {r['clusters']} |{col} {r['label']} | {r['value']:.6g} | {stiff:.4g} | {change} | {relative} "
              f"| {r['error']:.3g} | {settled} |")
    errs = [r["error"] for r in coarse]
    shrinking = all(b < c for b, c in zip(errs[1:], errs[:-1]))
    unsettled = [r["label"] for r in rows if r.get("drift", 0) > SETTLED]
    if unsettled:
        print(f"\nnot settled over the averaging window (--last): {', '.join(unsettled)}; their values are not "
              f"resting values")
    for r in rows:  # what the run itself warned of (csm info's "warning"): its value may not be the physics'
        if r["warning"]:
            print(f"\nwarned: {r['label']}: {r['warning']}")
    clamped = [f"{r['label']} ({r['clamped']} of {r['clusters']} clusters)" for r in rows if r["clamped"] > 0]
    if clamped:
        print(f"\nclamped: {', '.join(clamped)}: held to h^2 k_c = 1 by the step, softer than the material "
              f"(csm check says the substeps the modulus needs); what they change measures the clamp")
    # converging means that successive changes shrink: a ratio below 1 between the last two. Where
    # they grow, the finest run is no reference, and the distances from it measure no error (they
    # shrink towards it whatever the sequence does)
    ratio = float("nan")
    if a.quantity != "positions" and len(rows) >= 3:
        d1, d2 = rows[-2]["change"], rows[-1]["change"]
        ratio = abs(d2 / d1) if d1 else float("inf")
    if shrinking and np.isfinite(slope) and not ratio >= 1 and not clamped:
        print(f"\nobserved rate: error ~ {by}^{slope:.2f} (monotone over {len(coarse)} runs against the finest, "
              f"{finest[by]} {by})")
    else:
        fit = None  # a line through errors that do not shrink claims a rate there is not
        why = ("runs are clamped (above), and a rate through them would be the clamp's" if clamped and shrinking
               else f"the changes from run to run do not shrink, so the finest run ({finest[by]} {by}) is no reference"
               if shrinking else f"the distance from the finest run ({finest[by]} {by}) does not shrink from run to "
               f"run over the {len(coarse)} coarser runs")
        print(f"\nno observed rate: {why}")
    if np.isfinite(ratio):
        print(f"last two changes: {d1:.3g} then {d2:.3g} (ratio {ratio:.2f}: "
              f"{'shrinking' if ratio < 1 else 'not shrinking'}); the last one is "
              f"{100 * abs(d2 / rows[-1]['value']):.1f} % of the value")

    ncol = 1 if a.quantity == "positions" else 2
    fig, axes = plt.subplots(1, ncol, figsize=(5 * ncol, 3.8), squeeze=False, constrained_layout=True)
    k = np.array([r[by] for r in rows], float)
    if ncol == 2:
        ax = axes[0, 0]
        ax.semilogx(k, [r["value"] for r in rows], "o-")
        held = [i for i, r in enumerate(rows) if r["clamped"] > 0]
        if held:  # a clamped run is a softer solid than the material, drawn as such
            ax.plot(k[held], [rows[i]["value"] for i in held], "s", mfc="none", mec="C1", ms=10, mew=1.5,
                    label="clamped (h²k_c held to 1)")
        loose = [i for i, r in enumerate(rows) if r.get("drift", 0) > SETTLED]
        if loose:  # a value still moving at the run's end is drawn as such, not as a resting value
            ax.plot(k[loose], [rows[i]["value"] for i in loose], "o", mfc="white", mec="C3", mew=1.5,
                    label="not settled")
        if loose or held:
            ax.legend(fontsize=7, loc="best")  # where it covers the fewest points
        ax.set_xlabel(by)
        ax.set_ylabel(what + unit)
        ax.set_xticks(k)
        ax.set_xticklabels([str(int(v)) for v in k], fontsize=7, rotation=45)
        ax.minorticks_off()
    ax = axes[0, -1]
    ke = np.array([r[by] for r in coarse], float)
    ax.loglog(ke, errs, "o-", label="distance from the finest run")
    if a.quantity != "positions":
        changes = np.array([abs(r["change"]) for r in rows[1:]])
        ok = changes > 0
        ax.loglog(k[1:][ok], changes[ok], "s--", label="change from the previous run")
    if fit is not None:
        ax.loglog(ke, np.exp(np.polyval(fit, np.log(ke))), ":", label=f"slope {slope:.2f}")
    ax.set_xticks(k)
    ax.set_xticklabels([str(int(v)) for v in k], fontsize=7, rotation=45)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    # the y axis labels its minor ticks up to two decades, so a short range reads without a guess
    ax.yaxis.set_minor_formatter(matplotlib.ticker.LogFormatterSciNotation(minor_thresholds=(2, 0.4)))
    ax.set_xlabel(by)
    ax.set_ylabel(f"|Δ {what}|{unit}" if a.quantity != "positions" else "rms distance from the finest run (m)")
    runs_mod.legend_outside(ax)
    # the title names the scene and what every run shares (--where's choice among them)
    _, shared, _ = runs_mod.legend_labels(runs)
    with h5py.File(runs[0].path, "r") as f:
        scene = runs_mod.text(f.attrs.get("name", ""))
    title = a.title or ": ".join(x for x in (scene, ", ".join(y for y in (shared, runs_mod.settings(runs)) if y)) if x)
    if title:
        fig.suptitle(textwrap.fill(title, 90), fontsize=10)
    for path in runs_mod.save(fig, a.output):
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
