/* Static friction between objects as rigid bodies (contact.response body, either method), at
   the end of each projection (csm_contacts_project).

   The pairs' friction takes back each pair's slip up to mu times its push, but the iterations
   stop short of converged and each step keeps a little slip that nothing measures from where the
   bodies stuck: a cube on the slab at 26 degrees (mu = 0.5, atan mu = 26.57) crept 0.42 mm in
   9 s, and the five cubes of stack.yaml with their lattices aligned, standing as balls on balls
   (a face five particles across has no surface patch), swayed on those hinges (6.5e-4 J after
   5 s, the top cube 13 mm off by 30 s). So the two objects of each contact region are also held
   as rigid bodies by Coulomb's law on its total (Baraff 1997's contact impulse, as a collider's
   body friction, solvers/colliders.c). The region is the pushes between the two (pairs and
   patches, each weighted by its push), n their mean normal, x_c their centre. The two bodies'
   rigid displacements since the step began (from their particles' momenta and angular momenta
   over their masses and inertias) give the relative slip at x_c across n and the relative turn
   about n; an impulse J at x_c across n and a couple tau n on A, their opposites on B, stop both
   (the 3 x 3 system of what a unit of each moves), scaled by the largest f <= 1 that keeps the
   region's friction within Coulomb's bound with what the pushes' friction and the step's holds
   took before (an ellipse, as the limit surface of a patch's force and couple):

       (taken / (mu N))^2 + (turned / B_turn)^2 <= 1,

   N the sum of the pushes and B_turn the sum of mu push - |friction| over them, each times its
   distance from x_c across n (a patch resists a turn up to mu sum N_k |rho_k|, a point none).
   With particles each pair or patch is one contact and its friction is taken where it points:
   taken is the sum of the lengths of the pushes' frictions and of the holds' J (turned: of their
   tau). With cluster_proxies each contact is held twice, each object's particles against the
   other's proxies, and the two measure the slip against different things (a particle against the
   cluster's material point, the cluster's members moving with it as a body): their frictions
   oppose each other, and counted by their lengths they left the hold nothing while the body crept
   (a cube half a degree under the friction angle at mu = 0.2: 32.9 mm in 7 s). Coulomb's law
   bounds their total: taken is the length across n of the sum of the pushes' frictions and the
   holds' J (turned: of the sum of their tau), and the cube moves 0.001 mm. (Taken so with
   particles, the holds glued the five cubes of stack.yaml as they landed on each other, and the
   column leaned: the top cube 0.12 m off in 2.5 s, against 0.03.) Equal and opposite at one point, they keep
   momentum, and angular momentum to the first order of the linear turn each body is moved by;
   they take no more than stops the relative motion, so they never add energy; and inside the
   projections, the pushes that follow see what they moved. (After the step instead, the moves
   pushed the bodies into each other and the next step's pushes threw them apart: stack.yaml kept
   3.3e-4 J after 5 s.) With cluster_proxies a push is a particle's out of another object's
   cluster proxy, at the particle, along the push. With the proxies sharp, the pushes sheared two
   cubes along their proxies' two normals and the hold carried a stack's upper cubes as one
   against the ground's body friction (the top cube's drift, 21 mm, became 55); rounded, the
   stack drifts 38.6 mm with the hold, 67.7 without (44.5 sharp, without). */
#include "contact_internal.h"

#include "csm_math.h"
#include "grow.h"
#include "world.h"

#include <math.h>
#include <string.h>

/* The hold of objects a and b, listed once per step (index into c->holds; -1 out of memory). */
static int32_t hold_find(csm_contacts *c, int32_t a, int32_t b)
{
    if (a > b) {
        int32_t t = a;
        a = b;
        b = t;
    }
    for (int32_t k = 0; k < c->nholds; k++)
        if (c->holds[k].a == a && c->holds[k].b == b) return k;
    if (csm_grow((void **)&c->holds, &c->cap_holds, c->nholds + 1, sizeof *c->holds)) return -1;
    csm_contact_hold *h = &c->holds[c->nholds];
    memset(h, 0, sizeof *h);
    h->a = a;
    h->b = b;
    return c->nholds++;
}

/* Object o as a rigid body at the step's start x0: its mass, centre and inverse inertia, which
   the step's projections keep (a body turns little in a step). */
