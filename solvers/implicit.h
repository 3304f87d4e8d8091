/* What xpbd and projective_dynamics share: the stiffness k_c from a modulus, reported as the
   gains an explicit step would use, the prediction y = x + h v + h^2 f / m, velocities from
   positions, and how far the iterations are from converged. Internal to solvers/. */
#ifndef CSM_SOLVERS_IMPLICIT_H
#define CSM_SOLVERS_IMPLICIT_H

#include "plugin.h"
#include "world.h"

/* A modulus sets k_c from each cluster's volume m_c / rho: refuse an object without a density. */
int csm_implicit_check_density(const csm_plugin_cfg *cfg, const csm_world *w, csm_error *err);
/* The report's gains: min, mean and max of h^2 k_c over the clusters (nothing is clamped). */
void csm_implicit_report_gains(csm_world *w, const double *k, double h);
/* v += h f / m, damped towards the clusters' rigid motion and by the viscosity (scratch: 12 k
   doubles), then y = x + h v for free particles and y = x for pinned ones; y may be the
   positions themselves. */
void csm_implicit_predict(csm_world *w, double h, double damping, double viscosity, double *scratch, double *y);
/* v = (x - x0) / h for the free particles. */
void csm_implicit_velocities(csm_world *w, const double *x0, double h);
/* How far an iteration was from converged: its largest move |x - prev| over the step's largest
   displacement |x - x0| (0 when nothing moved; infinite when only the iteration did). */
double csm_implicit_residual(const csm_world *w, const double *x, const double *prev, const double *x0);
/* The report's worst residual since the last logged frame (/diagnostics/iteration_residual). */
void csm_implicit_report_residual(csm_world *w, double residual);

#endif
