/* Shapes and sampling: an object's shape opened for inside tests, and its particles sampled on a
   grid or by Bridson's Poisson disks, at a spacing or to a particle target. The neighbour grid is
   in grid.c, each particle's share of the volume in volumes.c. */

#include "geometry.h"
#include "error.h"

#include "csm_math.h"
#include "rng.h"
#include "simd.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const csm_shape_params *shape_of(const csm_object_cfg *o) { return csm_cfg_params(&o->shape); }

/* Axis index of cylinder/torus and the two others. */
static void axis_frame(int axis, int *a, int *b, int *c)
{
    *a = axis;
    *b = (axis + 1) % 3;
    *c = (axis + 2) % 3;
}

int csm_shape_inside(const csm_shape *sh, const double p[3])
{
    const csm_object_cfg *o = sh->o;
    switch (o->shape_type) {
    case CSM_SHAPE_BOX: {
        const double *s = shape_of(o)->size;
        return fabs(p[0]) <= 0.5 * s[0] && fabs(p[1]) <= 0.5 * s[1] && fabs(p[2]) <= 0.5 * s[2];
    }
    case CSM_SHAPE_SPHERE: {
        double r = shape_of(o)->radius;
        return csm_v3_dot(p, p) <= r * r;
    }
    case CSM_SHAPE_CYLINDER: {
        int a, b, c;
        axis_frame(shape_of(o)->axis, &a, &b, &c);
        double r = shape_of(o)->radius, h = shape_of(o)->height;
        return p[b] * p[b] + p[c] * p[c] <= r * r && fabs(p[a]) <= 0.5 * h;
    }
    case CSM_SHAPE_TORUS: {
        int a, b, c;
        axis_frame(shape_of(o)->axis, &a, &b, &c);
        double R = shape_of(o)->major, r = shape_of(o)->minor;
        double radial = sqrt(p[b] * p[b] + p[c] * p[c]) - R;
        return radial * radial + p[a] * p[a] <= r * r;
    }
    case CSM_SHAPE_MESH:
        return csm_mesh_inside(&sh->mesh, p);
    }
    return 0;
}

static void shape_bounds(const csm_object_cfg *o, double half[3], double *volume)
{
    /* meshes: csm_shape_open */
    switch (o->shape_type) {
    case CSM_SHAPE_BOX: {
        const double *s = shape_of(o)->size;
        for (int d = 0; d < 3; d++) half[d] = 0.5 * s[d];
        *volume = s[0] * s[1] * s[2];
        return;
    }
    case CSM_SHAPE_SPHERE: {
        double r = shape_of(o)->radius;
        half[0] = half[1] = half[2] = r;
        *volume = 4.0 / 3.0 * CSM_PI * r * r * r;
        return;
    }
    case CSM_SHAPE_CYLINDER: {
        int a, b, c;
        axis_frame(shape_of(o)->axis, &a, &b, &c);
        double r = shape_of(o)->radius, h = shape_of(o)->height;
        half[a] = 0.5 * h;
        half[b] = half[c] = r;
        *volume = CSM_PI * r * r * h;
        return;
    }
    case CSM_SHAPE_TORUS: {
        int a, b, c;
        axis_frame(shape_of(o)->axis, &a, &b, &c);
        double R = shape_of(o)->major, r = shape_of(o)->minor;
        half[a] = r;
        half[b] = half[c] = R + r;
        *volume = 2.0 * CSM_PI * CSM_PI * R * r * r;
        return;
    }
    }
    half[0] = half[1] = half[2] = 0;
    *volume = 0;
}

typedef struct pointbuf {
    double *p;
    int32_t n, cap;
} pointbuf;

static void push_point(pointbuf *b, const double q[3])
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->p = realloc(b->p, sizeof(double) * 3 * (size_t)b->cap);
        if (!b->p) CSM_OUT_OF_MEMORY();
    }
    memcpy(&b->p[3 * b->n++], q, 3 * sizeof(double));
}

/* Spread the low 10 bits of v to every third bit (a Morton code's one axis). */
static uint32_t morton_spread(uint32_t v)
{
    v &= 0x3ff;
    v = (v | (v << 16)) & 0x030000ff;
    v = (v | (v << 8)) & 0x0300f00f;
    v = (v | (v << 4)) & 0x030c30c3;
    return (v | (v << 2)) & 0x09249249;
}

/* in[k] = csm_mesh_inside for each candidate: the candidates in Morton order of the box, 8 near
   ones to a walk of the tree (csm_mesh_winding_lanes, the same bits as one at a time). */
