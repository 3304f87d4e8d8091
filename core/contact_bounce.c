/* Two objects that touch, as two rigid bodies (method particles): restitution
   (contact.restitution) after the step, and static friction (contact.response body) at the end
   of each projection, below (csm_contacts_hold).

   Restitution: Newton's law for each two objects that touched, as two rigid bodies (Baraff
   1997's collision impulse between two bodies; the rule a collider applies to one body under
   `response: body`, solvers/colliders.c).

   The pairs' pushes inside the iterations stop two bodies against each other, so every contact
   between objects is perfectly inelastic as far as the pushes go; the bodies' own strain springs
   back by what it holds, whatever e is. Here the contact region of two objects A and B is every
   pair (or surface patch) between them that pushed this step, weighted by its push: its normal
   n (from B to A), its centre x_c, and how far apart its particles were at the step's start. The
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
#include "svd3.h"
#include "world.h"

#include <math.h>
#include <string.h>

static int add(csm_contacts *c, int32_t oa, int32_t ob, double l, double lt, double mu, const double n_ba[3],
               const double at[3], double gap)
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
    r[k].slack += mu * w - lt;
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
    csm_object_frame(P, b->lo, b->hi, b->M, b->com, b->Iinv);
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

/* One push between two objects over the step (method particles): the objects (n points from ob
   to oa), the push and the friction it took (lambda: impulse times h), its direction, point, and
   how far apart its particles were along n at the step's start less the contact distance. */
typedef struct push_at {
    int32_t oa, ob;
    double ln, lt, n[3], at[3], gap;
} push_at;

/* The k-th of the step's pushes: the pairs, then (particles with contact.normal surface) the
   patches; 0 where it is no push between two objects. */
static int push_get(const csm_contacts *c, const csm_world *w, const double *x, int32_t k, push_at *p)
{
    const csm_particles *P = &w->P;
    if (k < c->npairs) {
        int32_t i = c->pair[2 * k], j = c->pair[2 * k + 1];
        if (!(c->lambda[2 * k] > 0)) return 0;
        p->ln = c->lambda[2 * k];
        p->lt = c->lambda[2 * k + 1];
        memcpy(p->n, &c->normal[3 * k], sizeof p->n);
        p->oa = P->object[i];
        p->ob = P->object[j];
        if (p->oa == p->ob || (w->surface && c->covered[k])) return 0;
        const double *xi = &x[3 * i], *xj = &x[3 * j];
        p->gap = -c->distance;
        for (int e = 0; e < 3; e++) {
            p->at[e] = 0.5 * (xi[e] + xj[e]);
            p->gap += p->n[e] * (c->x0[3 * i + e] - c->x0[3 * j + e]);
        }
        return 1;
    }
    int32_t q = k - c->npairs;
    if (!(c->patch_lambda[2 * q] > 0)) return 0;
    int32_t i = c->patch_i[q], from = c->patch_start[q], to = c->patch_start[q + 1];
    p->ln = c->patch_lambda[2 * q];
    p->lt = c->patch_lambda[2 * q + 1];
    memcpy(p->n, &c->patch_n[3 * q], sizeof p->n);
    memcpy(p->at, &x[3 * i], sizeof p->at);
    p->oa = P->object[i];
    p->ob = P->object[c->patch_k[from]];
    p->gap = -c->patch_gap[q];
    for (int e = 0; e < 3; e++) p->gap += p->n[e] * c->x0[3 * i + e];
    for (int32_t a = from; a < to; a++)
        for (int e = 0; e < 3; e++) p->gap -= c->patch_w[a] * p->n[e] * c->x0[3 * c->patch_k[a] + e];
    return p->oa != p->ob;
}

/* The regions of the step's pushes between objects: each two objects' pushes summed (add). */
static int regions_gather(csm_contacts *c, const csm_world *w, const double *x)
{
    c->nregions = 0;
    for (int32_t k = 0; k < c->npairs + c->npatch; k++) {
        push_at p;
        if (push_get(c, w, x, k, &p) && add(c, p.oa, p.ob, p.ln, p.lt, c->cfg.friction, p.n, p.at, p.gap)) return -1;
    }
    return 0;
}

