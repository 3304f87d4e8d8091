/* projective_dynamics: implicit Euler on the clusters' shape-matching energy by local/global
   iterations (Bouaziz et al. 2014; Liu et al. 2013, whose mass-spring form it shares), with a
   sparse Cholesky factor (CHOLMOD) computed once and reused by every step and iteration.

   The energy is the shape-matching springs' (the GAMES103 lecture, "Projective Dynamics - Shape
   Matching": shape matching is projective dynamics with the rotation as the projection):

       E(x) = sum_c 1/2 k_c sum_i w_ic m_i |x_i - xbar_c - R_c F^p_c p_ic|^2,

   k_c from `modulus` as for the other integrators (csm_modulus_stiffness), xbar_c the cluster's
   weighted centre of mass. A step minimises F(x) = sum_i m_i / (2 h^2) |x_i - y_i|^2 + E(x) with
   y = x + h v + h^2 f / m, as the lecture's "Simulation by Projective Dynamics" writes it:

   - local step: each cluster's rotation R_c at the current x, from the selected rotation plugin
     (the projection onto rotations), d_ic = R_c F^p_c p_ic;
   - global step: the quadratic in x with the d_ic held. The centre xbar_c couples every pair of
     a cluster's members, which would make the matrix dense per cluster; it is an unknown c_c of
     its own instead (as Falkenstein 2017 Eq 21 treats cluster centres): minimising over c_c gives
     back xbar_c because sum_i w_ic m_i p_ic = 0, so the answer is the same and the matrix, over
     the free particles and the clusters, is sparse:

         particle row i:  (m_i / h^2 + sum_c K_ic) x_i - sum_c K_ic c_c = m_i y_i / h^2 + sum_c K_ic d_ic
         cluster row c:   (sum_i K_ic) c_c - sum_i K_ic x_i = -sum_i K_ic d_ic,     K_ic = k_c w_ic m_i

     with pinned particles' terms moved to the right. It depends on the masses, the weights, k_c and
     h only: factored when the clustering or its weights change (csm_clusters.epoch: reclustering,
     fades) or the step does, never inside the iterations. k_c is taken with the F^p of that
     moment; plastic flow between two factorisations changes the goals, not the stiffness.

   Each local and each global step lowers the objective, so the iterations never raise it; the
   start is whichever of y and x(t) has the lower objective, so that a step never ends above
   x(t)'s: implicit Euler then only dissipates (kinetic plus elastic energy never grows without
   external work, tested). Colliders and contacts enter the implicit system as Bouaziz et al. 2014
   take collisions in, as constraints with a projection: each iteration projects the iterate onto
   them (csm_world_project, friction included), and every particle a projection has moved this
   step is held toward where it went by a weight PD_CONTACT times its diagonal in the global
   matrix (factored again when that set grows, at most once an iteration), so that the body
   behind a contact answers it within the solve. Projected after every global step instead, the
   fixed point was not the constrained step: a stiff cube dropped at one 60 Hz step came out
   crushed with 6.25e3 J from a 9 J impact; now it lands whole and the contact takes 7.0 J. The
   weight pulls a held particle toward where the last iteration's projection put it, across the
   contact too, until the iterations converge (a cube sliding on a frictionless floor keeps 0.997
   of its speed at 10 iterations). The step ends with one more projection. Converged, and where
   nothing is projected, a step loses exactly what numerical_dissipation counts. */
#include "csm_math.h"
#include "elastic.h"
#include "grow.h"
#include "implicit.h"
#include "kernel.h"
#include "plugin.h"

#include <cholmod.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A particle a collider or contact moved is held toward where it projects by a weight of this
   many times its diagonal in the global matrix: its unconstrained step is left to a thousandth. */
#define PD_CONTACT 1e3

typedef struct pd_params {
    double modulus, tolerance, damping, viscosity;
    int32_t iterations;
} pd_params;

