/* The neighbour grid: points sorted by the key of their cell, and radius queries over the 27
   cells around a point. */

#include "geometry.h"

#include "csm_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_key_index(const void *a, const void *b)
{
    const csm_key_index *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

void csm_key_index_sort(csm_key_index *a, int32_t n) { qsort(a, (size_t)n, sizeof *a, cmp_key_index); }

static int64_t cell_key(int64_t x, int64_t y, int64_t z)
{
    /* 21 bits a coordinate, offset to be non-negative */
    const int64_t off = 1 << 20;
    return ((x + off) << 42) | ((y + off) << 21) | (z + off);
}

static void cell_coords(const double *q, double cell, int64_t c[3])
{
    for (int d = 0; d < 3; d++) c[d] = (int64_t)floor(q[d] / cell);
}

int csm_grid_build(csm_grid *g, const double *points, int32_t n, double cell)
{
    memset(g, 0, sizeof *g);
    g->cell = cell;
    g->n = n;
    csm_key_index *ki = malloc(sizeof *ki * (size_t)(n > 0 ? n : 1));
    g->key = malloc(sizeof *g->key * (size_t)(n > 0 ? n : 1));
    g->index = malloc(sizeof *g->index * (size_t)(n > 0 ? n : 1));
    if (!ki || !g->key || !g->index) {
        free(ki);
        csm_grid_free(g);
        return -1;
    }
    for (int32_t i = 0; i < n; i++) {
        int64_t c[3];
        cell_coords(&points[3 * i], cell, c);
        ki[i].key = cell_key(c[0], c[1], c[2]);
        ki[i].index = i;
    }
    csm_key_index_sort(ki, n);
    for (int32_t i = 0; i < n; i++) {
        g->key[i] = ki[i].key;
        g->index[i] = ki[i].index;
    }
    free(ki);
    return 0;
}

void csm_grid_free(csm_grid *g)
{
    free(g->key);
    free(g->index);
    memset(g, 0, sizeof *g);
}

static int32_t lower_bound(const int64_t *a, int32_t n, int64_t key)
{
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int32_t csm_grid_query(const csm_grid *g, const double *points, const double q[3], double radius,
                       void (*fn)(int32_t j, void *user), void *user)
{
    int64_t c[3];
    cell_coords(q, g->cell, c);
    int32_t found = 0;
    double r2 = radius * radius;
    for (int64_t dx = -1; dx <= 1; dx++)
        for (int64_t dy = -1; dy <= 1; dy++)
            for (int64_t dz = -1; dz <= 1; dz++) {
                int64_t key = cell_key(c[0] + dx, c[1] + dy, c[2] + dz);
                for (int32_t s = lower_bound(g->key, g->n, key); s < g->n && g->key[s] == key; s++) {
                    int32_t j = g->index[s];
                    double d[3] = {points[3 * j] - q[0], points[3 * j + 1] - q[1], points[3 * j + 2] - q[2]};
                    if (csm_v3_dot(d, d) <= r2) {
                        if (fn) fn(j, user);
                        found++;
                    }
                }
            }
    return found;
}
