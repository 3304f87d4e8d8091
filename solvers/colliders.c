/* Colliders: applied after the integrator as a position projection plus a velocity response
   (restitution on the normal part, Coulomb friction on the tangential part, both relative to the
   collider's surface velocity). Every collider can follow a scripted path: a constant velocity
   and angular velocity between `from` and `until`. Pinned particles (inverse mass 0) never
   move. */
#include "csm_math.h"
#include "error.h"
#include "grow.h"
#include "kernel.h"
#include "mesh.h"
#include "plugin.h"
#include "world.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
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

/* Where a collider stands at the step's end. */
typedef struct placed {
    stride st;
    double n[3], offset; /* plane: the normal and offset at the step's end */
    double R[9];         /* box: its axes at the step's end, as columns */
    int halfspace;       /* the collider is the half-space n . x < offset: depth is n . x - offset */
} placed;

/* The depth of x below a placed half-space (plane_depth). */
static inline double halfspace_depth(const placed *pl, const double x[3])
{
    return csm_v3_dot(pl->n, x) - pl->offset;
}

/* Whether particle i, not yet pushed this step, is clear of a half-space collider: tested inline
   for all particles, so that only those at or below the ground pay for the shape's depth call. */
static inline int clear_of(const placed *pl, const double *x, int32_t i)
{
    return pl->halfspace && halfspace_depth(pl, &x[3 * i]) >= 0;
}

typedef struct collider collider;
typedef struct shape_ops {
    void (*place)(const collider *c, double t0, double h, placed *pl);
    /* the depth of particle i at x (< 0: inside) and the outward normal n there, at the step's
       end; unless exact, a point on the free side may be answered any positive depth and no
       normal. Calls for different particles may run at once. */
    double (*depth)(collider *c, const placed *pl, const double x[3], int32_t i, int exact, double n[3]);
    void (*close)(collider *c); /* NULL: nothing of its own to free */
} shape_ops;

typedef struct plane {
    double normal[3], offset;
    response r;
    motion m;
} plane;

typedef struct sphere {
    double center[3], radius;
    int inside;
    response r;
    motion m;
} sphere;

typedef struct box {
    double center[3], size[3], rotate[3];
    int inside;
    response r;
    motion m;
    double R0[9]; /* the initial orientation, from rotate */
} box;

enum { FIT_NONE, FIT_UNIT_BOX };

typedef struct mesh_shape {
    const char *path;
    double center[3], rotate[3], scale;
    int fit, inside;
    response r;
    motion m;
    /* from here on built by create, not parameters */
    csm_mesh mesh;       /* placed: rotated, centred on its bounding box, scaled; the tree built */
    double lo[3], hi[3]; /* its bounding box, padded by round-off: outside it nothing is inside */
    double sign;         /* +1 when the faces wind outwards (positive signed volume), else -1 */
    double *clear;       /* [4n] per particle, a point of the mesh's frame and its distance from the
                            mesh, on the free side (0: none yet): a particle nearer the point than
                            that is on the free side too, with no query */
    int32_t n;
} mesh_shape;

/* What the projections of one step did to a particle they pushed, which apply answers: the
   normal velocity it approached at (relative to the surface), the distance the pushes moved it
   along the normal in all (its normal impulse times h / m_i, the weight it carries for the
   particles above it included) and the distance friction took off its slip. */
typedef struct touch {
    double vn, push, held;
} touch;

/* A collider's state: its parameters, and the particles its projections pushed this step. */
struct collider {
    const shape_ops *ops;
    const response *r;
    const motion *m;
    double centre[3]; /* at rest: the point its path moves and turns it about */
    unsigned char *hit; /* [n] pushed this step */
    touch *touch;       /* [n] valid where hit */
    int64_t cap_hit, cap_touch;
    int64_t step; /* the step hit covers */
    union {
        plane plane;
        sphere sphere;
        box box;
        mesh_shape mesh;
    } u;
};

/* A collider with a copy of the parameters (size bytes of them) as its state; NULL when out of
   memory. */
static collider *collider_new(const csm_plugin_cfg *cfg, const shape_ops *ops, size_t size, void **state)
{
    collider *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ops = ops;
    c->step = -1;
    memcpy(&c->u, csm_cfg_params(cfg), size);
    *state = c;
    return c;
}

