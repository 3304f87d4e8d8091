/* The radius clusterings: random_radius (Bargteil-Jones 2014) and per_particle (Bender et al.),
   both of every particle within a radius of a seed, in rest space. */
#include "clustering.h"
#include "error.h"
#include "geometry.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

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
    if (!covered || !seed) CSM_OUT_OF_MEMORY();
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

/* Bargteil-Jones 2014 Sec 2: seeds in a random order, each gathering the particles within d. */
static int random_radius_build(const csm_plugin_cfg *cfg, const csm_particles *p, int32_t first,
                               int32_t count, uint64_t seed, csm_cluster_builder *out, csm_error *err)
{
    int32_t *order = malloc(sizeof *order * ((size_t)count + 1));
    if (!order) CSM_OUT_OF_MEMORY();
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

/* Bender et al.: a region around every particle; w_ic = 1 / n_i are the modified masses m_i / |R_i|. */
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
