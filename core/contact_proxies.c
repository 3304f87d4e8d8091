/* Cluster proxies (contact.method: proxies; Jones et al. 2015, Sec "Collision Detection"; Falkenstein 2017 Sec 2.3.1,
   "Collision Handling", uses them). Each cluster's proxy lives in its rest space, the frame of
   its offsets p_ic: a sphere about its rest centre of mass through its farthest member,
   intersected with the half-spaces that bound its members along the principal axes of A_rr
   (and, here, along the rest frame's axes; an outer member where the shape's surface lies over
   it, member_surface), the whole grown by the contact
   distance d so that a face of particles keeps the same gap as with method particles; grown in
   every direction, so that its edges and corners are rounded as the particles' own contact is
   (proxy_round_exit: sharp, the edges of a cube sliding on a slab ploughed it, and it slid at
   0.27 of Coulomb's acceleration). A particle x of another cluster is taken to that rest space by
   F^-1 (x - x-bar), pushed out through the nearest face there, and taken back by F; the paper
   moves the particle alone. Here the cluster
   answers with the opposite impulse as a rigid body about its centre of mass at the step's
   start, so the pair keeps linear and angular momentum (reaction: jones2015 is the paper's).

   Two clusters that share a particle never collide (the paper's rule). With `self`, a particle
   that the proxy of a cluster of its own object holds at rest (grown by d) is no contact of that
   cluster either: it is the cluster's neighbour in the material, held by the shape matching. The broad phase is
   contact_grid.c's, the dispatch contact.c's. */
#include "contact_internal.h"

#include "csm_math.h"
#include "grow.h"
#include "kernel.h"
#include "svd3.h"
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PROXY_PLANES = 12, PROXY_STRIDE = 5 + 4 * PROXY_PLANES, BODY_STRIDE = 26, SPHERE_STRIDE = 16 };

/* Member j of a cluster in its rest space where the shape's surface lies over it: its offset
   p_j moved out along its rest normal by its depth under the surface (the particle itself where
   it is an inner one, or the surface is unknown). A Poisson sample's outer particles lie at any
   depth within a spacing, and bounded by their centres its clusters' proxies stepped in and out
   along a face: a cube on the slab landed tilted on them and rolled down a 26 degree slope. */
static void member_surface(const csm_world *w, const csm_clusters *C, int32_t j, double s[3])
{
    const double *p = &C->p[3 * j], *sf = w->surface ? &w->surface[4 * C->member[j]] : NULL;
    for (int e = 0; e < 3; e++) s[e] = p[e] + (sf ? sf[3] * sf[e] : 0.0);
}

/* A cluster's proxy: [0] sphere radius, [1] planes, [2..4] rest centre in the object's rest
   positions, then each plane as n (3), o: n . p <= o inside: the bounding planes of its members
   along the principal axes of A_rr (Jones 2015 Collision Detection) and along the rest frame's
   axes. */
static void proxy_build(csm_contacts *c, const csm_world *w, int32_t cl)
{
    const csm_clusters *C = &w->C;
    double *pr = &c->proxy[PROXY_STRIDE * cl], d = c->distance;
    int32_t lo = C->offset[cl], hi = C->offset[cl + 1];
    double S[9] = {0}, R = 0, centre[3] = {0, 0, 0}, mass = 0;
    for (int32_t j = lo; j < hi; j++) {
        const double *p = &C->p[3 * j], *rest = &w->P.rest[3 * C->member[j]];
        double wm = C->wmass[j], s[3];
        for (int a = 0; a < 3; a++) {
            for (int b = 0; b < 3; b++) S[3 * a + b] += wm * p[a] * p[b];
            centre[a] += wm * (rest[a] - p[a]);
        }
        mass += wm;
        member_surface(w, C, j, s);
        R = fmax(R, fmax(csm_v3_norm(p), csm_v3_norm(s)));
    }
    R += d;
    pr[0] = R;
    for (int a = 0; a < 3; a++) pr[2 + a] = mass > 0 ? centre[a] / mass : 0.0;
    int np = 0;
    double U[9], s[3], V[9];
    csm_svd3_fast(S, U, s, V); /* S is symmetric: V's columns are its principal axes */
    for (int a = 0; a < 6 && hi > lo; a++) {
        /* the principal axes (the paper's), then the rest frame's own: a cluster at a box's edge
           has its principal axes across the edge, and only the frame's planes bound its faces */
        double v[3] = {a == 3, a == 4, a == 5}, vlo = INFINITY, vhi = -INFINITY;
        if (a < 3) v[0] = V[a], v[1] = V[3 + a], v[2] = V[6 + a];
        for (int32_t j = lo; j < hi; j++) {
            double s[3], t = csm_v3_dot(v, &C->p[3 * j]), ts;
            member_surface(w, C, j, s);
            ts = csm_v3_dot(v, s);
            vlo = fmin(vlo, fmin(t, ts));
            vhi = fmax(vhi, fmax(t, ts));
        }
        double o[2] = {vhi + d, d - vlo}; /* v . p <= vhi + d and -v . p <= d - vlo */
        for (int side = 0; side < 2; side++) {
            if (!(o[side] < c->cfg.cut * R)) continue; /* kept when it cuts off enough of the sphere */
            double *pl = &pr[5 + 4 * np++], sign = side ? -1.0 : 1.0;
            for (int e = 0; e < 3; e++) pl[e] = sign * v[e];
            pl[3] = o[side];
        }
    }
    pr[1] = np;
}

