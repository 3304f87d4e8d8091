/* Particle contact (contact.h): a hashed grid broad phase and Gauss-Seidel projections of
   |x_i - x_j| >= d, with Coulomb friction on the same positions.

   The constraint of a pair is taken along the direction n_ij the pair had at the start of the
   step, n_ij . (x_i - x_j) >= d: a contact plane between the two spheres, fixed for the step
   (which gives |x_i - x_j| >= d as well). The push apart moves i by w_i lambda n_ij and j by
   -w_j lambda n_ij (w the inverse masses): equal and opposite impulses along the line through
   the two particles' positions at the step's start, which is what a position-based step's
   angular momentum sum_i m_i x_i(t) x x_i(t + h) / h sees, so contact keeps it exactly where the
   integrator does (solver.conserve: angular), and momentum in any case (Müller et al. 2007,
   Sec 3.3's mass-weighted corrections). */
#include "contact_internal.h"

#include "csm_math.h"
#include "grow.h"
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int csm_contacts_init(csm_contacts *c, const csm_contact_cfg *cfg, const csm_world *w, csm_error *err)
{
    (void)err;
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    double r = cfg->radius;
    if (!(r > 0)) /* half the sampling spacing: neighbours at rest just touch */
        for (int32_t k = 0; k < w->nobjects; k++) r = fmax(r, 0.5 * w->object_spacing[k]);
    c->distance = 2.0 * r;
    c->proxy_cull = 1;
    return 0;
}

void csm_contacts_free(csm_contacts *c)
{
    free(c->pair);
    free(c->normal);
    free(c->lambda);
    free(c->friction);
    free(c->patch_friction);
    free(c->push);
    free(c->reach);
    free(c->frame0);
    free(c->cell_start);
    free(c->sorted);
    free(c->bucket);
    free(c->proxy);
    free(c->body);
    free(c->sphere);
    free(c->stamp);
    free(c->sample);
    free(c->owner);
    free(c->boxes);
    free(c->swept);
    free(c->near);
    free(c->regions);
    free(c->holds);
    free(c->hold_of);
    free(c->hold_push);
    free(c->hold_geom);
    free(c->hold_body);
    free(c->wnormal);
    free(c->adj_start);
    free(c->adj);
    free(c->under_a);
    free(c->under);
    free(c->covered);
    free(c->patch_i);
    free(c->patch_start);
    free(c->patch_k);
    free(c->patch_w);
    free(c->patch_n);
    free(c->patch_lambda);
    free(c->patch_gap);
    memset(c, 0, sizeof *c);
}

void csm_contacts_start(csm_contacts *c, const double *x0)
{
    c->x0 = x0;
    c->hold_ready = 0;
}

int csm_contacts_excluded(const csm_contacts *c, const csm_world *w, int32_t i, int32_t j)
{
    const csm_particles *P = &w->P;
    if (P->inv_mass[i] == 0.0 && P->inv_mass[j] == 0.0) return 1;
    if (P->object[i] != P->object[j]) return 0;
    if (!c->cfg.self) return 1;
    double r[3] = {P->rest[3 * i] - P->rest[3 * j], P->rest[3 * i + 1] - P->rest[3 * j + 1],
                   P->rest[3 * i + 2] - P->rest[3 * j + 2]};
    double near = 2.0 * c->distance;
    if (csm_v3_dot(r, r) < near * near) return 1;
    const csm_clusters *C = &w->C;
    for (int32_t a = C->poff[i]; a < C->poff[i + 1]; a++)
        for (int32_t b = C->poff[j]; b < C->poff[j + 1]; b++)
            if (C->mcluster[C->pmember[a]] == C->mcluster[C->pmember[b]]) return 1;
    return 0;
}

/* The pairs within 2 d at positions p among the nid particles ids (increasing), appended to the
   list in the order a grid of all n would give them. */
