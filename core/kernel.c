#include "kernel.h"

#include "csm_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Müller 2005 quadratic mode (report Sec 4): A~ = A~_pq A~_qq^-1 over q~ = (p, q2(p) - qmean) (3x9),
   goals from beta A~ + (1 - beta) [R F^p, 0]. The fit is over the rest offsets p, so with
   plasticity the rigid part still carries F^p (Eq 16) and beta = 0 is exactly the rigid mode. */
static void quadratic_fit(const csm_world *w, csm_clusters *C, const double *x, const double com[3], int32_t c)
{
    const double *mean = &C->qmean[6 * c], *inv = &C->Aqq_inv[81 * c];
    double Axq[27] = {0}, A[27] = {0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        const double *xi = &x[3 * C->member[j]], *p = &C->p[3 * j];
        double t[9], wm = C->wmass[j];
        csm_quad_terms(p, &t[3]);
        for (int a = 0; a < 3; a++) t[a] = p[a];
        for (int a = 0; a < 6; a++) t[3 + a] -= mean[a];
        for (int r = 0; r < 3; r++) {
            double d = wm * (xi[r] - com[r]);
            for (int a = 0; a < 9; a++) Axq[9 * r + a] += d * t[a];
        }
    }
    for (int r = 0; r < 3; r++)
        for (int b = 0; b < 9; b++) {
            double sum = 0;
            for (int a = 0; a < 9; a++) sum += Axq[9 * r + a] * inv[9 * a + b];
            A[9 * r + b] = sum;
        }
    double *T = &C->T[9 * c], *Q = &C->Q[18 * c], beta = w->beta;
    for (int r = 0; r < 3; r++) {
        for (int a = 0; a < 3; a++) T[3 * r + a] = beta * A[9 * r + a] + (1.0 - beta) * T[3 * r + a];
        for (int a = 0; a < 6; a++) Q[6 * r + a] = beta * A[9 * r + 3 + a];
    }
}

void csm_cluster_moments(const csm_clusters *C, const double *x, int32_t c, double com[3], double Axr[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    double M = C->mass[c];
    com[0] = com[1] = com[2] = 0;
    for (int32_t j = lo; j < hi; j++) {
        const double *xi = &x[3 * C->member[j]];
        double wm = C->wmass[j];
        com[0] += wm * xi[0];
        com[1] += wm * xi[1];
        com[2] += wm * xi[2];
    }
    if (M > 0) {
        com[0] /= M;
        com[1] /= M;
        com[2] /= M;
    }
    /* A_xr = sum w m (x - xbar) p^T; p_ic already has zero weighted mean (Falkenstein Sec 3.2). */
    for (int a = 0; a < 9; a++) Axr[a] = 0;
    for (int32_t j = lo; j < hi; j++) {
        const double *xi = &x[3 * C->member[j]], *p = &C->p[3 * j];
        double wm = C->wmass[j];
        double d0 = wm * (xi[0] - com[0]), d1 = wm * (xi[1] - com[1]), d2 = wm * (xi[2] - com[2]);
        Axr[0] += d0 * p[0];
        Axr[1] += d0 * p[1];
        Axr[2] += d0 * p[2];
        Axr[3] += d1 * p[0];
        Axr[4] += d1 * p[1];
        Axr[5] += d1 * p[2];
        Axr[6] += d2 * p[0];
        Axr[7] += d2 * p[1];
        Axr[8] += d2 * p[2];
    }
}

void csm_cluster_fit(const csm_world *w, csm_clusters *C, const double *x, int32_t c)
{
    double com[3], Axr[9];
    csm_cluster_moments(C, x, c, com, Axr);
    double *F = &C->F[9 * c], *R = &C->R[9 * c], *T = &C->T[9 * c];
    const double *Fp = &C->Fp[9 * c];
    csm_m3_mul(Axr, &C->A_rr_inv[9 * c], F); /* Falkenstein Eq 3 */
    double Fp_inv[9], Fe[9], Apq[9];
    if (csm_m3_inverse(Fp, Fp_inv) == 0.0) csm_m3_identity(Fp_inv);
    csm_m3_mul(F, Fp_inv, Fe);   /* Eq 9 / 15 */
    csm_m3_mul_bt(Axr, Fp, Apq); /* A_pq of the plastic rest shape q = F^p p */
    w->rotation->extract(w->svd, Apq, Fe, R, &C->sigma[3 * c]);
    if (w->mode == CSM_MODE_LINEAR && C->rank[c] == 3 && csm_m3_det(Fe) > 0) {
        /* Müller 2005 linear mode (report Sec 4): goals from beta A + (1 - beta) R, A = F^e / cbrt(det F^e) so the
           linear part keeps volume; F^e is Müller's A_pq A_qq^-1 of the plastic rest shape
           q = F^p p. A planar or inverted cluster has no volume to keep and stays rigid. */
        double s3 = cbrt(csm_m3_det(Fe)), B[9];
        for (int a = 0; a < 9; a++) B[a] = w->beta * Fe[a] / s3 + (1.0 - w->beta) * R[a];
        csm_m3_mul(B, Fp, T);
    } else {
        csm_m3_mul(R, Fp, T); /* Eq 16: g = R F^p p + xbar */
    }
    if (C->Q) quadratic_fit(w, C, x, com, c);
    C->com[3 * c] = com[0];
    C->com[3 * c + 1] = com[1];
    C->com[3 * c + 2] = com[2];
}

void csm_fit_all(csm_world *w, const double *x)
{
    csm_clusters *C = &w->C;
    if (w->mode == CSM_MODE_QUADRATIC && !C->Q && csm_clusters_quadratic(C)) {
        /* once per clustering; the only allocation a fit may make */
        fprintf(stderr, "csm: out of memory for the quadratic fit of %d clusters\n", C->k);
        abort();
    }
    int32_t k = C->k;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) csm_cluster_fit(w, C, x, c);
}

