/* Colliders: applied after the integrator as a position projection plus a velocity response
   (restitution on the normal part, Coulomb friction on the tangential part, both relative to the
   collider's surface velocity). Every collider can follow a scripted path: a constant velocity
   and angular velocity between `from` and `until`. Pinned particles (inverse mass 0) never
   move. */
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

/* A collider's scripted path: from `from` to `until` its centre moves by the piecewise linear
   displacement of `keyframes` (held at the first row's before it and at the last row's after)
   plus `velocity` times the time in motion, and it turns at `angular_velocity` about its centre;
   before `from` it rests at its pose then, after `until` at the pose it reached. */
typedef struct motion {
    double velocity[3], angular_velocity[3], from, until;
    csm_keyframes keyframes;
} motion;

#define MOTION_PARAMS(T)                                                                           \
    CSM_PARAM_FIELD("velocity", CSM_VEC3, T, m.velocity, 0, -1e9, 1e9,                              \
                    "m/s: the collider translates at this velocity between from and until", NULL, 0, 0, 0, NULL, 0), \
    CSM_PARAM_FIELD("angular_velocity", CSM_VEC3, T, m.angular_velocity, 0, -1e9, 1e9,              \
                    "rad/s: it turns about its centre at this rate between from and until (the right-hand rule)", \
                    NULL, 0, 0, 0, NULL, 0),                                                       \
    CSM_PARAM_FIELD("from", CSM_REAL, T, m.from, 0, 0, 1e9, "s: when the motion starts", NULL, 0, 0, 0, NULL, 0), \
    CSM_PARAM_FIELD("until", CSM_REAL, T, m.until, 1e9, 0, 1e9,                                     \
                    "s: when it stops; the collider stays where it is from then on", NULL, 0, 0, 0, NULL, 0), \
    CSM_PARAM_FIELD("keyframes", CSM_KEYFRAMES, T, m.keyframes, 0, -1e9, 1e9,                        \
                    "[[t, dx, dy, dz], ...]: the centre's displacement at time t (s), linear in between "    \
                    "(a press, a moving floor); with velocity the two add", NULL, 0, 0, 0, NULL, 0)

static int motion_check(const csm_plugin_cfg *cfg, const motion *m, csm_error *err)
{
    if (m->until < m->from) return csm_cfg_fail(cfg, err, "until = %g is before from = %g", m->until, m->from);
    return 0;
}

/* Rotation by the angle |w| t about w (Rodrigues' formula), row-major. */
static void turn(const double w[3], double t, double R[9])
{
    double len = csm_v3_norm(w), angle = len * t;
    csm_m3_identity(R);
    if (angle == 0.0) return;
    double k[3] = {w[0] / len, w[1] / len, w[2] / len};
    double c = cos(angle), s = sin(angle), C = 1.0 - c;
    R[0] = c + k[0] * k[0] * C;
    R[1] = k[0] * k[1] * C - k[2] * s;
    R[2] = k[0] * k[2] * C + k[1] * s;
    R[3] = k[1] * k[0] * C + k[2] * s;
    R[4] = c + k[1] * k[1] * C;
    R[5] = k[1] * k[2] * C - k[0] * s;
    R[6] = k[2] * k[0] * C - k[1] * s;
    R[7] = k[2] * k[1] * C + k[0] * s;
    R[8] = c + k[2] * k[2] * C;
}

/* Where the path has taken the collider at time t: its centre moved by d and turned by R. */
typedef struct pose {
    double d[3], R[9];
} pose;

/* The keyframes' displacement at time t: linear between rows, held outside them. */
static void keyframe_at(const csm_keyframes *kf, double t, double d[3])
{
    d[0] = d[1] = d[2] = 0;
    if (kf->n == 0) return;
    const double *row = kf->txyz;
    int32_t last = kf->n - 1;
    if (t <= row[0] || last == 0) {
        memcpy(d, &row[1], 3 * sizeof *d);
        return;
    }
    if (t >= row[4 * last]) {
        memcpy(d, &row[4 * last + 1], 3 * sizeof *d);
        return;
    }
    int32_t k = 0;
    while (row[4 * (k + 1)] < t) k++;
    const double *a = &row[4 * k], *b = &row[4 * (k + 1)];
    double f = (t - a[0]) / (b[0] - a[0]);
    for (int i = 0; i < 3; i++) d[i] = a[1 + i] + f * (b[1 + i] - a[1 + i]);
}

