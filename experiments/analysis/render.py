#!/usr/bin/python3
"""Pictures of a log: particles as discs, projected onto a plane, coloured by the nearest cluster
centre (Falkenstein 2017 Fig 2 and 4) or by a per-particle quantity and shaded by depth (nearer
lighter), with a scale bar and the ground (a plane collider seen edge-on) drawn in; a movie with
ffmpeg.

    MPLBACKEND=Agg /usr/bin/python3 experiments/analysis/render.py LOG \\
        [--frames 0,-1 | --every K] [--color nearest|new|speed|displacement|object|DATASET] \\
        [--view xy|xz|yz|zy|iso] [-o PREFIX] [--movie FILE.mp4 [--fps 30]]

--color
  nearest       (default) each particle takes the colour of the cluster whose centre is nearest
                to it at that frame, the colour fixed by the cluster's id
  new           the same, but particles nearest to one of the initial clusters are grey, so the
                clusters reclustering added stand out (the paper's figures)
  speed         |v|;  displacement: distance from the rest position after removing the best
                rigid motion (the set, plastic and elastic);  object: which body
  DATASET       any (T, n) or (T, n, 3) dataset of the log (its length when a vector)
--view          plane of the picture (first axis to the right); iso looks along (1, 1, 1)
Writes PREFIX_FRAME.png for each frame (default PREFIX: out/render/<log name>) and, with
--movie, every --every-th frame to a movie (Debian's ffmpeg must be installed).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import matplotlib
import numpy as np

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.collections  # noqa: E402
import matplotlib.patches  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runs as runs_mod  # noqa: E402

VIEWS = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2), "zy": (2, 1), "zx": (2, 0), "yx": (1, 0)}
GREY = np.array([0.72, 0.72, 0.72, 1.0])


def project(x, view):
    """(n, 2) picture coordinates and (n,) depth (larger is nearer the viewer)."""
    if view == "iso":
        right = np.array([1.0, 0.0, -1.0]) / np.sqrt(2)
        up = np.array([-1.0, 2.0, -1.0]) / np.sqrt(6)
        toward = np.array([1.0, 1.0, 1.0]) / np.sqrt(3)
        return np.stack([x @ right, x @ up], axis=1), x @ toward
    i, j = VIEWS[view]
    k = 3 - i - j
    sign = np.sign(np.cross(np.eye(3)[i], np.eye(3)[j])[k])
    return x[:, [i, j]], sign * x[:, k]


PALETTE = plt.get_cmap("tab20")(np.arange(20) / 20.0 + 0.025)


def cluster_palette(f, frames):
    """A colour for every cluster id of the frames drawn, neighbours apart: each id, in the order
    it first appears, takes the first of the 20 colours that none of its 8 nearest clusters (at
    that frame) has, so that adjoining clusters never share a colour while 20 suffice."""
    colour = {}
    for t in frames:
        com, ids = runs_mod.frame_clusters(f, t)
        if len(com) == 0:
            continue
        near = np.argsort(((com[:, None, :] - com[None, :, :]) ** 2).sum(axis=2), axis=1)[:, 1:9]
        for c, i in enumerate(ids):
            if int(i) in colour:
                continue
            taken = {colour.get(int(ids[j]), -1) for j in near[c]}
            free = [k for k in range(len(PALETTE)) if k not in taken]
            colour[int(i)] = free[0] if free else int(i) % len(PALETTE)
    return {i: PALETTE[k] for i, k in colour.items()}


def planes(f, t=0):
    """The plane colliders of the log's config at frame t, as (unit normal, offset) pairs, where
    their paths have taken them (/colliders/K/center, which stands at offset n at rest, and
    /colliders/K/rotation). Needs python3-yaml to read the config; without it, none."""
    try:
        import yaml
    except ImportError:
        return []
    try:
        cfg = yaml.safe_load(str(f.attrs.get("config", ""))) or {}
    except yaml.YAMLError:
        return []
    out = []
    for k, c in enumerate(cfg.get("colliders") or []):
        if not isinstance(c, dict) or c.get("type") != "plane":
            continue
        n = np.asarray(c.get("normal", [0, 1, 0]), float)
        n = n / (np.linalg.norm(n) or 1)
        offset = float(c.get("offset", 0))
        centre, turn = f"colliders/{k}/center", f"colliders/{k}/rotation"
        if centre in f and t < f[centre].shape[0]:  # where its path has taken it: offset n at rest
            if turn in f and t < f[turn].shape[0]:
                n = f[turn][t] @ n
            offset = float(n @ f[centre][t])
        out.append((n, offset))
    return out


def edge_on(n, view):
    """The picture axis (0 across, 1 up) a plane of normal n is seen edge-on along, or None."""
    if view == "iso":
        return None
    i, j = VIEWS[view]
    for axis, k in ((j, 1), (i, 0)):
        if abs(abs(n[axis]) - 1) < 1e-9:
            return k
    return None


def ground_lines(f, view, t=0):
    """The plane colliders seen edge-on in this view at frame t, as ("h" | "v", coordinate) pairs:
    a plane whose normal lies along the picture's vertical (horizontal) axis is a horizontal
    (vertical) line."""
    lines = []
    for n, offset in planes(f, t):
        k = edge_on(n, view)
        if k is not None:
            i, j = VIEWS[view]
            axis = j if k == 1 else i
            lines.append(("h" if k == 1 else "v", offset / n[axis]))
    return lines


def plane_quads(f, view, t, x):
    """The plane colliders not seen edge-on, each as the patch of the plane under the body (its
    footprint and half as much again around it): (picture corners (4, 2), depth of the patch's
    centre)."""
    quads = []
    for n, offset in planes(f, t):
        if edge_on(n, view) is not None:
            continue
        u = np.cross(n, [1.0, 0, 0] if abs(n[0]) < 0.9 else [0, 1.0, 0])
        u /= np.linalg.norm(u)
        v = np.cross(n, u)
        a, b = x @ u, x @ v
        pad = 0.5 * max(np.ptp(a), np.ptp(b), 1e-3)
        corners = [(a.min() - pad, b.min() - pad), (a.max() + pad, b.min() - pad), (a.max() + pad, b.max() + pad),
                   (a.min() - pad, b.max() + pad)]
        pts = np.array([offset * n + p * u + q * v for p, q in corners])
        xy, depth = project(pts, view)
        quads.append((xy, float(depth.mean())))
    return quads


def rotation_degrees(deg):
    """A config's `rotate`: deg[0] degrees about x, then deg[1] about y, then deg[2] about z."""
    r = np.eye(3)
    for axis in range(3):
        t = np.radians(float(deg[axis]))
        b, d = (axis + 1) % 3, (axis + 2) % 3
        a = np.eye(3)
        a[b, b], a[b, d], a[d, b], a[d, d] = np.cos(t), -np.sin(t), np.sin(t), np.cos(t)
        r = a @ r
    return r


