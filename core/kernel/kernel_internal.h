/* What the kernel's files (core/kernel/) share and kernel.h does not offer: the lane order of a
   cluster's member sums, the blocks that hold clusters one per lane, each thread's share of the
   clusters, and the pieces of a fit, a goal and a stored energy that one file takes from another. */
#ifndef CSM_KERNEL_INTERNAL_H
#define CSM_KERNEL_INTERNAL_H

#include "csm_math.h"
#include "kernel.h"
#include "simd.h"

#include <math.h>
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
   set (test_lanes holds them to this order written in scalar code).

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

/* Whether cluster c starts a block of B that holds its clusters one per lane. */
static inline int starts_block(const csm_cluster_blocks *B, int32_t c)
{
    return B && c % CSM_LANES == 0 && B->first[c / CSM_LANES] < B->first[c / CSM_LANES + 1];
}

/* The end of the run of clusters from c that csm_kernel_fit_lanes takes at once: the end of c's block, or hi. */
static inline int32_t block_end(int32_t c, int32_t hi)
{
    int32_t end = (c / CSM_LANES + 1) * CSM_LANES;
    return end < hi ? end : hi;
}

/* A_rr of cluster c from its stored pseudo-inverse: the exact inverse when A_rr has full rank,
   and A_rr without its dropped near-zero directions otherwise. */
static inline void cluster_arr(const csm_clusters *C, int32_t c, double A[9])
{
    const double *Ainv = &C->A_rr_inv[9 * c];
    if (C->rank[c] < 3 || csm_m3_inverse(Ainv, A) == 0.0) csm_pinv_sym3(Ainv, 1e-12, A);
}

/* tr(F^p A_rr F^pT): the second moment sum w m |F^p p|^2 of the plastic rest shape. */
static inline double plastic_moment(const double A[9], const double Fp[9])
{
    double FA[9], B[9];
    csm_m3_mul(Fp, A, FA);
    csm_m3_mul_bt(FA, Fp, B);
    return B[0] + B[4] + B[8];
}

/* The blocks of w's clusters, rebuilt when they changed (serial: before a parallel region); NULL
   when memory runs out, and the fits then keep MEMBER_LANES (lanes.c). */
const csm_cluster_blocks *csm_kernel_blocks(csm_world *w);

/* The sums of csm_cluster_moments for the clusters of block b of B, one per lane, each about its
   first member r, added member after member: s[q][l] and r[a][l] for cluster 8b + l (lanes.c). */
void csm_kernel_moments_across(const csm_cluster_blocks *B, int32_t b, const double *x, double s[15][CSM_LANES],
                               double r[3][CSM_LANES]);

/* Inside a parallel region, the clusters [*lo, *hi) the calling thread works on; outside one,
   every cluster (lanes.c). */
void csm_kernel_share(const csm_clusters *C, const csm_cluster_blocks *B, int32_t *lo, int32_t *hi);

/* csm_cluster_fit of clusters [c, c + n), n <= CSM_LANES, side by side (fit.c). */
void csm_kernel_fit_lanes(const csm_world *w, csm_clusters *C, const csm_cluster_blocks *B, const double *x,
                          int32_t c, int n);

/* The goal transform T of cluster c scaled to the best similarity (solver.volume split, fit.c). */
void csm_kernel_similarity(const csm_clusters *C, int32_t c, const double Axr[9], const double Fp[9], double T[9]);

/* Inside a parallel region: g_i = sum_c w_ic g_ic into out, and the Jacobi update of relax_x
   when not NULL (goals.c). */
void csm_kernel_gather_goals(const csm_world *w, const double *x, double *out, double relax, double *relax_x);

/* csm_fit_goals_all, and the Jacobi update of csm_goal_pass's relax_x when not NULL (goals.c). */
void csm_kernel_fit_goals_relax(csm_world *w, const double *x, double gamma, double *out, double relax,
                                double *relax_x);

/* Cluster c's spring stiffness for a material of shear modulus mu at plastic deformation Fp
   (stiffness.c). */
double csm_kernel_modulus_stiffness(const csm_world *w, double mu, int32_t c, const double Fp[9]);

/* 1/2 kappa_c V_c (J - 1)^2, cluster c's split volume energy at det F = J (volume.c). */
double csm_kernel_volume_energy(const csm_world *w, int32_t c, double J, double h);
/* det F of cluster c's volume term at positions x: the fitted field's mean gradient under the
   continuum energy (csm_elastic_volume_on), else det Flinear, the linear fit's. */
double csm_kernel_volume_det(const csm_world *w, const double *x, int32_t c, const double Flinear[9]);

#endif