void csm_shape_inside_many(const csm_shape *o, const double *cand, int32_t n, unsigned char *in)
{
    csm_key_index *order = malloc(sizeof *order * (size_t)(n > 0 ? n : 1));
    if (!order) CSM_OUT_OF_MEMORY();
    for (int32_t k = 0; k < n; k++) {
        int64_t key = 0;
        for (int d = 0; d < 3; d++) {
            double t = o->half[d] > 0 ? (cand[3 * k + d] + o->half[d]) / (2.0 * o->half[d]) : 0.0;
            uint32_t cell = t > 0 ? (t < 1 ? (uint32_t)(t * 1024.0) : 1023u) : 0u;
            key |= (int64_t)morton_spread(cell) << d;
        }
        order[k] = (csm_key_index){key, k};
    }
    csm_key_index_sort(order, n);
    int32_t packs = (n + CSM_LANES - 1) / CSM_LANES;
#pragma omp parallel for schedule(dynamic, 16)
    for (int32_t b = 0; b < packs; b++) {
        double p[3 * CSM_LANES], w[CSM_LANES];
        int m = n - b * CSM_LANES < CSM_LANES ? n - b * CSM_LANES : CSM_LANES;
        for (int l = 0; l < m; l++) memcpy(&p[3 * l], &cand[3 * order[b * CSM_LANES + l].index], sizeof(double) * 3);
        csm_mesh_winding_lanes(&o->mesh, p, m, w);
        for (int l = 0; l < m; l++) in[order[b * CSM_LANES + l].index] = fabs(w[l]) >= 0.5;
    }
    free(order);
}

/* The candidates inside the shape, appended to out in their order. A mesh's inside test (a
   winding number) is most of a mesh object's set-up: the tests run in parallel, the points are
   kept in order, so the sample does not depend on the thread count. */
static void push_inside(const csm_shape *o, const double *cand, int32_t n, pointbuf *out)
{
    unsigned char *in = malloc((size_t)(n > 0 ? n : 1));
    if (!in) CSM_OUT_OF_MEMORY();
    if (o->o->shape_type == CSM_SHAPE_MESH) csm_shape_inside_many(o, cand, n, in);
    else
        for (int32_t k = 0; k < n; k++) in[k] = (unsigned char)csm_shape_inside(o, &cand[3 * k]);
    for (int32_t k = 0; k < n; k++)
        if (in[k]) push_point(out, &cand[3 * k]);
    free(in);
}

int32_t csm_grid_points(double half, double h) { return (int32_t)floor(2.0 * half / h + 1e-9) + 1; }

static void sample_grid(const csm_shape *o, const double half[3], double h, pointbuf *out)
{
    /* A grid symmetric about the shape's centre, so symmetric shapes get symmetric samples. */
    int32_t cnt[3];
    for (int d = 0; d < 3; d++) cnt[d] = csm_grid_points(half[d], h);
    for (int32_t i = 0; i < cnt[0]; i++)
        for (int32_t j = 0; j < cnt[1]; j++)
            for (int32_t k = 0; k < cnt[2]; k++) {
                double q[3] = {(i - 0.5 * (cnt[0] - 1)) * h, (j - 0.5 * (cnt[1] - 1)) * h,
                               (k - 0.5 * (cnt[2] - 1)) * h};
                /* lattice points on the surface ((0.3, 0.4, 0) on a ball of 0.5) must not be lost
                   to round-off, or symmetric shapes sample asymmetrically */
                double shrunk[3] = {q[0] * (1 - 1e-9), q[1] * (1 - 1e-9), q[2] * (1 - 1e-9)};
                if (csm_shape_inside(o, shrunk)) push_point(out, q);
            }
}

/* The 125 cells around a candidate's, nearest first (by the least distance between points of
   the two cells, in cells, then in scan order): most candidates are refused by a sample one or
   two cells away, and a refusal needs only one. */
typedef struct cell_offset {
    int8_t d[3];
    int8_t near;
} cell_offset;

static int cmp_cell_offset(const void *a, const void *b)
{
    const cell_offset *x = a, *y = b;
    if (x->near != y->near) return x->near - y->near;
    for (int k = 0; k < 3; k++)
        if (x->d[k] != y->d[k]) return x->d[k] - y->d[k];
    return 0;
}

static void cell_offsets_nearest_first(cell_offset out[125])
{
    int n = 0;
    for (int dx = -2; dx <= 2; dx++)
        for (int dy = -2; dy <= 2; dy++)
            for (int dz = -2; dz <= 2; dz++) {
                int gap[3] = {abs(dx) - 1, abs(dy) - 1, abs(dz) - 1}, near = 0;
                for (int k = 0; k < 3; k++) near += gap[k] > 0 ? gap[k] * gap[k] : 0;
                out[n++] = (cell_offset){{(int8_t)dx, (int8_t)dy, (int8_t)dz}, (int8_t)near};
            }
    qsort(out, 125, sizeof *out, cmp_cell_offset);
}