static const csm_param_spec pd_table[] = {
    CSM_P_REAL(pd_params, modulus, 1e4, 1e-9, 1e15,
               "shear modulus mu (Pa): k_c as for the other integrators (needs each object's density)"),
    CSM_P_INT(pd_params, iterations, 10, 1, 100000, "local/global iterations per step, at most"),
    CSM_P_REAL(pd_params, tolerance, 1e-8, 0, 1,
               "stop once an iteration moves the particles by less than this fraction of the step's displacement "
               "(largest coordinate; 0: run every iteration)"),
    CSM_P_REAL(pd_params, damping, 0, 0, 1,
               "per step, the fraction of each particle's velocity relative to its clusters' rigid motion that is "
               "removed before the step (Müller et al. 2007 Sec 3.5; keeps momentum; 0: none, implicit Euler's own "
               "dissipation only)"),
    CSM_P_REAL(pd_params, viscosity, 0, 0, 1e15, CSM_VISCOSITY_DOC),
    CSM_PARAM_END,
};

typedef struct pd {
    double modulus, tolerance, damping, viscosity;
    int32_t iterations;
    cholmod_common cm;
    cholmod_factor *L;
    cholmod_dense *B, *X, *Y, *E; /* right-hand side, solution and CHOLMOD's solve workspaces */
    uint64_t epoch, pins;         /* of the clusters and the pins the factor was made for */
    double h;
    int32_t n, k, m, rows;
    int32_t *row;      /* [n + k] unknown of each particle (-1: pinned) and cluster (-1: no stiffness) */
    double *kc;        /* [k] k_c at the factorisation */
    double *x0, *y, *prev, *scratch; /* [3n] x(t), the prediction, the last iterate; [12k] damping, viscosity */
    double *grad, *fit;                /* [3n] the energy's gradient at the step's end; the fit state saved around it */
    double *proj, *pen;                /* [3n] the iterate projected onto the colliders and contacts; [n] each particle's
                                          contact weight in the factor (0: none) */
    unsigned char *held, *want;        /* [n] the particles the factor holds toward their projections, and those the
                                          step's projections moved */
    int64_t cap[12];
    int factorisations;
    int timing; /* the report's "factorisation" timing */
} pd;

static int pd_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const pd_params *p = csm_cfg_params(cfg);
    if (csm_implicit_check_density(cfg, w, err)) return -1;
    pd *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->modulus = p->modulus;
    s->tolerance = p->tolerance;
    s->damping = p->damping;
    s->viscosity = p->viscosity;
    s->iterations = p->iterations;
    cholmod_start(&s->cm);
    s->cm.print = 0;
    s->cm.error_handler = NULL;
    /* a simplicial LDL^T with AMD: no BLAS threads, the same bits for any thread count */
    s->cm.supernodal = CHOLMOD_SIMPLICIAL;
    s->cm.nmethods = 1;
    s->cm.method[0].ordering = CHOLMOD_AMD;
    s->cm.postorder = 1;
    s->timing = csm_report_timing(w->report, "factorisation",
                                  "projective_dynamics: assembling and factoring the global matrix, once and after "
                                  "each change of the clustering or its weights");
    *state = s;
    return 0;
}

static void pd_release(pd *s)
{
    cholmod_free_factor(&s->L, &s->cm);
    cholmod_free_dense(&s->B, &s->cm);
    cholmod_free_dense(&s->X, &s->cm);
    cholmod_free_dense(&s->Y, &s->cm);
    cholmod_free_dense(&s->E, &s->cm);
}

static void pd_destroy(void *state)
{
    pd *s = state;
    if (!s) return;
    pd_release(s);
    cholmod_finish(&s->cm);
    free(s->row);
    free(s->kc);
    free(s->x0);
    free(s->y);
    free(s->prev);
    free(s->scratch);
    free(s->grad);
    free(s->fit);
    free(s->proj);
    free(s->pen);
    free(s->held);
    free(s->want);
    free(s);
}

