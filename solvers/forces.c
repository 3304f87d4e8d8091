/* External forces. Each adds to w->P.force for the current step. */
#include "csm_math.h"
#include "plugin.h"
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct gravity {
    double g[3];
} gravity;

static const csm_param_spec gravity_params[] = {
    CSM_P_VEC3(gravity, g, 0, -9.81, 0, -1e6, 1e6, "gravitational acceleration"),
    CSM_PARAM_END,
};

static int gravity_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    gravity *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *s = *(const gravity *)csm_cfg_params(cfg);
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
    .version = 1,
    .name = "gravity",
    .summary = "uniform gravitational acceleration g (f = m g)",
    .params = gravity_params,
    .create = gravity_create,
    .apply = gravity_apply,
    .destroy = free,
    .potential = gravity_potential,
};

/* ---- forces on one object (or all), about its current centre of mass ------------------------ */

#define OBJECT_PARAM(T) CSM_P_INT(T, object, -1, -1, 1e6, "index of the object it acts on (-1: every object)")
#define UNTIL_PARAM(T) CSM_P_REAL(T, until, 4, 0, 1e9, "acts while the simulation time is below this (seconds)")

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

typedef struct compress_params {
    double scale, until;
    int axis;
    int32_t object;
} compress_params;

static const csm_param_spec compress_table[] = {
    CSM_P_REAL(compress_params, scale, 10, -1e9, 1e9,
               "s: acceleration per metre of distance from the centre of mass along the axis (1/s^2)"),
    CSM_P_ENUM(compress_params, axis, 0, "x|y|z", "the world axis it squeezes along"),
    UNTIL_PARAM(compress_params),
    OBJECT_PARAM(compress_params),
    CSM_PARAM_END,
};

static int compress_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const compress_params *p = csm_cfg_params(cfg);
    if (object_range(cfg, w, p->object, err)) return -1;
    about_com *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->scale = p->scale;
    s->until = p->until;
    s->axis_index = p->axis;
    s->object = p->object;
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
    .version = 1,
    .name = "compress",
    .summary = "squeeze along an axis towards the centre of mass until a time (Falkenstein 2017 Sec 4)",
    .params = compress_table,
    .create = compress_create,
    .apply = compress_apply,
    .destroy = free,
};

typedef struct twist_params {
    double scale, axis[3], until;
    int32_t object;
} twist_params;

static const csm_param_spec twist_table[] = {
    CSM_P_REAL(twist_params, scale, 1, -1e9, 1e9, "s: angular acceleration of each half (1/s^2)"),
    CSM_P_VEC3(twist_params, axis, 1, 0, 0, -1e9, 1e9, "twist axis through the centre of mass (normalised)"),
    UNTIL_PARAM(twist_params),
    OBJECT_PARAM(twist_params),
    CSM_PARAM_END,
};

static int twist_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const twist_params *p = csm_cfg_params(cfg);
    if (object_range(cfg, w, p->object, err)) return -1;
    const double *ax = p->axis;
    double len = csm_v3_norm(ax);
    if (!(len > 0)) return csm_cfg_fail(cfg, err, "axis must not be zero");
    about_com *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->scale = p->scale;
    s->until = p->until;
    for (int d = 0; d < 3; d++) s->axis[d] = ax[d] / len;
    s->object = p->object;
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
    .version = 1,
    .name = "twist",
    .summary = "turn the two halves of an object in opposite directions about an axis until a time",
    .params = twist_table,
    .create = twist_create,
    .apply = twist_apply,
    .destroy = free,
};

/* ---- a dead load on a slab of particles: a resultant force and torque ------------------------- */

typedef struct load_params {
    double force[3], torque[3], from, to;
    int axis;
    int32_t object;
} load_params;

static const csm_param_spec load_table[] = {
    CSM_P_VEC3(load_params, force, 0, 0, 0, -1e15, 1e15, "resultant force on the selected particles (N)"),
    CSM_P_VEC3(load_params, torque, 0, 0, 0, -1e15, 1e15,
               "resultant torque about the selection's centre of mass at rest (N m)"),
    CSM_P_ENUM(load_params, axis, 0, "x|y|z", "the rest coordinate that selects the particles"),
    CSM_P_REAL(load_params, from, -1e9, -1e9, 1e9, "select the particles whose rest coordinate is at least this (m)"),
    CSM_P_REAL(load_params, to, 1e9, -1e9, 1e9, "... and at most this (m)"),
    OBJECT_PARAM(load_params),
    CSM_PARAM_END,
};

typedef struct load {
    int32_t n, *index;
    double *f; /* 3n: the fixed force on each selected particle */
} load;

static void load_free(void *state)
{
    load *s = state;
    if (!s) return;
    free(s->index);
    free(s->f);
    free(s);
}

