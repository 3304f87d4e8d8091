/* Colliders, whatever their shape: applied after the integrator as a position projection plus a
   velocity response (restitution on the normal part, Coulomb friction on the tangential part, both
   relative to the collider's surface velocity), with the work of each projection accounted for.
   Every collider can follow a scripted path: a constant velocity and angular velocity between
   `from` and `until`, plus keyframes. Pinned particles (inverse mass 0) never move. The shapes
   are in collider_shapes.c. */

#include "collider.h"

#include "error.h"
#include "grow.h"
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int csm_motion_check(const csm_plugin_cfg *cfg, const motion *m, csm_error *err)
{
    if (m->until < m->from) return csm_cfg_fail(cfg, err, "until = %g is before from = %g", m->until, m->from);
    return 0;
}

void csm_collider_turn(const double w[3], double t, double R[9])
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
    csm_collider_turn(m->angular_velocity, s, p->R);
}

void csm_stride_begin(stride *s, const motion *m, const double centre[3], double t0, double h)
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

collider *csm_collider_new(const csm_plugin_cfg *cfg, const shape_ops *ops, size_t size, void **state)
{
    collider *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ops = ops;
    c->step = -1;
    memcpy(&c->u, csm_cfg_params(cfg), size);
    *state = c;
    return c;
}

void csm_collider_destroy(void *state)
{
    collider *c = state;
    if (c) {
        if (c->ops->close) c->ops->close(c);
        free(c->hit);
        free(c->touch);
        free(c->met);
    }
    free(c);
}

/* The pose the log keeps (csm_collider.pose). */
void csm_collider_pose(const void *state, double t, double center[3], double R[9])
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

/* The particles of block b (csm_block_start) that touch the collider or may: their work into
   part[b], touched[b] 1 where one touched. The test runs on a copy of the placement and the
   block's ends are taken once: project_one writes the positions, which the compiler must
   otherwise take to alias them. */
static void project_block(collider *c, const csm_world *w, const placed *pl, double h, double *x, int b, double *part,
                          int *touched)
{
    int32_t lo = csm_block_start(w->P.n, b), hi = csm_block_start(w->P.n, b + 1);
    const unsigned char *hit = c->hit;
    const placed at = *pl;
    double sum = 0;
    for (int32_t i = lo; i < hi; i++) {
        if (!hit[i] && clear_of(&at, x, i)) continue;
        sum += project_one(c, w, pl, h, x, i);
        touched[b] |= hit[i];
    }
    part[b] = sum;
}

/* Inside the integrator's iterations: push x out onto the surface at the step's end, note each
   particle pushed and the normal velocity it came in at (its velocity v* of the step, relative
   to the surface), take back its slip over the step up to mu times its pushes so far, and
   return the work of the pushes and of that friction, sum_i m_i dx_i . v_c / h: the impulse
   m_i dx_i / h the surface gives, times the surface's velocity (0 for a collider at rest).
   Particles are independent; the work is summed in fixed blocks, the same for every thread
   count. A few thousand particles take less than starting the threads (a stack of five
   125-particle cubes projects 42 times a step): those run on the calling thread. */
#define PROJECT_THREADS_FROM 4096
double csm_collider_project(const csm_world *w, void *state, double h, double *x)
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
    pl.x0 = w->x_step;
    double part[CSM_SUM_BLOCKS] = {0};
    int touched[CSM_SUM_BLOCKS] = {0};
    if (P->n >= PROJECT_THREADS_FROM) {
#pragma omp parallel for schedule(static)
        for (int b = 0; b < CSM_SUM_BLOCKS; b++) project_block(c, w, &pl, h, x, b, part, touched);
    } else {
        for (int b = 0; b < CSM_SUM_BLOCKS; b++) project_block(c, w, &pl, h, x, b, part, touched);
    }
    for (int b = 0; b < CSM_SUM_BLOCKS && w->report; b++) w->report->collider_pushed |= touched[b];
    return csm_block_total(part);
}

/* The normal velocity, relative to the surface's vc, at r from an object's centre of mass, of the
   object's rigid motion (csm_object_motion). */