static void body_start(const csm_world *w, const double *x0, int32_t o, csm_hold_body *b)
{
    const csm_particles *P = &w->P;
    int32_t lo = w->object_first[o], hi = w->object_first[o + 1];
    b->M = 0;
    b->pinned = 0;
    for (int32_t i = lo; i < hi; i++) {
        b->M += P->mass[i];
        b->pinned |= P->inv_mass[i] == 0.0;
    }
    csm_object_frame(P, x0, lo, hi, b->M, b->com0, b->Iinv); /* per unit mass, a pseudo-inverse (flat: no turn about its normal) */
    for (int e = 0; e < 9; e++) b->Iinv[e] /= b->M;
}

/* The step's holds: each pair and patch between two objects gets its two objects' hold. The pairs
   and patches are found once a step, at its first projection. */
static int holds_list(csm_contacts *c, const csm_world *w)
{
    const int32_t *obj = w->P.object;
    int32_t n = c->npairs + c->npatch, proxies = c->cfg.method == CSM_CONTACT_PROXIES;
    c->nholds = 0;
    if (csm_grow((void **)&c->hold_of, &c->cap_hold_of, n, sizeof *c->hold_of) ||
        csm_grow((void **)&c->hold_push, &c->cap_hold_push, n, sizeof *c->hold_push) ||
        csm_grow((void **)&c->hold_geom, &c->cap_hold_geom, 4 * (int64_t)n, sizeof *c->hold_geom) ||
        csm_grow((void **)&c->hold_body, &c->cap_hold_body, w->nobjects, sizeof *c->hold_body))
        return -1;
    for (int32_t k = 0; k < n; k++) {
        int32_t oa, ob;
        if (k < c->npairs) {
            oa = obj[c->pair[2 * k]];
            ob = proxies ? csm_cluster_object(w, c->pair[2 * k + 1]) : obj[c->pair[2 * k + 1]];
            if (!proxies && w->surface && c->covered[k]) ob = oa;
        } else {
            int32_t p = k - c->npairs;
            oa = obj[c->patch_i[p]];
            ob = obj[c->patch_k[c->patch_start[p]]];
        }
        if (oa == ob) {
            c->hold_of[k] = -1;
            continue;
        }
        int32_t h = hold_find(c, oa, ob);
        if (h < 0) return -1;
        c->hold_of[k] = 2 * h + (oa > ob); /* the odd ones push from a to b */
    }
    for (int32_t o = 0; o < w->nobjects; o++) c->hold_body[o].needed = 0;
    for (int32_t h = 0; h < c->nholds; h++) c->hold_body[c->holds[h].a].needed = c->hold_body[c->holds[h].b].needed = 1;
    for (int32_t o = 0; o < w->nobjects; o++)
        if (c->hold_body[o].needed) body_start(w, c->x0, o, &c->hold_body[o]);
    c->hold_ready = 1;
    return 0;
}

/* A run of pushes of one hold, summed before they join it (consecutive pairs mostly share one). */
typedef struct region_run {
    int32_t h;
    double weight, n[3], xc[3], F[3], Flen;
} region_run;

static void run_flush(csm_contact_hold *holds, region_run *u, int32_t h)
{
    if (u->h >= 0) {
        csm_contact_hold *r = &holds[u->h];
        r->weight += u->weight;
        r->Flen += u->Flen;
        for (int e = 0; e < 3; e++) {
            r->n[e] += u->n[e];
            r->xc[e] += u->xc[e];
            r->F[e] += u->F[e];
        }
    }
    memset(u, 0, sizeof *u);
    u->h = h;
}

/* A push (lambda l, its hold's code hk, normal nk from its second side to its first, point at,
   friction impulse F on its first side) joins its hold's region, its point and friction left kept
   in geom for the arms (regions_at). Its friction left is mu l less what it holds now, |F| of its
   cone (csm_friction_cone): counted as the corrections' length, that rest was gone whenever they
   had gone back and forth, and a cube half a degree under the friction angle at mu = 0.3 crept at
   3 mm/s. */
static inline void region_add(csm_contact_hold *holds, region_run *u, int32_t hk, double l, double mu,
                              const double F[3], const double nk[3], const double at[3], double *geom)
{
    if (hk >> 1 != u->h) run_flush(holds, u, hk >> 1);
    double sign = hk & 1 ? -1.0 : 1.0, took = csm_v3_norm(F), left = mu * l - took;
    u->weight += l;
    u->Flen += took;
    for (int e = 0; e < 3; e++) {
        geom[e] = at[e];
        u->n[e] += sign * l * nk[e];
        u->xc[e] += l * at[e];
        u->F[e] += sign * F[e];
    }
    geom[3] = left;
}

/* Each hold's contact region at x: its pushes' sums, normal and centre, and the friction left
   (weight 0 where none is left or nothing pushed). A pair's point is its particle with proxies
   (the push is out of a cluster's proxy towards it), else the middle of its two; a patch's is its
   particle (the normal is the surface's, out towards it). */
