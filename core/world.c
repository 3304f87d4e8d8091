#include "world.h"

#include "csm_math.h"
#include "elastic.h"
#include "svd3.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    free(p->cell);
    memset(p, 0, sizeof *p);
}

/* The per-cluster and per-membership arrays with the size of one element, so that growing and
   compacting walk one table. */
typedef struct array_ref {
    void **ptr;
    size_t size;
} array_ref;

static int cluster_arrays(csm_clusters *c, array_ref *a)
{
    int k = 0;
#define REF(field, count) a[k++] = (array_ref){(void **)&c->field, (count) * sizeof *c->field}
    REF(mass, 1);
    REF(A_rr_inv, 9);
    REF(rank, 1);
    REF(width, 1);
    REF(Fp, 9);
    REF(stress_alpha, 1);
    REF(flowed, 1);
    REF(state, 1);
    REF(fade, 1);
    REF(id, 1);
    REF(com, 3);
    REF(F, 9);
    REF(R, 9);
    REF(T, 9);
    REF(q, 4);
    REF(qmean, 6);
    REF(Aqq_inv, 81);
    REF(Q, 18);
    REF(ebound, 1);
    REF(F_lagged, 9);
    return k;
}

static int membership_arrays(csm_clusters *c, array_ref *a)
{
    int k = 0;
    REF(member, 1);
    REF(mcluster, 1);
    REF(weight, 1);
    REF(wbase, 1);
    REF(wmass, 1);
    REF(p, 3);
    REF(wgoal, 3);
    REF(pmember, 1);
#undef REF
    return k;
}

/* Grow one array from `have` to `want` elements, zero-filling the new part. An array that is
   NULL stays NULL when `optional` (the quadratic data of a non-quadratic run). */
static int grow_array(void **ptr, size_t size, size_t have, size_t want, int optional)
{
    if (!*ptr && optional) return 0;
    void *q = realloc(*ptr, (want ? want : 1) * size);
    if (!q) return -1;
    if (!*ptr) have = 0;
    memset((char *)q + have * size, 0, (want - have) * size);
    *ptr = q;
    return 0;
}

int csm_clusters_reserve(csm_clusters *c, int32_t k, int32_t m, int32_t n)
{
    array_ref a[32];
    if (k > c->cap_k) {
        int32_t cap = k > c->cap_k + c->cap_k / 2 ? k : c->cap_k + c->cap_k / 2;
        int na = cluster_arrays(c, a);
        for (int i = 0; i < na; i++) {
            int optional = a[i].ptr == (void **)&c->qmean || a[i].ptr == (void **)&c->Aqq_inv ||
                           a[i].ptr == (void **)&c->Q || a[i].ptr == (void **)&c->ebound ||
                           a[i].ptr == (void **)&c->F_lagged;
            if (grow_array(a[i].ptr, a[i].size, (size_t)c->cap_k, (size_t)cap, optional)) return -1;
        }
        if (grow_array((void **)&c->offset, sizeof *c->offset, (size_t)c->cap_k + 1, (size_t)cap + 1, 0)) return -1;
        c->cap_k = cap;
    }
    if (m > c->cap_m) {
        int32_t cap = m > c->cap_m + c->cap_m / 2 ? m : c->cap_m + c->cap_m / 2;
        int na = membership_arrays(c, a);
        for (int i = 0; i < na; i++)
            if (grow_array(a[i].ptr, a[i].size, (size_t)c->cap_m, (size_t)cap, 0)) return -1;
        c->cap_m = cap;
    }
    if (n + 1 > c->n + 1 || !c->poff) {
        if (grow_array((void **)&c->poff, sizeof *c->poff, (size_t)c->n + 1, (size_t)n + 1, 0)) return -1;
        c->n = n;
    }
    return 0;
}

int csm_clusters_alloc(csm_clusters *c, int32_t k, int32_t m, int32_t n)
{
    memset(c, 0, sizeof *c);
    if (csm_clusters_reserve(c, k, m, n)) {
        csm_clusters_free(c);
        return -1;
    }
    c->k = k;
    c->m = m;
    return 0;
}

void csm_clusters_free(csm_clusters *c)
{
    array_ref a[32];
    int na = cluster_arrays(c, a);
    for (int i = 0; i < na; i++) free(*a[i].ptr);
    na = membership_arrays(c, a);
    for (int i = 0; i < na; i++) free(*a[i].ptr);
    free(c->offset);
    free(c->poff);
    free(c->eta);
    free(c->S);
    free(c->ecorr);
    free(c->hmean);
    csm_cluster_blocks_free(c->blocks);
    memset(c, 0, sizeof *c);
}

