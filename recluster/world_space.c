/* `world_space`: the "no optimization" baseline of Falkenstein 2017 Sec 4 (after Chentanez et al.
   2016, without their estimate of F^e). Removal and fades are those of `embedded`; a particle in
   fewer than min_clusters clusters that are not being removed seeds a cluster of every particle
   of its object within `radius` of it in world space, whose current world positions become the
   rest shape, elastic deformation included. */
#include "csm_math.h"
#include "engine.h"

#include <stdlib.h>
#include <string.h>

typedef struct world_space_params {
    csm_rc_common_params common;
    int32_t min_clusters;
    double radius;
} world_space_params;

static const csm_param_spec world_space_table[] = {
    CSM_RC_COMMON_PARAMS(world_space_params),
    CSM_P_INT(world_space_params, min_clusters, 1, 1, 1e6,
              "a particle in fewer clusters (not counting those being removed) seeds one"),
    CSM_P_REAL(world_space_params, radius, 0, 0, 1e9,
               "members within this world-space distance of the seed (0: the mean width of the initial clusters)"),
    CSM_PARAM_END,
};

static int build_world_space(csm_rc_engine *e, csm_world *w, int32_t seed, csm_recluster_event *ev, csm_error *err)
{
    (void)ev;
    const csm_particles *P = &w->P;
    int32_t o = P->object[seed], lo = w->object_first[o], hi = w->object_first[o + 1];
    const double *xs = &P->x[3 * seed];
    double r2 = e->radius * e->radius;
    e->nnew = 0;
    for (int32_t i = lo; i < hi; i++) {
        const double *xi = &P->x[3 * i];
        double d[3] = {xi[0] - xs[0], xi[1] - xs[1], xi[2] - xs[2]};
        if (csm_v3_dot(d, d) > r2 && i != seed) continue;
        if (csm_rc_new_reserve(e, e->nnew + 1)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for the new cluster");
        e->new_member[e->nnew] = i;
        e->new_wbase[e->nnew] = csm_rc_mean_live_weight(&w->C, i);
        memcpy(&e->new_p[3 * e->nnew], xi, 3 * sizeof(double));
        e->nnew++;
    }
    return 0;
}

static int world_space_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    csm_rc_engine *e;
    if (csm_rc_engine_create(cfg, w, &e, err)) return -1;
    e->build = build_world_space;
    const world_space_params *p = csm_cfg_params(cfg);
    e->min_clusters = p->min_clusters;
    e->radius = p->radius;
    if (e->radius == 0) {
        double sum = 0;
        for (int32_t c = 0; c < w->C.k; c++) sum += w->C.width[c];
        e->radius = w->C.k ? sum / w->C.k : 0;
    }
    *state = e;
    return 0;
}

const csm_reclusterer csm_reclusterer_world_space = {
    .version = 1,
    .name = "world_space",
    .summary = "Falkenstein 2017 Sec 4 baseline: removal and fades as embedded, new clusters gathered by radius in "
               "world space",
    .params = world_space_table,
    .create = world_space_create,
    .apply = csm_rc_engine_apply,
    .destroy = csm_rc_engine_destroy,
};
