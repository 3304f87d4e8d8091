#include "kernel.h"

#include "csm_math.h"
#include "elastic.h"
#include "modes.h"
#include "simd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* lane_keep[s] keeps the lanes from s on and drops those before. */
static const double lane_keep[CSM_LANES + 1][CSM_LANES] = {
    {1, 1, 1, 1, 1, 1, 1, 1}, {0, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 1, 1, 1},
    {0, 0, 0, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 1, 1, 1},
    {0, 0, 0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 0, 0}};

/* The lane order of a cluster's member sums: member j of a cluster smaller than CSM_LANES adds
   into lane j - lo; otherwise whole blocks lo, lo + CSM_LANES, ... go lane by lane, and the rest
   is taken as the block that ends at hi, with the lanes already counted weighted 0. The lanes are
   then summed in the tree of csm_lanes_sum, so the sums are the same bits on every instruction
   set (test_kernel holds them to this order written in scalar code).

   BLOCK(m, pp, wm, keep, o) for each block, on vectors (simd.h): m the 8 members' particles, pp
   their rest positions p (24 doubles), wm their w m, keep a vector of 1 and 0, o the block's
   first member's place after lo. A cluster smaller than a block is copied into a padded block
   whose extra lanes repeat its last member with w m = 0: they add +0 to lanes that hold +0. A
   member that the last block visits again must be written the same. BLOCK appears once, so the
   compiler keeps the sums in registers. */
#define MEMBER_LANES(member, p, wmass, lo, hi, BLOCK)                                                                 \
    do {                                                                                                               \
        int32_t n_ = (hi) - (lo), all_ = n_;                                                                           \
        const int32_t *m_ = &(member)[lo];                                                                             \
        const double *p_ = &(p)[3 * (lo)], *w_ = &(wmass)[lo];                                                         \
        int32_t mb_[CSM_LANES];                                                                                        \
        double pb_[3 * CSM_LANES], wb_[CSM_LANES];                                                                     \
        if (n_ < CSM_LANES) {                                                                                          \
            if (n_ == 0) break;                                                                                        \
            for (int l_ = 0; l_ < CSM_LANES; l_++) {                                                                   \
                int j_ = l_ < n_ ? l_ : n_ - 1;                                                                        \
                mb_[l_] = m_[j_];                                                                                      \
                memcpy(&pb_[3 * l_], &p_[3 * j_], 3 * sizeof(double));                                                 \
                wb_[l_] = l_ < n_ ? w_[j_] : 0.0;                                                                      \
            }                                                                                                          \
            m_ = mb_, p_ = pb_, w_ = wb_, all_ = CSM_LANES;                                                            \
        }                                                                                                              \
        for (int32_t o_ = 0; o_ < all_; o_ += CSM_LANES) {                                                             \
            int32_t s_ = o_ + CSM_LANES <= all_ ? o_ : all_ - CSM_LANES;                                               \
            BLOCK(m_ + s_, p_ + 3 * s_, w_ + s_, csm_v8d_load(lane_keep[o_ - s_]), s_);                                \
        }                                                                                                              \
    } while (0)

/* A block of 8 members' shares of csm_cluster_moments' sums: sum w m x (3), sum w m p (3) and
   sum w m (x - r) p^T (9). */
static inline __attribute__((always_inline)) void moment_block(const double *restrict x, const int32_t *m,
                                                                const double *pp, const double *wmass, csm_v8d keep,
                                                                const double r[3], csm_v8d acc[15])
{
    const double *q[CSM_LANES];
    csm_v8d pv[3], wm = csm_v8d_load(wmass) * keep;
    csm_v8d_load3(pp, pv);
    csm_v8d_rows(x, m, q);
    csm_v8d x0 = csm_v8d_at(q, 0), x1 = csm_v8d_at(q, 1), x2 = csm_v8d_at(q, 2);
    csm_v8d d0 = wm * (x0 - r[0]), d1 = wm * (x1 - r[1]), d2 = wm * (x2 - r[2]);
    acc[0] += wm * x0;
    acc[1] += wm * x1;
    acc[2] += wm * x2;
    acc[3] += wm * pv[0];
    acc[4] += wm * pv[1];
    acc[5] += wm * pv[2];
    acc[6] += d0 * pv[0];
    acc[7] += d0 * pv[1];
    acc[8] += d0 * pv[2];
    acc[9] += d1 * pv[0];
    acc[10] += d1 * pv[1];
    acc[11] += d1 * pv[2];
    acc[12] += d2 * pv[0];
    acc[13] += d2 * pv[1];
    acc[14] += d2 * pv[2];
}

/* The sums of csm_cluster_moments over members [lo, hi), in lanes (MEMBER_LANES). */
CSM_CLONES static void moments_sums(const int32_t *member, const double *x, const double *p, const double *wmass,
                                    int32_t lo, int32_t hi, const double r[3], double out[15])
{
    csm_v8d z = csm_v8d_set1(0.0), acc[16] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
#define MOMENT(m, pp, wm, keep, o) moment_block(x, m, pp, wm, keep, r, acc)
    MEMBER_LANES(member, p, wmass, lo, hi, MOMENT);
#undef MOMENT
    csm_v8d_sums(acc, 15, out);
}

/* x-bar and A_xr from the sums s of moment_block about the reference point r (Falkenstein Eq 7):
   A_xr = sum w m (x - xbar) p^T = sum w m d p^T - (xbar - r) sum w m p^T with d = x - r, where the
   last sum is zero up to round-off (p_ic have zero weighted mean, Falkenstein Sec 3.2). */
static void moments_from_sums(double M, const double r[3], const double s[15], double com[3], double Axr[9])
{
    double r0 = r[0], r1 = r[1], r2 = r[2];
    if (M > 0) {
        com[0] = s[0] / M;
        com[1] = s[1] / M;
        com[2] = s[2] / M;
    } else {
        com[0] = com[1] = com[2] = 0;
    }
    double e0 = com[0] - r0, e1 = com[1] - r1, e2 = com[2] - r2;
    Axr[0] = s[6] - e0 * s[3];
    Axr[1] = s[7] - e0 * s[4];
    Axr[2] = s[8] - e0 * s[5];
    Axr[3] = s[9] - e1 * s[3];
    Axr[4] = s[10] - e1 * s[4];
    Axr[5] = s[11] - e1 * s[5];
    Axr[6] = s[12] - e2 * s[3];
    Axr[7] = s[13] - e2 * s[4];
    Axr[8] = s[14] - e2 * s[5];
}

