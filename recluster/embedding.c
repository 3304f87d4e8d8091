#include "embedding.h"

#include "csm_math.h"
#include "grow.h"
#include "kernel.h"
#include "simd.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void csm_embedding_free(csm_embedding *E)
{
    free(E->cluster);
    free(E->particle);
    free(E->local);
    free(E->mark);
    free(E->slot);
    free(E->e);
    free(E->centre);
    free(E->T);
    free(E->q);
    free(E->acc);
    free(E->lin);
    free(E->lg_mshare);
    free(E->lg_cluster);
    free(E->lg_macc);
    memset(E, 0, sizeof *E);
}

static int reserve(csm_embedding *E, const csm_clusters *C)
{
    if (C->n > E->cap_n) {
        free(E->local);
        free(E->e);
        E->local = malloc((size_t)C->n * sizeof *E->local);
        E->e = malloc(3 * (size_t)C->n * sizeof *E->e);
        if (!E->local || !E->e) return -1;
        for (int32_t i = 0; i < C->n; i++) E->local[i] = -1;
        E->cap_n = C->n;
    }
    if (C->k > E->cap_k) {
        free(E->mark);
        free(E->slot);
        E->mark = calloc((size_t)C->k, 1);
        E->slot = malloc((size_t)C->k * sizeof *E->slot);
        if (!E->mark || !E->slot) return -1;
        for (int32_t c = 0; c < C->k; c++) E->slot[c] = -1;
        E->cap_k = C->k;
    }
    return 0;
}

static int push(int32_t **list, int32_t *count, int64_t *cap, int32_t value)
{
    if (csm_grow((void **)list, cap, (int64_t)*count + 1, sizeof **list)) return -1;
    (*list)[(*count)++] = value;
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int csm_embedding_set(csm_embedding *E, const csm_clusters *C, const double *x, int32_t seed)
{
    if (reserve(E, C)) return -1;
    /* forget the previous set */
    for (int32_t a = 0; a < E->np; a++) E->local[E->particle[a]] = -1;
    for (int32_t a = 0; a < E->nc; a++) E->slot[E->cluster[a]] = -1;
    E->nc = E->np = 0;
    /* Falkenstein Eq 22: C_p, then every cluster sharing a particle with a cluster of C_p */
    for (int32_t s = C->poff[seed]; s < C->poff[seed + 1]; s++) {
        int32_t d = C->mcluster[C->pmember[s]];
        if (!E->mark[d]) {
            E->mark[d] = 1;
            if (push(&E->cluster, &E->nc, &E->cap_nc, d)) return -1;
        }
    }
    int32_t np_clusters = E->nc;
    for (int32_t a = 0; a < np_clusters; a++) {
        int32_t d = E->cluster[a];
        for (int32_t j = C->offset[d]; j < C->offset[d + 1]; j++) {
            int32_t q = C->member[j];
            for (int32_t s = C->poff[q]; s < C->poff[q + 1]; s++) {
                int32_t c = C->mcluster[C->pmember[s]];
                if (E->mark[c]) continue;
                E->mark[c] = 1;
                if (push(&E->cluster, &E->nc, &E->cap_nc, c)) return -1;
            }
        }
    }
    for (int32_t a = 0; a < E->nc; a++) E->mark[E->cluster[a]] = 0;
    qsort(E->cluster, (size_t)E->nc, sizeof *E->cluster, cmp_i32);
    for (int32_t a = 0; a < E->nc; a++) E->slot[E->cluster[a]] = a;
    /* Falkenstein Eq 23: every member of C_e, once */
    for (int32_t a = 0; a < E->nc; a++) {
        int32_t c = E->cluster[a];
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            int32_t q = C->member[j];
            if (E->local[q] >= 0) continue;
            E->local[q] = 0;
            if (push(&E->particle, &E->np, &E->cap_np, q)) return -1;
        }
    }
    qsort(E->particle, (size_t)E->np, sizeof *E->particle, cmp_i32);
    for (int32_t a = 0; a < E->np; a++) {
        int32_t q = E->particle[a];
        E->local[q] = a;
        memcpy(&E->e[3 * q], &x[3 * q], 3 * sizeof(double));
    }
    if (csm_grow((void **)&E->acc, &E->cap_acc, 4 * (int64_t)E->np, sizeof *E->acc)) return -1;
    if (csm_grow((void **)&E->centre, &E->cap_centre, 3 * (int64_t)E->nc, sizeof *E->centre) ||
        csm_grow((void **)&E->T, &E->cap_T, 9 * (int64_t)E->nc, sizeof *E->T) ||
        csm_grow((void **)&E->q, &E->cap_q, 4 * (int64_t)E->nc, sizeof *E->q))
        return -1;
    /* e starts at x, so each cluster's rotation in embedded space starts at its last one */
    for (int32_t a = 0; a < E->nc; a++) memcpy(&E->q[4 * a], &C->q[4 * E->cluster[a]], 4 * sizeof *E->q);
    return 0;
}

