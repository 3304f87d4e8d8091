/* xpbd: extended position-based dynamics (Macklin, Müller and Chentanez 2016) on the clusters.

   The constraints are the memberships: C_ic(x) = x_i - g_ic, a vector constraint pulling particle
   i towards its goal in cluster c, with compliance alpha_ic = 1 / K_ic, K_ic = k_c w_ic m_i, and
   k_c the stiffness per unit mass that stores the energy of a material of shear modulus
   `modulus` (csm_modulus_stiffness, the same k_c the explicit integrators take their gains
   from). The energy these constraints stand for, sum_c 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2, is
   the one shape matching's springs store, so all integrators simulate one material.

   Why per membership, and solved per particle. A constraint per cluster (the whole shape-matching
   energy of the cluster as one scalar) would give one multiplier for a sum of squares, whose
   gradient vanishes at the solution and whose XPBD update is ill-conditioned there. A membership
   constraint is linear in x_i with the goals held (as every shape-matching projection holds
   them), so its gradient is the identity and its update is exact. A particle's memberships share
   its position: they are solved together, exactly (a block of Macklin et al. 2016 Eq 18 over the
   constraints of one particle), which makes the iteration a Jacobi iteration over particles
   between fits of the clusters, the same order as the other integrators and the same bits for
   any thread count. With the goals held, the block step is

       S = -sum_c (h^2 K_ic r_ic + lambda_ic) / (1 + h^2 K_i / m_i),   r_ic = x_i - g_ic,  K_i = sum_c K_ic
       x_i += S / m_i,   lambda_ic = -h^2 K_ic (r_ic + S / m_i)

   (lambda in the paper's scaling, compliance over h^2: alpha~ = alpha / h^2). At convergence
   m_i (x_i - y_i) / h^2 + sum_c K_ic (x_i - g_ic) = 0: implicit Euler on the clusters' energy,
   whose stiffness, unlike pbd's, does not depend on the iteration count (the point of Macklin et
   al. 2016; the GAMES103 lecture's "stiffness behavior is subject to non-physical factors"). */
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
              "Jacobi iterations per step: a fit of the clusters, then every particle's memberships solved together"),
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
    double *lambda;  /* [3m] each membership's multiplier */
    double *k;       /* [k] k_c */
    double *scratch; /* [12k] damping, viscosity, volume steps */
    double *vlambda; /* [k] the volume constraints' multipliers (volume split) */
    double *prev;    /* [3n] positions before the last iteration */
    double *share;   /* [k] the continuum goals' share of the pull (csm_elastic_share) */
    int64_t cap[7];
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
        free(s->lambda);
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
        csm_grow((void **)&s->lambda, &s->cap[1], 3 * (int64_t)C->m, sizeof(double)) ||
        csm_grow((void **)&s->k, &s->cap[2], k, sizeof(double)) ||
        csm_grow((void **)&s->scratch, &s->cap[3], 12 * (int64_t)k, sizeof(double)) ||
        csm_grow((void **)&s->vlambda, &s->cap[4], k, sizeof(double)) ||
        csm_grow((void **)&s->prev, &s->cap[5], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->share, &s->cap[6], k, sizeof(double)))
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for xpbd");
    double *x = P->x;
    memcpy(s->x0, x, sizeof(double) * 3 * (size_t)n);
    memset(s->lambda, 0, sizeof(double) * 3 * (size_t)C->m);
    memset(s->vlambda, 0, sizeof(double) * (size_t)k);
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) {
        s->k[c] = csm_modulus_stiffness(w, s->modulus, c);
        s->share[c] = csm_elastic_share(w, c); /* a membership's residual is s_c (x - g^) (elastic.c) */
    }
    csm_implicit_report_gains(w, s->k, h);
    /* Prediction: y = x + h v + h^2 f / m (Macklin et al. 2016 Algorithm 1, its first step), the
       velocity damped first as the explicit integrators damp it; the iterations start at y. */
    csm_implicit_predict(w, h, s->damping, s->viscosity, s->scratch, x);
    double h2 = h * h;
    csm_world_project(w, x, h); /* colliders and contacts, on y and after every iteration */
    for (int it = 0; it < s->iterations; it++) {
        if (it == s->iterations - 1) memcpy(s->prev, x, sizeof(double) * 3 * (size_t)n);
        w->fit_energy = 1; /* goals of the elastic energy (elastic.c) */
        csm_fit_all(w, x);
        w->fit_energy = 0;
#pragma omp parallel for schedule(static)
        for (int32_t i = 0; i < n; i++) {
            double im = P->inv_mass[i];
            if (im == 0.0) continue;
            double *xi = &x[3 * i], sum[3] = {0, 0, 0}, Ki = 0;
            for (int32_t a = C->poff[i]; a < C->poff[i + 1]; a++) {
                int32_t j = C->pmember[a];
                double g[3], K = s->k[C->mcluster[j]] * C->wmass[j];
                csm_membership_goal(C, j, g);
                double share = s->share[C->mcluster[j]];
                for (int d = 0; d < 3; d++) sum[d] += h2 * K * share * (xi[d] - g[d]) + s->lambda[3 * j + d];
                Ki += K;
            }
            if (Ki == 0.0) continue;
            /* Macklin et al. 2016 Eq 18 for the block of particle i's memberships */
            double S[3], den = 1.0 + h2 * Ki * im;
            for (int d = 0; d < 3; d++) S[d] = -sum[d] / den;
            for (int32_t a = C->poff[i]; a < C->poff[i + 1]; a++) {
                int32_t j = C->pmember[a];
                double g[3], K = s->k[C->mcluster[j]] * C->wmass[j];
                csm_membership_goal(C, j, g);
                double share = s->share[C->mcluster[j]];
                for (int d = 0; d < 3; d++) s->lambda[3 * j + d] = -h2 * K * (share * (xi[d] - g[d]) + S[d] * im);
            }
            for (int d = 0; d < 3; d++) xi[d] += S[d] * im;
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

const csm_integrator csm_integrator_xpbd = {
    .version = 3,
    .name = "xpbd",
    .summary = "Macklin et al. 2016: compliant membership constraints from the modulus, a multiplier each, Jacobi over "
               "particles, towards implicit Euler of the energy of solver.energy (continuum: corotated linear "
               "elasticity of E and nu) as the iterations grow",
    .params = xpbd_table,
    .create = xpbd_create,
    .step = xpbd_step,
    .destroy = xpbd_destroy,
    .elastic_energy = xpbd_energy,
    .projects_volume = 1,
};
