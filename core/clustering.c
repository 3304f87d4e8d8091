#include "clustering.h"
#include "error.h"

#include "geometry.h"
#include "rng.h"
#include "simd.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void csm_builder_init(csm_cluster_builder *b)
{
    memset(b, 0, sizeof *b);
    b->cap_k = 64;
    b->cap_m = 1024;
    b->offset = calloc((size_t)b->cap_k + 1, sizeof *b->offset);
    b->member = malloc(sizeof *b->member * (size_t)b->cap_m);
    b->weight = malloc(sizeof *b->weight * (size_t)b->cap_m);
    if (!b->offset || !b->member || !b->weight) CSM_OUT_OF_MEMORY();
}

void csm_builder_free(csm_cluster_builder *b)
{
    free(b->offset);
    free(b->member);
    free(b->weight);
    memset(b, 0, sizeof *b);
}

void csm_builder_begin(csm_cluster_builder *b)
{
    if (b->k + 1 >= b->cap_k) {
        b->cap_k *= 2;
        b->offset = realloc(b->offset, sizeof *b->offset * ((size_t)b->cap_k + 1));
        if (!b->offset) CSM_OUT_OF_MEMORY();
    }
    b->k++;
    b->offset[b->k] = b->m;
}

void csm_builder_add(csm_cluster_builder *b, int32_t particle, double weight)
{
    if (b->m == b->cap_m) {
        b->cap_m *= 2;
        b->member = realloc(b->member, sizeof *b->member * (size_t)b->cap_m);
        b->weight = realloc(b->weight, sizeof *b->weight * (size_t)b->cap_m);
        if (!b->member || !b->weight) CSM_OUT_OF_MEMORY();
    }
    b->member[b->m] = particle;
    b->weight[b->m] = weight;
    b->m++;
    b->offset[b->k] = b->m;
}

typedef struct member_weight {
    int32_t member;
    double weight;
} member_weight;

static int cmp_member(const void *a, const void *b)
{
    const member_weight *x = a, *y = b;
    return (x->member > y->member) - (x->member < y->member);
}

void csm_builder_end(csm_cluster_builder *b)
{
    if (b->k == 0) return;
    int32_t lo = b->offset[b->k - 1], hi = b->offset[b->k];
    member_weight *mw = malloc(sizeof *mw * (size_t)(hi - lo + 1));
    if (!mw) CSM_OUT_OF_MEMORY();
    for (int32_t j = lo; j < hi; j++) mw[j - lo] = (member_weight){b->member[j], b->weight[j]};
    qsort(mw, (size_t)(hi - lo), sizeof *mw, cmp_member);
    for (int32_t j = lo; j < hi; j++) {
        b->member[j] = mw[j - lo].member;
        b->weight[j] = mw[j - lo].weight;
    }
    free(mw);
}

void csm_builder_equal_weights(csm_cluster_builder *b, int32_t first, int32_t count)
{
    int32_t *n = calloc((size_t)count + 1, sizeof *n);
    if (!n) CSM_OUT_OF_MEMORY();
    for (int32_t j = 0; j < b->m; j++)
        if (b->member[j] >= first && b->member[j] < first + count) n[b->member[j] - first]++;
    for (int32_t j = 0; j < b->m; j++)
        if (b->member[j] >= first && b->member[j] < first + count) b->weight[j] = 1.0 / n[b->member[j] - first];
    free(n);
}

static int32_t piece_of(int32_t *parent, int32_t c)
{
    while (parent[c] != c) c = parent[c] = parent[parent[c]];
    return c;
}

/* The pieces of clusters [k0, k): parent[c - k0] for union-find, and owner[i] the first cluster
   (absolute index) holding particle first + i (-1: none). */
static void builder_pieces(const csm_cluster_builder *b, int32_t k0, int32_t first, int32_t count, int32_t *parent,
                           int32_t *owner)
{
    for (int32_t c = k0; c < b->k; c++) parent[c - k0] = c - k0;
    for (int32_t i = 0; i < count; i++) owner[i] = -1;
    for (int32_t c = k0; c < b->k; c++)
        for (int32_t j = b->offset[c]; j < b->offset[c + 1]; j++) {
            int32_t i = b->member[j] - first;
            if (owner[i] < 0) {
                owner[i] = c;
                continue;
            }
            int32_t x = piece_of(parent, owner[i] - k0), y = piece_of(parent, c - k0);
            if (x != y) parent[x] = y;
        }
}