static void pose_at(const motion *m, double t, pose *p)
{
    double tm = fmin(fmax(t, m->from), m->until), s = tm - m->from; /* the path's clock, time in motion */
    keyframe_at(&m->keyframes, tm, p->d);
    for (int a = 0; a < 3; a++) p->d[a] += m->velocity[a] * s;
    turn(m->angular_velocity, s, p->R);
}

/* The collider over one step, from t0 to t1 = t0 + h: its centre c0 and c1 and its turns R0 and
   R1 then. The surface point at x at t1 was at c0 + R0 R1^T (x - c1) at t0, so its velocity over
   the step is the difference over h: exact for the scripted path, including a step that starts
   or ends the motion. */
typedef struct stride {
    double c0[3], c1[3]; /* the centre at the step's start and end */
    double R1[9];        /* the turn at the step's end */
    double back[9];      /* R0 R1^T: from the end's frame to the start's */
    double h;
    int still; /* the collider does not move during this step */
} stride;

static void stride_begin(stride *s, const motion *m, const double centre[3], double t0, double h)
{
    pose p0, p1;
    pose_at(m, t0, &p0);
    pose_at(m, t0 + h, &p1);
    for (int a = 0; a < 3; a++) {
        s->c0[a] = centre[a] + p0.d[a];
        s->c1[a] = centre[a] + p1.d[a];
    }
    memcpy(s->R1, p1.R, sizeof s->R1);
    csm_m3_mul_bt(p0.R, p1.R, s->back);
    s->h = h;
    s->still = !(h > 0) || t0 + h <= m->from || t0 >= m->until ||
               (csm_v3_norm(m->velocity) == 0.0 && csm_v3_norm(m->angular_velocity) == 0.0 && m->keyframes.n < 2);
}

static void surface_velocity(const stride *s, const double x[3], double vc[3])
{
    if (s->still) {
        vc[0] = vc[1] = vc[2] = 0;
        return;
    }
    double r1[3] = {x[0] - s->c1[0], x[1] - s->c1[1], x[2] - s->c1[2]}, r0[3];
    csm_m3_mul_v3(s->back, r1, r0);
    for (int a = 0; a < 3; a++) vc[a] = (x[a] - (s->c0[a] + r0[a])) / s->h;
}

/* A particle found `depth` (< 0) inside a surface with unit outward normal n, moving at vc:
   project it onto the surface; if it approaches, reverse the normal velocity relative to the
   surface (times restitution) and take Coulomb friction off the relative tangential velocity,
   bounded by the normal impulse (no reversal). */
static void respond(const response *r, const double n[3], double depth, const double vc[3], double x[3], double v[3])
{
    for (int d = 0; d < 3; d++) x[d] -= depth * n[d];
    double u[3] = {v[0] - vc[0], v[1] - vc[1], v[2] - vc[2]};
    double vn = csm_v3_dot(n, u);
    if (vn >= 0) return;
    double vt[3] = {u[0] - vn * n[0], u[1] - vn * n[1], u[2] - vn * n[2]};
    double e = -vn < r->bounce_threshold ? 0.0 : r->restitution;
    double dvn = -(1.0 + e) * vn; /* normal impulse per unit mass */
    double vt_len = csm_v3_norm(vt);
    double keep = vt_len > 0 ? fmax(0.0, 1.0 - r->friction * dvn / vt_len) : 0.0;
    for (int d = 0; d < 3; d++) v[d] = vc[d] + keep * vt[d] - e * vn * n[d];
}

/* The response of particle i to a surface at depth < 0 with outward normal n, at the step's end:
   projected onto the surface, then answering the velocity of the surface point it now touches. */