void csm_cluster_moments(const csm_clusters *C, const double *x, int32_t c, double com[3], double Axr[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    if (lo == hi) {
        com[0] = com[1] = com[2] = 0;
        for (int a = 0; a < 9; a++) Axr[a] = 0;
        return;
    }
    /* One pass about a reference point, the first member, so that nothing cancels far from the
       origin. */
    const double *ref = &x[3 * C->member[lo]];
    double s[15];
    moments_sums(C->member, x, C->p, C->wmass, lo, hi, ref, s);
    moments_from_sums(C->mass[c], ref, s, com, Axr);
}

/* ---- the fits' sums with one cluster per lane (solver.lanes) ----

   Block b holds clusters [8b, 8b + 8) side by side: slot s holds member s of each, lane l for
   cluster 8b + l, with its particle, w m and p (p as three vectors of x, y and z). A cluster
   shorter than the block's longest repeats its last member with w m = 0 (adding +0 to sums that
   hold +0 or more), an empty one particle 0 with w m = 0 (its fit is set as csm_cluster_moments
   sets it). A block of small clusters then sums each cluster's members in order in its own lane,
   with no sum across lanes at the end and no shuffle of p; a block of large or unequal clusters
   keeps MEMBER_LANES (its slots not stored). */
typedef struct csm_cluster_blocks {
    uint64_t epoch;         /* of the clusters the blocks were built for */
    int32_t k, m, lanes;    /* their count, their memberships, and the world's solver.lanes */
    int32_t nb;             /* blocks */
    int32_t *first;         /* [nb + 1] first slot of each block; first[b] == first[b + 1]: MEMBER_LANES */
    int32_t *member;        /* [8 slots] */
    double *wmass, *weight; /* [8 slots] */
    double *p;              /* [24 slots] */
} csm_cluster_blocks;

/* AUTO takes a block's clusters one per lane when its longest has at most BLOCK_LONGEST members
   and its padding adds at most a quarter to its memberships, in a clustering of at most
   BLOCK_MEMBERSHIPS memberships; else MEMBER_LANES. Measured (README, Performance): faster by 2 to
   5 % on clusters of about 24 members at 38 k to 375 k memberships, slower by 3 to 4 % at 3.7 M,
   and no faster on clusters of about 100 members and more. */
#define BLOCK_LONGEST 64
#define BLOCK_MEMBERSHIPS (1 << 20)

void csm_cluster_blocks_free(csm_cluster_blocks *B)
{
    if (!B) return;
    free(B->first);
    free(B->member);
    free(B->wmass);
    free(B->weight);
    free(B->p);
    free(B);
}

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
static const csm_cluster_blocks *cluster_blocks(csm_world *w)
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

/* Whether cluster c starts a block of B that holds its clusters one per lane. */
static int starts_block(const csm_cluster_blocks *B, int32_t c)
{
    return B && c % CSM_LANES == 0 && B->first[c / CSM_LANES] < B->first[c / CSM_LANES + 1];
}

/* The sums of moment_block for the clusters of block b, one per lane, each about its first
   member r, added member after member: s[q][l] and r[a][l] for cluster 8b + l. */
CSM_CLONES static void moments_across(const csm_cluster_blocks *B, int32_t b, const double *x,
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

/* A_rr of cluster c from its stored pseudo-inverse: the exact inverse when A_rr has full rank,
   and A_rr without its dropped near-zero directions otherwise. */
static void cluster_arr(const csm_clusters *C, int32_t c, double A[9])
{
    const double *Ainv = &C->A_rr_inv[9 * c];
    if (C->rank[c] < 3 || csm_m3_inverse(Ainv, A) == 0.0) csm_pinv_sym3(Ainv, 1e-12, A);
}

/* tr(F^p A_rr F^pT): the second moment sum w m |F^p p|^2 of the plastic rest shape. */
static double plastic_moment(const double A[9], const double Fp[9])
{
    double FA[9], B[9];
    csm_m3_mul(Fp, A, FA);
    csm_m3_mul_bt(FA, Fp, B);
    return B[0] + B[4] + B[8];
}

/* solver.volume split: the goal transform R F^p becomes the best similarity s R F^p, with
   s = argmin sum w m |x - xbar - s R F^p p|^2 = tr((R F^p)^T A_xr) / tr(F^p A_rr F^pT). The shape
   springs then hold no volume (a uniform scaling costs nothing) and csm_volume_project holds it.
   An inverted or empty fit (s <= 0) keeps the rigid goal. */
static void similarity(const csm_clusters *C, int32_t c, const double Axr[9], const double Fp[9], double T[9])
{
    double A[9], num = 0;
    cluster_arr(C, c, A);
    for (int a = 0; a < 9; a++) num += T[a] * Axr[a];
    double s = num / plastic_moment(A, Fp);
    if (s > 0 && isfinite(s))
        for (int a = 0; a < 9; a++) T[a] *= s;
}

/* A cluster's fit up to its rotation: the centre, the moments, and the two matrices a rotation
   plugin may decompose. */
typedef struct fit_part {
    double com[3], Axr[9], Fe[9], Apq[9];
    int elastic; /* no plastic flow yet: F^e = F, A_pq = A_xr, T = R */
} fit_part;

/* The fit of cluster c from its moments in f->com and f->Axr. */
static void fit_begin(csm_clusters *C, int32_t c, fit_part *f)
{
    double *F = &C->F[9 * c];
    const double *Fp = &C->Fp[9 * c];
    csm_m3_mul(f->Axr, &C->A_rr_inv[9 * c], F); /* Falkenstein Eq 3 */
    f->elastic = csm_m3_is_identity(Fp);
    if (f->elastic) {
        memcpy(f->Fe, F, sizeof f->Fe);
        memcpy(f->Apq, f->Axr, sizeof f->Apq);
    } else {
        double Fp_inv[9];
        if (csm_m3_inverse(Fp, Fp_inv) == 0.0) csm_m3_identity(Fp_inv);
        csm_m3_mul(F, Fp_inv, f->Fe);     /* Falkenstein Eq 9 / 15 */
        csm_m3_mul_bt(f->Axr, Fp, f->Apq); /* A_pq of the plastic rest shape q = F^p p */
    }
}

/* The rest of the fit once C->R holds the cluster's rotation: the goal transform T and the centre. */
static void fit_end(const csm_world *w, csm_clusters *C, const double *x, int32_t c, const fit_part *f)
{
    const double *R = &C->R[9 * c], *Fp = &C->Fp[9 * c];
    double *T = &C->T[9 * c];
    if (w->mode == CSM_MODE_LINEAR && C->rank[c] == 3 && csm_m3_det(f->Fe) > 0) {
        csm_mode_linear(w->beta, f->Fe, R, Fp, T);
    } else if (f->elastic) {
        memcpy(T, R, 9 * sizeof *T);
    } else {
        csm_m3_mul(R, Fp, T); /* Falkenstein Eq 16: g = R F^p p + xbar */
    }
    if (w->volume == CSM_VOLUME_SPLIT && w->mode == CSM_MODE_RIGID) similarity(C, c, f->Axr, Fp, T);
    if (C->Q) {
        if (w->fit_energy && csm_elastic_on(w)) {
            /* the goals whose springs give the continuum energy's gradient (elastic.c) */
            double k = csm_elastic_stiffness(w, w->spring_modulus, c);
            csm_elastic_cluster(w, c, x, NULL, f->com, R, Fp, w->spring_modulus, k, T, &C->Q[18 * c],
                                C->S ? &C->S[9 * c] : NULL, NULL);
        } else if (w->mode == CSM_MODE_QUADRATIC) {
            csm_mode_quadratic(w->beta, C, x, f->com, c);
        } else {
            memset(&C->Q[18 * c], 0, 18 * sizeof *C->Q);
        }
        if (C->S && !(w->fit_energy && csm_elastic_on(w))) memset(&C->S[9 * c], 0, 9 * sizeof *C->S);
    }
    memcpy(&C->com[3 * c], f->com, sizeof f->com);
}

/* The fit of cluster c from its moments in f, its rotation from the rotation plugin. */
static void fit_from_moments(const csm_world *w, csm_clusters *C, const double *x, int32_t c, fit_part *f)
{
    fit_begin(C, c, f);
    csm_polar_ctx polar = {w->svd, &C->q[4 * c]};
    w->rotation->extract(&polar, f->Apq, f->Fe, &C->R[9 * c]);
    fit_end(w, C, x, c, f);
}

void csm_cluster_fit(const csm_world *w, csm_clusters *C, const double *x, int32_t c)
{
    fit_part f;
    csm_cluster_moments(C, x, c, f.com, f.Axr);
    fit_from_moments(w, C, x, c, &f);
}

/* csm_cluster_fit of clusters [c, c + n), n <= CSM_LANES, their polar decompositions side by
   side in vector lanes when the rotation plugin says which matrix it decomposes (the same bits).
   When c starts a block of B that holds its clusters one per lane (c a multiple of CSM_LANES and
   n the block's clusters), their moments are taken in those lanes: the same sums, added in
   member order rather than MEMBER_LANES's. */
static void fit_lanes(const csm_world *w, csm_clusters *C, const csm_cluster_blocks *B, const double *x, int32_t c,
                      int n)
{
    fit_part f[CSM_LANES];
    if (starts_block(B, c)) {
        double s[15][CSM_LANES], r[3][CSM_LANES];
        moments_across(B, c / CSM_LANES, x, s, r);
        for (int l = 0; l < n; l++) {
            double sl[15], rl[3] = {r[0][l], r[1][l], r[2][l]};
            for (int q = 0; q < 15; q++) sl[q] = s[q][l];
            if (C->offset[c + l] == C->offset[c + l + 1]) csm_cluster_moments(C, x, c + l, f[l].com, f[l].Axr);
            else moments_from_sums(C->mass[c + l], rl, sl, f[l].com, f[l].Axr);
        }
    } else {
        for (int l = 0; l < n; l++) csm_cluster_moments(C, x, c + l, f[l].com, f[l].Axr);
    }
    int of = w->rotation->version >= 2 ? w->rotation->polar_of : 0;
    if (of != CSM_POLAR_OF_APQ && of != CSM_POLAR_OF_FE) {
        for (int l = 0; l < n; l++) fit_from_moments(w, C, x, c + l, &f[l]);
        return;
    }
    double A[CSM_LANES][9];
    for (int l = 0; l < n; l++) {
        fit_begin(C, c + l, &f[l]);
        memcpy(A[l], of == CSM_POLAR_OF_APQ ? f[l].Apq : f[l].Fe, sizeof A[l]);
    }
    csm_polar3_warm_lanes(w->svd, n, (const double(*)[9])A, (double(*)[4]) & C->q[4 * c], (double(*)[9]) & C->R[9 * c]);
    for (int l = 0; l < n; l++) fit_end(w, C, x, c + l, &f[l]);
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

/* The end of the run of clusters from c that fit_lanes takes at once: the end of c's block, or hi. */
static int32_t block_end(int32_t c, int32_t hi)
{
    int32_t end = (c / CSM_LANES + 1) * CSM_LANES;
    return end < hi ? end : hi;
}

/* Inside a parallel region, the clusters [*lo, *hi) the calling thread works on: runs of about
   equal cost, a fit per cluster and the work of each membership, not of equal cluster count
   (a few large clusters would leave a thread idle). Which thread takes a cluster changes no
   result: each cluster's work is its own. No share splits a block that holds its clusters one
   per lane (B, or NULL). Outside a parallel region, every cluster. */
static void cluster_share(const csm_clusters *C, const csm_cluster_blocks *B, int32_t *lo, int32_t *hi)
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

void csm_fit_all(csm_world *w, const double *x)
{
    csm_mode_ready(w);
    csm_clusters *C = &w->C;
    const csm_cluster_blocks *B = cluster_blocks(w);
#pragma omp parallel
    {
        int32_t lo, hi;
        cluster_share(C, B, &lo, &hi);
        for (int32_t c = lo; c < hi; c = block_end(c, hi)) fit_lanes(w, C, B, x, c, block_end(c, hi) - c);
    }
}

/* Cluster c's share of every member's goal, w_ic g_ic, into C->wgoal (cluster order). g_ic is
   pulled towards x_i by the strain-limit clamp of Bargteil-Jones Algorithm 2 line 10,
   g_ic + min(gamma / beta, 1)(x_i - g_ic) with beta = |x_i - g_ic| / width_c (Bargteil-Jones Eq 4), written
   without dividing by beta: the allowed stretch is gamma width_c, and a goal beyond it is pulled
   back onto it. Compiled for each instruction set (simd.h); each membership's goal is its own, so
   the vectors change no bit. */
CSM_CLONES static void cluster_goals(csm_clusters *C, const double *x, int32_t c, double gamma)
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const int32_t *member = C->member;
    const double *weight = C->weight, *p = C->p;
    double *out = C->wgoal;
    if (C->Q) {
        for (int32_t j = lo; j < hi; j++) {
            double g[3], wgt = weight[j];
            csm_membership_goal(C, j, g);
            if (gamma > 0) {
                const double *xi = &x[3 * member[j]];
                double d[3] = {xi[0] - g[0], xi[1] - g[1], xi[2] - g[2]};
                double len = csm_v3_norm(d), limit = gamma * C->width[c];
                double f = len <= limit ? 1.0 : limit / len;
                for (int a = 0; a < 3; a++) g[a] += f * d[a];
            }
            for (int a = 0; a < 3; a++) out[3 * j + a] = wgt * g[a];
        }
        return;
    }
    const double *T = &C->T[9 * c], *com = &C->com[3 * c];
    double t0 = T[0], t1 = T[1], t2 = T[2], t3 = T[3], t4 = T[4], t5 = T[5], t6 = T[6], t7 = T[7], t8 = T[8];
    double c0 = com[0], c1 = com[1], c2 = com[2];
    if (gamma > 0) {
        double limit = gamma * C->width[c], limit2 = limit * limit;
#pragma omp simd
        for (int32_t j = lo; j < hi; j++) {
            const double *pj = &p[3 * j], *xi = &x[3 * member[j]];
            double g0 = t0 * pj[0] + t1 * pj[1] + t2 * pj[2] + c0;
            double g1 = t3 * pj[0] + t4 * pj[1] + t5 * pj[2] + c1;
            double g2 = t6 * pj[0] + t7 * pj[1] + t8 * pj[2] + c2;
            double d0 = xi[0] - g0, d1 = xi[1] - g1, d2 = xi[2] - g2;
            double len2 = d0 * d0 + d1 * d1 + d2 * d2;
            /* both sides computed, one selected: no branch for the clamp to mispredict (limit / 0
               lands only on the side not taken) */
            double clamp = limit / sqrt(len2), f = len2 <= limit2 ? 1.0 : clamp;
            double wgt = weight[j];
            out[3 * j] = wgt * (g0 + f * d0);
            out[3 * j + 1] = wgt * (g1 + f * d1);
            out[3 * j + 2] = wgt * (g2 + f * d2);
        }
    } else {
#pragma omp simd
        for (int32_t j = lo; j < hi; j++) {
            const double *pj = &p[3 * j];
            double wgt = weight[j];
            out[3 * j] = wgt * (t0 * pj[0] + t1 * pj[1] + t2 * pj[2] + c0);
            out[3 * j + 1] = wgt * (t3 * pj[0] + t4 * pj[1] + t5 * pj[2] + c1);
            out[3 * j + 2] = wgt * (t6 * pj[0] + t7 * pj[1] + t8 * pj[2] + c2);
        }
    }
}

/* cluster_goals of the clusters of block b of B, one per lane, from the block's copy of their
   members: each membership's goal rounds as in cluster_goals, the same bits. */
CSM_CLONES static void goals_across(csm_clusters *C, const csm_cluster_blocks *B, int32_t b, const double *x,
                                    double gamma)
{
    int32_t f = B->first[b], n = B->first[b + 1] - f, c0 = CSM_LANES * b;
    const int32_t *mem = &B->member[CSM_LANES * f];
    const double *weight = &B->weight[CSM_LANES * f], *p = &B->p[3 * CSM_LANES * f];
    double tl[12][CSM_LANES], lim[CSM_LANES], sink[3];
    double *o[CSM_LANES];
    int32_t len[CSM_LANES];
    for (int l = 0; l < CSM_LANES; l++) {
        int32_t c = c0 + l < C->k ? c0 + l : c0;
        for (int a = 0; a < 9; a++) tl[a][l] = C->T[9 * c + a];
        for (int a = 0; a < 3; a++) tl[9 + a][l] = C->com[3 * c + a];
        lim[l] = gamma * C->width[c];
        len[l] = c0 + l < C->k ? C->offset[c + 1] - C->offset[c] : 0;
        o[l] = &C->wgoal[3 * (size_t)C->offset[c]];
    }
    csm_v8d t0 = csm_v8d_load(tl[0]), t1 = csm_v8d_load(tl[1]), t2 = csm_v8d_load(tl[2]);
    csm_v8d t3 = csm_v8d_load(tl[3]), t4 = csm_v8d_load(tl[4]), t5 = csm_v8d_load(tl[5]);
    csm_v8d t6 = csm_v8d_load(tl[6]), t7 = csm_v8d_load(tl[7]), t8 = csm_v8d_load(tl[8]);
    csm_v8d e0 = csm_v8d_load(tl[9]), e1 = csm_v8d_load(tl[10]), e2 = csm_v8d_load(tl[11]);
    csm_v8d limit = csm_v8d_load(lim), limit2 = limit * limit, one = csm_v8d_set1(1.0);
    const double *q[CSM_LANES];
    for (int32_t t = 0; t < n; t++) {
        const double *pt = p + 3 * CSM_LANES * t;
        csm_v8d p0 = csm_v8d_load(pt), p1 = csm_v8d_load(pt + CSM_LANES), p2 = csm_v8d_load(pt + 2 * CSM_LANES);
        csm_v8d wgt = csm_v8d_load(weight + CSM_LANES * t);
        csm_v8d g0 = t0 * p0 + t1 * p1 + t2 * p2 + e0;
        csm_v8d g1 = t3 * p0 + t4 * p1 + t5 * p2 + e1;
        csm_v8d g2 = t6 * p0 + t7 * p1 + t8 * p2 + e2;
        if (gamma > 0) {
            csm_v8d_rows(x, mem + CSM_LANES * t, q);
            csm_v8d d0 = csm_v8d_at(q, 0) - g0, d1 = csm_v8d_at(q, 1) - g1, d2 = csm_v8d_at(q, 2) - g2;
            csm_v8d len2 = d0 * d0 + d1 * d1 + d2 * d2;
            csm_v8d f = csm_v8d_select(len2 <= limit2, one, limit / csm_v8d_sqrt(len2));
            g0 = g0 + f * d0;
            g1 = g1 + f * d1;
            g2 = g2 + f * d2;
        }
        g0 = wgt * g0, g1 = wgt * g1, g2 = wgt * g2;
        for (int l = 0; l < CSM_LANES; l++) { /* a slot past a cluster's end writes into sink */
            double *to = t < len[l] ? o[l] + 3 * (size_t)t : sink;
            to[0] = g0[l];
            to[1] = g1[l];
            to[2] = g2[l];
        }
    }
}

/* g_i = sum_c w_ic g_ic (Falkenstein Eq 8): a gather over particle i's memberships, in
   cluster order, so the sum is the same for any thread count. A particle in no cluster feels
   no internal force: its goal is where it is. With relax_x, the particle then moves to
   relax g_i + (1 - relax) relax_x_i unless its inverse mass is 0 (csm_goal_pass). */
static void gather_goals(const csm_world *w, const double *x, double *out, double relax, double *relax_x)
{
    const csm_clusters *C = &w->C;
    const int32_t *poff = C->poff, *pmember = C->pmember;
    const double *wg = C->wgoal, *inv_mass = w->P.inv_mass;
    int32_t n = w->P.n;
#pragma omp for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        int32_t lo = poff[i], hi = poff[i + 1];
        double g0 = x[3 * i], g1 = x[3 * i + 1], g2 = x[3 * i + 2];
        if (lo < hi) {
            g0 = g1 = g2 = 0;
            for (int32_t s = lo; s < hi; s++) {
                const double *v = &wg[3 * pmember[s]];
                g0 += v[0];
                g1 += v[1];
                g2 += v[2];
            }
        }
        out[3 * i] = g0;
        out[3 * i + 1] = g1;
        out[3 * i + 2] = g2;
        if (relax_x && inv_mass[i] != 0.0) {
            double *xi = &relax_x[3 * i];
            xi[0] = relax * g0 + (1.0 - relax) * xi[0];
            xi[1] = relax * g1 + (1.0 - relax) * xi[1];
            xi[2] = relax * g2 + (1.0 - relax) * xi[2];
        }
    }
}

void csm_goals_all(csm_world *w, const double *x, double gamma, double *out)
{
    csm_clusters *C = &w->C;
#pragma omp parallel
    {
        int32_t lo, hi;
        cluster_share(C, NULL, &lo, &hi);
        for (int32_t c = lo; c < hi; c++) cluster_goals(C, x, c, gamma);
#pragma omp barrier
        gather_goals(w, x, out, 0.0, NULL);
    }
}

/* csm_fit_goals_all, and the Jacobi update of csm_goal_pass's relax_x when not NULL. */
static void fit_goals_relax(csm_world *w, const double *x, double gamma, double *out, double relax, double *relax_x)
{
    csm_mode_ready(w);
    csm_clusters *C = &w->C;
    const csm_cluster_blocks *B = cluster_blocks(w);
#pragma omp parallel
    {
        int32_t lo, hi;
        cluster_share(C, B, &lo, &hi);
        for (int32_t b = lo; b < hi; b = block_end(b, hi)) {
            int n = block_end(b, hi) - b;
            fit_lanes(w, C, B, x, b, n);
            if (!C->Q && starts_block(B, b))
                goals_across(C, B, b / CSM_LANES, x, gamma);
            else
                for (int32_t c = b; c < b + n; c++) cluster_goals(C, x, c, gamma);
        }
#pragma omp barrier
        gather_goals(w, x, out, relax, relax_x);
    }
}

void csm_fit_goals_all(csm_world *w, const double *x, double gamma, double *out)
{
    fit_goals_relax(w, x, gamma, out, 0.0, NULL);
}

/* ---- conserving corrections and per-cluster gains (csm_goal_pass) ---- */

void csm_conserve_frames(csm_world *w, const double *x, double *frame)
{
    const csm_clusters *C = &w->C;
    int32_t k = C->k;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) {
        double *fr = &frame[12 * c];
        int32_t lo = C->offset[c], hi = C->offset[c + 1];
        double M = C->mass[c];
        memset(fr, 0, 12 * sizeof *fr);
        if (lo == hi || !(M > 0)) continue;
        /* about the first member, as in csm_cluster_moments, so nothing cancels far from the
           origin: S = sum w m (x - xbar)(x - xbar)^T = sum w m d d^T - M e e^T, e = xbar - ref */
        const double *ref = &x[3 * C->member[lo]];
        double s[3] = {0, 0, 0}, S[6] = {0, 0, 0, 0, 0, 0};
        for (int32_t j = lo; j < hi; j++) {
            const double *xi = &x[3 * C->member[j]];
            double wm = C->wmass[j], d0 = xi[0] - ref[0], d1 = xi[1] - ref[1], d2 = xi[2] - ref[2];
            s[0] += wm * d0;
            s[1] += wm * d1;
            s[2] += wm * d2;
            S[0] += wm * d0 * d0;
            S[1] += wm * d1 * d1;
            S[2] += wm * d2 * d2;
            S[3] += wm * d0 * d1;
            S[4] += wm * d1 * d2;
            S[5] += wm * d2 * d0;
        }
        double e[3] = {s[0] / M, s[1] / M, s[2] / M};
        for (int a = 0; a < 3; a++) fr[a] = ref[a] + e[a];
        double xx = S[0] - M * e[0] * e[0], yy = S[1] - M * e[1] * e[1], zz = S[2] - M * e[2] * e[2];
        double xy = S[3] - M * e[0] * e[1], yz = S[4] - M * e[1] * e[2], zx = S[5] - M * e[2] * e[0];
        double I[9] = {yy + zz, -xy, -zx, -xy, xx + zz, -yz, -zx, -yz, xx + yy};
        /* a collinear cluster has a singular inertia (no torque about its line arises from
           corrections either), a single particle none at all */
        double tr = I[0] + I[4] + I[8], det = csm_m3_det(I), mean = tr / 3;
        if (!(det > 1e-9 * mean * mean * mean) || csm_m3_inverse(I, &fr[3]) == 0.0) csm_pinv_sym3(I, 1e-12, &fr[3]);
    }
}

