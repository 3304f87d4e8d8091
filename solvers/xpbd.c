/* xpbd: extended position-based dynamics (Macklin, Müller and Chentanez 2016) on the clusters.

   The constraints are the memberships: C_ic(x) = x_i - g_ic, a vector constraint pulling particle
   i towards its goal in cluster c, with compliance alpha_ic = 1 / K_ic, K_ic = k_c w_ic m_i, and
   k_c the stiffness per unit mass that stores the energy of a material of shear modulus
   `modulus` (csm_modulus_stiffness, the same k_c the explicit integrators take their gains
   from). The energy these constraints stand for, sum_c 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2, is
   the one shape matching's springs store, so all integrators simulate one material.

   Why per membership. A constraint per cluster (the whole shape-matching energy of the cluster as
   one scalar) would give one multiplier for a sum of squares, whose gradient vanishes at the
   solution and whose XPBD update is ill-conditioned there. A membership constraint is linear in
   x_i with the goals held (as every shape-matching projection holds them).

   The iteration. Macklin et al. 2016 Eqs 6 and 7 ask for x and lambda with
       g(x, lambda) = M (x - y) - sum_ic grad C_ic^T lambda_ic = 0,   h(x, lambda) = C + alpha~ lambda = 0
   (alpha~ = alpha / h^2). Each iteration fits the clusters, holds h = 0 exactly (lambda_ic =
   -h^2 K_ic s_c (x_i - g_ic), s_c the continuum goals' share, csm_elastic_share) and takes one
   Jacobi step on g, every particle at once:
       x_i -= [m_i (x_i - y_i) + h^2 sum_c K_ic s_c (x_i - g_ic)] / (m_i (1 + h^2 k_max)),
   k_max the largest k_c of the particle's object. Why this preconditioner and not each particle's
   own block (1 + h^2 K_i / m_i, Macklin et al. 2016 Eq 18 over its memberships): the
   memberships' forces sum to zero over every cluster (its goals keep its centre), so a step
   proportional to M^-1 times the residual moves the momentum by the same fraction of its error
   in every particle; starting at y with no error, every iterate keeps the momentum to round-off,
   converged or not. A particle's own block weighs the particles unequally wherever the clusters'
   k_c differ, and a spinning cube's centre drifted 0.18 m in 4 s at 10 iterations. Since
   K_i / m_i = sum_c k_c w_ic is a weighted mean of its clusters' k_c, the common factor is at most
   the spread of k_c over the object slower, and it is stable: 1 + h^2 k_max bounds the particle's
   diagonal of M + h^2 Hessian (the fitted goals only lower the energy with the goals held). At
   convergence m_i (x_i - y_i) / h^2 + sum_c K_ic s_c (x_i - g_ic) = 0: implicit Euler on the
   clusters' energy, whose stiffness, unlike pbd's, does not depend on the iteration count (the
   point of Macklin et al. 2016; the GAMES103 lecture's "stiffness behavior is subject to
   non-physical factors"), and whose distance from convergence /diagnostics/iteration_residual
   reports. Same bits for any thread count: each particle's step reads the fit and its own place. */
#include "elastic.h"
#include "grow.h"
#include "implicit.h"
#include "kernel.h"
#include "plugin.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct xpbd_params {
    double modulus, damping, viscosity;
    int32_t iterations;
} xpbd_params;

static const csm_param_spec xpbd_table[] = {
    CSM_P_REAL(xpbd_params, modulus, 1e4, 1e-9, 1e15,
               "shear modulus mu (Pa): the compliance of membership ic is 1 / (k_c w_ic m_i), k_c from mu as for the "
               "other integrators (needs each object's density)"),
    CSM_P_INT(xpbd_params, iterations, 10, 1, 100000,
              "Jacobi iterations per step: a fit of the clusters, then a step of every particle towards implicit Euler"),
    CSM_P_REAL(xpbd_params, damping, 0, 0, 1,
               "per step, the fraction of each particle's velocity relative to its clusters' rigid motion that is "
               "removed (Müller et al. 2007 Sec 3.5; keeps momentum; 0: none)"),
    CSM_P_REAL(xpbd_params, viscosity, 0, 0, 1e15, CSM_VISCOSITY_DOC),
    CSM_PARAM_END,
};

typedef struct xpbd {
    double modulus, damping, viscosity;
    int32_t iterations;
    double *x0;      /* [3n] positions at the start of the step */
    double *y;       /* [3n] the inertial positions the iterations start from */
    double *k;       /* [k] k_c */
    double *scratch; /* [12k] damping, viscosity, volume steps */
    double *vlambda; /* [k] the volume constraints' multipliers (volume split) */
    double *prev;    /* [3n] positions before the last iteration */
    double *share;   /* [k] the continuum goals' share of the pull (csm_elastic_share) */
    double *kmax;    /* [objects] each object's largest k_c */
    int64_t cap[8];
} xpbd;

static int xpbd_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const xpbd_params *p = csm_cfg_params(cfg);
    if (csm_implicit_check_density(cfg, w, err)) return -1;
    xpbd *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->modulus = p->modulus;
    s->damping = p->damping;
    s->viscosity = p->viscosity;
    s->iterations = p->iterations;
    *state = s;
    return 0;
}

static void xpbd_destroy(void *state)
{
    xpbd *s = state;
    if (s) {
        free(s->x0);
        free(s->y);
        free(s->kmax);
        free(s->k);
        free(s->scratch);
        free(s->vlambda);
        free(s->prev);
        free(s->share);
    }
    free(s);
}

