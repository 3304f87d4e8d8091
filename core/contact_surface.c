/* Particle contact against a surface (contact.normal: surface): a particle that lies over another
   object's surface is held off that surface, not off each of the surface's particles.

   Spheres pushed apart along the line between their centres make every surface a lattice of
   bumps: a face laid on a face settles into the pockets of the other's lattice, and a block on a
   slab grips it with no friction at all (a cube on a 10 degree slope stopped after 5 cm). The
   object's own surface is known where it was sampled: each particle's share of it, b_i
   (volumes.c), gives its outward normal in the rest shape, turned to the world by its cluster's
   rotation. As Macklin et al. 2014 do for rigid bodies' particles (their contact normal is the
   gradient of a signed distance stored with each particle, not the line between the two), a
   particle i of object A that faces the surface particles k of another object B (its normal and
   theirs opposed) is held off their surface by one constraint,

       n . (x_i - sum_k w_k x_k) >= d,

   n the surface's normal under i and w_k weights of sum 1 whose centre sum_k w_k x_k is the point
   of that surface under i, found at the step's start as a moving least squares fit would: w_k =
   phi_k (a + b . t_k), t_k the offset of k from i across n, phi_k a kernel of |t_k| that falls to
   zero at 2 d, and (a, b) such that sum w_k = 1 and sum w_k t_k = 0. On a flat surface that is the
   plane the surface particles' centres lie in, wherever i lies between them: the faces slide on
   each other as planes. The push moves i by w_i lambda n and each k by -w_k (1/m_k) lambda n
   (Müller et al. 2007 Sec 3.3's mass-weighted corrections of a constraint on several particles, as
   a point is held off a triangle): its momentum sum_k w_k - 1 = 0, and its angular
   momentum about any point, (x_i - sum w_k x_k) x n lambda, is zero as x_i - sum w_k x_k lies along
   n at the step's start. So contact keeps both, as the spheres do. Friction acts on the slip of i
   against the point under it.

   Where no such surface is under a particle (it lies beyond the surface's edge, or its own
   normal does not face it, or it is an inner particle, or the two belong to one object), the pair
   is the spheres' of contact.c. */
#include "contact_internal.h"

#include "csm_math.h"
#include "grow.h"
#include "world.h"

#include <math.h>
#include <string.h>

/* The world normal at the step's start of each particle paired with another object: its rest
   normal turned by the rotation of its first cluster's last fit (zero where it has none). */
static void world_normals(csm_contacts *c, const csm_world *w)
{
    const csm_clusters *C = &w->C;
    for (int32_t i = 0; i < w->P.n; i++) {
        if (c->adj_start[i + 1] == c->adj_start[i]) continue; /* no pair with another object */
        const double *n0 = &w->surface[4 * i];
        double *out = &c->wnormal[3 * i];
        if (C->poff && C->poff[i] < C->poff[i + 1] && (n0[0] != 0 || n0[1] != 0 || n0[2] != 0))
            csm_m3_mul_v3(&C->R[9 * C->mcluster[C->pmember[C->poff[i]]]], n0, out);
        else
            memcpy(out, n0, 3 * sizeof *out);
    }
}

/* Two unit vectors across n. */
static void across(const double n[3], double e1[3], double e2[3])
{
    double a[3] = {0, 0, 0};
    a[fabs(n[0]) < 0.6 ? 0 : (fabs(n[1]) < 0.6 ? 1 : 2)] = 1;
    csm_v3_cross(n, a, e1);
    double len = csm_v3_norm(e1);
    for (int e = 0; e < 3; e++) e1[e] /= len;
    csm_v3_cross(n, e1, e2);
}

/* A surface particle (an inner one has no normal) whose normal is not turned away from side. */
static int facing(const double nk[3], const double side[3])
{
    return (nk[0] != 0 || nk[1] != 0 || nk[2] != 0) && csm_v3_dot(nk, side) > -0.1;
}

/* An offset r from i across n (e1, e2 the unit vectors across it), t, and the kernel
   phi = (1 - s)^2 of s = |t|^2 / reach^2; 0 when it lies beyond the reach. */
static int kernel(const double r[3], const double e1[3], const double e2[3], double reach, double t[2], double *s,
                  double *phi)
{
    t[0] = csm_v3_dot(r, e1);
    t[1] = csm_v3_dot(r, e2);
    double t2 = t[0] * t[0] + t[1] * t[1], r2 = reach * reach;
    if (t2 >= r2) return 0;
    *s = t2 / r2;
    if (*s >= 1) return 0;
    *phi = (1 - *s) * (1 - *s);
    return 1;
}

static int32_t partner(const csm_contacts *c, int32_t q, int32_t i)
{
    return c->pair[2 * q] == i ? c->pair[2 * q + 1] : c->pair[2 * q];
}