/* The members of a cluster whose corrections, positions and rest offsets r pass one keeps for
   pass two (cluster_corrections), on the stack in rows of KEEP_MEMBERS; members past them are
   read again through their particle index. */
enum { KEEP_MEMBERS = 512, KEEP_ROWS = 9 };

/* Pass one of cluster_corrections for a block of 8 memberships whose goals are g, w m their
   weights times keep (0 adds nothing to the sums; where live is given, its false lanes add -0,
   which changes no sum at all): their corrections c_ic = g_ic - x_i
   (the strain clamp of Bargteil-Jones Algorithm 2 line 10 moves g_ic to g + f (x - g), so
   c = (f - 1)(x - g)), and their share of what the projection removes:
   s = sum w m c and, for the angular projection, t = sum w m r x c and sr = sum w m r,
   r = x_ref - xbar_ref. The corrections go to rows (with x, and r for the angular projection:
   rows[KEEP_MEMBERS * q], q = c0, c1, c2, x0, x1, x2, r0, r1, r2) when rows is given, else to
   out (nl of them). Inlined with constant `clamp` and `angular`, so each setting gets its own
   loop. */
static inline __attribute__((always_inline)) void correction_block(
    const double *restrict x, const int32_t *m, const csm_v8d g[3], csm_v8d wm, const csm_v8l *live, double *out,
    int nl, double *rows, const double *restrict x_ref, const double *restrict fr, double limit, double limit2,
    const int clamp, const int angular, csm_v8d acc[9])
{
    const double *q[CSM_LANES];
    csm_v8d_rows(x, m, q);
    csm_v8d xv[3] = {csm_v8d_at(q, 0), csm_v8d_at(q, 1), csm_v8d_at(q, 2)};
    csm_v8d d0 = xv[0] - g[0], d1 = xv[1] - g[1], d2 = xv[2] - g[2];
    csm_v8d k = csm_v8d_set1(-1.0);
    if (clamp) {
        /* both sides computed where a lane needs the pull, one selected (limit / 0 lands only on
           the side not taken); the square root and the division only for a block that has one */
        csm_v8d len2 = d0 * d0 + d1 * d1 + d2 * d2;
        csm_v8l within = len2 <= limit2;
        k = csm_v8d_set1(0.0);
        if (!csm_v8l_all(within)) k = csm_v8d_select(within, k, limit / csm_v8d_sqrt(len2) - 1.0);
    }
    csm_v8d c[3] = {k * d0, k * d1, k * d2};
    if (rows) {
        for (int a = 0; a < 3; a++) {
            memcpy(rows + KEEP_MEMBERS * a, &c[a], sizeof c[a]);
            memcpy(rows + KEEP_MEMBERS * (3 + a), &xv[a], sizeof xv[a]);
        }
    } else if (nl == CSM_LANES) {
        csm_v8d_store3(out, c);
    } else {
        double o[3 * CSM_LANES];
        csm_v8d_store3(o, c);
        memcpy(out, o, 3 * sizeof(double) * (size_t)nl);
    }
    csm_v8d n0 = csm_v8d_set1(-0.0);
#define ADD(a, term) acc[a] += live ? csm_v8d_select(*live, (term), n0) : (term)
    ADD(0, wm * c[0]);
    ADD(1, wm * c[1]);
    ADD(2, wm * c[2]);
    if (angular) {
        csm_v8d_rows(x_ref, m, q);
        csm_v8d r0 = csm_v8d_at(q, 0) - fr[0], r1 = csm_v8d_at(q, 1) - fr[1], r2 = csm_v8d_at(q, 2) - fr[2];
        if (rows) {
            memcpy(rows + KEEP_MEMBERS * 6, &r0, sizeof r0);
            memcpy(rows + KEEP_MEMBERS * 7, &r1, sizeof r1);
            memcpy(rows + KEEP_MEMBERS * 8, &r2, sizeof r2);
        }
        ADD(3, wm * (r1 * c[2] - r2 * c[1]));
        ADD(4, wm * (r2 * c[0] - r0 * c[2]));
        ADD(5, wm * (r0 * c[1] - r1 * c[0]));
        ADD(6, wm * r0);
        ADD(7, wm * r1);
        ADD(8, wm * r2);
    }
#undef ADD
}

