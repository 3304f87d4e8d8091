#include "clustering.h"

#include "geometry.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void csm_builder_init(csm_cluster_builder *b)
{
    memset(b, 0, sizeof *b);
    b->cap_k = 64;
    b->cap_m = 1024;
    b->offset = calloc((size_t)b->cap_k + 1, sizeof *b->offset);
    b->member = malloc(sizeof *b->member * (size_t)b->cap_m);
    b->weight = malloc(sizeof *b->weight * (size_t)b->cap_m);
    if (!b->offset || !b->member || !b->weight) abort();
}

void csm_builder_free(csm_cluster_builder *b)
{
    free(b->offset);
    free(b->member);
    free(b->weight);
    memset(b, 0, sizeof *b);
}

void csm_builder_begin(csm_cluster_builder *b)
{
    if (b->k + 1 >= b->cap_k) {
        b->cap_k *= 2;
        b->offset = realloc(b->offset, sizeof *b->offset * ((size_t)b->cap_k + 1));
        if (!b->offset) abort();
    }
    b->k++;
    b->offset[b->k] = b->m;
}

void csm_builder_add(csm_cluster_builder *b, int32_t particle, double weight)
{
    if (b->m == b->cap_m) {
        b->cap_m *= 2;
        b->member = realloc(b->member, sizeof *b->member * (size_t)b->cap_m);
        b->weight = realloc(b->weight, sizeof *b->weight * (size_t)b->cap_m);
        if (!b->member || !b->weight) abort();
    }
    b->member[b->m] = particle;
    b->weight[b->m] = weight;
    b->m++;
    b->offset[b->k] = b->m;
}

typedef struct member_weight {
    int32_t member;
    double weight;
} member_weight;

static int cmp_member(const void *a, const void *b)
{
    const member_weight *x = a, *y = b;
    return (x->member > y->member) - (x->member < y->member);
}

void csm_builder_end(csm_cluster_builder *b)
{
    if (b->k == 0) return;
    int32_t lo = b->offset[b->k - 1], hi = b->offset[b->k];
    member_weight *mw = malloc(sizeof *mw * (size_t)(hi - lo + 1));
    if (!mw) abort();
    for (int32_t j = lo; j < hi; j++) mw[j - lo] = (member_weight){b->member[j], b->weight[j]};
    qsort(mw, (size_t)(hi - lo), sizeof *mw, cmp_member);
    for (int32_t j = lo; j < hi; j++) {
        b->member[j] = mw[j - lo].member;
        b->weight[j] = mw[j - lo].weight;
    }
    free(mw);
}

void csm_builder_equal_weights(csm_cluster_builder *b, int32_t first, int32_t count)
{
    int32_t *n = calloc((size_t)count + 1, sizeof *n);
    if (!n) abort();
    for (int32_t j = 0; j < b->m; j++)
        if (b->member[j] >= first && b->member[j] < first + count) n[b->member[j] - first]++;
    for (int32_t j = 0; j < b->m; j++)
        if (b->member[j] >= first && b->member[j] < first + count) b->weight[j] = 1.0 / n[b->member[j] - first];
    free(n);
}

int csm_clusters_from_builder(csm_clusters *c, const csm_cluster_builder *b, const csm_particles *p)
{
    if (csm_clusters_alloc(c, b->k, b->m, p->n)) return -1;
    memcpy(c->offset, b->offset, sizeof *c->offset * ((size_t)b->k + 1));
    memcpy(c->member, b->member, sizeof *c->member * (size_t)b->m);
    memcpy(c->weight, b->weight, sizeof *c->weight * (size_t)b->m);
    return csm_clusters_finish(c, p);
}

static void stat_add(double s[3], double x, int first)
{
    s[0] = first || x < s[0] ? x : s[0];
    s[2] = first || x > s[2] ? x : s[2];
    s[1] += x;
}

void csm_cluster_stats_compute(const csm_clusters *c, int32_t n, csm_cluster_stats *s)
{
    memset(s, 0, sizeof *s);
    s->count = c->k;
    for (int32_t k = 0; k < c->k; k++) {
        stat_add(s->members, c->offset[k + 1] - c->offset[k], k == 0);
        stat_add(s->width, c->width[k], k == 0);
    }
    for (int32_t i = 0; i < n; i++) stat_add(s->per_particle, c->poff[i + 1] - c->poff[i], i == 0);
    if (c->k > 0) {
        s->members[1] /= c->k;
        s->width[1] /= c->k;
    }
    if (n > 0) s->per_particle[1] /= n;
}

