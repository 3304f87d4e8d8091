/* The implicit members of the family: projective_dynamics (Bouaziz et al. 2014) and xpbd
   (Macklin et al. 2016). Both solve implicit Euler on the clusters' shape-matching energy
   E = sum_c 1/2 k_c sum_i w_ic m_i |x_i - xbar_c - R_c F^p_c p_ic|^2: projective_dynamics's
   residual falls with its iterations and its answer is a dense solve's; it keeps momentum and
   never gains energy; a cantilever rests where the explicit strain_limited puts it, and where
   xpbd puts it whatever its iteration count, which pbd's is not. */
#include "check.h"
#include "sim_run.h"

#include "csm_math.h"
#include "kernel.h"

#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANTILEVER CSM_TEST_DIR "/configs/cantilever.yaml"

/* A sheared, spinning block with no force and no collider: 4 x 3 x 3 particles, 3 clusters. */
static const char *block = "name: block\n"
                           "time: {dt: 0.02, frames: 40, substeps: 1}\n"
                           "objects:\n"
                           "  - shape: {type: box, size: [0.6, 0.4, 0.4]}\n"
                           "    sampling: {type: grid, spacing: 0.2}\n"
                           "    mass: 1.0\n"
                           "    deform: [[1.3, 0.2, 0], [0, 0.9, 0.1], [0, 0, 1.1]]\n"
                           "    angular_velocity: [0.3, 1.0, 0.5]\n"
                           "    velocity: [0.2, 0, 0]\n"
                           "clustering: {method: fuzzy_cmeans, count: 3}\n"
                           "solver: {integrator: projective_dynamics, rotation: polar_apq, modulus: 50, tolerance: 0, energy: goals}\n";

/* The implicit Euler equations' residual M (x - y) / h^2 + grad E(x), its largest entry, with the
   rotations fitted at x (polar_apq is the Procrustes rotation, where dE/dR vanishes). */
static double residual(csm_world *w, const double *x, const double *y, double h, double mu)
{
    const csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    csm_fit_all(w, x);
    int32_t n = P->n;
    double *r = calloc(3 * (size_t)n, sizeof *r), worst = 0;
    for (int32_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) r[3 * i + a] = P->mass[i] * (x[3 * i + a] - y[3 * i + a]) / (h * h);
    for (int32_t j = 0; j < C->m; j++) {
        int32_t c = C->mcluster[j], i = C->member[j];
        double K = csm_modulus_stiffness(w, mu, c) * C->wmass[j], RF[9], d[3];
        csm_m3_mul(&C->R[9 * c], &C->Fp[9 * c], RF);
        csm_m3_mul_v3(RF, &C->p[3 * j], d);
        for (int a = 0; a < 3; a++) r[3 * i + a] += K * (x[3 * i + a] - C->com[3 * c + a] - d[a]);
    }
    for (int64_t a = 0; a < 3 * (int64_t)n; a++) worst = fmax(worst, fabs(r[a]));
    free(r);
    return worst;
}

/* One step of the block from rest shape with `iterations`; x after it, and y. */
static void one_step(int iterations, double **x, double **y, double *h, run *r)
{
    char it[64];
    snprintf(it, sizeof it, "solver.iterations=%d", iterations);
    const char *sets[] = {it};
    run_start_text(r, "block.yaml", block, sets, 1);
    csm_particles *P = &r->sim.w.P;
    int32_t n = P->n;
    *h = r->cfg.dt / r->cfg.substeps;
    *y = malloc(sizeof(double) * 3 * (size_t)n);
    *x = malloc(sizeof(double) * 3 * (size_t)n);
    for (int64_t a = 0; a < 3 * (int64_t)n; a++) (*y)[a] = P->x[a] + *h * P->v[a];
    csm_error err;
    if (csm_sim_step(&r->sim, *h, &err)) fail_msg("%s", err.msg);
    memcpy(*x, P->x, sizeof(double) * 3 * (size_t)n);
}

/* ... and what the log reports of it (/diagnostics/iteration_residual: the last iteration's largest
   move over the step's largest) falls with it. */
static void test_pd_residual_falls(void **state)
{
    (void)state;
    double last = INFINITY, moved[13] = {0};
    printf("projective_dynamics, one step of the sheared block: |residual| after");
    for (int it = 1; it <= 12; it++) {
        run r;
        double *x, *y, h;
        one_step(it, &x, &y, &h, &r);
        double res = residual(&r.sim.w, x, y, h, 50);
        moved[it] = r.sim.report.iteration_residual;
        printf(" %d: %.3g (last move %.3g)", it, res, moved[it]);
        assert_true(res < last);
        last = res;
        free(x);
        free(y);
        run_stop(&r);
    }
    printf("\n");
    assert_true(last < 1e-8);
    assert_true(moved[1] > 0.01 && moved[12] < 1e-6 * moved[1]);
    for (int it = 3; it <= 12; it++) assert_true(moved[it] < moved[it - 2]);
}