/* Fit clusters [a, a + n) of the set (n <= CSM_LANES) at the embedded positions: e_c the weighted
   centre, R_c the rotation of the polar decomposition of A_xr (F^p)^T (the minimiser of Falkenstein Eq 21
   over R_c, Müller 2005's Procrustes argument), taken for the n side by side in vector lanes,
   and T_c = R_c F^p_c. */
static void fit_lanes(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int32_t a, int n)
{
    double Apq[CSM_LANES][9], R[CSM_LANES][9];
    for (int l = 0; l < n; l++) {
        int32_t c = E->cluster[a + l];
        double Axr[9];
        csm_cluster_moments(C, E->e, c, &E->centre[3 * (a + l)], Axr);
        csm_m3_mul_bt(Axr, &C->Fp[9 * c], Apq[l]);
    }
    csm_polar3_warm_lanes(svd, n, (const double(*)[9])Apq, (double(*)[4]) & E->q[4 * a], R);
    for (int l = 0; l < n; l++) csm_m3_mul(R[l], &C->Fp[9 * E->cluster[a + l]], &E->T[9 * (a + l)]);
}

static void fit_all(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd)
{
    for (int32_t a = 0; a < E->nc; a += CSM_LANES)
        fit_lanes(E, C, svd, a, E->nc - a < CSM_LANES ? E->nc - a : CSM_LANES);
}

/* The goal of membership j of the set's cluster a: T_c p_ic + e_c. */
static void goal(const csm_embedding *E, const csm_clusters *C, int32_t a, int32_t j, double g[3])
{
    const double *T = &E->T[9 * a], *p = &C->p[3 * j], *ec = &E->centre[3 * a];
    csm_m3_mul_v3(T, p, g);
    g[0] += ec[0];
    g[1] += ec[1];
    g[2] += ec[2];
}

/* E(e) for the rotations and centres of the last fit. */
static double energy_of_fit(const csm_embedding *E, const csm_clusters *C)
{
    double sum = 0;
    for (int32_t a = 0; a < E->nc; a++) {
        int32_t c = E->cluster[a];
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            double g[3];
            goal(E, C, a, j, g);
            const double *ei = &E->e[3 * C->member[j]];
            double d[3] = {g[0] - ei[0], g[1] - ei[1], g[2] - ei[2]};
            sum += C->wmass[j] * csm_v3_dot(d, d);
        }
    }
    return sum;
}

double csm_embedding_energy(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd)
{
    fit_all(E, C, svd);
    return energy_of_fit(E, C);
}

/* Falkenstein Eq 21 minimised by Jacobi sweeps: every cluster fitted, then every particle of P_e
   moved to the mean of its goals. */
