#include "world.h"

#include "csm_math.h"

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
        !ALLOC(c->Fp, 9 * k) || !ALLOC(c->stress_alpha, k) || !ALLOC(c->state, k) ||
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
                      c->Fp, c->stress_alpha, c->state, c->fade, c->com, c->F,
                      c->R, c->T, c->sigma};
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
        c->state[cl] = CSM_CLUSTER_ACTIVE;
        c->fade[cl] = 0;
    }
    return degenerate;
}
