#!/usr/bin/python3
"""The plastic state of csm logs, one Markdown table row per log.

    /usr/bin/python3 experiments/analysis/plasticity.py out/beam_compress*.h5 [--plot out/beams.png]

Columns
  length    the body's extent along its longest principal axis (sqrt(12 eig) of the mass
            covariance, so rotations do not change it): at frame 0, at the release of the
            `compress` or `twist` force, its minimum over the run, at the end (m)
  set       rms distance of the last frame from the best rigid placement of the rest shape (m):
            the deformation the body keeps
  cond      largest cond(F^p) over clusters and frames (/diagnostics/max_cond_Fp)
  det F^p   the range of /diagnostics/volume_ratio (mean det F^p), 1 when plastic flow keeps volume
  yielded   most clusters that flowed in one frame, and cluster-steps skipped on a degenerate F^e
  energy    largest mechanical energy (kinetic + gravitational, above the lowest potential the
            run reaches) after the release of a `compress` or `twist` force, or over the whole
            run without one, over the energy the body was given: its mechanical energy at frame 0
            plus the most work the forces without a potential did (/diagnostics/work_external;
            for a log without it, the compress force's potential 1/2 s sum m (x - c)_axis^2 at
            frame 0 minus at release), plus the most that moving colliders gave
            (-/diagnostics/dissipated_contact: a press's plates). Plastic flow and colliders at
            rest only take energy away, so a ratio above 1 is energy the simulation created
  stable    no: status not ok, non-finite state, or energy ratio above 1
"""
import argparse
import sys

import h5py
import numpy as np
import yaml


def principal_length(x, m):
    c = (m[:, None] * x).sum(0) / m.sum()
    q = x - c
    cov = (m[:, None, None] * q[:, :, None] * q[:, None, :]).sum(0) / m.sum()
    return float(np.sqrt(12 * np.linalg.eigvalsh(cov)[-1]))


def rigid_residual(rest, x, m):
    """rms distance of x from the mass-weighted best rotation and translation of rest (Kabsch)."""
    w = m / m.sum()
    p = rest - (w[:, None] * rest).sum(0)
    q = x - (w[:, None] * x).sum(0)
    U, _, Vt = np.linalg.svd((w[:, None] * q).T @ p)
    D = np.diag([1, 1, np.sign(np.linalg.det(U @ Vt))])
    R = U @ D @ Vt
    return float(np.sqrt((w * ((q - p @ R.T) ** 2).sum(1)).sum()))


def compress_force(config):
    for force in config.get("forces") or []:
        if force.get("type") == "compress":
            return force
    return None


def release_time(config):
    """When the last compress or twist force stops acting (None without one)."""
    times = [float(fc.get("until", 4)) for fc in config.get("forces") or [] if fc.get("type") in ("compress", "twist")]
    return max(times) if times else None


def compress_potential(x, m, force, object_slice):
    axis = "xyz".index(str(force.get("axis", "x")))
    xs, ms = x[object_slice], m[object_slice]
    c = (ms * xs[:, axis]).sum() / ms.sum()
    return 0.5 * force["scale"] * float((ms * (xs[:, axis] - c) ** 2).sum())


def analyse(path):
    with h5py.File(path, "r") as f:
        config = yaml.safe_load(f.attrs["config"])
        t = f["frames/time"][:]
        X = f["frames/positions"]
        m = f["rest/mass"][:]
        rest = f["rest/positions"][:]
        d = f["diagnostics"]
        ke = d["kinetic_energy"][:]
        T = len(t)
        force = compress_force(config)
        until = release_time(config)
        release = int(np.searchsorted(t, until - 1e-9)) if until is not None else None
        if release is not None and release >= T:
            release = T - 1
        every = max(1, T // 200)
        lengths = [principal_length(X[k], m) for k in range(0, T, every)]
        x_last = X[T - 1]
        row = {
            "log": path.split("/")[-1],
            "plasticity": f"{f.attrs['plasticity']} λ={f.attrs.get('plasticity.yield', float('nan')):g}"
            if f.attrs["plasticity"] != "none" else "none",
            "L0": principal_length(X[0], m),
            "Lrel": principal_length(X[release], m) if release is not None else float("nan"),
            "Lmin": min(lengths),
            "Lend": principal_length(x_last, m),
            "set": rigid_residual(rest, x_last, m),
            "cond": float(d["max_cond_Fp"][:].max()),
            "det": (float(d["volume_ratio"][:].min()), float(d["volume_ratio"][:].max())),
            "yielded": int(d["yielded"][:].max()),
            "skipped": int(d["plastic_skipped"][:].sum()),
            "status": str(f.attrs["status"]),
            "finite": bool(np.isfinite(x_last).all()),
        }
        # energy budget: what the body had at frame 0 above the lowest potential it reaches,
        # plus the most work the forces without a potential did
        pe = d["potential_energy"][:]
        floor = pe.min()
        budget = ke[0] + pe[0] - floor
        start = release or 0
        if "dissipated_contact" in d:  # what moving colliders gave (a press's plates), < 0
            budget += max(0.0, -float(d["dissipated_contact"][:].min()))
        if "work_external" in d:
            budget += max(0.0, float(d["work_external"][:].max()))
        elif force:
            obj = int(force.get("object", -1))
            sl = slice(None) if obj < 0 else (f["rest/object"][:] == obj)
            budget += compress_potential(X[0], m, force, sl) - compress_potential(X[release], m, force, sl)
        mech = ke[start:] + pe[start:] - floor
        row["energy"] = float(mech.max() / budget) if budget > 0 else float("inf")
        row["stable"] = row["status"] == "ok" and row["finite"] and not (row["energy"] > 1)
        row["series"] = (t, ke, d["max_cond_Fp"][:], np.array(lengths), t[::every])
        return row


def table(rows):
    out = ["| log | plasticity | length 0 / release / min / end (m) | set (m) | max cond F^p | det F^p | "
           "yielded (max) / skipped | energy / given | stable |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rel = "–" if np.isnan(r["Lrel"]) else f"{r['Lrel']:.2f}"
        out.append(f"| {r['log']} | {r['plasticity']} | {r['L0']:.2f} / {rel} / {r['Lmin']:.2f} / {r['Lend']:.2f} "
                   f"| {r['set']:.3f} | {r['cond']:.3g} | {r['det'][0]:.12f} – {r['det'][1]:.12f} "
                   f"| {r['yielded']} / {r['skipped']} | {r['energy']:.3g} | {'yes' if r['stable'] else 'no'} |")
    return "\n".join(out)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    for r in rows:
        t, ke, cond, lengths, tl = r["series"]
        ax[0].plot(tl, lengths, label=r["log"])
        ax[1].semilogy(t, cond, label=r["log"])
        ax[2].semilogy(t, np.maximum(ke, 1e-12), label=r["log"])
    for a, title in zip(ax, ["longest principal length (m)", "max cond(F^p)", "kinetic energy (J)"]):
        a.set_title(title)
        a.set_xlabel("t (s)")
    ax[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    if path.endswith(".png"):
        fig.savefig(path[:-4] + ".pdf")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--plot", help="PNG of length, cond(F^p) and kinetic energy over time (a PDF beside it)")
    args = ap.parse_args()
    rows = [analyse(p) for p in args.logs]
    print(table(rows))
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