int csm_builder_connect(csm_cluster_builder *b, int32_t k0, const double *rest, int32_t first, int32_t count,
                        int32_t *piece_clusters, int32_t *piece_particles)
{
    int32_t nk = b->k - k0, joined = 0;
    if (nk < 2) return 0;
    int32_t *parent = malloc(sizeof *parent * (size_t)nk), *owner = malloc(sizeof *owner * (size_t)count);
    int32_t *size = calloc((size_t)nk, sizeof *size);
    if (!parent || !owner || !size) CSM_OUT_OF_MEMORY();
    *piece_clusters = *piece_particles = 0;
    for (;;) {
        builder_pieces(b, k0, first, count, parent, owner);
        memset(size, 0, sizeof *size * (size_t)nk);
        for (int32_t i = 0; i < count; i++)
            if (owner[i] >= 0) size[piece_of(parent, owner[i] - k0)]++;
        int32_t big = -1, small = -1;
        for (int32_t c = 0; c < nk; c++)
            if (piece_of(parent, c) == c && (big < 0 || size[c] > size[big])) big = c;
        for (int32_t c = 0; c < nk; c++)
            if (piece_of(parent, c) == c && c != big && (small < 0 || size[c] < size[small])) small = c;
        if (small < 0) break; /* one body */
        /* the piece's particle p nearest to a particle outside it */
        int32_t p = -1, q = -1;
        double best = INFINITY;
        for (int32_t i = 0; i < count; i++) {
            if (owner[i] < 0 || piece_of(parent, owner[i] - k0) != small) continue;
            for (int32_t o = 0; o < count; o++) {
                if (owner[o] < 0 || piece_of(parent, owner[o] - k0) == small) continue;
                const double *a = &rest[3 * (size_t)(first + i)], *z = &rest[3 * (size_t)(first + o)];
                double d2 = (a[0] - z[0]) * (a[0] - z[0]) + (a[1] - z[1]) * (a[1] - z[1]) + (a[2] - z[2]) * (a[2] - z[2]);
                if (d2 < best) best = d2, p = i, q = o;
            }
        }
        if (p < 0 || q < 0) break;
        if (!joined || size[small] < *piece_particles) {
            *piece_particles = size[small];
            *piece_clusters = 0;
            for (int32_t c = 0; c < nk; c++) *piece_clusters += piece_of(parent, c) == small;
        }
        /* the CSM_JOIN particles outside the piece nearest to p join p's cluster */
        int32_t c = owner[p], add[CSM_JOIN], nadd = 0;
        double dist[CSM_JOIN];
        const double *a = &rest[3 * (size_t)(first + p)];
        for (int32_t o = 0; o < count; o++) {
            if (owner[o] < 0 || piece_of(parent, owner[o] - k0) == small) continue;
            const double *z = &rest[3 * (size_t)(first + o)];
            double d2 = (a[0] - z[0]) * (a[0] - z[0]) + (a[1] - z[1]) * (a[1] - z[1]) + (a[2] - z[2]) * (a[2] - z[2]);
            int32_t at = nadd < CSM_JOIN ? nadd++ : CSM_JOIN;
            if (at == CSM_JOIN && !(d2 < dist[CSM_JOIN - 1])) continue;
            if (at == CSM_JOIN) at = CSM_JOIN - 1;
            while (at > 0 && dist[at - 1] > d2) { /* insertion, nearest first */
                dist[at] = dist[at - 1];
                add[at] = add[at - 1];
                at--;
            }
            dist[at] = d2;
            add[at] = first + o;
        }
        /* their memberships: the mean of each one's weights, all of them scaled to keep the sum */
        for (int32_t t = 0; t < nadd; t++) {
            double sum = 0;
            int32_t n = 0;
            for (int32_t j = b->offset[k0]; j < b->m; j++)
                if (b->member[j] == add[t]) sum += b->weight[j], n++;
            double w = n ? sum / n : 1.0, keep = n ? sum / (sum + w) : 1.0;
            for (int32_t j = b->offset[k0]; j < b->m; j++)
                if (b->member[j] == add[t]) b->weight[j] *= keep;
            /* insert into cluster c: shift the memberships after it by one */
            int32_t at = b->offset[c + 1]; /* before the room is made: c may be the last cluster */
            csm_builder_add(b, add[t], 0.0); /* room at the end */
            memmove(&b->member[at + 1], &b->member[at], sizeof *b->member * (size_t)(b->m - 1 - at));
            memmove(&b->weight[at + 1], &b->weight[at], sizeof *b->weight * (size_t)(b->m - 1 - at));
            b->member[at] = add[t];
            b->weight[at] = w * keep;
            for (int32_t e = c + 1; e <= b->k; e++) b->offset[e]++;
            b->offset[b->k] = b->m;
        }
        /* keep cluster c's members sorted */
        int32_t lo = b->offset[c], hi = b->offset[c + 1];
        for (int32_t j = lo + 1; j < hi; j++)
            for (int32_t i = j; i > lo && b->member[i - 1] > b->member[i]; i--) {
                int32_t tm = b->member[i];
                double tw = b->weight[i];
                b->member[i] = b->member[i - 1], b->weight[i] = b->weight[i - 1];
                b->member[i - 1] = tm, b->weight[i - 1] = tw;
            }
        joined++;
    }
    free(parent);
    free(owner);
    free(size);
    return joined;
}