/* The sampler's candidates are mostly rejected (each active sample fails `attempts` times before
   it retires), so each is first placed with cheap approximations of sin, cos and cbrt, good to
   about 1e-11 of r (csm_math.h): one that lands clearly outside the box, or clearly nearer than
   r to a sample, is rejected for sure. Only the others (the few accepted and those at the margin)
   are placed again with the library's functions and tested as before: the same points, bit for
   bit. */
#define SAMPLE_MARGIN 1e-6 /* of r, far above the approximations' error */

/* Whether a sample in the 125 cells around cell cq (which hold every sample within r of any point
   of it) is at a squared distance below near2 (r^2, or less) from q. */
static int poisson_too_near(const double q[3], double near2, const double *grid, size_t cq,
                            const ptrdiff_t step[125])
{
    for (int o = 0; o < 125; o++) {
        const double *g = &grid[3 * (size_t)((ptrdiff_t)cq + step[o])];
        double dd[3] = {q[0] - g[0], q[1] - g[1], q[2] - g[2]};
        if (csm_v3_dot(dd, dd) < near2) return 1;
    }
    return 0;
}

/* Whether the approximate position qa is rejected for sure: outside the box, or nearer than r to
   a sample, by more than the margin. 0 leaves it to the exact test. */
static int poisson_surely_rejects(const double qa[3], const double half[3], double r, double per_cell,
                                  const int32_t dim[3], const double *grid, const ptrdiff_t step[125])
{
    double m = SAMPLE_MARGIN * r;
    size_t at = 0;
    for (int d = 0; d < 3; d++) {
        if (qa[d] < -half[d] - m || qa[d] > half[d] + m) return 1;
        if (qa[d] < -half[d] + m || qa[d] > half[d] - m) return 0;
        /* any cell will do: a sample found within r of qa is one, whichever cell it lies in */
        at = at * (size_t)dim[d] + (size_t)((qa[d] + half[d]) * per_cell) + 2;
    }
    return poisson_too_near(qa, r * r * (1.0 - SAMPLE_MARGIN), grid, at, step);
}

/* Bridson 2007, "Fast Poisson disk sampling in arbitrary dimensions": a background grid of cell
   r/sqrt(3) holds at most one sample; k candidates in the shell [r, 2r] around an active sample.
   As Falkenstein Sec 2.3.1, the bounding box is sampled and points outside are discarded.
   reference: every candidate placed and tested with the library's functions alone. */