void csm_cluster_blocks_free(csm_cluster_blocks *B)
{
    if (!B) return;
    free(B->first);
    free(B->member);
    free(B->wmass);
    free(B->weight);
    free(B->p);
    free(B);
}

int csm_clusters_relink(csm_clusters *c)
{
    c->epoch++;
    int32_t n = c->n;
    /* Counting sort; memberships of a particle keep cluster order, so every gather sums in a
       fixed order (bitwise reproducible for any thread count). */
    memset(c->poff, 0, (size_t)(n + 1) * sizeof *c->poff);
    for (int32_t cl = 0; cl < c->k; cl++)
        for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
            c->mcluster[j] = cl;
            c->poff[c->member[j] + 1]++;
        }
    for (int32_t i = 0; i < n; i++) c->poff[i + 1] += c->poff[i];
    /* the particle's next free slot: poff[i] moves on while filling, then shifts back */
    for (int32_t j = 0; j < c->m; j++) {
        int32_t i = c->member[j];
        c->pmember[c->poff[i]++] = j;
    }
    for (int32_t i = n; i > 0; i--) c->poff[i] = c->poff[i - 1];
    c->poff[0] = 0;
    return 0;
}

/* Relative threshold below which a singular value of A_rr counts as zero. */
#define ARR_REL_TOL 1e-10

static void quadratic_rest(csm_clusters *c, int32_t cl);

/* Falkenstein Sec 3.2: p_ic about the weighted rest centre, which stays at the origin as weights
   change; the width w_c = max |F^p p_ic| (Bargteil-Jones Eq 5 on the plastic rest shape). */
void csm_cluster_rest(csm_clusters *c, const csm_particles *p, int32_t cl, double shift[3])
{
    double M = 0, rc[3] = {0, 0, 0};
    for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
        c->wmass[j] = c->weight[j] * p->mass[c->member[j]];
        M += c->wmass[j];
        for (int d = 0; d < 3; d++) rc[d] += c->wmass[j] * c->p[3 * j + d];
    }
    c->mass[cl] = M;
    for (int d = 0; d < 3; d++) rc[d] = M > 0 ? rc[d] / M : 0.0;
    double Arr[9] = {0}, width = 0;
    for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
        double *pj = &c->p[3 * j];
        for (int d = 0; d < 3; d++) pj[d] -= rc[d];
        for (int r = 0; r < 3; r++)
            for (int s = 0; s < 3; s++) Arr[3 * r + s] += c->wmass[j] * pj[r] * pj[s];
        if (c->wmass[j] > 0) width = fmax(width, csm_plastic_length(&c->Fp[9 * cl], pj));
    }
    c->width[cl] = width;
    /* docs/DESIGN.md errata: planar, collinear or single-particle clusters have a singular A_rr;
       a pseudo-inverse keeps F finite in the directions the rest shape spans. */
    c->rank[cl] = csm_pinv_sym3(Arr, ARR_REL_TOL, &c->A_rr_inv[9 * cl]);
    if (c->qmean) quadratic_rest(c, cl);
    if (shift) memcpy(shift, rc, sizeof rc);
}

/* A fresh cluster's state: no plastic flow, active, unit transforms. */
static void fresh_state(csm_clusters *c, int32_t cl)
{
    csm_m3_identity(&c->Fp[9 * cl]);
    csm_m3_identity(&c->R[9 * cl]);
    csm_m3_identity(&c->T[9 * cl]);
    csm_m3_identity(&c->F[9 * cl]);
    c->com[3 * cl] = c->com[3 * cl + 1] = c->com[3 * cl + 2] = 0;
    memset(&c->q[4 * cl], 0, 4 * sizeof *c->q); /* the first fit decomposes cold */
    c->stress_alpha[cl] = 0;
    c->flowed[cl] = 0;
    c->state[cl] = CSM_CLUSTER_ACTIVE;
    c->fade[cl] = 0;
    c->id[cl] = c->next_id++;
    if (c->Q) memset(&c->Q[18 * cl], 0, 18 * sizeof *c->Q);
    if (c->F_lagged)
        for (int a = 0; a < 9; a++) c->F_lagged[9 * cl + a] = NAN;
}

