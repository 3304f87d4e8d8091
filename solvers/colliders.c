/* Colliders: applied after the integrator as a position projection plus a velocity response
   (restitution on the normal part, Coulomb friction on the tangential part). Pinned particles
   (inverse mass 0) never move. */
#include "csm_math.h"
#include "plugin.h"
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RESPONSE_PARAMS                                                                            \
    {"restitution", CSM_REAL, 0.5, 0, 1, "normal speed kept after a bounce", NULL, {0}, NULL, 0},        \
    {"friction", CSM_REAL, 0.3, 0, 100, "Coulomb friction coefficient", NULL, {0}, NULL, 0},             \
    {"bounce_threshold", CSM_REAL, 0.5, 0, 1e9,                                                           \
     "approach speeds below this get no restitution, so resting contact stays at rest (as Box2D's restitution threshold)", \
     NULL, {0}, NULL, 0}

typedef struct response {
    double restitution, friction, threshold;
} response;

static void response_read(const csm_plugin_cfg *cfg, response *r)
{
    r->restitution = csm_cfg_num(cfg, "restitution");
    r->friction = csm_cfg_num(cfg, "friction");
    r->threshold = csm_cfg_num(cfg, "bounce_threshold");
}

/* A particle found `depth` (< 0) inside a surface with unit outward normal n: project it onto the
   surface; if it approaches, reverse the normal velocity (times restitution) and take Coulomb
   friction off the tangential velocity, bounded by the normal impulse (no reversal). */
static void respond(const response *r, const double n[3], double depth, double x[3], double v[3])
{
    for (int d = 0; d < 3; d++) x[d] -= depth * n[d];
    double vn = csm_v3_dot(n, v);
    if (vn >= 0) return;
    double vt[3] = {v[0] - vn * n[0], v[1] - vn * n[1], v[2] - vn * n[2]};
    double e = -vn < r->threshold ? 0.0 : r->restitution;
    double dvn = -(1.0 + e) * vn; /* normal impulse per unit mass */
    double vt_len = csm_v3_norm(vt);
    double keep = vt_len > 0 ? fmax(0.0, 1.0 - r->friction * dvn / vt_len) : 0.0;
    for (int d = 0; d < 3; d++) v[d] = keep * vt[d] - e * vn * n[d];
}

static const csm_param_spec plane_params[] = {
    {"normal", CSM_VEC3, 0, -1e9, 1e9, "plane normal (normalised; points out of the solid side)", NULL, {0, 1, 0}, NULL, 0},
    {"offset", CSM_REAL, 0, -1e9, 1e9, "the plane is normal . x = offset", NULL, {0}, NULL, 0},
    RESPONSE_PARAMS,
    CSM_PARAM_END,
};

typedef struct plane {
    double n[3], offset;
    response r;
} plane;

static int plane_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const double *nv = csm_cfg_vec(cfg, "normal");
    double len = csm_v3_norm(nv);
    if (!(len > 0)) return csm_cfg_fail(cfg, err, "normal must not be zero");
    plane *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    for (int d = 0; d < 3; d++) s->n[d] = nv[d] / len;
    s->offset = csm_cfg_num(cfg, "offset");
    response_read(cfg, &s->r);
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
        double depth = csm_v3_dot(s->n, &P->x[3 * i]) - s->offset;
        if (depth < 0) respond(&s->r, s->n, depth, &P->x[3 * i], &P->v[3 * i]);
    }
    return 0;
}

const csm_collider csm_collider_plane = {
    "plane", "half-space normal . x >= offset with restitution and Coulomb friction", plane_params,
    plane_create, plane_apply, free, NULL,
};

static const csm_param_spec sphere_params[] = {
    {"center", CSM_VEC3, 0, -1e9, 1e9, "centre of the sphere", NULL, {0, 0, 0}, NULL, 0},
    {"radius", CSM_REAL, 0, 0, 1e9, "radius of the sphere", NULL, {0}, NULL, CSM_PARAM_REQUIRED},
    {"inside", CSM_BOOL, 0, 0, 1, "false: a solid ball particles stay out of; true: a shell particles stay in", NULL,
     {0}, NULL, 0},
    RESPONSE_PARAMS,
    CSM_PARAM_END,
};

typedef struct sphere {
    double c[3], radius;
    int inside;
    response r;
} sphere;

static int sphere_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    if (!(csm_cfg_num(cfg, "radius") > 0)) return csm_cfg_fail(cfg, err, "radius must be positive");
    sphere *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    memcpy(s->c, csm_cfg_vec(cfg, "center"), sizeof s->c);
    s->radius = csm_cfg_num(cfg, "radius");
    s->inside = (int)csm_cfg_num(cfg, "inside");
    response_read(cfg, &s->r);
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
        double r[3] = {x[0] - s->c[0], x[1] - s->c[1], x[2] - s->c[2]};
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
    "sphere", "a solid ball (or, with inside, a spherical shell) with restitution and Coulomb friction",
    sphere_params, sphere_create, sphere_apply, free, NULL,
};