/* The patch of particle i against object b from i's pairs adj[from, to) (positions x0): appends it
   and marks the pairs it holds; 0 when there is none, -1 when out of memory. */
static int patch_of(csm_contacts *c, const csm_world *w, const double *x0, int32_t i, int32_t b, int32_t from,
                    int32_t to)
{
    const double *ni = &c->wnormal[3 * i];
    if (ni[0] == 0 && ni[1] == 0 && ni[2] == 0) return 0;
    double d = c->distance, reach = 2.0 * d, n[3] = {0, 0, 0};
    for (int32_t a = from; a < to; a++) {
        int32_t k = partner(c, c->adj[a], i);
        if (w->P.object[k] != b) continue;
        for (int e = 0; e < 3; e++) n[e] += c->wnormal[3 * k + e];
    }
    double len = csm_v3_norm(n);
    if (!(len > 0)) return 0;
    for (int e = 0; e < 3; e++) n[e] /= len;
    /* b's surface particles paired with i that face its way: their offsets from i and normals.
       One closer to i than the reach lies within it across any normal, and the fit below needs
       every such one within 14 degrees of its normal (cos 14.07 = 0.97): two of them more than
       28.2 degrees apart (cos 28.4 = 0.88) leave none, as near a box's edge. */
    int32_t nu = 0, *ua = c->under_a;
    double *u = c->under, close = 0.99 * reach * reach;
    const double *first = NULL;
    for (int32_t a = from; a < to; a++) {
        int32_t k = partner(c, c->adj[a], i);
        const double *nk = &c->wnormal[3 * k];
        if (w->P.object[k] != b || !facing(nk, n)) continue;
        double *r = &u[6 * nu];
        for (int e = 0; e < 3; e++) {
            r[e] = x0[3 * k + e] - x0[3 * i + e];
            r[3 + e] = nk[e];
        }
        if (csm_v3_dot(r, r) < close) {
            if (!first)
                first = nk;
            else if (csm_v3_dot(nk, first) < 0.88)
                return 0;
        }
        ua[nu++] = a;
    }
    /* twice: the kernel-weighted normal of those under i, then the fit across it, where every one
       of them lies within 14 degrees of that normal: a flat surface (within 2 d of a box's edge,
       whose particles' normals lie between its two faces', or on a ball of less than about eight
       spacings' radius, it is not, and the spheres act) */
    double e1[3], e2[3], M[9], t[2], phi, nearest = INFINITY;
    for (int round = 0; round < 2; round++) {
        across(n, e1, e2);
        double sum[3] = {0, 0, 0};
        memset(M, 0, sizeof M);
        for (int32_t q = 0; q < nu; q++) {
            const double *r = &u[6 * q], *nk = r + 3;
            double s;
            if (!kernel(r, e1, e2, reach, t, &s, &phi)) continue;
            for (int e = 0; e < 3; e++) sum[e] += phi * nk[e];
            if (round == 0) continue;
            if (csm_v3_dot(nk, n) < 0.97) return 0;
            nearest = fmin(nearest, sqrt(s) * reach);
            double v[3] = {1, t[0], t[1]};
            for (int r0 = 0; r0 < 3; r0++)
                for (int r1 = 0; r1 < 3; r1++) M[3 * r0 + r1] += phi * v[r0] * v[r1];
        }
        len = csm_v3_norm(sum);
        if (!(len > 0)) return 0;
        if (round == 0)
            for (int e = 0; e < 3; e++) n[e] = sum[e] / len;
    }
    /* i faces that surface, lies over it (one of its particles within 3/4 d across n: a square
       lattice leaves none farther than d / sqrt 2), and they are not strung along a line */
    if (csm_v3_dot(ni, n) > -0.3 || nearest > 0.75 * d) return 0;
    double Minv[9] = {0}, scale = M[0] * M[0] * M[0] * d * d * d * d;
    if (!(csm_m3_inverse(M, Minv) > 1e-4 * scale)) return 0;
    int32_t p = c->npatch, start = c->npatch_k;
    if (csm_grow((void **)&c->patch_i, &c->cap_patch, p + 1, sizeof *c->patch_i) ||
        csm_grow((void **)&c->patch_start, &c->cap_patch_start, p + 2, sizeof *c->patch_start) ||
        csm_grow((void **)&c->patch_n, &c->cap_patch_n, 3 * (int64_t)(p + 1), sizeof *c->patch_n) ||
        csm_grow((void **)&c->patch_lambda, &c->cap_patch_lambda, (int64_t)(p + 1), sizeof *c->patch_lambda) ||
        csm_grow((void **)&c->patch_friction, &c->cap_patch_friction, 4 * (int64_t)(p + 1), sizeof *c->patch_friction) ||
        csm_grow((void **)&c->patch_gap, &c->cap_patch_gap, p + 1, sizeof *c->patch_gap) ||
        csm_grow((void **)&c->patch_k, &c->cap_patch_k, start + nu, sizeof *c->patch_k) ||
        csm_grow((void **)&c->patch_w, &c->cap_patch_w, start + nu, sizeof *c->patch_w))
        return -1;
    double height = 0, depth = 0; /* n . (x_i - sum w_k x_k); sum w_k n . (s_k - x_k), s_k k's surface point */
    int32_t m = start, held = 0;
    for (int32_t q = 0; q < nu; q++) {
        const double *r = &u[6 * q], *nk = r + 3;
        int32_t k = partner(c, c->adj[ua[q]], i);
        double s;
        if (!kernel(r, e1, e2, reach, t, &s, &phi)) continue;
        /* w_k = phi_k (1, t_k) . M^-1 (1, 0, 0): sum w_k (1, t_k) = (1, 0, 0) */
        double wk = phi * (Minv[0] + Minv[3] * t[0] + Minv[6] * t[1]);
        c->patch_k[m] = k;
        c->patch_w[m++] = wk;
        ua[held++] = ua[q]; /* the pairs the patch holds, in place: held <= q */
        height -= wk * csm_v3_dot(r, n);
        depth += wk * w->surface[4 * k + 3] * csm_v3_dot(nk, n);
    }
    if (!(height > -d)) return 0; /* i has passed through that surface: the spheres' pairs take it */
    /* and the surface points of its particles, each particle's centre moved out along its normal
       by its depth under the shape's surface, lie in one plane, within a tenth of d: a face, bent
       or not, whether its particles lie on it (a grid) or at any depth under it within a spacing
       (a Poisson sample's outer particles) */
    for (int32_t q = start; q < m; q++) {
        int32_t k = c->patch_k[q];
        const double *xk = &x0[3 * k];
        double off = n[0] * (xk[0] - x0[3 * i]) + n[1] * (xk[1] - x0[3 * i + 1]) + n[2] * (xk[2] - x0[3 * i + 2]);
        off += w->surface[4 * k + 3] * csm_v3_dot(&c->wnormal[3 * k], n);
        if (fabs(off + height - depth) > 0.1 * d) return 0;
    }
    for (int32_t q = 0; q < held; q++) c->covered[c->adj[ua[q]]] = 1;
    c->ncovered += held;
    c->patch_i[p] = i;
    c->patch_start[p] = start;
    c->patch_start[p + 1] = m;
    memcpy(&c->patch_n[3 * p], n, sizeof n);
    c->patch_lambda[p] = 0;
    memset(&c->patch_friction[4 * p], 0, 4 * sizeof *c->patch_friction);
    /* the two surfaces d apart, as two grids' faces are whose particles touch: i's centre at d
       plus both depths over the plane of the centres under it */
    c->patch_gap[p] = d + depth - w->surface[4 * i + 3] * csm_v3_dot(ni, n);
    c->npatch = p + 1;
    c->npatch_k = m;
    return 0;
}

