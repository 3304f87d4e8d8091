"""Contact against the textbook: each case is a config of experiments/validation/contact/ and a
formula (Coulomb's law on a slope, Newton's restitution, momentum), run with csm and written as a
table of csm against the formula. Run: make validation (or python3
experiments/validation/contact.py --csm build/csm -o DIR).

- slope.yaml: a cube on a slab held in place, gravity tilted by theta: frictionless, its
  acceleration against g sin theta, for grid and Poisson samplings of either object; with mu =
  0.5, how far it creeps below atan mu once settled (from 3 s to 10 s, and from 1 s as well: a
  cube that lands tilted slides on and stops, a Poisson cube after 80 mm by 1.7 s) and its
  acceleration above it;
- incline.yaml: the same cube on a plane collider, mu = 0.5;
- bounce.yaml: a stiff cube dropped 1 m onto a plane collider, its apex over the drop against
  e^2, for each integrator; slab_bounce.yaml: the same onto a slab held in place, with
  contact.restitution;
- headon.yaml: two cubes meeting head-on: how they part against e and the momentum; set slightly
  off centre, whether a particle of one ever gets through the other's surface, from 3 to 100 m/s
  each, with either contact method (met off centre, they turn and glance past each other);
- the five-cube stack.yaml (experiments/configs) for 30 s: its kinetic energy from 5 s on, how
  far its cubes drift from 4 s to 30 s and whether it still stands (its top cube's centre up to
  2.2 m up, four cube heights and contact distances above the bottom one's 0.2 m, less where set-off
  lattices nest into each other; a stack that fell over has it at about 0.2 m and rests too),
  with its lattices set off (as shipped) and aligned, and with contact.method cluster_proxies;
- belt.yaml: a block dropped onto a floor moving at 1 m/s, its speed over the last 1.5 s."""
import argparse
import math
import os
import subprocess

import h5py
import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contact")
CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")
G = 9.81


OPEN = {}


def run(csm, config, out, sets):
    """Runs config with the overrides into log `out` and opens the log (the one opened at that path
    before is closed first: csm does not write over a log a reader holds)."""
    if out in OPEN:
        OPEN.pop(out).close()
    path = config if os.path.isabs(config) else os.path.join(HERE, config)
    cmd = [csm, "run", path, "-o", out, "--force"]
    for s in sets:
        cmd += ["--set", s]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr}")
    OPEN[out] = h5py.File(out, "r")
    return OPEN[out]


def tilted(theta):
    t = math.radians(theta)
    return f"forces=[{{type: gravity, g: [{G * math.sin(t):.12g}, {-G * math.cos(t):.12g}, 0]}}]"


def rigid_frame(rest, now):
    """The rotation that best takes a body's rest positions to its positions now (least squares,
    Kabsch), and its centre now."""
    p, q = rest - rest.mean(axis=0), now - now.mean(axis=0)
    u, _, vt = np.linalg.svd(p.T @ q)
    d = np.diag([1.0, 1.0, np.sign(np.linalg.det(vt.T @ u.T))])
    return vt.T @ d @ u.T, now.mean(axis=0)


def inside_count(f, half):
    """How far two cubes got into each other: over every frame, the most particles of one that lay
    among the other's particle centres (within half of its centre along each of its axes, taken in
    its best rigid frame), and how deep the deepest went. The contacts hold a particle at the contact
    distance from the other's surface particles, so any such particle went through its surface."""
    x, o, r = f["frames/positions"][:], f["rest/object"][:], f["rest/positions"][:]
    most, deepest = 0, 0.0
    for k in range(x.shape[0]):
        for a, b in ((0, 1), (1, 0)):
            rot, c = rigid_frame(r[o == b], x[k][o == b])
            local = np.abs((x[k][o == a] - c) @ rot)
            inner = np.all(local < half, axis=1)
            if inner.any():
                most = max(most, int(inner.sum()))
                deepest = max(deepest, float((half - local[inner]).min(axis=1).max()))
    return most, deepest