static void regions_at(csm_contacts *c, const double *x)
{
    double mu = c->cfg.friction; /* > 0: no hold runs without friction */
    int proxies = c->cfg.method == CSM_CONTACT_PROXIES;
    for (int32_t h = 0; h < c->nholds; h++) {
        csm_contact_hold *r = &c->holds[h];
        r->weight = r->slack = r->twist = r->Flen = 0;
        memset(r->F, 0, sizeof r->F);
        memset(r->n, 0, sizeof r->n);
        memset(r->xc, 0, sizeof r->xc);
    }
    int32_t pushing = 0;
    region_run u = {.h = -1};
    for (int32_t k = 0; k < c->npairs; k++) {
        int32_t hk = c->hold_of[k], i = c->pair[2 * k], j = c->pair[2 * k + 1];
        double l = c->lambda[k], at[3];
        if (hk < 0 || !(l > 0)) continue;
        for (int e = 0; e < 3; e++) at[e] = proxies ? x[3 * i + e] : 0.5 * (x[3 * i + e] + x[3 * j + e]);
        c->hold_push[pushing] = hk >> 1;
        region_add(c->holds, &u, hk, l, mu, &c->friction[4 * k], &c->normal[3 * k], at, &c->hold_geom[4 * pushing++]);
    }
    for (int32_t p = 0; p < c->npatch; p++) {
        int32_t hk = c->hold_of[c->npairs + p];
        double l = c->patch_lambda[p];
        if (hk < 0 || !(l > 0)) continue;
        c->hold_push[pushing] = hk >> 1;
        region_add(c->holds, &u, hk, l, mu, &c->patch_friction[4 * p], &c->patch_n[3 * p], &x[3 * c->patch_i[p]],
                   &c->hold_geom[4 * pushing++]);
    }
    run_flush(c->holds, &u, -1);
    int any = 0;
    for (int32_t h = 0; h < c->nholds; h++) {
        csm_contact_hold *r = &c->holds[h];
        double len = csm_v3_norm(r->n);
        if (!(r->weight > 0) || !(len > 0)) {
            r->weight = 0;
            continue;
        }
        for (int e = 0; e < 3; e++) {
            r->n[e] /= len;
            r->xc[e] /= r->weight;
        }
        double Fn = csm_v3_dot(r->F, r->n), Ft[3] = {r->F[0] - Fn * r->n[0], r->F[1] - Fn * r->n[1], r->F[2] - Fn * r->n[2]};
        r->slack = mu * r->weight - (proxies ? csm_v3_norm(Ft) : r->Flen);
        if (!(r->slack > 0)) {
            r->weight = 0;
            continue;
        }
        any = 1;
    }
    double twist = 0;
    for (int32_t q = 0, h = -1; q <= pushing && any; q++) { /* the friction left, times its arm about x_c */
        if (q == pushing || c->hold_push[q] != h) {
            if (h >= 0) c->holds[h].twist += twist;
            if (q == pushing) break;
            h = c->hold_push[q];
            twist = 0;
        }
        const csm_contact_hold *r = &c->holds[h];
        if (!(r->weight > 0)) continue;
        const double *at = &c->hold_geom[4 * q];
        double rho[3] = {at[0] - r->xc[0], at[1] - r->xc[1], at[2] - r->xc[2]}, along = csm_v3_dot(rho, r->n);
        for (int e = 0; e < 3; e++) rho[e] -= along * r->n[e];
        twist += c->hold_geom[4 * q + 3] * csm_v3_norm(rho);
    }
}

/* Object o's rigid displacement since the step began at x (its particles' momentum and angular
   momentum of u = x - x0 over its mass and the step's inertia), and its centre there. About its
   centre c: sum m (x - c) x u = sum m x0 x u - c x sum m u, as x x u = x0 x u. */
static void body_at(const csm_world *w, const double *x0, const double *x, int32_t o, csm_hold_body *b)
{
    const double *mass = w->P.mass;
    double mu[3] = {0, 0, 0}, L[3] = {0, 0, 0}, cl[3];
    for (int32_t i = w->object_first[o]; i < w->object_first[o + 1]; i++) {
        const double *a = &x0[3 * i], m = mass[i];
        double u[3] = {x[3 * i] - a[0], x[3 * i + 1] - a[1], x[3 * i + 2] - a[2]};
        mu[0] += m * u[0];
        mu[1] += m * u[1];
        mu[2] += m * u[2];
        L[0] += m * (a[1] * u[2] - a[2] * u[1]);
        L[1] += m * (a[2] * u[0] - a[0] * u[2]);
        L[2] += m * (a[0] * u[1] - a[1] * u[0]);
    }
    for (int e = 0; e < 3; e++) {
        b->D[e] = mu[e] / b->M;
        b->com[e] = b->at[e] = b->com0[e] + b->D[e];
        b->moveD[e] = b->moveW[e] = 0;
    }
    b->moved = 0;
    csm_v3_cross(b->com, mu, cl);
    for (int e = 0; e < 3; e++) L[e] -= cl[e];
    csm_m3_mul_v3(b->Iinv, L, b->W);
}