/* Assemble the global matrix (its upper triangle) and factor it. */
static int factor(pd *s, csm_world *w, double h, csm_error *err)
{
    const csm_particles *P = &w->P;
    const csm_clusters *C = &w->C;
    int32_t n = P->n, k = C->k;
    pd_release(s);
    if (csm_grow((void **)&s->row, &s->cap[0], (int64_t)n + k, sizeof(int32_t)) ||
        csm_grow((void **)&s->kc, &s->cap[1], k, sizeof(double)))
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for projective_dynamics");
    int32_t rows = 0;
    for (int32_t i = 0; i < n; i++) s->row[i] = P->inv_mass[i] > 0 ? rows++ : -1;
    for (int32_t c = 0; c < k; c++) {
        s->kc[c] = csm_modulus_stiffness(w, s->modulus, c);
        s->row[n + c] = s->kc[c] > 0 ? rows++ : -1;
    }
    size_t nz = (size_t)rows + (size_t)C->m;
    cholmod_triplet *T = cholmod_allocate_triplet((size_t)rows, (size_t)rows, nz, 1, CHOLMOD_REAL, &s->cm);
    if (!T) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for projective_dynamics' matrix");
    int *ti = T->i, *tj = T->j;
    double *tx = T->x;
    size_t e = 0;
    for (int32_t i = 0; i < n; i++) { /* the particles' diagonal: m_i / h^2 + sum_c K_ic, and a contact's weight */
        if (s->row[i] < 0) continue;
        double d = P->mass[i] / (h * h);
        for (int32_t a = C->poff[i]; a < C->poff[i + 1]; a++) {
            int32_t j = C->pmember[a];
            d += s->kc[C->mcluster[j]] * C->wmass[j];
        }
        s->pen[i] = s->held[i] ? PD_CONTACT * d : 0.0;
        ti[e] = tj[e] = s->row[i];
        tx[e++] = d + s->pen[i];
    }
    for (int32_t c = 0; c < k; c++) { /* the clusters' diagonal and their coupling to the members */
        int32_t rc = s->row[n + c];
        if (rc < 0) continue;
        double d = 0;
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            double K = s->kc[c] * C->wmass[j];
            d += K;
            int32_t ri = s->row[C->member[j]];
            if (ri < 0 || K == 0.0) continue;
            ti[e] = ri < rc ? ri : rc; /* the upper triangle */
            tj[e] = ri < rc ? rc : ri;
            tx[e++] = -K;
        }
        ti[e] = tj[e] = rc;
        tx[e++] = d;
    }
    T->nnz = e;
    cholmod_sparse *A = cholmod_triplet_to_sparse(T, e, &s->cm);
    cholmod_free_triplet(&T, &s->cm);
    if (!A) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for projective_dynamics' matrix");
    s->L = cholmod_analyze(A, &s->cm);
    if (s->L) cholmod_factorize(A, s->L, &s->cm);
    cholmod_free_sparse(&A, &s->cm);
    if (!s->L || s->cm.status != CHOLMOD_OK)
        return csm_fail(err, CSM_EXIT_FAILURE,
                        "projective_dynamics: the global matrix could not be factored (CHOLMOD status %d)", s->cm.status);
    s->B = cholmod_zeros((size_t)rows, 3, CHOLMOD_REAL, &s->cm);
    if (!s->B) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for projective_dynamics");
    s->epoch = C->epoch;
    s->pins = w->pins;
    s->h = h;
    s->n = n;
    s->k = k;
    s->m = C->m;
    s->rows = rows;
    s->factorisations++;
    return 0;
}

/* d_ic = g_ic - xbar_c at the last fit's positions x: R_c F^p_c p_ic, or under the continuum
   energy (1 - s_c) (x_i - xbar_c) + s_c (g^_ic - xbar_c) (csm_elastic_share), whose springs give the energy's
   gradient (elastic.c): the global step then minimises a quadratic that lies above the energy
   and touches it at x, and lowers it. */
static void projected_offset(const csm_world *w, const double *x, int32_t j, double d[3])
{
    const csm_clusters *C = &w->C;
    int32_t c = C->mcluster[j];
    if (!csm_elastic_on(w)) {
        double RF[9];
        csm_m3_mul(&C->R[9 * c], &C->Fp[9 * c], RF);
        csm_m3_mul_v3(RF, &C->p[3 * j], d);
        return;
    }
    const double *xi = &x[3 * C->member[j]], *com = &C->com[3 * c];
    csm_membership_goal(C, j, d);
    double share = csm_elastic_share(w, c);
    for (int a = 0; a < 3; a++) d[a] = (1.0 - share) * (xi[a] - com[a]) + share * (d[a] - com[a]);
}

/* The step's objective at x: sum m |x - y|^2 / (2 h^2) + E(x), the rotations fitted at x; *elastic
   (where given) E(x). */
