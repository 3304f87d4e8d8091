/* Müller 2005 shape matching, clustered (Falkenstein Eq 7-8):
     v += alpha (g - x) / h + h f / m;   x += h v    (symplectic Euler) */
#include "kernel.h"
#include "plugin.h"

#include <stdlib.h>

static const csm_param_spec shape_matching_params[] = {
    {"alpha", CSM_REAL, 0.5, 0, 1, "stiffness: fraction of the way to the goal per step (Müller 2005)", NULL, {0}, NULL, 0},
    {"damping", CSM_REAL, 0, 0, 1, "velocity damping towards each cluster's rigid motion per step (0: none)", NULL, {0}, NULL, 0},
    CSM_PARAM_END,
};

typedef struct shape_matching {
    double alpha, damping;
    double *scratch; /* 9 per cluster, for damping */
    int32_t scratch_k;
} shape_matching;

static int sm_create(const csm_plugin_cfg *cfg, void **state, csm_error *err)
{
    shape_matching *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->alpha = csm_cfg_num(cfg, "alpha");
    s->damping = csm_cfg_num(cfg, "damping");
    s->scratch = NULL;
    s->scratch_k = 0;
    *state = s;
    return 0;
}

static void sm_destroy(void *state)
{
    shape_matching *s = state;
    if (s) free(s->scratch);
    free(s);
}

static int sm_step(csm_world *w, void *state, double h, csm_error *err)
{
    shape_matching *s = state;
    csm_particles *P = &w->P;
    csm_fit_all(w, P->x);
    csm_goals_all(w, P->x, 0.0, P->goal);
    double a = s->alpha / h;
    int32_t n = P->n;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        double im = P->inv_mass[i];
        if (im == 0.0) continue; /* pinned */
        for (int d = 0; d < 3; d++)
            P->v[3 * i + d] += a * (P->goal[3 * i + d] - P->x[3 * i + d]) + h * P->force[3 * i + d] * im;
    }
    if (s->damping > 0) {
        if (s->scratch_k < w->C.k) { /* sized once, again only after reclustering grows k */
            free(s->scratch);
            s->scratch = malloc(sizeof(double) * 9 * (size_t)w->C.k);
            if (!s->scratch) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
            s->scratch_k = w->C.k;
        }
        csm_damp_velocities(w, P->x, P->v, s->damping, s->scratch);
    }
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        for (int d = 0; d < 3; d++) P->x[3 * i + d] += h * P->v[3 * i + d];
    }
    return 0;
}

const csm_integrator csm_integrator_shape_matching = {
    "shape_matching",
    "Müller 2005 shape matching with clusters: springs towards goals, symplectic Euler",
    shape_matching_params, sm_create, sm_step, sm_destroy,
};
