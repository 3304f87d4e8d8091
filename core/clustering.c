#include "clustering.h"

#include "geometry.h"
#include "rng.h"

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

/* ------------------------------------------------------------------------------------------ */
/* random_radius: Bargteil-Jones 2014 Sec 2, Eq 3.                                             */

static const csm_param_spec random_radius_params[] = {
    {"radius", CSM_REAL, 0.3, 1e-9, 1e9, "neighbourhood radius d of a cluster (rest space)", NULL, {0}, NULL, 0},
    CSM_PARAM_END,
};

typedef struct gather_ctx {
    csm_cluster_builder *b;
    char *covered;
    int32_t first;
} gather_ctx;

static void gather_member(int32_t j, void *user)
{
    gather_ctx *g = user;
    csm_builder_add(g->b, g->first + j, 0.0);
    g->covered[j] = 1;
}

static int random_radius_build(const csm_plugin_cfg *cfg, const csm_particles *p, int32_t first,
                               int32_t count, uint64_t seed, csm_cluster_builder *out, csm_error *err)
{
    double d = csm_cfg_num(cfg, "radius");
    const double *rest = &p->rest[3 * first];
    csm_grid grid;
    if (csm_grid_build(&grid, rest, count, d)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    char *covered = calloc((size_t)count, 1);
    int32_t *order = malloc(sizeof *order * (size_t)count);
    if (!covered || !order) abort();
    /* "iteratively choose a random particle ... until all particles are in at least one
       cluster": a random permutation, skipping particles already covered. */
    csm_rng rng;
    csm_rng_seed(&rng, seed, 0xc105e7u + (uint64_t)first);
    for (int32_t i = 0; i < count; i++) order[i] = i;
    for (int32_t i = count - 1; i > 0; i--) {
        int32_t j = (int32_t)csm_rng_below(&rng, (uint32_t)i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    gather_ctx g = {out, covered, first};
    for (int32_t s = 0; s < count; s++) {
        int32_t i = order[s];
        if (covered[i]) continue;
        csm_builder_begin(out);
        csm_grid_query(&grid, rest, &rest[3 * i], d, gather_member, &g);
        csm_builder_end(out);
    }
    free(order);
    free(covered);
    csm_grid_free(&grid);
    csm_builder_equal_weights(out, first, count);
    return 0;
}

const csm_clustering csm_clustering_random_radius = {
    "random_radius",
    "Bargteil-Jones 2014: clusters of all particles within a radius of random seeds, w_ic = 1/n_i",
    random_radius_params,
    random_radius_build,
};