def centre(f, obj=0, axis=0, field="frames/positions"):
    """The mass-weighted mean of object obj's particles along axis, every frame."""
    m, o = f["rest/mass"][:], f["rest/object"][:]
    sel = o == obj
    data = f[field]
    return np.array([np.sum(m[sel] * data[k][sel, axis]) / m[sel].sum() for k in range(data.shape[0])])


def creep(f):
    """How far the cube's centre moves along x once settled, from 3 s to the end, and from 1 s."""
    t, x = f["frames/time"][:], centre(f)
    k1, k3 = int(np.searchsorted(t, 1.0)), int(np.searchsorted(t, 3.0))
    return 1e3 * abs(x[-1] - x[k3]), 1e3 * abs(x[-1] - x[k1])


def acceleration(f, start=15):
    """The cube's acceleration down the slope: a least-squares parabola from frame `start` on."""
    t, x = f["frames/time"][:], centre(f)
    return float(np.polyfit(t[start:], x[start:], 2)[0] * 2)


def apex_ratio(f, rest):
    """The first apex after the impact over the drop, from the centre of mass's height."""
    y = centre(f, axis=1)
    dy = np.diff(y)
    k = next((i for i in range(1, len(dy)) if dy[i - 1] < 0 <= dy[i]), len(y) - 1)
    return float((y[k:].max() - rest) / (y[0] - rest))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csm", default="build/csm")
    ap.add_argument("-o", "--out", default="out/validation")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    out = lambda name: os.path.join(args.out, "contact_" + name)  # noqa: E731
    rows = ["| case | setting | csm | reference | csm against it | target |", "|---|---|---|---|---|---|"]

    def row(*cells):
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
        print(rows[-1], flush=True)

    lattices = [("grids aligned", []), ("grids set off by half a spacing", ["objects.0.position=[-0.95, 0.4, 0.05]"]),
                ("a Poisson cube on a grid", ["objects.0.sampling.type=poisson"]),
                ("Poisson on Poisson", ["objects.0.sampling.type=poisson", "objects.1.sampling.type=poisson"])]
    for theta in (10, 20):
        ref = G * math.sin(math.radians(theta))
        for name, sets in lattices:
            a = acceleration(run(args.csm, "slope.yaml", out("slope.h5"), [tilted(theta)] + sets))
            row(f"slab slope {theta}°, frictionless", name, f"{a:.4f} m/s²", f"g sin θ = {ref:.4f}", f"{a / ref:.4f}",
                "5 %")
    proxies = ["contact.method=cluster_proxies"]
    for theta in (10, 20):
        ref = G * math.sin(math.radians(theta))
        a = acceleration(run(args.csm, "slope.yaml", out("slope.h5"), [tilted(theta)] + proxies))
        row(f"slab slope {theta}°, frictionless", "grids aligned, `cluster_proxies`", f"{a:.4f} m/s²",
            f"g sin θ = {ref:.4f}", f"{a / ref:.4f}", "5 %")
    f = run(args.csm, "slope.yaml", out("slope.h5"), [tilted(10), "contact.normal=centres"])
    x = centre(f)
    row("slab slope 10°, frictionless", "grids aligned, `contact.normal: centres` (spheres)",
        f"stops after {x[-1] - x[0]:.3f} m", f"g sin θ = {G * math.sin(math.radians(10)):.4f} m/s²", "", "")

    mu = 0.5
    for case, config, sets in (("slab slope", "slope.yaml", [f"contact.friction={mu}"]),
                               ("slab slope, `cluster_proxies`", "slope.yaml", [f"contact.friction={mu}"] + proxies),
                               ("plane collider", "incline.yaml", [f"colliders.0.friction={mu}"])):
        ref = G * (math.sin(math.radians(35)) - mu * math.cos(math.radians(35)))
        a = acceleration(run(args.csm, config, out("friction.h5"), [tilted(35)] + sets))
        row(f"{case} 35°, μ = 0.5", "grid", f"{a:.4f} m/s²", f"g (sin θ − μ cos θ) = {ref:.4f}", f"{a / ref:.4f}", "2 %")
        settled, late = creep(run(args.csm, config, out("friction.h5"), [tilted(26), "time.frames=600"] + sets))
        row(f"{case} 26°, μ = 0.5 (atan μ = 26.57°)", "grid",
            f"moves {settled:.3f} mm from 3 s to 10 s ({late:.3f} from 1 s)", "0 (sticks)", "", "< 1 mm")

    # static friction half a degree under the friction angle, across mu, the sampling and the clusters
    for method in ("particles", "cluster_proxies"):
        for mu_s, name, sets in ((0.2, "grids aligned", []), (0.3, "grids aligned", []),
                                 (0.5, "grids set off by half a spacing", ["objects.0.position=[-0.95, 0.4, 0.05]"]),
                                 (0.5, "a Poisson cube on a grid", ["objects.0.sampling.type=poisson"]),
                                 (0.5, "grids aligned, clusters of radius 0.25", ["clustering.radius=0.25"])):
            theta = math.degrees(math.atan(mu_s)) - 0.5
            f = run(args.csm, "slope.yaml", out("friction.h5"),
                    [tilted(theta), "time.frames=600", f"contact.friction={mu_s}", f"contact.method={method}"] + sets)
            settled, late = creep(f)
            row(f"slab slope {theta:.2f}°, μ = {mu_s} (atan μ − 0.5°)", f"{method}, {name}",
                f"moves {settled:.3f} mm from 3 s to 10 s ({late:.3f} from 1 s)", "0 (sticks)", "", "< 1 mm")

    integrators = [("strain_limited", []), ("shape_matching", ["solver.integrator=shape_matching", "solver.alpha=1"]),
                   ("xpbd", ["solver.integrator=xpbd", "solver.modulus=1e6", "solver.iterations=20"]),
                   ("projective_dynamics", ["solver.integrator=projective_dynamics", "solver.modulus=1e6"])]
    for name, sets in integrators:
        for e in (0, 0.5, 0.9):
            r = apex_ratio(run(args.csm, "bounce.yaml", out("bounce.h5"), sets + [f"colliders.0.restitution={e}"]), 0.2)
            row("bounce on a plane collider", f"{name}, e = {e}", f"apex / drop {r:.4f}", f"e² = {e * e:.4f}",
                f"{r - e * e:+.4f}", "± 0.05")
    for method in ("particles", "cluster_proxies"):
        for e in (0.5, 0.9):
            r = apex_ratio(run(args.csm, "slab_bounce.yaml", out("bounce.h5"),
                               [f"contact.restitution={e}", f"contact.method={method}"]), 0.4)
            row("bounce on a slab held in place", f"{method}, contact.restitution = {e}", f"apex / drop {r:.4f}",
                f"e² = {e * e:.4f}", f"{r - e * e:+.4f}", "± 0.05")

    for method, e in [(m, e) for m in ("particles", "cluster_proxies") for e in (0, 0.5, 0.9, 1)]:
        f = run(args.csm, "headon.yaml", out("headon.h5"), [f"contact.restitution={e}", f"contact.method={method}"])
        va, vb = centre(f, 0, 0, "frames/velocities"), centre(f, 1, 0, "frames/velocities")
        m = f["rest/mass"][:]
        v = f["frames/velocities"]
        p0, p1 = float(np.sum(m * v[0][:, 0])), float(np.sum(m * v[-1][:, 0]))
        parted = (vb[-1] - va[-1]) / (va[0] - vb[0])
        row("head-on, 3 m/s each", f"{method}, contact.restitution = {e}",
            f"part at {parted:.4f} of the approach; Δp {p1 - p0:.1e}",
            f"e = {e}; Δp = 0", f"{parted - e:+.4f}" if e > 0 else "", "± 0.01 (e > 0)")
    for method in ("particles", "cluster_proxies"):
        for speed in (3, 10, 30, 40, 60, 100):
            f = run(args.csm, "headon.yaml", out("headon.h5"), [f"objects.0.velocity=[{speed}, 0, 0]",
                                                                f"objects.1.velocity=[{-speed}, 0, 0]", "time.frames=30",
                                                                "objects.1.position=[1, 0.03, 0.02]",
                                                                f"contact.method={method}"])
            # the cubes' particle centres span +-0.1 m about their centres (0.2 m, spacing 0.05)
            n, deep = inside_count(f, 0.1)
            row("head-on, tunnelling", f"{method}, {speed} m/s each ({2 * speed / 60:.2f} m a step), 3 and 2 cm off centre",
                f"{n} particles through the other's surface, {deep:.3f} m deep" if n else "kept apart",
                "kept apart", "", "")

    stack = os.path.join(CONFIGS, "stack.yaml")
    aligned = ["objects.1.position=[0, 0.8, 0]", "objects.2.position=[0, 1.3, 0]", "objects.3.position=[0, 1.8, 0]",
               "objects.4.position=[0, 2.3, 0]"]
    for name, sets in (("lattices set off (stack.yaml)", []), ("lattices aligned", aligned),
                       ("cluster_proxies", ["contact.method=cluster_proxies"])):
        f = run(args.csm, stack, out("stack.h5"), ["time.frames=1800"] + sets)
        t, ke = f["frames/time"][:], f["diagnostics/kinetic_energy"][:]
        k4, k5 = int(np.searchsorted(t, 4.0)), int(np.searchsorted(t, 5.0))
        drift = max(math.hypot(centre(f, j, 0)[-1] - centre(f, j, 0)[k4], centre(f, j, 2)[-1] - centre(f, j, 2)[k4])
                    for j in range(5))
        top = centre(f, 4, 1)[-1]
        row("five cubes stacked, 30 s", name, f"kinetic energy ≤ {ke[k5:].max():.1e} J from 5 s; drift {1e3 * drift:.2f} mm; "
            f"top cube's centre {top:.3f} m up", "at rest, standing (1.8 … 2.2 m)", "", "< 1e-6 J, < 1 mm")

    f = run(args.csm, "belt.yaml", out("belt.h5"), [])
    vx = centre(f, 0, 0, "frames/velocities")
    row("block on a belt at 1 m/s, μ = 0.5", "last 1.5 s", f"{np.mean(vx[-90:]):.4f} m/s", "1 m/s",
        f"{np.mean(vx[-90:]) - 1:+.4f}", "± 0.02")

    r0 = 0.5
    for omega in (2.9, 3.4):
        f = run(args.csm, "turntable.yaml", out("turntable.h5"),
                [f"colliders.0.angular_velocity=[0, {omega}, 0]", f"objects.0.velocity=[0, 0, {-omega * r0}]",
                 f"objects.0.angular_velocity=[0, {omega}, 0]"])
        t, x, z = f["frames/time"][:], centre(f, 0, 0), centre(f, 0, 2)
        k, radius = int(np.searchsorted(t, 1.0)), np.hypot(x, z)
        turn = np.polyfit(t[-90:], np.unwrap(np.arctan2(-z, x))[-90:], 1)[0]
        ratio = omega * omega * r0 / (0.5 * G)
        rides = ratio < 1
        row(f"block on a turntable 0.5 m from its axis, μ = 0.5, ω = {omega} rad/s (ω² r = {ratio:.2f} μ g)",
            "set down moving with it", f"turns at {turn:.4f} rad/s; radius {radius[k]:.4f} m at 1 s, "
            f"{radius[-1]:.4f} m at 4 s", "rides at ω" if rides else "slides outwards",
            f"{1e3 * (radius[-1] - radius[k]):+.3f} mm" if rides else "", "< 1 mm" if rides else "")

    with open(os.path.join(args.out, "contact.md"), "w") as fo:
        fo.write("# Contact against the textbook\n\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