def read_mesh(path):
    """Vertices (n, 3) and triangles (m, 3) of an OFF or OBJ file (polygons fanned)."""
    v, tri = [], []
    with open(path) as fh:
        if path.lower().endswith(".off"):
            words = [w for line in fh for w in line.split("#")[0].split()]
            if words and words[0].upper().endswith("OFF"):
                words = words[1:] if words[0].upper() == "OFF" else [words[0][3:]] + words[1:]
            nv, nf = int(words[0]), int(words[1])
            at = 3
            v = np.array(words[at:at + 3 * nv], float).reshape(nv, 3)
            at += 3 * nv
            for _ in range(nf):
                k = int(words[at])
                ids = [int(x) for x in words[at + 1:at + 1 + k]]
                tri += [(ids[0], ids[j], ids[j + 1]) for j in range(1, k - 1)]
                at += 1 + k
            return v, np.array(tri, int)
        for line in fh:
            parts = line.split()
            if parts and parts[0] == "v":
                v.append([float(x) for x in parts[1:4]])
            elif parts and parts[0] == "f":
                ids = [int(p.split("/")[0]) - 1 for p in parts[1:]]
                tri += [(ids[0], ids[j], ids[j + 1]) for j in range(1, len(ids) - 1)]
    return np.array(v, float), np.array(tri, int)