/* How far the point q of a proxy's rest space lies inside it grown by margin (0: outside), and
   out, where its nearest face takes it (Jones et al. 2015: the least of the projections onto the
   sphere and the half-spaces). */
static double proxy_exit(const double *pr, const double q[3], double margin, double out[3])
{
    double R = pr[0] + margin, len = csm_v3_norm(q), best = R - len;
    if (best <= 0) return 0;
    int at = -1;
    for (int k = 0; k < (int)pr[1]; k++) {
        const double *pl = &pr[5 + 4 * k];
        double phi = csm_v3_dot(pl, q) - pl[3] - margin;
        if (phi >= 0) return 0;
        if (-phi < best) best = -phi, at = k;
    }
    if (!out) return best;
    if (at >= 0) {
        for (int e = 0; e < 3; e++) out[e] = q[e] + best * pr[5 + 4 * at + e];
    } else if (len > 0) {
        for (int e = 0; e < 3; e++) out[e] = q[e] * R / len;
    } else { /* at the centre: out along y */
        out[0] = out[2] = 0;
        out[1] = R;
    }
    return best;
}

static double distance(const double a[3], const double b[3])
{
    double r[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return csm_v3_norm(r);
}

/* Whether p lies in the core of proxy pr (grown by d), to within tol. */
static int core_holds(const double *pr, double d, const double p[3], double tol)
{
    if (csm_v3_norm(p) > pr[0] - d + tol) return 0;
    for (int k = 0; k < (int)pr[1]; k++) {
        const double *pl = &pr[5 + 4 * k];
        if (csm_v3_dot(pl, p) - (pl[3] - d) > tol) return 0;
    }
    return 1;
}

/* The proxy's core: its members' bound, the proxy before it was grown by d (sphere R - d, each
   plane's offset less d). proxy_round_exit's rounded proxy is the core grown by d in every
   direction, the points within d of it (a Minkowski sum with the ball of radius d), which is what
   the particles of method particles see around a cluster's members: the sharp proxy's edges and
   corners reach up to d sqrt(3) from the members. c gets the core's nearest point to q (outside
   it); returns how far q is from it. The projection onto one bound q breaks, where that lies in
   the core; else onto the line of two broken planes, the circle of a plane and the sphere, or the
   corner of three planes, where each pushes outwards (the nearest point's conditions) and it lies
   in the core; else Dykstra's alternating projections onto the sphere and the half-spaces (Boyle and Dykstra
   1986), which converge to the projection onto their intersection. */
static double core_nearest(const double *pr, double d, const double q[3], double c[3])
{
    int np = (int)pr[1], broken[PROXY_PLANES + 1], nb = 0;
    double R = pr[0] - d, len = csm_v3_norm(q), phi[PROXY_PLANES], tol = 1e-9 * pr[0];
    for (int k = 0; k < np; k++) {
        const double *pl = &pr[5 + 4 * k];
        phi[k] = csm_v3_dot(pl, q) - (pl[3] - d);
        if (phi[k] > 0) broken[nb++] = k;
    }
    if (len > R) broken[nb++] = np;
    for (int a = 0; a < nb; a++) { /* onto one broken bound (of two nearly parallel planes, the farther) */
        int k = broken[a];
        for (int e = 0; e < 3; e++) c[e] = k < np ? q[e] - phi[k] * pr[5 + 4 * k + e] : q[e] * R / len;
        if (core_holds(pr, d, c, tol)) return distance(q, c);
    }
    for (int a = 0; a < nb; a++) /* onto the line of two broken planes, both multipliers pushing out */
        for (int b = a + 1; b < nb; b++) {
            if (broken[b] == np) continue;
            const double *n1 = &pr[5 + 4 * broken[a]], *n2 = &pr[5 + 4 * broken[b]];
            double g = csm_v3_dot(n1, n2), det = 1 - g * g;
            if (!(det > 1e-9)) continue;
            double f1 = phi[broken[a]], f2 = phi[broken[b]], la = (f1 - g * f2) / det, lb = (f2 - g * f1) / det;
            if (!(la >= 0 && lb >= 0)) continue;
            for (int e = 0; e < 3; e++) c[e] = q[e] - la * n1[e] - lb * n2[e];
            if (core_holds(pr, d, c, tol)) return distance(q, c);
        }
    for (int a = 0; a < nb && len > R; a++) { /* onto the circle where a broken plane meets the sphere */
        int k = broken[a];
        if (k == np) continue;
        const double *n1 = &pr[5 + 4 * k];
        double o = n1[3] - d, u[3], ul;
        if (!(fabs(o) < R)) continue;
        for (int e = 0; e < 3; e++) u[e] = q[e] - csm_v3_dot(n1, q) * n1[e];
        ul = csm_v3_norm(u);
        if (!(ul > 0)) continue;
        double rho = sqrt(R * R - o * o);
        for (int e = 0; e < 3; e++) c[e] = o * n1[e] + rho * u[e] / ul;
        double r[3] = {q[0] - c[0], q[1] - c[1], q[2] - c[2]}, g = csm_v3_dot(c, n1) / R, det = 1 - g * g;
        double a1 = csm_v3_dot(c, r) / R, a2 = csm_v3_dot(n1, r);
        if (!(det > 1e-9) || a1 - g * a2 < -tol * det || a2 - g * a1 < -tol * det) continue;
        if (core_holds(pr, d, c, tol)) return distance(q, c);
    }
    for (int a = 0; a < nb; a++) /* onto the corner of three broken planes */
        for (int b = a + 1; b < nb; b++)
            for (int e3 = b + 1; e3 < nb; e3++) {
                if (broken[e3] == np) continue;
                const double *n[3] = {&pr[5 + 4 * broken[a]], &pr[5 + 4 * broken[b]], &pr[5 + 4 * broken[e3]]};
                double N[9], Ninv[9], f[3] = {phi[broken[a]], phi[broken[b]], phi[broken[e3]]}, l[3];
                for (int r = 0; r < 3; r++)
                    for (int col = 0; col < 3; col++) N[3 * r + col] = csm_v3_dot(n[r], n[col]);
                if (!(csm_m3_det(N) > 1e-9) || csm_m3_inverse(N, Ninv) == 0.0) continue;
                csm_m3_mul_v3(Ninv, f, l);
                if (!(l[0] >= 0 && l[1] >= 0 && l[2] >= 0)) continue;
                for (int e = 0; e < 3; e++) c[e] = q[e] - l[0] * n[0][e] - l[1] * n[1][e] - l[2] * n[2][e];
                if (core_holds(pr, d, c, tol)) return distance(q, c);
            }
    double inc[PROXY_PLANES + 1][3] = {{0}};
    memcpy(c, q, 3 * sizeof *c);
    for (int it = 0; it < 64; it++) {
        double change = 0;
        for (int k = 0; k <= np; k++) {
            double y[3], z[3];
            for (int e = 0; e < 3; e++) y[e] = c[e] + inc[k][e];
            memcpy(z, y, sizeof z);
            if (k == np) {
                double ly = csm_v3_norm(y);
                if (ly > R)
                    for (int e = 0; e < 3; e++) z[e] = R > 0 ? y[e] * R / ly : 0.0;
            } else {
                const double *pl = &pr[5 + 4 * k];
                double f = csm_v3_dot(pl, y) - (pl[3] - d);
                if (f > 0)
                    for (int e = 0; e < 3; e++) z[e] -= f * pl[e];
            }
            for (int e = 0; e < 3; e++) {
                inc[k][e] = y[e] - z[e];
                change += (z[e] - c[e]) * (z[e] - c[e]);
                c[e] = z[e];
            }
        }
        if (change <= 1e-20 * d * d) break;
    }
    return distance(q, c);
}

/* As proxy_exit (margin 0), for the rounded proxy (core_nearest): a point of its core leaves by
   the nearest face, one within d of it straight away from its nearest point there, to d. */
static double proxy_round_exit(const double *pr, double d, const double q[3], double out[3])
{
    double best = proxy_exit(pr, q, 0.0, out);
    if (!(best > 0) || !(d > 0) || best >= d) return best; /* outside, or at least d inside: in the core */
    double c[3], far = core_nearest(pr, d, q, c);
    if (!(far > 0)) return best; /* on or in the core */
    if (far >= d) return 0;
    for (int e = 0; e < 3; e++) out[e] = c[e] + (q[e] - c[e]) * d / far;
    return d - far;
}

/* The map of cluster cl's rest space into the world at positions x: x-bar + M p, M = F =
   A_xr A_rr^-1 (Falkenstein Eq 3), or F's rotation where F cannot be inverted (a planar cluster, a
   collapsed or inverted one); Minv its inverse. */
static void proxy_frame(const csm_world *w, const double *x, int32_t cl, double com[3], double M[9], double Minv[9])
{
    const csm_clusters *C = &w->C;
    double Axr[9];
    csm_cluster_moments(C, x, cl, com, Axr);
    csm_m3_mul(Axr, &C->A_rr_inv[9 * cl], M);
    double f = csm_m3_frobenius(M), det = csm_m3_det(M);
    if (C->rank[cl] < 3 || !(det > 1e-6 * f * f * f) || csm_m3_inverse(M, Minv) == 0.0) {
        double s[3], R[9];
        csm_polar3(w->svd, M, R, s);
        memcpy(M, R, sizeof R);
        csm_m3_transpose(R, Minv);
    }
}

/* How far the point q of a proxy's rest space lies outside it, at least (0: inside or on it): the
   proxy is the intersection of the sphere and the half-spaces, so q is at least as far from it
   as from any one of them. */
static double proxy_outside(const double *pr, const double q[3])
{
    double gap = csm_v3_norm(q) - pr[0];
    for (int k = 0; k < (int)pr[1]; k++) {
        const double *pl = &pr[5 + 4 * k];
        gap = fmax(gap, csm_v3_dot(pl, q) - pl[3]);
    }
    return fmax(gap, 0.0);
}

/* Where the segment q0 -> q1 of a proxy's rest space enters it, q1 inside: the latest of the
   times at which it enters the sphere and each half-space (the proxy is their intersection, so
   the segment is inside from then on); -1 when q0 is inside already. */
static double proxy_entry(const double *pr, const double q0[3], const double q1[3])
{
    double d[3] = {q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]}, t = 0;
    int outside = 0;
    double a = csm_v3_dot(d, d), b = csm_v3_dot(q0, d), c = csm_v3_dot(q0, q0) - pr[0] * pr[0];
    if (c > 0 && a > 0) {
        outside = 1;
        t = fmax(t, (-b - sqrt(fmax(b * b - a * c, 0.0))) / a);
    }
    for (int k = 0; k < (int)pr[1]; k++) {
        const double *pl = &pr[5 + 4 * k];
        double phi0 = csm_v3_dot(pl, q0) - pl[3], phi1 = csm_v3_dot(pl, q1) - pl[3];
        if (phi0 <= 0) continue;
        outside = 1;
        if (phi0 - phi1 > 0) t = fmax(t, phi0 / (phi0 - phi1));
    }
    return outside ? fmin(t, 1.0) : -1.0;
}