/* ------------------------------------------------------------------------------------------ */
/* Fuzzy c-means: Jones et al. 2015, Falkenstein 2017 Sec 2.3.1 and Sec 3.2.2. The fuzzy_cmeans */
/* clustering (clustering/fuzzy_cmeans.c) and the embedded reclusterer both run it.             */

static inline double fcm_d2(const double *x, const double *z)
{
    double dx = x[0] - z[0], dy = x[1] - z[1], dz = x[2] - z[2];
    return dx * dx + dy * dy + dz * dz;
}

/* r = (d2_min / d2)^e, at most 1; e = 1 (m = 2, the usual choice) needs no pow */
static inline double fcm_ratio(double dmin, double d2, double expo)
{
    return expo == 1.0 ? dmin / d2 : pow(dmin / d2, expo);
}

/* Memberships of one point to k centres, written over its previous row u[k]; returns the
   largest change. Ignored centres get no membership. Distances are recomputed in each pass
   rather than stored, so rows can be updated in parallel without scratch. */
static double fcm_memberships(const double *x, const double *centres, const unsigned char *state, int32_t k,
                              double expo, double *u)
{
    int32_t at = -1;
    double dmin = INFINITY;
    for (int32_t c = 0; c < k; c++) {
        if (state && state[c] == CSM_FCM_IGNORED) continue;
        double d = fcm_d2(x, &centres[3 * c]);
        if (d == 0.0 && at < 0) at = c;
        if (d < dmin) dmin = d;
    }
    /* u_c = 1 / sum_j (d_c / d_j)^(2/(m-1)) = r_c / sum_j r_j with r_c = (d2_min / d2_c)^e,
       e = 1/(m-1): ratios at most 1, so no overflow for m near 1 */
    double sum = 0;
    if (at < 0)
        for (int32_t c = 0; c < k; c++)
            if (!(state && state[c] == CSM_FCM_IGNORED)) sum += fcm_ratio(dmin, fcm_d2(x, &centres[3 * c]), expo);
    double change = 0;
    for (int32_t c = 0; c < k; c++) {
        double v;
        if (state && state[c] == CSM_FCM_IGNORED) v = 0.0;
        else if (at >= 0) v = c == at ? 1.0 : 0.0; /* on a centre: all of it */
        else v = sum > 0 ? fcm_ratio(dmin, fcm_d2(x, &centres[3 * c]), expo) / sum : 0.0;
        double dv = fabs(v - u[c]);
        if (dv > change) change = dv;
        u[c] = v;
    }
    return change;
}

/* One fuzzy c-means update of Jones 2015, with held centres for the cluster optimisation of
   Falkenstein Sec 3.2.2. */
