/* Each particle's share of an object's volume and surface (sampling.mass: volume): its Voronoi
   cell clipped to the shape, counted on a lattice of probes. */

#include "geometry.h"

#include "csm_math.h"

#include <lapacke.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Probes per sampling spacing along each axis (csm_sample_volumes): 64 to a grid cell. Even, so
   that on a grid no probe lies halfway between two lattice points. */
enum { VOLUME_PROBES = 4 };

/* The nearest of the points `pts` to q among those the grid lists within its cell size (ties:
   the lower index); -1 when there is none. */
typedef struct nearest_query {
    const double *pts, *q;
    double best;
    int32_t j;
} nearest_query;

static void nearest_visit(int32_t j, void *user)
{
    nearest_query *s = user;
    const double *p = &s->pts[3 * j];
    double d[3] = {p[0] - s->q[0], p[1] - s->q[1], p[2] - s->q[2]}, d2 = csm_v3_dot(d, d);
    if (d2 < s->best || (d2 == s->best && j < s->j)) {
        s->best = d2;
        s->j = j;
    }
}

static int32_t nearest_point(const csm_grid *g, const double *pts, const double q[3])
{
    nearest_query s = {pts, q, INFINITY, -1};
    csm_grid_query(g, pts, q, g->cell, nearest_visit, &s);
    return s.j;
}

/* Lattice index of grid point coordinate q on a lattice of cnt points at spacing h centred at 0
   (sample_grid), or -1 off it. */
static int32_t lattice_index(double q, double h, int32_t cnt)
{
    double t = q / h + 0.5 * (cnt - 1);
    int32_t i = (int32_t)floor(t + 0.5);
    return i >= 0 && i < cnt ? i : -1;
}