/* The earliest time in [0, 1] at which the segment q0 -> q1 of a proxy's rest space lies inside
   it grown by margin (Cyrus and Beck's clipping against the sphere and each half-space), or -1
   when it never does. */
static double proxy_clip(const double *pr, const double q0[3], const double q1[3], double margin)
{
    double d[3] = {q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]}, t0 = 0, t1 = 1, R = pr[0] + margin;
    double a = csm_v3_dot(d, d), b = csm_v3_dot(q0, d), c = csm_v3_dot(q0, q0) - R * R;
    if (a > 0) {
        double disc = b * b - a * c;
        if (disc < 0) return -1;
        t0 = fmax(t0, (-b - sqrt(disc)) / a);
        t1 = fmin(t1, (-b + sqrt(disc)) / a);
    } else if (c > 0) {
        return -1;
    }
    for (int k = 0; k < (int)pr[1] && t0 <= t1; k++) {
        const double *pl = &pr[5 + 4 * k];
        double phi0 = csm_v3_dot(pl, q0) - pl[3] - margin, phi1 = csm_v3_dot(pl, q1) - pl[3] - margin;
        if (phi0 > phi1) t0 = fmax(t0, phi0 / (phi0 - phi1)); /* it goes in across this plane */
        else if (phi1 > phi0) t1 = fmin(t1, phi0 / (phi0 - phi1)); /* it goes out */
        else if (phi0 > 0) return -1;
    }
    return t0 <= t1 ? t0 : -1;
}

