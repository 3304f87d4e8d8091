/* Contact's broad phase (contact.c, contact_proxies.c): points counted into hashed cells, the
   buckets around a point, and the list of pairs with room for their pushes. */
#include "contact_internal.h"

#include "csm_math.h"
#include "grow.h"

#include <math.h>
#include <string.h>

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

/* Counting sort of points into the hashed cells of size 1 / inv, in about 2 buckets a point of n
   (stride doubles apart): all n, or with ids only the nid points listed there, in increasing
   order. c->sorted lists the point ids bucket by bucket, increasing within one, and bucket b
   holds sorted[cell_start[b], cell_start[b + 1]); a point left out changes neither the buckets
   nor the order of the others. Returns -1 when out of memory. */
int csm_contacts_grid_sort(csm_contacts *c, const double *pts, int stride, int32_t n, const int32_t *ids, int32_t nid,
                           double inv)
{
    int32_t buckets = 1, m = ids ? nid : n;
    while (buckets < 2 * n && buckets < (1 << 30)) buckets <<= 1;
    c->buckets = buckets;
    if (csm_grow((void **)&c->cell_start, &c->cap_start, (int64_t)buckets + 1, sizeof *c->cell_start) ||
        csm_grow((void **)&c->sorted, &c->cap_sorted, m, sizeof *c->sorted) ||
        csm_grow((void **)&c->bucket, &c->cap_bucket, m, sizeof *c->bucket))
        return -1;
    uint32_t mask = (uint32_t)buckets - 1;
    memset(c->cell_start, 0, sizeof *c->cell_start * ((size_t)buckets + 1));
    for (int32_t k = 0; k < m; k++) {
        const double *xi = &pts[(size_t)stride * (ids ? ids[k] : k)];
        c->bucket[k] = hash_cell(cell_of(xi[0], inv), cell_of(xi[1], inv), cell_of(xi[2], inv), mask);
        c->cell_start[c->bucket[k] + 1]++;
    }
    for (int32_t b = 0; b < buckets; b++) c->cell_start[b + 1] += c->cell_start[b];
    for (int32_t k = 0; k < m; k++) c->sorted[c->cell_start[c->bucket[k]]++] = ids ? ids[k] : k;
    for (int32_t b = buckets; b > 0; b--) c->cell_start[b] = c->cell_start[b - 1];
    c->cell_start[0] = 0;
    return 0;
}

/* The buckets of the 27 cells around point q, each once (two cells may share a bucket); returns
   how many. */
int csm_contacts_grid_around(const csm_contacts *c, const double q[3], double inv, uint32_t seen[27])
{
    uint32_t mask = (uint32_t)c->buckets - 1;
    int64_t ci[3] = {cell_of(q[0], inv), cell_of(q[1], inv), cell_of(q[2], inv)};
    int nseen = 0;
    uint64_t some = 0; /* a bit for each bucket seen, by its low 6 bits: most buckets are new at once */
    for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                uint32_t b = hash_cell(ci[0] + dx, ci[1] + dy, ci[2] + dz, mask);
                uint64_t bit = (uint64_t)1 << (b & 63);
                int dup = 0;
                for (int s = 0; s < nseen && !dup && (some & bit); s++) dup = seen[s] == b;
                if (!dup) seen[nseen++] = b;
                some |= bit;
            }
    return nseen;
}

/* Room for one more pair; -1 when out of memory. */
int csm_contacts_pair_push(csm_contacts *c, int32_t a, int32_t b)
{
    if (csm_grow((void **)&c->pair, &c->cap_pair, 2 * ((int64_t)c->npairs + 1), sizeof *c->pair)) return -1;
    c->pair[2 * c->npairs] = a;
    c->pair[2 * c->npairs + 1] = b;
    c->npairs++;
    return 0;
}

/* Room for each listed pair's direction and pushes, the pushes zero. */
int csm_contacts_pairs_ready(csm_contacts *c)
{
    if (csm_grow((void **)&c->lambda, &c->cap_lambda, 2 * (int64_t)c->npairs, sizeof *c->lambda) ||
        csm_grow((void **)&c->normal, &c->cap_normal, 3 * (int64_t)c->npairs, sizeof *c->normal) ||
        csm_grow((void **)&c->push, &c->cap_push, 4 * (int64_t)c->npairs, sizeof *c->push) ||
        csm_grow((void **)&c->friction, &c->cap_friction, 4 * (int64_t)c->npairs, sizeof *c->friction))
        return -1;
    if (c->npairs) {
        memset(c->lambda, 0, sizeof *c->lambda * 2 * (size_t)c->npairs);
        memset(c->normal, 0, sizeof *c->normal * 3 * (size_t)c->npairs);
        memset(c->friction, 0, sizeof *c->friction * 4 * (size_t)c->npairs);
    }
    return 0;
}

/* Coulomb friction on a contact over the step (after Macklin et al. 2014 Sec 6.1), kept as the
   impulse it applied so far, F[0..2] (times h, on the contact's first side), and the length of its
   corrections, F[3]. Each correction takes back all of the slip left (-slip / wsum), holds F
   inside the cone |F| <= bound (Catto's clamping of the accumulated impulse), and stops where the
   corrections' length reaches bound, which keeps the iterations from working friction back and
   forth without end (let them, up to twice the bound, and the five cubes of stack.yaml never came
   to rest: 1e-4 J at 30 s). out gets the correction, as an impulse; *taken |F|, the friction the
   contact holds now, whose rest of mu times its push the hold between the two bodies may use
   (contact_hold.c): counted as the corrections' length, that rest was gone whenever they had
   gone back and forth, and a cube half a degree under the friction angle at mu = 0.3 crept at
   3 mm/s. */
void csm_friction_cone(double F[4], const double slip[3], double wsum, double bound, double *taken, double out[3])
{
    double G[3];
    for (int e = 0; e < 3; e++) G[e] = F[e] - slip[e] / wsum;
    double g = csm_v3_norm(G);
    if (g > bound) {
        double s = g > 0 ? bound / g : 0.0;
        for (int e = 0; e < 3; e++) G[e] *= s;
        g = bound;
    }
    double d[3] = {G[0] - F[0], G[1] - F[1], G[2] - F[2]}, step = csm_v3_norm(d), room = bound - F[3];
    if (step > room) {
        double s = room > 0 ? room / step : 0.0;
        for (int e = 0; e < 3; e++) d[e] *= s;
        step *= s;
    }
    for (int e = 0; e < 3; e++) {
        out[e] = d[e];
        F[e] += d[e];
    }
    F[3] += step;
    *taken = csm_v3_norm(F);
}
