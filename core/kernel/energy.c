/* The energy a cluster stores: its fit at fixed goals, its springs' (or the continuum's) energy and the
   explicit step's lag. */

#include "kernel_internal.h"
#include "elastic.h"

/* A block of 8 members' shares of csm_cluster_fixed_fit's sums: sum w m |x - xbar|^2,
   sum w m (x - xbar) . v and sum w m v p^T (9). */
static inline __attribute__((always_inline)) void fixed_block(const double *restrict x, const double *restrict v,
                                                               const int32_t *m, const double *pp, const double *wmass,
                                                               csm_v8d keep, const double com[3], csm_v8d acc[11])
{
    const double *qx[CSM_LANES], *qv[CSM_LANES];
    csm_v8d pv[3], wm = csm_v8d_load(wmass) * keep;
    csm_v8d_load3(pp, pv);
    csm_v8d_rows(x, m, qx);
    csm_v8d_rows(v, m, qv);
    csm_v8d d0 = csm_v8d_at(qx, 0) - com[0], d1 = csm_v8d_at(qx, 1) - com[1], d2 = csm_v8d_at(qx, 2) - com[2];
    csm_v8d v0 = csm_v8d_at(qv, 0), v1 = csm_v8d_at(qv, 1), v2 = csm_v8d_at(qv, 2);
    csm_v8d wv0 = wm * v0, wv1 = wm * v1, wv2 = wm * v2;
    acc[0] += wm * (d0 * d0 + d1 * d1 + d2 * d2);
    acc[1] += wm * (d0 * v0 + d1 * v1 + d2 * v2);
    acc[2] += wv0 * pv[0];
    acc[3] += wv0 * pv[1];
    acc[4] += wv0 * pv[2];
    acc[5] += wv1 * pv[0];
    acc[6] += wv1 * pv[1];
    acc[7] += wv1 * pv[2];
    acc[8] += wv2 * pv[0];
    acc[9] += wv2 * pv[1];
    acc[10] += wv2 * pv[2];
}

/* The member sums of csm_cluster_fixed_fit, in lanes (MEMBER_LANES). */
CSM_CLONES static void fixed_sums(const csm_clusters *C, const double *x, const double *v, int32_t c,
                                  const double com[3], double out[11])
{
    csm_v8d z = csm_v8d_set1(0.0), acc[16] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
#define FIXED(m, pp, wm, keep, o) fixed_block(x, v, m, pp, wm, keep, com, acc)
    MEMBER_LANES(C->member, C->p, C->wmass, C->offset[c], C->offset[c + 1], FIXED);
#undef FIXED
    csm_v8d_sums(acc, 11, out);
}

void csm_cluster_fixed_fit(const csm_clusters *C, const double *x, const double *v, int32_t c, csm_fixed_fit *f)
{
    double com[3], s[11];
    csm_cluster_moments(C, x, c, com, f->Axr);
    csm_m3_mul(f->Axr, &C->A_rr_inv[9 * c], f->F); /* Falkenstein Eq 3 */
    fixed_sums(C, x, v, c, com, s);
    memcpy(f->com, com, sizeof com);
    f->x = x;
    f->v = v;
    f->S = s[0];
    f->Q = -s[1];
    memcpy(f->Avp, &s[2], sizeof f->Avp);
}

/* The goals' transform T = R F^p (with the split volume's similarity) that cluster c's fit gives
   at F and A_xr if its plastic deformation were Fp (q its rotation's warm start, not changed);
   -1 when Fp is singular. */
static int stored_rotation(const csm_world *w, const double F[9], const double Axr[9], const double Fp[9],
                           const double q[4], double R[9])
{
    double Fp_inv[9], Fe[9], Apq[9], qq[4];
    if (csm_m3_inverse(Fp, Fp_inv) == 0.0) return -1;
    csm_m3_mul(F, Fp_inv, Fe);
    csm_m3_mul_bt(Axr, Fp, Apq);
    memcpy(qq, q, sizeof qq); /* the fit's warm start, unchanged */
    csm_polar_ctx polar = {w->svd, qq};
    w->rotation->extract(&polar, Apq, Fe, R);
    return 0;
}

static int stored_transform(const csm_world *w, int32_t c, const double F[9], const double Axr[9], const double Fp[9],
                            const double q[4], double T[9])
{
    double R[9];
    if (stored_rotation(w, F, Axr, Fp, q, R)) return -1;
    csm_m3_mul(R, Fp, T);
    if (w->volume == CSM_VOLUME_SPLIT) csm_kernel_similarity(&w->C, c, Axr, Fp, T);
    return 0;
}

double csm_cluster_stored(const csm_world *w, int32_t c, const csm_fixed_fit *f, const double Fp[9], const double q[4],
                          double h, double *lag)
{
    const csm_clusters *C = &w->C;
    double T[9], A[9];
    *lag = NAN;
    if (csm_elastic_on(w)) {
        /* the continuum energy (elastic.c); a step too coarse for the stiffness scales it as the
           explicit gain's clamp does */
        double R[9], dot = 0;
        if (stored_rotation(w, f->F, f->Axr, Fp, q, R)) return NAN;
        double k = csm_kernel_modulus_stiffness(w, w->spring_modulus, c, Fp), kc = csm_spring_stiffness(w, c, Fp, h);
        double e = csm_elastic_cluster(w, c, f->x, f->v, f->com, R, Fp, w->spring_modulus, k, NULL, NULL, NULL,
                                       w->spring_capped ? &dot : NULL);
        double scale = k > 0 ? kc / k : 0.0;
        *lag = w->spring_capped ? 0.5 * h * kc * dot : 0.0;
        return e * scale;
    }
    if (stored_transform(w, c, f->F, f->Axr, Fp, q, T)) return NAN;
    /* sum w m |d - T p|^2 = S - 2 tr(T^T A_xr) + tr(T A_rr T^T), d = x - xbar, and
       sum w m (g - x) . v = tr(T^T A_vp) + sum w m (xbar - x) . v */
    cluster_arr(C, c, A);
    double TA[9], cross = 0, square = 0, dot = f->Q;
    csm_m3_mul(T, A, TA);
    for (int a = 0; a < 9; a++) {
        cross += T[a] * f->Axr[a];
        square += TA[a] * T[a];
        dot += T[a] * f->Avp[a];
    }
    double k = csm_spring_stiffness(w, c, Fp, h);
    *lag = w->spring_capped ? 0.5 * h * k * dot : 0.0;
    return 0.5 * k * fmax(0.0, f->S - 2.0 * cross + square);
}

double csm_cluster_energy(const csm_world *w, int32_t c, const double *x, const double *v, double h)
{
    const csm_clusters *C = &w->C;
    csm_fixed_fit fit;
    double lag;
    csm_cluster_fixed_fit(C, x, v, c, &fit);
    double e = csm_cluster_stored(w, c, &fit, &C->Fp[9 * c], &C->q[4 * c], h, &lag) + lag;
    return e + csm_kernel_volume_energy(w, c, csm_kernel_volume_det(w, x, c, fit.F), h);
}
