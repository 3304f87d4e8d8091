#include "world.h"

#include "csm_math.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ALLOC(ptr, count) ((ptr) = calloc((size_t)(count) > 0 ? (size_t)(count) : 1, sizeof *(ptr)))

int csm_particles_alloc(csm_particles *p, int32_t n)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    if (!ALLOC(p->x, 3 * n) || !ALLOC(p->v, 3 * n) || !ALLOC(p->mass, n) ||
        !ALLOC(p->inv_mass, n) || !ALLOC(p->rest, 3 * n) || !ALLOC(p->object, n) ||
        !ALLOC(p->goal, 3 * n) || !ALLOC(p->x_prev, 3 * n) || !ALLOC(p->force, 3 * n)) {
        csm_particles_free(p);
        return -1;
    }
    return 0;
}

void csm_particles_free(csm_particles *p)
{
    free(p->x);
    free(p->v);
    free(p->mass);
    free(p->inv_mass);
    free(p->rest);
    free(p->object);
    free(p->goal);
    free(p->x_prev);
    free(p->force);
    memset(p, 0, sizeof *p);
}

int csm_clusters_alloc(csm_clusters *c, int32_t k, int32_t m, int32_t n)
{
    memset(c, 0, sizeof *c);
    c->k = k;
    c->m = m;
    if (!ALLOC(c->offset, k + 1) || !ALLOC(c->member, m) || !ALLOC(c->mcluster, m) ||
        !ALLOC(c->weight, m) || !ALLOC(c->wmass, m) || !ALLOC(c->p, 3 * m) ||
        !ALLOC(c->poff, n + 1) || !ALLOC(c->pmember, m) || !ALLOC(c->mass, k) ||
        !ALLOC(c->A_rr_inv, 9 * k) || !ALLOC(c->rank, k) || !ALLOC(c->width, k) ||
        !ALLOC(c->Fp, 9 * k) || !ALLOC(c->stress_alpha, k) || !ALLOC(c->flowed, k) || !ALLOC(c->state, k) ||
        !ALLOC(c->fade, k) || !ALLOC(c->com, 3 * k) || !ALLOC(c->F, 9 * k) ||
        !ALLOC(c->R, 9 * k) || !ALLOC(c->T, 9 * k) || !ALLOC(c->sigma, 3 * k)) {
        csm_clusters_free(c);
        return -1;
    }
    return 0;
}

void csm_clusters_free(csm_clusters *c)
{
    void *arrays[] = {c->offset, c->member, c->mcluster, c->weight, c->wmass, c->p,
                      c->poff, c->pmember, c->mass, c->A_rr_inv, c->rank, c->width,
                      c->Fp, c->stress_alpha, c->flowed, c->state, c->fade, c->com, c->F,
                      c->R, c->T, c->sigma, c->qmean, c->Aqq_inv, c->Q};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) free(arrays[a]);
    memset(c, 0, sizeof *c);
}

/* Relative threshold below which a singular value of A_rr counts as zero. */
#define ARR_REL_TOL 1e-10

