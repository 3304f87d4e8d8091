/* Local embedding (Falkenstein 2017 Sec 3.2.2): positions e_i of particles and e_c of clusters in
   an "embedded space", a stress-free configuration of the neighbourhood of a seed particle in
   which a new cluster is placed. The energy minimised is Falkenstein Eq 21,

       E(e) = sum_{c in C_e} sum_{i in c} w_ic m_i |R_c F^p_c p_ic - (e_i - e_c)|^2,

   with each term weighted by the particle's mass as well: the shape-matching energy of the
   kernel, and Falkenstein Eq 21 times m when masses are equal (every paper experiment). R_c and e_c are
   whatever minimises E for the current e_i (the Procrustes rotation of A_xr (F^p)^T and the
   cluster's weighted centre), so E is a function of the particle positions alone and the two
   solvers below are compared on the same measure. */
#ifndef CSM_EMBEDDING_H
#define CSM_EMBEDDING_H

#include "svd3.h"
#include "world.h"

typedef struct csm_embedding {
    int32_t nc, np;       /* clusters and particles embedded */
    int32_t *cluster;     /* [nc] the clusters C_e (Falkenstein Eq 22), increasing */
    int32_t *particle;    /* [np] the particles P_e (Falkenstein Eq 23), increasing ids */
    int32_t *local;       /* [n] index of a particle in `particle`, -1 outside P_e */
    unsigned char *mark;  /* [k] clusters in C_e while the set is built */
    int32_t *slot;        /* [k] index of a cluster in `cluster`, -1 outside C_e */
    double *e;            /* [3n] embedded positions, by particle id (meaningful on P_e) */
    double *centre;       /* [3nc] e_c of the last fit */
    double *T;            /* [9nc] R_c F^p_c of the last fit */
    double *q;            /* [4nc] R_c as a quaternion: each fit starts from the last (first: the cluster's own) */
    double *acc;          /* [4np] goal sums and weight sums of a Jacobi sweep */
    double *lin;          /* linear embedding: the (np + nc)^2 matrix and 3 right-hand sides; local/global:
                             the nc^2 factor, 3 right-hand sides and the held centre's column */
    int32_t lg_pin;       /* local/global: the cluster whose centre is held */
    double *lg_mshare;    /* local/global, by membership of C_e (clusters in order): the shares W_ic / W_i */
    double *lg_cluster;   /* [4nc] sum_i W_ic p_ic and W_c */
    int32_t *lg_macc;     /* by membership of C_e: 4 x its particle's index in `particle` */
    int32_t cap_n, cap_k;
    int64_t cap_np, cap_nc;
    int64_t cap_acc, cap_centre, cap_T, cap_q, cap_lin; /* in doubles */
    int64_t cap_lg_mshare, cap_lg_cluster, cap_lg_macc;
} csm_embedding;

void csm_embedding_free(csm_embedding *E);

/* The local embedding set of a seed particle (Falkenstein Eq 22-23): C_p the clusters containing the seed,
   C_e those and every cluster sharing a particle with one of them, P_e every member of C_e.
   The embedded positions start at x. Returns -1 when out of memory. */
int csm_embedding_set(csm_embedding *E, const csm_clusters *C, const double *x, int32_t seed);

/* E(e) of the current positions; fits R_c and e_c of every cluster in C_e on the way. */
double csm_embedding_energy(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd);

/* Falkenstein's embedding optimisation: Jacobi iterations of strain limiting with gamma = 0
   (Bargteil-Jones Algorithm 1 lines 4-7): fit every cluster at e, move every particle to the
   weighted mean of its goals R_c F^p_c p_ic + e_c. Each sweep minimises E exactly over the
   rotations and centres and then over the particles, so E never rises. Stops after
   max_iterations, or once a sweep's sum of squared position changes is at most `tolerance`
   times the first sweep's (Falkenstein Sec 3.2.2: 1e-8, with twenty sweeps "more than
   sufficient"; the compressed beam's additions take 101 to 325). Returns the sweeps taken; E at the end goes to
   *energy, and *converged is 1 when the tolerance stopped the sweeps, 0 when max_iterations did. */
int csm_embed_nonlinear(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int max_iterations,
                        double tolerance, double *energy, int *converged);

/* The same minimisation by local/global steps (as-rigid-as-possible's alternation): fit every
   cluster at e (the local step, as the Jacobi sweep), then minimise E over the particles and the
   centres together with the rotations held (the global step, a linear solve in the nc centres).
   E never rises, and a step moves the whole neighbourhood at once, where a Jacobi sweep moves
   each particle towards its own clusters only. The same stopping rule as csm_embed_nonlinear.
   Returns the steps taken, or -1 when out of memory or a solve fails. */
int csm_embed_local_global(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int max_iterations,
                           double tolerance, double *energy, int *converged);

/* Jones et al. 2014's linearisation (Falkenstein Sec 3.2.2): Eq 21 with the rotations left out,
   sum w_ic m_i |F^p_c p_ic - (e_i - e_c)|^2, a weighted graph Laplacian system in the np + nc
   unknowns, the same matrix for x, y and z: one Cholesky factorisation (LAPACKE dposv), three
   right-hand sides. The seed stays at its current position (the energy does not see a
   translation). E(e) at the end goes to *energy. Returns -1 when out of memory or when the
   system is not positive definite. */
int csm_embed_linear(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int32_t seed, double *energy);

#endif
