#!/usr/bin/env bash
# The plasticity experiments (docs/experiments.md), judged by experiments/analysis/plasticity.py:
# the plastic bunny keeps a dent the elastic one does not, within its energy budget, with
# cond(F^p) held at its limit; the lambda = 0.1 compressed beam (Falkenstein 2017 Sec 4) keeps a
# plastic set and creates no energy; both keep det F^p = 1; the logs carry the plasticity datasets.
source "$(dirname "$0")/lib.sh" "$@"
set -e # a command that fails ends the test; the checks count and finish reports
"$root/data/fetch_meshes.sh" --check
"$csm" run "$root/experiments/configs/plastic_bunny.yaml" -o "$tmp/plastic.h5" >/dev/null
"$csm" run "$root/experiments/configs/plastic_bunny.yaml" -o "$tmp/elastic.h5" --set plasticity.model=none >/dev/null 2>&1
"$csm" run "$root/experiments/configs/beam_compress_elastic.yaml" -o "$tmp/beam.h5" >/dev/null
PYTHONPATH="$root/experiments/analysis" pylog "$tmp" <<'PY'
import sys
import h5py
import numpy as np
from plasticity import analyse, table

tmp = sys.argv[1]
from logcheck import check, finish

plastic, elastic, beam = (analyse(f"{tmp}/{name}.h5") for name in ("plastic", "elastic", "beam"))
print(table([plastic, elastic, beam]))
check(plastic["set"] > 2 * elastic["set"], "the plastic bunny keeps a dent: set %.3f m, elastic %.3f m" % (plastic["set"], elastic["set"]))
check(plastic["energy"] <= 1 + 1e-9 and elastic["energy"] <= 1 + 1e-9, "the bunnies create no energy (%.3g, %.3g)" % (plastic["energy"], elastic["energy"]))
check(1.5 < plastic["cond"] <= 2 + 1e-9, "cond(F^p) reaches its limit 2 and stays there (%.6g)" % plastic["cond"])
check(beam["stable"] and beam["energy"] < 1, "the lambda = 0.1 beam is stable (energy %.3g of what the force gave)" % beam["energy"])
check(beam["Lend"] < beam["L0"] - 0.2, "the beam keeps a plastic set: %.2f m of %.2f m" % (beam["Lend"], beam["L0"]))
check(beam["Lrel"] < beam["Lend"], "the beam springs back in part after release (%.2f -> %.2f m)" % (beam["Lrel"], beam["Lend"]))
for r, name in ((plastic, "bunny"), (beam, "beam")):
    check(abs(r["det"][0] - 1) < 1e-12 and abs(r["det"][1] - 1) < 1e-12, name + ": mean det F^p = 1")
    check(r["yielded"] > 0 and r["skipped"] == 0, name + ": clusters yielded, none skipped")
with h5py.File(f"{tmp}/beam.h5", "r") as f:
    T = f["frames/time"].shape[0]
    k = f["clusters/count"][:]
    cv, vc = f["clusters/cluster_version"][:], f["clusters/version_clusters"][:]
    check(cv.shape == (T,) and (np.diff(cv) >= 0).all() and (np.diff(cv) <= 1).all() and vc[-1] == f["clusters/Fp"].shape[0]
          and f["clusters/stress_alpha"].shape == (vc[-1],) and all(vc[v + 1] - vc[v] == k[t] for t, v in enumerate(cv)),
          "/clusters/Fp and /clusters/stress_alpha: k rows per version of the slow state (%d versions, %d frames)" % (len(vc) - 1, T))
    for name in ("max_cond_Fp", "yielded", "plastic_skipped", "volume_ratio"):
        check(f["diagnostics/" + name].shape == (T,), "/diagnostics/" + name + " (T,)")
    check(np.allclose(np.linalg.det(f["clusters/Fp"][:]), 1, atol=1e-12), "every logged F^p has det 1")
    alpha = f["clusters/stress_alpha"][vc[cv[-1]]:vc[cv[-1] + 1]]
    check((alpha > 0).all(), "cumulative stress alpha grew in every cluster")
finish()
PY
echo "plastic experiments: ok"
finish
