#!/usr/bin/python3
"""The surface of the solid, per frame: a level set of the particles' density, meshed with
marching cubes (scikit-image), written as a PLY (or OBJ) sequence that ParaView and Blender open,
and optionally drawn as PNGs beside render.py's particle pictures.

    MPLBACKEND=Agg /usr/bin/python3 experiments/analysis/surface.py LOG \\
        [--frames 0,-1 | --every K] [--format ply|obj] [-o PREFIX] \\
        [--png] [--view xy|xz|yz|zy|iso] [--level 0.5] [--radius 2] [--cell 0.5]

Each object is meshed on its own: its particles are spread on a grid of cells of --cell times
its sampling spacing s with the smooth kernel (1 - d^2/r^2)^3, r = --radius times s. Inside the
body the density is about the same everywhere (its 90th percentile at the particles is taken as
that value); across the boundary it falls to zero, passing --level times it where the particles'
volume ends, half a spacing beyond the outer layer. Writes PREFIX_FRAME.ply (default PREFIX:
out/surface/<log name>): binary PLY with a normal per vertex and the object of each face (or OBJ,
a group per object); ParaView groups the numbered files into a time series.
"""
import argparse
import os
import sys

import h5py
import matplotlib
import numpy as np

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render  # noqa: E402
import runs as runs_mod  # noqa: E402

try:
    from skimage.measure import marching_cubes
except ImportError:  # the run path does not install it; ./build.sh figures does
    marching_cubes = None


def density_grid(x, spacing, radius=2.0, cell=0.5):
    """The particles spread on a grid: (field, origin, step)."""
    r, h = radius * spacing, cell * spacing
    origin = x.min(axis=0) - r - 2 * h
    dims = np.ceil((x.max(axis=0) + r + 2 * h - origin) / h).astype(int) + 1
    field = np.zeros(dims)
    base = np.floor((x - origin) / h).astype(int)
    reach = int(np.ceil(r / h)) + 1
    offsets = np.arange(-reach + 1, reach + 1)
    for ox in offsets:
        for oy in offsets:
            for oz in offsets:
                node = base + (ox, oy, oz)
                d2 = (((node * h + origin) - x) ** 2).sum(axis=1) / (r * r)
                near = d2 < 1
                if near.any():
                    w = (1 - d2[near]) ** 3
                    n = node[near]
                    np.add.at(field, (n[:, 0], n[:, 1], n[:, 2]), w)
    return field, origin, h


def interior_density(field, origin, h, x):
    """The density deep inside: the 90th percentile of the field at the particles (trilinear)."""
    g = (x - origin) / h
    i = np.floor(g).astype(int)
    t = g - i
    v = np.zeros(len(x))
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                wgt = (t[:, 0] if dx else 1 - t[:, 0]) * (t[:, 1] if dy else 1 - t[:, 1]) * (t[:, 2] if dz else 1 - t[:, 2])
                v += wgt * field[i[:, 0] + dx, i[:, 1] + dy, i[:, 2] + dz]
    return float(np.percentile(v, 90))


def surface(x, spacing, level=0.5, radius=2.0, cell=0.5):
    """Vertices (V, 3), triangles (F, 3) and vertex normals (V, 3) of one object's surface."""
    if marching_cubes is None:
        sys.exit("surface.py needs scikit-image (Debian: apt-get install python3-skimage; ./build.sh figures installs it)")
    field, origin, h = density_grid(x, spacing, radius, cell)
    rho = interior_density(field, origin, h, x)
    verts, faces, normals, _ = marching_cubes(field, level * rho, spacing=(h, h, h), gradient_direction="descent")
    # wound counter-clockwise seen from outside, the way the normals point (where the density falls)
    return verts + origin, faces[:, ::-1].astype(np.int64), normals


def frame_surface(f, t, a):
    """Every object's surface at frame t, one mesh: vertices, faces, normals, the object of each face."""
    x = f["frames/positions"][t]
    obj = f["rest/object"][()]
    spacing = np.atleast_1d(f.attrs.get("object_spacing", 0.1))
    V, F, N, O = [], [], [], []
    count = 0
    for k in np.unique(obj):
        s = float(spacing[k]) if k < len(spacing) and spacing[k] > 0 else float(spacing.max())
        v, fc, n = surface(x[obj == k], s, a.level, a.radius, a.cell)
        V.append(v)
        F.append(fc + count)
        N.append(n)
        O.append(np.full(len(fc), k, np.int32))
        count += len(v)
    return np.concatenate(V), np.concatenate(F), np.concatenate(N), np.concatenate(O)


def write_ply(path, verts, faces, normals, objects):
    header = ("ply\nformat binary_little_endian 1.0\ncomment csm surface: density level set, marching cubes\n"
              f"element vertex {len(verts)}\nproperty float x\nproperty float y\nproperty float z\n"
              "property float nx\nproperty float ny\nproperty float nz\n"
              f"element face {len(faces)}\nproperty list uchar int vertex_indices\nproperty int object\nend_header\n")
    vert = np.hstack([verts, normals]).astype("<f4")
    face = np.zeros(len(faces), dtype=[("n", "u1"), ("v", "<i4", 3), ("o", "<i4")])
    face["n"], face["v"], face["o"] = 3, faces, objects
    with open(path, "wb") as out:
        out.write(header.encode("ascii"))
        out.write(vert.tobytes())
        out.write(face.tobytes())


