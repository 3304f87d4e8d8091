/* The plasticity model of Jones et al. 2016 in the form Falkenstein et al. 2017 give it
   (Sec 2.3.1, Falkenstein Eq 9-16), with three corrections (the second is in docs/DESIGN.md's errata):

   - Falkenstein Eq 12 prints F^p <- (F*)^gamma V F^p. With F^e = U Sigma V^T the step that moves the rest
     shape towards the current one is (F*)^gamma V^T F^p: then F (F^p_new)^-1 = U Sigma (F*)^-gamma,
     which for gamma = 1 is a rotation times a uniform scale, the elastic part left after all
     volume-preserving deformation flowed. With V instead of V^T that only holds when V is
     symmetric.
   - Falkenstein Eq 13's fraction goes negative once lambda + K alpha exceeds nu |F* - I|; it is clamped to
     [0, 1] (a negative fraction would flow backwards).
   - Falkenstein Eq 14 integrates |F^e - I|, which grows for a cluster that is merely rotated (a body at rest
     turned by 90 degrees accumulates 2 per second and hardens). The default measures
     |F^e - R| = |Sigma - I|, the stretch alone; `stress_measure: paper` keeps the printed form.

   With the papers' coupled goals R F^p p (solver.volume: coupled) the flow is not dissipative:
   as F^p flattens a cluster at constant det, tr(F^p A_rr F^pT) grows, so the same volume deficit
   stores more energy, and the push that restores it acts along the cluster's long axes. The
   default with plasticity is solver.volume: split (core/kernel/volume.c): shape springs towards the best
   similarity s R F^p p and the volume held by its own constraint, which the flow cannot change.
   On top, the energy guard (energy_guard, default on) halves a flow step until it does not raise
   the cluster's stored energy, with the explicit step's lag (csm_diag.elastic_lag), at the
   step's positions and velocities; what the flow releases is /diagnostics/dissipated_plastic.
   Measured on beam_compress_embedded.yaml over 4 s without viscosity: coupled goals, guarded on
   the stored energy alone, create 116 J through the lag (dissipated_plastic -116 J, energy 1.46 of
   the work given); split goals with this guard release 38 J and hold 0.82 of the work. `cond_limit` bounds the anisotropy F^p may reach, the way
   Falkenstein's reclustering bounds it by replacing clusters; by default there is no limit.

   The rotation from F^e (Falkenstein Eq 15) and the goals R F^p p + x-bar (Eq 16) are in the shared kernel,
   so every integrator and both rotation plugins see F^p. */
#include "plasticity.h"

#include "csm_math.h"
#include "kernel.h"
#include "plugin.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