int csm_clusters_from_builder(csm_clusters *c, const csm_cluster_builder *b, const csm_particles *p)
{
    if (csm_clusters_alloc(c, b->k, b->m, p->n)) return -1;
    memcpy(c->offset, b->offset, sizeof *c->offset * ((size_t)b->k + 1));
    memcpy(c->member, b->member, sizeof *c->member * (size_t)b->m);
    memcpy(c->weight, b->weight, sizeof *c->weight * (size_t)b->m);
    return csm_clusters_finish(c, p);
}

static void stat_add(double s[3], double x, int first)
{
    s[0] = first || x < s[0] ? x : s[0];
    s[2] = first || x > s[2] ? x : s[2];
    s[1] += x;
}

void csm_cluster_stats_compute(const csm_clusters *c, int32_t n, csm_cluster_stats *s)
{
    memset(s, 0, sizeof *s);
    s->count = c->k;
    for (int32_t k = 0; k < c->k; k++) {
        stat_add(s->members, c->offset[k + 1] - c->offset[k], k == 0);
        stat_add(s->width, c->width[k], k == 0);
    }
    for (int32_t i = 0; i < n; i++) stat_add(s->per_particle, c->poff[i + 1] - c->poff[i], i == 0);
    if (c->k > 0) {
        s->members[1] /= c->k;
        s->width[1] /= c->k;
    }
    if (n > 0) s->per_particle[1] /= n;
}

/* ------------------------------------------------------------------------------------------ */
/* Fuzzy c-means: Jones et al. 2015, Falkenstein 2017 Sec 2.3.1 and Sec 3.2.2. The fuzzy_cmeans */
/* clustering (clustering/fuzzy_cmeans.c) and the embedded reclusterer both run it.             */

static inline double fcm_d2(const double *x, const double *z)
{
    double dx = x[0] - z[0], dy = x[1] - z[1], dz = x[2] - z[2];
    return dx * dx + dy * dy + dz * dz;
}

/* r = (d2_min / d2)^e, at most 1; e = 1 (m = 2, the usual choice) needs no pow */
static inline double fcm_ratio(double dmin, double d2, double expo)
{
    return expo == 1.0 ? dmin / d2 : pow(dmin / d2, expo);
}

/* Memberships of one point to k centres, written over its previous row u[k]; returns the
   largest change. Ignored centres get no membership. Distances are recomputed in each pass
   rather than stored, so rows can be updated in parallel without scratch. */
