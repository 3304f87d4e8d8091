/* The three integrators, one step (Bargteil-Jones 2014 Algorithm 1) with three parameter tables:

     1  g = goals(0)                                        (skipped when no cluster has a gain)
     2  v* = v + alpha (g - x) / h + h f / m
        v* += damping towards each cluster's rigid motion    (Müller et al. 2007, Sec 3.5)
        v* += viscosity: each cluster's strain rate decays   (csm_viscous_velocities)
              (under volume split and the continuum energy both act before the springs' alpha (g - x) / h)
     3  x^0 = x + h v*
     4  for j < iterations:                                  (Jacobi)
     5      g = goals(gamma)                                 (Bargteil-Jones Algorithm 2, the shared kernel)
     6      x^(j+1) = omega g + (1 - omega) x^j
            volume split: the clusters' det F = 1 constraints (csm_volume_project; one pass with
              the papers' springs, passes until they settle under the continuum energy)
            the colliders and contacts (csm_world_project, also once on x^0)
     9  v = v* + (x^iterations - x^0) / h

   Under solver.volume: split the goals of lines 1 and 5 hold shape only, so the volume pass runs
   even without projections (shape_matching: once after line 3).

   Line 9 is Bargteil-Jones Algorithm 1's v = (x(t+h) - x(t)) / h rewritten with x^0 = x(t) + h v*: the same
   number in exact arithmetic, without cancellation far from the origin, and when the loop does
   nothing (iterations = 0, or omega = 0 where every x^(j+1) is x^j) it leaves v* unchanged bit
   for bit. So `strain_limited` with iterations 0 or omega 0 is `shape_matching` step for step
   (Bargteil-Jones Sec 3), and with alpha = 0 and gamma = 0 it is `pbd`.

   The gain of line 2 is alpha = h^2 k / m for every cluster (Bargteil-Jones Sec 2, Müller
   2005), or, with `modulus` set, each cluster's own alpha_c = min(1, h^2 k_c) with k_c the
   stiffness that stores the energy of a material of that shear modulus (csm_modulus_stiffness):
   then line 2 reads v* = v + sum_c alpha_c w_ic (g_ic - x) / h, and the answer no longer depends
   on the cluster size or the step. solver.conserve (csm_goal_pass) makes the corrections of
   lines 2 and 5 keep momentum and angular momentum; `none` is the papers' algorithm.

   Bargteil-Jones Algorithm 1 writes `for j = 0 to iters`; the loop here runs `iterations` times, so that 0
   means no projection at all, as Sec 3 requires. Pinned particles (inverse mass 0) never move. */
#include "elastic.h"
#include "kernel.h"
#include "plugin.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The parameters of all three integrators. A table declares the keys its integrator takes;
   a field it does not declare stays 0, the value that reduces Bargteil-Jones Algorithm 1 to that integrator
   (alpha 0: no springs; gamma 0: projections onto the goals; iterations 0: no loop, where
   omega is never read). */
typedef struct step_params {
    double alpha, modulus, gamma, omega, damping, viscosity;
    int32_t iterations;
} step_params;

#define DAMPING_PARAM                                                                              \
    CSM_P_REAL(step_params, damping, 0, 0, 1,                                                      \
               "per step, the fraction of each particle's velocity relative to its clusters' rigid motion " \
               "that is removed (Müller et al. 2007 Sec 3.5; keeps momentum; 0: none)")
#define VISCOSITY_PARAM                                                                            \
    CSM_P_REAL(step_params, viscosity, 0, 0, 1e15, CSM_VISCOSITY_DOC)
#define ALPHA_PARAM                                                                                \
    CSM_P_REAL(step_params, alpha, 0.5, 0, 1,                                                      \
               "spring gain alpha = h^2 k / m: fraction of the way to the goal per step (Müller 2005)")
#define OMEGA_PARAM                                                                                \
    CSM_P_REAL(step_params, omega, 1, 0, 2,                                                        \
               "relaxation of each Jacobi projection (1: onto the goals; above 1: over-relaxed)")
#define MODULUS_PARAM                                                                              \
    CSM_P_REAL(step_params, modulus, 0, 0, 1e15,                                                   \
               "shear modulus mu (Pa) of the material: each cluster's gain alpha_c = min(1, h^2 k_c) stores " \
               "mu V_c |F - R|^2 under a uniform F whatever the cluster size and step (0: every cluster uses alpha)")

static const csm_param_spec shape_matching_params[] = {
    ALPHA_PARAM,
    MODULUS_PARAM,
    DAMPING_PARAM,
    VISCOSITY_PARAM,
    CSM_PARAM_END,
};