int csm_surface_find(csm_contacts *c, const csm_world *w, const double *x0)
{
    c->npatch = c->npatch_k = 0;
    int32_t n = w->P.n;
    if (csm_grow((void **)&c->covered, &c->cap_covered, c->npairs, 1) ||
        csm_grow((void **)&c->wnormal, &c->cap_wnormal, 3 * (int64_t)n, sizeof *c->wnormal) ||
        csm_grow((void **)&c->adj_start, &c->cap_adj_start, (int64_t)n + 1, sizeof *c->adj_start) ||
        csm_grow((void **)&c->adj, &c->cap_adj, 2 * (int64_t)c->npairs, sizeof *c->adj) ||
        csm_grow((void **)&c->patch_start, &c->cap_patch_start, 1, sizeof *c->patch_start))
        return -1;
    c->patch_start[0] = 0;
    if (c->npairs) memset(c->covered, 0, (size_t)c->npairs);
    c->ncovered = 0;
    /* each particle's pairs with other objects, in pair order */
    memset(c->adj_start, 0, sizeof *c->adj_start * ((size_t)n + 1));
    const int32_t *obj = w->P.object;
    for (int32_t q = 0; q < c->npairs; q++) {
        int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
        if (obj[i] == obj[j]) continue;
        c->adj_start[i + 1]++;
        c->adj_start[j + 1]++;
    }
    int32_t most = 0; /* the most pairs one particle has: patch_of's scratch */
    for (int32_t i = 0; i < n; i++) {
        most = c->adj_start[i + 1] > most ? c->adj_start[i + 1] : most; /* its count, before the sum */
        c->adj_start[i + 1] += c->adj_start[i];
    }
    for (int32_t q = 0; q < c->npairs; q++) {
        int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
        if (obj[i] == obj[j]) continue;
        c->adj[c->adj_start[i]++] = q;
        c->adj[c->adj_start[j]++] = q;
    }
    for (int32_t i = n; i > 0; i--) c->adj_start[i] = c->adj_start[i - 1];
    c->adj_start[0] = 0;
    if (csm_grow((void **)&c->under_a, &c->cap_under_a, most, sizeof *c->under_a) ||
        csm_grow((void **)&c->under, &c->cap_under, 6 * (int64_t)most, sizeof *c->under))
        return -1;
    world_normals(c, w);
    /* one patch per particle and other object it meets, objects in the order its pairs meet them */
    for (int32_t i = 0; i < n; i++)
        for (int32_t a = c->adj_start[i]; a < c->adj_start[i + 1]; a++) {
            int32_t b = obj[partner(c, c->adj[a], i)], seen = 0;
            for (int32_t e = c->adj_start[i]; e < a && !seen; e++) seen = obj[partner(c, c->adj[e], i)] == b;
            if (!seen && patch_of(c, w, x0, i, b, c->adj_start[i], c->adj_start[i + 1])) return -1;
        }
    return 0;
}