static double fcm_memberships(const double *x, const double *centres, const unsigned char *state, int32_t k,
                              double expo, double *u)
{
    int32_t at = -1;
    double dmin = INFINITY;
    for (int32_t c = 0; c < k; c++) {
        if (state && state[c] == CSM_FCM_IGNORED) continue;
        double d = fcm_d2(x, &centres[3 * c]);
        if (d == 0.0 && at < 0) at = c;
        if (d < dmin) dmin = d;
    }
    /* u_c = 1 / sum_j (d_c / d_j)^(2/(m-1)) = r_c / sum_j r_j with r_c = (d2_min / d2_c)^e,
       e = 1/(m-1): ratios at most 1, so no overflow for m near 1 */
    double sum = 0;
    if (at < 0)
        for (int32_t c = 0; c < k; c++)
            if (!(state && state[c] == CSM_FCM_IGNORED)) sum += fcm_ratio(dmin, fcm_d2(x, &centres[3 * c]), expo);
    double change = 0;
    for (int32_t c = 0; c < k; c++) {
        double v;
        if (state && state[c] == CSM_FCM_IGNORED) v = 0.0;
        else if (at >= 0) v = c == at ? 1.0 : 0.0; /* on a centre: all of it */
        else v = sum > 0 ? fcm_ratio(dmin, fcm_d2(x, &centres[3 * c]), expo) / sum : 0.0;
        double dv = fabs(v - u[c]);
        if (dv > change) change = dv;
        u[c] = v;
    }
    return change;
}

/* The centres in lanes for the m = 2 rows: coordinates apart, padded to whole lanes, live 0 for
   the padding and for ignored centres. */
typedef struct fcm_lanes {
    int32_t k, kp;
    double *cx, *cy, *cz, *live;
} fcm_lanes;

static void fcm_lanes_make(fcm_lanes *z, const double *centres, int32_t k, const unsigned char *state)
{
    z->k = k;
    z->kp = csm_lanes_round(k);
    z->cx = calloc(4 * (size_t)z->kp, sizeof *z->cx);
    if (!z->cx) CSM_OUT_OF_MEMORY();
    z->cy = z->cx + z->kp;
    z->cz = z->cy + z->kp;
    z->live = z->cz + z->kp;
    for (int32_t c = 0; c < k; c++) {
        z->cx[c] = centres[3 * c];
        z->cy[c] = centres[3 * c + 1];
        z->cz[c] = centres[3 * c + 2];
        z->live[c] = !(state && state[c] == CSM_FCM_IGNORED);
    }
}

/* One lane block, centres c to c + 7, of the m = 2 row's first half for point x:
   inv[c + l] = 1 / d^2 (0 for dead centres and padding), into s the lanes' partial sums of inv and
   into lo their minima of the live d^2. fcm_row_m2 runs it over the row, fcm_sums_m2 beside
   another point's sums. */
static inline __attribute__((always_inline)) void fcm_inverse_block(const double x[3], const fcm_lanes *z, int32_t c,
                                                                     double *restrict inv, double s[CSM_LANES],
                                                                     double lo[CSM_LANES])
{
    const double *restrict cx = z->cx, *restrict cy = z->cy, *restrict cz = z->cz, *restrict live = z->live;
#pragma omp simd
    for (int l = 0; l < CSM_LANES; l++) {
        double dx = x[0] - cx[c + l], dy = x[1] - cy[c + l], dz = x[2] - cz[c + l];
        double d = dx * dx + dy * dy + dz * dz;
        double r = live[c + l] > 0 ? 1.0 / d : 0.0;
        double dl = live[c + l] > 0 ? d : INFINITY;
        lo[l] = dl < lo[l] ? dl : lo[l];
        inv[c + l] = r;
        s[l] += r;
    }
}

/* The lanes' partial sums and minima of fcm_inverse_block to the row's total and dmin; whether
   the row can be taken this way (x on no centre, a live one, 1 / d^2 in the range of a double). */
static inline __attribute__((always_inline)) int fcm_inverse_total(const double s[CSM_LANES],
                                                                   const double lo[CSM_LANES], double *total)
{
    double dmin = INFINITY;
    *total = csm_lanes_sum(s);
    for (int l = 0; l < CSM_LANES; l++) dmin = lo[l] < dmin ? lo[l] : dmin;
    return dmin > 0 && *total >= DBL_MIN && *total < INFINITY;
}

