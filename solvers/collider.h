/* What the colliders' two files share (solvers/): colliders.c scripts a collider's path and does the
   accounting of its projections and response for every shape; collider_shapes.c holds the shapes
   (plane, sphere, box, mesh), each a place and a depth function and a plugin table. */
#ifndef CSM_COLLIDER_H
#define CSM_COLLIDER_H

#include "csm_math.h"
#include "mesh.h"
#include "plugin.h"
#include "world.h"

#include <stdint.h>

/* How restitution answers a body: body (the default) or particles (each particle on its own, the
   papers' per-vertex response, which a body's shape-matching pull cancels). */
enum { CSM_RESPONSE_BODY = 0, CSM_RESPONSE_PARTICLES = 1 };

typedef struct response {
    double restitution, friction, bounce_threshold;
    int of; /* CSM_RESPONSE_* */
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
                    NULL, 0, 0, 0, NULL, 0),                                                       \
    CSM_PARAM_FIELD("response", CSM_ENUM, T, r.of, CSM_RESPONSE_BODY, 0, 0,                        \
                    "what restitution and static friction act on: body (Newton's law for the object as a rigid " \
                    "body: the normal velocity of its contact region leaves at restitution times its approach, " \
                    "by one impulse at the contact's centre of mass that moves the whole object, and Coulomb's " \
                    "law on its total holds it below the friction angle) or particles (each particle's own " \
                    "normal velocity, the papers' per-vertex response, which the clusters' pull cancels: a body " \
                    "then bounces by its elasticity alone)",                                       \
                    "body|particles", 0, 0, 0, NULL, 0)

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

/* Where a collider stands at the step's end. */
typedef struct placed {
    stride st;
    double n[3], offset; /* plane: the normal and offset at the step's end */
    double R[9];         /* box: its axes at the step's end, as columns */
    int halfspace;       /* the collider is the half-space n . x < offset: depth is n . x - offset */
    const double *x0;    /* the particles at the step's start (NULL: unknown), for the swept test */
} placed;

/* Where particle i was at the step's start, seen from the collider's frame at the step's end (it
   moved with the collider), or NULL when unknown: a solid shape pushes a particle that came from
   outside back through the side it entered, not the side nearest to where it ended. */
static inline const double *start_of(const placed *pl, int32_t i, double at[3])
{
    if (!pl->x0) return NULL;
    const stride *st = &pl->st;
    double r[3] = {pl->x0[3 * i] - st->c0[0], pl->x0[3 * i + 1] - st->c0[1], pl->x0[3 * i + 2] - st->c0[2]}, q[3];
    /* x0 - c0 in the start's frame is back (q), q the same offset in the end's frame */
    for (int a = 0; a < 3; a++) q[a] = st->back[a] * r[0] + st->back[3 + a] * r[1] + st->back[6 + a] * r[2];
    for (int a = 0; a < 3; a++) at[a] = st->c1[a] + q[a];
    return at;
}

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

/* A particle the response answered this step, for its body's restitution: the surface's normal
   and velocity there, the normal velocity it approached at (0: none approached) and how far
   above the surface it started the step. */
typedef struct contact_point {
    double n[3], vc[3], vin, gap;
} contact_point;

/* A collider's state: its parameters, and the particles its projections pushed this step. */
struct collider {
    const shape_ops *ops;
    const response *r;
    const motion *m;
    double centre[3]; /* at rest: the point its path moves and turns it about */
    unsigned char *hit; /* [n] pushed this step */
    touch *touch;       /* [n] valid where hit */
    contact_point *met; /* [n] the response's contacts (response: body) */
    int64_t cap_hit, cap_touch, cap_met;
    int64_t step; /* the step hit covers */
    union {
        plane plane;
        sphere sphere;
        box box;
        mesh_shape mesh;
    } u;
};


/* Refuses a path that stops before it starts. */
int csm_motion_check(const csm_plugin_cfg *cfg, const motion *m, csm_error *err);

/* Rotation by the angle |w| t about w (Rodrigues' formula), row-major. */
void csm_collider_turn(const double w[3], double t, double R[9]);

/* The collider's path over the step from t0 to t0 + h. */
void csm_stride_begin(stride *s, const motion *m, const double centre[3], double t0, double h);

/* A collider with a copy of the parameters (size bytes of them) as its state; NULL when out of
   memory. */
collider *csm_collider_new(const csm_plugin_cfg *cfg, const shape_ops *ops, size_t size, void **state);

/* The functions of every shape's plugin table (csm_collider's destroy, pose, project, apply). */
void csm_collider_destroy(void *state);
void csm_collider_pose(const void *state, double t, double center[3], double R[9]);
double csm_collider_project(const csm_world *w, void *state, double h, double *x);
int csm_collider_apply(csm_world *w, void *state, double h, csm_error *err);

#endif