static const csm_param_spec pbd_params[] = {
    CSM_P_INT(step_params, iterations, 4, 0, 10000, "Jacobi projections onto the cluster goals per step"),
    OMEGA_PARAM,
    DAMPING_PARAM,
    VISCOSITY_PARAM,
    CSM_PARAM_END,
};

static const csm_param_spec strain_limited_params[] = {
    ALPHA_PARAM,
    MODULUS_PARAM,
    CSM_P_REAL(step_params, gamma, 0.2, 0, 1e6,
               "strain limit: allowed |x_i - g_ic| / width_c before a projection pulls back (Bargteil-Jones Eq 4; 0: equality)"),
    CSM_P_INT(step_params, iterations, 5, 0, 10000, "Jacobi strain-limiting passes per step (Bargteil-Jones: 3-5)"),
    OMEGA_PARAM,
    DAMPING_PARAM,
    VISCOSITY_PARAM,
    CSM_PARAM_END,
};

typedef struct cluster_step {
    double alpha, gamma, omega, damping, modulus, viscosity;
    int iterations;
    double *x0;      /* [3n] the prediction x^0 */
    double *scratch; /* [12k] cluster rigid velocities (damping) or velocity gradients (viscosity); with
                        volume split, first the [9k] volume steps */
    double *gain;    /* [k] alpha_c, with a modulus */
    double *frame;   /* [12k] rigid frames at the start of the step, for conserve: angular */
    double *lambda;  /* [k] the volume constraints' multipliers, with volume split */
    int32_t n, k_scratch, k_gain, k_frame, k_lambda; /* sizes the buffers hold; they grow only after reclustering */
} cluster_step;

static int step_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const step_params *p = csm_cfg_params(cfg);
    /* a material modulus sets each cluster's stiffness from its volume m_c / rho */
    for (int32_t k = 0; k < w->nobjects && (p->modulus > 0 || p->viscosity > 0); k++)
        if (w->object_density[k] == 0.0)
            return csm_cfg_fail(cfg, err,
                                "%s needs the density of objects[%d], and a points shape encloses no volume%s",
                                p->modulus > 0 ? "modulus" : "viscosity", k, p->modulus > 0 ? " (use alpha)" : "");
    cluster_step *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->alpha = p->alpha;
    s->gamma = p->gamma;
    s->omega = p->omega;
    s->iterations = p->iterations;
    s->damping = p->damping;
    s->modulus = p->modulus;
    s->viscosity = p->viscosity;
    *state = s;
    return 0;
}

static void step_destroy(void *state)
{
    cluster_step *s = state;
    if (s) {
        free(s->x0);
        free(s->scratch);
        free(s->gain);
        free(s->frame);
        free(s->lambda);
    }
    free(s);
}

/* One projection of the volume constraints: one pass with the papers' springs, or, under the
   continuum energy, passes until the multipliers settle (their largest change below VOLUME_TOL of
   the largest, at most VOLUME_PASSES), the colliders and contacts between them, so that each
   cluster's volume answers with kappa whatever the step: one pass of a compliant constraint
   (Macklin et al. 2016 Eq 18) takes 1 / (1 + h^2 kappa V_c D_c) of it (D_c its gradient's
   weight), and a 0.5 m cube of nu = 0.45 between plates gave nu 0.4459 at 20 steps a millisecond
   against 0.4553 at 70 (0.4563 at both now: test_split_volume_is_the_steps_own). */
enum { VOLUME_PASSES = 200 };
#define VOLUME_TOL 1e-6
static void volume_passes(csm_world *w, double *x, double h, double *lambda, double *scratch)
{
    int passes = csm_elastic_volume_on(w) ? VOLUME_PASSES : 1;
    for (int p = 0; p < passes; p++) {
        if (csm_volume_project(w, x, h, lambda, scratch) <= VOLUME_TOL || p == passes - 1) break;
        csm_world_project(w, x, h); /* between passes; the step projects after the last */
    }
}

/* Room for `want` items of `per` doubles in *buf, which holds *have. */
static int grow(double **buf, int32_t *have, int32_t want, size_t per, csm_error *err)
{
    if (*have >= want) return 0;
    free(*buf);
    *buf = malloc(sizeof(double) * per * (size_t)(want ? want : 1));
    *have = *buf ? want : 0;
    return *buf ? 0 : csm_fail(err, CSM_EXIT_FAILURE, "out of memory for integrator buffers");
}

