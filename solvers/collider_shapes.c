/* The colliders' shapes: a half-space, a sphere, a box and a triangle mesh, each solid or (with
   inside) a container. A shape answers where it stands at a step's end and the depth and normal of
   a point; colliders.c does the rest. */

#include "collider.h"

#include "error.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    csm_stride_begin(&pl->st, c->m, c->centre, t0, h);
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
    if (csm_motion_check(cfg, &p->m, err)) return -1;
    collider *c = csm_collider_new(cfg, &plane_ops, sizeof *p, state);
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
    .apply = csm_collider_apply,
    .destroy = csm_collider_destroy,
    .project = csm_collider_project,
    .pose = csm_collider_pose,
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
    csm_stride_begin(&pl->st, c->m, c->centre, t0, h);
}

static double sphere_depth(collider *c, const placed *pl, const double x[3], int32_t i, int exact, double n[3])
{
    (void)exact;
    const sphere *s = &c->u.sphere;
    const double *o = pl->st.c1;
    double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, at0[3];
    const double *x0 = s->inside ? NULL : start_of(pl, i, at0);
    if (x0) { /* swept: the path r0 -> r that started outside enters where |r0 + t d| = radius first */
        double r0[3] = {x0[0] - o[0], x0[1] - o[1], x0[2] - o[2]}, d[3] = {r[0] - r0[0], r[1] - r0[1], r[2] - r0[2]};
        double a = csm_v3_dot(d, d), b = csm_v3_dot(r0, d), q = csm_v3_dot(r0, r0) - s->radius * s->radius;
        double disc = b * b - a * q, t = a > 0 && disc > 0 ? (-b - sqrt(disc)) / a : -1;
        if (q > 0 && t >= 0 && t <= 1) { /* back through the side it came in by */
            for (int k = 0; k < 3; k++) n[k] = (r0[k] + t * d[k]) / s->radius;
            return fmin(csm_v3_dot(n, r) - s->radius, 0.0);
        }
    }
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
    if (csm_motion_check(cfg, &p->m, err)) return -1;
    collider *c = csm_collider_new(cfg, &sphere_ops, sizeof *p, state);
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
    .apply = csm_collider_apply,
    .destroy = csm_collider_destroy,
    .project = csm_collider_project,
    .pose = csm_collider_pose,
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
    csm_stride_begin(&pl->st, c->m, c->centre, t0, h);
    csm_m3_mul(pl->st.R1, c->u.box.R0, pl->R); /* the box's axes are R's columns */
}

/* The swept test of a solid box (the slab method): the path l0 -> l of a particle that started
   outside enters the box at the face of the latest entry time across the three slabs, if it
   enters at all within the step. Returns the axis of that face (its outward normal is
   -sign(l - l0) along it), or -1 where the path misses the box or started inside it. */
static int box_entry(const double l0[3], const double l[3], const double half[3])
{
    double enter = -INFINITY, leave = INFINITY;
    int at = -1;
    for (int a = 0; a < 3; a++) {
        double d = l[a] - l0[a];
        if (d == 0) {
            if (!(fabs(l0[a]) < half[a])) return -1;
            continue;
        }
        double t1 = (-half[a] - l0[a]) / d, t2 = (half[a] - l0[a]) / d;
        if (t1 > t2) {
            double t = t1;
            t1 = t2, t2 = t;
        }
        if (t1 > enter) enter = t1, at = a;
        leave = fmin(leave, t2);
    }
    return at >= 0 && enter >= 0 && enter <= 1 && enter < leave ? at : -1;
}