static int pairs_at(csm_contacts *c, const csm_world *w, const double *p, const int32_t *ids, int32_t nid)
{
    double search = 2.0 * c->distance, inv = 1.0 / search, s2 = search * search;
    if (csm_contacts_grid_sort(c, p, 3, w->P.n, ids, nid, inv)) return -1;
    for (int32_t k = 0; k < nid; k++) {
        int32_t i = ids[k];
        const double *xi = &p[3 * i];
        uint32_t seen[27];
        int nseen = csm_contacts_grid_around(c, xi, inv, seen);
        for (int s = 0; s < nseen; s++)
            for (int32_t a = c->cell_start[seen[s]]; a < c->cell_start[seen[s] + 1]; a++) {
                int32_t j = c->sorted[a];
                if (j <= i) continue;
                const double *xj = &p[3 * j];
                double d[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
                if (csm_v3_dot(d, d) >= s2 || csm_contacts_excluded(c, w, i, j)) continue;
                if (csm_contacts_pair_push(c, i, j)) return -1;
            }
    }
    return 0;
}

static int pair_order(const void *a, const void *b)
{
    const int32_t *p = a, *q = b;
    return p[0] != q[0] ? (p[0] > q[0]) - (p[0] < q[0]) : (p[1] > q[1]) - (p[1] < q[1]);
}

/* Whether i and j, each on the line from x0 to x over the step, come within distance d of each
   other at some time of it. */
static int meet(const double *x0, const double *x, int32_t i, int32_t j, double d)
{
    double r[3], v[3];
    for (int e = 0; e < 3; e++) {
        r[e] = x0[3 * i + e] - x0[3 * j + e];
        v[e] = (x[3 * i + e] - x0[3 * i + e]) - (x[3 * j + e] - x0[3 * j + e]);
    }
    double vv = csm_v3_dot(v, v), s = vv > 0 ? fmin(1.0, fmax(0.0, -csm_v3_dot(r, v) / vv)) : 0.0;
    for (int e = 0; e < 3; e++) r[e] += s * v[e];
    return csm_v3_dot(r, r) < d * d;
}

/* How far particle i travels from x0 to x. */
static double travel_of(const double *x0, const double *x, int32_t i)
{
    double v[3] = {x[3 * i] - x0[3 * i], x[3 * i + 1] - x0[3 * i + 1], x[3 * i + 2] - x0[3 * i + 2]};
    return csm_v3_norm(v);
}

/* Samples a path of length len gets beyond its end: none while it is at most d / 4, else one every
   d / 2 of it (at most CSM_CONTACT_SWEEP). */
static int32_t path_samples(double len, double d)
{
    return len > 0.25 * d ? (int32_t)fmin(ceil(len / (0.5 * d)), CSM_CONTACT_SWEEP) : 0;
}

/* The broad phase lists the pairs within 2 d at the predicted positions x. Without `self` only
   the particles whose path over the step reaches another object's box over it, grown by 2 d, go
   into the grid: two particles of two objects within 2 d of each other each lie within 2 d of the
   other's box, so no pair is lost, and a body alone, or far from the others, lists none of its
   own (with more than CSM_CONTACT_BOX_OBJECTS objects, every particle goes in and the boxes are
   only asked of the fast ones). When a particle travels more than d / 4 over the step the step is
   swept: the grid holds each particle where it ends and each that travels more than d / 4 also
   at points along its line from x0 to x, d / 2 apart, so that every point of a particle's path
   lies within d / 4 of one of its points and two particles that come within d during the step
   have points within 1.5 d. Any two particles with points within 2 d are listed, once, in
   increasing (i, j), if they meet within d during the step or end within 2 d. A pair that crosses
   during the step is held by its constraint along its direction at the step's start, which it
   crossed: two bodies cannot pass through each other however fast they meet, up to
   CSM_CONTACT_SWEEP / 2 contact distances of travel a step. Only the fast particles whose paths
   reach another object's box add points: a body falling alone sweeps nothing. */
static int sweep(csm_contacts *c, const csm_world *w, const double *x)
{
    int32_t n = w->P.n, nobj = w->nobjects;
    double d = c->distance;
    const double *x0 = c->x0 ? c->x0 : x;
    /* each object's box over the step, grown by 2 d */
    if (csm_grow((void **)&c->boxes, &c->cap_boxes, 6 * (int64_t)nobj, sizeof *c->boxes) ||
        csm_grow((void **)&c->swept, &c->cap_swept, n, sizeof *c->swept) ||
        csm_grow((void **)&c->near, &c->cap_near, n, sizeof *c->near))
        return -1;
    for (int32_t o = 0; o < nobj; o++)
        for (int e = 0; e < 3; e++) c->boxes[6 * o + e] = INFINITY, c->boxes[6 * o + 3 + e] = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        double *b = &c->boxes[6 * w->P.object[i]];
        for (int e = 0; e < 3; e++) {
            b[e] = fmin(b[e], fmin(x0[3 * i + e], x[3 * i + e]) - 2 * d);
            b[3 + e] = fmax(b[3 + e], fmax(x0[3 * i + e], x[3 * i + e]) + 2 * d);
        }
    }
    int filter = !c->cfg.self && nobj <= CSM_CONTACT_BOX_OBJECTS;
    int32_t nnear = 0;
    int64_t npts = 0;
    for (int32_t i = 0; i < n; i++) {
        double len = travel_of(x0, x, i);
        int32_t m = path_samples(len, d), near = c->cfg.self, near_object = w->P.object[i];
        for (int32_t o = 0; (m || filter) && !near && o < nobj; o++) {
            if (o == w->P.object[i]) continue;
            const double *b = &c->boxes[6 * o];
            near = 1;
            for (int e = 0; e < 3 && near; e++)
                near = fmin(x0[3 * i + e], x[3 * i + e]) <= b[3 + e] && fmax(x0[3 * i + e], x[3 * i + e]) >= b[e];
            if (near) near_object = o;
        }
        c->swept[i] = near ? m : 0;
        if (near || !filter) {
            c->near[nnear++] = i;
            npts += 1 + c->swept[i];
        }
        if (near && len > 0.5 * d * CSM_CONTACT_SWEEP && len > c->outran) {
            c->outran = len;
            c->outran_time = w->time;
            c->outran_particle = i;
            c->outran_object = near_object;
        }
    }
    c->nnear = nnear;
    if (npts == nnear) return pairs_at(c, w, x, c->near, nnear) ? -1 : 0; /* no path is swept */
    /* the points: each such particle where it ends, and one that travels more than d / 4 near
       another object also along its path, d / 2 apart */
    if (npts > INT32_MAX / 2 || csm_grow((void **)&c->sample, &c->cap_sample, 3 * npts, sizeof *c->sample) ||
        csm_grow((void **)&c->owner, &c->cap_owner, npts, sizeof *c->owner))
        return -1;
    int64_t at = 0;
    for (int32_t k = 0; k < nnear; k++) {
        int32_t i = c->near[k], m = c->swept[i];
        for (int32_t s = 0; s <= m; s++, at++) {
            double f = m ? (double)s / m : 1.0;
            for (int e = 0; e < 3; e++) c->sample[3 * at + e] = x0[3 * i + e] + f * (x[3 * i + e] - x0[3 * i + e]);
            c->owner[at] = i;
        }
    }
    double search = 2.0 * d, inv = 1.0 / search, s2 = search * search;
    if (csm_contacts_grid_sort(c, c->sample, 3, (int32_t)npts, NULL, 0, inv)) return -1;
    for (int32_t p = 0; p < (int32_t)npts; p++) {
        const double *xp = &c->sample[3 * (int64_t)p];
        int32_t i = c->owner[p];
        uint32_t seen[27];
        int nseen = csm_contacts_grid_around(c, xp, inv, seen);
        for (int sc = 0; sc < nseen; sc++)
            for (int32_t a2 = c->cell_start[seen[sc]]; a2 < c->cell_start[seen[sc] + 1]; a2++) {
                int32_t q = c->sorted[a2], j = c->owner[q];
                if (j <= i) continue;
                const double *xq = &c->sample[3 * (int64_t)q];
                double e[3] = {xp[0] - xq[0], xp[1] - xq[1], xp[2] - xq[2]};
                if (csm_v3_dot(e, e) >= s2 || csm_contacts_excluded(c, w, i, j)) continue;
                if (csm_contacts_pair_push(c, i, j)) return -1;
            }
    }
    if (c->npairs > 1) qsort(c->pair, (size_t)c->npairs, 2 * sizeof *c->pair, pair_order);
    int32_t kept = 0;
    for (int32_t q = 0; q < c->npairs; q++) {
        int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
        if (kept && c->pair[2 * (kept - 1)] == i && c->pair[2 * (kept - 1) + 1] == j) continue;
        double e[3] = {x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1], x[3 * i + 2] - x[3 * j + 2]};
        if (csm_v3_dot(e, e) >= 4 * d * d && !meet(x0, x, i, j, d)) continue;
        c->pair[2 * kept] = i;
        c->pair[2 * kept++ + 1] = j;
    }
    c->npairs = kept;
    return 0;
}