void csm_cluster_width(csm_clusters *c, int32_t cl)
{
    double width = 0;
    for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++)
        if (c->wmass[j] > 0) width = fmax(width, csm_plastic_length(&c->Fp[9 * cl], &c->p[3 * j]));
    c->width[cl] = width;
}

int csm_clusters_finish(csm_clusters *c, const csm_particles *p)
{
    if (csm_clusters_reserve(c, c->k, c->m, p->n) || csm_clusters_relink(c)) return -1;
    c->cell = p->cell;
    int degenerate = 0;
    for (int32_t cl = 0; cl < c->k; cl++) {
        /* p_ic start as rest positions; csm_cluster_rest moves them about the weighted centre */
        for (int32_t j = c->offset[cl]; j < c->offset[cl + 1]; j++) {
            c->wbase[j] = c->weight[j];
            memcpy(&c->p[3 * j], &p->rest[3 * c->member[j]], 3 * sizeof(double));
        }
        double rc[3];
        fresh_state(c, cl); /* F^p first: the width is that of the plastic rest shape */
        csm_cluster_rest(c, p, cl, rc);
        if (c->rank[cl] < 3) degenerate++;
        memcpy(&c->com[3 * cl], rc, sizeof rc); /* the rest centre, until the first fit */
    }
    return degenerate;
}

int32_t csm_clusters_append(csm_clusters *c, int32_t count, const int32_t *member, const double *wbase,
                            const double *p)
{
    if (csm_clusters_reserve(c, c->k + 1, c->m + count, c->n)) return -1;
    int32_t cl = c->k, at = c->m;
    memcpy(&c->member[at], member, (size_t)count * sizeof *member);
    memcpy(&c->wbase[at], wbase, (size_t)count * sizeof *wbase);
    memcpy(&c->weight[at], wbase, (size_t)count * sizeof *wbase);
    memcpy(&c->p[3 * at], p, 3 * (size_t)count * sizeof *p);
    for (int32_t j = at; j < at + count; j++) c->mcluster[j] = cl;
    c->offset[cl + 1] = at + count;
    c->k++;
    c->m += count;
    fresh_state(c, cl);
    return cl;
}

void csm_clusters_remove(csm_clusters *c, const unsigned char *drop)
{
    array_ref ca[32], ma[32];
    int nca = cluster_arrays(c, ca), nma = membership_arrays(c, ma);
    int32_t k = 0, m = 0;
    for (int32_t cl = 0; cl < c->k; cl++) {
        int32_t lo = c->offset[cl], hi = c->offset[cl + 1];
        if (drop[cl]) continue;
        if (k != cl)
            for (int i = 0; i < nca; i++)
                if (*ca[i].ptr)
                    memcpy((char *)*ca[i].ptr + (size_t)k * ca[i].size, (char *)*ca[i].ptr + (size_t)cl * ca[i].size,
                           ca[i].size);
        if (m != lo)
            for (int i = 0; i < nma; i++)
                memmove((char *)*ma[i].ptr + (size_t)m * ma[i].size, (char *)*ma[i].ptr + (size_t)lo * ma[i].size,
                        (size_t)(hi - lo) * ma[i].size);
        c->offset[k] = m;
        m += hi - lo;
        k++;
    }
    c->offset[k] = m;
    c->k = k;
    c->m = m;
}

/* Quadratic shape matching (Müller 2005, report Sec 4): q~ = (p, q2(p)) in R^9. The quadratic terms
   are centred on their weighted mean, which makes the fit's translation free as well: the goals
   of a cluster then keep its centre of mass, so internal forces still sum to zero (with raw
   q2(p), as in the paper, they do not). A_qq is inverted by eigen-decomposition with small
   eigenvalues dropped: planar and collinear clusters have a singular A_qq. */
static void quadratic_rest(csm_clusters *c, int32_t cl)
{
    double *mean = &c->qmean[6 * cl], A[81] = {0}, lam[9];
    double *inv = &c->Aqq_inv[81 * cl];
    memset(mean, 0, 6 * sizeof *mean);
    memset(inv, 0, 81 * sizeof *inv);
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
    if (c->ebound) c->ebound[cl] = 0;
    if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', 9, A, 9, lam) != 0) return; /* stays 0 */
    double top = fabs(lam[8]);
    for (int e = 0; e < 9; e++) {
        if (!(lam[e] > ARR_REL_TOL * top)) continue;
        for (int a = 0; a < 9; a++)
            for (int b = 0; b < 9; b++) inv[9 * a + b] += A[9 * a + e] * A[9 * b + e] / lam[e];
    }
    if (c->ebound) c->ebound[cl] = csm_elastic_bound(c, cl, A, lam, ARR_REL_TOL * top);
}