/* One step of Bargteil-Jones Algorithm 1, lines numbered as at the top of this file. */
static int step(csm_world *w, void *state, double h, csm_error *err)
{
    cluster_step *s = state;
    csm_particles *P = &w->P;
    int32_t n = P->n, k = w->C.k;
    int project = s->iterations > 0 && s->omega != 0.0, split = w->volume == CSM_VOLUME_SPLIT;
    if ((project && grow(&s->x0, &s->n, n, 3, err)) ||
        ((s->damping > 0 || s->viscosity > 0 || split) && grow(&s->scratch, &s->k_scratch, k, 12, err)) ||
        (s->modulus > 0 && grow(&s->gain, &s->k_gain, k, 1, err)) || (split && grow(&s->lambda, &s->k_lambda, k, 1, err)))
        return -1;
    double *x = P->x, *v = P->v, *g = P->goal;

    /* The gains of line 2: alpha, or alpha_c from the modulus. */
    int spring = s->alpha > 0;
    double a = s->alpha / h;
    if (s->modulus > 0) {
        csm_modulus_gains(w, s->modulus, h, s->gain, &w->report->gains);
        spring = w->report->gains.max > 0;
        a = 1.0 / h; /* the gains are in the goals: g - x = sum_c alpha_c w_ic (g_ic - x) */
    } else {
        w->report->gains = (csm_gain_stats){s->alpha, s->alpha, s->alpha, 0};
    }
    csm_goal_pass sp = {0.0, s->modulus > 0 ? s->gain : NULL, w->conserve, x, s->frame, 0.0, NULL};
    csm_goal_pass jp = {s->gamma, NULL, w->conserve, P->x_prev, s->frame, 0.0, NULL};
    if ((spring && csm_goal_pass_conserve(w, &sp, x) == CSM_CONSERVE_ANGULAR) ||
        (project && csm_goal_pass_conserve(w, &jp, x) == CSM_CONSERVE_ANGULAR)) {
        /* rotations are removed about x(t): the step then keeps angular momentum exactly */
        if (grow(&s->frame, &s->k_frame, k, 12, err)) return -1;
        sp.frame = jp.frame = s->frame;
        csm_conserve_frames(w, x, s->frame);
        if (project) memcpy(P->x_prev, x, sizeof(double) * 3 * (size_t)n);
    }

    /* Lines 1-2: spring velocities towards the plain goals, external forces. */
    if (spring) {
        w->fit_energy = 1; /* the elastic energy's goals (the continuum's gradient), not the projections' */
        csm_fit_goals_pass(w, x, &sp, g);
        w->fit_energy = 0;
    }
    /* Where the volume passes hold the volume (split, under the continuum energy), damping and
       viscosity act on v + h f / m, before the springs' velocities. The springs' goals hold shape
       only, so their velocities break each cluster's volume and the passes' moves take that back
       (line 9): damped in between, what was taken of the springs' velocities the passes gave back,
       and the budget counted it as dissipated. The 2 m bar under gravity at 100 steps a frame
       counted 12.6 J dissipated at damping 0.1 while it kept its energy (energy_error +12.7 J; at
       viscosity 1e5 Pa s, +36 J): test_damping_under_split_volume_creates_no_energy. */
    int rate_first = split && csm_elastic_volume_on(w);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        double im = P->inv_mass[i];
        if (im == 0.0) continue;
        for (int d = 0; d < 3; d++) {
            double dv = h * P->force[3 * i + d] * im;
            if (spring && !rate_first) dv += a * (g[3 * i + d] - x[3 * i + d]);
            v[3 * i + d] += dv;
        }
    }
    /* the springs' velocity change a (g - x) already in v, for the energy budget */
    const double *kick = spring && !rate_first ? g : NULL;
    if (s->damping > 0) csm_damp_velocities(w, x, v, s->damping, s->scratch, kick, a);
    csm_viscous_velocities(w, x, v, s->viscosity, h, s->scratch, kick, a);
    if (spring && rate_first) {
#pragma omp parallel for schedule(static)
        for (int32_t i = 0; i < n; i++) {
            if (P->inv_mass[i] == 0.0) continue;
            for (int d = 0; d < 3; d++) v[3 * i + d] += a * (g[3 * i + d] - x[3 * i + d]);
        }
    }

    /* Line 3: prediction. */
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        for (int d = 0; d < 3; d++) x[3 * i + d] += h * v[3 * i + d];
    }
    if (split) memset(s->lambda, 0, sizeof(double) * (size_t)k);
    /* With omega = 0 every projection leaves x^(j+1) = x^j: there is nothing to run (and
       skipping the fits keeps the clusters' warm-start rotations exactly as shape matching
       leaves them, so the two integrators stay equal bit for bit). With volume split the
       springs hold no volume: one projection of the volume constraints is the whole loop. With
       colliders or contacts and no loop, they still project once, on the prediction. */
    int constrained = w->constraints != NULL;
    if (!project && !split && !constrained) return 0;
    int32_t loops = project ? s->iterations : split ? 1 : 0;
    if (!project && grow(&s->x0, &s->n, n, 3, err)) return -1;

    /* Lines 4-7: Jacobi strain-limiting (or, with gamma = 0, PBD) projections, each followed by
       one of the volume constraints under volume split; the colliders and contacts are projected
       on the prediction and after every pass (csm_world_project). */
    memcpy(s->x0, x, sizeof(double) * 3 * (size_t)n);
    csm_world_project(w, x, h);
    double om = s->omega;
    for (int j = 0; j < loops; j++) {
        if (project) {
            jp.relax = om; /* x = om g + (1 - om) x, in the pass's per-particle sums */
            jp.relax_x = x;
            csm_fit_goals_pass(w, x, &jp, g);
        }
        if (split) volume_passes(w, x, h, s->lambda, s->scratch);
        csm_world_project(w, x, h);
    }
    /* Line 9. */
    double inv_h = 1.0 / h;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        for (int d = 0; d < 3; d++) v[3 * i + d] += (x[3 * i + d] - s->x0[3 * i + d]) * inv_h;
    }
    return 0;
}