/* Pass one of cluster_corrections over cluster c's members, in lanes: the linear goals
   T p + xbar in the blocks of MEMBER_LANES; the quadratic ones (csm_membership_goal) member
   j - lo in lane (j - lo) mod 8, the last block's empty lanes adding -0. A block that ends within
   KEEP_MEMBERS leaves its rows in rows (correction_block). */
static inline __attribute__((always_inline)) void corrections_sum(const csm_clusters *C, const double *x, int32_t c,
                                                                  const double *x_ref, const double *fr, double limit,
                                                                  double *rows, const int clamp, const int angular,
                                                                  double sums[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const double *T = &C->T[9 * c], *com = &C->com[3 * c];
    double limit2 = limit * limit;
    csm_v8d z = csm_v8d_set1(0.0), acc[16] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
    if (C->Q) {
        for (int32_t b = lo; b < hi; b += CSM_LANES) {
            int nl = hi - b < CSM_LANES ? (int)(hi - b) : CSM_LANES;
            int32_t m[CSM_LANES];
            double gl[3][CSM_LANES], wl[CSM_LANES];
            for (int l = 0; l < CSM_LANES; l++) {
                int32_t j = b + (l < nl ? l : nl - 1);
                double gj[3];
                csm_membership_goal(C, j, gj);
                for (int a = 0; a < 3; a++) gl[a][l] = gj[a];
                m[l] = C->member[j];
                wl[l] = C->wmass[j];
            }
            csm_v8d g[3] = {csm_v8d_load(gl[0]), csm_v8d_load(gl[1]), csm_v8d_load(gl[2])};
            csm_v8l live = (csm_v8l){0, 1, 2, 3, 4, 5, 6, 7} < (int64_t)nl;
            double *keep = b - lo + CSM_LANES <= KEEP_MEMBERS ? rows + (b - lo) : NULL;
            correction_block(x, m, g, csm_v8d_load(wl), &live, &C->wgoal[3 * b], nl, keep, x_ref, fr, limit, limit2,
                             clamp, angular, acc);
        }
    } else {
        double *out = &C->wgoal[3 * lo];
        int nl = hi - lo < CSM_LANES ? (int)(hi - lo) : CSM_LANES;
#define CORRECTION(m, pp, wm, keep, o)                                                                                 \
    do {                                                                                                               \
        csm_v8d rp_[3];                                                                                                \
        csm_v8d_load3(pp, rp_);                                                                                        \
        csm_v8d gc_[3] = {T[0] * rp_[0] + T[1] * rp_[1] + T[2] * rp_[2] + com[0],                                      \
                          T[3] * rp_[0] + T[4] * rp_[1] + T[5] * rp_[2] + com[1],                                      \
                          T[6] * rp_[0] + T[7] * rp_[1] + T[8] * rp_[2] + com[2]};                                     \
        correction_block(x, m, gc_, csm_v8d_load(wm) * (keep), NULL, out + 3 * (o), nl,                                \
                         (o) + CSM_LANES <= KEEP_MEMBERS ? rows + (o) : NULL, x_ref, fr, limit, limit2, clamp,         \
                         angular, acc);                                                                                \
    } while (0)
        MEMBER_LANES(C->member, C->p, C->wmass, lo, hi, CORRECTION);
#undef CORRECTION
    }
    csm_v8d_sums(acc, 9, sums);
}

/* c' = c - mean - omega x r and out = w (x + gain c') (cluster_corrections' pass two), on scalars
   or on vectors alike: r = x_ref - xbar_ref taken per member (not omega x x_ref less a constant,
   which would cancel far from the origin). */
#define CORRECTED(c0, c1, c2, x0, x1, x2, r0, r1, r2, wgt, out)                                                        \
    do {                                                                                                               \
        c0 = c0 - m0, c1 = c1 - m1, c2 = c2 - m2;                                                                      \
        if (angular) {                                                                                                 \
            c0 -= o1 * (r2) - o2 * (r1);                                                                               \
            c1 -= o2 * (r0) - o0 * (r2);                                                                               \
            c2 -= o0 * (r1) - o1 * (r0);                                                                               \
        }                                                                                                              \
        out[0] = (wgt) * ((x0) + gain * c0);                                                                           \
        out[1] = (wgt) * ((x1) + gain * c1);                                                                           \
        out[2] = (wgt) * ((x2) + gain * c2);                                                                           \
    } while (0)

/* Cluster c's share of every member's out_i (csm_goal_pass): pass one finds the corrections and
   sums what the projection removes, pass two removes it, a constant `mean` and a rotation
   omega x r, and weighs: out = w_ic (x_i + gain_c c'_ic). Pass two takes the first KEEP_MEMBERS
   members' corrections, positions and r from the rows pass one kept, 8 at a time; the rest from
   the corrections pass one wrote to out and x and x_ref read again. Compiled for each
   instruction set (simd.h). */
CSM_CLONES static void cluster_corrections(csm_clusters *C, const double *x, int32_t c, const csm_goal_pass *pass,
                                           int project)
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1], n = hi - lo;
    const int32_t *member = C->member;
    double *out = C->wgoal, M = C->mass[c], gain = pass->gain ? pass->gain[c] : 1.0;
    double limit = pass->gamma * C->width[c];
    int clamp = pass->gamma > 0, angular = project && pass->conserve == CSM_CONSERVE_ANGULAR;
    const double *fr = angular ? &pass->frame[12 * c] : NULL, *x_ref = pass->x_ref;
    double sums[9], rows[KEEP_ROWS * KEEP_MEMBERS];
    if (angular)
        if (clamp) corrections_sum(C, x, c, x_ref, fr, limit, rows, 1, 1, sums);
        else corrections_sum(C, x, c, x_ref, fr, limit, rows, 0, 1, sums);
    else if (clamp) corrections_sum(C, x, c, x_ref, fr, limit, rows, 1, 0, sums);
    else corrections_sum(C, x, c, x_ref, fr, limit, rows, 0, 0, sums);
    double mean[3] = {0, 0, 0}, omega[3] = {0, 0, 0};
    if (project && M > 0)
        for (int a = 0; a < 3; a++) mean[a] = sums[a] / M;
    if (angular) {
        /* the torque of the corrections once their mean is gone: t - (sum w m r) x mean */
        double srm[3], t[3];
        csm_v3_cross(&sums[6], mean, srm);
        for (int a = 0; a < 3; a++) t[a] = sums[3 + a] - srm[a];
        csm_m3_mul_v3(&fr[3], t, omega);
    }
    const double *restrict weight = C->weight;
    double m0 = mean[0], m1 = mean[1], m2 = mean[2], o0 = omega[0], o1 = omega[1], o2 = omega[2];
    double f0 = angular ? fr[0] : 0, f1 = angular ? fr[1] : 0, f2 = angular ? fr[2] : 0;
    /* the kept members, 8 at a time; the last 8 end at the last kept member (written twice, the
       same), or, in a cluster smaller than 8, its padded lanes are left out */
    int32_t kept = n < KEEP_MEMBERS ? n : KEEP_MEMBERS;
    for (int32_t t = 0; t < kept; t += CSM_LANES) {
        int32_t s = t + CSM_LANES <= kept || kept < CSM_LANES ? t : kept - CSM_LANES;
        const double *row = rows + s;
        csm_v8d v[KEEP_ROWS];
        for (int q = 0; q < (angular ? 9 : 6); q++) v[q] = csm_v8d_load(row + KEEP_MEMBERS * q);
        csm_v8d wgt, g[3];
        if (kept >= CSM_LANES) {
            wgt = csm_v8d_load(&weight[lo + s]);
        } else {
            double wl[CSM_LANES] = {0};
            memcpy(wl, &weight[lo], sizeof(double) * (size_t)kept);
            wgt = csm_v8d_load(wl);
        }
        CORRECTED(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], wgt, g);
        if (kept >= CSM_LANES) {
            csm_v8d_store3(&out[3 * (lo + s)], g);
        } else {
            double o[3 * CSM_LANES];
            csm_v8d_store3(o, g);
            memcpy(&out[3 * lo], o, 3 * sizeof(double) * (size_t)kept);
        }
    }