int csm_clusters_quadratic(csm_clusters *c)
{
    free(c->qmean);
    free(c->Aqq_inv);
    free(c->Q);
    free(c->ebound);
    size_t cap = c->cap_k > 0 ? (size_t)c->cap_k : 1;
    c->qmean = calloc(6 * cap, sizeof *c->qmean);
    c->Aqq_inv = calloc(81 * cap, sizeof *c->Aqq_inv);
    c->Q = calloc(18 * cap, sizeof *c->Q);
    c->ebound = calloc(cap, sizeof *c->ebound);
    if (!c->qmean || !c->Aqq_inv || !c->Q || !c->ebound) return -1;
    for (int32_t cl = 0; cl < c->k; cl++) quadratic_rest(c, cl);
    return 0;
}

int csm_clusters_lagged(csm_clusters *c)
{
    free(c->F_lagged);
    size_t cap = c->cap_k > 0 ? (size_t)c->cap_k : 1;
    c->F_lagged = malloc(9 * cap * sizeof *c->F_lagged);
    if (!c->F_lagged) return -1;
    for (size_t a = 0; a < 9 * cap; a++) c->F_lagged[a] = NAN;
    return 0;
}

/* ---- the report of a frame ------------------------------------------------------------------ */

void csm_report_init(csm_report *r)
{
    memset(r, 0, sizeof *r);
    static const char *const names[CSM_TIMING_BUILTIN] = {"dynamics", "plasticity", "reclustering", "embedding",
                                                          "total"};
    static const char *const docs[CSM_TIMING_BUILTIN] = {
        "forces, integrator and colliders per frame", "plasticity per frame",
        "reclustering per frame (embedding included)", "embedding optimisation per frame",
        "whole frame: every stage and the diagnostics",
    };
    for (int k = 0; k < CSM_TIMING_BUILTIN; k++) csm_report_timing(r, names[k], docs[k]);
}

int csm_report_timing(csm_report *r, const char *name, const char *doc)
{
    for (int k = 0; k < r->ntimings; k++)
        if (strcmp(r->timing_name[k], name) == 0) return k;
    if (r->ntimings == CSM_MAX_TIMINGS) return -1;
    r->timing_name[r->ntimings] = name;
    r->timing_doc[r->ntimings] = doc;
    return r->ntimings++;
}

void csm_report_free(csm_report *r)
{
    free(r->events);
    memset(r, 0, sizeof *r);
}

double csm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void csm_object_frame(const csm_particles *P, const double *x, int32_t lo, int32_t hi, double M, double com[3],
                      double Iinv[9])
{
    double inertia[9] = {0};
    com[0] = com[1] = com[2] = 0;
    for (int32_t i = lo; i < hi; i++)
        for (int d = 0; d < 3; d++) com[d] += P->mass[i] / M * x[3 * i + d];
    for (int32_t i = lo; i < hi; i++) {
        double q[3] = {x[3 * i] - com[0], x[3 * i + 1] - com[1], x[3 * i + 2] - com[2]};
        double qq = csm_v3_dot(q, q);
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) inertia[3 * a + b] += P->mass[i] / M * ((a == b) * qq - q[a] * q[b]);
    }
    csm_pinv_sym3(inertia, 1e-12, Iinv);
}

void csm_object_motion(const csm_particles *P, int32_t lo, int32_t hi, double M, const double com[3],
                       const double Iinv[9], const double *v, const double *f, double h, double vel[3], double omega[3])
{
    double L[3] = {0, 0, 0};
    vel[0] = vel[1] = vel[2] = 0;
    for (int32_t i = lo; i < hi; i++) {
        double q[3] = {P->x[3 * i] - com[0], P->x[3 * i + 1] - com[1], P->x[3 * i + 2] - com[2]}, vi[3], l[3];
        for (int d = 0; d < 3; d++) vi[d] = v[3 * i + d] + (f ? h * f[3 * i + d] * P->inv_mass[i] : 0.0);
        csm_v3_cross(q, vi, l);
        for (int d = 0; d < 3; d++) {
            vel[d] += P->mass[i] / M * vi[d];
            L[d] += P->mass[i] / M * l[d];
        }
    }
    csm_m3_mul_v3(Iinv, L, omega);
}