int csm_clusters_finish(csm_clusters *c, const csm_particles *p)
{
    int32_t n = p->n;
    /* Reverse CSR by counting sort; memberships of a particle keep cluster order, so every
       gather sums in a fixed order (bitwise reproducible for any thread count). */
    memset(c->poff, 0, (size_t)(n + 1) * sizeof *c->poff);
    for (int32_t cl = 0; cl < c->k; cl++)
        for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
            c->mcluster[j] = cl;
            c->poff[c->member[j] + 1]++;
        }
    for (int32_t i = 0; i < n; i++) c->poff[i + 1] += c->poff[i];
    int32_t *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!fill) return -1;
    for (int32_t j = 0; j < c->m; j++) {
        int32_t i = c->member[j];
        c->pmember[c->poff[i] + fill[i]++] = j;
    }
    free(fill);

    int degenerate = 0;
    for (int32_t cl = 0; cl < c->k; cl++) {
        double M = 0, rc[3] = {0, 0, 0};
        for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
            int32_t i = c->member[j];
            c->wmass[j] = c->weight[j] * p->mass[i];
            M += c->wmass[j];
            for (int d = 0; d < 3; d++) rc[d] += c->wmass[j] * p->rest[3 * i + d];
        }
        c->mass[cl] = M;
        for (int d = 0; d < 3; d++) rc[d] = M > 0 ? rc[d] / M : 0.0;
        double Arr[9] = {0}, width = 0;
        for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
            int32_t i = c->member[j];
            double *pj = &c->p[3 * j];
            for (int d = 0; d < 3; d++) pj[d] = p->rest[3 * i + d] - rc[d];
            for (int r = 0; r < 3; r++)
                for (int s = 0; s < 3; s++) Arr[3 * r + s] += c->wmass[j] * pj[r] * pj[s];
            double len = csm_v3_norm(pj);
            if (len > width) width = len;
        }
        c->width[cl] = width;
        /* DESIGN.md errata: planar, collinear or single-particle clusters have a singular A_rr;
           a pseudo-inverse keeps F finite in the directions the rest shape spans. */
        c->rank[cl] = csm_pinv_sym3(Arr, ARR_REL_TOL, &c->A_rr_inv[9 * cl]);
        if (c->rank[cl] < 3) degenerate++;
        csm_m3_identity(&c->Fp[9 * cl]);
        csm_m3_identity(&c->R[9 * cl]);
        csm_m3_identity(&c->T[9 * cl]);
        csm_m3_identity(&c->F[9 * cl]);
        memcpy(&c->com[3 * cl], rc, sizeof rc);
        c->stress_alpha[cl] = 0;
        c->flowed[cl] = 0;
        c->state[cl] = CSM_CLUSTER_ACTIVE;
        c->fade[cl] = 0;
    }
    return degenerate;
}

/* Quadratic shape matching (Müller 2005, report Sec 4): q~ = (p, q2(p)) in R^9. The quadratic terms
   are centred on their weighted mean, which makes the fit's translation free as well: the goals
   of a cluster then keep its centre of mass, so internal forces still sum to zero (with raw
   q2(p), as in the paper, they do not). A_qq is inverted by eigen-decomposition with small
   eigenvalues dropped: planar and collinear clusters have a singular A_qq. */
int csm_clusters_quadratic(csm_clusters *c)
{
    free(c->qmean);
    free(c->Aqq_inv);
    free(c->Q);
    c->qmean = calloc(6 * (size_t)c->k, sizeof *c->qmean);
    c->Aqq_inv = calloc(81 * (size_t)c->k, sizeof *c->Aqq_inv);
    c->Q = calloc(18 * (size_t)c->k, sizeof *c->Q);
    if (!c->qmean || !c->Aqq_inv || !c->Q) return -1;
    for (int32_t cl = 0; cl < c->k; cl++) {
        double *mean = &c->qmean[6 * cl], A[81] = {0}, lam[9];
        double M = c->mass[cl];
        for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
            double q[6];
            csm_quad_terms(&c->p[3 * j], q);
            for (int a = 0; a < 6; a++) mean[a] += c->wmass[j] * q[a];
        }
        for (int a = 0; a < 6; a++) mean[a] = M > 0 ? mean[a] / M : 0;
        for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
            double t[9];
            csm_quad_terms(&c->p[3 * j], &t[3]);
            for (int a = 0; a < 3; a++) t[a] = c->p[3 * j + a];
            for (int a = 0; a < 6; a++) t[3 + a] -= mean[a];
            for (int a = 0; a < 9; a++)
                for (int b = 0; b < 9; b++) A[9 * a + b] += c->wmass[j] * t[a] * t[b];
        }
        if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', 9, A, 9, lam) != 0) continue; /* stays 0 */
        double top = fabs(lam[8]), *inv = &c->Aqq_inv[81 * cl];
        for (int e = 0; e < 9; e++) {
            if (!(lam[e] > ARR_REL_TOL * top)) continue;
            for (int a = 0; a < 9; a++)
                for (int b = 0; b < 9; b++) inv[9 * a + b] += A[9 * a + e] * A[9 * b + e] / lam[e];
        }
    }
    return 0;
}
