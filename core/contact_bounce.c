/* Restitution between objects (contact.restitution), after the step: Newton's law for each two
   objects that touched, as two rigid bodies (Baraff 1997's collision impulse between two bodies;
   the rule a collider applies to one body under `response: body`, solvers/colliders.c).

   The pairs' pushes inside the iterations stop two bodies against each other, so every contact
   between objects is perfectly inelastic as far as the pushes go; the bodies' own strain springs
   back by what it holds, whatever e is. Here the contact region of two objects A and B is every
   pair (or surface patch) between them that pushed this step, weighted by its push: its normal
   n (from B to A), its centre x_c, and how far apart its particles were at the step's start
   (cluster_proxies: each particle pushed out of a cluster of the other, at the particle, the
   gap how far outside the proxy it started). The
   two bodies' rigid motions (from their momenta and angular momenta, I their inertias about their
   centres of mass) give the region's relative normal velocity u_n = n . (v_A(x_c) - v_B(x_c))
   after the step, and as the step began (its velocities then plus the step's forces) the
   approach v_in < 0. One impulse j n at x_c on A and -j n on B sets u_n to -e v_in:

       j = (-e v_in - u_n) / (1/M_A + n . (I_A^-1 (r_A x n)) x r_A + 1/M_B + n . (I_B^-1 (r_B x n)) x r_B),

   r = x_c less each centre of mass, and moves every particle of each object as a rigid body
   would. Equal and opposite at one point, it keeps momentum and angular momentum; it never pulls
   (only u_n < -e v_in is raised), and for e <= 1 the two rigid motions leave with no more energy
   than they met with; it is cut short where the two bodies' kinetic energy, their own motion
   included, would leave above what they met with (the step's start plus its forces). An object
   with a pinned particle is not a free body: it stays as it is and the other bounces off it as
   off a collider, and as there the two met inside the step and leave then: each particle also
   moves by its velocity's bounce times the rest of the step after they met (between two free
   bodies that move would change their angular momentum, and a bounce loses up to a step of its
   flight). Below contact.bounce_threshold (resting contact, a stack) nothing is
   added. */
#include "contact_internal.h"

#include "csm_math.h"
#include "grow.h"
#include "world.h"

#include <math.h>
#include <string.h>

static int add(csm_contacts *c, int32_t oa, int32_t ob, double l, const double n_ba[3], const double at[3],
               double gap)
{
    if (oa > ob) { /* the normal points from the second object to the first */
        int32_t t = oa;
        oa = ob;
        ob = t;
        l = -l;
    }
    csm_contact_region *r = c->regions;
    int32_t k = 0;
    while (k < c->nregions && !(r[k].a == oa && r[k].b == ob)) k++;
    if (k == c->nregions) {
        if (csm_grow((void **)&c->regions, &c->cap_regions, k + 1, sizeof *c->regions)) return -1;
        r = c->regions;
        memset(&r[k], 0, sizeof r[k]);
        r[k].a = oa;
        r[k].b = ob;
        c->nregions++;
    }
    double w = fabs(l);
    r[k].weight += w;
    r[k].gap += w * fmax(gap, 0.0);
    for (int e = 0; e < 3; e++) {
        r[k].n[e] += l * n_ba[e];
        r[k].xc[e] += w * at[e];
    }
    return 0;
}

/* An object as a rigid body: mass, centre of mass, inverse inertia per unit mass, and whether it
   holds a pinned particle. */
typedef struct body {
    int32_t lo, hi;
    double M, com[3], Iinv[9];
    int pinned;
} body;

static void body_of(const csm_world *w, int32_t o, body *b)
{
    const csm_particles *P = &w->P;
    b->lo = w->object_first[o];
    b->hi = w->object_first[o + 1];
    b->M = 0;
    b->pinned = 0;
    for (int32_t i = b->lo; i < b->hi; i++) {
        b->M += P->mass[i];
        b->pinned |= P->inv_mass[i] == 0.0;
    }
    csm_object_frame(P, P->x, b->lo, b->hi, b->M, b->com, b->Iinv);
}