int csm_sample_volumes(const csm_shape *sh, const double *pts, int32_t n, double h, double *vol, double *area,
                       double *cell)
{
    const csm_object_cfg *o = sh->o;
    int grid = o->sampling_type == CSM_SAMPLING_GRID;
    int32_t cnt[3], probes[3];
    double step[3];
    for (int d = 0; d < 3; d++) {
        cnt[d] = csm_grid_points(sh->half[d], h);
        probes[d] = (int32_t)ceil(2.0 * sh->half[d] / h * VOLUME_PROBES - 1e-9);
        if (probes[d] < 1) probes[d] = 1;
        step[d] = 2.0 * sh->half[d] / probes[d];
    }
    double dv = step[0] * step[1] * step[2];
    for (int32_t i = 0; i < n; i++) vol[i] = 0.0;
    if (cell) /* sums first: the probes' moments about their particle */
        for (int64_t k = 0; k < 9 * (int64_t)n; k++) cell[k] = 0.0;
    /* On a grid, a particle whose 26 neighbours are all there owns its whole cube h^3 (its Voronoi
       cell, inside the shape as its neighbours are): only the probes of the other cubes are
       tested, so the work goes with the surface. */
    unsigned char *state = NULL; /* per lattice point: 0 none, 1 a particle, 2 an interior one */
    int32_t *at = NULL;          /* per lattice point: its particle */
    size_t cells = (size_t)cnt[0] * (size_t)cnt[1] * (size_t)cnt[2];
    if (grid) {
        state = calloc(cells, 1);
        at = malloc(sizeof *at * cells);
        if (!state || !at) goto oom;
        for (int32_t i = 0; i < n; i++) {
            int32_t a = lattice_index(pts[3 * i], h, cnt[0]), b = lattice_index(pts[3 * i + 1], h, cnt[1]),
                    c = lattice_index(pts[3 * i + 2], h, cnt[2]);
            if (a < 0 || b < 0 || c < 0) continue;
            size_t k = ((size_t)a * cnt[1] + b) * cnt[2] + c;
            state[k] = 1;
            at[k] = i;
        }
        for (int32_t a = 1; a + 1 < cnt[0]; a++)
            for (int32_t b = 1; b + 1 < cnt[1]; b++)
                for (int32_t c = 1; c + 1 < cnt[2]; c++) {
                    size_t k = ((size_t)a * cnt[1] + b) * cnt[2] + c;
                    int all = state[k] != 0;
                    for (int da = -1; da <= 1 && all; da++)
                        for (int db = -1; db <= 1 && all; db++)
                            for (int dc = -1; dc <= 1 && all; dc++)
                                all = state[((size_t)(a + da) * cnt[1] + (b + db)) * cnt[2] + (c + dc)] != 0;
                    if (all) {
                        state[k] = 2;
                        vol[at[k]] = h * h * h;
                        for (int d = 0; cell && d < 3; d++) cell[9 * at[k] + 3 + d] = h * h * h * h * h / 12.0;
                    }
                }
    }
    /* the nearest particle of a probe inside the shape: within sqrt(3)/2 h on a grid's cube, a little
       farther by a concave surface; within 2 h of a Poisson sample (Bridson 2007's coverage) */
    csm_grid g;
    if (csm_grid_build(&g, pts, n, grid ? 1.5 * h : 2.0 * h)) goto oom;
    /* one slab of probes (fixed first coordinate) at a time, its inside tests batched; with `area`,
       the slabs on either side too, whose probes tell which faces of a probe's cell lie on the
       surface */
    size_t slab = (size_t)probes[1] * (size_t)probes[2];
    double *q = malloc(sizeof *q * 3 * slab);
    unsigned char *in = malloc(slab), *flag = calloc(3 * slab, 1); /* flag: the slabs a - 1, a, a + 1 */
    if (!q || !in || !flag) {
        free(q);
        free(in);
        free(flag);
        csm_grid_free(&g);
        goto oom;
    }
    if (area)
        for (int64_t k = 0; k < 3 * (int64_t)n; k++) area[k] = 0.0;
    for (int32_t a = -1; a < probes[0]; a++) {
        memmove(flag, flag + slab, 2 * slab); /* the slab a + 1 is tested next */
        unsigned char *next = flag + 2 * slab;
        memset(next, 0, slab);
        if (a + 1 < probes[0]) {
            int32_t m = 0;
            double x = -sh->half[0] + (a + 1.5) * step[0];
            for (int32_t b = 0; b < probes[1]; b++)
                for (int32_t c = 0; c < probes[2]; c++) {
                    double y = -sh->half[1] + (b + 0.5) * step[1], z = -sh->half[2] + (c + 0.5) * step[2];
                    if (grid) {
                        int32_t la = lattice_index(x, h, cnt[0]), lb = lattice_index(y, h, cnt[1]),
                                lc = lattice_index(z, h, cnt[2]);
                        if (la >= 0 && lb >= 0 && lc >= 0 && state[((size_t)la * cnt[1] + lb) * cnt[2] + lc] == 2) {
                            next[(size_t)b * probes[2] + c] = 2; /* in an interior particle's cube, counted already */
                            continue;
                        }
                    }
                    q[3 * m] = x;
                    q[3 * m + 1] = y;
                    q[3 * m + 2] = z;
                    m++;
                }
            if (o->shape_type == CSM_SHAPE_MESH) csm_shape_inside_many(sh, q, m, in);
            else
                for (int32_t k = 0; k < m; k++) in[k] = (unsigned char)csm_shape_inside(sh, &q[3 * k]);
            for (size_t k = 0, t = 0; k < slab; k++)
                if (next[k] != 2) next[k] = in[t++] ? 1 : 0;
        }
        if (a < 0) continue;
        const unsigned char *prev = flag, *cur = flag + slab;
        double x = -sh->half[0] + (a + 0.5) * step[0];
        for (int32_t b = 0; b < probes[1]; b++)
            for (int32_t c = 0; c < probes[2]; c++) {
                size_t k = (size_t)b * probes[2] + c;
                if (cur[k] != 1) continue;
                double p[3] = {x, -sh->half[1] + (b + 0.5) * step[1], -sh->half[2] + (c + 0.5) * step[2]};
                int32_t j = nearest_point(&g, pts, p);
                if (j < 0) continue;
                vol[j] += dv;
                if (cell) { /* the probe's cube: its centre's moments and its own step^2 / 12 */
                    double *m = &cell[9 * j], d[3] = {p[0] - pts[3 * j], p[1] - pts[3 * j + 1], p[2] - pts[3 * j + 2]};
                    for (int e = 0; e < 3; e++) {
                        m[e] += dv * d[e];
                        m[3 + e] += dv * (d[e] * d[e] + step[e] * step[e] / 12.0);
                        m[6 + e] += dv * d[e] * d[(e + 1) % 3];
                    }
                }
                if (!area) continue;
                /* the probe cell's faces towards an outside neighbour: the surface's vector area in
                   staircase form, whose sum over a patch is the patch's own (it depends only on the
                   patch's rim) */
                int outside[6] = {
                    a == 0 || !prev[k], a + 1 == probes[0] || !flag[2 * slab + k],
                    b == 0 || !cur[k - probes[2]], b + 1 == probes[1] || !cur[k + probes[2]],
                    c == 0 || !cur[k - 1], c + 1 == probes[2] || !cur[k + 1],
                };
                for (int d = 0; d < 3; d++) {
                    double face = step[(d + 1) % 3] * step[(d + 2) % 3];
                    area[3 * j + d] += face * (outside[2 * d + 1] - outside[2 * d]);
                }
            }
    }
    free(q);
    free(in);
    free(flag);
    csm_grid_free(&g);
    free(state);
    free(at);
    /* a particle no probe reached (a cell thinner than the probes) still has a little volume */
    for (int32_t i = 0; i < n; i++)
        if (!(vol[i] > 0)) vol[i] = 0.5 * dv;
    for (int32_t i = 0; cell && i < n; i++) { /* the sums to the centroid and the moment about it */
        double *m = &cell[9 * i], V = vol[i], c[3];
        for (int e = 0; e < 3; e++) c[e] = m[e] / V;
        for (int e = 0; e < 3; e++) {
            m[e] = c[e];
            m[3 + e] = fmax(m[3 + e] / V - c[e] * c[e], 0.0);
            m[6 + e] = m[6 + e] / V - c[e] * c[(e + 1) % 3];
        }
    }
    return 0;
oom:
    free(state);
    free(at);
    return -1;
}

void csm_cell_points(const double cell[9], double out[3 * CSM_CELL_POINTS])
{
    double M[9] = {cell[3], cell[6], cell[8], cell[6], cell[4], cell[7], cell[8], cell[7], cell[5]}, lam[3];
    if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', 3, M, 3, lam) != 0) lam[0] = lam[1] = lam[2] = 0.0;
    for (int e = 0; e < 3; e++) { /* column e of M is the axis of lam[e] */
        double r = sqrt(3.0 * fmax(lam[e], 0.0));
        for (int d = 0; d < 3; d++) {
            out[3 * (2 * e) + d] = cell[d] + r * M[3 * d + e];
            out[3 * (2 * e + 1) + d] = cell[d] - r * M[3 * d + e];
        }
    }
}