static void collider_destroy(void *state)
{
    collider *c = state;
    if (c) {
        if (c->ops->close) c->ops->close(c);
        free(c->hit);
        free(c->touch);
    }
    free(c);
}

/* The pose the log keeps (csm_collider.pose). */
static void collider_pose(const void *state, double t, double center[3], double R[9])
{
    const collider *c = state;
    pose p;
    pose_at(c->m, t, &p);
    for (int a = 0; a < 3; a++) center[a] = c->centre[a] + p.d[a];
    memcpy(R, p.R, sizeof p.R);
}

/* One particle's projection; returns the work its push and friction did. */
static double project_one(collider *c, const csm_world *w, const placed *pl, double h, double *x, int32_t i)
{
    const csm_particles *P = &w->P;
    if (P->inv_mass[i] == 0.0) return 0.0;
    double n[3], vc[3], *xi = &x[3 * i], work = 0, mu = c->r->friction;
    double depth = c->ops->depth(c, pl, xi, i, c->hit[i], n);
    touch *ti = &c->touch[i];
    if (depth >= 0 && !c->hit[i]) return 0.0;
    if (depth < 0)
        for (int d = 0; d < 3; d++) xi[d] -= depth * n[d];
    surface_velocity(&pl->st, xi, vc);
    if (!c->hit[i]) {
        const double *v = &P->v[3 * i];
        double u[3] = {v[0] - vc[0], v[1] - vc[1], v[2] - vc[2]};
        *ti = (touch){csm_v3_dot(n, u), 0.0, 0.0};
        c->hit[i] = 1;
    }
    if (depth < 0) {
        ti->push -= depth;
        work += -depth * P->mass[i] * csm_v3_dot(n, vc) / h;
    }
    if (mu > 0 && w->x_step) { /* friction (after Macklin et al. 2014 Sec 6.1): the slip over the step relative
                                  to the surface, taken back up to mu times the pushes so far */
        const double *a = &w->x_step[3 * i];
        double slip[3];
        for (int d = 0; d < 3; d++) slip[d] = xi[d] - a[d] - h * vc[d];
        double sn = csm_v3_dot(slip, n);
        for (int d = 0; d < 3; d++) slip[d] -= sn * n[d];
        double len = csm_v3_norm(slip), t = fmin(len, mu * ti->push - ti->held);
        if (t > 0) {
            ti->held += t;
            for (int d = 0; d < 3; d++) xi[d] -= t * slip[d] / len;
            work -= P->mass[i] * t * csm_v3_dot(slip, vc) / (len * h);
        }
    }
    return work;
}

/* Inside the integrator's iterations: push x out onto the surface at the step's end, note each
   particle pushed and the normal velocity it came in at (its velocity v* of the step, relative
   to the surface), take back its slip over the step up to mu times its pushes so far, and
   return the work of the pushes and of that friction, sum_i m_i dx_i . v_c / h: the impulse
   m_i dx_i / h the surface gives, times the surface's velocity (0 for a collider at rest).
   Particles are independent; the work is summed in fixed blocks, the same for every thread
   count. */
static double collider_project(const csm_world *w, void *state, double h, double *x)
{
    collider *c = state;
    const csm_particles *P = &w->P;
    if (c->step != w->step) {
        if (csm_grow((void **)&c->hit, &c->cap_hit, P->n, 1) ||
            csm_grow((void **)&c->touch, &c->cap_touch, P->n, sizeof *c->touch))
            return NAN; /* out of memory: the step fails */
        memset(c->hit, 0, (size_t)P->n);
        c->step = w->step;
    }
    placed pl = {.halfspace = 0};
    c->ops->place(c, w->time, h, &pl);
    double part[CSM_SUM_BLOCKS] = {0};
#pragma omp parallel for schedule(static)
    for (int b = 0; b < CSM_SUM_BLOCKS; b++) {
        double sum = 0;
        for (int32_t i = csm_block_start(P->n, b); i < csm_block_start(P->n, b + 1); i++)
            if (c->hit[i] || !clear_of(&pl, x, i)) sum += project_one(c, w, &pl, h, x, i);
        part[b] = sum;
    }
    return csm_block_total(part);
}