/* Whether a particle travelled d or more relative to a cluster's centre over the step (rel its
   offset from the centre at its end; x0 and com0 where both began): only such a path can cross a
   proxy it starts and ends outside of by more than a graze. */
static int passing(const double rel[3], const double x0[3], const double com0[3], double d)
{
    double t[3] = {rel[0] - (x0[0] - com0[0]), rel[1] - (x0[1] - com0[1]), rel[2] - (x0[2] - com0[2])};
    return csm_v3_dot(t, t) >= d * d;
}

/* Where the proxy of cl, standing in the world at x-bar + M p, pushes x out to: D = that point
   minus x (zero when x is outside); returns |D|. A particle leaves by the nearest face (Jones et
   al. 2015), but one whose path relative to the cluster over the step (x0 about the cluster's
   centre com0 then; start: x0 in the rest space by the map at x0, and 1 where that is inside;
   x0 NULL: not known) is d or longer goes back to where that path entered the proxy, the side it
   came from: through the nearest face, a particle that crossed more than half the proxy in one
   step would come out ahead of where it went in, faster than it came, with the cluster thrown
   back (energy created; a cube thrown at 10 m/s onto a slab gained 1e46 J), and so does one that
   went through it in the step, across the proxy and out (two cubes meeting at 30 m/s each passed
   through each other). A shorter path cannot reach past the middle of a proxy (every proxy is at
   least 2 d across, grown by d on each side): it goes out by the nearest face, which keeps its
   motion along the face. (Back to where its path went in, as for the long paths, a particle
   sliding on a face lost its motion along it, and no body slid on another: a cube on a slab at 10
   degrees, frictionless, stood still.) */
static double proxy_push(const double *pr, const double com[3], const double M[9], const double Minv[9],
                         const double x[3], const double *x0, const double *com0, const double *start, double d,
                         double D[3])
{
    double rel[3] = {x[0] - com[0], x[1] - com[1], x[2] - com[2]}, local[3], out[3], y[3];
    D[0] = D[1] = D[2] = 0;
    csm_m3_mul_v3(Minv, rel, local);
    int inside = proxy_round_exit(pr, d, local, out) > 0;
    if (!inside && (!x0 || !passing(rel, x0, com0, d))) return 0;
    if (x0 && passing(rel, x0, com0, d)) {
        const double *local0 = start;
        double t = inside         ? proxy_entry(pr, local0, local)
                   : start[3] > 0 ? -1.0 /* it started inside and left */
                                  : proxy_clip(pr, local0, local, 0.0);
        if (!inside && !(t >= 0)) return 0; /* it stayed outside */
        if (t >= 0)
            for (int e = 0; e < 3; e++) out[e] = local0[e] + t * (local[e] - local0[e]);
    }
    csm_m3_mul_v3(M, out, y);
    for (int e = 0; e < 3; e++) D[e] = com[e] + y[e] - x[e];
    return csm_v3_norm(D);
}

/* The end of the run of listed pairs, from q0 on, that share q0's cluster. */
static int32_t group_end(const csm_contacts *c, int32_t q0)
{
    int32_t q1 = q0;
    while (q1 < c->npairs && c->pair[2 * q1 + 1] == c->pair[2 * q0 + 1]) q1++;
    return q1;
}

/* Each cluster's rigid body at positions x0 (the step's start), which answers the pushes of the
   particles in its proxy: [0..2] its weighted centre x-bar (the proxy's, for friction's slip),
   [3..5] its centre of mass, [6..14] the pseudo-inverse of its inertia tensor about it, [15] the
   inverse of its members' mass, [16] 1 when no member is pinned (it can move), [17..25] the
   inverse of its proxy's map at x0 (proxy_frame), which places a particle's start in its rest
   space. */
