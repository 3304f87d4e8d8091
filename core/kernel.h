/* The one shape-matching kernel (docs/DESIGN.md): every integrator, the embedding optimizer and the
   diagnostics fit clusters and gather goals through these functions. */
#ifndef CSM_KERNEL_H
#define CSM_KERNEL_H

#include "world.h"

/* Moments of cluster c at positions x: its centre of mass x-bar = sum w m x / sum w m (Falkenstein
   Falkenstein Eq 7) and A_xr = sum w m (x - x-bar) p^T; F = A_xr A_rr^-1 (Eq 3). */
void csm_cluster_moments(const csm_clusters *C, const double *x, int32_t c, double com[3], double Axr[9]);
/* Fit cluster c at positions x: com x-bar (Falkenstein Eq 7), A_xr, F = A_xr A_rr^-1 (Eq 3),
   F^e = F (F^p)^-1 (Falkenstein Eq 9, 15), R from the world's rotation plugin, and the goal transform
   T = R F^p (Falkenstein Eq 16), or its linear / quadratic blend when the world's mode asks for one. */
void csm_cluster_fit(const csm_world *w, csm_clusters *C, const double *x, int32_t c);
/* Fit every cluster (in parallel). */
void csm_fit_all(csm_world *w, const double *x);

/* Every particle's goal from the last fits into out[3n] (in parallel): g_i = sum_c w_ic g_ic
   (Falkenstein Eq 8), each g_ic pulled towards x_i by the strain-limit clamp of Bargteil-Jones
   Bargteil-Jones Algorithm 2 line 10: g_ic + min(gamma / beta, 1)(x_i - g_ic), beta = |x_i - g_ic| / width_c
   (Bargteil-Jones Eq 4). gamma = 0 gives the plain shape-matching goal. A particle in no cluster gets g_i = x_i.
   Each cluster writes its members' w_ic g_ic, then each particle sums its own in cluster order:
   no atomics, the same bits for any thread count. */
void csm_goals_all(csm_world *w, const double *x, double gamma, double *out);
/* csm_fit_all then csm_goals_all in one pass over the clusters (each cluster's members are
   still in cache for their goals): one goal pass of an integrator. */
void csm_fit_goals_all(csm_world *w, const double *x, double gamma, double *out);

/* A goal pass with per-cluster gains and momentum-conserving corrections. Each membership's
   correction c_ic = g_ic - x_i (after the strain clamp) is
     - with conserve LINEAR or ANGULAR, stripped of its cluster's mass-weighted mean, so the
       corrections of a cluster sum to zero (Newton's third law, which the clamp of Bargteil-Jones
       Bargteil-Jones Algorithm 2 line 10 breaks: clamped goals no longer share their cluster's centre of mass);
     - with ANGULAR, also stripped of its rigid rotation omega x r, r_i = x_ref,i - xbar_ref the
       member's offset at the start of the step and I omega = sum w m r x c, so the corrections
       exert no torque about the cluster's centre (which polar_f's goals do whenever A_rr is not
       isotropic, Falkenstein Sec 3.1). Taking the rotation about the positions at the start of
       the step makes the step keep angular momentum exactly: a position change dx_i of the
       Jacobi loop changes L = sum m x(t+h) x v(t+h) by sum m x(t) x dx / h, and a velocity
       change of the spring stage by sum m x(t) x dv.
   and the pass writes out_i = x_i + sum_c w_ic gain_c c'_ic. With gain NULL (all 1) that is
   sum_c w_ic (x_i + c'_ic), the goal the corrected g_ic give. */
typedef struct csm_goal_pass {
    double gamma;        /* strain limit (Bargteil-Jones Eq 4); 0: none */
    const double *gain;  /* [k] each cluster's share alpha_c of its correction; NULL: 1 */
    int conserve;        /* CSM_CONSERVE_* */
    const double *x_ref; /* [3n] positions at the start of the step (ANGULAR only) */
    const double *frame; /* [12k] csm_conserve_frames of x_ref (ANGULAR only) */
    double relax;        /* with relax_x, the Jacobi update fused into the per-particle sums: */
    double *relax_x;     /* relax_x_i = relax g_i + (1 - relax) relax_x_i where 1/m_i != 0 (NULL: none) */
} csm_goal_pass;