/* After the integrator, on velocities: a particle still inside is projected onto the surface;
   every particle inside or pushed this step answers the velocity of the surface point it
   touches. Its normal velocity relative to the surface leaves at restitution times the speed it
   came in at (none below the bounce threshold), or faster where the step already separates it;
   Coulomb friction takes off the relative tangential velocity, bounded by what is left of mu
   times the normal impulse of the whole step (the pushes inside the iterations, push / h, and
   this answer's) once the projections' friction took its part (no reversal). Friction acts in
   the projections first because on velocities alone a particle that carries the weight of
   others slides a little every step (its neighbours drag it within the iterations) and creeps
   without end. */
static int collider_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)err;
    collider *c = state;
    csm_particles *P = &w->P;
    const response *r = c->r;
    int pushed = c->step == w->step;
    placed pl = {.halfspace = 0};
    c->ops->place(c, w->time, h, &pl);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < P->n; i++) {
        int hit = pushed && c->hit[i];
        if (P->inv_mass[i] == 0.0 || (!hit && clear_of(&pl, P->x, i))) continue;
        double n[3], *x = &P->x[3 * i], *v = &P->v[3 * i];
        double depth = c->ops->depth(c, &pl, x, i, hit, n);
        if (depth >= 0 && !hit) continue;
        if (depth < 0)
            for (int d = 0; d < 3; d++) x[d] -= depth * n[d];
        double vc[3];
        surface_velocity(&pl.st, x, vc);
        double u[3] = {v[0] - vc[0], v[1] - vc[1], v[2] - vc[2]};
        double vn = csm_v3_dot(n, u), vin = hit ? c->touch[i].vn : vn;
        if (vin >= 0 && vn >= 0) continue;
        vin = fmin(vin, vn);
        double e = -vin < r->bounce_threshold ? 0.0 : r->restitution;
        double vout = fmax(vn, -e * vin);
        double vt[3] = {u[0] - vn * n[0], u[1] - vn * n[1], u[2] - vn * n[2]};
        double vt_len = csm_v3_norm(vt);
        /* what is left of mu times the normal impulse (per unit mass) after the projections' friction */
        double left = hit ? (r->friction * c->touch[i].push - c->touch[i].held) / h : 0.0;
        double keep = vt_len > 0 ? fmax(0.0, 1.0 - (left + r->friction * (vout - vn)) / vt_len) : 0.0;
        for (int d = 0; d < 3; d++) v[d] = vc[d] + keep * vt[d] + vout * n[d];
    }
    if (pushed) c->step = -1;
    return 0;
}

static const csm_param_spec plane_params[] = {
    CSM_P_VEC3(plane, normal, 0, 1, 0, -1e9, 1e9, "plane normal (normalised; points out of the solid side)"),
    CSM_P_REAL(plane, offset, 0, -1e9, 1e9, "the plane is normal . x = offset (at rest; its centre is offset normal)"),
    RESPONSE_PARAMS(plane),
    MOTION_PARAMS(plane),
    CSM_PARAM_END,
};

static void plane_place(const collider *c, double t0, double h, placed *pl)
{
    const plane *s = &c->u.plane;
    stride_begin(&pl->st, c->m, c->centre, t0, h);
    csm_m3_mul_v3(pl->st.R1, s->normal, pl->n);
    pl->offset = csm_v3_dot(pl->n, pl->st.c1);
    pl->halfspace = 1;
}

static double plane_depth(collider *c, const placed *pl, const double x[3], int32_t i, int exact, double n[3])
{
    (void)i;
    (void)exact;
    (void)c;
    memcpy(n, pl->n, 3 * sizeof *n);
    return halfspace_depth(pl, x);
}

static const shape_ops plane_ops = {plane_place, plane_depth, NULL};