/* The velocity at x of a body's rigid motion under velocities v (plus h f / m where f is given). */
static void point_velocity(const csm_world *w, const body *b, const double *v, const double *f, double h,
                           const double x[3], double out[3])
{
    double vel[3], om[3], r[3] = {x[0] - b->com[0], x[1] - b->com[1], x[2] - b->com[2]}, turn[3];
    csm_object_motion(&w->P, b->lo, b->hi, b->M, b->com, b->Iinv, v, f, h, vel, om);
    csm_v3_cross(om, r, turn);
    for (int e = 0; e < 3; e++) out[e] = vel[e] + turn[e];
}

/* 1/M + n . (I^-1 (r x n)) x r of a free body at x along n; 0 for a pinned one. */
static double compliance(const body *b, const double x[3], const double n[3], double g[3])
{
    double r[3] = {x[0] - b->com[0], x[1] - b->com[1], x[2] - b->com[2]}, rn[3], back[3];
    csm_v3_cross(r, n, rn);
    csm_m3_mul_v3(b->Iinv, rn, g);
    if (b->pinned) return 0;
    csm_v3_cross(g, r, back);
    return (1.0 + csm_v3_dot(n, back)) / b->M;
}

/* The velocity change of particle i of a free body under a unit impulse n at x:
   n / M + (I^-1 (r x n)) x q_i, g = I^-1 (r x n) per unit mass. */
static void unit_change(const csm_particles *P, const body *b, const double g[3], const double n[3], int32_t i,
                        double out[3])
{
    double dw[3] = {g[0] / b->M, g[1] / b->M, g[2] / b->M}, t[3];
    double q[3] = {P->x[3 * i] - b->com[0], P->x[3 * i + 1] - b->com[1], P->x[3 * i + 2] - b->com[2]};
    csm_v3_cross(dw, q, t);
    for (int e = 0; e < 3; e++) out[e] = n[e] / b->M + t[e];
}

/* The kinetic energy of a body's particles under velocities v (plus h f / m where f is given), and
   with alpha and beta the first and second derivatives of its change under j times the unit
   impulse: E(j) = E + j alpha + j^2 beta / 2. */
static double energy(const csm_particles *P, const body *b, const double g[3], const double n[3], const double *v,
                     const double *f, double h, double *alpha, double *beta)
{
    double E = 0;
    for (int32_t i = b->lo; i < b->hi; i++) {
        double vi[3], u[3];
        for (int e = 0; e < 3; e++) vi[e] = v[3 * i + e] + (f ? h * f[3 * i + e] * P->inv_mass[i] : 0.0);
        E += 0.5 * P->mass[i] * csm_v3_dot(vi, vi);
        if (!alpha || b->pinned) continue;
        unit_change(P, b, g, n, i, u);
        *alpha += P->mass[i] * csm_v3_dot(vi, u);
        *beta += P->mass[i] * csm_v3_dot(u, u);
    }
    return E;
}

/* Moves a free body by the impulse j n at x: dv_i = j n / M + (I^-1 (r x j n)) x q_i; each particle
   also moves by tr times its dv. */
static void kick(csm_world *w, const body *b, const double g[3], double j, const double n[3], double tr)
{
    if (b->pinned) return;
    csm_particles *P = &w->P;
    for (int32_t i = b->lo; i < b->hi; i++) {
        double u[3];
        unit_change(P, b, g, n, i, u);
        for (int e = 0; e < 3; e++) {
            P->v[3 * i + e] += j * u[e];
            P->x[3 * i + e] += tr * j * u[e];
        }
    }
}

