/* External forces. Each adds to w->P.force for the current step. */
#include "csm_math.h"
#include "plugin.h"
#include "sim.h"

#include <stdlib.h>
#include <string.h>

static const csm_param_spec gravity_params[] = {
    {"g", CSM_VEC3, 0, -1e6, 1e6, "gravitational acceleration", NULL, {0, -9.81, 0}, NULL, 0},
    CSM_PARAM_END,
};

typedef struct gravity {
    double g[3];
} gravity;

static int gravity_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    gravity *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    memcpy(s->g, csm_cfg_vec(cfg, "g"), sizeof s->g);
    *state = s;
    return 0;
}

static int gravity_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    const gravity *s = state;
    csm_particles *P = &w->P;
    for (int32_t i = 0; i < P->n; i++)
        for (int d = 0; d < 3; d++) P->force[3 * i + d] += P->mass[i] * s->g[d];
    return 0;
}

static double gravity_potential(const csm_world *w, const void *state)
{
    const gravity *s = state;
    const csm_particles *P = &w->P;
    double e = 0;
    for (int32_t i = 0; i < P->n; i++) e -= P->mass[i] * csm_v3_dot(s->g, &P->x[3 * i]);
    return e;
}

const csm_force csm_force_gravity = {
    "gravity", "uniform gravitational acceleration g (f = m g)", gravity_params,
    gravity_create, gravity_apply, free, gravity_potential,
};