int csm_embed_nonlinear(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int max_iterations,
                        double tolerance, double *energy, int *converged)
{
    double first = 0;
    int it = 0;
    *converged = 0;
    while (it < max_iterations) {
        fit_all(E, C, svd);
        /* Jacobi: every particle moves to the w m weighted mean of its goals in C_e, the exact
           minimiser of E over e_i for the fitted R_c, e_c */
        memset(E->acc, 0, 4 * (size_t)E->np * sizeof *E->acc);
        for (int32_t a = 0; a < E->nc; a++) {
            int32_t c = E->cluster[a];
            for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
                double g[3], *acc = &E->acc[4 * E->local[C->member[j]]];
                goal(E, C, a, j, g);
                acc[0] += C->wmass[j] * g[0];
                acc[1] += C->wmass[j] * g[1];
                acc[2] += C->wmass[j] * g[2];
                acc[3] += C->wmass[j];
            }
        }
        double change = 0, size = 0;
        for (int32_t b = 0; b < E->np; b++) {
            const double *acc = &E->acc[4 * b];
            if (!(acc[3] > 0)) continue; /* only in weightless memberships: stays */
            double *ei = &E->e[3 * E->particle[b]];
            for (int d = 0; d < 3; d++) {
                double v = acc[d] / acc[3];
                change += (v - ei[d]) * (v - ei[d]);
                size += v * v;
                ei[d] = v;
            }
        }
        it++;
        /* Falkenstein Sec 3.2.2: converged when the squared change is 1e-8 of the first one */
        if (it == 1) first = change;
        else if (change <= tolerance * first) *converged = 1;
        if (change <= 1e-28 * size) *converged = 1; /* moves at round-off: already stress-free */
        if (*converged) break;
    }
    *energy = csm_embedding_energy(E, C, svd);
    return it;
}

/* The global step of the local/global solver: with the fits' T_c = R_c F^p_c held, E is a
   quadratic in the e_i and e_c together, with d_ic = T_c p_ic and W_ic = w_ic m_i,

       E = sum_c sum_i W_ic |d_ic - (e_i - e_c)|^2.

   Each particle's minimiser given the centres is e_i = (sum_c W_ic e_c + D_i) / W_i, with
   W_i = sum_c W_ic and D_i = sum_c W_ic d_ic over its clusters in C_e; put back into the
   centres' equations W_c e_c - sum_i W_ic e_i = -sum_i W_ic d_ic, it leaves nc equations in the
   centres alone (the Schur complement, a weighted graph Laplacian of the clusters):

       W_c e_c - sum_c' (sum_i W_ic W_ic' / W_i) e_c' = -sum_i W_ic d_ic + sum_i (W_ic / W_i) D_i.

   E does not see a translation, so the Laplacian is singular: one centre (lg_pin, the one whose
   diagonal in the Schur complement is largest, the cluster least shared with the others) is
   held at its fitted e~_c, which fixes the translation where it is (a Dirichlet node), and
   eps W_c |e_c - e~_c|^2 is added for the rest, which keeps a part linked to it by no weight
   where it is and vanishes at the fixed point (where the fitted centres are the solved ones).
   The matrix depends on the weights alone: it is factored (Cholesky, cholesky_upper) once per
   embedding, and each step solves three right-hand sides. A particle of no weight in C_e stays. */
static const double lg_eps = 1e-12;

/* Cholesky factorisation in place of the upper triangle of the row-major n x n S = U^T U, in a
   fixed order (no BLAS: the bits do not depend on the library's kernels or threads); -1 when S
   is not positive definite. */
static int cholesky_upper(double *S, int32_t n)
{
    for (int32_t k = 0; k < n; k++) {
        double *Uk = &S[(int64_t)k * n];
        double d = Uk[k];
        for (int32_t i = 0; i < k; i++) d -= S[(int64_t)i * n + k] * S[(int64_t)i * n + k];
        if (!(d > 0)) return -1;
        Uk[k] = sqrt(d);
        for (int32_t j = k + 1; j < n; j++) {
            double v = Uk[j];
            for (int32_t i = 0; i < k; i++) v -= S[(int64_t)i * n + k] * S[(int64_t)i * n + j];
            Uk[j] = v / Uk[k];
        }
    }
    return 0;
}