/* The change of a free body's rigid displacement under the impulse J at p and the couple T
   (impulses times h): dD = J / M at its centre, dW = I^-1 (r x J + T) (zero for a pinned body). */
static void impulse_change(const csm_hold_body *b, const double p[3], const double J[3], const double T[3],
                           double dD[3], double dW[3])
{
    double r[3] = {p[0] - b->com[0], p[1] - b->com[1], p[2] - b->com[2]}, m[3];
    csm_v3_cross(r, J, m);
    for (int e = 0; e < 3; e++) m[e] += T[e];
    csm_m3_mul_v3(b->Iinv, m, dW);
    for (int e = 0; e < 3; e++) {
        dD[e] = b->pinned ? 0.0 : J[e] / b->M;
        dW[e] = b->pinned ? 0.0 : dW[e];
    }
}

/* Moves object o's body by (dD, dW), and its particles with it when the projection's holds are
   done (body_move): each hold sees the others' moves, and the particles move once. */
static void shove(csm_hold_body *b, const double dD[3], const double dW[3])
{
    if (b->pinned) return;
    for (int e = 0; e < 3; e++) {
        b->com[e] += dD[e];
        b->D[e] += dD[e];
        b->W[e] += dW[e];
        b->moveD[e] += dD[e];
        b->moveW[e] += dW[e];
    }
    b->moved = 1;
}

/* Object o's particles moved rigidly by its holds' sum (about the centre they started from: the
   moves differ from one after another by the second order of the turns, and keep momentum). */
static void body_move(const csm_world *w, int32_t o, const csm_hold_body *b, double *x)
{
    const double *dD = b->moveD, *dW = b->moveW, *c = b->at;
    for (int32_t i = w->object_first[o]; i < w->object_first[o + 1]; i++) {
        double *xi = &x[3 * i], q[3] = {xi[0] - c[0], xi[1] - c[1], xi[2] - c[2]};
        xi[0] += dD[0] + dW[1] * q[2] - dW[2] * q[1];
        xi[1] += dD[1] + dW[2] * q[0] - dW[0] * q[2];
        xi[2] += dD[2] + dW[0] * q[1] - dW[1] * q[0];
    }
}

/* The relative motion of A against B at p under their rigid displacements (DA, WA) and (DB, WB):
   the slip across n (along the frame's t1, t2) and the turn about n (the frame's third row). */