def write_obj(path, verts, faces, normals, objects):
    with open(path, "w") as out:
        out.write("# csm surface: density level set, marching cubes\n")
        out.writelines("v %.7g %.7g %.7g\n" % tuple(v) for v in verts)
        out.writelines("vn %.7g %.7g %.7g\n" % tuple(n) for n in normals)
        for k in np.unique(objects):
            out.write(f"g object{k}\n")
            out.writelines("f %d//%d %d//%d %d//%d\n" % (a + 1, a + 1, b + 1, b + 1, c + 1, c + 1)
                           for a, b, c in faces[objects == k])


def read_ply(path):
    """Vertices, faces and objects of a PLY this script wrote (for tests and other scripts)."""
    with open(path, "rb") as src:
        data = src.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    head = data[:end].decode("ascii").split("\n")
    nv = int(next(line for line in head if line.startswith("element vertex")).split()[2])
    nf = int(next(line for line in head if line.startswith("element face")).split()[2])
    vert = np.frombuffer(data, "<f4", nv * 6, end).reshape(nv, 6)
    face = np.frombuffer(data, [("n", "u1"), ("v", "<i4", 3), ("o", "<i4")], nf, end + nv * 24)
    return vert[:, :3].astype(float), face["v"].astype(np.int64), face["o"].copy()


def draw(f, t, verts, faces, normals, a, path, limits):
    """The surface seen along the view, lit from the viewer's upper left, painter's order."""
    xy, depth = render.project(verts, a.view)
    tri = xy[faces]
    n = normals[faces].mean(axis=1)  # outward: the density falls along them
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
    toward = render.project(np.eye(3), a.view)[1]  # depth of each axis direction: the view direction
    light = toward + np.array([-0.4, 0.6, 0.2])
    light /= np.linalg.norm(light)
    shade = 0.35 + 0.65 * np.clip(n @ light, 0, 1)
    order = np.argsort(depth[faces].mean(axis=1))
    colour = np.outer(shade, [0.55, 0.7, 0.9])
    lo, hi, grounds = limits
    span = hi - lo
    fig = plt.figure(figsize=(a.size, max(1.5, a.size * span[1] / span[0])))
    ax = fig.add_axes([0.02, 0.02, 0.96, 0.9])
    # edges in the face colour: no seams between the triangles
    ax.add_collection(PolyCollection(tri[order], facecolors=colour[order], edgecolors=colour[order], linewidths=0.3))
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal")
    ax.axis("off")
    for kind, at in grounds:
        (ax.axhline if kind == "h" else ax.axvline)(at, color="0.35", linewidth=1.2, zorder=0)
    bar = render.nice_length(span[0])
    x0, y0 = lo[0] + 0.04 * span[0], hi[1] - 0.06 * span[1]
    ax.plot([x0, x0 + bar], [y0, y0], color="black", linewidth=2, solid_capstyle="butt")
    ax.text(x0 + bar / 2, y0 + 0.015 * span[1], f"{bar:g} m", ha="center", va="bottom", fontsize=8)
    ax.set_title(f"{f.attrs.get('name', '')}  t = {f['frames/time'][t]:.2f} s  (surface, {len(faces)} triangles)", fontsize=9)
    fig.savefig(path, dpi=a.dpi)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--frames", default="0,-1", help="comma-separated frames (negative from the end)")
    ap.add_argument("--every", type=int, help="every K-th frame instead of --frames")
    ap.add_argument("--format", choices=("ply", "obj"), default="ply")
    ap.add_argument("-o", "--output", help="prefix of the files")
    ap.add_argument("--png", action="store_true", help="also draw each surface as PREFIX_FRAME.png")
    ap.add_argument("--view", default="xy", choices=sorted(render.VIEWS) + ["iso"])
    ap.add_argument("--level", type=float, default=0.5, help="level set, a fraction of the interior density")
    ap.add_argument("--radius", type=float, default=2.0, help="kernel radius in sampling spacings")
    ap.add_argument("--cell", type=float, default=0.5, help="grid cell in sampling spacings")
    ap.add_argument("--size", type=float, default=6.0, help="picture width in inches")
    ap.add_argument("--dpi", type=int, default=120)
    a = ap.parse_args(argv)
    with h5py.File(a.log, "r") as f:
        T = f["frames/time"].shape[0]
        name = str(f.attrs.get("name", os.path.splitext(os.path.basename(a.log))[0]))
        prefix = a.output or os.path.join("out", "surface", name)
        frames = list(range(0, T, a.every)) if a.every else [runs_mod.frame_index(f, s) for s in a.frames.split(",")]
        folder = os.path.dirname(prefix)
        if folder:
            os.makedirs(folder, exist_ok=True)
        meshes = {t: frame_surface(f, t, a) for t in frames}
        if a.png:  # the same limits for every picture, the ground included
            pts = [render.project(meshes[t][0], a.view)[0] for t in frames]
            pad = 0.05 * max(np.ptp(np.concatenate(pts), axis=0))
            lo = np.min([p.min(axis=0) for p in pts], axis=0) - pad
            hi = np.max([p.max(axis=0) for p in pts], axis=0) + pad
            grounds = render.ground_lines(f, a.view)
            for kind, at in grounds:
                k = 1 if kind == "h" else 0
                lo[k], hi[k] = min(lo[k], at - pad), max(hi[k], at + pad)
            hi[1] += 0.1 * (hi[1] - lo[1])
        for t in frames:
            verts, faces, normals, objects = meshes[t]
            path = f"{prefix}_{t:05d}.{a.format}"
            (write_ply if a.format == "ply" else write_obj)(path, verts, faces, normals, objects)
            print(path)
            if a.png:
                draw(f, t, verts, faces, normals, a, f"{prefix}_{t:05d}.png", (lo, hi, grounds))
                print(f"{prefix}_{t:05d}.png")


if __name__ == "__main__":
    main()
