/* What xpbd and projective_dynamics share (implicit.h). */
#include "implicit.h"

#include "kernel.h"

#include <math.h>

int csm_implicit_check_density(const csm_plugin_cfg *cfg, const csm_world *w, csm_error *err)
{
    for (int32_t o = 0; o < w->nobjects; o++)
        if (!(w->object_density[o] > 0))
            return csm_cfg_fail(cfg, err,
                                "%s takes its stiffness from the modulus, which needs the density of objects[%d], and a "
                                "points shape encloses no volume",
                                cfg->plugin->name, o);
    return 0;
}

void csm_implicit_report_gains(csm_world *w, const double *k, double h)
{
    int32_t n = w->C.k;
    csm_gain_stats st = {n ? INFINITY : 0, 0, 0, 0};
    for (int32_t c = 0; c < n; c++) {
        double g = h * h * k[c];
        st.min = fmin(st.min, g);
        st.max = fmax(st.max, g);
        st.mean += g / n;
    }
    w->report->gains = st;
}

void csm_implicit_predict(csm_world *w, double h, double damping, double viscosity, double *scratch, double *y)
{
    csm_particles *P = &w->P;
    double *x = P->x, *v = P->v;
    int32_t n = P->n;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        double im = P->inv_mass[i];
        if (im == 0.0) continue;
        for (int d = 0; d < 3; d++) v[3 * i + d] += h * P->force[3 * i + d] * im;
    }
    if (damping > 0) csm_damp_velocities(w, x, v, damping, scratch, NULL, 0.0);
    csm_viscous_velocities(w, x, v, viscosity, h, scratch, NULL, 0.0);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) y[3 * i + d] = x[3 * i + d] + (P->inv_mass[i] > 0 ? h * v[3 * i + d] : 0.0);
}

void csm_implicit_velocities(csm_world *w, const double *x0, double h)
{
    csm_particles *P = &w->P;
    double inv_h = 1.0 / h;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        for (int d = 0; d < 3; d++) P->v[3 * i + d] = (P->x[3 * i + d] - x0[3 * i + d]) * inv_h;
    }
}

double csm_implicit_residual(const csm_world *w, const double *x, const double *prev, const double *x0)
{
    double moved = 0, step = 0;
    for (int64_t a = 0; a < 3 * (int64_t)w->P.n; a++) {
        moved = fmax(moved, fabs(x[a] - prev[a]));
        step = fmax(step, fabs(x[a] - x0[a]));
    }
    return step > 0 ? moved / step : moved > 0 ? INFINITY : 0.0;
}

void csm_implicit_report_residual(csm_world *w, double residual)
{
    if (w->report && residual > w->report->iteration_residual) w->report->iteration_residual = residual;
}
