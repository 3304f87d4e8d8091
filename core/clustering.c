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
/* random_radius: Bargteil-Jones 2014 Sec 2, Eq 3.                                             */

typedef struct random_radius_params {
    double radius;
    int32_t coverage;
} random_radius_params;

static const csm_param_spec random_radius_table[] = {
    CSM_P_REAL(random_radius_params, radius, 0.3, 1e-9, 1e9, "neighbourhood radius d of a cluster (rest space)"),
    CSM_P_INT(random_radius_params, coverage, 1, 1, 100,
              "a particle seeds a cluster unless it is already in this many (Bargteil-Jones: 1; more gives denser "
              "overlap)"),
    CSM_PARAM_END,
};

typedef struct gather_ctx {
    csm_cluster_builder *b;  /* NULL: only count coverage */
    unsigned char *covered; /* clusters holding each particle, saturating at 255 */
    int32_t first;
} gather_ctx;

static void gather_member(int32_t j, void *user)
{
    gather_ctx *g = user;
    if (g->b) csm_builder_add(g->b, g->first + j, 0.0);
    else if (g->covered[j] < 255) g->covered[j]++;
}

/* Clusters of every particle within radius d (rest space) of each seed in `order`; a seed
   already in `coverage` clusters starts none (0: every seed starts one). Weights w_ic = 1 / n_i.
   The seeds are chosen in `order` and their clusters stored by seed index, so that clusters
   next to each other in memory are next to each other in space (their members share cache
   lines when fitted one after another). */