static void respond_particle(const response *r, const stride *s, const double n[3], double depth, csm_particles *P,
                             int32_t i)
{
    double vc[3], *x = &P->x[3 * i];
    for (int d = 0; d < 3; d++) x[d] -= depth * n[d];
    surface_velocity(s, x, vc);
    respond(r, n, 0.0, vc, x, &P->v[3 * i]);
}

typedef struct plane {
    double normal[3], offset;
    response r;
    motion m;
} plane;

static const csm_param_spec plane_params[] = {
    CSM_P_VEC3(plane, normal, 0, 1, 0, -1e9, 1e9, "plane normal (normalised; points out of the solid side)"),
    CSM_P_REAL(plane, offset, 0, -1e9, 1e9, "the plane is normal . x = offset (at rest; its centre is offset normal)"),
    RESPONSE_PARAMS(plane),
    MOTION_PARAMS(plane),
    CSM_PARAM_END,
};

static int plane_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const plane *p = csm_cfg_params(cfg);
    double len = csm_v3_norm(p->normal);
    if (!(len > 0)) return csm_cfg_fail(cfg, err, "normal must not be zero");
    if (motion_check(cfg, &p->m, err)) return -1;
    plane *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *s = *p;
    for (int d = 0; d < 3; d++) s->normal[d] = p->normal[d] / len;
    *state = s;
    return 0;
}

static int plane_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)err;
    const plane *s = state;
    double centre[3] = {s->offset * s->normal[0], s->offset * s->normal[1], s->offset * s->normal[2]}, n[3];
    stride st;
    stride_begin(&st, &s->m, centre, w->time, h);
    csm_m3_mul_v3(st.R1, s->normal, n);
    double offset = csm_v3_dot(n, st.c1);
    csm_particles *P = &w->P;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        double depth = csm_v3_dot(n, &P->x[3 * i]) - offset;
        if (depth < 0) respond_particle(&s->r, &st, n, depth, P, i);
    }
    return 0;
}

const csm_collider csm_collider_plane = {
    .version = 1,
    .name = "plane",
    .summary = "half-space normal . x >= offset with restitution and Coulomb friction; it may move and turn",
    .params = plane_params,
    .create = plane_create,
    .apply = plane_apply,
    .destroy = free,
};

typedef struct sphere {
    double center[3], radius;
    int inside;
    response r;
    motion m;
} sphere;

static const csm_param_spec sphere_params[] = {
    CSM_P_VEC3(sphere, center, 0, 0, 0, -1e9, 1e9, "centre of the sphere (at rest)"),
    CSM_PARAM_FIELD("radius", CSM_REAL, sphere, radius, 0, 0, 1e9, "radius of the sphere", NULL, 0, 0, 0, NULL,
                    CSM_PARAM_REQUIRED),
    CSM_P_BOOL(sphere, inside, 0, "false: a solid ball particles stay out of; true: a shell particles stay in"),
    RESPONSE_PARAMS(sphere),
    MOTION_PARAMS(sphere),
    CSM_PARAM_END,
};

static int sphere_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const sphere *p = csm_cfg_params(cfg);
    if (!(p->radius > 0)) return csm_cfg_fail(cfg, err, "radius must be positive");
    if (motion_check(cfg, &p->m, err)) return -1;
    sphere *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *s = *p;
    *state = s;
    return 0;
}

static int sphere_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)err;
    const sphere *s = state;
    stride st;
    stride_begin(&st, &s->m, s->center, w->time, h);
    const double *c = st.c1;
    csm_particles *P = &w->P;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        const double *x = &P->x[3 * i];
        double r[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
        double dist = csm_v3_norm(r);
        double depth = s->inside ? s->radius - dist : dist - s->radius;
        if (depth >= 0) continue;
        double n[3] = {0, 1, 0}; /* a particle exactly at the centre leaves upwards */
        if (dist > 0)
            for (int d = 0; d < 3; d++) n[d] = (s->inside ? -r[d] : r[d]) / dist;
        respond_particle(&s->r, &st, n, depth, P, i);
    }
    return 0;
}