static double objective(pd *s, csm_world *w, const double *x, double h, double *elastic_out)
{
    const csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    w->fit_energy = 1;
    csm_fit_all(w, x);
    w->fit_energy = 0;
    double inertia = 0, elastic = 0;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        for (int a = 0; a < 3; a++) inertia += P->mass[i] * (x[3 * i + a] - s->y[3 * i + a]) * (x[3 * i + a] - s->y[3 * i + a]);
    }
    if (csm_elastic_on(w)) { /* the continuum energy itself */
        for (int32_t c = 0; c < C->k; c++)
            elastic += 2.0 * csm_elastic_cluster(w, c, x, NULL, &C->com[3 * c], &C->R[9 * c], &C->Fp[9 * c], s->modulus,
                                                 s->kc[c], NULL, NULL, NULL, NULL);
        if (elastic_out) *elastic_out = 0.5 * elastic;
        return 0.5 * inertia / (h * h) + 0.5 * elastic;
    }
    for (int32_t j = 0; j < C->m; j++) {
        int32_t c = C->mcluster[j];
        double d[3];
        projected_offset(w, x, j, d);
        const double *xi = &x[3 * C->member[j]], *com = &C->com[3 * c];
        for (int a = 0; a < 3; a++) elastic += s->kc[c] * C->wmass[j] * (xi[a] - com[a] - d[a]) * (xi[a] - com[a] - d[a]);
    }
    if (elastic_out) *elastic_out = 0.5 * elastic;
    return 0.5 * inertia / (h * h) + 0.5 * elastic;
}

/* The last fit's state (what csm_fit_all writes), copied to or from s->fit: the fit at the step's
   end that numerical_dissipation makes leaves the clusters as the step's own last fit left them. */
static void fit_state(pd *s, csm_clusters *C, int back)
{
    struct {
        double *a;
        int per;
    } part[] = {{C->com, 3}, {C->F, 9}, {C->R, 9}, {C->T, 9}, {C->q, 4}, {C->Q, 18}, {C->S, 9}};
    size_t at = 0;
    for (size_t p = 0; p < sizeof part / sizeof part[0]; p++) {
        if (!part[p].a) continue;
        size_t bytes = sizeof(double) * (size_t)part[p].per * (size_t)C->k;
        if (back) memcpy(part[p].a, s->fit + at, bytes);
        else memcpy(s->fit + at, part[p].a, bytes);
        at += (size_t)part[p].per * (size_t)C->k;
    }
}

/* Implicit Euler's own loss over the step, the one its iterations converge to. From (x(t), v(t))
   to (x, v) with m (v - v(t)) = h (f - grad E(x)), x = x(t) + h v, the kinetic plus elastic
   energy plus the potential of the (constant) forces f falls by

       1/2 sum_i m_i |v_i - v_i(t)|^2 + [E(x(t)) - E(x) + grad E(x) . (x - x(t))],

   the second part E's Bregman divergence along the step (>= 0 where E is convex there): what the
   step takes, h^2 times the accelerations' squares and the curvature the step crosses, whatever the
   iterations leave. v(t) is the velocity the prediction carries less the forces' h f / m (the
   velocity after damping and viscosity, whose losses are their own). grad E(x) is the springs' of a fit at x, sum_c K_ic (x_i - xbar_c - d_ic)
   (projected_offset: their sum over a cluster vanishes, so xbar_c's own dependence on x adds
   nothing), independent of the step's equations: the budget's energy_error keeps what the
   iterations and the collider projections leave unconverged. e0 is E(x(t)). */
static double numerical_dissipation(pd *s, csm_world *w, double h, double e0)
{
    const csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    const double *x = P->x;
    fit_state(s, C, 0);
    double e1 = 0;
    objective(s, w, x, h, &e1); /* the fit at x, and E(x) */
    memset(s->grad, 0, sizeof(double) * 3 * (size_t)P->n);
    for (int32_t j = 0; j < C->m; j++) {
        int32_t c = C->mcluster[j], i = C->member[j];
        double d[3], K = s->kc[c] * C->wmass[j];
        projected_offset(w, x, j, d);
        for (int a = 0; a < 3; a++) s->grad[3 * i + a] += K * (x[3 * i + a] - C->com[3 * c + a] - d[a]);
    }
    fit_state(s, C, 1);
    double kinetic = 0, bregman = e0 - e1;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->inv_mass[i] == 0.0) continue;
        for (int a = 0; a < 3; a++) {
            double dv = P->v[3 * i + a] - (s->y[3 * i + a] - s->x0[3 * i + a]) / h + h * P->force[3 * i + a] * P->inv_mass[i];
            kinetic += 0.5 * P->mass[i] * dv * dv;
            bregman += s->grad[3 * i + a] * (x[3 * i + a] - s->x0[3 * i + a]);
        }
    }
    return kinetic + bregman;
}