double csm_fcm_update(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                      const unsigned char *state, double m, double *u)
{
    double expo = 1.0 / (m - 1.0), change = 0;
    /* rows and centres are independent: parallel, each sum in a fixed order */
#pragma omp parallel for schedule(static) reduction(max : change)
    for (int32_t i = 0; i < count; i++)
    {
        double dv = fcm_memberships(&x[3 * i], centres, state, k, expo, &u[(size_t)i * (size_t)k]);
        if (dv > change) change = dv;
    }
    /* centres: mass- and u^m-weighted means, a block of centres at a time so that u is read
       along its rows */
    enum { BLOCK = 16 };
    int32_t blocks = (k + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
    for (int32_t b = 0; b < blocks; b++) {
        int32_t c0 = b * BLOCK, nb = k - c0 < BLOCK ? k - c0 : BLOCK;
        double W[BLOCK] = {0}, S[BLOCK][3] = {{0}};
        for (int32_t i = 0; i < count; i++) {
            const double *ui = &u[(size_t)i * (size_t)k + (size_t)c0], *xi = &x[3 * i];
            for (int32_t a = 0; a < nb; a++) {
                double wt = mass[i] * (m == 2.0 ? ui[a] * ui[a] : pow(ui[a], m));
                W[a] += wt;
                S[a][0] += wt * xi[0];
                S[a][1] += wt * xi[1];
                S[a][2] += wt * xi[2];
            }
        }
        for (int32_t a = 0; a < nb; a++) {
            int32_t c = c0 + a;
            if ((state && state[c] != CSM_FCM_FREE) || !(W[a] > 0)) continue;
            for (int d = 0; d < 3; d++) centres[3 * c + d] = S[a][d] / W[a];
        }
    }
    return change;
}

/* csm_fcm_iterate when exactly one centre is free and the rest are held or ignored (the cluster
   optimisation of Falkenstein Sec 3.2.2, a new centre among fixed neighbours). A held centre
   never moves, so each point's distances to them are summed once: with a the nearest held
   distance and H = sum_held (a / d_c)^e, the free centre at distance f gets
   u_f = (m0 / f)^e / (H (m0 / a)^e + (m0 / f)^e), m0 = min(a, f), and every held membership is
   its fixed share times g = (m0 / a)^e / (that sum), the largest of them (at the nearest held
   centre) being g. An update then costs O(points) instead of O(points k). Returns -1 when out
   of memory (the caller runs the general update). */
static int fcm_iterate_one_free(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                                const unsigned char *state, int32_t free_c, double m, double tolerance,
                                int max_iterations)
{
    double *aux = malloc(4 * (size_t)(count ? count : 1) * sizeof *aux); /* a, H, u_f, g per point */
    if (!aux) return -1;
    double expo = 1.0 / (m - 1.0);
    for (int32_t i = 0; i < count; i++) {
        double a = INFINITY, H = 0;
        for (int32_t c = 0; c < k; c++)
            if (state[c] == CSM_FCM_HELD) a = fmin(a, fcm_d2(&x[3 * i], &centres[3 * c]));
        if (a > 0 && a < INFINITY)
            for (int32_t c = 0; c < k; c++)
                if (state[c] == CSM_FCM_HELD) H += fcm_ratio(a, fcm_d2(&x[3 * i], &centres[3 * c]), expo);
        aux[4 * i] = a; /* 0: on a held centre, which takes all of it; infinite: none held */
        aux[4 * i + 1] = H;
    }
    int it = 0;
    while (it < max_iterations) {
        const double *cf = &centres[3 * free_c];
        double change = 0, W = 0, S[3] = {0, 0, 0};
        for (int32_t i = 0; i < count; i++) {
            double a = aux[4 * i], H = aux[4 * i + 1], f = fcm_d2(&x[3 * i], cf), uf, g;
            if (a == 0) {
                uf = 0, g = 1;
            } else if (f == 0 || a == INFINITY) {
                uf = 1, g = 0;
            } else {
                double m0 = fmin(a, f), held = fcm_ratio(m0, a, expo), fr = fcm_ratio(m0, f, expo);
                double total = H * held + fr;
                uf = fr / total;
                g = held / total;
            }
            if (it > 0) change = fmax(change, fmax(fabs(uf - aux[4 * i + 2]), fabs(g - aux[4 * i + 3])));
            aux[4 * i + 2] = uf;
            aux[4 * i + 3] = g;
            double wt = mass[i] * (m == 2.0 ? uf * uf : pow(uf, m));
            W += wt;
            for (int d = 0; d < 3; d++) S[d] += wt * x[3 * i + d];
        }
        if (W > 0)
            for (int d = 0; d < 3; d++) centres[3 * free_c + d] = S[d] / W;
        if (it++ > 0 && change <= tolerance) break;
    }
    free(aux);
    return it;
}

int csm_fcm_iterate(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                    const unsigned char *state, double m, double tolerance, int max_iterations, double *u)
{
    int it = 0, nfree = 0;
    int32_t free_c = -1;
    for (int32_t c = 0; state && c < k; c++)
        if (state[c] == CSM_FCM_FREE) nfree++, free_c = c;
    if (nfree == 1) it = fcm_iterate_one_free(x, mass, count, centres, k, state, free_c, m, tolerance, max_iterations);
    if (it <= 0) {
        it = 0;
        while (it < max_iterations) {
            double change = csm_fcm_update(x, mass, count, centres, k, state, m, u);
            if (it++ > 0 && change <= tolerance) break;
        }
    }
    /* memberships that match the final centres */
    double expo = 1.0 / (m - 1.0);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < count; i++) fcm_memberships(&x[3 * i], centres, state, k, expo, &u[(size_t)i * (size_t)k]);
    return it;
}