def find_beside(path, config_file):
    """A config's relative path as csm finds it: from here, then the config's folder and up."""
    if os.path.exists(path) or os.path.isabs(path):
        return path
    folder = os.path.dirname(config_file) if config_file and config_file != "--set" else "."
    for _ in range(16):
        p = os.path.join(folder, path)
        if os.path.exists(p):
            return p
        folder = os.path.join(folder, "..")
    return None


def collider_meshes(f):
    """The mesh colliders of the log's config, placed at rest as csm places them (rotate, fit,
    scale about the bounding box's centre, then center): (collider index, vertices, triangles).
    A mesh whose file cannot be found here is left out."""
    try:
        import yaml
        cfg = yaml.safe_load(str(f.attrs.get("config", ""))) or {}
    except Exception:  # no python3-yaml, or a config it cannot read: no meshes
        return []
    config_file = runs_mod.text(f.attrs.get("config_file", ""))
    out = []
    for k, c in enumerate(cfg.get("colliders") or []):
        if not isinstance(c, dict) or c.get("type") != "mesh" or not c.get("path"):
            continue
        path = find_beside(str(c["path"]), config_file)
        if not path:
            continue
        v, tri = read_mesh(path)
        v = v @ rotation_degrees(c.get("rotate", [0, 0, 0])).T
        lo, hi = v.min(axis=0), v.max(axis=0)
        scale = float(c.get("scale", 1.0))
        if c.get("fit") == "unit_box" and (hi - lo).max() > 0:
            scale /= (hi - lo).max()
        v = (v - 0.5 * (lo + hi)) * scale + np.asarray(c.get("center", [0, 0, 0]), float)
        out.append((k, v, tri))
    return out


def draw_meshes(ax, f, meshes, view, t):
    """The mesh colliders at frame t, moved along their paths, as shaded triangles (painter's
    order), behind the body (a sheet draped over them, a body on them)."""
    light = np.array([0.3, 0.8, 0.5]) / np.linalg.norm([0.3, 0.8, 0.5])
    for k, v, tri in meshes:
        centre, turn = f"colliders/{k}/center", f"colliders/{k}/rotation"
        if centre in f and t < f[centre].shape[0]:
            c0 = f[centre][0]
            r = f[turn][t] if turn in f and t < f[turn].shape[0] else np.eye(3)
            v = (v - c0) @ r.T + f[centre][t]
        xy, depth = project(v, view)
        corners = xy[tri]
        normal = np.cross(v[tri[:, 1]] - v[tri[:, 0]], v[tri[:, 2]] - v[tri[:, 0]])
        normal /= np.maximum(np.linalg.norm(normal, axis=1), 1e-300)[:, None]
        shade = 0.45 + 0.5 * np.abs(normal @ light)
        order = np.argsort(depth[tri].mean(axis=1))
        colours = np.column_stack([shade, shade, shade, np.ones_like(shade)])[order]
        ax.add_collection(matplotlib.collections.PolyCollection(corners[order], facecolors=colours,
                                                                edgecolors="none", zorder=0))


def nice_length(span):
    """A round length (1, 2 or 5 times a power of ten) of about a fifth of span."""
    target = span / 5
    power = 10 ** np.floor(np.log10(target))
    return max(m * power for m in (1, 2, 5) if m * power <= target * 1.0001)