static double rigid_normal_velocity(const csm_particles *P, int32_t lo, int32_t hi, double M, const double com[3],
                                    const double Iinv[9], const double r[3], const double n[3], const double vc[3],
                                    const double *v, const double *f, double h)
{
    double p[3], om[3], turn[3];
    csm_object_motion(P, lo, hi, M, com, Iinv, v, f, h, p, om);
    csm_v3_cross(om, r, turn);
    return (p[0] + turn[0] - vc[0]) * n[0] + (p[1] + turn[1] - vc[1]) * n[1] + (p[2] + turn[2] - vc[2]) * n[2];
}

/* Restitution of a body (response: body): Newton's law for each object the response met, as a
   rigid body (Baraff 1997's collision impulse: the papers' per-vertex rule lifted to the body, as
   Müller et al. 2007 Sec 3.4 moves a whole body by a position change). The contact region is the
   particles that approached the surface this step; its normal n, centre x_c, surface velocity and
   approach speed v_in are their mass-weighted means, v_in no faster than the body's own rigid
   approach there as the step began (its velocities then, plus the step's forces): one particle
   jittering into the floor at 35 m/s under a body that comes down at 2 m/s is not the body's
   approach, and bouncing the body at e times it gave it energy. The object's rigid motion (v, omega from its
   momentum and angular momentum, I its inertia about its centre of mass) gives the region's
   normal velocity u_n after the step; one impulse j n at x_c sets it to -e v_in,
   j = (-e v_in - u_n) / (1 / M + n . (I^-1 (r x n)) x r), r = x_c - x_com, and moves every
   particle of the object: dv_i = j n / M + (I^-1 (r x j n)) x (x_i - x_com). The region's
   particles lose tangential velocity relative to the surface up to mu j / m_c each (Coulomb, mu j
   in all). It never pulls (only u_n < -e v_in is raised) and for e <= 1 leaves the rigid motion
   with no more energy than it approached with. A deformable body still holds part of its
   approach in its own motion and strain when its contact region leaves, and gives it back as it
   springs out, which this impulse does not see (docs/physics.md). The body met the surface inside
   the step, t_r = h - d / -v_in before its end (d the region's mean height above the surface at
   the step's start), and leaves it then: each particle also moves t_r times its velocity's bounce
   (the part of dv_i that takes u_n past 0 to -e v_in), so that the flight after a bounce does not
   lose the rest of the step. Below bounce_threshold (resting contact, a press that holds the
   body) and for an object with pinned particles, which is not a free body, the particles' own
   rule answers alone. */
