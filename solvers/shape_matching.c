/* Müller 2005 shape matching, clustered (Falkenstein Eq 7-8):
     v += alpha (g - x) / h + h f / m;   x += h v    (symplectic Euler) */
#include "kernel.h"
#include "plugin.h"

#include <stdlib.h>

static const csm_param_spec shape_matching_params[] = {
    {"alpha", CSM_REAL, 0.5, 0, 1, "stiffness: fraction of the way to the goal per step (Müller 2005)", NULL, {0}, NULL, 0},
    CSM_PARAM_END,
};

typedef struct shape_matching {
    double alpha;
} shape_matching;

static int sm_create(const csm_plugin_cfg *cfg, void **state, csm_error *err)
{
    shape_matching *s = malloc(sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->alpha = csm_cfg_num(cfg, "alpha");
    *state = s;
    return 0;
}

static int sm_step(csm_world *w, void *state, double h, csm_error *err)
{
    (void)err;
    const shape_matching *s = state;
    csm_particles *P = &w->P;
    csm_fit_all(w, P->x);
    csm_goals_all(w, P->x, 0.0, P->goal);
    double a = s->alpha / h;
    int32_t n = P->n;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        double im = P->inv_mass[i];
        if (im == 0.0) continue; /* pinned */
        for (int d = 0; d < 3; d++) {
            double *v = &P->v[3 * i + d], *x = &P->x[3 * i + d];
            *v += a * (P->goal[3 * i + d] - *x) + h * P->force[3 * i + d] * im;
            *x += h * *v;
        }
    }
    return 0;
}

const csm_integrator csm_integrator_shape_matching = {
    "shape_matching",
    "Müller 2005 shape matching with clusters: springs towards goals, symplectic Euler",
    shape_matching_params, sm_create, sm_step, free,
};