#pragma omp simd
    for (int32_t j = lo + kept; j < hi; j++) {
        int32_t i = 3 * member[j];
        double c0 = out[3 * j], c1 = out[3 * j + 1], c2 = out[3 * j + 2];
        const double *xr = angular ? &x_ref[i] : &x[i];
        CORRECTED(c0, c1, c2, x[i], x[i + 1], x[i + 2], xr[0] - f0, xr[1] - f1, xr[2] - f2, weight[j], (&out[3 * j]));
    }
}
#undef CORRECTED

int csm_goal_pass_conserve(const csm_world *w, const csm_goal_pass *pass, const double *x)
{
    /* Unclamped goals keep their cluster's centre of mass (sum w m p = 0, and the quadratic terms
       are centred), so LINEAR has nothing to remove from them, and a Procrustes rotation's rigid
       goals exert no torque about the positions they were fitted at. */
    int conserve = pass->conserve;
    if (pass->gamma == 0 && (conserve == CSM_CONSERVE_LINEAR ||
                             (conserve == CSM_CONSERVE_ANGULAR && w->rotation->torque_free &&
                              w->mode == CSM_MODE_RIGID && pass->x_ref == x)))
        return CSM_CONSERVE_NONE;
    return conserve;
}

void csm_fit_goals_pass(csm_world *w, const double *x, const csm_goal_pass *pass, double *out)
{
    int conserve = csm_goal_pass_conserve(w, pass, x);
    if (conserve == CSM_CONSERVE_NONE && !pass->gain) {
        fit_goals_relax(w, x, pass->gamma, out, pass->relax, pass->relax_x);
        return;
    }
    csm_mode_ready(w);
    csm_clusters *C = &w->C;
    const csm_cluster_blocks *B = cluster_blocks(w);
    int project = conserve != CSM_CONSERVE_NONE;
    csm_goal_pass p = *pass;
    p.conserve = conserve;
#pragma omp parallel
    {
        int32_t lo, hi;
        cluster_share(C, B, &lo, &hi);
        for (int32_t b = lo; b < hi; b = block_end(b, hi)) {
            int n = block_end(b, hi) - b;
            fit_lanes(w, C, B, x, b, n);
            for (int32_t c = b; c < b + n; c++) cluster_corrections(C, x, c, &p, project);
        }
#pragma omp barrier
        gather_goals(w, x, out, p.relax, p.relax_x);
    }
}