/* A traction on a face, as a finite-element code takes it: the resultant force F and torque T
   spread over the particles whose rest coordinate lies in [from, to], in proportion to their mass
   (on a face layer sampled with volume masses, to their share of its area), fixed in direction
   (a dead load, so it has the potential -sum f . x):
       f_i = m_i (F / M + tau x (X_i - C)),  I_C tau = T,
   with X the rest positions, C their centre of mass and I_C their inertia tensor about it; the
   tau part sums to no force and to the torque T about C. */
static int load_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const load_params *p = csm_cfg_params(cfg);
    if (object_range(cfg, w, p->object, err)) return -1;
    if (!(p->from <= p->to)) return csm_cfg_fail(cfg, err, "from = %g is above to = %g", p->from, p->to);
    const csm_particles *P = &w->P;
    load *s = calloc(1, sizeof *s);
    if (!s || !(s->index = malloc((size_t)(P->n ? P->n : 1) * sizeof *s->index))) {
        load_free(s);
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    }
    double M = 0, C[3] = {0, 0, 0};
    for (int o = 0; o < w->nobjects; o++) {
        if (p->object >= 0 && o != p->object) continue;
        for (int32_t i = w->object_first[o]; i < w->object_first[o + 1]; i++) {
            double X = P->rest[3 * i + p->axis];
            if (X < p->from || X > p->to || !(P->mass[i] > 0)) continue;
            s->index[s->n++] = i;
            M += P->mass[i];
            for (int d = 0; d < 3; d++) C[d] += P->mass[i] * P->rest[3 * i + d];
        }
    }
    if (!s->n) {
        load_free(s);
        return csm_cfg_fail(cfg, err, "no particle has a rest %c in [%g, %g]", "xyz"[p->axis], p->from, p->to);
    }
    for (int d = 0; d < 3; d++) C[d] /= M;
    double I[9] = {0}, Iinv[9], tau[3] = {0, 0, 0};
    for (int32_t k = 0; k < s->n; k++) {
        int32_t i = s->index[k];
        double r[3] = {P->rest[3 * i] - C[0], P->rest[3 * i + 1] - C[1], P->rest[3 * i + 2] - C[2]};
        double rr = csm_v3_dot(r, r);
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) I[3 * a + b] += P->mass[i] * ((a == b) * rr - r[a] * r[b]);
    }
    if (csm_v3_norm(p->torque) > 0) {
        /* a selection on a line cannot take a torque about that line */
        if (!(fabs(csm_m3_det(I)) > 1e-12 * pow(I[0] + I[4] + I[8], 3)) || csm_m3_inverse(I, Iinv) == 0.0) {
            load_free(s);
            return csm_cfg_fail(cfg, err, "the selected particles lie on a line and cannot carry a torque");
        }
        csm_m3_mul_v3(Iinv, p->torque, tau);
    }
    if (!(s->f = malloc(3 * (size_t)s->n * sizeof *s->f))) {
        load_free(s);
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    }
    for (int32_t k = 0; k < s->n; k++) {
        int32_t i = s->index[k];
        double r[3] = {P->rest[3 * i] - C[0], P->rest[3 * i + 1] - C[1], P->rest[3 * i + 2] - C[2]}, t[3];
        csm_v3_cross(tau, r, t);
        for (int d = 0; d < 3; d++) s->f[3 * k + d] = P->mass[i] * (p->force[d] / M + t[d]);
    }
    *state = s;
    return 0;
}

static int load_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    const load *s = state;
    for (int32_t k = 0; k < s->n; k++)
        for (int d = 0; d < 3; d++) w->P.force[3 * s->index[k] + d] += s->f[3 * k + d];
    return 0;
}

static double load_potential(const csm_world *w, const void *state)
{
    const load *s = state;
    double e = 0;
    for (int32_t k = 0; k < s->n; k++) e -= csm_v3_dot(&s->f[3 * k], &w->P.x[3 * s->index[k]]);
    return e;
}

const csm_force csm_force_load = {
    .version = 1,
    .name = "load",
    .summary = "a dead load: a resultant force and torque spread over a slab of particles by mass (a face's traction)",
    .params = load_table,
    .create = load_create,
    .apply = load_apply,
    .destroy = load_free,
    .potential = load_potential,
};

typedef struct drag {
    double coefficient, wind[3];
} drag;

static const csm_param_spec drag_params[] = {
    CSM_P_REAL(drag, coefficient, 0.1, 0, 1e9, "k: a_i = -k (v_i - wind), per second"),
    CSM_P_VEC3(drag, wind, 0, 0, 0, -1e9, 1e9, "velocity of the surrounding air"),
    CSM_PARAM_END,
};

static int drag_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    drag *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *s = *(const drag *)csm_cfg_params(cfg);
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
        for (int d = 0; d < 3; d++) P->force[3 * i + d] -= s->coefficient * P->mass[i] * (P->v[3 * i + d] - s->wind[d]);
    return 0;
}

const csm_force csm_force_drag = {
    .version = 1,
    .name = "drag",
    .summary = "linear air drag towards the wind velocity (f = -k m (v - wind))",
    .params = drag_params,
    .create = drag_create,
    .apply = drag_apply,
    .destroy = free,
};