/* With many iterations the step solves the global system of the final rotations: the same x as
   a dense LAPACKE solve of it, particles and cluster centres as unknowns. */
static void test_pd_matches_a_dense_solve(void **state)
{
    (void)state;
    run r;
    double *x, *y, h;
    one_step(200, &x, &y, &h, &r);
    csm_world *w = &r.sim.w;
    const csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    int32_t n = P->n, k = C->k, N = n + k;
    csm_fit_all(w, x);
    double *A = calloc((size_t)N * N, sizeof *A), *b = calloc((size_t)N * 3, sizeof *b);
    for (int32_t i = 0; i < n; i++) {
        A[(size_t)i * N + i] = P->mass[i] / (h * h);
        for (int a = 0; a < 3; a++) b[(size_t)i * 3 + a] = P->mass[i] / (h * h) * y[3 * i + a];
    }
    for (int32_t j = 0; j < C->m; j++) {
        int32_t c = C->mcluster[j], i = C->member[j], cc = n + c;
        double K = csm_modulus_stiffness(w, 50, c) * C->wmass[j], RF[9], d[3];
        csm_m3_mul(&C->R[9 * c], &C->Fp[9 * c], RF);
        csm_m3_mul_v3(RF, &C->p[3 * j], d);
        A[(size_t)i * N + i] += K;
        A[(size_t)cc * N + cc] += K;
        A[(size_t)i * N + cc] -= K;
        A[(size_t)cc * N + i] -= K;
        for (int a = 0; a < 3; a++) {
            b[(size_t)i * 3 + a] += K * d[a];
            b[(size_t)cc * 3 + a] -= K * d[a];
        }
    }
    assert_int_equal(LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', N, 3, A, N, b, 3), 0);
    double worst = 0, size = 0;
    for (int32_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            worst = fmax(worst, fabs(b[(size_t)i * 3 + a] - x[3 * i + a]));
            size = fmax(size, fabs(x[3 * i + a]));
        }
    printf("projective_dynamics against a dense solve of its global system: largest difference %.2g m\n", worst);
    assert_true(worst < 1e-10 * size);
    free(A);
    free(b);
    free(x);
    free(y);
    run_stop(&r);
}

/* A free run: momentum to round-off, and kinetic plus elastic energy never up. */
static void test_pd_keeps_momentum_and_never_gains_energy(void **state)
{
    (void)state;
    run r;
    const char *sets[] = {"solver.iterations=5", "solver.tolerance=1e-10"};
    run_start_text(&r, "block.yaml", block, sets, 2);
    csm_diag d0, d;
    csm_diagnostics(&r.sim, &d0);
    double p0 = csm_v3_norm(d0.momentum), drift = 0, last = d0.kinetic + d0.elastic, rise = 0;
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        csm_diagnostics(&r.sim, &d);
        for (int a = 0; a < 3; a++) drift = fmax(drift, fabs(d.momentum[a] - d0.momentum[a]));
        rise = fmax(rise, d.kinetic + d.elastic - last);
        last = d.kinetic + d.elastic;
    }
    printf("projective_dynamics, free block: momentum drift %.2g of %.3g; energy %.4g J to %.4g J, largest rise "
           "between frames %.2g J\n",
           drift, p0, d0.kinetic + d0.elastic, last, rise);
    assert_true(drift < 1e-10 * p0);
    assert_true(rise <= 1e-12 * (d0.kinetic + d0.elastic));
    assert_true(last < d0.kinetic + d0.elastic);
    run_stop(&r);
}

/* A bar pinned at one end, swinging down under gravity from rest at 2 ms steps. */
static const char *swing = "name: swing\n"
                           "seed: 1\n"
                           "time: {dt: 0.002, frames: 150, substeps: 1}\n"
                           "objects:\n"
                           "  - shape: {type: box, size: [1, 0.4, 0.4]}\n"
                           "    sampling: {type: grid, spacing: 0.1}\n"
                           "    density: 1000\n"
                           "    pinned: {below: {axis: x, value: -0.45}}\n"
                           "clustering: {method: fuzzy_cmeans, count: 8}\n"
                           "solver: {integrator: projective_dynamics, rotation: polar_apq, young: 1e7, poisson: 0,\n"
                           "         iterations: 200, tolerance: 1e-12}\n"
                           "forces: [{type: gravity}]\n";