const csm_collider csm_collider_sphere = {
    .version = 1,
    .name = "sphere",
    .summary = "a solid ball (or, with inside, a spherical shell) with restitution and Coulomb friction; it may move "
               "and turn",
    .params = sphere_params,
    .create = sphere_create,
    .apply = sphere_apply,
    .destroy = free,
};

typedef struct box {
    double center[3], size[3], rotate[3];
    int inside;
    response r;
    motion m;
    double R0[9]; /* the initial orientation, from rotate */
} box;

static const csm_param_spec box_params[] = {
    CSM_P_VEC3(box, center, 0, 0, 0, -1e9, 1e9, "centre of the box (at rest)"),
    CSM_P_VEC3(box, size, 1, 1, 1, 0, 1e9, "edge lengths along the box's own x, y and z"),
    CSM_P_VEC3(box, rotate, 0, 0, 0, -1e9, 1e9, "initial orientation: degrees about x, then y, then z"),
    CSM_P_BOOL(box, inside, 0, "false: a solid box particles stay out of; true: a container particles stay in"),
    RESPONSE_PARAMS(box),
    MOTION_PARAMS(box),
    CSM_PARAM_END,
};

static int box_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const box *p = csm_cfg_params(cfg);
    if (!(p->size[0] > 0 && p->size[1] > 0 && p->size[2] > 0))
        return csm_cfg_fail(cfg, err, "size must be positive along every axis");
    if (motion_check(cfg, &p->m, err)) return -1;
    box *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    *s = *p;
    csm_m3_rotation_degrees(p->rotate, s->R0); /* as a shape's rotate */
    *state = s;
    return 0;
}

/* The push out of a solid box: through the face nearest to the particle (the smallest
   penetration), or, for a container, back through every face it crossed. l is the particle in
   the box's frame, half the half-sizes; returns the depth (< 0: in contact) and the normal n
   in the box's frame. */
static double box_contact(const double l[3], const double half[3], int inside, double n[3])
{
    n[0] = n[1] = n[2] = 0;
    if (!inside) {
        int at = 0;
        double depth = -INFINITY;
        for (int a = 0; a < 3; a++) {
            double da = fabs(l[a]) - half[a]; /* < 0 inside the slab */
            if (da >= 0) return 0.0;          /* outside the box */
            if (da > depth) depth = da, at = a;
        }
        n[at] = l[at] < 0 ? -1.0 : 1.0;
        return depth;
    }
    double out2 = 0;
    for (int a = 0; a < 3; a++) {
        double da = fabs(l[a]) - half[a];
        if (da > 0) {
            n[a] = l[a] < 0 ? da : -da; /* inwards, scaled by the excess */
            out2 += da * da;
        }
    }
    if (out2 == 0) return 0.0;
    double out = sqrt(out2);
    for (int a = 0; a < 3; a++) n[a] /= out;
    return -out;
}

static int box_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)err;
    const box *s = state;
    double R[9], half[3] = {0.5 * s->size[0], 0.5 * s->size[1], 0.5 * s->size[2]};
    stride st;
    stride_begin(&st, &s->m, s->center, w->time, h);
    const double *c = st.c1;
    csm_m3_mul(st.R1, s->R0, R); /* the box's axes are R's columns */
    csm_particles *P = &w->P;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        const double *x = &P->x[3 * i];
        double r[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]}, l[3], nl[3], n[3];
        for (int a = 0; a < 3; a++) l[a] = R[a] * r[0] + R[3 + a] * r[1] + R[6 + a] * r[2]; /* R^T r */
        double depth = box_contact(l, half, s->inside, nl);
        if (depth >= 0) continue;
        csm_m3_mul_v3(R, nl, n);
        respond_particle(&s->r, &st, n, depth, P, i);
    }
    return 0;
}

const csm_collider csm_collider_box = {
    .version = 1,
    .name = "box",
    .summary = "a solid box (or, with inside, a container) with restitution and Coulomb friction; it may move and "
               "turn",
    .params = box_params,
    .create = box_create,
    .apply = box_apply,
    .destroy = free,
};
