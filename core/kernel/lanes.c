/* The kernel's vector lanes and threads: clusters side by side in blocks of CSM_LANES (solver.lanes),
   the blocks' moment sums, each thread's share of the clusters, and the thread count. */

#include "kernel_internal.h"

#include <stdlib.h>

/* AUTO takes a block's clusters one per lane when its longest has at most BLOCK_LONGEST members
   and its padding adds at most a quarter to its memberships, in a clustering of at most
   BLOCK_MEMBERSHIPS memberships; else MEMBER_LANES. Measured (docs/performance.md): faster by 2 to
   5 % on clusters of about 24 members at 38 k to 375 k memberships, slower by 3 to 4 % at 3.7 M,
   and no faster on clusters of about 100 members and more. */
#define BLOCK_LONGEST 64
#define BLOCK_MEMBERSHIPS (1 << 20)

static int32_t block_slots(const csm_clusters *C, int32_t b, int lanes)
{
    int32_t c0 = CSM_LANES * b, c1 = c0 + CSM_LANES < C->k ? c0 + CSM_LANES : C->k, longest = 0;
    for (int32_t c = c0; c < c1; c++)
        if (C->offset[c + 1] - C->offset[c] > longest) longest = C->offset[c + 1] - C->offset[c];
    int64_t held = C->offset[c1] - C->offset[c0];
    if (lanes == CSM_LANES_MEMBERS || longest == 0) return 0;
    if (lanes == CSM_LANES_AUTO && C->m > BLOCK_MEMBERSHIPS) return 0;
    if (lanes == CSM_LANES_AUTO && (longest > BLOCK_LONGEST || 4 * (int64_t)CSM_LANES * longest > 5 * held)) return 0;
    return longest;
}

/* The blocks of w's clusters, rebuilt when they changed (serial: before a parallel region); NULL
   when memory runs out, and the fits then keep MEMBER_LANES. */
const csm_cluster_blocks *csm_kernel_blocks(csm_world *w)
{
    csm_clusters *C = &w->C;
    csm_cluster_blocks *B = C->blocks;
    if (B && B->epoch == C->epoch && B->k == C->k && B->m == C->m && B->lanes == w->lanes) return B;
    csm_cluster_blocks_free(B);
    C->blocks = B = calloc(1, sizeof *B);
    if (!B) return NULL;
    B->epoch = C->epoch, B->k = C->k, B->m = C->m, B->lanes = w->lanes;
    B->nb = (C->k + CSM_LANES - 1) / CSM_LANES;
    B->first = malloc(sizeof *B->first * (size_t)(B->nb + 1));
    if (!B->first) goto fail;
    B->first[0] = 0;
    for (int32_t b = 0; b < B->nb; b++) {
        int32_t slots = block_slots(C, b, w->lanes);
        if (slots > INT32_MAX / (3 * CSM_LANES) - B->first[b]) goto fail;
        B->first[b + 1] = B->first[b] + slots;
    }
    size_t all = (size_t)CSM_LANES * (size_t)B->first[B->nb] + 1;
    B->member = malloc(sizeof *B->member * all);
    B->wmass = malloc(sizeof *B->wmass * all);
    B->weight = malloc(sizeof *B->weight * all);
    B->p = malloc(sizeof *B->p * 3 * all);
    if (!B->member || !B->wmass || !B->weight || !B->p) goto fail;
    for (int32_t b = 0; b < B->nb; b++)
        for (int32_t s = B->first[b]; s < B->first[b + 1]; s++)
            for (int l = 0; l < CSM_LANES; l++) {
                int32_t c = CSM_LANES * b + l, lo = c < C->k ? C->offset[c] : 0, hi = c < C->k ? C->offset[c + 1] : 0;
                int32_t j = lo + (s - B->first[b]), o = CSM_LANES * s + l;
                int live = j < hi;
                if (!live) j = hi - 1;
                B->member[o] = lo < hi ? C->member[j] : 0;
                B->wmass[o] = live ? C->wmass[j] : 0.0;
                B->weight[o] = live ? C->weight[j] : 0.0;
                for (int a = 0; a < 3; a++)
                    B->p[3 * CSM_LANES * s + CSM_LANES * a + l] = lo < hi ? C->p[3 * j + a] : 0.0;
            }
    return B;
fail:
    csm_cluster_blocks_free(B);
    C->blocks = NULL;
    return NULL;
}

/* The sums of moment_block for the clusters of block b, one per lane, each about its first
   member r, added member after member: s[q][l] and r[a][l] for cluster 8b + l. */