/* The budget names implicit Euler's loss: with its iterations converged, what projective dynamics
   loses from the swinging bar (kinetic + potential + elastic energy, 2.08 J over 150 steps) is
   /diagnostics/dissipated_numerical's to 1e-6 of it, and energy_error stays within 1e-6 of it;
   shape_matching logs none. */
static void test_pd_budget_names_its_dissipation(void **state)
{
    (void)state;
    run r;
    run_start_text(&r, "swing.yaml", swing, NULL, 0);
    csm_diag d0, d;
    csm_diagnostics(&r.sim, &d0);
    for (int f = 0; f < r.cfg.frames; f++) run_frame(&r);
    csm_diagnostics(&r.sim, &d);
    double lost = (d0.kinetic + d0.potential + d0.elastic) - (d.kinetic + d.potential + d.elastic);
    double numerical = r.sim.report.dissipated[CSM_DISSIPATED_NUMERICAL];
    printf("projective_dynamics, swinging bar: lost %.6f J, dissipated_numerical %.6f J, energy_error %.2e J\n", lost,
           numerical, d.energy_error);
    assert_true(lost > 1.0);
    assert_true(fabs(numerical - lost) < 1e-6 * lost);
    assert_true(fabs(d.energy_error) < 1e-6 * lost);
    run_stop(&r);
    const char *explicit_sets[] = {"solver={integrator: shape_matching, rotation: polar_apq, young: 1e7, poisson: 0}",
                                   "time.substeps=20", "time.frames=20"};
    run_start_text(&r, "swing.yaml", swing, explicit_sets, 3);
    for (int f = 0; f < r.cfg.frames; f++) run_frame(&r);
    assert_true(r.sim.report.dissipated[CSM_DISSIPATED_NUMERICAL] == 0.0);
    run_stop(&r);
}

/* xpbd keeps momentum at every iterate, converged or not: a spinning, drifting cube of
   random-radius clusters (their k_c differ) with no force and no collider, at 10 iterations, soft
   to stiff, under either energy and with or without the conserving corrections. */
static const char *spinner = "name: spinner\n"
                             "seed: 10\n"
                             "time: {dt: 0.0166667, frames: 60, substeps: 1}\n"
                             "objects:\n"
                             "  - shape: {type: box, size: [1, 1, 1]}\n"
                             "    sampling: {type: grid, spacing: 0.2}\n"
                             "    density: 1\n"
                             "    velocity: [0.2, -0.1, 0]\n"
                             "    angular_velocity: [0, 1, 4]\n"
                             "clustering: {method: random_radius, radius: 0.35}\n"
                             "solver: {integrator: xpbd, iterations: 10}\n";

static void test_xpbd_keeps_momentum(void **state)
{
    (void)state;
    const char *moduli[] = {"solver.modulus=15", "solver.modulus=1000", "solver.modulus=100000"};
    const char *energies[] = {"solver.energy=continuum", "solver.energy=goals"};
    const char *conserve[] = {"solver.conserve=angular", "solver.conserve=none"};
    for (int m = 0; m < 3; m++)
        for (int e = 0; e < 2; e++) {
            run r;
            const char *sets[] = {moduli[m], energies[e], conserve[e]};
            run_start_text(&r, "spinner.yaml", spinner, sets, 3);
            csm_diag d0, d;
            csm_diagnostics(&r.sim, &d0);
            double p0 = csm_v3_norm(d0.momentum), drift = 0;
            for (int f = 0; f < r.cfg.frames; f++) {
                run_frame(&r);
                csm_diagnostics(&r.sim, &d);
                for (int a = 0; a < 3; a++) drift = fmax(drift, fabs(d.momentum[a] - d0.momentum[a]));
            }
            printf("xpbd, free spinning cube, %s, %s: momentum drift %.2g of %.3g kg m/s\n", moduli[m], energies[e],
                   drift, p0);
            assert_true(drift < 1e-12 * p0 * r.cfg.frames);
            run_stop(&r);
        }
}

/* The resting tip deflection of the small cantilever (mean y displacement of its free end over
   the last sixth of the run). */
static double deflection(const char *const *sets, int nsets)
{
    run r;
    run_start(&r, CANTILEVER, sets, nsets);
    const csm_particles *P = &r.sim.w.P;
    double xmax = -INFINITY, y0 = 0, sum = 0;
    int32_t nend = 0, counted = 0;
    for (int32_t i = 0; i < P->n; i++) xmax = fmax(xmax, P->rest[3 * i]);
    for (int32_t i = 0; i < P->n; i++)
        if (P->rest[3 * i] > xmax - 1e-9) {
            y0 += P->x[3 * i + 1];
            nend++;
        }
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        if (f < r.cfg.frames - r.cfg.frames / 6) continue;
        for (int32_t i = 0; i < P->n; i++)
            if (P->rest[3 * i] > xmax - 1e-9) sum += P->x[3 * i + 1];
        sum -= y0;
        counted++;
    }
    run_stop(&r);
    return sum / (counted * nend);
}