/* Material stiffness (solver.modulus). A cluster's shape-matching springs store
       E_c = 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2
   (the force k_c w_ic m_i (g_ic - x_i) of Bargteil-Jones Algorithm 1 line 2 with alpha_c = h^2 k_c is minus
   its gradient at fixed goals, and the fit makes the goals stationary). Under a uniform
   deformation x_i - xbar = F p_ic with F = F^e F^p, the goals are g_ic = R F^p p_ic + xbar, so
   with D = F^e - R and B = F^p A_rr F^pT (A_rr = sum w m p p^T, the plastic rest shape's moment)
       E_c = 1/2 k_c tr(D B D^T).
   A material of shear modulus mu stores mu V_c |D|_F^2 in the cluster's share of the body,
   V_c = m_c / rho (the weights split every particle's volume among its clusters as they split
   its mass, so sum_c V_c is the body's volume). The two agree for every D only when B is
   isotropic, B = (tr B / 3) 1; then k_c = 2 mu V_c / (tr B / 3) = 6 mu m_c / (rho tr B), which for
   F^p = 1 is 6 mu V_c / (m_c r_g^2) with r_g the cluster's mass-weighted radius of gyration.
   An anisotropic cluster (flat, elongated, or cut by the body's surface) cannot match every D
   with one scalar k_c; it gets the same formula, which matches the energy averaged over the
   orientations of D (E[tr(D B D^T)] = tr B E[|D|^2] / 3 for isotropically distributed D). It
   is then stiffer than the material, by lambda_max(B) / (tr B / 3), when stretched along its
   long axis and softer across it; refining clusters inside a body makes them isotropic, so the
   error stays with the clusters the surface cuts. An object with its own material
   (objects[].modulus) gives its clusters its mu in place of the integrator's. */
static double modulus_stiffness(const csm_world *w, double mu, int32_t c, const double Fp[9])
{
    const csm_clusters *C = &w->C;
    if (w->energy == CSM_ENERGY_CONTINUUM && C->ebound) return csm_elastic_stiffness(w, mu, c);
    int32_t o = csm_cluster_object(w, c);
    if (o < 0) return 0.0;
    if (w->object_modulus && w->object_modulus[o] > 0) mu = w->object_modulus[o];
    double M = C->mass[c], rho = w->object_density[o];
    if (!(M > 0) || !(rho > 0)) return 0.0;
    double A[9];
    cluster_arr(C, c, A);
    double trB = plastic_moment(A, Fp);
    if (!(trB > 0)) return 0.0;
    return 6.0 * mu * M / (rho * trB);
}

double csm_modulus_stiffness(const csm_world *w, double mu, int32_t c)
{
    return modulus_stiffness(w, mu, c, &w->C.Fp[9 * c]);
}

double csm_spring_stiffness(const csm_world *w, int32_t c, const double Fp[9], double h)
{
    if (!(w->spring_modulus > 0)) return w->spring_alpha / (h * h);
    double k = modulus_stiffness(w, w->spring_modulus, c, Fp);
    return w->spring_capped ? fmin(k, 1.0 / (h * h)) : k;
}

/* A block of 8 members' shares of csm_cluster_fixed_fit's sums: sum w m |x - xbar|^2,
   sum w m (x - xbar) . v and sum w m v p^T (9). */
static inline __attribute__((always_inline)) void fixed_block(const double *restrict x, const double *restrict v,
                                                               const int32_t *m, const double *pp, const double *wmass,
                                                               csm_v8d keep, const double com[3], csm_v8d acc[11])
{
    const double *qx[CSM_LANES], *qv[CSM_LANES];
    csm_v8d pv[3], wm = csm_v8d_load(wmass) * keep;
    csm_v8d_load3(pp, pv);
    csm_v8d_rows(x, m, qx);
    csm_v8d_rows(v, m, qv);
    csm_v8d d0 = csm_v8d_at(qx, 0) - com[0], d1 = csm_v8d_at(qx, 1) - com[1], d2 = csm_v8d_at(qx, 2) - com[2];
    csm_v8d v0 = csm_v8d_at(qv, 0), v1 = csm_v8d_at(qv, 1), v2 = csm_v8d_at(qv, 2);
    csm_v8d wv0 = wm * v0, wv1 = wm * v1, wv2 = wm * v2;
    acc[0] += wm * (d0 * d0 + d1 * d1 + d2 * d2);
    acc[1] += wm * (d0 * v0 + d1 * v1 + d2 * v2);
    acc[2] += wv0 * pv[0];
    acc[3] += wv0 * pv[1];
    acc[4] += wv0 * pv[2];
    acc[5] += wv1 * pv[0];
    acc[6] += wv1 * pv[1];
    acc[7] += wv1 * pv[2];
    acc[8] += wv2 * pv[0];
    acc[9] += wv2 * pv[1];
    acc[10] += wv2 * pv[2];
}

/* The member sums of csm_cluster_fixed_fit, in lanes (MEMBER_LANES). */
CSM_CLONES static void fixed_sums(const csm_clusters *C, const double *x, const double *v, int32_t c,
                                  const double com[3], double out[11])
{
    csm_v8d z = csm_v8d_set1(0.0), acc[16] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
#define FIXED(m, pp, wm, keep, o) fixed_block(x, v, m, pp, wm, keep, com, acc)
    MEMBER_LANES(C->member, C->p, C->wmass, C->offset[c], C->offset[c + 1], FIXED);
#undef FIXED
    csm_v8d_sums(acc, 11, out);
}

void csm_cluster_fixed_fit(const csm_clusters *C, const double *x, const double *v, int32_t c, csm_fixed_fit *f)
{
    double com[3], s[11];
    csm_cluster_moments(C, x, c, com, f->Axr);
    csm_m3_mul(f->Axr, &C->A_rr_inv[9 * c], f->F); /* Falkenstein Eq 3 */
    fixed_sums(C, x, v, c, com, s);
    memcpy(f->com, com, sizeof com);
    f->x = x;
    f->v = v;
    f->S = s[0];
    f->Q = -s[1];
    memcpy(f->Avp, &s[2], sizeof f->Avp);
}

/* The goals' transform T = R F^p (with the split volume's similarity) that cluster c's fit gives
   at F and A_xr if its plastic deformation were Fp (q its rotation's warm start, not changed);
   -1 when Fp is singular. */
static int stored_rotation(const csm_world *w, const double F[9], const double Axr[9], const double Fp[9],
                           const double q[4], double R[9])
{
    double Fp_inv[9], Fe[9], Apq[9], qq[4];
    if (csm_m3_inverse(Fp, Fp_inv) == 0.0) return -1;
    csm_m3_mul(F, Fp_inv, Fe);
    csm_m3_mul_bt(Axr, Fp, Apq);
    memcpy(qq, q, sizeof qq); /* the fit's warm start, unchanged */
    csm_polar_ctx polar = {w->svd, qq};
    w->rotation->extract(&polar, Apq, Fe, R);
    return 0;
}

static int stored_transform(const csm_world *w, int32_t c, const double F[9], const double Axr[9], const double Fp[9],
                            const double q[4], double T[9])
{
    double R[9];
    if (stored_rotation(w, F, Axr, Fp, q, R)) return -1;
    csm_m3_mul(R, Fp, T);
    if (w->volume == CSM_VOLUME_SPLIT) similarity(&w->C, c, Axr, Fp, T);
    return 0;
}

double csm_cluster_stored(const csm_world *w, int32_t c, const csm_fixed_fit *f, const double Fp[9], const double q[4],
                          double h, double *lag)
{
    const csm_clusters *C = &w->C;
    double T[9], A[9];
    *lag = NAN;
    if (csm_elastic_on(w)) {
        /* the continuum energy (elastic.c); a step too coarse for the stiffness scales it as the
           explicit gain's clamp does */
        double R[9], dot = 0;
        if (stored_rotation(w, f->F, f->Axr, Fp, q, R)) return NAN;
        double k = modulus_stiffness(w, w->spring_modulus, c, Fp), kc = csm_spring_stiffness(w, c, Fp, h);
        double e = csm_elastic_cluster(w, c, f->x, f->v, f->com, R, Fp, w->spring_modulus, k, NULL, NULL, NULL,
                                       w->spring_capped ? &dot : NULL);
        double scale = k > 0 ? kc / k : 0.0;
        *lag = w->spring_capped ? 0.5 * h * kc * dot : 0.0;
        return e * scale;
    }
    if (stored_transform(w, c, f->F, f->Axr, Fp, q, T)) return NAN;
    /* sum w m |d - T p|^2 = S - 2 tr(T^T A_xr) + tr(T A_rr T^T), d = x - xbar, and
       sum w m (g - x) . v = tr(T^T A_vp) + sum w m (xbar - x) . v */
    cluster_arr(C, c, A);
    double TA[9], cross = 0, square = 0, dot = f->Q;
    csm_m3_mul(T, A, TA);
    for (int a = 0; a < 9; a++) {
        cross += T[a] * f->Axr[a];
        square += TA[a] * T[a];
        dot += T[a] * f->Avp[a];
    }
    double k = csm_spring_stiffness(w, c, Fp, h);
    *lag = w->spring_capped ? 0.5 * h * k * dot : 0.0;
    return 0.5 * k * fmax(0.0, f->S - 2.0 * cross + square);
}

void csm_modulus_gains(const csm_world *w, double mu, double h, double *gain, csm_gain_stats *stats)
{
    int32_t k = w->C.k;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) gain[c] = h * h * csm_modulus_stiffness(w, mu, c);
    csm_gain_stats st = {k ? INFINITY : 0, 0, 0, 0};
    for (int32_t c = 0; c < k; c++) {
        if (gain[c] > 1.0) {
            gain[c] = 1.0;
            st.clamped++;
        }
        gain[c] *= csm_elastic_share(w, c); /* the continuum goals' share of the pull (elastic.c) */
        st.min = fmin(st.min, gain[c]);
        st.max = fmax(st.max, gain[c]);
        st.mean += gain[c] / k;
    }
    *stats = st;
}