static int plane_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const plane *p = csm_cfg_params(cfg);
    double len = csm_v3_norm(p->normal);
    if (!(len > 0)) return csm_cfg_fail(cfg, err, "normal must not be zero");
    if (motion_check(cfg, &p->m, err)) return -1;
    collider *c = collider_new(cfg, &plane_ops, sizeof *p, state);
    if (!c) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    for (int d = 0; d < 3; d++) c->u.plane.normal[d] = p->normal[d] / len;
    for (int d = 0; d < 3; d++) c->centre[d] = p->offset * c->u.plane.normal[d];
    c->r = &c->u.plane.r;
    c->m = &c->u.plane.m;
    return 0;
}

const csm_collider csm_collider_plane = {
    .version = 3,
    .name = "plane",
    .summary = "half-space normal . x >= offset with restitution and Coulomb friction; it may move and turn",
    .params = plane_params,
    .create = plane_create,
    .apply = collider_apply,
    .destroy = collider_destroy,
    .project = collider_project,
    .pose = collider_pose,
};

static const csm_param_spec sphere_params[] = {
    CSM_P_VEC3(sphere, center, 0, 0, 0, -1e9, 1e9, "centre of the sphere (at rest)"),
    CSM_PARAM_FIELD("radius", CSM_REAL, sphere, radius, 0, 0, 1e9, "radius of the sphere", NULL, 0, 0, 0, NULL,
                    CSM_PARAM_REQUIRED),
    CSM_P_BOOL(sphere, inside, 0, "false: a solid ball particles stay out of; true: a shell particles stay in"),
    RESPONSE_PARAMS(sphere),
    MOTION_PARAMS(sphere),
    CSM_PARAM_END,
};

static void sphere_place(const collider *c, double t0, double h, placed *pl)
{
    stride_begin(&pl->st, c->m, c->centre, t0, h);
}

static double sphere_depth(collider *c, const placed *pl, const double x[3], int32_t i, int exact, double n[3])
{
    (void)i;
    (void)exact;
    const sphere *s = &c->u.sphere;
    const double *o = pl->st.c1;
    double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
    double dist = csm_v3_norm(r);
    n[0] = n[2] = 0;
    n[1] = 1; /* a particle exactly at the centre leaves upwards */
    if (dist > 0)
        for (int d = 0; d < 3; d++) n[d] = (s->inside ? -r[d] : r[d]) / dist;
    return s->inside ? s->radius - dist : dist - s->radius;
}

static const shape_ops sphere_ops = {sphere_place, sphere_depth, NULL};

static int sphere_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const sphere *p = csm_cfg_params(cfg);
    if (!(p->radius > 0)) return csm_cfg_fail(cfg, err, "radius must be positive");
    if (motion_check(cfg, &p->m, err)) return -1;
    collider *c = collider_new(cfg, &sphere_ops, sizeof *p, state);
    if (!c) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    c->r = &c->u.sphere.r;
    c->m = &c->u.sphere.m;
    memcpy(c->centre, p->center, sizeof c->centre);
    return 0;
}

const csm_collider csm_collider_sphere = {
    .version = 3,
    .name = "sphere",
    .summary = "a solid ball (or, with inside, a spherical shell) with restitution and Coulomb friction; it may move "
               "and turn",
    .params = sphere_params,
    .create = sphere_create,
    .apply = collider_apply,
    .destroy = collider_destroy,
    .project = collider_project,
    .pose = collider_pose,
};

static const csm_param_spec box_params[] = {
    CSM_P_VEC3(box, center, 0, 0, 0, -1e9, 1e9, "centre of the box (at rest)"),
    CSM_P_VEC3(box, size, 1, 1, 1, 0, 1e9, "edge lengths along the box's own x, y and z"),
    CSM_P_VEC3(box, rotate, 0, 0, 0, -1e9, 1e9, "initial orientation: degrees about x, then y, then z"),
    CSM_P_BOOL(box, inside, 0, "false: a solid box particles stay out of; true: a container particles stay in"),
    RESPONSE_PARAMS(box),
    MOTION_PARAMS(box),
    CSM_PARAM_END,
};

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

static void box_place(const collider *c, double t0, double h, placed *pl)
{
    stride_begin(&pl->st, c->m, c->centre, t0, h);
    csm_m3_mul(pl->st.R1, c->u.box.R0, pl->R); /* the box's axes are R's columns */
}

