#!/usr/bin/python3
"""One row per csm log of a contact scene (experiments/README.md, "Contact").

    /usr/bin/python3 experiments/analysis/contact.py out/figures/contact/*.h5 [--check 0.05]

Columns: particles and objects; the contact distance d (the attribute contact.distance); the
deepest overlap over the run, as a share of d, from /diagnostics/contact_depth (every pair the
broad phase listed, at the end of each logged frame; with cluster_proxies, how deep a particle
lies inside a cluster's proxy) and again from a brute-force search over
every pair of particles of two objects (the check of the first), and, where the log has self
contact (the attribute contact.self), over every pair of one object that no cluster could hold
together: farther apart at rest than twice the widest cluster (the attribute clusters.width) and
than 2 d; the kinetic energy at its
largest and at the end (J); the lowest particle over the run (m, below 0: under the ground
plane); the median of /timings/total over the frames after the first (ms/frame).

With --self, the pairs of one object are searched in every log. With --check S, exits 1 when some log overlaps deeper than S d (brute force) or did not finish.
"""
import argparse
import os
import sys

import h5py
import numpy as np


def closest_between_objects(x, obj, d, rest=None, apart=np.inf):
    """The smallest |x_i - x_j| over pairs of two objects that lie within 2 d of each other,
    found by sorting into cells of size 2 d (every pair within 2 d shares a cell or a neighbour);
    with rest positions, also over pairs of one object farther apart than `apart` at rest."""
    cell = np.floor(x / (2 * d)).astype(np.int64)
    order = np.lexsort((cell[:, 2], cell[:, 1], cell[:, 0]))
    keys = {}
    for i in order:
        keys.setdefault(tuple(cell[i]), []).append(i)
    best = np.inf
    offsets = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)]
    for key, members in keys.items():
        mi = np.array(members)
        near = [j for o in offsets for j in keys.get((key[0] + o[0], key[1] + o[1], key[2] + o[2]), [])]
        nj = np.array(near)
        diff = x[mi][:, None, :] - x[nj][None, :, :]
        dist = np.sqrt((diff ** 2).sum(axis=2))
        same = obj[mi][:, None] == obj[nj][None, :]
        if rest is not None:
            at_rest = np.sqrt(((rest[mi][:, None, :] - rest[nj][None, :, :]) ** 2).sum(axis=2))
            same &= at_rest <= apart
        dist[same] = np.inf
        if dist.size:
            best = min(best, float(dist.min()))
    return best


def row(path, self_check=False):
    with h5py.File(path, "r") as f:
        d = float(f.attrs["contact.distance"])
        obj = f["rest/object"][:]
        X = f["frames/positions"]
        depth = f["diagnostics/contact_depth"][:]
        ke = f["diagnostics/kinetic_energy"][:]
        total = f["timings/total"][1:]
        rest, apart = None, np.inf
        if self_check or int(f.attrs.get("contact.self", 0)):
            rest = f["rest/positions"][:]
            apart = max(2 * d, 2 * float(f.attrs["clusters.width"][2]))
        closest = min(closest_between_objects(X[t], obj, d, rest, apart) for t in range(X.shape[0]))
        lowest = min(float(X[t][:, 1].min()) for t in range(X.shape[0]))
        return {"name": os.path.basename(path), "particles": int(f.attrs["particles"]), "objects": int(obj.max()) + 1,
                "d": d, "listed": float(depth.max()) / d, "brute": max(0.0, 1.0 - closest / d),
                "ke_max": float(ke.max()), "ke_end": float(ke[-1]), "lowest": lowest,
                "ms": 1e3 * float(np.median(total)) if len(total) else float("nan"), "status": str(f.attrs["status"])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", help="csm logs (.h5) of runs with contact")
    ap.add_argument("--check", type=float, help="fail when a log overlaps deeper than this share of d")
    ap.add_argument("--self", action="store_true",
                    help="search pairs of one object too, in logs without self contact (how deep an object folded "
                         "without it passes through itself)")
    a = ap.parse_args(argv)
    print("| log | particles | objects | d (m) | deepest overlap (listed pairs) | deepest overlap (brute force) "
          "| KE max (J) | KE end (J) | lowest particle (m) | ms/frame | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for path in a.logs:
        r = row(path, a.self)
        print(f"| {r['name']} | {r['particles']} | {r['objects']} | {r['d']:.4g} | {100 * r['listed']:.2f} % "
              f"| {100 * r['brute']:.2f} % | {r['ke_max']:.3g} | {r['ke_end']:.3g} | {r['lowest']:.3g} | {r['ms']:.2f} "
              f"| {r['status']} |")
        if a.check is not None and (r["brute"] > a.check or r["status"] != "ok"):
            print(f"{r['name']}: overlap {100 * r['brute']:.2f} % of d (limit {100 * a.check:.0f} %), status {r['status']}",
                  file=sys.stderr)
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
