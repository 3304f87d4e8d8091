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

/* ---- forces on one object (or all), about its current centre of mass ------------------------ */

#define OBJECT_PARAM                                                                               \
    {"object", CSM_INT, -1, -1, 1e6, "index of the object it acts on (-1: every object)", NULL, {0}, NULL, 0}
#define UNTIL_PARAM                                                                                \
    {"until", CSM_REAL, 4, 0, 1e9, "acts while the simulation time is below this (seconds)", NULL, {0}, NULL, 0}

/* Centre of mass of the particles [lo, hi). */
static void object_com(const csm_particles *P, int32_t lo, int32_t hi, double c[3])
{
    double M = 0, s[3] = {0, 0, 0};
    for (int32_t i = lo; i < hi; i++) {
        M += P->mass[i];
        for (int d = 0; d < 3; d++) s[d] += P->mass[i] * P->x[3 * i + d];
    }
    for (int d = 0; d < 3; d++) c[d] = M > 0 ? s[d] / M : 0;
}

typedef struct about_com {
    double scale, until, axis[3];
    int object, axis_index;
} about_com;

/* The objects a force acts on, checked against the world: [first, last). */
static int object_range(const csm_plugin_cfg *cfg, const csm_world *w, int object, csm_error *err)
{
    if (object >= w->nobjects)
        return csm_cfg_fail(cfg, err, "object = %d, but the config has %d object(s)", object, w->nobjects);
    return 0;
}

static const csm_param_spec compress_params[] = {
    {"scale", CSM_REAL, 10, -1e9, 1e9,
     "s: acceleration per metre of distance from the centre of mass along the axis (1/s^2)", NULL, {0}, NULL, 0},
    {"axis", CSM_ENUM, 0, 0, 2, "the world axis it squeezes along", "x|y|z", {0}, NULL, 0},
    UNTIL_PARAM,
    OBJECT_PARAM,
    CSM_PARAM_END,
};

static int compress_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    int object = (int)csm_cfg_num(cfg, "object");
    if (object_range(cfg, w, object, err)) return -1;
    about_com *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->scale = csm_cfg_num(cfg, "scale");
    s->until = csm_cfg_num(cfg, "until");
    s->axis_index = (int)csm_cfg_num(cfg, "axis");
    s->object = object;
    *state = s;
    return 0;
}

/* Falkenstein 2017 Sec 4: f = s (-x, 0, 0), x measured from the object's centre of mass; here as
   an acceleration, a_i = -s (x_i - c)_axis e_axis, so a result does not depend on particle count
   or mass. The forces sum to zero. */
static int compress_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    const about_com *s = state;
    if (w->time >= s->until) return 0;
    csm_particles *P = &w->P;
    int a = s->axis_index;
    for (int o = 0; o < w->nobjects; o++) {
        if (s->object >= 0 && o != s->object) continue;
        int32_t lo = w->object_first[o], hi = w->object_first[o + 1];
        double c[3];
        object_com(P, lo, hi, c);
        for (int32_t i = lo; i < hi; i++) P->force[3 * i + a] -= P->mass[i] * s->scale * (P->x[3 * i + a] - c[a]);
    }
    return 0;
}

const csm_force csm_force_compress = {
    "compress", "squeeze along an axis towards the centre of mass until a time (Falkenstein 2017 Sec 4)",
    compress_params, compress_create, compress_apply, free, NULL,
};

static const csm_param_spec twist_params[] = {
    {"scale", CSM_REAL, 1, -1e9, 1e9, "s: angular acceleration of each half (1/s^2)", NULL, {0}, NULL, 0},
    {"axis", CSM_VEC3, 0, -1e9, 1e9, "twist axis through the centre of mass (normalised)", NULL, {1, 0, 0}, NULL, 0},
    UNTIL_PARAM,
    OBJECT_PARAM,
    CSM_PARAM_END,
};

static int twist_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    int object = (int)csm_cfg_num(cfg, "object");
    if (object_range(cfg, w, object, err)) return -1;
    const double *ax = csm_cfg_vec(cfg, "axis");
    double len = csm_v3_norm(ax);
    if (!(len > 0)) return csm_cfg_fail(cfg, err, "axis must not be zero");
    about_com *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->scale = csm_cfg_num(cfg, "scale");
    s->until = csm_cfg_num(cfg, "until");
    for (int d = 0; d < 3; d++) s->axis[d] = ax[d] / len;
    s->object = object;
    *state = s;
    return 0;
}

/* The two halves of the object (split by the plane through its centre of mass normal to the
   axis) turned in opposite directions: a_i = s sign((x_i - c).a) a x (x_i - c). */
static int twist_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    const about_com *s = state;
    if (w->time >= s->until) return 0;
    csm_particles *P = &w->P;
    for (int o = 0; o < w->nobjects; o++) {
        if (s->object >= 0 && o != s->object) continue;
        int32_t lo = w->object_first[o], hi = w->object_first[o + 1];
        double c[3];
        object_com(P, lo, hi, c);
        for (int32_t i = lo; i < hi; i++) {
            double r[3] = {P->x[3 * i] - c[0], P->x[3 * i + 1] - c[1], P->x[3 * i + 2] - c[2]}, t[3];
            double side = csm_v3_dot(r, s->axis);
            double sgn = side > 0 ? 1.0 : side < 0 ? -1.0 : 0.0;
            csm_v3_cross(s->axis, r, t);
            for (int d = 0; d < 3; d++) P->force[3 * i + d] += P->mass[i] * s->scale * sgn * t[d];
        }
    }
    return 0;
}

const csm_force csm_force_twist = {
    "twist", "turn the two halves of an object in opposite directions about an axis until a time",
    twist_params, twist_create, twist_apply, free, NULL,
};

static const csm_param_spec drag_params[] = {
    {"coefficient", CSM_REAL, 0.1, 0, 1e9, "k: a_i = -k (v_i - wind), per second", NULL, {0}, NULL, 0},
    {"wind", CSM_VEC3, 0, -1e9, 1e9, "velocity of the surrounding air", NULL, {0, 0, 0}, NULL, 0},
    CSM_PARAM_END,
};

typedef struct drag {
    double k, wind[3];
} drag;

static int drag_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    drag *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->k = csm_cfg_num(cfg, "coefficient");
    memcpy(s->wind, csm_cfg_vec(cfg, "wind"), sizeof s->wind);
    *state = s;
    return 0;
}

/* Linear (Stokes) drag, f_i = -k m_i (v_i - wind). */
static int drag_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    const drag *s = state;
    csm_particles *P = &w->P;
    for (int32_t i = 0; i < P->n; i++)
        for (int d = 0; d < 3; d++) P->force[3 * i + d] -= s->k * P->mass[i] * (P->v[3 * i + d] - s->wind[d]);
    return 0;
}

const csm_force csm_force_drag = {
    "drag", "linear air drag towards the wind velocity (f = -k m (v - wind))", drag_params,
    drag_create, drag_apply, free, NULL,
};
