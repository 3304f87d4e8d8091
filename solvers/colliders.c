/* Colliders: applied after the integrator as a position projection plus a velocity response
   (restitution on the normal part, Coulomb friction on the tangential part). Pinned particles
   (inverse mass 0) never move. */
#include "csm_math.h"
#include "plugin.h"
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct response {
    double restitution, friction, bounce_threshold;
} response;

/* The response rows of a collider whose parameter struct T holds a `response r`. */
#define RESPONSE_PARAMS(T)                                                                         \
    CSM_PARAM_FIELD("restitution", CSM_REAL, T, r.restitution, 0.5, 0, 1, "normal speed kept after a bounce", \
                    NULL, 0, 0, 0, NULL, 0),                                                       \
    CSM_PARAM_FIELD("friction", CSM_REAL, T, r.friction, 0.3, 0, 100, "Coulomb friction coefficient", NULL, 0, \
                    0, 0, NULL, 0),                                                                \
    CSM_PARAM_FIELD("bounce_threshold", CSM_REAL, T, r.bounce_threshold, 0.5, 0, 1e9,              \
                    "approach speeds below this get no restitution, so resting contact stays at rest (as Box2D's " \
                    "restitution threshold)",                                                      \
                    NULL, 0, 0, 0, NULL, 0)

/* A particle found `depth` (< 0) inside a surface with unit outward normal n: project it onto the
   surface; if it approaches, reverse the normal velocity (times restitution) and take Coulomb
   friction off the tangential velocity, bounded by the normal impulse (no reversal). */
static void respond(const response *r, const double n[3], double depth, double x[3], double v[3])
{
    for (int d = 0; d < 3; d++) x[d] -= depth * n[d];
    double vn = csm_v3_dot(n, v);
    if (vn >= 0) return;
    double vt[3] = {v[0] - vn * n[0], v[1] - vn * n[1], v[2] - vn * n[2]};
    double e = -vn < r->bounce_threshold ? 0.0 : r->restitution;
    double dvn = -(1.0 + e) * vn; /* normal impulse per unit mass */
    double vt_len = csm_v3_norm(vt);
    double keep = vt_len > 0 ? fmax(0.0, 1.0 - r->friction * dvn / vt_len) : 0.0;
    for (int d = 0; d < 3; d++) v[d] = keep * vt[d] - e * vn * n[d];
}

typedef struct plane {
    double normal[3], offset;
    response r;
} plane;

static const csm_param_spec plane_params[] = {
    CSM_P_VEC3(plane, normal, 0, 1, 0, -1e9, 1e9, "plane normal (normalised; points out of the solid side)"),
    CSM_P_REAL(plane, offset, 0, -1e9, 1e9, "the plane is normal . x = offset"),
    RESPONSE_PARAMS(plane),
    CSM_PARAM_END,
};

static int plane_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const plane *p = csm_cfg_params(cfg);
    double len = csm_v3_norm(p->normal);
    if (!(len > 0)) return csm_cfg_fail(cfg, err, "normal must not be zero");
    plane *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *s = *p;
    for (int d = 0; d < 3; d++) s->normal[d] = p->normal[d] / len;
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
        double depth = csm_v3_dot(s->normal, &P->x[3 * i]) - s->offset;
        if (depth < 0) respond(&s->r, s->normal, depth, &P->x[3 * i], &P->v[3 * i]);
    }
    return 0;
}

const csm_collider csm_collider_plane = {
    .version = 1,
    .name = "plane",
    .summary = "half-space normal . x >= offset with restitution and Coulomb friction",
    .params = plane_params,
    .create = plane_create,
    .apply = plane_apply,
    .destroy = free,
};

typedef struct sphere {
    double center[3], radius;
    int inside;
    response r;
} sphere;

static const csm_param_spec sphere_params[] = {
    CSM_P_VEC3(sphere, center, 0, 0, 0, -1e9, 1e9, "centre of the sphere"),
    CSM_PARAM_FIELD("radius", CSM_REAL, sphere, radius, 0, 0, 1e9, "radius of the sphere", NULL, 0, 0, 0, NULL,
                    CSM_PARAM_REQUIRED),
    CSM_P_BOOL(sphere, inside, 0, "false: a solid ball particles stay out of; true: a shell particles stay in"),
    RESPONSE_PARAMS(sphere),
    CSM_PARAM_END,
};

static int sphere_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const sphere *p = csm_cfg_params(cfg);
    if (!(p->radius > 0)) return csm_cfg_fail(cfg, err, "radius must be positive");
    sphere *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *s = *p;
    *state = s;
    return 0;
}

static int sphere_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    const sphere *s = state;
    csm_particles *P = &w->P;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        double *x = &P->x[3 * i];
        double r[3] = {x[0] - s->center[0], x[1] - s->center[1], x[2] - s->center[2]};
        double dist = csm_v3_norm(r);
        double depth = s->inside ? s->radius - dist : dist - s->radius;
        if (depth >= 0) continue;
        double n[3] = {0, 1, 0}; /* a particle exactly at the centre leaves upwards */
        if (dist > 0)
            for (int d = 0; d < 3; d++) n[d] = (s->inside ? -r[d] : r[d]) / dist;
        respond(&s->r, n, depth, x, &P->v[3 * i]);
    }
    return 0;
}

const csm_collider csm_collider_sphere = {
    .version = 1,
    .name = "sphere",
    .summary = "a solid ball (or, with inside, a spherical shell) with restitution and Coulomb friction",
    .params = sphere_params,
    .create = sphere_create,
    .apply = sphere_apply,
    .destroy = free,
};