static int xpbd_step(csm_world *w, void *state, double h, csm_error *err)
{
    xpbd *s = state;
    csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    int32_t n = P->n, k = C->k;
    if (csm_grow((void **)&s->x0, &s->cap[0], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->y, &s->cap[1], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->k, &s->cap[2], k, sizeof(double)) ||
        csm_grow((void **)&s->scratch, &s->cap[3], 12 * (int64_t)k, sizeof(double)) ||
        csm_grow((void **)&s->vlambda, &s->cap[4], k, sizeof(double)) ||
        csm_grow((void **)&s->prev, &s->cap[5], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->share, &s->cap[6], k, sizeof(double)) ||
        csm_grow((void **)&s->kmax, &s->cap[7], w->nobjects > 0 ? w->nobjects : 1, sizeof(double)))
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for xpbd");
    double *x = P->x;
    memcpy(s->x0, x, sizeof(double) * 3 * (size_t)n);
    memset(s->vlambda, 0, sizeof(double) * (size_t)k);
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) {
        s->k[c] = csm_modulus_stiffness(w, s->modulus, c);
        s->share[c] = csm_elastic_share(w, c); /* a membership's residual is s_c (x - g^) (elastic.c) */
    }
    for (int o = 0; o < w->nobjects; o++) s->kmax[o] = 0;
    for (int32_t c = 0; c < k; c++) {
        int32_t o = csm_cluster_object(w, c);
        if (o >= 0) s->kmax[o] = fmax(s->kmax[o], s->k[c]);
    }
    csm_implicit_report_gains(w, s->k, h);
    /* Prediction: y = x + h v + h^2 f / m (Macklin et al. 2016 Algorithm 1, its first step), the
       velocity damped first as the explicit integrators damp it; the iterations start at y. */
    csm_implicit_predict(w, h, s->damping, s->viscosity, s->scratch, x);
    double h2 = h * h;
    csm_world_project(w, x, h); /* colliders and contacts, on y and after every iteration */
    memcpy(s->y, x, sizeof(double) * 3 * (size_t)n);
    for (int it = 0; it < s->iterations; it++) {
        if (it == s->iterations - 1) memcpy(s->prev, x, sizeof(double) * 3 * (size_t)n);
        w->fit_energy = 1; /* goals of the elastic energy (elastic.c) */
        csm_fit_all(w, x);
        w->fit_energy = 0;
#pragma omp parallel for schedule(static)
        for (int32_t i = 0; i < n; i++) {
            double im = P->inv_mass[i];
            if (im == 0.0) continue;
            double *xi = &x[3 * i], r[3];
            /* h^2 g_i(x, lambda), Macklin et al. 2016 Eq 6, with Eq 7 (h = 0) held: the residual of implicit Euler */
            for (int d = 0; d < 3; d++) r[d] = (xi[d] - s->y[3 * i + d]) / im;
            for (int32_t a = C->poff[i]; a < C->poff[i + 1]; a++) {
                int32_t j = C->pmember[a];
                double g[3], K = s->k[C->mcluster[j]] * C->wmass[j];
                csm_membership_goal(C, j, g);
                double share = s->share[C->mcluster[j]];
                for (int d = 0; d < 3; d++) r[d] += h2 * K * share * (xi[d] - g[d]);
            }
            double den = 1.0 + h2 * s->kmax[P->object[i]];
            for (int d = 0; d < 3; d++) xi[d] -= r[d] * im / den;
        }
        /* volume split: the clusters' volume constraints, Gauss-Seidel after the memberships */
        if (w->volume == CSM_VOLUME_SPLIT) csm_volume_project(w, x, h, s->vlambda, s->scratch);
        csm_world_project(w, x, h);
    }
    /* how far from converged: the last iteration's largest move over the step's largest */
    csm_implicit_report_residual(w, csm_implicit_residual(w, x, s->prev, s->x0));
    /* Velocities from the positions (Macklin et al. 2016 Algorithm 1, its last step). */
    csm_implicit_velocities(w, s->x0, h);
    return 0;
}

/* The energy the constraints stand for at the last fit: sum_c 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2. */
static double xpbd_energy(const csm_world *w, void *state, double h, const double *distance)
{
    (void)h;
    const xpbd *s = state;
    double e = 0;
    for (int32_t c = 0; c < w->C.k; c++) e += 0.5 * csm_modulus_stiffness(w, s->modulus, c) * distance[c];
    return e;
}

static void xpbd_describe(const void *params, csm_integrator_traits *out)
{
    const xpbd_params *p = params;
    *out = (csm_integrator_traits){.modulus = p->modulus, .iterations = p->iterations, .implicit = 1};
}

const csm_integrator csm_integrator_xpbd = {
    .version = 4,
    .name = "xpbd",
    .summary = "Macklin et al. 2016: compliant membership constraints from the modulus, their multipliers held at "
               "the constraints, mass-scaled Jacobi steps over particles (momentum kept at every iterate), towards implicit Euler of the energy of solver.energy (continuum: solver.material of E "
               "and nu, corotated linear elasticity by default) as the iterations grow",
    .params = xpbd_table,
    .create = xpbd_create,
    .step = xpbd_step,
    .destroy = xpbd_destroy,
    .elastic_energy = xpbd_energy,
    .projects_volume = 1,
    .describe = xpbd_describe,
};
