/* Shared test helper: a world of random particles with three overlapping clusters, built without a
   config (test_kernel, test_lanes). */
#ifndef CSM_TEST_RANDOM_WORLD_H
#define CSM_TEST_RANDOM_WORLD_H

#include "check.h"

#include "clustering.h"
#include "commands.h"
#include "rng.h"
#include "svd3.h"
#include "world.h"

#include <string.h>

/* A world of n random particles in [-1,1]^3 with three overlapping clusters. */
static inline void make_world(csm_world *w, int32_t n, const char *rotation, csm_svd3_fn svd, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    csm_register_builtins();
    w->rotation = csm_registry_find(CSM_KIND_ROTATION, rotation);
    assert_non_null(w->rotation);
    w->svd = svd;
    assert_int_equal(csm_particles_alloc(&w->P, n), 0);
    csm_rng r;
    csm_rng_seed(&r, seed, 0);
    for (int32_t i = 0; i < n; i++) {
        for (int d = 0; d < 3; d++) w->P.rest[3 * i + d] = w->P.x[3 * i + d] = 2 * csm_rng_uniform(&r) - 1;
        w->P.mass[i] = 0.5 + csm_rng_uniform(&r);
        w->P.inv_mass[i] = 1 / w->P.mass[i];
    }
    csm_cluster_builder b;
    csm_builder_init(&b);
    for (int c = 0; c < 3; c++) {
        csm_builder_begin(&b);
        for (int32_t i = 0; i < n; i++)
            if (w->P.rest[3 * i] >= -1 + 0.6 * c && w->P.rest[3 * i] <= -0.2 + 0.6 * c) csm_builder_add(&b, i, 0);
        csm_builder_end(&b);
    }
    csm_builder_equal_weights(&b, 0, n);
    assert_int_equal(csm_clusters_from_builder(&w->C, &b, &w->P), 0);
    csm_builder_free(&b);
}

static inline void free_world(csm_world *w)
{
    csm_particles_free(&w->P);
    csm_clusters_free(&w->C);
}

#endif