/* The conserve setting a pass really needs (CSM_CONSERVE_NONE where the projection would remove
   nothing, see csm_fit_goals_pass), so a caller knows whether it must prepare frames. */
int csm_goal_pass_conserve(const csm_world *w, const csm_goal_pass *pass, const double *x);
/* Per cluster, the rigid frame the angular projection uses: centre of mass xbar (3) and the
   pseudo-inverse of the inertia tensor I = sum w m (|r|^2 1 - r r^T), r = x - xbar (9), at
   positions x, into frame[12k]. */
void csm_conserve_frames(csm_world *w, const double *x, double *frame);
/* Fit every cluster at x and write out_i as csm_goal_pass says (in parallel, the same bits for
   any thread count). With conserve NONE and gain NULL it is csm_fit_goals_all bit for bit. With
   relax_x (which may be x: every fit has read x before a particle's sum writes it), each particle
   then moves towards its goal, in the same sweep. */
void csm_fit_goals_pass(csm_world *w, const double *x, const csm_goal_pass *pass, double *out);

/* Spring stiffness per unit mass (1/s^2) that gives cluster c the elastic energy of a material
   of shear modulus mu (Pa); see core/kernel/stiffness.c for the derivation. 0 for a cluster with no mass or no
   extent (nothing in it can deform). */
double csm_modulus_stiffness(const csm_world *w, double mu, int32_t c);
/* gain[c] = min(1, h^2 k_c) for every cluster, with their min / mean / max and the number that
   were clamped to 1 (the step h is too coarse for the modulus). */
void csm_modulus_gains(const csm_world *w, double mu, double h, double *gain, csm_gain_stats *stats);

/* The stiffness k_c (1/s^2, per unit mass) of cluster c's springs if its plastic deformation were
   Fp: alpha / h^2, or from the shear modulus (csm_modulus_stiffness), as csm_world's spring_*
   describe the integrator's. */
double csm_spring_stiffness(const csm_world *w, int32_t c, const double Fp[9], double h);
/* What a cluster's stored energy depends on at fixed positions x and velocities v, whatever its
   plastic deformation: F = A_xr A_rr^-1, A_xr, S = sum w m |x - xbar|^2, A_vp = sum w m v p^T and
   Q = sum w m (xbar - x) . v. */
typedef struct csm_fixed_fit {
    double F[9], Axr[9], S, Avp[9], Q;
    double com[3];           /* xbar */
    const double *x, *v;     /* the positions and velocities fitted (the continuum energy reads its members') */
} csm_fixed_fit;
void csm_cluster_fixed_fit(const csm_clusters *C, const double *x, const double *v, int32_t c, csm_fixed_fit *f);
/* The energy 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2 cluster c's springs would store at the
   positions of `f` if its plastic deformation were Fp, with the goals its fit would give there
   (split or coupled, rigid mode; q is its rotation's warm start, not changed). *lag gets the
   cluster's share of the explicit step's energy lag (h/2) sum_i f_i . v_i (csm_diag.elastic_lag;
   0 for an implicit integrator). NaN when Fp is singular. */
double csm_cluster_stored(const csm_world *w, int32_t c, const csm_fixed_fit *f, const double Fp[9], const double q[4],
                          double h, double *lag);

/* solver.volume split. One Jacobi pass of the clusters' volume constraints det F_c = 1, each
   a step of Macklin et al. 2016 Eq 18 with compliance 1 / (kappa_c V_c) (solver.bulk_modulus, or
   by default the bulk stiffness the coupled springs have, core/kernel/volume.c), on the positions x (free
   particles only). lambda[k] holds the multipliers of the step (zero them when it starts);
   scratch holds 9 k doubles. Keeps momentum; no torque about any cluster's centre. Returns the
   pass's largest change of a multiplier over the largest multiplier (0 when all are 0). */
double csm_volume_project(csm_world *w, double *x, double h, double *lambda, double *scratch);
/* The energy the volume terms store at the last fit, sum_c 1/2 kappa_c V_c (det F_c - 1)^2 for
   steps of length h (0 when coupled; a hard constraint stores none). */
double csm_volume_energy(const csm_world *w, double h);
/* Cluster c's whole stored energy at positions x and velocities v: its springs'
   (csm_cluster_stored, rigid-mode goals) with the explicit step's lag, and its split volume term.
   Changes nothing in the clusters. */