static double box_depth(collider *c, const placed *pl, const double x[3], int32_t i, int exact, double n[3])
{
    (void)exact;
    const box *s = &c->u.box;
    const double *o = pl->st.c1, *R = pl->R;
    double half[3] = {0.5 * s->size[0], 0.5 * s->size[1], 0.5 * s->size[2]};
    double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, l[3], nl[3], at0[3];
    for (int a = 0; a < 3; a++) l[a] = R[a] * r[0] + R[3 + a] * r[1] + R[6 + a] * r[2]; /* R^T r */
    const double *x0 = s->inside ? NULL : start_of(pl, i, at0);
    if (x0) { /* swept: back through the face it came in by, however far it went (no tunnelling) */
        double r0[3] = {x0[0] - o[0], x0[1] - o[1], x0[2] - o[2]}, l0[3];
        for (int a = 0; a < 3; a++) l0[a] = R[a] * r0[0] + R[3 + a] * r0[1] + R[6 + a] * r0[2];
        int a = box_entry(l0, l, half);
        if (a >= 0) {
            memset(nl, 0, sizeof nl);
            nl[a] = l[a] > l0[a] ? -1.0 : 1.0;
            csm_m3_mul_v3(R, nl, n);
            return fmin(nl[a] * l[a] - half[a], 0.0);
        }
    }
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
    if (csm_motion_check(cfg, &p->m, err)) return -1;
    collider *c = csm_collider_new(cfg, &box_ops, sizeof *p, state);
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
    .apply = csm_collider_apply,
    .destroy = csm_collider_destroy,
    .project = csm_collider_project,
    .pose = csm_collider_pose,
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
    csm_stride_begin(&pl->st, c->m, c->centre, t0, h);
    memcpy(pl->R, pl->st.R1, sizeof pl->R); /* the mesh was turned by rotate when it was placed */
}

/* Triangle t's unit normal, out of the solid (into a vessel); 0 for a degenerate triangle. */
static int face_normal(const mesh_shape *s, int32_t t, double nl[3])
{
    const int32_t *v = &s->mesh.tri[3 * t];
    const double *A = &s->mesh.v[3 * v[0]], *B = &s->mesh.v[3 * v[1]], *C = &s->mesh.v[3 * v[2]];
    double ab[3] = {B[0] - A[0], B[1] - A[1], B[2] - A[2]}, ac[3] = {C[0] - A[0], C[1] - A[1], C[2] - A[2]};
    csm_v3_cross(ab, ac, nl);
    double len = csm_v3_norm(nl), out = s->inside ? -s->sign : s->sign;
    if (!(len > 0)) return 0;
    for (int a = 0; a < 3; a++) nl[a] *= out / len;
    return 1;
}

/* The signed distance to the mesh: the distance to its nearest triangle, negative where the
   point lies on the solid side. The side comes from the generalized winding number (|w| >= 1/2:
   inside, core/mesh.h), so small holes and flipped faces do not turn a whole region inside out;
   the normal points from the nearest surface point to the particle (away from the solid), or
   along the nearest face where the particle lies on the surface. A particle whose path over the
   step crossed a face inwards is measured against that face instead where the nearest point
   would push it on through (below). */
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
    } else if (!face_normal(s, t, nl)) { /* on the surface: the face's normal, out of the solid */
        nl[0] = nl[2] = 0;
        nl[1] = 1;
    }
    double at0[3];
    const double *x0 = s->inside ? NULL : start_of(pl, i, at0);
    if (x0) { /* swept: a path that went in from outside and ends where the nearest surface faces
                 the other way (beyond the solid, or in it past its middle: the nearest point would
                 push it on through) goes back through the face it came in by (no tunnelling); a
                 path that dips in and out under a convex surface it slides on ends facing the
                 same way and keeps the nearest point */
        double r0[3] = {x0[0] - o[0], x0[1] - o[1], x0[2] - o[2]}, l0[3], d[3], nh[3];
        for (int a = 0; a < 3; a++) l0[a] = R[a] * r0[0] + R[3 + a] * r0[1] + R[6 + a] * r0[2];
        for (int a = 0; a < 3; a++) d[a] = l[a] - l0[a];
        int32_t hit;
        /* a path shorter than its end's distance to the surface cannot have crossed it */
        double at = csm_v3_dot(d, d) >= dist * dist ? csm_mesh_segment_first(&s->mesh, l0, l, &hit) : -1.0;
        if (at >= 0 && face_normal(s, hit, nh) && csm_v3_dot(nh, d) < 0 && csm_v3_dot(nh, nl) < 0) {
            double depth = 0;
            for (int a = 0; a < 3; a++) depth += nh[a] * (l[a] - l0[a] - at * d[a]);
            if (clear) clear[3] = 0;
            csm_m3_mul_v3(R, nh, n);
            return fmin(depth, 0.0);
        }
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
    if (csm_motion_check(cfg, &p->m, err)) return -1;
    collider *c = csm_collider_new(cfg, &mesh_ops, offsetof(mesh_shape, mesh), state);
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
             csm_cfg_where(cfg->src, csm_cfg_field(cfg, offsetof(mesh_shape, path))->line, at, sizeof at));
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
    .apply = csm_collider_apply,
    .destroy = csm_collider_destroy,
    .project = csm_collider_project,
    .pose = csm_collider_pose,
};