csm_flow_result csm_plastic_flow(const csm_flow_params *p, csm_svd3_fn svd, const double F[9], double h, double scale,
                                 double Fp[9], double *alpha)
{
    double Fp_inv[9], Fe[9], U[9], s[3], V[9];
    if (csm_m3_inverse(Fp, Fp_inv) == 0.0) return CSM_FLOW_SKIPPED;
    csm_m3_mul(F, Fp_inv, Fe); /* Falkenstein Eq 9 */
    svd(Fe, U, s, V);          /* Falkenstein Eq 5: signed, so U and V are rotations and s[2] < 0 when inverted */
    if (!isfinite(s[0] + s[1] + s[2]) || s[2] < p->min_stretch) return CSM_FLOW_SKIPPED;

    /* Falkenstein Eq 14, explicit Euler with the state before this step's flow */
    double measure;
    if (p->stress_measure == CSM_STRESS_PAPER) {
        double D[9];
        memcpy(D, Fe, sizeof D);
        D[0] -= 1.0;
        D[4] -= 1.0;
        D[8] -= 1.0;
        measure = csm_m3_frobenius(D);
    } else {
        measure = sqrt((s[0] - 1) * (s[0] - 1) + (s[1] - 1) * (s[1] - 1) + (s[2] - 1) * (s[2] - 1));
    }
    double alpha_old = *alpha;
    *alpha += h * measure;

    double d = cbrt(s[0] * s[1] * s[2]), star[3]; /* Falkenstein Eq 10 */
    for (int a = 0; a < 3; a++) star[a] = s[a] / d;
    double dev = sqrt((star[0] - 1) * (star[0] - 1) + (star[1] - 1) * (star[1] - 1) + (star[2] - 1) * (star[2] - 1));
    /* Falkenstein Eq 11; F* = I to round-off has no shape to flow to (its V would be an arbitrary rotation) */
    if (!(dev > p->yield) || dev < 64 * DBL_EPSILON) return CSM_FLOW_ELASTIC;
    double gamma = (p->flow_rate * dev - p->yield - p->hardening * alpha_old) / dev; /* Falkenstein Eq 13 */
    if (!(gamma > 0.0)) return CSM_FLOW_ELASTIC;
    if (gamma > 1.0) gamma = 1.0;
    gamma *= scale;

    /* Falkenstein Eq 12 (V^T, see above): row a of V^T F^p scaled by (F*_a)^gamma */
    double Vt_Fp[9], next[9];
    csm_m3_mul_at(V, Fp, Vt_Fp);
    for (int a = 0; a < 3; a++) {
        double scale = pow(star[a], gamma);
        for (int b = 0; b < 3; b++) next[3 * a + b] = scale * Vt_Fp[3 * a + b];
    }
    /* det F^p is 1 in exact arithmetic (det F* = 1, det V = 1); dividing out the round-off keeps
       it there over millions of steps */
    double det = csm_m3_det(next);
    if (!(det > 0.0) || !isfinite(det)) return CSM_FLOW_SKIPPED;
    double norm = 1.0 / cbrt(det);
    for (int a = 0; a < 9; a++) next[a] *= norm;
    if (p->cond_limit > 0) { /* a step that would raise cond(F^p) beyond the limit is not taken */
        double Un[9], sn[3], Vn[9], Uo[9], so[3], Vo[9];
        svd(next, Un, sn, Vn);
        svd(Fp, Uo, so, Vo);
        if (sn[0] > p->cond_limit * sn[2] && sn[0] * so[2] > so[0] * sn[2]) return CSM_FLOW_ELASTIC;
    }
    memcpy(Fp, next, sizeof next);
    return CSM_FLOW_YIELDED;
}

static const csm_param_spec jones2016_params[] = {
    CSM_P_REAL(csm_flow_params, yield, 0.1, 0, 1e6, "lambda: |F* - I|_F below which deformation stays elastic (Falkenstein Eq 11)"),
    CSM_P_REAL(csm_flow_params, flow_rate, 1.0, 0, 1e6,
               "nu: fraction of the deformation beyond yield that flows per step (Falkenstein Eq 13)"),
    CSM_P_REAL(csm_flow_params, hardening, 0.0, -1e6, 1e6,
               "K: work hardening (negative: softening) per unit of cumulative stress (Falkenstein Eq 13)"),
    CSM_P_REAL(csm_flow_params, min_stretch, 1e-3, 1e-12, 1,
               "smallest singular value of F^e that still flows; below it (collapsed or inverted cluster) the step "
               "is skipped and counted in /diagnostics/plastic_skipped"),
    CSM_P_REAL(csm_flow_params, cond_limit, 0, 0, 1e12,
               "largest condition number F^p may flow to (0: no limit); flow that would raise cond(F^p) above it "
               "is not taken"),
    CSM_P_ENUM(csm_flow_params, stress_measure, CSM_STRESS_STRETCH, "stretch|paper",
               "cumulative stress rate (Falkenstein Eq 14): stretch |F^e - R|_F (rotation-free) or paper |F^e - I|_F as printed"),
    CSM_P_BOOL(csm_flow_params, energy_guard, 1,
               "a flow step that would raise the cluster's stored elastic energy (with the explicit step's lag) at the "
               "step's positions and velocities is halved until it does not (at most 12 times, then not taken), so flow "
               "only releases energy; false: Falkenstein Eq 12-13 as printed"),
    CSM_P_ENUM(csm_flow_params, update, CSM_UPDATE_IMMEDIATE, "immediate|lagged",
               "when a step's flow takes effect: immediate (the next step's goals see it) or lagged (one step later, "
               "the order of the authors' code: a hidden viscosity, whose work dissipated_plastic shows)"),
    CSM_PARAM_END,
};

static int jones2016_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    csm_flow_params *p = malloc(sizeof *p);
    if (!p) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *p = *(const csm_flow_params *)csm_cfg_params(cfg);
    *state = p;
    return 0;
}

/* The guard halves a step at most this often; a step still raising the energy is not taken. */
#define GUARD_HALVINGS 12