static void body_restitution(csm_world *w, const collider *c, double h)
{
    csm_particles *P = &w->P;
    const response *r = c->r;
    for (int32_t o = 0; o < w->nobjects; o++) {
        int32_t lo = w->object_first[o], hi = w->object_first[o + 1];
        /* in shares of the object's mass, which any mass scale leaves as they are: mc the contact
           region's share, p the velocity of the centre of mass, L and I and j per unit mass */
        double M = 0, mc = 0, vin = 0, gap = 0, n[3] = {0, 0, 0}, xc[3] = {0, 0, 0}, vc[3] = {0, 0, 0};
        int pinned = 0;
        for (int32_t i = lo; i < hi; i++) M += P->mass[i];
        for (int32_t i = lo; i < hi; i++) {
            const contact_point *m = &c->met[i];
            pinned |= P->inv_mass[i] == 0.0;
            if (!(m->vin < 0)) continue;
            double mi = P->mass[i] / M;
            mc += mi;
            vin += mi * m->vin;
            gap += mi * m->gap;
            for (int d = 0; d < 3; d++) {
                n[d] += mi * m->n[d];
                xc[d] += mi * P->x[3 * i + d];
                vc[d] += mi * m->vc[d];
            }
        }
        double len = csm_v3_norm(n);
        if (!(mc > 0) || pinned || !(len > 0)) continue;
        vin /= mc;
        gap /= mc;
        for (int d = 0; d < 3; d++) {
            n[d] /= len;
            xc[d] /= mc;
            vc[d] /= mc;
        }
        if (-vin < r->bounce_threshold) continue; /* resting contact: the particles' rule holds it */
        double e = r->restitution;
        double com[3], Iinv[9], rc[3], rn[3], g[3], back[3];
        csm_object_frame(P, P->x, lo, hi, M, com, Iinv);
        for (int d = 0; d < 3; d++) rc[d] = xc[d] - com[d];
        double un = rigid_normal_velocity(P, lo, hi, M, com, Iinv, rc, n, vc, P->v, NULL, 0);
        if (w->v_step) { /* the body's own approach: its rigid motion as the step began, with the step's forces */
            double before = rigid_normal_velocity(P, lo, hi, M, com, Iinv, rc, n, vc, w->v_step, P->force, h);
            vin = fmax(vin, fmin(before, 0.0)); /* the slower: a particle's jitter is not the body's approach */
            if (-vin < r->bounce_threshold) continue;
        }
        csm_v3_cross(rc, n, rn);
        csm_m3_mul_v3(Iinv, rn, g);
        csm_v3_cross(g, rc, back);
        double target = -e * vin;
        if (!(un < target)) continue;
        double j = (target - un) / (1.0 + csm_v3_dot(n, back)), dw[3];
        double tr = fmin(h, fmax(0.0, h - gap / -vin)) * fmax(target, 0.0) / (target - un);
        for (int d = 0; d < 3; d++) dw[d] = j * g[d];
        for (int32_t i = lo; i < hi; i++) {
            double q[3] = {P->x[3 * i] - com[0], P->x[3 * i + 1] - com[1], P->x[3 * i + 2] - com[2]}, t[3];
            csm_v3_cross(dw, q, t);
            for (int d = 0; d < 3; d++) {
                double dv = j * n[d] + t[d];
                P->v[3 * i + d] += dv;
                P->x[3 * i + d] += tr * dv;
            }
            /* Coulomb friction of the impulse */
            const contact_point *m = &c->met[i];
            if (!(m->vin < 0) || !(r->friction > 0)) continue;
            double *v = &P->v[3 * i], rel[3] = {v[0] - m->vc[0], v[1] - m->vc[1], v[2] - m->vc[2]};
            double rn2 = csm_v3_dot(rel, m->n), vt[3] = {rel[0] - rn2 * m->n[0], rel[1] - rn2 * m->n[1], rel[2] - rn2 * m->n[2]};
            double vt_len = csm_v3_norm(vt), cut = vt_len > 0 ? fmin(1.0, r->friction * j / mc / vt_len) : 0.0;
            for (int d = 0; d < 3; d++) v[d] -= cut * vt[d];
        }
    }
}

/* Static friction of a body (response: body), after the iterations and before the velocity
   response. The projections take each pushed particle's slip back up to mu times its pushes, but
   the iterations stop short of converged, and a body at rest on a slope keeps a little of each
   step's slip: it crept at a steady speed below the friction angle (a cube at mu = 0.5 on a 26
   degree plane, 2.9 mm/s at 20 iterations), since nothing measured the slip from where it stuck.
   So each object is also held as a rigid body, by Coulomb's law on its total (Baraff 1997's
   contact impulse, as body_restitution): its contact region (the particles pushed this step, mass
   m_c, centre x_c) slipped s over the step on the mean, relative to the surface, and turned theta
   about the region's normal n (sum m rho x slip . n / sum m |rho|^2, rho the offsets from x_c
   across n). The impulse J at x_c across n and the couple tau n whose rigid move stops both (the
   3 x 3 system of what a unit of each moves) act if the friction the pushes left unused covers
   them, |J| h / B + |tau| h / B_turn <= 1 with B = sum_i m_i (mu push_i - held_i) (impulses times h)
   and B_turn = sum_i m_i (mu push_i - held_i) |rho_i| (what is left of each point's Coulomb force
   turns at that point's arm: a patch resists a turn up to mu sum_i N_i |rho_i|, a point none),
   else scaled down to what they cover (kinetic). It moves the whole object rigidly, velocities
   and positions over the step, so the strain stays as it is, a rolling body's region (which does
   not slip) keeps its roll, and a body spinning on its face slows by Coulomb's torque. The impulse takes no more than
   stops the region, so it never adds energy. What it uses is charged to the particles' budgets,
   in proportion, for the velocity response that follows. Objects with pinned particles are not
   free bodies: the particles' rule holds them alone. */