/* The broad phase, then each pair's direction and the surface patches. */
static int particles_find(csm_contacts *c, const csm_world *w, const double *x)
{
    if (w->P.n < 2) return 0;
    if (sweep(c, w, x)) return -1;
    if (csm_contacts_pairs_ready(c)) return -1;
    /* each pair's direction at the step's start (x0), or where the two started at one point, now */
    for (int32_t q = 0; q < c->npairs; q++) {
        int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
        const double *a = c->x0 ? c->x0 : x;
        double d[3] = {a[3 * i] - a[3 * j], a[3 * i + 1] - a[3 * j + 1], a[3 * i + 2] - a[3 * j + 2]};
        double len = csm_v3_norm(d);
        if (!(len > 0)) {
            for (int e = 0; e < 3; e++) d[e] = x[3 * i + e] - x[3 * j + e];
            len = csm_v3_norm(d);
        }
        double *nq = &c->normal[3 * q];
        if (len > 0) {
            for (int e = 0; e < 3; e++) nq[e] = d[e] / len;
        } else { /* one point twice: apart along y */
            nq[0] = nq[2] = 0;
            nq[1] = 1;
        }
    }
    /* contact.normal surface: particles over another object's surface are held off it (contact_surface.c) */
    return w->surface ? csm_surface_find(c, w, c->x0 ? c->x0 : x) : 0;
}