static int radius_clusters(const csm_particles *p, int32_t first, int32_t count, double d,
                           const int32_t *order, int coverage, csm_cluster_builder *out, csm_error *err)
{
    const double *rest = &p->rest[3 * first];
    csm_grid grid;
    if (csm_grid_build(&grid, rest, count, d)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    unsigned char *covered = calloc((size_t)count, 1), *seed = calloc((size_t)count, 1);
    if (!covered || !seed) abort();
    gather_ctx g = {NULL, covered, first};
    for (int32_t s = 0; s < count; s++) {
        int32_t i = order ? order[s] : s;
        if (coverage > 0 && covered[i] >= coverage) continue;
        seed[i] = 1;
        csm_grid_query(&grid, rest, &rest[3 * i], d, gather_member, &g);
    }
    g.b = out;
    for (int32_t i = 0; i < count; i++) {
        if (!seed[i]) continue;
        csm_builder_begin(out);
        csm_grid_query(&grid, rest, &rest[3 * i], d, gather_member, &g);
        csm_builder_end(out);
    }
    free(covered);
    free(seed);
    csm_grid_free(&grid);
    csm_builder_equal_weights(out, first, count);
    return 0;
}

static int random_radius_build(const csm_plugin_cfg *cfg, const csm_particles *p, int32_t first,
                               int32_t count, uint64_t seed, csm_cluster_builder *out, csm_error *err)
{
    int32_t *order = malloc(sizeof *order * ((size_t)count + 1));
    if (!order) abort();
    /* "iteratively choose a random particle ... until all particles are in at least one
       cluster": a random permutation, skipping particles already covered (`coverage` times;
       more than once gives the denser overlap of region-based methods). */
    csm_rng rng;
    csm_rng_seed(&rng, seed, 0xc105e7u + (uint64_t)first);
    for (int32_t i = 0; i < count; i++) order[i] = i;
    for (int32_t i = count - 1; i > 0; i--) {
        int32_t j = (int32_t)csm_rng_below(&rng, (uint32_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    const random_radius_params *rp = csm_cfg_params(cfg);
    int rc = radius_clusters(p, first, count, rp->radius, order, rp->coverage, out, err);
    free(order);
    return rc;
}

const csm_clustering csm_clustering_random_radius = {
    .version = 1,
    .name = "random_radius",
    .summary = "Bargteil-Jones 2014: clusters of all particles within a radius of random seeds, w_ic = 1/n_i",
    .params = random_radius_table,
    .build = random_radius_build,
};

/* ------------------------------------------------------------------------------------------ */
/* per_particle: Bender et al., region-based shape matching: one region per particle, holding   */
/* every particle within a radius of it; modified masses m_i / |R_i| are w_ic = 1 / n_i.        */

typedef struct per_particle_params {
    double radius;
} per_particle_params;

static const csm_param_spec per_particle_table[] = {
    CSM_P_REAL(per_particle_params, radius, 0.15, 1e-9, 1e9, "region radius around each particle (rest space)"),
    CSM_PARAM_END,
};

static int per_particle_build(const csm_plugin_cfg *cfg, const csm_particles *p, int32_t first,
                              int32_t count, uint64_t seed, csm_cluster_builder *out, csm_error *err)
{
    (void)seed;
    const per_particle_params *pp = csm_cfg_params(cfg);
    return radius_clusters(p, first, count, pp->radius, NULL, 0, out, err);
}

const csm_clustering csm_clustering_per_particle = {
    .version = 1,
    .name = "per_particle",
    .summary = "Bender et al.: one region per particle (all particles within a radius), modified masses m_i / |R_i|",
    .params = per_particle_table,
    .build = per_particle_build,
};

/* ------------------------------------------------------------------------------------------ */
/* fuzzy_cmeans: the fuzzy c-means variant of Jones et al. 2015 (Falkenstein 2017 Sec 2.3.1):   */
/* alternate memberships u_ic = 1 / sum_j (d_ic / d_ij)^(2/(m-1)) and centres (the u^m-weighted */
/* centre of mass) until no membership changes by more than `tolerance`. A particle joins every */
/* cluster with u_ic >= threshold * max_c u_ic, and its weights w_ic are u_ic (or              */
/* u_ic^m with kernel: fuzzified) renormalised over those clusters, so sum_c w_ic = 1.           */

enum { KERNEL_MEMBERSHIP, KERNEL_FUZZIFIED };

typedef struct fuzzy_cmeans_params {
    int32_t count, max_iterations;
    double m, threshold, tolerance;
    int kernel;
} fuzzy_cmeans_params;

static const csm_param_spec fuzzy_cmeans_table[] = {
    CSM_P_INT(fuzzy_cmeans_params, count, 20, 1, 1e7, "number of clusters (per object; at most its particle count)"),
    CSM_P_REAL(fuzzy_cmeans_params, m, 2, 1.01, 100, "fuzziness exponent m > 1 (memberships use the exponent 2/(m-1))"),
    CSM_P_ENUM(fuzzy_cmeans_params, kernel, KERNEL_MEMBERSHIP, "membership|fuzzified",
               "weights from the memberships u, or from u^m"),
    CSM_P_REAL(fuzzy_cmeans_params, threshold, 0.3, 0, 1,
               "a particle joins every cluster whose membership is at least this fraction of its largest (overlap)"),
    CSM_P_REAL(fuzzy_cmeans_params, tolerance, 1e-6, 0, 1, "stop when no membership changes by more than this"),
    CSM_P_INT(fuzzy_cmeans_params, max_iterations, 200, 1, 1e6, "iterations at most"),
    CSM_PARAM_END,
};

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

static int fuzzy_cmeans_build(const csm_plugin_cfg *cfg, const csm_particles *p, int32_t first,
                              int32_t count, uint64_t seed, csm_cluster_builder *out, csm_error *err)
{
    const fuzzy_cmeans_params *fp = csm_cfg_params(cfg);
    int32_t k = fp->count;
    double m = fp->m, threshold = fp->threshold;
    double tol = fp->tolerance;
    int fuzzified = fp->kernel == KERNEL_FUZZIFIED;
    int max_it = fp->max_iterations;
    if (k > count)
        return csm_cfg_fail(cfg, err, "count = %d, but an object has only %d particles", k, count);
    const double *x = &p->rest[3 * first];
    const double *mass = &p->mass[first];
    double *centres = malloc(sizeof(double) * 3 * (size_t)k);
    double *u = calloc((size_t)count * (size_t)k, sizeof *u);
    double *d2 = malloc(sizeof(double) * (size_t)count);
    if (!centres || !u || !d2) abort();

    /* k-means++ seeding (Arthur and Vassilvitskii 2007), from the run's seed */
    csm_rng rng;
    csm_rng_seed(&rng, seed, 0xfc3u + (uint64_t)first);
    int32_t s0 = (int32_t)csm_rng_below(&rng, (uint32_t)count);
    memcpy(centres, &x[3 * s0], sizeof(double) * 3);
    for (int32_t i = 0; i < count; i++) d2[i] = INFINITY;
    for (int32_t c = 1; c < k; c++) {
        double total = 0;
        for (int32_t i = 0; i < count; i++) {
            const double *q = &x[3 * i], *z = &centres[3 * (c - 1)];
            double dd = (q[0] - z[0]) * (q[0] - z[0]) + (q[1] - z[1]) * (q[1] - z[1]) + (q[2] - z[2]) * (q[2] - z[2]);
            d2[i] = fmin(d2[i], dd);
            total += d2[i];
        }
        int32_t pick = count - 1;
        double r = csm_rng_uniform(&rng) * total, acc = 0;
        for (int32_t i = 0; i < count; i++) {
            acc += d2[i];
            if (acc > r && d2[i] > 0) {
                pick = i;
                break;
            }
        }
        memcpy(&centres[3 * c], &x[3 * pick], sizeof(double) * 3);
    }

    csm_fcm_iterate(x, mass, count, centres, k, NULL, m, tol, max_it, u);

    /* membership -> clusters: keep u >= threshold * (the particle's largest u), so its best
       cluster always; weights renormalised per particle */
    double *norm = calloc((size_t)count, sizeof *norm), *cut = malloc(sizeof(double) * (size_t)count);
    int32_t *best = malloc(sizeof *best * (size_t)count);
    if (!norm || !best || !cut) abort();
    for (int32_t i = 0; i < count; i++) {
        const double *ui = &u[(size_t)i * (size_t)k];
        best[i] = 0;
        for (int32_t c = 1; c < k; c++)
            if (ui[c] > ui[best[i]]) best[i] = c;
        cut[i] = threshold * ui[best[i]];
        for (int32_t c = 0; c < k; c++)
            if (ui[c] >= cut[i]) norm[i] += fuzzified ? pow(ui[c], m) : ui[c];
    }
    for (int32_t c = 0; c < k; c++) {
        int32_t before = out->m;
        csm_builder_begin(out);
        for (int32_t i = 0; i < count; i++) {
            double uc = u[(size_t)i * (size_t)k + c];
            if (uc >= cut[i]) csm_builder_add(out, first + i, (fuzzified ? pow(uc, m) : uc) / norm[i]);
        }
        if (out->m == before) { /* a centre no particle joined: drop it */
            out->k--;
            continue;
        }
        csm_builder_end(out);
    }
    free(norm);
    free(cut);
    free(best);
    free(centres);
    free(u);
    free(d2);
    return 0;
}

const csm_clustering csm_clustering_fuzzy_cmeans = {
    .version = 1,
    .name = "fuzzy_cmeans",
    .summary = "Jones et al. 2015 (Falkenstein Sec 2.3.1): fuzzy c-means, overlapping clusters with weights w_ic "
               "from memberships",
    .params = fuzzy_cmeans_table,
    .build = fuzzy_cmeans_build,
};