/* Rigid velocity of cluster c: v_cm and omega = I^-1 L about the cluster's centre of mass. */
static void cluster_rigid_velocity(const csm_clusters *C, const double *x, const double *v, int32_t c,
                                   double out[9])
{
    double M = C->mass[c], com[3] = {0, 0, 0}, vcm[3] = {0, 0, 0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        for (int d = 0; d < 3; d++) {
            com[d] += C->wmass[j] * x[3 * i + d];
            vcm[d] += C->wmass[j] * v[3 * i + d];
        }
    }
    for (int d = 0; d < 3; d++) {
        com[d] = M > 0 ? com[d] / M : 0;
        vcm[d] = M > 0 ? vcm[d] / M : 0;
    }
    double L[3] = {0, 0, 0}, I[9] = {0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        double r[3] = {x[3 * i] - com[0], x[3 * i + 1] - com[1], x[3 * i + 2] - com[2]}, rv[3];
        double wm = C->wmass[j];
        csm_v3_cross(r, &v[3 * i], rv);
        double r2 = csm_v3_dot(r, r);
        for (int a = 0; a < 3; a++) {
            L[a] += wm * rv[a];
            for (int b = 0; b < 3; b++) I[3 * a + b] += wm * ((a == b ? r2 : 0.0) - r[a] * r[b]);
        }
    }
    /* a collinear or single-particle cluster has a singular inertia tensor */
    double Iinv[9];
    csm_pinv_sym3(I, 1e-12, Iinv);
    memcpy(out, vcm, sizeof vcm);
    csm_m3_mul_v3(Iinv, L, &out[3]);
    memcpy(&out[6], com, sizeof com);
}

/* The energy a velocity change dv of particle i takes from the explicit step's conserved energy:
   the kinetic energy it removes, less the share of the lag (csm_diag.elastic_lag) it moves,
   (h/2) f_i . dv = 1/2 m_i kick_i . dv with kick_i = a (g_i - x_i) the springs' velocity change of
   the step (none when g is NULL). */
static double removed_energy(const csm_world *w, int32_t i, const double *v_before, const double *v_after,
                             const double *g, double a, const double *x)
{
    double m = w->P.mass[i], e = 0.5 * m * (csm_v3_dot(v_before, v_before) - csm_v3_dot(v_after, v_after));
    if (g)
        for (int d = 0; d < 3; d++) e += 0.5 * m * a * (g[3 * i + d] - x[3 * i + d]) * (v_after[d] - v_before[d]);
    return e;
}

/* Müller et al. 2007 Sec 3.5: each velocity pulled towards its clusters' rigid motion. */
void csm_damp_velocities(csm_world *w, const double *x, double *v, double k, double *scratch, const double *g, double a)
{
    if (k <= 0) return;
    const csm_clusters *C = &w->C;
    int32_t nc = C->k, n = w->P.n;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < nc; c++) cluster_rigid_velocity(C, x, v, c, &scratch[9 * c]);
    /* Gather per particle (no atomics); v is only written after every cluster is measured. */
    double part[CSM_SUM_BLOCKS] = {0};
#pragma omp parallel for schedule(static)
    for (int b = 0; b < CSM_SUM_BLOCKS; b++) {
        double sum = 0;
        for (int32_t i = csm_block_start(n, b); i < csm_block_start(n, b + 1); i++) {
            if (w->P.inv_mass[i] == 0.0) continue;
            double before[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
            double dv[3] = {0, 0, 0};
            for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
                int32_t j = C->pmember[s];
                int32_t c = C->mcluster[j];
                const double *rv = &scratch[9 * c];
                double r[3], wr[3];
                for (int d = 0; d < 3; d++) r[d] = x[3 * i + d] - rv[6 + d];
                csm_v3_cross(&rv[3], r, wr);
                for (int d = 0; d < 3; d++) dv[d] += C->weight[j] * (rv[d] + wr[d] - v[3 * i + d]);
            }
            for (int d = 0; d < 3; d++) v[3 * i + d] += k * dv[d];
            sum += removed_energy(w, i, before, &v[3 * i], g, a, x);
        }
        part[b] = sum;
    }
    if (w->report) w->report->dissipated[CSM_DISSIPATED_DAMPING] += csm_block_total(part);
}

/* Material viscosity per cluster. The velocity field's best affine fit about the centre has the
   gradient L = A_vd A_dd^-1 (A_vd = sum w m (v - vbar) d^T, A_dd = sum w m d d^T, d = x - xbar); a
   Newtonian viscosity eta dissipates 2 eta V_c |sym L|^2 (the deviatoric and the volumetric rate
   alike). With the cluster's inertia in that mode, 1/2 tr(S A_dd S) ~ 1/2 (tr A_dd / 3) |S|^2,
   S = sym L decays at the rate r = 6 eta V_c / tr A_dd (the same form as the stiffness from a
   modulus, csm_modulus_stiffness), taken implicitly: dv = -(h r / (1 + h r)) S d, stable for any
   step. The rigid rotation that correction would carry when A_dd is not isotropic is removed
   (omega = I^-1 sum w m d x dv), so the cluster's momentum and angular momentum stay as they were. */
static void viscosity_row(const csm_world *w, const double *x, const double *v, int32_t c, double eta, double h,
                          double row[12])
{
    const csm_clusters *C = &w->C;
    double com[3] = {0, 0, 0}, vcm[3] = {0, 0, 0}, Add[9] = {0}, Avd[9] = {0}, M = C->mass[c];
    double rho = csm_cluster_density(w, c);
    memset(row, 0, 12 * sizeof *row);
    if (!(M > 0) || !(rho > 0)) return;
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++)
        for (int a = 0; a < 3; a++) {
            com[a] += C->wmass[j] * x[3 * C->member[j] + a] / M;
            vcm[a] += C->wmass[j] * v[3 * C->member[j] + a] / M;
        }
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        double wm = C->wmass[j], d[3], u[3];
        for (int a = 0; a < 3; a++) {
            d[a] = x[3 * i + a] - com[a];
            u[a] = v[3 * i + a] - vcm[a];
        }
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                Add[3 * a + b] += wm * d[a] * d[b];
                Avd[3 * a + b] += wm * u[a] * d[b];
            }
    }
    double tr = Add[0] + Add[4] + Add[8];
    if (!(tr > 0)) return;
    double Addinv[9], L[9], K[9], KA[9], I[9], Iinv[9], torque[3], omega[3];
    csm_pinv_sym3(Add, 1e-12, Addinv);
    csm_m3_mul(Avd, Addinv, L);
    double r = 6.0 * eta * (M / rho) / tr, f = h * r / (1.0 + h * r);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) K[3 * a + b] = -0.5 * f * (L[3 * a + b] + L[3 * b + a]);
    /* the torque sum w m d x (K d) is the axial vector of K A_dd's skew part */
    csm_m3_mul(K, Add, KA);
    torque[0] = KA[7] - KA[5];
    torque[1] = KA[2] - KA[6];
    torque[2] = KA[3] - KA[1];
    for (int a = 0; a < 9; a++) I[a] = (a % 4 == 0 ? tr : 0.0) - Add[a];
    csm_pinv_sym3(I, 1e-12, Iinv);
    csm_m3_mul_v3(Iinv, torque, omega);
    memcpy(row, com, 3 * sizeof *row);
    double W[9] = {0, -omega[2], omega[1], omega[2], 0, -omega[0], -omega[1], omega[0], 0};
    for (int a = 0; a < 9; a++) row[3 + a] = K[a] - W[a];
}

void csm_viscous_velocities(csm_world *w, const double *x, double *v, double eta, double h, double *scratch,
                            const double *g, double a)
{
    if (!(eta > 0)) return;
    const csm_clusters *C = &w->C;
    int32_t k = C->k, n = w->P.n;
    double part[CSM_SUM_BLOCKS] = {0};
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int32_t c = 0; c < k; c++) viscosity_row(w, x, v, c, eta, h, &scratch[12 * c]);
#pragma omp for schedule(static)
        for (int b = 0; b < CSM_SUM_BLOCKS; b++) {
            double sum = 0;
            for (int32_t i = csm_block_start(n, b); i < csm_block_start(n, b + 1); i++) {
                if (w->P.inv_mass[i] == 0.0) continue;
                double dv[3] = {0, 0, 0};
                for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
                    int32_t j = C->pmember[s];
                    const double *row = &scratch[12 * C->mcluster[j]], *K = &row[3];
                    double r0 = x[3 * i] - row[0], r1 = x[3 * i + 1] - row[1], r2 = x[3 * i + 2] - row[2];
                    for (int d = 0; d < 3; d++)
                        dv[d] += C->weight[j] * (K[3 * d] * r0 + K[3 * d + 1] * r1 + K[3 * d + 2] * r2);
                }
                double *vi = &v[3 * i], before[3] = {vi[0], vi[1], vi[2]};
                for (int d = 0; d < 3; d++) vi[d] += dv[d];
                sum += removed_energy(w, i, before, vi, g, a, x);
            }
            part[b] = sum;
        }
    }
    if (w->report) w->report->dissipated[CSM_DISSIPATED_VISCOSITY] += csm_block_total(part);
}