static void proxy_body(csm_contacts *c, const csm_world *w, const double *x0, int32_t cl)
{
    const csm_clusters *C = &w->C;
    const csm_particles *P = &w->P;
    double *b = &c->body[BODY_STRIDE * cl], Axr[9], mass = 0, cm[3] = {0, 0, 0}, I[9] = {0};
    csm_cluster_moments(C, x0, cl, b, Axr);
    int movable = 1;
    for (int32_t j = C->offset[cl]; j < C->offset[cl + 1]; j++) {
        int32_t i = C->member[j];
        movable &= P->inv_mass[i] > 0;
        mass += P->mass[i];
        for (int a = 0; a < 3; a++) cm[a] += P->mass[i] * x0[3 * i + a];
    }
    for (int a = 0; a < 3; a++) cm[a] = mass > 0 ? cm[a] / mass : 0.0;
    for (int32_t j = C->offset[cl]; j < C->offset[cl + 1]; j++) {
        int32_t i = C->member[j];
        double r[3] = {x0[3 * i] - cm[0], x0[3 * i + 1] - cm[1], x0[3 * i + 2] - cm[2]}, rr = csm_v3_dot(r, r);
        for (int a = 0; a < 3; a++)
            for (int e = 0; e < 3; e++) I[3 * a + e] += P->mass[i] * ((a == e ? rr : 0.0) - r[a] * r[e]);
    }
    memcpy(&b[3], cm, sizeof cm);
    csm_pinv_sym3(I, 1e-12, &b[6]);
    b[15] = mass > 0 ? 1.0 / mass : 0.0;
    b[16] = movable && mass > 0;
    double com0[3], M0[9];
    proxy_frame(w, x0, cl, com0, M0, &b[17]);
}

/* An impulse J on a body at r from its centre: its sum P and moment T. */
static void body_impulse(const double r[3], const double J[3], double P[3], double T[3])
{
    double rJ[3];
    csm_v3_cross(r, J, rJ);
    for (int e = 0; e < 3; e++) {
        P[e] += J[e];
        T[e] += rJ[e];
    }
}

/* Move cluster cl's members rigidly under the impulse P with moment T about the body's centre:
   dx_j = P / M + omega x (x0_j - c), I omega = T. With the particles' opposite pushes at their
   positions at the step's start, sum m dx and sum m x0 x dx over both sides are zero: a
   position-based step keeps linear and angular momentum. */
static void body_move(const csm_contacts *c, const csm_clusters *C, const double *b, int32_t cl, const double P[3],
                      const double T[3], double *x)
{
    double omega[3];
    csm_m3_mul_v3(&b[6], T, omega);
    for (int32_t j = C->offset[cl]; j < C->offset[cl + 1]; j++) {
        int32_t i = C->member[j];
        const double *x0 = c->x0 ? &c->x0[3 * i] : &x[3 * i];
        double r[3] = {x0[0] - b[3], x0[1] - b[4], x0[2] - b[5]}, turn[3];
        csm_v3_cross(omega, r, turn);
        for (int e = 0; e < 3; e++) x[3 * i + e] += P[e] * b[15] + turn[e];
    }
}

static int cmp_candidate(const void *pa, const void *pb)
{
    const int32_t *a = pa, *b = pb; /* (particle, cluster): by cluster, then particle */
    if (a[1] != b[1]) return a[1] < b[1] ? -1 : 1;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The squared distance from s to the segment p0 -> p1. */
static double segment_distance2(const double s[3], const double p0[3], const double p1[3])
{
    double d[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]}, r[3] = {s[0] - p0[0], s[1] - p0[1], s[2] - p0[2]};
    double dd = csm_v3_dot(d, d), t = dd > 0 ? fmin(1.0, fmax(0.0, csm_v3_dot(r, d) / dd)) : 0.0;
    for (int e = 0; e < 3; e++) r[e] -= t * d[e];
    return csm_v3_dot(r, r);
}

/* List (particle i of cluster a, cluster b) for the members of a within b's proxy grown by d
   (its world sphere over the step, then the proxy itself in its frame: at x, or along the
   particle's path relative to it from the step's start; the iterations move a pair less than d,
   as the particles' search distance 2 d allows, so a particle farther out is never pushed); with
   one object, not those b's proxy holds at rest (grown by d): they are its neighbours in the
   material, not its contacts. */
static int proxy_candidates(csm_contacts *c, const csm_world *w, const double *x, int32_t a, int32_t b, int same)
{
    const csm_clusters *C = &w->C;
    const double *sb = &c->sphere[SPHERE_STRIDE * b], *pr = &c->proxy[PROXY_STRIDE * b], *bb = &c->body[BODY_STRIDE * b];
    double reach = sb[3] + c->distance;
    for (int32_t j = C->offset[a]; j < C->offset[a + 1]; j++) {
        int32_t i = C->member[j];
        const double *xi = &x[3 * i], *x0i = c->x0 ? &c->x0[3 * i] : xi;
        if (segment_distance2(sb, x0i, xi) >= reach * reach) continue;
        double r[3] = {xi[0] - sb[13], xi[1] - sb[14], xi[2] - sb[15]}, local[3];
        csm_m3_mul_v3(&sb[4], r, local);
        if (proxy_exit(pr, local, c->distance, NULL) <= 0) {
            if (!c->x0 || same || !passing(r, x0i, bb, c->distance)) continue;
            double r0[3] = {x0i[0] - bb[0], x0i[1] - bb[1], x0i[2] - bb[2]}, local0[3];
            csm_m3_mul_v3(&bb[17], r0, local0);
            if (!(proxy_clip(pr, local0, local, c->distance) >= 0)) continue;
        }
        if (same) {
            const double *rest = &w->P.rest[3 * i];
            double q[3] = {rest[0] - pr[2], rest[1] - pr[3], rest[2] - pr[4]};
            if (proxy_exit(pr, q, c->distance, NULL) > 0) continue;
        }
        if (csm_contacts_pair_push(c, i, b)) return -1;
    }
    return 0;
}