/* Cluster c's flow at the positions x: one step of the flow rule from the deformation gradient
   F (Falkenstein Eq 3) of its fit at x, or with update lagged from the F its fit had a step
   earlier, and, with the energy guard, the stored energy before and after at these positions
   (csm_cluster_stored): a step that raises it is halved until it does not, so that plastic flow
   only ever releases stored energy. Returns the energy the flow released, with the explicit
   step's lag (csm_diag.elastic_lag) that the goals' change moves: the energy budget's share. */
static double flow_cluster(const csm_flow_params *p, csm_world *w, int32_t c, double h, int32_t *skipped)
{
    csm_clusters *C = &w->C;
    csm_fixed_fit fit;
    csm_cluster_fixed_fit(C, w->P.x, w->P.v, c, &fit);
    const double *F = fit.F;
    double lagged[9];
    if (p->update == CSM_UPDATE_LAGGED) { /* the flow of the last step's end takes effect; this one's waits */
        memcpy(lagged, &C->F_lagged[9 * c], sizeof lagged);
        memcpy(&C->F_lagged[9 * c], fit.F, sizeof lagged);
        if (isnan(lagged[0])) return 0.0; /* a new cluster: no step to commit yet */
        F = lagged;
    }
    double *Fp = &C->Fp[9 * c], next[9], alpha = C->stress_alpha[c];
    memcpy(next, Fp, sizeof next);
    csm_flow_result r = csm_plastic_flow(p, w->svd, F, h, 1.0, next, &alpha);
    C->stress_alpha[c] = alpha; /* Falkenstein Eq 14 integrates the stress whether or not F^p flows */
    if (r == CSM_FLOW_SKIPPED) (*skipped)++;
    if (r != CSM_FLOW_YIELDED) return 0.0;
    const double *q = &C->q[4 * c];
    double lag0, lag1, before = csm_cluster_stored(w, c, &fit, Fp, q, h, &lag0);
    double after = csm_cluster_stored(w, c, &fit, next, q, h, &lag1), scale = 1.0;
    for (int k = 0; p->energy_guard && !(after + lag1 <= before + lag0) && k < GUARD_HALVINGS; k++) {
        scale *= 0.5;
        double a = 0;
        memcpy(next, Fp, sizeof next);
        if (csm_plastic_flow(p, w->svd, F, h, scale, next, &a) != CSM_FLOW_YIELDED) return 0.0;
        after = csm_cluster_stored(w, c, &fit, next, q, h, &lag1);
    }
    if (p->energy_guard && !(after + lag1 <= before + lag0)) return 0.0;
    memcpy(Fp, next, sizeof next);
    C->flowed[c]++;
    csm_cluster_width(C, c); /* the strain limit's radius follows the plastic rest shape */
    double released = (before + lag0) - (after + lag1);
    return isfinite(released) ? released : 0.0;
}

/* After the step's dynamics: every cluster with a volume (rank 3) of the objects in scope
   (csm_world.scope) flows independently, those fading out included (under the same guard). A planar or collinear cluster has no F^e in the
   missing directions and never flows. */
static int jones2016_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)err;
    const csm_flow_params *p = state;
    const csm_clusters *C = &w->C;
    int32_t k = C->k, skipped = 0;
    double part[CSM_SUM_BLOCKS] = {0};
#pragma omp parallel for schedule(static) reduction(+ : skipped)
    for (int b = 0; b < CSM_SUM_BLOCKS; b++) {
        double sum = 0;
        for (int32_t c = csm_block_start(k, b); c < csm_block_start(k, b + 1); c++)
            if (C->rank[c] == 3 && csm_cluster_in_scope(w, c)) sum += flow_cluster(p, w, c, h, &skipped);
        part[b] = sum;
    }
    w->report->plastic_skipped += skipped;
    w->report->dissipated[CSM_DISSIPATED_PLASTIC] += csm_block_total(part);
    return 0;
}

static int jones2016_lagged(const void *params)
{
    return ((const csm_flow_params *)params)->update == CSM_UPDATE_LAGGED;
}

const csm_plasticity csm_plasticity_jones2016 = {
    .version = 3,
    .name = "jones2016",
    .summary = "Jones 2016 / Falkenstein 2017 Eq 9-14: F^p flows towards F^e's volume-preserving shape",
    .params = jones2016_params,
    .create = jones2016_create,
    .apply = jones2016_apply,
    .destroy = free,
    .lagged = jones2016_lagged,
};