static void particles_project(csm_contacts *c, const csm_world *w, double *x)
{
    const double *im = w->P.inv_mass;
    double d = c->distance, mu = c->x0 ? c->cfg.friction : 0.0;
    const unsigned char *covered = w->surface && c->ncovered ? c->covered : NULL;
    for (int32_t pass = 0; pass < c->cfg.passes; pass++) {
        if (c->npatch) csm_surface_project(c, w, x, mu);
        for (int32_t q = 0; q < c->npairs; q++) {
            int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
            if (covered && covered[q]) continue;
            double *xi = &x[3 * i], *xj = &x[3 * j];
            const double *nq = &c->normal[3 * q];
            double gap = nq[0] * (xi[0] - xj[0]) + nq[1] * (xi[1] - xj[1]) + nq[2] * (xi[2] - xj[2]) - d;
            double wsum = im[i] + im[j];
            if (gap < 0) {
                double l = -gap / wsum;
                for (int e = 0; e < 3; e++) {
                    xi[e] += im[i] * l * nq[e];
                    xj[e] -= im[j] * l * nq[e];
                }
                c->lambda[q] += l;
            }
            /* Coulomb friction on the pair's slip over the step so far (after Macklin et al. 2014
               Sec 6.1), while its corrections have length left (most touching pairs of a resting
               stack have none after a few passes) */
            if (mu > 0 && c->friction[4 * q + 3] < mu * c->lambda[q]) {
                const double *ai = &c->x0[3 * i], *aj = &c->x0[3 * j];
                double slip[3], sn = 0;
                for (int e = 0; e < 3; e++) {
                    slip[e] = (xi[e] - ai[e]) - (xj[e] - aj[e]);
                    sn += slip[e] * nq[e];
                }
                for (int e = 0; e < 3; e++) slip[e] -= sn * nq[e];
                csm_friction_cone(&c->friction[4 * q], slip, wsum, mu * c->lambda[q], slip);
                for (int e = 0; e < 3; e++) {
                    xi[e] += im[i] * slip[e];
                    xj[e] -= im[j] * slip[e];
                }
            }
        }
    }
}

static double particles_depth(const csm_contacts *c, const csm_world *w, const double *x)
{
    double deepest = c->npatch ? csm_surface_depth(c, x) : 0;
    for (int32_t q = 0; q < c->npairs; q++) {
        int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
        if (w->surface && c->covered[q]) continue;
        double d[3] = {x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1], x[3 * i + 2] - x[3 * j + 2]};
        deepest = fmax(deepest, c->distance - csm_v3_norm(d));
    }
    return deepest;
}

int csm_contacts_find(csm_contacts *c, const csm_world *w, const double *x)
{
    c->npairs = c->npatch = 0;
    if (!(c->distance > 0)) return 0;
    return c->cfg.method == CSM_CONTACT_PROXIES ? csm_proxies_find(c, w, x) : particles_find(c, w, x);
}

int csm_contacts_project(csm_contacts *c, const csm_world *w, double *x)
{
    if (c->cfg.method == CSM_CONTACT_PROXIES)
        csm_proxies_project(c, w, x);
    else
        particles_project(c, w, x);
    return csm_contacts_hold(c, w, x);
}

double csm_contacts_depth(const csm_contacts *c, const csm_world *w, const double *x, int32_t *pair)
{
    if (pair) *pair = -1;
    return c->cfg.method == CSM_CONTACT_PROXIES ? csm_proxies_depth(c, w, x, pair) : particles_depth(c, w, x);
}