/* One global step: the right-hand side from the d_ic of the last fit, a solve, x from it. */
static int global_step(pd *s, csm_world *w, double *x, double h, csm_error *err)
{
    const csm_particles *P = &w->P;
    const csm_clusters *C = &w->C;
    int32_t n = P->n, rows = s->rows;
    double *b = s->B->x;
    memset(b, 0, sizeof(double) * 3 * (size_t)rows);
    for (int32_t i = 0; i < n; i++) {
        int32_t r = s->row[i];
        if (r < 0) continue;
        double a = P->mass[i] / (h * h);
        for (int d = 0; d < 3; d++) b[r + (size_t)d * rows] = a * s->y[3 * i + d] + s->pen[i] * s->proj[3 * i + d];
    }
    for (int32_t j = 0; j < C->m; j++) {
        int32_t c = C->mcluster[j], i = C->member[j], rc = s->row[n + c], ri = s->row[i];
        if (rc < 0) continue;
        double K = s->kc[c] * C->wmass[j], d[3];
        projected_offset(w, x, j, d);
        for (int a = 0; a < 3; a++) {
            if (ri >= 0) b[ri + (size_t)a * rows] += K * d[a];
            b[rc + (size_t)a * rows] -= K * d[a];
            if (ri < 0) b[rc + (size_t)a * rows] += K * x[3 * i + a]; /* a pinned member, known */
        }
    }
    if (!cholmod_solve2(CHOLMOD_A, s->L, s->B, NULL, &s->X, NULL, &s->Y, &s->E, &s->cm))
        return csm_fail(err, CSM_EXIT_FAILURE, "projective_dynamics: the solve failed (CHOLMOD status %d)", s->cm.status);
    const double *sol = s->X->x;
    for (int32_t i = 0; i < n; i++) {
        int32_t r = s->row[i];
        if (r < 0) continue;
        for (int d = 0; d < 3; d++) x[3 * i + d] = sol[r + (size_t)d * rows];
    }
    return 0;
}

/* The projection of x onto the colliders and contacts into s->proj; the particles it moved join
   s->want. Returns 1 when the factor does not hold them all. */
static int project_contacts(pd *s, csm_world *w, const double *x, double h)
{
    int32_t n = w->P.n, grown = 0;
    memcpy(s->proj, x, sizeof(double) * 3 * (size_t)n);
    csm_world_project(w, s->proj, h);
    for (int32_t i = 0; i < n; i++) {
        const double *a = &x[3 * i], *b = &s->proj[3 * i];
        if (a[0] != b[0] || a[1] != b[1] || a[2] != b[2]) s->want[i] = 1;
        grown |= s->want[i] && !s->held[i];
    }
    return grown;
}

/* Factor again for the particles s->want holds (the clusters, pins and step as they are). */
static int refactor(pd *s, csm_world *w, double h, csm_error *err)
{
    double t0 = csm_now();
    memcpy(s->held, s->want, (size_t)w->P.n);
    if (factor(s, w, h, err)) return -1;
    if (s->timing >= 0) w->report->timings.seconds[s->timing] += csm_now() - t0;
    return 0;
}