def colours(f, t, mode, initial, palette=None):
    x = f["frames/positions"][t]
    if mode in ("nearest", "new"):
        com, ids = runs_mod.frame_clusters(f, t)
        if len(com) == 0:
            return np.tile(GREY, (len(x), 1)), None
        # nearest centre, in blocks so that a million particles fit in memory
        near = np.empty(len(x), np.int64)
        for a in range(0, len(x), 4096):
            d = ((x[a:a + 4096, None, :] - com[None, :, :]) ** 2).sum(axis=2)
            near[a:a + 4096] = np.argmin(d, axis=1)
        c = np.array([palette[int(i)] for i in ids[near]])
        if mode == "new":
            c[ids[near] < initial] = GREY
        return c, None
    if mode == "speed":
        values, label = np.linalg.norm(f["frames/velocities"][t], axis=1), "speed (m/s)"
    elif mode == "displacement":
        rest = f["rest/positions"][:]
        m = f["rest/mass"][:]
        xc, rc = x - (m @ x) / m.sum(), rest - (m @ rest) / m.sum()
        # best rigid fit of the rest shape (Kabsch), so that only deformation is left
        u, _, vt = np.linalg.svd((xc * m[:, None]).T @ rc)
        r = u @ np.diag([1, 1, np.sign(np.linalg.det(u @ vt))]) @ vt
        values, label = np.linalg.norm(xc - rc @ r.T, axis=1), "distance from rest shape (m)"
    elif mode == "object":  # categories, not a scale: a colour per body
        return PALETTE[(2 * f["rest/object"][:]) % len(PALETTE)], None
    else:
        name = mode.lstrip("/")
        if name not in f:
            sys.exit(f"{f.filename}: --color {mode}: no such dataset")
        d = f[name]
        n = x.shape[0]
        if d.ndim == 2 and d.shape[1] == n:
            values = d[t].astype(float)
        elif d.ndim == 3 and d.shape[1] == n:
            values = np.linalg.norm(d[t], axis=1)
        else:
            sys.exit(f"{f.filename}: --color {mode}: expected a (T, n) or (T, n, 3) dataset, got {d.shape}")
        label = name
    return values, label


def limits(f, frames, view, spacing):
    """The picture's bounds around the particles of these frames and the planes beside them."""
    pts = [project(f["frames/positions"][t], view)[0] for t in frames]
    lo = np.min([p.min(axis=0) for p in pts], axis=0) - spacing
    hi = np.max([p.max(axis=0) for p in pts], axis=0) + spacing
    for t in frames:
        for kind, at in ground_lines(f, view, t):  # the picture shows the ground the solid rests on
            k = 1 if kind == "h" else 0
            lo[k], hi[k] = min(lo[k], at - 2 * spacing), max(hi[k], at + 2 * spacing)
    hi[1] += 0.1 * (hi[1] - lo[1])  # an empty band on top for the scale bar
    return lo, hi