void csm_goal_gather(const csm_world *w, const double *x, int32_t i, double gamma, double g[3])
{
    const csm_clusters *C = &w->C;
    const double *xi = &x[3 * i];
    double acc[3] = {0, 0, 0};
    for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
        int32_t j = C->pmember[s];
        double gic[3];
        csm_membership_goal(C, j, gic);
        double wgt = C->weight[j];
        if (gamma > 0) {
            /* Bargteil-Jones Algorithm 2 line 10, written without dividing by beta:
               allowed stretch gamma * width; beyond it the goal is pulled back onto it. */
            double d[3] = {xi[0] - gic[0], xi[1] - gic[1], xi[2] - gic[2]};
            double len = csm_v3_norm(d);
            double limit = gamma * C->width[C->mcluster[j]];
            double f = len <= limit ? 1.0 : limit / len;
            gic[0] += f * d[0];
            gic[1] += f * d[1];
            gic[2] += f * d[2];
        }
        acc[0] += wgt * gic[0];
        acc[1] += wgt * gic[1];
        acc[2] += wgt * gic[2];
    }
    if (C->poff[i] == C->poff[i + 1]) { /* in no cluster: no internal force */
        acc[0] = xi[0];
        acc[1] = xi[1];
        acc[2] = xi[2];
    }
    g[0] = acc[0];
    g[1] = acc[1];
    g[2] = acc[2];
}

void csm_goals_all(const csm_world *w, const double *x, double gamma, double *out)
{
    int32_t n = w->P.n;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) csm_goal_gather(w, x, i, gamma, &out[3 * i]);
}

/* Rigid velocity of cluster c: v_cm and omega = I^-1 L about the cluster's centre of mass. */
static void cluster_rigid_velocity(const csm_clusters *C, const double *x, const double *v, int32_t c,
                                   double out[9])
{
    double M = C->mass[c], com[3] = {0, 0, 0}, vcm[3] = {0, 0, 0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        for (int d = 0; d < 3; d++) {
            com[d] += C->wmass[j] * x[3 * i + d];
            vcm[d] += C->wmass[j] * v[3 * i + d];
        }
    }
    for (int d = 0; d < 3; d++) {
        com[d] = M > 0 ? com[d] / M : 0;
        vcm[d] = M > 0 ? vcm[d] / M : 0;
    }
    double L[3] = {0, 0, 0}, I[9] = {0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        double r[3] = {x[3 * i] - com[0], x[3 * i + 1] - com[1], x[3 * i + 2] - com[2]}, rv[3];
        double wm = C->wmass[j];
        csm_v3_cross(r, &v[3 * i], rv);
        double r2 = csm_v3_dot(r, r);
        for (int a = 0; a < 3; a++) {
            L[a] += wm * rv[a];
            for (int b = 0; b < 3; b++) I[3 * a + b] += wm * ((a == b ? r2 : 0.0) - r[a] * r[b]);
        }
    }
    /* a collinear or single-particle cluster has a singular inertia tensor */
    double Iinv[9];
    csm_pinv_sym3(I, 1e-12, Iinv);
    memcpy(out, vcm, sizeof vcm);
    csm_m3_mul_v3(Iinv, L, &out[3]);
    memcpy(&out[6], com, sizeof com);
}

void csm_damp_velocities(csm_world *w, const double *x, double *v, double k, double *scratch)
{
    if (k <= 0) return;
    const csm_clusters *C = &w->C;
    int32_t nc = C->k, n = w->P.n;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < nc; c++) cluster_rigid_velocity(C, x, v, c, &scratch[9 * c]);
    /* Gather per particle (no atomics); v is only written after every cluster is measured. */
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        if (w->P.inv_mass[i] == 0.0) continue;
        double dv[3] = {0, 0, 0};
        for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
            int32_t j = C->pmember[s];
            int32_t c = C->mcluster[j];
            const double *rv = &scratch[9 * c];
            double r[3], wr[3];
            for (int d = 0; d < 3; d++) r[d] = x[3 * i + d] - rv[6 + d];
            csm_v3_cross(&rv[3], r, wr);
            for (int d = 0; d < 3; d++) dv[d] += C->weight[j] * (rv[d] + wr[d] - v[3 * i + d]);
        }
        for (int d = 0; d < 3; d++) v[3 * i + d] += k * dv[d];
    }
}

void csm_set_threads(int threads)
{
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

int csm_get_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