static double box_depth(collider *c, const placed *pl, const double x[3], int32_t i, int exact, double n[3])
{
    (void)i;
    (void)exact;
    const box *s = &c->u.box;
    const double *o = pl->st.c1, *R = pl->R;
    double half[3] = {0.5 * s->size[0], 0.5 * s->size[1], 0.5 * s->size[2]};
    double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, l[3], nl[3];
    for (int a = 0; a < 3; a++) l[a] = R[a] * r[0] + R[3 + a] * r[1] + R[6 + a] * r[2]; /* R^T r */
    double depth = box_contact(l, half, s->inside, nl);
    csm_m3_mul_v3(R, nl, n);
    return depth;
}

static const shape_ops box_ops = {box_place, box_depth, NULL};

static int box_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    (void)w;
    const box *p = csm_cfg_params(cfg);
    if (!(p->size[0] > 0 && p->size[1] > 0 && p->size[2] > 0))
        return csm_cfg_fail(cfg, err, "size must be positive along every axis");
    if (motion_check(cfg, &p->m, err)) return -1;
    collider *c = collider_new(cfg, &box_ops, sizeof *p, state);
    if (!c) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    csm_m3_rotation_degrees(p->rotate, c->u.box.R0); /* as a shape's rotate */
    c->r = &c->u.box.r;
    c->m = &c->u.box.m;
    memcpy(c->centre, p->center, sizeof c->centre);
    return 0;
}

const csm_collider csm_collider_box = {
    .version = 3,
    .name = "box",
    .summary = "a solid box (or, with inside, a container) with restitution and Coulomb friction; it may move and "
               "turn",
    .params = box_params,
    .create = box_create,
    .apply = collider_apply,
    .destroy = collider_destroy,
    .project = collider_project,
    .pose = collider_pose,
};

static const csm_param_spec mesh_params[] = {
    CSM_PARAM_FIELD("path", CSM_STRING, mesh_shape, path, 0, 0, 0,
                    "OFF or OBJ file of a closed triangle mesh; a relative path is tried from the current folder, then "
                    "the config's folder and those above",
                    NULL, 0, 0, 0, "", CSM_PARAM_REQUIRED),
    CSM_P_VEC3(mesh_shape, center, 0, 0, 0, -1e9, 1e9, "where the centre of the mesh's bounding box is (at rest)"),
    CSM_P_VEC3(mesh_shape, rotate, 0, 0, 0, -1e9, 1e9, "initial orientation: degrees about x, then y, then z"),
    CSM_P_ENUM(mesh_shape, fit, FIT_NONE, "none|unit_box", "unit_box: scale so the longest bounding-box edge is 1"),
    CSM_P_REAL(mesh_shape, scale, 1.0, 1e-9, 1e9, "uniform scale, after fit"),
    CSM_P_BOOL(mesh_shape, inside, 0, "false: a solid particles stay out of; true: a closed vessel particles stay in"),
    RESPONSE_PARAMS(mesh_shape),
    MOTION_PARAMS(mesh_shape),
    CSM_PARAM_END,
};

static void mesh_place(const collider *c, double t0, double h, placed *pl)
{
    stride_begin(&pl->st, c->m, c->centre, t0, h);
    memcpy(pl->R, pl->st.R1, sizeof pl->R); /* the mesh was turned by rotate when it was placed */
}

/* The signed distance to the mesh: the distance to its nearest triangle, negative where the
   point lies on the solid side. The side comes from the generalized winding number (|w| >= 1/2:
   inside, core/mesh.h), so small holes and flipped faces do not turn a whole region inside out;
   the normal points from the nearest surface point to the particle (away from the solid), or
   along the nearest face where the particle lies on the surface. */