/* ---- solver.volume split: each cluster's volume as a constraint of its own ---- */

/* The compliance alpha~_c = 1 / (kappa_c V_c h^2) of cluster c's volume term, V_c = m_c / rho:
   kappa from solver.bulk_modulus, or, with 0, the bulk stiffness the coupled springs have at
   F^p = 1. Those store 1/2 k_c tr(D A_rr D^T), D = F - R, which for a dilation F = (1 + e) 1 is
   1/2 k_c e^2 tr A_rr = 1/2 kappa V_c (3 e)^2: kappa_c V_c = k_c tr A_rr / 9, with shear modulus
   mu = k_c tr A_rr / (6 V_c) the pair of a Poisson's ratio of 0. Springs of no stiffness (pbd)
   hold volume as they hold shape, as a hard constraint: compliance 0. */
static double volume_compliance(const csm_world *w, int32_t c, double h)
{
    const csm_clusters *C = &w->C;
    if (w->bulk_modulus > 0) return csm_cluster_density(w, c) / (w->bulk_modulus * C->mass[c] * h * h);
    static const double identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    double A[9], k = csm_spring_stiffness(w, c, identity, h);
    cluster_arr(C, c, A);
    double kV = k * (A[0] + A[4] + A[8]) / 9.0;
    return kV > 0 ? 1.0 / (kV * h * h) : 0.0;
}

/* 1/2 kappa_c V_c (J - 1)^2, cluster c's volume energy at det F = J (0 when coupled, for a
   cluster without a volume, and for a hard constraint). */
static double volume_energy(const csm_world *w, int32_t c, double J, double h)
{
    const csm_clusters *C = &w->C;
    if (w->volume != CSM_VOLUME_SPLIT || C->rank[c] < 3 || !(C->mass[c] > 0) || !(csm_cluster_density(w, c) > 0))
        return 0.0;
    double compliance = volume_compliance(w, c, h);
    return compliance > 0 ? 0.5 * (J - 1) * (J - 1) / (compliance * h * h) : 0.0;
}

double csm_volume_energy(const csm_world *w, double h)
{
    double e = 0;
    for (int32_t c = 0; c < w->C.k; c++) e += volume_energy(w, c, csm_m3_det(&w->C.F[9 * c]), h);
    return e;
}

double csm_cluster_energy(const csm_world *w, int32_t c, const double *x, const double *v, double h)
{
    const csm_clusters *C = &w->C;
    csm_fixed_fit fit;
    double lag;
    csm_cluster_fixed_fit(C, x, v, c, &fit);
    double e = csm_cluster_stored(w, c, &fit, &C->Fp[9 * c], &C->q[4 * c], h, &lag) + lag;
    return e + volume_energy(w, c, csm_m3_det(fit.F), h);
}

double csm_cluster_lag_change(const csm_world *w, int32_t c, const double *x, const double *v, const double *v0,
                              double h)
{
    if (!w->spring_capped) return 0.0;
    const csm_clusters *C = &w->C;
    const double *Fp = &C->Fp[9 * c];
    if (csm_elastic_on(w)) { /* the continuum energy: its lag at v less at v0 */
        csm_fixed_fit f;
        double lag, lag0;
        csm_cluster_fixed_fit(C, x, v, c, &f);
        csm_cluster_stored(w, c, &f, Fp, &C->q[4 * c], h, &lag);
        f.v = v0;
        csm_cluster_stored(w, c, &f, Fp, &C->q[4 * c], h, &lag0);
        return lag - lag0;
    }
    double com[3], Axr[9], F[9], T[9];
    csm_cluster_moments(C, x, c, com, Axr);
    csm_m3_mul(Axr, &C->A_rr_inv[9 * c], F); /* Falkenstein Eq 3 */
    if (stored_transform(w, c, F, Axr, Fp, &C->q[4 * c], T)) return NAN;
    /* the lag's sum w m (g - x) . v = tr(T^T A_vp) + sum w m (xbar - x) . v (csm_cluster_stored) is
       linear in v: taken on the change of v, which only the members whose velocity changed have */
    double Q = 0, Avp[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        double dv[3] = {v[3 * i] - v0[3 * i], v[3 * i + 1] - v0[3 * i + 1], v[3 * i + 2] - v0[3 * i + 2]};
        if (dv[0] == 0 && dv[1] == 0 && dv[2] == 0) continue;
        double wm = C->wmass[j];
        const double *xi = &x[3 * i], *p = &C->p[3 * j];
        Q += wm * ((com[0] - xi[0]) * dv[0] + (com[1] - xi[1]) * dv[1] + (com[2] - xi[2]) * dv[2]);
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) Avp[3 * a + b] += wm * dv[a] * p[b];
    }
    double dot = Q;
    for (int a = 0; a < 9; a++) dot += T[a] * Avp[a];
    return 0.5 * h * csm_spring_stiffness(w, c, Fp, h) * dot;
}

/* Cluster c's step of the volume constraint C_c = det F - 1 (F = A_xr A_rr^-1, Falkenstein Eq 3;
   det F^p = 1, so det F = det F^e). Each membership is a share w_ic m_i of its particle, and
   d C / d x_ic = w_ic m_i cof(F) A_rr^-1 p_ic, so the step of Macklin et al. 2016 Eq 18,
       d lambda = -(C + alpha~ lambda) / (sum w m |cof(F) A_rr^-1 p|^2 + alpha~),
       dx_ic = d lambda cof(F) A_rr^-1 p_ic,
   is linear in p_ic: D = d lambda cof(F) A_rr^-1 goes to D[9]. The weighted sum over the members
   is tr(cof A_rr^-1 cof^T), and alpha~ = 1 / (kappa V_c h^2) (volume_compliance). The moves keep the cluster's momentum (sum w m p = 0) and exert no torque
   about its centre (sum w m d (D p)^T = F A_rr A_rr^-1 cof^T d lambda = det F d lambda 1). */
static void volume_step(const csm_world *w, const double *x, int32_t c, double h, double *lambda, double D[9])
{
    const csm_clusters *C = &w->C;
    memset(D, 0, 9 * sizeof *D);
    double rho = csm_cluster_density(w, c), M = C->mass[c];
    if (C->rank[c] < 3 || !(M > 0) || !(rho > 0)) return;
    double com[3], Axr[9], F[9], cof[9], G[9], GG[9];
    const double *Ainv = &C->A_rr_inv[9 * c];
    csm_cluster_moments(C, x, c, com, Axr);
    csm_m3_mul(Axr, Ainv, F);
    csm_m3_cofactor(F, cof);
    csm_m3_mul(cof, Ainv, G);
    csm_m3_mul_bt(G, cof, GG); /* cof A_rr^-1 cof^T */
    double den = GG[0] + GG[4] + GG[8];
    double compliance = volume_compliance(w, c, h);
    double dl = -(csm_m3_det(F) - 1.0 + compliance * lambda[c]) / (den + compliance);
    if (!isfinite(dl) || !(den > 0)) return;
    lambda[c] += dl;
    for (int a = 0; a < 9; a++) D[a] = dl * G[a];
}

/* Cluster c's share of each member's move, w_ic D p_ic, into C->wgoal (cluster order). Compiled
   for each instruction set (simd.h); each membership's share is its own. */
CSM_CLONES static void volume_shares(csm_clusters *C, int32_t c, const double D[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const double *p = C->p, *weight = C->weight;
    double *out = C->wgoal;
    double D0 = D[0], D1 = D[1], D2 = D[2], D3 = D[3], D4 = D[4], D5 = D[5], D6 = D[6], D7 = D[7], D8 = D[8];
#pragma omp simd
    for (int32_t j = lo; j < hi; j++) {
        double wgt = weight[j], p0 = p[3 * j], p1 = p[3 * j + 1], p2 = p[3 * j + 2];
        out[3 * j] = wgt * (D0 * p0 + D1 * p1 + D2 * p2);
        out[3 * j + 1] = wgt * (D3 * p0 + D4 * p1 + D5 * p2);
        out[3 * j + 2] = wgt * (D6 * p0 + D7 * p1 + D8 * p2);
    }
}

void csm_volume_project(csm_world *w, double *x, double h, double *lambda, double *scratch)
{
    csm_clusters *C = &w->C;
    int32_t k = C->k, n = w->P.n;
    const double *inv_mass = w->P.inv_mass, *share = C->wgoal;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int32_t c = 0; c < k; c++) {
            volume_step(w, x, c, h, lambda, &scratch[9 * c]);
            volume_shares(C, c, &scratch[9 * c]);
        }
        /* every particle moves by the weighted shares of its clusters, in cluster order (Jacobi) */
#pragma omp for schedule(static)
        for (int32_t i = 0; i < n; i++) {
            if (inv_mass[i] == 0.0) continue;
            double d0 = 0, d1 = 0, d2 = 0;
            for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
                const double *v = &share[3 * C->pmember[s]];
                d0 += v[0];
                d1 += v[1];
                d2 += v[2];
            }
            x[3 * i] += d0;
            x[3 * i + 1] += d1;
            x[3 * i + 2] += d2;
        }
    }
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
