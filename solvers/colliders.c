/* Colliders: applied after the integrator as a position projection plus a velocity response
   (restitution on the normal part, Coulomb friction on the tangential part). Pinned particles
   (inverse mass 0) never move. */
#include "csm_math.h"
#include "plugin.h"
#include "sim.h"

#include <math.h>
#include <stdlib.h>

static const csm_param_spec plane_params[] = {
    {"normal", CSM_VEC3, 0, -1e9, 1e9, "plane normal (normalised; points out of the solid side)", NULL, {0, 1, 0}, NULL, 0},
    {"offset", CSM_REAL, 0, -1e9, 1e9, "the plane is normal . x = offset", NULL, {0}, NULL, 0},
    {"restitution", CSM_REAL, 0.5, 0, 1, "normal speed kept after a bounce", NULL, {0}, NULL, 0},
    {"friction", CSM_REAL, 0.3, 0, 100, "Coulomb friction coefficient", NULL, {0}, NULL, 0},
    {"bounce_threshold", CSM_REAL, 0.5, 0, 1e9,
     "approach speeds below this get no restitution, so resting contact stays at rest (as Box2D's restitution threshold)", NULL, {0}, NULL, 0},
    CSM_PARAM_END,
};

typedef struct plane {
    double n[3], offset, restitution, friction, threshold;
} plane;

static int plane_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const double *nv = csm_cfg_vec(cfg, "normal");
    double len = csm_v3_norm(nv);
    if (!(len > 0))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "line %d: colliders plane: normal must not be zero", cfg->line);
    plane *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    for (int d = 0; d < 3; d++) s->n[d] = nv[d] / len;
    s->offset = csm_cfg_num(cfg, "offset");
    s->restitution = csm_cfg_num(cfg, "restitution");
    s->friction = csm_cfg_num(cfg, "friction");
    s->threshold = csm_cfg_num(cfg, "bounce_threshold");
    *state = s;
    return 0;
}

static int plane_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    const plane *s = state;
    csm_particles *P = &w->P;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        double *x = &P->x[3 * i], *v = &P->v[3 * i];
        double depth = csm_v3_dot(s->n, x) - s->offset;
        if (depth >= 0) continue;
        for (int d = 0; d < 3; d++) x[d] -= depth * s->n[d];
        double vn = csm_v3_dot(s->n, v);
        if (vn >= 0) continue;
        double vt[3] = {v[0] - vn * s->n[0], v[1] - vn * s->n[1], v[2] - vn * s->n[2]};
        double e = -vn < s->threshold ? 0.0 : s->restitution;
        double dvn = -(1.0 + e) * vn; /* normal impulse per unit mass */
        double vt_len = csm_v3_norm(vt);
        double keep = vt_len > 0 ? fmax(0.0, 1.0 - s->friction * dvn / vt_len) : 0.0;
        for (int d = 0; d < 3; d++) v[d] = keep * vt[d] - e * vn * s->n[d];
    }
    return 0;
}

const csm_collider csm_collider_plane = {
    "plane", "half-space normal . x >= offset with restitution and Coulomb friction", plane_params,
    plane_create, plane_apply, free, NULL,
};