int csm_contacts_bounce(csm_contacts *c, csm_world *w, double h)
{
    const csm_particles *P = &w->P;
    double e = c->cfg.restitution;
    if (!(e > 0) || !w->v_step || !c->x0) return 0;
    if (regions_gather(c, w, P->x)) return -1;
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

/* Static friction between objects as rigid bodies (contact.response body), at the end of each
   projection. The pairs' friction takes back each pair's slip up to mu times its push, but the
   iterations stop short of converged and each step keeps a little slip that nothing measures
   from where the bodies stuck: a cube on the slab at 26 degrees (mu = 0.5, atan mu = 26.57)
   crept 0.42 mm in 9 s. So the two objects of each contact region are also held as rigid bodies
   by Coulomb's law on its total (Baraff 1997's contact impulse, as a collider's body friction,
   solvers/colliders.c): their relative rigid displacement since the step began, across the
   region's normal at its centre x_c and turning about that normal, is stopped by an impulse J at
   x_c and a couple tau n on A (their opposites on B) while the friction the pushes left covers
   it with what the step's holds used before: sum |J| / B + sum |tau| / B_turn <= 1, B the sum of
   mu push - friction taken over the region's pushes, B_turn the same sum with each times its
   distance from x_c across n (a patch resists a turn up to mu sum N_k |rho_k|, a point none);
   else scaled down to what it covers. Equal and opposite at one point, they keep momentum and angular
   momentum; they take no more than stops the relative motion, so they never add energy; and
   inside the projections, the normal pushes that follow see what they moved (after the step, the
   moves pushed the bodies into each other and the next step's pushes threw them apart: stack.yaml
   kept 3.3e-4 J after 5 s). The five cubes of stack.yaml with their lattices aligned, which stood
   as balls on balls and swayed on those hinges (6.5e-4 J after 5 s), rest (6e-8 J). Not for
   cluster_proxies: there each projection's pushes shear two cubes along their proxies' two
   normals, and the hold carried a stack's upper cubes as one against the ground's body friction
   (the top cube's drift 21 mm became 55). */

/* An object as a rigid body at positions x. */
static void body_at(const csm_world *w, const double *x, int32_t o, body *b)
{
    const csm_particles *P = &w->P;
    double I[9] = {0};
    b->lo = w->object_first[o];
    b->hi = w->object_first[o + 1];
    b->M = 0;
    b->pinned = 0;
    b->com[0] = b->com[1] = b->com[2] = 0;
    for (int32_t i = b->lo; i < b->hi; i++) {
        b->M += P->mass[i];
        b->pinned |= P->inv_mass[i] == 0.0;
        for (int e = 0; e < 3; e++) b->com[e] += P->mass[i] * x[3 * i + e];
    }
    for (int e = 0; e < 3; e++) b->com[e] /= b->M;
    for (int32_t i = b->lo; i < b->hi; i++) {
        double q[3] = {x[3 * i] - b->com[0], x[3 * i + 1] - b->com[1], x[3 * i + 2] - b->com[2]}, qq = csm_v3_dot(q, q);
        for (int a = 0; a < 3; a++)
            for (int e = 0; e < 3; e++) I[3 * a + e] += P->mass[i] / b->M * ((a == e) * qq - q[a] * q[e]);
    }
    csm_pinv_sym3(I, 1e-12, b->Iinv);
}

/* A body's rigid displacement since x0 (at the centre of mass, and the turn), from its
   particles' displacements: their momentum and angular momentum over its mass and inertia. */
static void displacement(const csm_particles *P, const double *x0, const double *x, const body *b, double D[3],
                         double turn[3])
{
    double L[3] = {0, 0, 0};
    D[0] = D[1] = D[2] = 0;
    for (int32_t i = b->lo; i < b->hi; i++) {
        double q[3], u[3], l[3];
        for (int e = 0; e < 3; e++) {
            q[e] = x[3 * i + e] - b->com[e];
            u[e] = x[3 * i + e] - x0[3 * i + e];
            D[e] += P->mass[i] / b->M * u[e];
        }
        csm_v3_cross(q, u, l);
        for (int e = 0; e < 3; e++) L[e] += P->mass[i] / b->M * l[e];
    }
    csm_m3_mul_v3(b->Iinv, L, turn);
}

/* The change of a free body's rigid displacement under the impulse J at p and the couple T
   (impulses times h): at its centre dD = J / M, its turn dW = I^-1 (r x J + T) (zero for a pinned
   body). */
static void impulse_change(const body *b, const double p[3], const double J[3], const double T[3], double dD[3],
                           double dW[3])
{
    double r[3] = {p[0] - b->com[0], p[1] - b->com[1], p[2] - b->com[2]}, m[3];
    csm_v3_cross(r, J, m);
    for (int e = 0; e < 3; e++) m[e] += T[e];
    csm_m3_mul_v3(b->Iinv, m, dW);
    for (int e = 0; e < 3; e++) {
        dD[e] = b->pinned ? 0.0 : J[e] / b->M;
        dW[e] = b->pinned ? 0.0 : dW[e] / b->M;
    }
}

/* Moves a free body's particles rigidly by (dD, dW). */
static void shove(const body *b, const double dD[3], const double dW[3], double *x)
{
    if (b->pinned) return;
    for (int32_t i = b->lo; i < b->hi; i++) {
        double q[3] = {x[3 * i] - b->com[0], x[3 * i + 1] - b->com[1], x[3 * i + 2] - b->com[2]}, t[3];
        csm_v3_cross(dW, q, t);
        for (int e = 0; e < 3; e++) x[3 * i + e] += dD[e] + t[e];
    }
}

/* The relative motion of A against B at p that static friction stops, from their rigid
   displacements (DA, WA) and (DB, WB): the slip across n (along t1, t2) and the turn about n. */
static void relative_motion(const body *A, const body *B, const double p[3], const double frame[9],
                            const double DA[3], const double WA[3], const double DB[3], const double WB[3],
                            double out[3])
{
    double ra[3] = {p[0] - A->com[0], p[1] - A->com[1], p[2] - A->com[2]};
    double rb[3] = {p[0] - B->com[0], p[1] - B->com[1], p[2] - B->com[2]}, ta[3], tb[3], u[3], turn[3];
    csm_v3_cross(WA, ra, ta);
    csm_v3_cross(WB, rb, tb);
    for (int e = 0; e < 3; e++) {
        u[e] = DA[e] + ta[e] - DB[e] - tb[e];
        turn[e] = WA[e] - WB[e];
    }
    out[0] = csm_v3_dot(u, &frame[0]);
    out[1] = csm_v3_dot(u, &frame[3]);
    out[2] = csm_v3_dot(turn, &frame[6]);
}

/* What the holds of the step used so far between objects a < b: [0] the sum of their impulses
   |J| and [1] of their couples |tau| (times h); NULL when out of memory. */
static double *hold_used(csm_contacts *c, int32_t a, int32_t b)
{
    int32_t k = 0;
    while (k < c->nholds && !(c->holds[k].a == a && c->holds[k].b == b)) k++;
    if (k == c->nholds) {
        if (csm_grow((void **)&c->holds, &c->cap_holds, k + 1, sizeof *c->holds)) return NULL;
        c->holds[k].a = a;
        c->holds[k].b = b;
        c->holds[k].used[0] = c->holds[k].used[1] = 0;
        c->nholds++;
    }
    return c->holds[k].used;
}

int csm_contacts_hold(csm_contacts *c, const csm_world *w, double *x)
{
    const csm_particles *P = &w->P;
    if (c->cfg.method != CSM_CONTACT_PARTICLES || !(c->cfg.friction > 0) || c->cfg.response != CSM_CONTACT_RESPONSE_BODY ||
        !c->x0)
        return 0;
    if (regions_gather(c, w, x)) return -1;
    for (int32_t k = 0; k < c->nregions; k++) { /* each region's normal and centre */
        csm_contact_region *r = &c->regions[k];
        double len = csm_v3_norm(r->n);
        if (!(r->weight > 0) || !(len > 0)) {
            r->weight = 0;
            continue;
        }
        for (int e = 0; e < 3; e++) {
            r->n[e] /= len;
            r->xc[e] /= r->weight;
        }
    }
    for (int32_t k = 0; k < c->npairs + c->npatch && c->nregions; k++) { /* the friction left, times its arm about it */
        push_at p;
        if (!push_get(c, w, x, k, &p)) continue;
        int32_t a = p.oa < p.ob ? p.oa : p.ob, b = p.oa < p.ob ? p.ob : p.oa, m = 0;
        while (m < c->nregions && !(c->regions[m].a == a && c->regions[m].b == b)) m++;
        if (m == c->nregions || !(c->regions[m].weight > 0)) continue;
        csm_contact_region *r = &c->regions[m];
        double rho[3] = {p.at[0] - r->xc[0], p.at[1] - r->xc[1], p.at[2] - r->xc[2]}, along = csm_v3_dot(rho, r->n);
        for (int e = 0; e < 3; e++) rho[e] -= along * r->n[e];
        r->twist += (c->cfg.friction * p.ln - p.lt) * csm_v3_norm(rho);
    }
    for (int32_t k = 0; k < c->nregions; k++) {
        const csm_contact_region *r = &c->regions[k];
        double *used = r->weight > 0 ? hold_used(c, r->a, r->b) : NULL;
        if (r->weight > 0 && !used) return -1;
        if (!used || !(r->slack > 0)) continue;
        body A, B;
        body_at(w, x, r->a, &A);
        body_at(w, x, r->b, &B);
        if (A.pinned && B.pinned) continue;
        const double *n = r->n, *xc = r->xc;
        double DA[3], WA[3], DB[3], WB[3], frame[9], rhs[3], G[9], Ginv[9], z[3];
        displacement(P, c->x0, x, &A, DA, WA);
        displacement(P, c->x0, x, &B, DB, WB);
        csm_v3_tangents(n, &frame[0], &frame[3]);
        memcpy(&frame[6], n, 3 * sizeof *n);
        relative_motion(&A, &B, xc, frame, DA, WA, DB, WB, rhs);
        /* a single point of contact holds no turn */
        double size = 1.0 / sqrt(fmax(csm_m3_frobenius(A.Iinv), csm_m3_frobenius(B.Iinv)));
        int turns = r->twist > 1e-6 * size * r->slack;
        for (int col = 0; col < 3; col++) { /* the Delassus operator: what a unit of each does */
            double J[3], T[3], minus[3], mT[3], dDA[3], dWA[3], dDB[3], dWB[3], out[3];
            for (int e = 0; e < 3; e++) {
                J[e] = col < 2 ? frame[3 * col + e] : 0.0;
                T[e] = col == 2 ? n[e] : 0.0;
                minus[e] = -J[e];
                mT[e] = -T[e];
            }
            impulse_change(&A, xc, J, T, dDA, dWA);
            impulse_change(&B, xc, minus, mT, dDB, dWB);
            relative_motion(&A, &B, xc, frame, dDA, dWA, dDB, dWB, out);
            for (int row = 0; row < 3; row++) G[3 * row + col] = out[row];
        }
        if (!turns) G[2] = G[5] = G[6] = G[7] = 0, G[8] = 1, rhs[2] = 0;
        if (!(csm_m3_inverse(G, Ginv) != 0)) continue;
        csm_m3_mul_v3(Ginv, rhs, z);
        /* Coulomb: the step's holds, this one scaled by f, within the friction left */
        double lin = hypot(z[0], z[1]), ang = turns ? fabs(z[2]) : 0.0;
        double room = 1.0 - used[0] / r->slack - (turns ? used[1] / r->twist : 0.0);
        double need = lin / r->slack + (turns ? ang / r->twist : 0.0);
        if (!(need > 0) || !(room > 0)) continue;
        double f = fmin(1.0, room / need), J[3], T[3], minus[3], mT[3], dD[3], dW[3];
        used[0] += f * lin;
        used[1] += f * ang;
        for (int e = 0; e < 3; e++) {
            J[e] = -f * (z[0] * frame[e] + z[1] * frame[3 + e]);
            T[e] = -f * z[2] * n[e];
            minus[e] = -J[e];
            mT[e] = -T[e];
        }
        impulse_change(&A, xc, J, T, dD, dW);
        shove(&A, dD, dW, x);
        impulse_change(&B, xc, minus, mT, dD, dW);
        shove(&B, dD, dW, x);
    }
    return 0;
}
