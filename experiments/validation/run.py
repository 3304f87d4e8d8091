"""The validation suite: each case is a csm config and a CalculiX (ccx) model of the same
geometry, material and load; this runs both and writes a table of csm against the finite-element
answer. Run: make validation (or python3 experiments/validation/run.py --csm build/csm -o DIR).

Cases so far: the cantilever of cantilever.yaml (tip deflection under gravity) across cluster
counts, with the energy of each run named: continuum (the default) and goals (the papers')."""
import argparse
import os
import subprocess
import sys

import h5py
import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fem  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def cantilever_fem(cfg, work, cells=4):
    """CalculiX's tip deflection (mean u_y of the free face) of the beam cantilever.yaml holds:
    x in [0, L] clamped at x = 0, the cross-section of the box, gravity, C3D20R."""
    box = cfg["objects"][0]["shape"]["size"]
    centre = cfg["objects"][0]["position"]
    L = centre[0] + box[0] / 2
    hy, hz = box[1] / 2, box[2] / 2
    s = cfg["solver"]
    E, nu, rho = float(s["young"]), float(s.get("poisson", 0)), float(cfg["objects"][0]["density"])
    n = cells
    nodes, el = fem.box_mesh([0, -hy, -hz], [L, hy, hz], [int(round(L / (2 * hy) * n)), n, n])
    clamp = np.nonzero(np.abs(nodes[:, 0]) < 1e-9)[0] + 1
    tip = np.nonzero(np.abs(nodes[:, 0] - L) < 1e-9)[0] + 1
    step = ("*STEP\n*STATIC\n*BOUNDARY\nCLAMP, 1, 3, 0.\n*DLOAD\nEALL, GRAV, 9.81, 0., -1., 0.\n"
            "*NODE PRINT, NSET=TIP\nU\n*END STEP\n")
    os.makedirs(work, exist_ok=True)
    fem.deck(os.path.join(work, "cantilever.inp"), nodes, el, E, nu, rho, {"CLAMP": clamp, "TIP": tip}, [step])
    d = fem.displacements(fem.run(work, "cantilever"))
    return float(np.mean([d[i][1] for i in tip]))


def csm_tip(csm, config, out, sets):
    cmd = [csm, "run", config, "-o", out, "--force"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with h5py.File(out, "r") as f:
        r = f["rest/positions"][:]
        x = f["frames/positions"][-1]
        tip = np.abs(r[:, 0] - r[:, 0].max()) < 1e-9
        return float(np.mean(x[tip, 1] - r[tip, 1])), float(np.mean(x[tip, 2] - r[tip, 2]))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csm", default="build/csm")
    ap.add_argument("-o", "--out", default="out/validation")
    ap.add_argument("--clusters", default="32,64,128")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    config = os.path.join(HERE, "cantilever.yaml")
    with open(config) as f:
        cfg = yaml.safe_load(f)
    ref = cantilever_fem(cfg, os.path.join(args.out, "ccx"))
    finer = cantilever_fem(cfg, os.path.join(args.out, "ccx_fine"), cells=6)
    rows = [f"| case | energy | clusters | csm tip (m) | sideways (m) | CalculiX (m) | csm / FEM |",
            "|---|---|---|---|---|---|---|"]
    for energy in ("continuum", "goals"):
        for c in args.clusters.split(","):
            log = os.path.join(args.out, f"cantilever_{energy}_{c}.h5")
            tip, side = csm_tip(args.csm, config, log, [f"clustering.count={c}", f"solver.energy={energy}"])
            rows.append(f"| cantilever | {energy} | {c} | {tip:.5f} | {side:.2e} | {ref:.5f} | {tip / ref:.3f} |")
            print(rows[-1], flush=True)
    text = ("# Validation against CalculiX\n\n"
            f"CalculiX C3D20R: {ref:.6f} m (4 elements across), {finer:.6f} m (6 across).\n\n" + "\n".join(rows) + "\n")
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