/* The energy the springs of line 2 store: a spring of gain alpha_c pulls particle i with the
   force m_i w_ic (alpha_c / h^2) (g_ic - x_i), the gradient of 1/2 (alpha_c / h^2) w_ic m_i
   |x_i - g_ic|^2 at fixed goals (Müller 2005 Sec 3.3, k = alpha / h^2 per unit mass). With a
   modulus this is mu V_c |F - R|^2 under a uniform F (csm_modulus_stiffness), unless the gain
   was clamped. pbd has no springs: its projections store nothing, and the energy is 0. */
static double step_energy(const csm_world *w, void *state, double h, const double *distance)
{
    const cluster_step *s = state;
    double e = 0;
    for (int32_t c = 0; c < w->C.k; c++) {
        double gain = s->alpha;
        if (s->modulus > 0) gain = fmin(1.0, h * h * csm_modulus_stiffness(w, s->modulus, c));
        e += 0.5 * gain / (h * h) * distance[c];
    }
    return e;
}

/* The three integrators' parameters as the host reads them (csm_integrator_traits): pbd has no
   springs, the other two springs of gain alpha or h^2 k_c, clamped at 1. */
static void step_describe(const void *params, csm_integrator_traits *out)
{
    const step_params *p = params;
    *out = (csm_integrator_traits){.alpha = p->alpha, .modulus = p->modulus, .iterations = p->iterations, .clamped = 1};
}

static void pbd_describe(const void *params, csm_integrator_traits *out)
{
    step_describe(params, out);
    out->clamped = 0;
}

const csm_integrator csm_integrator_shape_matching = {
    .version = 4,
    .name = "shape_matching",
    .summary = "Müller 2005: springs towards the cluster goals, symplectic Euler (Algorithm 1 without lines 4-7)"
               "; with a modulus, the energy of solver.energy (continuum: solver.material of E and nu, corotated linear elasticity by default)",
    .params = shape_matching_params,
    .create = step_create,
    .step = step,
    .destroy = step_destroy,
    .elastic_energy = step_energy,
    .projects_volume = 1,
    .describe = step_describe,
};

const csm_integrator csm_integrator_pbd = {
    .version = 4,
    .name = "pbd",
    .summary = "position-based dynamics (Müller et al. 2007): predict, Jacobi projections onto the goals, v from positions",
    .params = pbd_params,
    .create = step_create,
    .step = step,
    .destroy = step_destroy,
    .elastic_energy = step_energy,
    .projects_volume = 1,
    .describe = pbd_describe,
};

const csm_integrator csm_integrator_strain_limited = {
    .version = 4,
    .name = "strain_limited",
    .summary = "Bargteil-Jones 2014 Algorithm 1: shape-matching springs, then Jacobi strain limiting with gamma"
               "; with a modulus, the energy of solver.energy (continuum: solver.material of E and nu, corotated linear elasticity by default)",
    .params = strain_limited_params,
    .create = step_create,
    .step = step,
    .destroy = step_destroy,
    .elastic_energy = step_energy,
    .projects_volume = 1,
    .describe = step_describe,
};