static void body_friction(csm_world *w, collider *c, const placed *pl, double h)
{
    csm_particles *P = &w->P;
    double mu = c->r->friction;
    for (int32_t o = 0; o < w->nobjects; o++) {
        int32_t lo = w->object_first[o], hi = w->object_first[o + 1];
        double M = 0, mc = 0, budget = 0, s[3] = {0, 0, 0}, n[3] = {0, 0, 0}, xc[3] = {0, 0, 0};
        int pinned = 0;
        for (int32_t i = lo; i < hi; i++) {
            M += P->mass[i];
            pinned |= P->inv_mass[i] == 0.0;
            if (!c->hit[i]) continue;
            double ni[3], *x = &P->x[3 * i];
            c->ops->depth(c, pl, x, i, 1, ni);
            for (int d = 0; d < 3; d++) {
                n[d] += P->mass[i] * ni[d];
                xc[d] += P->mass[i] * x[d];
            }
            mc += P->mass[i];
            budget += P->mass[i] * (mu * c->touch[i].push - c->touch[i].held);
        }
        double len = csm_v3_norm(n);
        if (pinned || !(mc > 0) || !(budget > 0) || !(len > 0)) continue;
        for (int d = 0; d < 3; d++) xc[d] /= mc, n[d] /= len;
        double turn = 0, spread = 0, twist = 0; /* sums of m rho x slip . n, m |rho|^2, m (mu push - held) |rho| */
        for (int32_t i = lo; i < hi; i++) {
            if (!c->hit[i]) continue;
            double ni[3], vc[3], slip[3], rho[3], m[3], *x = &P->x[3 * i];
            c->ops->depth(c, pl, x, i, 1, ni);
            surface_velocity(&pl->st, x, vc);
            for (int d = 0; d < 3; d++) {
                slip[d] = x[d] - w->x_step[3 * i + d] - h * vc[d];
                rho[d] = x[d] - xc[d];
            }
            double sn = csm_v3_dot(slip, ni), rn = csm_v3_dot(rho, n);
            for (int d = 0; d < 3; d++) {
                slip[d] -= sn * ni[d];
                s[d] += P->mass[i] * slip[d];
                rho[d] -= rn * n[d];
            }
            csm_v3_cross(rho, slip, m);
            turn += P->mass[i] * csm_v3_dot(m, n);
            spread += P->mass[i] * csm_v3_dot(rho, rho);
            twist += P->mass[i] * (mu * c->touch[i].push - c->touch[i].held) * csm_v3_norm(rho);
        }
        int turns = spread > 0 && twist > 1e-9 * budget * sqrt(spread / mc); /* a point holds no turn */
        double com[3], Iinv[9], r[3], frame[9], G[9], Ginv[9], z[3], rhs[3] = {0, 0, turns ? turn / spread : 0.0};
        for (int d = 0; d < 3; d++) s[d] /= mc;
        csm_v3_tangents(n, &frame[0], &frame[3]);
        rhs[0] = csm_v3_dot(s, &frame[0]);
        rhs[1] = csm_v3_dot(s, &frame[3]);
        if (rhs[0] == 0 && rhs[1] == 0 && rhs[2] == 0) continue;
        csm_object_frame(P, P->x, lo, hi, M, com, Iinv);
        for (int d = 0; d < 3; d++) r[d] = xc[d] - com[d];
        for (int col = 0; col < 3; col++) { /* what a unit of J along t1, t2 and of tau moves, per unit mass */
            double J[3], m[3], dw[3], dx[3];
            for (int d = 0; d < 3; d++) J[d] = col < 2 ? frame[3 * col + d] : 0.0;
            csm_v3_cross(r, J, m);
            if (col == 2) memcpy(m, n, sizeof m);
            csm_m3_mul_v3(Iinv, m, dw);
            csm_v3_cross(dw, r, dx);
            for (int d = 0; d < 3; d++) dx[d] += J[d];
            G[col] = csm_v3_dot(dx, &frame[0]);
            G[3 + col] = csm_v3_dot(dx, &frame[3]);
            G[6 + col] = csm_v3_dot(dw, n);
        }
        if (!turns) G[2] = G[5] = G[6] = G[7] = 0, G[8] = 1;
        if (!(csm_m3_inverse(G, Ginv) != 0)) continue;
        csm_m3_mul_v3(Ginv, rhs, z); /* per unit mass, times h, negated */
        double need = M * (hypot(z[0], z[1]) / budget + (turns ? fabs(z[2]) / twist : 0.0)); /* of the friction left */
        if (!(need > 0)) continue;
        double f = fmin(1.0, 1.0 / need), used = f * need, j[3], m[3], dw[3];
        for (int d = 0; d < 3; d++) j[d] = -f * (z[0] * frame[d] + z[1] * frame[3 + d]);
        csm_v3_cross(r, j, m);
        for (int d = 0; d < 3; d++) m[d] -= f * z[2] * n[d];
        csm_m3_mul_v3(Iinv, m, dw);
        for (int32_t i = lo; i < hi; i++) {
            double q[3] = {P->x[3 * i] - com[0], P->x[3 * i + 1] - com[1], P->x[3 * i + 2] - com[2]}, t[3];
            csm_v3_cross(dw, q, t);
            for (int d = 0; d < 3; d++) {
                double dx = j[d] + t[d];
                P->x[3 * i + d] += dx;
                P->v[3 * i + d] += dx / h;
            }
            if (c->hit[i]) c->touch[i].held += used * (mu * c->touch[i].push - c->touch[i].held);
        }
    }
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
int csm_collider_apply(csm_world *w, void *state, double h, csm_error *err)
{
    collider *c = state;
    csm_particles *P = &w->P;
    const response *r = c->r;
    int pushed = c->step == w->step, body = r->of == CSM_RESPONSE_BODY;
    placed pl = {.halfspace = 0};
    c->ops->place(c, w->time, h, &pl);
    pl.x0 = w->x_step;
    if (body) {
        if (csm_grow((void **)&c->met, &c->cap_met, P->n, sizeof *c->met))
            return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for a collider's contacts of %d particles", P->n);
        memset(c->met, 0, sizeof *c->met * (size_t)P->n);
        if (pushed && r->friction > 0 && w->x_step) body_friction(w, c, &pl, h);
    }
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
        if (body) { /* the particle stops along the normal; its body bounces (body_restitution) */
            contact_point *m = &c->met[i];
            memcpy(m->n, n, sizeof n);
            memcpy(m->vc, vc, sizeof vc);
            m->vin = vin;
            m->gap = w->x_step ? (w->x_step[3 * i] - x[0]) * n[0] + (w->x_step[3 * i + 1] - x[1]) * n[1] +
                                     (w->x_step[3 * i + 2] - x[2]) * n[2]
                               : h * -vin; /* unknown: no time left */
            e = 0.0;
        }
        double vout = fmax(vn, -e * vin);
        double vt[3] = {u[0] - vn * n[0], u[1] - vn * n[1], u[2] - vn * n[2]};
        double vt_len = csm_v3_norm(vt);
        /* what is left of mu times the normal impulse (per unit mass) after the projections' friction */
        double left = hit ? (r->friction * c->touch[i].push - c->touch[i].held) / h : 0.0;
        double keep = vt_len > 0 ? fmax(0.0, 1.0 - (left + r->friction * (vout - vn)) / vt_len) : 0.0;
        for (int d = 0; d < 3; d++) v[d] = vc[d] + keep * vt[d] + vout * n[d];
    }
    if (body) body_restitution(w, c, h);
    if (pushed) c->step = -1;
    return 0;
}
