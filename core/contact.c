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
#include "contact.h"

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
    return 0;
}

void csm_contacts_free(csm_contacts *c)
{
    free(c->pair);
    free(c->normal);
    free(c->lambda);
    free(c->cell_start);
    free(c->sorted);
    free(c->bucket);
    memset(c, 0, sizeof *c);
}

void csm_contacts_start(csm_contacts *c, const double *x0)
{
    c->x0 = x0;
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

/* The grid cell of a coordinate, clamped far from the origin so that it fits an int64. */
static int64_t cell_of(double x, double inv)
{
    double q = floor(x * inv);
    return (int64_t)fmin(fmax(q, -4.0e15), 4.0e15);
}

static uint32_t hash_cell(int64_t a, int64_t b, int64_t c, uint32_t mask)
{
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ (uint64_t)b * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)c * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    return (uint32_t)h & mask;
}

int csm_contacts_find(csm_contacts *c, const csm_world *w, const double *x)
{
    const csm_particles *P = &w->P;
    int32_t n = P->n;
    c->npairs = 0;
    if (n < 2 || !(c->distance > 0)) return 0;
    int32_t buckets = 1;
    while (buckets < 2 * n && buckets < (1 << 30)) buckets <<= 1;
    c->buckets = buckets;
    if (csm_grow((void **)&c->cell_start, &c->cap_start, (int64_t)buckets + 1, sizeof *c->cell_start) ||
        csm_grow((void **)&c->sorted, &c->cap_sorted, n, sizeof *c->sorted) ||
        csm_grow((void **)&c->bucket, &c->cap_bucket, n, sizeof *c->bucket))
        return -1;
    double search = 2.0 * c->distance, inv = 1.0 / search, s2 = search * search;
    uint32_t mask = (uint32_t)buckets - 1;
    /* counting sort of the particles by bucket, stable: increasing ids within one */
    memset(c->cell_start, 0, sizeof *c->cell_start * ((size_t)buckets + 1));
    for (int32_t i = 0; i < n; i++) {
        const double *xi = &x[3 * i];
        c->bucket[i] = hash_cell(cell_of(xi[0], inv), cell_of(xi[1], inv), cell_of(xi[2], inv), mask);
        c->cell_start[c->bucket[i] + 1]++;
    }
    for (int32_t b = 0; b < buckets; b++) c->cell_start[b + 1] += c->cell_start[b];
    for (int32_t i = 0; i < n; i++) c->sorted[c->cell_start[c->bucket[i]]++] = i;
    for (int32_t b = buckets; b > 0; b--) c->cell_start[b] = c->cell_start[b - 1];
    c->cell_start[0] = 0;

    for (int32_t i = 0; i < n; i++) {
        const double *xi = &x[3 * i];
        int64_t ci[3] = {cell_of(xi[0], inv), cell_of(xi[1], inv), cell_of(xi[2], inv)};
        uint32_t seen[27];
        int nseen = 0;
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    uint32_t b = hash_cell(ci[0] + dx, ci[1] + dy, ci[2] + dz, mask);
                    int dup = 0; /* two cells may share a bucket: visit it once */
                    for (int s = 0; s < nseen && !dup; s++) dup = seen[s] == b;
                    if (dup) continue;
                    seen[nseen++] = b;
                    for (int32_t a = c->cell_start[b]; a < c->cell_start[b + 1]; a++) {
                        int32_t j = c->sorted[a];
                        if (j <= i) continue;
                        const double *xj = &x[3 * j];
                        double d[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
                        if (csm_v3_dot(d, d) >= s2 || csm_contacts_excluded(c, w, i, j)) continue;
                        if (csm_grow((void **)&c->pair, &c->cap_pair, 2 * ((int64_t)c->npairs + 1), sizeof *c->pair))
                            return -1;
                        c->pair[2 * c->npairs] = i;
                        c->pair[2 * c->npairs + 1] = j;
                        c->npairs++;
                    }
                }
    }
    if (csm_grow((void **)&c->lambda, &c->cap_lambda, 2 * (int64_t)c->npairs, sizeof *c->lambda) ||
        csm_grow((void **)&c->normal, &c->cap_normal, 3 * (int64_t)c->npairs, sizeof *c->normal))
        return -1;
    if (c->npairs) memset(c->lambda, 0, sizeof *c->lambda * 2 * (size_t)c->npairs);
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
    return 0;
}

void csm_contacts_project(csm_contacts *c, const csm_world *w, double *x)
{
    const double *im = w->P.inv_mass;
    double d = c->distance, mu = c->x0 ? c->cfg.friction : 0.0;
    for (int32_t pass = 0; pass < c->cfg.passes; pass++)
        for (int32_t q = 0; q < c->npairs; q++) {
            int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
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
                c->lambda[2 * q] += l;
            }
            if (mu > 0 && c->lambda[2 * q] > 0) { /* Coulomb friction on the pair's slip over the step so far (after Macklin et al. 2014 Sec 6.1) */
                const double *ai = &c->x0[3 * i], *aj = &c->x0[3 * j];
                double slip[3], sn = 0;
                for (int e = 0; e < 3; e++) {
                    slip[e] = (xi[e] - ai[e]) - (xj[e] - aj[e]);
                    sn += slip[e] * nq[e];
                }
                for (int e = 0; e < 3; e++) slip[e] -= sn * nq[e];
                /* the tangential push of the step, at most mu times its normal push: the pair
                   sticks while it can, and slides held back by what is left of mu lambda */
                double len = csm_v3_norm(slip) / wsum;
                double t = fmin(len, mu * c->lambda[2 * q] - c->lambda[2 * q + 1]);
                if (!(t > 0)) continue;
                c->lambda[2 * q + 1] += t;
                for (int e = 0; e < 3; e++) {
                    double s = t * slip[e] / (len * wsum);
                    xi[e] -= im[i] * s;
                    xj[e] += im[j] * s;
                }
            }
        }
}

double csm_contacts_depth(const csm_contacts *c, const double *x)
{
    double deepest = 0;
    for (int32_t q = 0; q < c->npairs; q++) {
        int32_t i = c->pair[2 * q], j = c->pair[2 * q + 1];
        double d[3] = {x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1], x[3 * i + 2] - x[3 * j + 2]};
        deepest = fmax(deepest, c->distance - csm_v3_norm(d));
    }
    return deepest;
}