int csm_contacts_bounce(csm_contacts *c, csm_world *w, double h)
{
    const csm_particles *P = &w->P;
    double e = c->cfg.restitution;
    if (!(e > 0) || !w->v_step || !c->x0) return 0;
    c->nregions = 0;
    for (int32_t q = 0; q < c->npairs && c->cfg.method == CSM_CONTACT_PROXIES; q++) { /* (particle, cluster) */
        int32_t i = c->pair[2 * q], o = csm_cluster_object(w, c->pair[2 * q + 1]);
        if (P->object[i] == o || !(c->lambda[q] > 0)) continue;
        if (add(c, P->object[i], o, c->lambda[q], &c->normal[3 * q], &P->x[3 * i], csm_proxies_gap(c, q))) return -1;
    }
    for (int32_t q = 0; q < c->npairs && c->cfg.method == CSM_CONTACT_PARTICLES; q++) {
        int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
        if (P->object[i] == P->object[j] || !(c->lambda[q] > 0) || (w->surface && c->covered[q])) continue;
        const double *xi = &P->x[3 * i], *xj = &P->x[3 * j], *n = &c->normal[3 * q];
        double at[3] = {0.5 * (xi[0] + xj[0]), 0.5 * (xi[1] + xj[1]), 0.5 * (xi[2] + xj[2])}, gap = -c->distance;
        for (int k = 0; k < 3; k++) gap += n[k] * (c->x0[3 * i + k] - c->x0[3 * j + k]);
        if (add(c, P->object[i], P->object[j], c->lambda[q], n, at, gap)) return -1;
    }
    for (int32_t p = 0; p < c->npatch; p++) {
        if (!(c->patch_lambda[p] > 0)) continue;
        int32_t i = c->patch_i[p], from = c->patch_start[p], to = c->patch_start[p + 1];
        const double *n = &c->patch_n[3 * p];
        double gap = -c->patch_gap[p];
        for (int k = 0; k < 3; k++) gap += n[k] * c->x0[3 * i + k];
        for (int32_t a = from; a < to; a++)
            for (int k = 0; k < 3; k++) gap -= c->patch_w[a] * n[k] * c->x0[3 * c->patch_k[a] + k];
        if (add(c, P->object[i], P->object[c->patch_k[from]], c->patch_lambda[p], n, &P->x[3 * i], gap))
            return -1;
    }
    for (int32_t k = 0; k < c->nregions; k++) {
        csm_contact_region *r = &c->regions[k];
        double len = csm_v3_norm(r->n);
        if (!(r->weight > 0) || !(len > 0)) continue;
        double n[3], xc[3], gap = r->gap / r->weight;
        for (int d = 0; d < 3; d++) {
            n[d] = r->n[d] / len;
            xc[d] = r->xc[d] / r->weight;
        }
        body A, B;
        body_of(w, r->a, &A);
        body_of(w, r->b, &B);
        if (A.pinned && B.pinned) continue;
        double va[3], vb[3], wa[3], wb[3], ga[3], gb[3];
        point_velocity(w, &A, w->v_step, P->force, h, xc, va);
        point_velocity(w, &B, w->v_step, P->force, h, xc, vb);
        double vin = (va[0] - vb[0]) * n[0] + (va[1] - vb[1]) * n[1] + (va[2] - vb[2]) * n[2];
        if (-vin < c->cfg.bounce_threshold) continue; /* resting contact: the pushes hold it */
        point_velocity(w, &A, P->v, NULL, 0, xc, wa);
        point_velocity(w, &B, P->v, NULL, 0, xc, wb);
        double un = (wa[0] - wb[0]) * n[0] + (wa[1] - wb[1]) * n[1] + (wa[2] - wb[2]) * n[2], target = -e * vin;
        if (!(un < target)) continue;
        double K = compliance(&A, xc, n, ga) + compliance(&B, xc, n, gb);
        if (!(K > 0)) continue;
        double j = (target - un) / K;
        /* and no more kinetic energy in the two than they met with: the rigid motions leave with
           what e allows, but what the impact left in the bodies' own motion comes on top */
        double minus[3] = {-n[0], -n[1], -n[2]}, gm[3] = {-gb[0], -gb[1], -gb[2]}, alpha = 0, beta = 0;
        double before = energy(P, &A, ga, n, w->v_step, P->force, h, NULL, NULL) +
                        energy(P, &B, gm, minus, w->v_step, P->force, h, NULL, NULL);
        double now = energy(P, &A, ga, n, P->v, NULL, 0, &alpha, &beta) + energy(P, &B, gm, minus, P->v, NULL, 0, &alpha, &beta);
        double room = alpha * alpha + 2 * beta * (before - now);
        if (beta > 0 && room >= 0) j = fmin(j, (-alpha + sqrt(room)) / beta);
        if (!(j > 0)) continue;
        /* off a body held in place they met t = gap / -v_in into the step and leave then: the rest
           of it at the bounce (between two free bodies that would turn their angular momentum) */
        double tr = A.pinned || B.pinned ? fmin(h, fmax(0.0, h - gap / -vin)) * fmax(target, 0.0) / (target - un) : 0.0;
        kick(w, &A, ga, j, n, tr);
        kick(w, &B, gm, j, minus, tr);
    }
    return 0;
}
