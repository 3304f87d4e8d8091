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
    if (csm_grow((void **)&c->lambda, &c->cap_lambda, (int64_t)c->npairs, sizeof *c->lambda) ||
        csm_grow((void **)&c->normal, &c->cap_normal, 3 * (int64_t)c->npairs, sizeof *c->normal) ||
        csm_grow((void **)&c->push, &c->cap_push, 4 * (int64_t)c->npairs, sizeof *c->push) ||
        csm_grow((void **)&c->friction, &c->cap_friction, 4 * (int64_t)c->npairs, sizeof *c->friction))
        return -1;
    if (c->npairs) {
        memset(c->lambda, 0, sizeof *c->lambda * (size_t)c->npairs);
        memset(c->normal, 0, sizeof *c->normal * 3 * (size_t)c->npairs);
        memset(c->friction, 0, sizeof *c->friction * 4 * (size_t)c->npairs);
    }
    return 0;
}