int csm_proxies_find(csm_contacts *c, const csm_world *w, const double *x)
{
    const csm_clusters *C = &w->C;
    int32_t k = C->k, n = w->P.n;
    if (k < 2) return 0;
    if (csm_grow((void **)&c->proxy, &c->cap_proxy, (int64_t)PROXY_STRIDE * k, sizeof *c->proxy) ||
        csm_grow((void **)&c->body, &c->cap_body, (int64_t)BODY_STRIDE * k, sizeof *c->body) ||
        csm_grow((void **)&c->sphere, &c->cap_sphere, SPHERE_STRIDE * (int64_t)k, sizeof *c->sphere) ||
        csm_grow((void **)&c->stamp, &c->cap_stamp, n, sizeof *c->stamp))
        return -1;
    if (c->proxy_k != k || c->proxy_epoch != C->epoch) { /* the first step (proxy_k 0), or the clusters changed */
        for (int32_t cl = 0; cl < k; cl++) proxy_build(c, w, cl);
        c->proxy_epoch = C->epoch;
        c->proxy_k = k;
    }
    const double *x0 = c->x0 ? c->x0 : x;
    double widest = 0;
    for (int32_t cl = 0; cl < k; cl++) {
        /* the proxy's frame at x ([4..15]: its inverse map, its centre), and the sphere it sweeps
           over the step ([0..3]): about the middle of its centre's path, its farthest reach in the
           world grown by half that path */
        double M[9], U[9], s[3], V[9], *sp = &c->sphere[SPHERE_STRIDE * cl], *b = &c->body[BODY_STRIDE * cl];
        proxy_frame(w, x, cl, &sp[13], M, &sp[4]);
        csm_svd3_fast(M, U, s, V);
        proxy_body(c, w, x0, cl);
        double path[3] = {sp[13] - b[0], sp[14] - b[1], sp[15] - b[2]};
        for (int e = 0; e < 3; e++) sp[e] = 0.5 * (sp[13 + e] + b[e]);
        sp[3] = fabs(s[0]) * c->proxy[PROXY_STRIDE * cl] + 0.5 * csm_v3_norm(path);
        widest = fmax(widest, sp[3]);
    }
    /* two spheres that overlap within d have centres closer than 2 widest + d: neighbouring cells */
    double inv = 1.0 / (2.0 * widest + c->distance);
    if (csm_contacts_grid_sort(c, c->sphere, SPHERE_STRIDE, k, NULL, 0, inv)) return -1;
    for (int32_t i = 0; i < n; i++) c->stamp[i] = -1;
    for (int32_t a = 0; a < k; a++) {
        const double *sa = &c->sphere[SPHERE_STRIDE * a];
        int32_t oa = csm_cluster_object(w, a);
        for (int32_t j = C->offset[a]; j < C->offset[a + 1]; j++) c->stamp[C->member[j]] = a;
        uint32_t seen[27];
        int nseen = csm_contacts_grid_around(c, sa, inv, seen);
        for (int s = 0; s < nseen; s++)
            for (int32_t t = c->cell_start[seen[s]]; t < c->cell_start[seen[s] + 1]; t++) {
                int32_t b = c->sorted[t];
                if (b <= a) continue;
                const double *sb = &c->sphere[SPHERE_STRIDE * b];
                double r[3] = {sa[0] - sb[0], sa[1] - sb[1], sa[2] - sb[2]}, reach = sa[3] + sb[3] + c->distance;
                if (csm_v3_dot(r, r) >= reach * reach) continue;
                int same = csm_cluster_object(w, b) == oa;
                if (same && !c->cfg.self) continue;
                int shared = 0; /* clusters that share a particle never collide (Jones et al. 2015) */
                for (int32_t j = C->offset[b]; j < C->offset[b + 1] && same && !shared; j++)
                    shared = c->stamp[C->member[j]] == a;
                if (shared) continue;
                if (proxy_candidates(c, w, x, a, b, same) || proxy_candidates(c, w, x, b, a, same)) return -1;
            }
    }
    /* by cluster, each (particle, cluster) once: a particle of several clusters near b is listed by each */
    if (c->npairs) qsort(c->pair, (size_t)c->npairs, 2 * sizeof *c->pair, cmp_candidate);
    int32_t kept = 0;
    for (int32_t q = 0; q < c->npairs; q++) {
        if (kept && c->pair[2 * q] == c->pair[2 * kept - 2] && c->pair[2 * q + 1] == c->pair[2 * kept - 1]) continue;
        c->pair[2 * kept] = c->pair[2 * q];
        c->pair[2 * kept + 1] = c->pair[2 * q + 1];
        kept++;
    }
    c->npairs = kept;
    c->proxy_looked = 0;
    if (csm_grow((void **)&c->reach, &c->cap_reach, 8 * (int64_t)c->npairs, sizeof *c->reach) ||
        csm_grow((void **)&c->frame0, &c->cap_frame0, 12 * (int64_t)k, sizeof *c->frame0))
        return -1;
    for (int32_t q = 0; q < c->npairs; q++) { /* each particle's start in its cluster's rest space, fixed for the step */
        int32_t i = c->pair[2 * q], cl = c->pair[2 * q + 1];
        const double *b = &c->body[BODY_STRIDE * cl], *a = &x0[3 * i], *sp = &c->sphere[SPHERE_STRIDE * cl];
        double travel[3]; /* relative to the cluster's centre over the step: beyond the bound, the run warns */
        for (int e = 0; e < 3; e++) travel[e] = x[3 * i + e] - a[e] - (sp[13 + e] - b[e]);
        double len = csm_v3_norm(travel);
        if (len > CSM_PROXY_TRAVEL * c->distance && len > c->outran) {
            c->outran = len;
            c->outran_time = w->time;
            c->outran_particle = i;
            c->outran_object = csm_cluster_object(w, cl);
        }
        double rel0[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]}, *start = &c->reach[8 * q + 4];
        csm_m3_mul_v3(&b[17], rel0, start);
        start[3] = proxy_exit(&c->proxy[PROXY_STRIDE * cl], start, 0.0, NULL) > 0;
    }
    return csm_contacts_pairs_ready(c);
}