static inline __attribute__((always_inline)) void fcm_lanes_start(double s[CSM_LANES], double lo[CSM_LANES])
{
    for (int l = 0; l < CSM_LANES; l++) s[l] = 0, lo[l] = INFINITY;
}

/* The memberships of point x (of mass `mass`) for m = 2 into u[k], written over its previous
   row, and with acc its share of the centres' sums [4][kp]; returns the largest change.
   u_ic = 1 / sum_j (d_ic / d_ij)^2 (Jones 2015) is taken as (1 / d_ic^2) / sum_j (1 / d_ij^2):
   one division per centre, in lanes (simd.h), so every instruction set gives the same bits.
   Returns -1, writing nothing, when x sits on a centre, no centre is live, or 1 / d^2 leaves the
   range of a double; fcm_memberships then takes the row. inv: scratch [kp]. */
CSM_CLONES static double fcm_row_m2(const double x[3], double mass, const fcm_lanes *z, double *restrict inv,
                                    double *restrict u, double *restrict acc)
{
    double s[CSM_LANES], lo[CSM_LANES], total;
    fcm_lanes_start(s, lo);
    for (int32_t c = 0; c < z->kp; c += CSM_LANES) fcm_inverse_block(x, z, c, inv, s, lo);
    if (!fcm_inverse_total(s, lo, &total)) return -1;
    double rs = 1.0 / total, change = 0;
    if (!acc) {
#pragma omp simd reduction(max : change)
        for (int32_t c = 0; c < z->k; c++) {
            double v = inv[c] * rs, dv = fabs(v - u[c]);
            change = dv > change ? dv : change;
            u[c] = v;
        }
        return change;
    }
    /* the row's share of the centres' sums: W_c += mass u_c^2, S_c += mass u_c^2 x */
    double *restrict W = acc, *restrict Sx = acc + z->kp, *restrict Sy = acc + 2 * z->kp, *restrict Sz = acc + 3 * z->kp;
#pragma omp simd reduction(max : change)
    for (int32_t c = 0; c < z->k; c++) {
        double v = inv[c] * rs, dv = fabs(v - u[c]);
        change = dv > change ? dv : change;
        u[c] = v;
        double wt = mass * (v * v);
        W[c] += wt;
        Sx[c] += wt * x[0];
        Sy[c] += wt * x[1];
        Sz[c] += wt * x[2];
    }
    return change;
}

/* One point's memberships (and, with acc, its share of the centres' sums [4][kp]); returns the
   largest change of its row. */
static double fcm_row(const double x[3], double mass, const fcm_lanes *z, const double *centres,
                      const unsigned char *state, double m, double *inv, double *u, double *acc)
{
    double change = m == 2.0 ? fcm_row_m2(x, mass, z, inv, u, acc) : -1;
    if (change >= 0) return change;
    change = fcm_memberships(x, centres, state, z->k, 1.0 / (m - 1.0), u);
    if (acc) {
        for (int32_t c = 0; c < z->k; c++) {
            double wt = mass * (m == 2.0 ? u[c] * u[c] : pow(u[c], m));
            acc[c] += wt;
            for (int d = 0; d < 3; d++) acc[(d + 1) * z->kp + c] += wt * x[d];
        }
    }
    return change;
}

/* The centres' sums of points [i0, i1) for m = 2 into acc [4][kp], with no row kept: what
   fcm_row_m2 adds point after point, in a software pipeline. The loop that adds point i's share
   also takes point i + 1's divisions, so the divider, which bounds the row, works while the sums
   are added. Each point's operations and the sums' order are fcm_row_m2's, so are the bits. A
   point it would refuse goes to fcm_row. inv: scratch [2 kp]; row: scratch [k]. */