static double mesh_depth(collider *c, const placed *pl, const double x[3], int32_t i, int exact, double n[3])
{
    mesh_shape *s = &c->u.mesh;
    const double *o = pl->st.c1, *R = pl->R;
    double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, l[3], q[3], nl[3];
    for (int a = 0; a < 3; a++) l[a] = R[a] * r[0] + R[3 + a] * r[1] + R[6 + a] * r[2]; /* R^T r */
    double *clear = i < s->n ? &s->clear[4 * i] : NULL;
    if (!exact && clear && clear[3] > 0) { /* still within the ball known to be clear of the mesh */
        double e[3] = {l[0] - clear[0], l[1] - clear[1], l[2] - clear[2]}, moved = csm_v3_norm(e);
        if (moved < clear[3]) return clear[3] - moved;
    }
    int within = l[0] >= s->lo[0] && l[0] <= s->hi[0] && l[1] >= s->lo[1] && l[1] <= s->hi[1] && l[2] >= s->lo[2] &&
                 l[2] <= s->hi[2] && csm_mesh_inside(&s->mesh, l);
    double side = within == s->inside ? 1.0 : -1.0; /* +1 on the free side */
    int32_t t;
    double dist = csm_mesh_closest(&s->mesh, l, q, &t);
    if (clear) {
        memcpy(clear, l, 3 * sizeof *clear);
        clear[3] = side > 0 ? dist : 0.0;
    }
    double span = s->hi[0] - s->lo[0] + s->hi[1] - s->lo[1] + s->hi[2] - s->lo[2];
    if (dist > 1e-12 * span) {
        for (int a = 0; a < 3; a++) nl[a] = side * (l[a] - q[a]) / dist;
    } else { /* on the surface: the face's normal, out of the solid */
        const int32_t *v = &s->mesh.tri[3 * t];
        const double *A = &s->mesh.v[3 * v[0]], *B = &s->mesh.v[3 * v[1]], *C = &s->mesh.v[3 * v[2]];
        double ab[3] = {B[0] - A[0], B[1] - A[1], B[2] - A[2]}, ac[3] = {C[0] - A[0], C[1] - A[1], C[2] - A[2]};
        csm_v3_cross(ab, ac, nl);
        double len = csm_v3_norm(nl), out = s->inside ? -s->sign : s->sign;
        for (int a = 0; a < 3; a++) nl[a] = len > 0 ? out * nl[a] / len : (a == 1);
    }
    csm_m3_mul_v3(R, nl, n);
    return side * dist;
}

static void mesh_close(collider *c)
{
    csm_mesh_free(&c->u.mesh.mesh);
    free(c->u.mesh.clear);
}

static const shape_ops mesh_ops = {mesh_place, mesh_depth, mesh_close};

static int mesh_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const mesh_shape *p = csm_cfg_params(cfg);
    if (motion_check(cfg, &p->m, err)) return -1;
    collider *c = collider_new(cfg, &mesh_ops, offsetof(mesh_shape, mesh), state);
    if (!c) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    mesh_shape *s = &c->u.mesh;
    c->r = &s->r;
    c->m = &s->m;
    memcpy(c->centre, p->center, sizeof c->centre);
    s->clear = calloc((size_t)w->P.n * 4 + 1, sizeof *s->clear);
    if (!s->clear) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->n = w->P.n;
    char at[256], where[320];
    snprintf(where, sizeof where, "%s: mesh: path",
             csm_cfg_where(cfg->src, csm_cfg_value(cfg, "path")->line, at, sizeof at));
    if (csm_mesh_open(&s->mesh, s->path, cfg->src, where, s->rotate, s->fit == FIT_UNIT_BOX, s->scale, err))
        return -1;
    csm_mesh_bounds(&s->mesh, s->lo, s->hi);
    s->sign = csm_mesh_signed_volume(&s->mesh) > 0 ? 1.0 : -1.0;
    double pad = 1e-9 * (s->hi[0] - s->lo[0] + s->hi[1] - s->lo[1] + s->hi[2] - s->lo[2]);
    for (int a = 0; a < 3; a++) s->lo[a] -= pad, s->hi[a] += pad;
    return 0;
}

const csm_collider csm_collider_mesh = {
    .version = 3,
    .name = "mesh",
    .summary = "a solid triangle mesh (or, with inside, a closed vessel): signed distance to its nearest triangle, "
               "the side from the generalized winding number; restitution and Coulomb friction; it may move and turn",
    .params = mesh_params,
    .create = mesh_create,
    .apply = collider_apply,
    .destroy = collider_destroy,
    .project = collider_project,
    .pose = collider_pose,
};