/* Each patch's constraint n . (x_i - sum w_k x_k) >= its gap, projected with the mass-weighted
   corrections of Müller et al. 2007 Sec 3.3: i moves by (1/m_i) lambda n, each k by
   -w_k (1/m_k) lambda n, lambda = -C / (1/m_i + sum w_k^2 / m_k). */
void csm_surface_project(csm_contacts *c, const csm_world *w, double *x, double mu)
{
    const double *im = w->P.inv_mass;
    for (int32_t p = 0; p < c->npatch; p++) {
        int32_t i = c->patch_i[p], from = c->patch_start[p], to = c->patch_start[p + 1];
        const double *n = &c->patch_n[3 * p];
        double *xi = &x[3 * i], under[3] = {0, 0, 0}, wsum = im[i];
        for (int32_t a = from; a < to; a++) {
            int32_t k = c->patch_k[a];
            for (int e = 0; e < 3; e++) under[e] += c->patch_w[a] * x[3 * k + e];
            wsum += c->patch_w[a] * c->patch_w[a] * im[k];
        }
        if (!(wsum > 0)) continue;
        double gap = n[0] * (xi[0] - under[0]) + n[1] * (xi[1] - under[1]) + n[2] * (xi[2] - under[2]) - c->patch_gap[p];
        if (gap < 0) {
            double l = -gap / wsum;
            for (int e = 0; e < 3; e++) xi[e] += im[i] * l * n[e];
            for (int32_t a = from; a < to; a++) {
                int32_t k = c->patch_k[a];
                for (int e = 0; e < 3; e++) x[3 * k + e] -= im[k] * c->patch_w[a] * l * n[e];
            }
            c->patch_lambda[p] += l;
        }
        if (!(mu > 0 && c->patch_friction[4 * p + 3] < mu * c->patch_lambda[p])) continue; /* none, or spent */
        /* i's slip over the step against the point under it, held back as a pair's (contact.c) */
        double slip[3], sn = 0;
        for (int e = 0; e < 3; e++) slip[e] = xi[e] - c->x0[3 * i + e];
        for (int32_t a = from; a < to; a++) {
            int32_t k = c->patch_k[a];
            for (int e = 0; e < 3; e++) slip[e] -= c->patch_w[a] * (x[3 * k + e] - c->x0[3 * k + e]);
        }
        for (int e = 0; e < 3; e++) sn += slip[e] * n[e];
        for (int e = 0; e < 3; e++) slip[e] -= sn * n[e];
        csm_friction_cone(&c->patch_friction[4 * p], slip, wsum, mu * c->patch_lambda[p], slip);
        for (int e = 0; e < 3; e++) {
            xi[e] += im[i] * slip[e];
            for (int32_t a = from; a < to; a++) x[3 * c->patch_k[a] + e] -= im[c->patch_k[a]] * c->patch_w[a] * slip[e];
        }
    }
}

double csm_surface_depth(const csm_contacts *c, const double *x)
{
    double deepest = 0;
    for (int32_t p = 0; p < c->npatch; p++) {
        int32_t i = c->patch_i[p];
        const double *n = &c->patch_n[3 * p];
        double gap = 0;
        for (int e = 0; e < 3; e++) gap += n[e] * x[3 * i + e];
        for (int32_t a = c->patch_start[p]; a < c->patch_start[p + 1]; a++)
            for (int e = 0; e < 3; e++) gap -= c->patch_w[a] * n[e] * x[3 * c->patch_k[a] + e];
        deepest = fmax(deepest, c->patch_gap[p] - gap);
    }
    return deepest;
}
