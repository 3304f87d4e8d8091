/* The continuum cluster energy (solver.energy: continuum): each cluster stores the linear-elastic
   strain energy of its least-squares quadratic displacement field, integrated over its members,
   plus a spring on what that field cannot fit. See elastic.c for the derivation. */
#ifndef CSM_ELASTIC_H
#define CSM_ELASTIC_H

#include "world.h"

/* At the rest data of cluster c, with V and lam the eigenvectors (columns) and eigenvalues of
   A~_qq (row major, ascending) and tol the smallest one kept: the largest eigenvalue of
   A~_qq^-1 Gamma (1/m^2), which bounds the energy's stiffness per unit mass. */
double csm_elastic_bound(const csm_clusters *C, int32_t c, const double V[81], const double lam[9], double tol);
/* The Lamé parameters of cluster c's material: mu from the integrator's modulus or its object's,
   lambda = kappa - 2 mu / 3 from solver.bulk_modulus kappa (0: Poisson's ratio 0, lambda = 0).
   Under volume split, lambda is 0 and the energy deviatoric: the volume term holds kappa. */
void csm_elastic_lame(const csm_world *w, double mu, int32_t c, double *mu_c, double *lambda_c);
/* The stiffness per unit mass k_c (1/s^2) of cluster c's goals under the continuum energy: at
   least the largest eigenvalue of its Hessian, so that a goal step never overshoots (the gains
   of the explicit integrators, projective dynamics' global matrix as a majoriser, xpbd's
   compliance). 0 for a cluster with no mass, no density or no quadratic rest data. */
double csm_elastic_stiffness(const csm_world *w, double mu, int32_t c);
/* Whether a modulus's clusters store the continuum energy (energy continuum, its rest data built),
   whatever theta: theta = 1 is a continuum energy too. */
static inline int csm_elastic_on(const csm_world *w)
{
    return w->energy == CSM_ENERGY_CONTINUUM && w->spring_modulus > 0 && w->C.ebound;
}
/* The share s_c of its pull a goal of cluster c's elastic fit carries: under the continuum energy
   the residual's spring theta k_mu over k_c, with k_mu the stiffness bound of the shear term alone
   (lambda does not stiffen what the fit cannot follow), s_c = theta mu / (mu + 3/2 lambda+); its
   goals g^ are those of the stiffness s_c k_c (the springs k_c w m (g - x) with
   g = (1 - s_c) x + s_c g^). 1 under the papers' springs. */
double csm_elastic_share(const csm_world *w, int32_t c);
/* Cluster c's continuum energy (J) at positions x with centre com and plastic deformation Fp
   (R, a rotation near the cluster's, warm-starts the members' polar decompositions), with k the
   stiffness bound k_c (csm_elastic_stiffness) and s_c k the residual's spring (csm_elastic_share):
   with T and Q not NULL, the goal transform whose goals g^_ic = com + T p_ic + Q (q2(p_ic) - qmean)
   give the energy's gradient, s_c k w_ic m_i (x_i - g^_ic) = dE / dx_i; with v not NULL,
   *dot = s_c sum w m (g^ - x) . v, the springs' sum w m (g - x) . v. */
double csm_elastic_cluster(const csm_world *w, int32_t c, const double *x, const double *v, const double com[3],
                           const double R[9], const double Fp[9], double mu, double k, double *T, double *Q,
                           double *S, double *dot);

/* The mean over cluster c's cells of its fitted field's gradient at positions x, A~ H_c^T + X
   (H_c the cells' mean of dq~/dp, [1 0] without consistent gradients, and the correction
   X = sum_j w m_j (x_j - xbar) eta_j^T), into F; 0 where the cluster has no quadratic rest data. The split volume
   term's F (kernel/volume.c): with X, its forces under a uniform pressure balance at every inner
   particle, as the energy's do. */
int csm_elastic_mean_gradient(const csm_world *w, const double *x, int32_t c, double F[9]);
/* Whether the split volume term takes csm_elastic_mean_gradient's F (the continuum energy's
   clusters), not the linear fit's A_xr A_rr^-1 (the papers' springs). */
static inline int csm_elastic_volume_on(const csm_world *w)
{
    return csm_elastic_on(w) && w->C.Aqq_inv && w->C.qmean;
}

/* Solve for the memberships' gradient corrections eta that make the clusters' forces under a
   uniform stress balance at every particle (w->boundary: each particle's surface share), after
   the clusters change. 0, or -1 out of memory. */
int csm_elastic_consistent(csm_world *w);
#endif