CSM_CLONES static void fcm_sums_m2(const double *x, const double *mass, int32_t i0, int32_t i1, const fcm_lanes *z,
                                   const double *centres, const unsigned char *state, double *restrict inv,
                                   double *restrict row, double *restrict acc)
{
    int32_t kp = z->kp;
    double *restrict W = acc, *restrict Sx = acc + kp, *restrict Sy = acc + 2 * kp, *restrict Sz = acc + 3 * kp;
    double *cur = inv, *nxt = inv + kp, s[CSM_LANES], lo[CSM_LANES], total;
    fcm_lanes_start(s, lo);
    for (int32_t c = 0; c < kp; c += CSM_LANES) fcm_inverse_block(&x[3 * i0], z, c, cur, s, lo);
    int ok = fcm_inverse_total(s, lo, &total);
    for (int32_t i = i0; i < i1; i++) {
        const double *xi = &x[3 * i], *xn = &x[3 * (i + 1 < i1 ? i + 1 : i)]; /* the last takes its own again */
        fcm_lanes_start(s, lo);
        if (ok) {
            double rs = 1.0 / total, wm = mass[i];
            for (int32_t c = 0; c < kp; c += CSM_LANES) {
                fcm_inverse_block(xn, z, c, nxt, s, lo);
                /* padding lanes add 0: their inverse is 0 */
#pragma omp simd
                for (int l = 0; l < CSM_LANES; l++) {
                    double v = cur[c + l] * rs, wt = wm * (v * v);
                    W[c + l] += wt;
                    Sx[c + l] += wt * xi[0];
                    Sy[c + l] += wt * xi[1];
                    Sz[c + l] += wt * xi[2];
                }
            }
        } else {
            fcm_row(xi, mass[i], z, centres, state, 2.0, cur, row, acc);
            for (int32_t c = 0; c < kp; c += CSM_LANES) fcm_inverse_block(xn, z, c, nxt, s, lo);
        }
        ok = fcm_inverse_total(s, lo, &total);
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
}

/* The points in blocks of at least 64 and at most 256 blocks: the centres' sums are taken per
   block, each in point order, then over the blocks in order, so their bits do not depend on the
   thread count. */
static int32_t fcm_blocks(int32_t count)
{
    int32_t nb = (count + 63) / 64;
    return nb > 256 ? 256 : nb < 1 ? 1 : nb;
}

static int32_t fcm_block_start(int32_t count, int32_t nb, int32_t b) { return (int32_t)((int64_t)count * b / nb); }

/* Memberships of every point (the centres' sums into acc[nb][4][kp] unless NULL); returns the
   largest change. */
static double fcm_rows(const double *x, const double *mass, int32_t count, const double *centres, int32_t k,
                       const unsigned char *state, double m, double *u, double *acc)
{
    fcm_lanes z;
    fcm_lanes_make(&z, centres, k, state);
    int32_t nb = fcm_blocks(count);
    double change = 0;
#pragma omp parallel reduction(max : change)
    {
        double *inv = malloc(sizeof *inv * (size_t)z.kp);
        if (!inv) CSM_OUT_OF_MEMORY();
#pragma omp for schedule(static)
        for (int32_t b = 0; b < nb; b++) {
            double *a = acc ? &acc[(size_t)b * 4 * (size_t)z.kp] : NULL;
            for (int32_t i = fcm_block_start(count, nb, b); i < fcm_block_start(count, nb, b + 1); i++) {
                double dv = fcm_row(&x[3 * i], mass[i], &z, centres, state, m, inv, &u[(size_t)i * (size_t)k], a);
                change = dv > change ? dv : change;
            }
        }
        free(inv);
    }
    free(z.cx);
    return change;
}

/* The free centres to the mass- and u^m-weighted means of the points, from their sums per block
   acc[nb][4][kp] taken in block order. */
static void fcm_move_centres(const double *acc, int32_t nb, int32_t k, const unsigned char *state, double *centres)
{
    int32_t kp = csm_lanes_round(k);
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) {
        if (state && state[c] != CSM_FCM_FREE) continue;
        double s[4] = {0, 0, 0, 0};
        for (int32_t b = 0; b < nb; b++)
            for (int d = 0; d < 4; d++) s[d] += acc[((size_t)b * 4 + (size_t)d) * (size_t)kp + (size_t)c];
        if (!(s[0] > 0)) continue;
        for (int d = 0; d < 3; d++) centres[3 * c + d] = s[d + 1] / s[0];
    }
}