static void sample_box(const double half[3], double r, int attempts, csm_rng *rng, int reference, pointbuf *all)
{
    double cell = r / sqrt(3.0), per_cell = 1.0 / cell;
    /* the grid has a margin of two empty cells on every side, so the 125 cells around any cell
       of the box exist; each cell holds its sample's coordinates, NaN when empty (no distance to
       NaN is less than r) */
    int32_t dim[3];
    for (int d = 0; d < 3; d++) dim[d] = (int32_t)ceil(2.0 * half[d] / cell) + 1 + 4;
    size_t ncell = (size_t)dim[0] * (size_t)dim[1] * (size_t)dim[2];
    double *grid = malloc(3 * ncell * sizeof *grid);
    if (!grid) CSM_OUT_OF_MEMORY();
    for (size_t c = 0; c < 3 * ncell; c++) grid[c] = NAN;
    cell_offset near[125];
    cell_offsets_nearest_first(near);
    ptrdiff_t step[125];
    for (int o = 0; o < 125; o++)
        step[o] = ((ptrdiff_t)near[o].d[0] * dim[1] + near[o].d[1]) * dim[2] + near[o].d[2];
    int32_t *active = NULL;
    int32_t nactive = 0, cap_active = 0;
#define CELL_OF(q) \
    ((((size_t)floor(((q)[0] + half[0]) / cell) + 2) * (size_t)dim[1] + (size_t)floor(((q)[1] + half[1]) / cell) + 2) * \
         (size_t)dim[2] + (size_t)floor(((q)[2] + half[2]) / cell) + 2)
    double first[3];
    for (int d = 0; d < 3; d++) first[d] = (2.0 * csm_rng_uniform(rng) - 1.0) * half[d];
    push_point(all, first);
    memcpy(&grid[3 * CELL_OF(first)], first, sizeof first);
    cap_active = 1024;
    active = malloc(sizeof *active * (size_t)cap_active);
    if (!active) CSM_OUT_OF_MEMORY();
    active[nactive++] = 0;
    while (nactive > 0) {
        int32_t slot = (int32_t)csm_rng_below(rng, (uint32_t)nactive);
        const double *base = &all->p[3 * active[slot]];
        int placed = 0;
        for (int t = 0; t < attempts && !placed; t++) {
            /* uniform direction, radius uniform in volume of the shell [r, 2r] */
            double z = 2.0 * csm_rng_uniform(rng) - 1.0, phi = 2.0 * CSM_PI * csm_rng_uniform(rng);
            double s = sqrt(1.0 - z * z), a = 1.0 + 7.0 * csm_rng_uniform(rng);
            if (!reference) {
                double sa, ca, rad = r * csm_cbrt_approx(a);
                csm_sincos_approx(phi, &sa, &ca);
                double qa[3] = {base[0] + rad * s * ca, base[1] + rad * s * sa, base[2] + rad * z};
                if (poisson_surely_rejects(qa, half, r, per_cell, dim, grid, step)) continue;
            }
            double rad = r * cbrt(a);
            double q[3] = {base[0] + rad * s * cos(phi), base[1] + rad * s * sin(phi), base[2] + rad * z};
            int inside = 1;
            for (int d = 0; d < 3; d++)
                if (q[d] < -half[d] || q[d] > half[d]) inside = 0;
            if (!inside) continue;
            size_t cq = CELL_OF(q);
            if (poisson_too_near(q, r * r, grid, cq, step)) continue;
            push_point(all, q);
            base = &all->p[3 * active[slot]]; /* push may have moved the buffer */
            memcpy(&grid[3 * cq], q, sizeof q);
            if (nactive == cap_active) {
                cap_active *= 2;
                active = realloc(active, sizeof *active * (size_t)cap_active);
                if (!active) CSM_OUT_OF_MEMORY();
            }
            active[nactive++] = all->n - 1;
            placed = 1;
        }
        if (!placed) active[slot] = active[--nactive];
    }
#undef CELL_OF
    free(active);
    free(grid);
}

void csm_sample_poisson_box(const double half[3], double r, int attempts, uint64_t seed, uint64_t stream,
                            int reference, double **points, int32_t *count)
{
    csm_rng rng;
    csm_rng_seed(&rng, seed, stream);
    pointbuf all = {0};
    sample_box(half, r, attempts, &rng, reference, &all);
    *points = all.p;
    *count = all.n;
}

static void sample_poisson(const csm_shape *o, const double half[3], double r, int attempts, csm_rng *rng,
                           pointbuf *out)
{
    pointbuf all = {0};
    sample_box(half, r, attempts, rng, 0, &all);
    push_inside(o, all.p, all.n, out);
    free(all.p);
}

int csm_shape_open(csm_shape *sh, const csm_object_cfg *o, int index, csm_error *err)
{
    memset(sh, 0, sizeof *sh);
    sh->o = o;
    if (o->shape_type != CSM_SHAPE_MESH) {
        shape_bounds(o, sh->half, &sh->volume);
        return 0;
    }
    const csm_shape_params *sp = shape_of(o);
    const csm_value *pv = csm_cfg_field(&o->shape, offsetof(csm_shape_params, path)); /* its line */
    const char *src = o->shape.src ? o->shape.src : "";
    char at[256], where[320];
    snprintf(where, sizeof where, "%s: objects[%d].shape.path", csm_cfg_where(src, pv->line, at, sizeof at), index);
    if (csm_mesh_open(&sh->mesh, sp->path, src, where, sp->rotate, sp->fit == CSM_FIT_UNIT_BOX, sp->scale, err))
        return -1;
    double lo[3], hi[3];
    csm_mesh_bounds(&sh->mesh, lo, hi);
    for (int d = 0; d < 3; d++) sh->half[d] = 0.5 * (hi[d] - lo[d]);
    sh->volume = csm_mesh_volume(&sh->mesh);
    return 0;
}

void csm_shape_close(csm_shape *sh) { csm_mesh_free(&sh->mesh); }