/* Solves U^T U x = r for three right-hand sides (row-major n x 3), in place. */
static void cholesky_solve3(const double *U, int32_t n, double *r)
{
    for (int32_t i = 0; i < n; i++) { /* U^T y = r */
        double v[3] = {r[3 * i], r[3 * i + 1], r[3 * i + 2]};
        for (int32_t k = 0; k < i; k++)
            for (int d = 0; d < 3; d++) v[d] -= U[(int64_t)k * n + i] * r[3 * k + d];
        for (int d = 0; d < 3; d++) r[3 * i + d] = v[d] / U[(int64_t)i * n + i];
    }
    for (int32_t i = n - 1; i >= 0; i--) { /* U x = y */
        double v[3] = {r[3 * i], r[3 * i + 1], r[3 * i + 2]};
        for (int32_t k = i + 1; k < n; k++)
            for (int d = 0; d < 3; d++) v[d] -= U[(int64_t)i * n + k] * r[3 * k + d];
        for (int d = 0; d < 3; d++) r[3 * i + d] = v[d] / U[(int64_t)i * n + i];
    }
}

/* For the global step: 1 / W_i into acc[4b + 3] (0 for a particle of no weight), the shares
   W_ic / W_i and the particles' places in acc by membership of C_e (lg_mshare, lg_macc), each
   cluster's sum_i W_ic p_ic and W_c (lg_cluster), and the factored Schur complement into
   lin[nc^2]; -1 when out of memory or not positive definite. */
static int lg_factor(csm_embedding *E, const csm_clusters *C)
{
    int32_t nc = E->nc;
    if (csm_grow((void **)&E->lin, &E->cap_lin, (int64_t)nc * nc + 4 * (int64_t)nc, sizeof *E->lin) ||
        csm_grow((void **)&E->lg_cluster, &E->cap_lg_cluster, 4 * (int64_t)nc, sizeof *E->lg_cluster))
        return -1;
    double *S = E->lin;
    memset(S, 0, (size_t)nc * (size_t)nc * sizeof *S);
    memset(E->acc, 0, 4 * (size_t)E->np * sizeof *E->acc);
    for (int32_t a = 0; a < nc; a++) { /* W_i, W_c and sum_i W_ic p_ic */
        int32_t c = E->cluster[a];
        double *Pa = &E->lg_cluster[4 * a];
        Pa[0] = Pa[1] = Pa[2] = Pa[3] = 0;
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            E->acc[4 * E->local[C->member[j]] + 3] += C->wmass[j];
            for (int k = 0; k < 3; k++) Pa[k] += C->wmass[j] * C->p[3 * j + k];
            Pa[3] += C->wmass[j];
        }
        /* the diagonal W_c, and eps W_c; a cluster of no weight is held at its fitted centre */
        S[(int64_t)a * nc + a] = Pa[3] + (Pa[3] > 0 ? lg_eps * Pa[3] : 1);
    }
    for (int32_t b = 0; b < E->np; b++) { /* - sum_i W_ic W_ic' / W_i over each particle's pairs */
        int32_t i = E->particle[b];
        double Wi = E->acc[4 * b + 3];
        if (!(Wi > 0)) continue; /* no weight in C_e: it stays */
        for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
            int32_t j = C->pmember[s], a = E->slot[C->mcluster[j]];
            if (a < 0) continue;
            double f = C->wmass[j] / Wi;
            for (int32_t t = C->poff[i]; t < C->poff[i + 1]; t++) {
                int32_t jj = C->pmember[t], aa = E->slot[C->mcluster[jj]];
                if (aa >= a) S[(int64_t)a * nc + aa] -= f * C->wmass[jj]; /* the upper triangle */
            }
        }
    }
    /* the held centre: its column goes to the right-hand side (kept in lin after the 3 nc of r),
       its row becomes e_c = e~_c */
    int32_t pin = 0;
    for (int32_t a = 1; a < nc; a++)
        if (S[(int64_t)a * nc + a] > S[(int64_t)pin * nc + pin]) pin = a;
    E->lg_pin = pin;
    double *column = E->lin + (int64_t)nc * nc + 3 * (int64_t)nc;
    for (int32_t a = 0; a < nc; a++) {
        double *Sap = a <= pin ? &S[(int64_t)a * nc + pin] : &S[(int64_t)pin * nc + a];
        column[a] = a == pin ? 0 : *Sap;
        *Sap = a == pin ? 1 : 0;
    }
    int64_t m = 0; /* the shares, by membership of C_e in cluster order */
    for (int32_t a = 0; a < nc; a++) m += C->offset[E->cluster[a] + 1] - C->offset[E->cluster[a]];
    if (csm_grow((void **)&E->lg_mshare, &E->cap_lg_mshare, m, sizeof *E->lg_mshare) ||
        csm_grow((void **)&E->lg_macc, &E->cap_lg_macc, m, sizeof *E->lg_macc))
        return -1;
    for (int32_t a = 0, t = 0; a < nc; a++) {
        int32_t c = E->cluster[a];
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++, t++) {
            E->lg_macc[t] = 4 * E->local[C->member[j]];
            double Wi = E->acc[E->lg_macc[t] + 3];
            E->lg_mshare[t] = Wi > 0 ? C->wmass[j] / Wi : 0;
        }
    }
    for (int32_t b = 0; b < E->np; b++) /* acc[4b + 3] holds 1 / W_i from here on */
        E->acc[4 * b + 3] = E->acc[4 * b + 3] > 0 ? 1.0 / E->acc[4 * b + 3] : 0;
    return cholesky_upper(S, nc);
}