CSM_CLONES void csm_kernel_moments_across(const csm_cluster_blocks *B, int32_t b, const double *x,
                                      double s[15][CSM_LANES], double r[3][CSM_LANES])
{
    int32_t f = B->first[b], n = B->first[b + 1] - f;
    const int32_t *mem = &B->member[CSM_LANES * f];
    const double *wmass = &B->wmass[CSM_LANES * f], *p = &B->p[3 * CSM_LANES * f];
    const double *q[CSM_LANES];
    csm_v8d_rows(x, mem, q);
    csm_v8d r0 = csm_v8d_at(q, 0), r1 = csm_v8d_at(q, 1), r2 = csm_v8d_at(q, 2);
    csm_v8d z = csm_v8d_set1(0.0), acc[15] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
    for (int32_t t = 0; t < n; t++) {
        csm_v8d_rows(x, mem + CSM_LANES * t, q);
        csm_v8d x0 = csm_v8d_at(q, 0), x1 = csm_v8d_at(q, 1), x2 = csm_v8d_at(q, 2);
        csm_v8d wm = csm_v8d_load(wmass + CSM_LANES * t);
        const double *pt = p + 3 * CSM_LANES * t;
        csm_v8d p0 = csm_v8d_load(pt), p1 = csm_v8d_load(pt + CSM_LANES), p2 = csm_v8d_load(pt + 2 * CSM_LANES);
        csm_v8d d0 = wm * (x0 - r0), d1 = wm * (x1 - r1), d2 = wm * (x2 - r2);
        acc[0] += wm * x0;
        acc[1] += wm * x1;
        acc[2] += wm * x2;
        acc[3] += wm * p0;
        acc[4] += wm * p1;
        acc[5] += wm * p2;
        acc[6] += d0 * p0;
        acc[7] += d0 * p1;
        acc[8] += d0 * p2;
        acc[9] += d1 * p0;
        acc[10] += d1 * p1;
        acc[11] += d1 * p2;
        acc[12] += d2 * p0;
        acc[13] += d2 * p1;
        acc[14] += d2 * p2;
    }
    memcpy(s, acc, sizeof acc);
    memcpy(r[0], &r0, sizeof r0);
    memcpy(r[1], &r1, sizeof r1);
    memcpy(r[2], &r2, sizeof r2);
}

/* A cluster's fit (moments aside) costs about this many memberships' work: the polar
   decomposition and the goal transform, against a membership's moments, goal and gather. */
#define FIT_MEMBERSHIPS 8

/* The cost of clusters [0, c): a fit each and their memberships (C->offset is their prefix sum). */
static int64_t share_cost(const csm_clusters *C, int32_t c) { return (int64_t)C->offset[c] + (int64_t)FIT_MEMBERSHIPS * c; }

/* The first cluster c whose clusters before it cost at least `target`. */
static int32_t share_start(const csm_clusters *C, int64_t target)
{
    int32_t a = 0, b = C->k;
    while (a < b) {
        int32_t mid = a + (b - a) / 2;
        if (share_cost(C, mid) < target) a = mid + 1;
        else b = mid;
    }
    return a;
}

/* c, or the end of its block of CSM_LANES clusters when that block holds them one per lane
   (csm_cluster_blocks), so that one thread fits the whole block. */
static int32_t share_block(const csm_clusters *C, const csm_cluster_blocks *B, int32_t c)
{
    int32_t start = c / CSM_LANES * CSM_LANES, end = start + CSM_LANES;
    if (c == start || c >= C->k || !starts_block(B, start)) return c;
    return end < C->k ? end : C->k;
}

/* Inside a parallel region, the clusters [*lo, *hi) the calling thread works on: runs of about
   equal cost, a fit per cluster and the work of each membership, not of equal cluster count
   (a few large clusters would leave a thread idle). Which thread takes a cluster changes no
   result: each cluster's work is its own. No share splits a block that holds its clusters one
   per lane (B, or NULL). Outside a parallel region, every cluster. */
void csm_kernel_share(const csm_clusters *C, const csm_cluster_blocks *B, int32_t *lo, int32_t *hi)
{
    int t = 0, nt = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    nt = omp_get_num_threads();
#endif
    int64_t total = share_cost(C, C->k);
    *lo = t == 0 ? 0 : share_block(C, B, share_start(C, total * t / nt));
    *hi = t == nt - 1 ? C->k : share_block(C, B, share_start(C, total * (t + 1) / nt));
}

void csm_set_threads(int threads)
{
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

int csm_get_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