static int sample_at(const csm_shape *sh, int index, uint64_t seed, double h, pointbuf *out, csm_error *err)
{
    const csm_object_cfg *o = sh->o;
    double cells = 1;
    for (int d = 0; d < 3; d++) cells *= 2.0 * sh->half[d] / h + 1.0;
    if (cells > 5e8) {
        char at[512];
        return csm_fail(err, CSM_EXIT_BAD_INPUT,
                        "%s: objects[%d].sampling: spacing %g gives about %.3g grid points; use a larger spacing",
                        csm_cfg_where(o->sampling.src, o->sampling.line ? o->sampling.line : o->line, at, sizeof at),
                        index, h, cells);
    }
    out->n = 0;
    if (o->sampling_type == CSM_SAMPLING_GRID) {
        sample_grid(sh, sh->half, h, out);
    } else {
        csm_rng rng;
        csm_rng_seed(&rng, seed, 0x5a3b1e00u + (uint64_t)index);
        sample_poisson(sh, sh->half, h, ((const csm_sampling_params *)csm_cfg_params(&o->sampling))->attempts, &rng, out);
    }
    return 0;
}

/* The spacing for a target count: h = cbrt(V / N) to start, then h <- h cbrt(n / N) kept inside
   the bracket of spacings known to give too many and too few (bisection when it leaves it). The
   count is a step function of h (and noisy for Poisson sampling), so the closest is kept. */
static int sample_target(const csm_shape *sh, int index, uint64_t seed, int32_t target, pointbuf *out,
                         double *spacing, csm_error *err)
{
    double h = cbrt(sh->volume / target), lo = 0, hi = INFINITY, best_h = h;
    int32_t best = -1;
    pointbuf trial = {0};
    for (int it = 0; it < 24; it++) {
        if (sample_at(sh, index, seed, h, &trial, err)) {
            free(trial.p);
            return -1;
        }
        int32_t n = trial.n;
        if (best < 0 || abs(n - target) < abs(best - target)) {
            pointbuf keep = *out; /* the closest so far's points are the ones returned */
            *out = trial;
            trial = keep;
            best = n;
            best_h = h;
        }
        if (n == target) break;
        if (n > target) lo = h > lo ? h : lo;
        else hi = h < hi ? h : hi;
        /* the expected count goes as h^-3: once the bracket is narrower than h / (6 N), a step
           changes it by less than half a particle, and the counts found are the sampler's noise */
        if (hi - lo < h / (6.0 * target)) break;
        double next = h * cbrt(n > 0 ? (double)n / target : 0.5);
        if (!(next > lo && next < hi)) next = isfinite(hi) ? 0.5 * (lo + hi) : 2.0 * h;
        if (next == h) break;
        h = next;
    }
    free(trial.p);
    *spacing = best_h;
    return 0;
}

int csm_shape_same_mesh(const csm_object_cfg *a, const csm_object_cfg *b)
{
    if (a->shape_type != CSM_SHAPE_MESH || b->shape_type != CSM_SHAPE_MESH) return 0;
    const csm_shape_params *x = shape_of(a), *y = shape_of(b);
    const char *sa = a->shape.src ? a->shape.src : "", *sb = b->shape.src ? b->shape.src : "";
    return !strcmp(x->path, y->path) && !strcmp(sa, sb) && !memcmp(x->rotate, y->rotate, sizeof x->rotate) &&
           x->fit == y->fit && x->scale == y->scale;
}

int csm_sample_shape(const csm_shape *sh, int index, uint64_t seed, double **points, int32_t *count, double *spacing,
                     csm_error *err)
{
    const csm_object_cfg *o = sh->o;
    pointbuf out = {0};
    double h = 0;
    int rc = 0;
    if (o->shape_type == CSM_SHAPE_POINTS) {
        const csm_points *pts = &shape_of(o)->positions;
        for (int32_t k = 0; k < pts->n; k++) push_point(&out, &pts->xyz[3 * k]);
    } else {
        const csm_sampling_params *sp = csm_cfg_params(&o->sampling);
        int32_t target = sp->particles;
        h = sp->spacing;
        rc = target > 0 ? sample_target(sh, index, seed, target, &out, &h, err)
                        : sample_at(sh, index, seed, h, &out, err);
    }
    if (!rc && out.n == 0)
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT,
                      "%s:%d: objects[%d]: no particle inside the shape; is the sampling spacing larger than the shape?",
                      o->shape.src ? o->shape.src : "", o->line, index);
    if (rc) {
        free(out.p);
        return -1;
    }
    *points = out.p;
    *count = out.n;
    if (spacing) *spacing = h;
    return 0;
}

int csm_sample_object(const csm_object_cfg *o, int index, uint64_t seed, double **points, int32_t *count,
                      double *volume, double *spacing, csm_error *err)
{
    csm_shape sh;
    if (csm_shape_open(&sh, o, index, err)) return -1;
    *volume = sh.volume;
    int rc = csm_sample_shape(&sh, index, seed, points, count, spacing, err);
    csm_shape_close(&sh);
    return rc;
}