/* Four doubles as one value, for the four partial sums of the right-hand side (simd.h). */
typedef double lg_v4d __attribute__((vector_size(4 * sizeof(double))));

/* acc[macc[l] + k] += d[k] lane l, for the 8 memberships of a block in order (each adds to its
   own particle's sums, as the scalar loop does). */
static inline __attribute__((always_inline)) void lg_scatter(double *acc, const int32_t *macc, const csm_v8d d[3])
{
    double o[3 * CSM_LANES];
    csm_v8d_store3(o, d);
    for (int l = 0; l < CSM_LANES; l++)
        for (int k = 0; k < 3; k++) acc[macc[l] + k] += o[3 * l + k];
}

/* The sums of the global step over the memberships of C_e, clusters in order. Compiled for each
   instruction set (simd.h). The products of a block of memberships are taken in vector lanes; a
   particle's sums take them one membership after another, and the right-hand side's four partial
   sums (membership j into part j mod 4) are the four lanes of one vector. Every sum adds what a
   scalar loop over the memberships adds, in its order, so the bits do not depend on the lanes.
     D_i = sum_c W_ic d_ic, d_ic = T_c p_ic, into acc[4b .. 4b + 2]        (what = 0)
     r_c += sum_i (W_ic / W_i) D_i, in four partial sums by membership   (what = 1)
     acc[4b .. 4b + 2] += sum_c (W_ic / W_i) e_c                         (what = 2) */
