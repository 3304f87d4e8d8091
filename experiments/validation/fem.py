"""CalculiX (ccx) models of the validation cases: a structured C3D20R mesh of a box, its input
deck, the solver run and the displacements read back. Each case of run.py builds its deck here
from the same geometry, material and load as its csm config (run.py)."""
import os
import re
import shutil
import subprocess

import numpy as np

# C3D20(R) node order (CalculiX manual, element C3D20): the 8 corners, then the midside nodes of
# the edges 1-2, 2-3, 3-4, 4-1, 5-6, 6-7, 7-8, 8-5, 1-5, 2-6, 3-7, 4-8.
CORNERS = [(0, 0, 0), (2, 0, 0), (2, 2, 0), (0, 2, 0), (0, 0, 2), (2, 0, 2), (2, 2, 2), (0, 2, 2)]
EDGES = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4), (0, 4), (1, 5), (2, 6), (3, 7)]


def box_mesh(lo, hi, cells):
    """Nodes (N, 3) and C3D20 elements (E, 20), 1-based, of the box [lo, hi] cut into cells."""
    lo, hi, cells = np.asarray(lo, float), np.asarray(hi, float), np.asarray(cells, int)
    shape = 2 * cells + 1  # the half-cell lattice holds every corner and midside node
    ids = -np.ones(shape, int)
    nodes = []
    for e in np.ndindex(*cells):
        base = 2 * np.array(e)
        for c in CORNERS:
            ids[tuple(base + c)] = 0
        for a, b in EDGES:
            ids[tuple(base + (np.array(CORNERS[a]) + CORNERS[b]) // 2)] = 0
    for idx in zip(*np.nonzero(ids == 0)):
        ids[idx] = len(nodes) + 1
        nodes.append(lo + (hi - lo) * np.array(idx) / (shape - 1))
    elems = []
    for e in np.ndindex(*cells):
        base = 2 * np.array(e)
        conn = [ids[tuple(base + c)] for c in CORNERS]
        conn += [ids[tuple(base + (np.array(CORNERS[a]) + CORNERS[b]) // 2)] for a, b in EDGES]
        elems.append(conn)
    return np.array(nodes), np.array(elems)


def write_list(f, ids, per=16):
    ids = list(ids)
    for k in range(0, len(ids), per):
        f.write(", ".join(str(i) for i in ids[k:k + per]) + "\n")


def deck(path, nodes, elems, young, poisson, density, sets, steps, element="C3D20R", material="elastic"):
    """Write a ccx input deck: the mesh, node sets {name: ids}, the material, and the step texts.
    material "elastic" is *ELASTIC (St Venant-Kirchhoff under NLGEOM); "neo_hookean" is
    *HYPERELASTIC, NEO HOOKE with C10 = mu / 2 and D1 = 2 / kappa, the energy
    C10 (J^-2/3 I1 - 3) + (J - 1)^2 / D1 of csm's solver.material neo_hookean."""
    with open(path, "w") as f:
        f.write("*NODE, NSET=NALL\n")
        for i, p in enumerate(nodes, 1):
            f.write(f"{i}, {p[0]:.12g}, {p[1]:.12g}, {p[2]:.12g}\n")
        f.write(f"*ELEMENT, TYPE={element}, ELSET=EALL\n")
        for i, e in enumerate(elems, 1):
            f.write(f"{i}, " + ", ".join(str(n) for n in e[:15]) + ",\n" + ", ".join(str(n) for n in e[15:]) + "\n")
        for name, ids in sets.items():
            f.write(f"*NSET, NSET={name}\n")
            write_list(f, ids)
        if material == "neo_hookean":
            mu, kappa = young / (2 * (1 + poisson)), young / (3 * (1 - 2 * poisson))
            law = f"*HYPERELASTIC, NEO HOOKE\n{mu / 2:.12g}, {2 / kappa:.12g}\n"
        else:
            law = f"*ELASTIC\n{young:.12g}, {poisson:.12g}\n"
        f.write("*MATERIAL, NAME=M\n" + law + f"*DENSITY\n{density:.12g}\n")
        f.write("*SOLID SECTION, ELSET=EALL, MATERIAL=M\n")
        for s in steps:
            f.write(s)


def run(workdir, job):
    """Run ccx on workdir/job.inp; the .dat text it wrote."""
    ccx = shutil.which("ccx")
    if not ccx:
        raise SystemExit("fem.py: CalculiX (ccx, Debian package calculix-ccx) is not installed; ./build.sh figures installs it")
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    r = subprocess.run([ccx, "-i", job], cwd=workdir, capture_output=True, text=True, env=env)
    dat = os.path.join(workdir, job + ".dat")
    if r.returncode != 0 or not os.path.exists(dat):
        raise SystemExit(f"fem.py: ccx failed on {workdir}/{job}.inp:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    with open(dat) as f:
        return f.read()


def dat_blocks(text, what):
    """Every block of the .dat file whose header starts with `what` ("displacements",
    "eigenvalue"): a list of (header, rows), rows as lists of numbers."""
    blocks, cur = [], None
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if re.match(r"^[a-zA-Z]", s):
            cur = None
            if s.lower().startswith(what):
                cur = (s, [])
                blocks.append(cur)
            continue
        if cur is not None:
            try:
                cur[1].append([float(t) for t in s.replace("D", "E").split()])
            except ValueError:
                cur = None
    return blocks


def displacements(text):
    """{node: (ux, uy, uz)} of the last displacement block of a .dat file."""
    blocks = dat_blocks(text, "displacements")
    if not blocks:
        raise SystemExit("fem.py: no displacements in the .dat file")
    return {int(r[0]): np.array(r[1:4]) for r in blocks[-1][1]}


def eigenfrequencies(text):
    """The frequencies (Hz) of a *FREQUENCY step, in the order of the .dat's eigenvalue output."""
    out, on = [], False
    for line in text.splitlines():
        if "E I G E N V A L U E   O U T P U T" in line:
            on = True
            continue
        if not on:
            continue
        t = line.split()
        if len(t) == 5 and t[0].isdigit():
            out.append(float(t[3].replace("D", "E")))
        elif out and t and not t[0].isdigit():
            break
    if not out:
        raise SystemExit("fem.py: no eigenvalue output in the .dat file")
    return out