/* The length of the centres' sums per block, acc[nb][4][kp]. */
static size_t fcm_acc_len(int32_t count, int32_t k)
{
    return (size_t)fcm_blocks(count) * 4 * (size_t)csm_lanes_round(k);
}

static double *fcm_acc(int32_t count, int32_t k)
{
    double *acc = calloc(fcm_acc_len(count, k), sizeof *acc);
    if (!acc) CSM_OUT_OF_MEMORY();
    return acc;
}

/* One fuzzy c-means update of Jones 2015, with held centres for the cluster optimisation of
   Falkenstein Sec 3.2.2: memberships from the centres, then the free centres move to the mass-
   and u^m-weighted means of the points. */
double csm_fcm_update(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                      const unsigned char *state, double m, double *u)
{
    double *acc = fcm_acc(count, k);
    double change = fcm_rows(x, mass, count, centres, k, state, m, u, acc);
    fcm_move_centres(acc, fcm_blocks(count), k, state, centres);
    free(acc);
    return change;
}

/* The centres' sums of one update into acc[nb][4][kp], as fcm_rows takes them, with no row kept:
   memberships are only compared between updates, so each row goes to scratch, and the rows from
   the previous centres `prev` are recomputed for the comparison instead of being read back from
   a count x k array (the beam's 5,312 x 200 rows are 8.5 MB a pass). The comparison stops at the
   first membership that moved by more than tolerance, which is all it takes far from
   convergence. Returns 1 when none did (csm_fcm_update's change <= tolerance), 0 otherwise or
   when prev is NULL. */
static int fcm_sums_settled(const double *x, const double *mass, int32_t count, const double *centres,
                            const double *prev, int32_t k, const unsigned char *state, double m, double tolerance,
                            double *acc)
{
    fcm_lanes z, zp = {0};
    fcm_lanes_make(&z, centres, k, state);
    if (prev) fcm_lanes_make(&zp, prev, k, state);
    int32_t nb = fcm_blocks(count);
    int moved = !prev;
#pragma omp parallel
    {
        double *inv = calloc(2 * (size_t)z.kp + (size_t)k, sizeof *inv); /* the row compared with: set */
        if (!inv) CSM_OUT_OF_MEMORY();
        double *row = inv + 2 * z.kp;
#pragma omp for schedule(static)
        for (int32_t b = 0; b < nb; b++) {
            double *a = &acc[(size_t)b * 4 * (size_t)z.kp];
            int32_t end = fcm_block_start(count, nb, b + 1);
            for (int32_t i = fcm_block_start(count, nb, b); i < end; i++) {
                int seen;
#pragma omp atomic read
                seen = moved;
                if (seen && m == 2.0) { /* no row is compared any more: the rest of the block's sums */
                    fcm_sums_m2(x, mass, i, end, &z, centres, state, inv, row, a);
                    break;
                }
                if (!seen) fcm_row(&x[3 * i], mass[i], &zp, prev, state, m, inv, row, NULL);
                double dv = fcm_row(&x[3 * i], mass[i], &z, centres, state, m, inv, row, a);
                if (!seen && dv > tolerance) {
#pragma omp atomic write
                    moved = 1;
                }
            }
        }
        free(inv);
    }
    free(z.cx);
    free(zp.cx);
    return !moved;
}

/* csm_fcm_iterate when exactly one centre is free and the rest are held or ignored (the cluster
   optimisation of Falkenstein Sec 3.2.2, a new centre among fixed neighbours). A held centre
   never moves, so each point's distances to them are summed once: with a the nearest held
   distance and H = sum_held (a / d_c)^e, the free centre at distance f gets
   u_f = (m0 / f)^e / (H (m0 / a)^e + (m0 / f)^e), m0 = min(a, f), and every held membership is
   its fixed share times g = (m0 / a)^e / (that sum), the largest of them (at the nearest held
   centre) being g. An update then costs O(points) instead of O(points k). Returns -1 when out
   of memory (the caller runs the general update). */