static void test_cantilevers_agree(void **state)
{
    (void)state;
    const char *sl[] = {"solver.integrator=strain_limited"};
    const char *pd[] = {"solver.integrator=projective_dynamics", "solver.modulus=500"};
    const char *x10[] = {"solver.integrator=xpbd", "solver.modulus=500", "solver.iterations=10"};
    const char *x100[] = {"solver.integrator=xpbd", "solver.modulus=500", "solver.iterations=100"};
    const char *p10[] = {"solver.integrator=pbd", "solver.iterations=10"};
    const char *p100[] = {"solver.integrator=pbd", "solver.iterations=100"};
    double dsl = deflection(sl, 1), dpd = deflection(pd, 2), dx10 = deflection(x10, 3), dx100 = deflection(x100, 3);
    double dp10 = deflection(p10, 2), dp100 = deflection(p100, 2);
    printf("cantilever tip deflection at 500 Pa: strain_limited %.5f, projective_dynamics %.5f, xpbd %.5f (10 "
           "iterations) %.5f (100); pbd %.5f (10) %.5f (100)\n",
           dsl, dpd, dx10, dx100, dp10, dp100);
    assert_true(dsl < -0.05);
    assert_close(dpd, dsl, 0.1 * fabs(dsl));
    assert_close(dx100, dx10, 0.05 * fabs(dx10));
    assert_close(dx100, dpd, 0.01 * fabs(dpd)); /* one implicit Euler, two solvers */
    assert_true(fabs(dp100 - dp10) > 0.5 * fabs(dp10)); /* pbd's stiffness follows its iterations */
}

/* The same bits for 1 and 2 threads, with plastic flow (the bar's jones2016, yield 0) and
   reclustering, after which projective_dynamics factors its matrix again. */
static void run_positions(const char *integrator, int threads, double **out, int32_t *n, int *factored)
{
    csm_set_threads(threads);
    run r;
    const char *sets[] = {integrator, "solver.modulus=200", "recluster={method: embedded, cond_max: 1.3, fade_out: 3, fade_in: 2}",
                          "time.frames=40", "forces=[{type: compress, scale: 5, axis: x, until: 1.0}]"};
    run_start(&r, CSM_TEST_DIR "/configs/recluster_bar.yaml", sets, 5);
    int32_t initial = r.sim.w.C.k, kf = -1;
    for (int k = 0; k < r.sim.report.ntimings; k++)
        if (!strcmp(r.sim.report.timing_name[k], "factorisation")) kf = k;
    *factored = 0; /* frames in which projective_dynamics factored its matrix */
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        if (kf >= 0 && r.sim.last.seconds[kf] > 0) ++*factored;
    }
    assert_true(r.sim.w.C.next_id > initial); /* clusters were added: the matrix changed */
    *n = r.sim.w.P.n;
    *out = malloc(sizeof(double) * 3 * (size_t)*n);
    memcpy(*out, r.sim.w.P.x, sizeof(double) * 3 * (size_t)*n);
    for (int64_t a = 0; a < 3 * (int64_t)*n; a++) assert_true(isfinite((*out)[a]));
    run_stop(&r);
    csm_set_threads(0);
}

static void test_threads_bitwise(void **state)
{
    (void)state;
    const char *names[] = {"solver.integrator=projective_dynamics", "solver.integrator=xpbd"};
    for (int k = 0; k < 2; k++) {
        double *a, *b;
        int32_t na, nb;
        int ra, rb;
        run_positions(names[k], 1, &a, &na, &ra);
        run_positions(names[k], 2, &b, &nb, &rb);
        assert_int_equal(na, nb);
        if (k == 0) assert_true(ra > 1 && ra == rb); /* once, then again after reclustering */
        else assert_int_equal(ra, 0);
        assert_memory_equal(a, b, sizeof(double) * 3 * (size_t)na);
        free(a);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pd_residual_falls),
        cmocka_unit_test(test_pd_matches_a_dense_solve),
        cmocka_unit_test(test_pd_keeps_momentum_and_never_gains_energy),
        cmocka_unit_test(test_pd_budget_names_its_dissipation),
        cmocka_unit_test(test_xpbd_keeps_momentum),
        cmocka_unit_test(test_cantilevers_agree),
        cmocka_unit_test(test_threads_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
