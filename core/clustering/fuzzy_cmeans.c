/* fuzzy_cmeans: overlapping clusters from the fuzzy c-means update core keeps (clustering.h). */
#include "clustering.h"
#include "error.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    if (!centres || !u || !d2) CSM_OUT_OF_MEMORY();

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
    if (!norm || !best || !cut) CSM_OUT_OF_MEMORY();
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