static int fcm_iterate_one_free(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                                const unsigned char *state, int32_t free_c, double m, double tolerance,
                                int max_iterations)
{
    double *aux = malloc(4 * (size_t)(count ? count : 1) * sizeof *aux); /* a, H, u_f, g per point */
    if (!aux) return -1;
    double expo = 1.0 / (m - 1.0);
    for (int32_t i = 0; i < count; i++) {
        double a = INFINITY, H = 0;
        for (int32_t c = 0; c < k; c++)
            if (state[c] == CSM_FCM_HELD) a = fmin(a, fcm_d2(&x[3 * i], &centres[3 * c]));
        if (a > 0 && a < INFINITY)
            for (int32_t c = 0; c < k; c++)
                if (state[c] == CSM_FCM_HELD) H += fcm_ratio(a, fcm_d2(&x[3 * i], &centres[3 * c]), expo);
        aux[4 * i] = a; /* 0: on a held centre, which takes all of it; infinite: none held */
        aux[4 * i + 1] = H;
    }
    int it = 0;
    while (it < max_iterations) {
        const double *cf = &centres[3 * free_c];
        double change = 0, W = 0, S[3] = {0, 0, 0};
        for (int32_t i = 0; i < count; i++) {
            double a = aux[4 * i], H = aux[4 * i + 1], f = fcm_d2(&x[3 * i], cf), uf, g;
            if (a == 0) {
                uf = 0, g = 1;
            } else if (f == 0 || a == INFINITY) {
                uf = 1, g = 0;
            } else {
                double m0 = fmin(a, f), held = fcm_ratio(m0, a, expo), fr = fcm_ratio(m0, f, expo);
                double total = H * held + fr;
                uf = fr / total;
                g = held / total;
            }
            if (it > 0) change = fmax(change, fmax(fabs(uf - aux[4 * i + 2]), fabs(g - aux[4 * i + 3])));
            aux[4 * i + 2] = uf;
            aux[4 * i + 3] = g;
            double wt = mass[i] * (m == 2.0 ? uf * uf : pow(uf, m));
            W += wt;
            for (int d = 0; d < 3; d++) S[d] += wt * x[3 * i + d];
        }
        if (W > 0)
            for (int d = 0; d < 3; d++) centres[3 * free_c + d] = S[d] / W;
        if (it++ > 0 && change <= tolerance) break;
    }
    free(aux);
    return it;
}

int csm_fcm_iterate(const double *x, const double *mass, int32_t count, double *centres, int32_t k,
                    const unsigned char *state, double m, double tolerance, int max_iterations, double *u)
{
    int it = 0, nfree = 0;
    int32_t free_c = -1;
    for (int32_t c = 0; state && c < k; c++)
        if (state[c] == CSM_FCM_FREE) nfree++, free_c = c;
    if (nfree == 1) it = fcm_iterate_one_free(x, mass, count, centres, k, state, free_c, m, tolerance, max_iterations);
    if (it <= 0) {
        /* csm_fcm_update until its change is at most tolerance, the first excepted (it compares
           with whatever u held), with the same centres and bits but no u until the end */
        it = 0;
        double *acc = fcm_acc(count, k), *prev = malloc(sizeof *prev * 3 * (size_t)k);
        if (!prev) CSM_OUT_OF_MEMORY();
        while (it < max_iterations) {
            memset(acc, 0, sizeof *acc * fcm_acc_len(count, k));
            int settled = fcm_sums_settled(x, mass, count, centres, it > 0 ? prev : NULL, k, state, m, tolerance, acc);
            memcpy(prev, centres, sizeof *prev * 3 * (size_t)k);
            fcm_move_centres(acc, fcm_blocks(count), k, state, centres);
            if (it++ > 0 && settled) break;
        }
        free(acc);
        free(prev);
    }
    /* memberships that match the final centres; the change from what u held is not wanted, and u
       may hold nothing yet */
    memset(u, 0, sizeof *u * (size_t)count * (size_t)k);
    fcm_rows(x, mass, count, centres, k, state, m, u, NULL);
    return it;
}