def render(f, frames, a, prefix, numbered):
    """One PNG per frame, in one colour scale. A movie's frames share one framing; each still
    is framed around the body at its frame, so that it fills the picture wherever it went."""
    n = f["frames/positions"].shape[1]
    spacing = float(np.max(f.attrs.get("object_spacing", 0))) or 0.02  # the largest object's
    initial = int(f["clusters/count"][0])
    palette = cluster_palette(f, frames) if a.color in ("nearest", "new") else None
    scale = None
    if a.color not in ("nearest", "new", "object"):
        vals = [colours(f, t, a.color, initial)[0] for t in frames]
        scale = (float(np.min([v.min() for v in vals])), float(np.max([v.max() for v in vals])))
    whole = limits(f, frames, a.view, spacing) if numbered else None
    meshes = collider_meshes(f)
    objects = int(f["rest/object"][:].max()) + 1
    written = []
    time = f["frames/time"][:]
    for count, t in enumerate(frames):
        lo, hi = whole or limits(f, [t], a.view, spacing)
        span = np.maximum(hi - lo, 1e-9)
        width = a.size
        height = max(1.5, width * span[1] / span[0])
        fig = plt.figure(figsize=(width + (1.2 if scale else 0), height))
        ax = fig.add_axes([0.02, 0.02, width / (width + (1.2 if scale else 0)) - 0.04, 0.9])
        xy, depth = project(f["frames/positions"][t], a.view)
        order = np.argsort(depth)
        c, label = colours(f, t, a.color, initial, palette)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.axis("off")
        # disc diameter = the sampling spacing, in points
        fig.canvas.draw()
        bbox = ax.get_window_extent()
        per_unit = min(bbox.width / span[0], bbox.height / span[1]) * 72.0 / fig.dpi
        s = (0.9 * spacing * per_unit) ** 2
        if label is not None:  # a quantity: its colours on one scale for every frame
            norm = matplotlib.colors.Normalize(vmin=scale[0], vmax=scale[1])
            mappable = matplotlib.cm.ScalarMappable(norm=norm, cmap="viridis")
            fig.colorbar(mappable, ax=ax, fraction=0.05, label=label)
            c = mappable.to_rgba(c)
        # nearer discs lighter, farther ones darker, so that the shape reads (a twist, a dent)
        near = (depth - depth.min()) / max(float(np.ptp(depth)), 1e-12)
        shaded = np.array(c, float)
        shaded[:, :3] *= (0.55 + 0.45 * near)[:, None]
        # planes seen at an angle (a press's plates, the ground in iso): filled behind the body,
        # outlined in front of it, so that they hide none of it
        for corners, at in plane_quads(f, a.view, t, f["frames/positions"][t]):
            front = at > float(depth.mean())
            ax.add_patch(matplotlib.patches.Polygon(corners, closed=True, facecolor="none" if front else "0.8",
                                                    edgecolor="0.3", linestyle="--" if front else "-",
                                                    linewidth=1.0, zorder=3 if front else 0))
        draw_meshes(ax, f, meshes, a.view, t)
        ax.scatter(xy[order, 0], xy[order, 1], s=s, c=shaded[order], linewidths=0, zorder=2)
        if a.color == "object" and objects > 1:
            for o in range(objects):
                ax.scatter([], [], s=20, color=PALETTE[(2 * o) % len(PALETTE)], label=f"object {o}")
            ax.legend(fontsize=7, loc="upper right", frameon=False, ncol=1 + objects // 6)
        for kind, at in ground_lines(f, a.view, t):
            (ax.axhline if kind == "h" else ax.axvline)(at, color="0.35", linewidth=1.2, zorder=0)
        # a scale bar in the upper left corner
        bar = nice_length(span[0])
        x0, y0 = lo[0] + 0.04 * span[0], hi[1] - 0.06 * span[1]
        ax.plot([x0, x0 + bar], [y0, y0], color="black", linewidth=2, solid_capstyle="butt")
        ax.text(x0 + bar / 2, y0 + 0.015 * span[1], f"{bar:g} m", ha="center", va="bottom", fontsize=8)
        ax.set_title(f"{f.attrs.get('name', '')}  t = {time[t]:.2f} s  ({n} particles)", fontsize=9)
        path = f"{prefix}_{count:05d}.png" if numbered else f"{prefix}_{t:05d}.png"
        fig.savefig(path, dpi=a.dpi)
        plt.close(fig)
        written.append(path)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--frames", default="0,-1", help="comma-separated frames (negative from the end)")
    ap.add_argument("--every", type=int, help="every K-th frame instead of --frames")
    ap.add_argument("--color", default="nearest")
    ap.add_argument("--view", default="xy", choices=sorted(VIEWS) + ["iso"])
    ap.add_argument("-o", "--output", help="prefix of the PNG files")
    ap.add_argument("--size", type=float, default=6.0, help="picture width in inches")
    ap.add_argument("--dpi", type=int, default=120)
    ap.add_argument("--movie", help="write a movie of every --every-th frame (default every frame)")
    ap.add_argument("--fps", type=int, default=30)
    a = ap.parse_args(argv)
    with h5py.File(a.log, "r") as f:
        T = f["frames/time"].shape[0]
        name = str(f.attrs.get("name", os.path.splitext(os.path.basename(a.log))[0]))
        prefix = a.output or os.path.join("out", "render", name)
        if a.movie:
            if not shutil.which("ffmpeg"):
                sys.exit("render.py: --movie needs ffmpeg (Debian: apt-get install ffmpeg)")
            frames = list(range(0, T, a.every or 1))
            with tempfile.TemporaryDirectory() as tmp:
                render(f, frames, a, os.path.join(tmp, "frame"), numbered=True)
                folder = os.path.dirname(a.movie)
                if folder:
                    os.makedirs(folder, exist_ok=True)
                cmd = ["ffmpeg", "-loglevel", "error", "-y", "-framerate", str(a.fps), "-i",
                       os.path.join(tmp, "frame_%05d.png"), "-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2",
                       "-pix_fmt", "yuv420p", a.movie]
                if subprocess.call(cmd) != 0:
                    sys.exit(f"render.py: ffmpeg failed writing {a.movie}")
            print(a.movie)
            return
        frames = list(range(0, T, a.every)) if a.every else [runs_mod.frame_index(f, s) for s in a.frames.split(",")]
        folder = os.path.dirname(prefix)
        if folder:
            os.makedirs(folder, exist_ok=True)
        for path in render(f, frames, a, prefix, numbered=False):
            print(path)


if __name__ == "__main__":
    main()