CSM_CLONES static void lg_sums(csm_embedding *E, const csm_clusters *C, int what, double *r)
{
    double *acc = E->acc;
    const int32_t *macc = E->lg_macc;
    const double *share = E->lg_mshare;
    for (int32_t a = 0, t = 0; a < E->nc; a++) {
        int32_t c = E->cluster[a], j = C->offset[c], hi = C->offset[c + 1];
        const double *T = &E->T[9 * a];
        if (what == 0) {
            for (; j + CSM_LANES <= hi; j += CSM_LANES, t += CSM_LANES) {
                csm_v8d p[3], d[3], w = csm_v8d_load(&C->wmass[j]);
                csm_v8d_load3(&C->p[3 * j], p);
                for (int k = 0; k < 3; k++) d[k] = w * (T[3 * k] * p[0] + T[3 * k + 1] * p[1] + T[3 * k + 2] * p[2]);
                lg_scatter(acc, &macc[t], d);
            }
            for (; j < hi; j++, t++) {
                double d[3];
                csm_m3_mul_v3(T, &C->p[3 * j], d);
                for (int k = 0; k < 3; k++) acc[macc[t] + k] += C->wmass[j] * d[k];
            }
        } else if (what == 1) {
            double part[3][4] = {{0}}; /* by coordinate, then membership mod 4 */
            for (; j < hi && (j & 3); j++, t++)
                for (int k = 0; k < 3; k++) part[k][j & 3] += share[t] * acc[macc[t] + k];
            lg_v4d P0, P1, P2;
            memcpy(&P0, part[0], sizeof P0);
            memcpy(&P1, part[1], sizeof P1);
            memcpy(&P2, part[2], sizeof P2);
            for (; j + 4 <= hi; j += 4, t += 4) {
                lg_v4d f = {share[t], share[t + 1], share[t + 2], share[t + 3]};
                const double *q0 = &acc[macc[t]], *q1 = &acc[macc[t + 1]], *q2 = &acc[macc[t + 2]],
                             *q3 = &acc[macc[t + 3]];
                P0 += f * (lg_v4d){q0[0], q1[0], q2[0], q3[0]};
                P1 += f * (lg_v4d){q0[1], q1[1], q2[1], q3[1]};
                P2 += f * (lg_v4d){q0[2], q1[2], q2[2], q3[2]};
            }
            memcpy(part[0], &P0, sizeof P0);
            memcpy(part[1], &P1, sizeof P1);
            memcpy(part[2], &P2, sizeof P2);
            for (; j < hi; j++, t++)
                for (int k = 0; k < 3; k++) part[k][j & 3] += share[t] * acc[macc[t] + k];
            for (int k = 0; k < 3; k++) r[3 * a + k] = (part[k][0] + part[k][1]) + (part[k][2] + part[k][3]);
        } else {
            double ra[3] = {r[3 * a], r[3 * a + 1], r[3 * a + 2]};
            for (; j + CSM_LANES <= hi; j += CSM_LANES, t += CSM_LANES) {
                csm_v8d f = csm_v8d_load(&share[t]), d[3] = {f * ra[0], f * ra[1], f * ra[2]};
                lg_scatter(acc, &macc[t], d);
            }
            for (; j < hi; j++, t++)
                for (int k = 0; k < 3; k++) acc[macc[t] + k] += share[t] * ra[k];
        }
    }
}

/* Moves the particles to the minimiser for the last fit; the sum of squared changes goes to
   *change and of squared positions to *size. */
static void lg_step(csm_embedding *E, const csm_clusters *C, double *change, double *size)
{
    int32_t nc = E->nc;
    double *r = E->lin + (int64_t)nc * nc; /* row-major nc x 3 */
    for (int32_t b = 0; b < E->np; b++) E->acc[4 * b] = E->acc[4 * b + 1] = E->acc[4 * b + 2] = 0;
    lg_sums(E, C, 0, r);
    /* the right-hand side: sum_i (W_ic / W_i) D_i, - sum_i W_ic d_ic = - T_c sum_i W_ic p_ic,
       and eps W_c e~_c; the held centre's row e_c = e~_c and its column moved across */
    lg_sums(E, C, 1, r);
    const double *column = E->lin + (int64_t)nc * nc + 3 * (int64_t)nc, *held = &E->centre[3 * E->lg_pin];
    for (int32_t a = 0; a < nc; a++) {
        double Wc = E->lg_cluster[4 * a + 3], reg = Wc > 0 ? lg_eps * Wc : 1, ra[3];
        csm_m3_mul_v3(&E->T[9 * a], &E->lg_cluster[4 * a], ra);
        for (int k = 0; k < 3; k++) {
            double rk = r[3 * a + k] - ra[k] + reg * E->centre[3 * a + k];
            r[3 * a + k] = a == E->lg_pin ? held[k] : rk - column[a] * held[k];
        }
    }
    cholesky_solve3(E->lin, nc, r);
    /* e_i = D_i / W_i + sum_c (W_ic / W_i) e_c, into acc */
    for (int32_t b = 0; b < E->np; b++)
        for (int k = 0; k < 3; k++) E->acc[4 * b + k] *= E->acc[4 * b + 3];
    lg_sums(E, C, 2, r);
    double ch = 0, sz = 0;
    for (int32_t b = 0; b < E->np; b++) {
        const double *v = &E->acc[4 * b];
        if (!(v[3] > 0)) continue; /* no weight in C_e: it stays */
        double *ei = &E->e[3 * E->particle[b]];
        for (int k = 0; k < 3; k++) {
            ch += (v[k] - ei[k]) * (v[k] - ei[k]);
            sz += v[k] * v[k];
            ei[k] = v[k];
        }
    }
    *change = ch;
    *size = sz;
}

