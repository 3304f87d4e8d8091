#include "embedding.h"

#include "csm_math.h"
#include "grow.h"
#include "kernel.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

void csm_embedding_free(csm_embedding *E)
{
    free(E->cluster);
    free(E->particle);
    free(E->local);
    free(E->mark);
    free(E->e);
    free(E->centre);
    free(E->T);
    free(E->q);
    free(E->acc);
    free(E->lin);
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
        E->mark = calloc((size_t)C->k, 1);
        if (!E->mark) return -1;
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

/* Fit cluster c of the set at the embedded positions: e_c the weighted centre, R_c the rotation
   of the polar decomposition of A_xr (F^p)^T (the minimiser of Eq 21 over R_c, Müller 2005's
   Procrustes argument), T_c = R_c F^p_c. */
static void fit(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int32_t a)
{
    int32_t c = E->cluster[a];
    double Axr[9], Apq[9], R[9];
    const double *Fp = &C->Fp[9 * c];
    csm_cluster_moments(C, E->e, c, &E->centre[3 * a], Axr);
    csm_m3_mul_bt(Axr, Fp, Apq);
    csm_polar3_warm(svd, Apq, &E->q[4 * a], R);
    csm_m3_mul(R, Fp, &E->T[9 * a]);
}

static void fit_all(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd)
{
    for (int32_t a = 0; a < E->nc; a++) fit(E, C, svd, a);
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