double csm_cluster_energy(const csm_world *w, int32_t c, const double *x, const double *v, double h);

/* Material viscosity eta (Pa s), implicitly over a step h: each cluster's symmetric velocity
   gradient decays at the rate 6 eta V_c / tr A_dd (core/kernel/damping.c), without changing its momentum or
   angular momentum. The energy removed goes to the report's dissipated[VISCOSITY]: the kinetic
   energy, less the share of the explicit step's lag it moves when the springs gave the step the
   velocity change a (g - x) (g NULL: none). scratch holds 12 k doubles. */
void csm_viscous_velocities(csm_world *w, const double *x, double *v, double eta, double h, double *scratch,
                            const double *g, double a);
/* The doc of the `viscosity` parameter every integrator takes (csm_viscous_velocities). */
#define CSM_VISCOSITY_DOC                                                                                              \
    "material viscosity eta (Pa s): each cluster's strain rate decays at 6 eta V_c / tr A_dd, implicitly, keeping "    \
    "momentum and angular momentum; needs each object's density (0: none)"

/* Goal of membership j (particle member[j] in cluster mcluster[j]) from the last fit. */
static inline void csm_membership_goal(const csm_clusters *C, int32_t j, double g[3])
{
    const double *T = &C->T[9 * C->mcluster[j]], *p = &C->p[3 * j], *com = &C->com[3 * C->mcluster[j]];
    g[0] = T[0] * p[0] + T[1] * p[1] + T[2] * p[2] + com[0];
    g[1] = T[3] * p[0] + T[4] * p[1] + T[5] * p[2] + com[1];
    g[2] = T[6] * p[0] + T[7] * p[1] + T[8] * p[2] + com[2];
    if (C->Q) { /* quadratic mode: + Q (q2(p) - qmean) */
        const double *Q = &C->Q[18 * C->mcluster[j]], *mean = &C->qmean[6 * C->mcluster[j]];
        double q[6];
        csm_quad_terms(p, q);
        for (int a = 0; a < 6; a++) {
            double t = q[a] - mean[a];
            g[0] += Q[a] * t;
            g[1] += Q[6 + a] * t;
            g[2] += Q[12 + a] * t;
        }
        if (C->eta && C->eta_epoch == C->epoch) { /* the consistent gradient's term (elastic.c) */
            const double *S = &C->S[9 * C->mcluster[j]], *e = &C->eta[3 * j];
            g[0] += S[0] * e[0] + S[1] * e[1] + S[2] * e[2];
            g[1] += S[3] * e[0] + S[4] * e[1] + S[5] * e[2];
            g[2] += S[6] * e[0] + S[7] * e[1] + S[8] * e[2];
        }
    }
}

/* Velocity damping towards each cluster's rigid motion (Müller et al. 2007, PBD Sec 3.5, with
   the cluster weights w_ic): dv_i = sum_c w_ic (v_cm,c + omega_c x (x_i - xbar_c) - v_i),
   v_i += k dv_i. Conserves linear and angular momentum; k = 0 does nothing, k = 1 makes every
   cluster move rigidly. `scratch` holds 9 k doubles. The energy removed goes to the report's
   dissipated[DAMPING], counted as csm_viscous_velocities counts it (g, a). */
void csm_damp_velocities(csm_world *w, const double *x, double *v, double k, double *scratch, const double *g, double a);

/* Sums that parallel loops make, the same bits for any thread count: [0, count) is cut into
   CSM_SUM_BLOCKS fixed blocks, the loop runs over blocks, each block adds its items in order
   (into a local, stored to part[b] once: the items' writes cannot alias it, and two threads do
   not write one cache line item by item), and csm_block_total adds the blocks in order. */
#define CSM_SUM_BLOCKS 64

static inline int32_t csm_block_start(int32_t count, int b) { return (int32_t)((int64_t)count * b / CSM_SUM_BLOCKS); }
static inline double csm_block_total(const double part[CSM_SUM_BLOCKS])
{
    double s = 0;
    for (int b = 0; b < CSM_SUM_BLOCKS; b++) s += part[b];
    return s;
}

/* Set the number of threads used by the parallel loops (OpenMP); 0 keeps the default. */
void csm_set_threads(int threads);
int csm_get_threads(void);

#endif