static void relative_motion(const csm_hold_body *A, const csm_hold_body *B, const double p[3], const double frame[9],
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

/* The share of Coulomb's bound that hold r's region takes with f of the stop (stop across n, the
   couple tau about it) added to its friction so far (S across n: the sum of the pushes' and the
   holds'), q[2] f^2 + q[1] f + q[0]: with net (cluster_proxies) of their totals, else of their
   lengths; each term of the ellipse is a square of what is linear in f. */
static void bound_share(const csm_contact_hold *r, int net, const double S[3], const double stop[3], double N,
                        double tau, int turns, double q[3])
{
    double iN2 = 1.0 / (N * N), iT2 = turns ? 1.0 / (r->twist * r->twist) : 0.0;
    if (net) {
        q[0] = csm_v3_dot(S, S) * iN2 + r->turned * r->turned * iT2;
        q[1] = 2 * (csm_v3_dot(S, stop) * iN2 + r->turned * tau * iT2);
        q[2] = csm_v3_dot(stop, stop) * iN2 + tau * tau * iT2;
    } else {
        double l0 = r->Flen + r->held_len, l1 = csm_v3_norm(stop), t0 = r->turned_len, t1 = fabs(tau);
        q[0] = l0 * l0 * iN2 + t0 * t0 * iT2;
        q[1] = 2 * (l0 * l1 * iN2 + t0 * t1 * iT2);
        q[2] = l1 * l1 * iN2 + t1 * t1 * iT2;
    }
}

/* One hold: the impulse and couple that stop r's relative slip and turn, within Coulomb's bound. */
static void hold_one(csm_contacts *c, csm_contact_hold *r)
{
    csm_hold_body *A = &c->hold_body[r->a], *B = &c->hold_body[r->b];
    if (A->pinned && B->pinned) return;
    const double *n = r->n, *xc = r->xc;
    double frame[9], rhs[3], G[9], Ginv[9], z[3];
    csm_v3_tangents(n, &frame[0], &frame[3]);
    memcpy(&frame[6], n, 3 * sizeof *n);
    relative_motion(A, B, xc, frame, A->D, A->W, B->D, B->W, rhs);
    double size = 1.0 / sqrt(A->M * csm_m3_frobenius(A->Iinv)); /* about its radius of gyration */
    int turns = r->twist > 1e-9 * r->slack * size;               /* a single point holds no turn */
    for (int col = 0; col < 3; col++) { /* the Delassus operator: what a unit of each moves */
        double J[3], T[3], minus[3], mT[3], dDA[3], dWA[3], dDB[3], dWB[3], out[3];
        for (int e = 0; e < 3; e++) {
            J[e] = col < 2 ? frame[3 * col + e] : 0.0;
            T[e] = col == 2 ? n[e] : 0.0;
            minus[e] = -J[e];
            mT[e] = -T[e];
        }
        impulse_change(A, xc, J, T, dDA, dWA);
        impulse_change(B, xc, minus, mT, dDB, dWB);
        relative_motion(A, B, xc, frame, dDA, dWA, dDB, dWB, out);
        for (int row = 0; row < 3; row++) G[3 * row + col] = out[row];
    }
    if (!turns) G[2] = G[5] = G[6] = G[7] = 0, G[8] = 1, rhs[2] = 0;
    if (!(csm_m3_inverse(G, Ginv) != 0)) return;
    csm_m3_mul_v3(Ginv, rhs, z);
    /* Coulomb on the region's total: the largest f in [0, 1] within the bound */
    int net = c->cfg.method == CSM_CONTACT_PROXIES;
    double S[3], stop[3], tau = turns ? -z[2] : 0.0, N = c->cfg.friction * r->weight;
    for (int e = 0; e < 3; e++) {
        S[e] = r->F[e] + r->held[e];
        stop[e] = -(z[0] * frame[e] + z[1] * frame[3 + e]);
    }
    double sn = csm_v3_dot(S, n);
    for (int e = 0; e < 3; e++) S[e] -= sn * n[e];
    double q[3], f = 1.0;
    bound_share(r, net, S, stop, N, tau, turns, q);
    if (!(q[0] < 1)) return;
    if (q[2] + q[1] + q[0] > 1) /* the root in (0, 1) of the convex q(f) = 1 */
        f = q[2] > 0 ? 2 * (1 - q[0]) / (q[1] + sqrt(q[1] * q[1] + 4 * q[2] * (1 - q[0]))) : (1 - q[0]) / q[1];
    if (!(f > 0)) return;
    double J[3], T[3], minus[3], mT[3], dD[3], dW[3];
    r->turned += f * tau;
    r->turned_len += f * fabs(tau);
    r->held_len += f * csm_v3_norm(stop);
    for (int e = 0; e < 3; e++) {
        J[e] = f * stop[e];
        T[e] = f * tau * n[e];
        r->held[e] += J[e];
        minus[e] = -J[e];
        mT[e] = -T[e];
    }
    impulse_change(A, xc, J, T, dD, dW);
    shove(A, dD, dW);
    impulse_change(B, xc, minus, mT, dD, dW);
    shove(B, dD, dW);
}

int csm_contacts_hold(csm_contacts *c, const csm_world *w, double *x)
{
    if (!(c->cfg.friction > 0) ||
        c->cfg.response != CSM_CONTACT_RESPONSE_BODY || !c->x0)
        return 0;
    if (!c->hold_ready && holds_list(c, w)) return -1;
    if (c->nholds == 0) return 0;
    regions_at(c, x);
    for (int32_t o = 0; o < w->nobjects; o++) c->hold_body[o].needed = 0;
    for (int32_t h = 0; h < c->nholds; h++)
        if (c->holds[h].weight > 0) c->hold_body[c->holds[h].a].needed = c->hold_body[c->holds[h].b].needed = 1;
    for (int32_t o = 0; o < w->nobjects; o++)
        if (c->hold_body[o].needed) body_at(w, c->x0, x, o, &c->hold_body[o]);
    for (int32_t h = 0; h < c->nholds; h++)
        if (c->holds[h].weight > 0) hold_one(c, &c->holds[h]);
    for (int32_t o = 0; o < w->nobjects; o++)
        if (c->hold_body[o].needed && c->hold_body[o].moved) body_move(w, o, &c->hold_body[o], x);
    return 0;
}