static int pd_step(csm_world *w, void *state, double h, csm_error *err)
{
    pd *s = state;
    csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    int32_t n = P->n;
    if (csm_grow((void **)&s->proj, &s->cap[8], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->pen, &s->cap[9], n, sizeof(double)) ||
        csm_grow((void **)&s->held, &s->cap[10], n, 1) || csm_grow((void **)&s->want, &s->cap[11], n, 1))
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for projective_dynamics");
    if (s->n != n) memset(s->held, 0, (size_t)n);
    if (!s->L || s->epoch != C->epoch || s->pins != w->pins || s->h != h || s->n != n || s->k != C->k ||
        s->m != C->m) {
        memcpy(s->want, s->held, (size_t)n);
        if (refactor(s, w, h, err)) return -1;
    }
    if (csm_grow((void **)&s->x0, &s->cap[2], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->y, &s->cap[3], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->prev, &s->cap[4], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->scratch, &s->cap[5], 12 * (int64_t)C->k, sizeof(double)) ||
        csm_grow((void **)&s->grad, &s->cap[6], 3 * (int64_t)n, sizeof(double)) ||
        csm_grow((void **)&s->fit, &s->cap[7], 61 * (int64_t)C->k + 1, sizeof(double)))
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory for projective_dynamics");
    double *x = P->x;
    csm_implicit_report_gains(w, s->kc, h);
    /* y = x + h v + h^2 f / m, the velocity damped first as the explicit integrators damp it */
    memcpy(s->x0, x, sizeof(double) * 3 * (size_t)n);
    csm_implicit_predict(w, h, s->damping, s->viscosity, s->scratch, s->y);

    /* the start: y, or x(t) when its objective is lower (then the step cannot end above x(t)'s) */
    double e0 = 0, gy = objective(s, w, s->y, h, NULL), gx = objective(s, w, s->x0, h, &e0);
    if (gy <= gx) memcpy(x, s->y, sizeof(double) * 3 * (size_t)n);
    /* colliders and contacts: the particles they move from the start on are held toward their
       projections in the global solve, and the start is projected */
    memset(s->want, 0, (size_t)n);
    project_contacts(s, w, x, h);
    if (memcmp(s->want, s->held, (size_t)n) && refactor(s, w, h, err)) return -1;
    memcpy(x, s->proj, sizeof(double) * 3 * (size_t)n);
    double residual = 0;
    for (int it = 0; it < s->iterations; it++) {
        memcpy(s->prev, x, sizeof(double) * 3 * (size_t)n);
        w->fit_energy = 1;
        csm_fit_all(w, x); /* local step: R_c at x, through the rotation plugin */
        w->fit_energy = 0;
        if (global_step(s, w, x, h, err)) return -1;
        if (project_contacts(s, w, x, h) && refactor(s, w, h, err)) return -1;
        residual = csm_implicit_residual(w, x, s->prev, s->x0);
        if (residual <= s->tolerance) break;
    }
    csm_world_project(w, x, h); /* what the weights leave: a thousandth of the unconstrained step */
    csm_implicit_report_residual(w, residual);
    csm_implicit_velocities(w, s->x0, h);
    if (w->report) w->report->dissipated[CSM_DISSIPATED_NUMERICAL] += numerical_dissipation(s, w, h, e0);
    return 0;
}

/* E(x) at the last fit, with the stiffness of the factorisation, what the step minimises; for
   clusters the factorisation has not seen yet (before the first step, or reclustered since the
   last), the stiffness the next one will take. */
static double pd_energy(const csm_world *w, void *state, double h, const double *distance)
{
    (void)h;
    const pd *s = state;
    int current = s->L && s->epoch == w->C.epoch && s->k == w->C.k;
    double e = 0;
    for (int32_t c = 0; c < w->C.k; c++)
        e += 0.5 * (current ? s->kc[c] : csm_modulus_stiffness(w, s->modulus, c)) * distance[c];
    return e;
}

static void pd_describe(const void *params, csm_integrator_traits *out)
{
    const pd_params *p = params;
    *out = (csm_integrator_traits){.modulus = p->modulus, .iterations = p->iterations, .implicit = 1};
}

const csm_integrator csm_integrator_projective_dynamics = {
    .version = 4,
    .name = "projective_dynamics",
    .summary = "Bouaziz et al. 2014: implicit Euler by local (rotations) / global (one prefactored sparse "
               "Cholesky, cluster centres as unknowns) iterations to a tolerance, of the energy of solver.energy "
               "(continuum: solver.material of E and nu, corotated linear elasticity by default)",
    .params = pd_table,
    .create = pd_create,
    .step = pd_step,
    .destroy = pd_destroy,
    .elastic_energy = pd_energy,
    .describe = pd_describe,
};