int csm_embed_local_global(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int max_iterations,
                           double tolerance, double *energy, int *converged)
{
    double first = 0;
    int it = 0;
    *converged = 0;
    if (lg_factor(E, C)) return -1;
    while (it < max_iterations) {
        fit_all(E, C, svd);
        double change, size;
        lg_step(E, C, &change, &size);
        it++;
        /* the stopping rule of csm_embed_nonlinear */
        if (it == 1) first = change;
        else if (change <= tolerance * first) *converged = 1;
        if (change <= 1e-28 * size) *converged = 1;
        if (*converged) break;
    }
    *energy = csm_embedding_energy(E, C, svd);
    return it;
}

int csm_embed_linear(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int32_t seed, double *energy)
{
    int32_t np = E->np, N = E->np + E->nc;
    int64_t need = (int64_t)N * N + 3 * (int64_t)N;
    if (csm_grow((void **)&E->lin, &E->cap_lin, need, sizeof *E->lin)) return -1;
    double *L = E->lin, *b = E->lin + (int64_t)N * N; /* b row-major N x 3 */
    memset(L, 0, (size_t)need * sizeof *L);
    /* unknowns: particles 0..np-1, then clusters np..N-1; each membership (i, c) is an edge of
       weight w_ic m_i asking e_i - e_c = d_ic = F^p_c p_ic */
    for (int32_t a = 0; a < E->nc; a++) {
        int32_t c = E->cluster[a], uc = np + a;
        const double *Fp = &C->Fp[9 * c];
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            int32_t ui = E->local[C->member[j]];
            double wt = C->wmass[j], d[3];
            csm_m3_mul_v3(Fp, &C->p[3 * j], d);
            L[(int64_t)ui * N + ui] += wt;
            L[(int64_t)uc * N + uc] += wt;
            L[(int64_t)ui * N + uc] -= wt;
            L[(int64_t)uc * N + ui] -= wt;
            for (int k = 0; k < 3; k++) {
                b[3 * ui + k] += wt * d[k];
                b[3 * uc + k] -= wt * d[k];
            }
        }
    }
    /* the seed keeps its place: its column moves to the right-hand side, its row becomes e = x */
    int32_t us = E->local[seed];
    const double *xs = &E->e[3 * seed];
    for (int32_t r = 0; r < N; r++) {
        double l = L[(int64_t)r * N + us];
        for (int k = 0; k < 3; k++) b[3 * r + k] -= l * xs[k];
        L[(int64_t)r * N + us] = 0;
        L[(int64_t)us * N + r] = 0;
    }
    L[(int64_t)us * N + us] = 1;
    for (int k = 0; k < 3; k++) b[3 * us + k] = xs[k];
    if (LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', N, 3, L, N, b, 3) != 0) return -1;
    for (int32_t a = 0; a < np; a++) memcpy(&E->e[3 * E->particle[a]], &b[3 * a], 3 * sizeof(double));
    *energy = csm_embedding_energy(E, C, svd);
    return 0;
}