/* How far a particle at x outside the proxy of a cluster in the frame (com, M = Minv^-1) can move,
   with the frame held, before proxy_push could push it: its rest space's distance to the proxy
   times the least stretch of M (at least 1 / |Minv|_F), and, where the push follows the path
   from x0 (the cluster's centre com0 then), what is left of d before its travel relative to the
   cluster reaches d (passing). 0 when it could be pushed now. */
static double proxy_margin(const double *pr, const double com[3], const double Minv[9], const double x[3],
                           const double *x0, const double *com0, double d)
{
    double rel[3] = {x[0] - com[0], x[1] - com[1], x[2] - com[2]}, local[3];
    csm_m3_mul_v3(Minv, rel, local);
    double f = csm_m3_frobenius(Minv), margin = f > 0 ? proxy_outside(pr, local) / f : 0.0;
    if (x0) {
        double t[3] = {rel[0] - (x0[0] - com0[0]), rel[1] - (x0[1] - com0[1]), rel[2] - (x0[2] - com0[2])};
        margin = fmin(margin, d - csm_v3_norm(t));
    }
    return fmax(margin, 0.0);
}

/* The body's inverse mass along u for a push at r from its centre: 1/M + (r x u) . I^-1 (r x u). */
static double body_inverse_mass(const double *b, const double r[3], const double u[3])
{
    double ru[3], Iru[3];
    csm_v3_cross(r, u, ru);
    csm_m3_mul_v3(&b[6], ru, Iru);
    return b[15] + csm_v3_dot(ru, Iru);
}

/* One projection: cfg.passes passes over the clusters that have candidates, in cluster order. A
   cluster's frame is taken at x once per pass and every candidate's push out of its proxy is
   found there (proxy_push). With reaction rigid the pushes are then shared between each particle
   and the cluster's body (its members moving rigidly, body_move) in proportion to their inverse
   masses along the push, the body's mass split evenly among the n candidates that push it at
   once (mass splitting: each sees 1/n of the body, so that the body's one move by the sum of
   their opposite impulses closes each contact, not n times it). Moving each particle the whole
   way out and the body by the whole opposite impulse as well, as before, throws a light body
   back by the sum of its heavy contacts' impulses: a 0.1 kg cube on a 10 kg slab went further
   out on every pass, to 1e46 J. Friction takes back the particle's slip against the cluster's
   material point it lay at when the step began (the proxy's map at x0 inverted, then the map at
   x), the same way, at most mu times its pushes (after Macklin et al. 2014 Sec 6.1). Against the
   cluster's centre alone, a turning cluster's contacts were dragged along its turn, and a stack
   of five cubes swayed ever more (0.05 J after 25 s).
   With reaction jones2015 the particle moves alone, the whole way out through the nearest face
   (Jones et al. 2015 with gamma = 1); with a pinned member the body stays and the particle moves
   the whole way out. */
void csm_proxies_project(csm_contacts *c, const csm_world *w, double *x)
{
    const csm_clusters *C = &w->C;
    const double *im = w->P.inv_mass;
    double mu = c->x0 ? c->cfg.friction : 0.0;
    int rigid = c->cfg.reaction == CSM_REACTION_RIGID;
    for (int32_t pass = 0; pass < c->cfg.passes; pass++) {
        for (int32_t q0 = 0, q1; q0 < c->npairs; q0 = q1) {
            int32_t cl = c->pair[2 * q0 + 1];
            q1 = group_end(c, q0);
            const double *pr = &c->proxy[PROXY_STRIDE * cl], *b = &c->body[BODY_STRIDE * cl];
            double com[3], M[9], Minv[9], P[3] = {0, 0, 0}, T[3] = {0, 0, 0}, *f0 = &c->frame0[12 * cl], moved = 0;
            int moves = rigid && b[16] > 0, active = 0;
            proxy_frame(w, x, cl, com, M, Minv);
            if (!c->proxy_looked) {
                memcpy(f0, com, sizeof com);
                memcpy(&f0[3], M, sizeof M);
            } else { /* how far any point of the proxy (within its sphere) moved since the first look */
                double dM[9];
                for (int e = 0; e < 9; e++) dM[e] = M[e] - f0[3 + e];
                moved = distance(com, f0) + csm_m3_frobenius(dM) * pr[0];
            }
            for (int32_t q = q0; q < q1; q++) {
                int32_t i = c->pair[2 * q];
                const double *x0i = c->x0 ? &c->x0[3 * i] : &x[3 * i], *path = c->x0 && rigid ? x0i : NULL;
                double *D = &c->push[4 * q], *reach = &c->reach[8 * q];
                /* Left out where it cannot be pushed: a pair not pushed yet in the step whose
                   particle and proxy together moved less than its margin since the first look
                   (proxy_margin) is still outside, and proxy_push would give it nothing. Most
                   candidates of a resting stack are (test_proxy_margins_change_nothing). */
                if (c->proxy_looked && c->proxy_cull && reach[3] > 0 && c->lambda[q] == 0 &&
                    distance(&x[3 * i], reach) + moved < 0.99 * reach[3] - 1e-9 * pr[0]) {
                    D[0] = D[1] = D[2] = D[3] = 0;
                    c->proxy_left_out++;
                    continue;
                }
                D[3] = proxy_push(pr, com, M, Minv, &x[3 * i], path, b, &reach[4], c->distance, D);
                c->proxy_looks++;
                active += D[3] > 0 && im[i] > 0;
                if (c->proxy_looked) continue;
                memcpy(reach, &x[3 * i], 3 * sizeof *reach);
                reach[3] = D[3] > 0 ? 0.0 : proxy_margin(pr, com, Minv, &x[3 * i], path, b, c->distance);
            }
            for (int32_t q = q0; q < q1; q++) {
                int32_t i = c->pair[2 * q];
                double *xi = &x[3 * i], *nq = &c->normal[3 * q], *lam = &c->lambda[q];
                const double *x0i = c->x0 ? &c->x0[3 * i] : xi, *D = &c->push[4 * q];
                double r[3] = {x0i[0] - b[3], x0i[1] - b[4], x0i[2] - b[5]}, len = D[3];
                if (len > 0 && im[i] > 0) {
                    for (int e = 0; e < 3; e++) nq[e] = D[e] / len;
                    double wb = moves ? active * body_inverse_mass(b, r, nq) : 0.0;
                    double l = len / (im[i] + wb), J[3]; /* the push, an impulse times h; J the body's */
                    for (int e = 0; e < 3; e++) {
                        xi[e] += im[i] * l * nq[e];
                        J[e] = -l * nq[e];
                    }
                    body_impulse(r, J, P, T);
                    lam[0] += l;
                }
                if (mu > 0 && c->friction[4 * q + 3] < mu * lam[0] && im[i] > 0) { /* Coulomb friction on the slip against the cluster's material point
                                                            under the particle at the step's start (after Macklin et al. 2014 Sec 6.1) */
                    double under[3], slip[3];
                    csm_m3_mul_v3(M, &c->reach[8 * q + 4], under);
                    for (int e = 0; e < 3; e++) slip[e] = xi[e] - (com[e] + under[e]);
                    double sn = csm_v3_dot(slip, nq);
                    for (int e = 0; e < 3; e++) slip[e] -= sn * nq[e];
                    double len = csm_v3_norm(slip), *F = &c->friction[4 * q];
                    double u[3] = {0, 0, 0}, J[3];
                    if (len > 0)
                        for (int e = 0; e < 3; e++) u[e] = slip[e] / len;
                    else if (!(F[0] != 0 || F[1] != 0 || F[2] != 0))
                        continue;
                    double wb = moves && len > 0 ? (active > 0 ? active : 1) * body_inverse_mass(b, r, u) : 0.0;
                    csm_friction_cone(F, slip, im[i] + wb, mu * lam[0], J);
                    for (int e = 0; e < 3; e++) {
                        xi[e] += im[i] * J[e];
                        J[e] = -J[e];
                    }
                    body_impulse(r, J, P, T);
                }
            }
            if (moves && (P[0] != 0 || P[1] != 0 || P[2] != 0 || T[0] != 0 || T[1] != 0 || T[2] != 0))
                body_move(c, C, b, cl, P, T, x);
        }
        c->proxy_looked = 1;
    }
}

/* The deepest push out of a proxy, in the world, over the listed candidates at positions x; its
   pair into *pair (not NULL) where one was pushed. */
double csm_proxies_depth(const csm_contacts *c, const csm_world *w, const double *x, int32_t *pair)
{
    double deepest = 0;
    for (int32_t q0 = 0, q1; q0 < c->npairs; q0 = q1) {
        int32_t cl = c->pair[2 * q0 + 1];
        q1 = group_end(c, q0);
        double com[3], M[9], Minv[9], D[3];
        proxy_frame(w, x, cl, com, M, Minv);
        for (int32_t q = q0; q < q1; q++) {
            double depth = proxy_push(&c->proxy[PROXY_STRIDE * cl], com, M, Minv, &x[3 * c->pair[2 * q]], NULL, NULL,
                                      NULL, c->distance, D);
            if (!(depth > deepest)) continue;
            deepest = depth;
            if (pair) *pair = q;
        }
    }
    return deepest;
}

double csm_proxies_gap(const csm_contacts *c, int32_t q)
{
    const double *start = &c->reach[8 * q + 4];
    return start[3] > 0 ? 0.0 : proxy_outside(&c->proxy[PROXY_STRIDE * c->pair[2 * q + 1]], start);
}
