/* Plasticity (Falkenstein 2017 Sec 2.3.1, Eq 9-16): the flow rule on its own, and F^p in the goals
   of every mode, rotation and integrator. */
#include "random3.h"
#include "sim_run.h"

#include "kernel.h"
#include "plasticity.h"

#include <stdlib.h>
#include <string.h>

#define CUBE CSM_TEST_DIR "/configs/solver_cube.yaml"
#define STEP (1.0 / 60.0)

/* |F* - I|_F of the elastic part F (Fp)^-1, the quantity Falkenstein Eq 11 tests. */
static double deviation(const double F[9], const double Fp[9])
{
    double inv[9] = {0}, Fe[9], U[9], s[3], V[9];
    assert_true(csm_m3_inverse(Fp, inv) != 0.0); /* F^p is never singular */
    csm_m3_mul(F, inv, Fe);
    csm_svd3_lapacke(Fe, U, s, V);
    double d = cbrt(s[0] * s[1] * s[2]), e = 0;
    for (int a = 0; a < 3; a++) e += (s[a] / d - 1) * (s[a] / d - 1);
    return sqrt(e);
}

static const csm_flow_params perfect = {.yield = 0.0, .flow_rate = 1.0, .min_stretch = 1e-3}; /* lambda 0, nu 1: all flows */

/* det F^p = 1 under any flow: det F* = 1 and V is a rotation (Falkenstein Eq 10, 12). */
static void test_flow_keeps_volume(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 7, 1);
    double Fp[9], alpha = 0, worst = 0;
    csm_m3_identity(Fp);
    int yielded = 0;
    for (int step = 0; step < 3000; step++) {
        double s[3] = {0.4 + 1.6 * csm_rng_uniform(&g), 0.4 + 1.6 * csm_rng_uniform(&g), 0.4 + 1.6 * csm_rng_uniform(&g)};
        double F[9];
        random_matrix(&g, s, F);
        csm_flow_params p = {.yield = 0.3 * csm_rng_uniform(&g), .flow_rate = csm_rng_uniform(&g),
                             .hardening = 0.01 * csm_rng_uniform(&g), .min_stretch = 1e-3, .stress_measure = step & 1};
        yielded += csm_plastic_flow(&p, csm_svd3_fast, F, STEP, 1.0, Fp, &alpha) == CSM_FLOW_YIELDED;
        worst = fmax(worst, fabs(csm_m3_det(Fp) - 1.0));
    }
    print_message("%d of 3000 steps flowed\n", yielded);
    assert_true(yielded > 1000);
    assert_true(worst < 1e-13);
}

/* cond_limit: no flow takes cond(F^p) beyond the limit, while flow within it goes on. */
static void test_condition_limit_holds(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 13, 6);
    csm_flow_params p = {.yield = 0.05, .flow_rate = 1.0, .min_stretch = 1e-3, .cond_limit = 2.5};
    double Fp[9], alpha = 0, worst = 1;
    csm_m3_identity(Fp);
    int yielded = 0, held = 0;
    for (int step = 0; step < 2000; step++) {
        double s[3] = {0.6 + 0.8 * csm_rng_uniform(&g), 0.6 + 0.8 * csm_rng_uniform(&g), 1.0}, F[9], U[9], sv[3], V[9];
        random_matrix(&g, s, F);
        csm_m3_mul(F, Fp, F); /* an elastic deformation on top of the plastic state */
        csm_flow_result r = csm_plastic_flow(&p, csm_svd3_fast, F, STEP, 1.0, Fp, &alpha);
        yielded += r == CSM_FLOW_YIELDED;
        held += r == CSM_FLOW_ELASTIC && deviation(F, Fp) > p.yield;
        csm_svd3_lapacke(Fp, U, sv, V);
        worst = fmax(worst, sv[0] / sv[2]);
    }
    print_message("cond limit 2.5: %d steps flowed, %d held at the limit, largest cond %.6f\n", yielded, held, worst);
    assert_true(yielded > 100 && held > 100);
    assert_true(worst <= 2.5 + 1e-12 && worst > 2.0);
}

/* Falkenstein Eq 11: below the threshold F^p does not change (bit for bit); a change of volume alone is
   never plastic (F* = I), however large. alpha still integrates (Eq 14). */
static void test_below_yield_nothing_flows(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 3, 2);
    csm_flow_params p = {.yield = 0.2, .flow_rate = 1.0, .min_stretch = 1e-3};
    double Fp0[9];
    random_matrix(&g, (double[3]){1.3, 1.0, 1 / 1.3}, Fp0); /* an earlier plastic state */
    for (int k = 0; k < 200; k++) {
        double s[3] = {1 + 0.08 * (csm_rng_uniform(&g) - 0.5), 1 + 0.08 * (csm_rng_uniform(&g) - 0.5), 1.0};
        double Fe[9], F[9], Fp[9], alpha = 0;
        random_matrix(&g, s, Fe);
        csm_m3_mul(Fe, Fp0, F);
        memcpy(Fp, Fp0, sizeof Fp);
        assert_true(deviation(F, Fp) < p.yield);
        assert_int_equal(csm_plastic_flow(&p, csm_svd3_fast, F, STEP, 1.0, Fp, &alpha), CSM_FLOW_ELASTIC);
        assert_memory_equal(Fp, Fp0, sizeof Fp);
        assert_true(alpha > 0);
    }
    /* pure volume change, with yield 0 */
    for (int k = 0; k < 3; k++) {
        double scale = k == 0 ? 0.5 : k == 1 ? 1.7 : 3.0, F[9], Q[9], Fp[9], alpha = 0;
        random_rotation(&g, Q);
        for (int a = 0; a < 9; a++) F[a] = scale * Q[a];
        csm_m3_mul(F, Fp0, F);
        memcpy(Fp, Fp0, sizeof Fp);
        assert_int_equal(csm_plastic_flow(&perfect, csm_svd3_fast, F, STEP, 1.0, Fp, &alpha), CSM_FLOW_ELASTIC);
        assert_memory_equal(Fp, Fp0, sizeof Fp);
    }
}

/* A cluster held in one deformation: with lambda = 0, nu = 1 one step makes F^e a rotation times
   a uniform scale (the rest shape adopted every volume-keeping deformation); with nu = 0.4 it
   converges there geometrically, |F* - I| shrinking every step. */
static void test_zero_yield_adopts_deformation(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 11, 3);
    double F[9];
    random_matrix(&g, (double[3]){1.6, 0.9, 0.55}, F);
    double Fp[9], alpha = 0;
    csm_m3_identity(Fp);
    assert_int_equal(csm_plastic_flow(&perfect, csm_svd3_fast, F, STEP, 1.0, Fp, &alpha), CSM_FLOW_YIELDED);
    assert_close(deviation(F, Fp), 0.0, 1e-12);
    /* F^e = F (F^p)^-1 = cbrt(det F) R */
    double inv[9] = {0}, Fe[9], FeFeT[9], d = cbrt(csm_m3_det(F));
    assert_true(csm_m3_inverse(Fp, inv) != 0.0); /* F^p is never singular */
    csm_m3_mul(F, inv, Fe);
    csm_m3_mul_bt(Fe, Fe, FeFeT);
    for (int a = 0; a < 9; a++) assert_close(FeFeT[a], a % 4 == 0 ? d * d : 0.0, 1e-12);

    csm_flow_params slow = {.yield = 0.0, .flow_rate = 0.4, .min_stretch = 1e-3};
    csm_m3_identity(Fp);
    double last = deviation(F, Fp);
    for (int k = 0; k < 60; k++) {
        csm_plastic_flow(&slow, csm_svd3_fast, F, STEP, 1.0, Fp, &alpha);
        double now = deviation(F, Fp);
        assert_true(now < last || now < 1e-12);
        last = now;
    }
    assert_true(last < 1e-10);
}

/* Falkenstein Eq 13 with K > 0: the flow fraction falls as alpha accumulates, and flow stops once K alpha
   reaches nu |F* - I| - lambda; with K = 0 the same cluster flows all the way. */
static void test_hardening_slows_and_stops_flow(void **state)
{
    (void)state;
    double F[9] = {1.5, 0.3, 0, 0, 1 / 1.5, 0, 0, 0.1, 1};
    csm_flow_params soft = {.yield = 0.0, .flow_rate = 0.05, .min_stretch = 1e-3}, hard = soft;
    hard.hardening = 0.2;
    double A[9], B[9], alpha_a = 0, alpha_b = 0;
    csm_m3_identity(A);
    csm_m3_identity(B);
    double prev_step = INFINITY;
    int flowed = 0;
    for (int k = 0; k < 600; k++) {
        double before = deviation(F, B);
        csm_plastic_flow(&soft, csm_svd3_fast, F, STEP, 1.0, A, &alpha_a);
        if (csm_plastic_flow(&hard, csm_svd3_fast, F, STEP, 1.0, B, &alpha_b) == CSM_FLOW_YIELDED) {
            flowed++;
            /* relative flow per step, (before - after) / before, falls with alpha */
            double rel = (before - deviation(F, B)) / before;
            assert_true(rel < prev_step);
            prev_step = rel;
        }
    }
    print_message("hardening: %d of 600 steps flowed\n", flowed);
    assert_true(flowed > 3 && flowed < 600);
    assert_true(deviation(F, A) < 1e-6);     /* no hardening: all of it flowed */
    assert_true(deviation(F, B) > 0.1);      /* hardening: stopped well short */
    double stopped = deviation(F, B), Bk[9];
    memcpy(Bk, B, sizeof Bk);
    assert_int_equal(csm_plastic_flow(&hard, csm_svd3_fast, F, STEP, 1.0, B, &alpha_b), CSM_FLOW_ELASTIC);
    assert_memory_equal(B, Bk, sizeof Bk);
    assert_true(hard.flow_rate * stopped - hard.hardening * alpha_b <= 0);
}

/* A degenerate F^e (inverted, collapsed, not finite) leaves F^p and alpha alone, never NaN. */
static void test_degenerate_deformation_is_skipped(void **state)
{
    (void)state;
    double cases[3][9] = {
        {1, 0, 0, 0, 1, 0, 0, 0, -0.5},     /* inverted */
        {1.2, 0, 0, 0, 1, 0, 0, 0, 1e-5},   /* collapsed onto a plane */
        {1, 0, 0, 0, NAN, 0, 0, 0, 1},      /* not finite */
    };
    for (int k = 0; k < 3; k++) {
        double Fp[9], alpha = 0.25, I[9];
        csm_m3_identity(Fp);
        csm_m3_identity(I);
        assert_int_equal(csm_plastic_flow(&perfect, csm_svd3_fast, cases[k], STEP, 1.0, Fp, &alpha), CSM_FLOW_SKIPPED);
        assert_memory_equal(Fp, I, sizeof I);
        assert_true(alpha == 0.25);
    }
}

/* Falkenstein Eq 14 as printed integrates |F^e - I|, which a rotation alone makes 2 for a quarter turn: a body at rest, turned, hardens. The default measure (|F^e - R|) does not. */
static void test_rotation_alone_accumulates_no_stress(void **state)
{
    (void)state;
    double R[9] = {0, -1, 0, 1, 0, 0, 0, 0, 1}, Fp[9], alpha = 0; /* a quarter turn about z */
    csm_m3_identity(Fp);
    for (int k = 0; k < 60; k++) csm_plastic_flow(&perfect, csm_svd3_fast, R, STEP, 1.0, Fp, &alpha);
    assert_close(alpha, 0.0, 1e-12);
    csm_flow_params paper = perfect;
    paper.stress_measure = CSM_STRESS_PAPER;
    alpha = 0;
    for (int k = 0; k < 60; k++) csm_plastic_flow(&paper, csm_svd3_fast, R, STEP, 1.0, Fp, &alpha);
    assert_close(alpha, 2.0, 1e-9); /* 60 steps of 1/60 s at |R - I| = 2 */
}

/* Positions of the cube at x = M r + t (every cluster sees F = M). */
static void place_affine(csm_world *w, const double M[9], const double t[3])
{
    for (int32_t i = 0; i < w->P.n; i++) {
        csm_m3_mul_v3(M, &w->P.rest[3 * i], &w->P.x[3 * i]);
        for (int d = 0; d < 3; d++) w->P.x[3 * i + d] += t[d];
    }
}

static double goal_gap(csm_world *w)
{
    csm_fit_all(w, w->P.x);
    csm_goals_all(w, w->P.x, 0.0, w->P.goal);
    double e = 0;
    for (int32_t k = 0; k < 3 * w->P.n; k++) e = fmax(e, fabs(w->P.goal[k] - w->P.x[k]));
    return e;
}

static const char *const modes[][2] = {
    {"solver.mode=rigid", "solver.beta=0"}, {"solver.mode=linear", "solver.beta=0.6"},
    {"solver.mode=quadratic", "solver.beta=0.6"}};
static const char *const rotations[] = {"solver.rotation=polar_f", "solver.rotation=polar_apq"};

/* Falkenstein Eq 16: particles sitting in the plastic rest shape (x = Q S r + t while every cluster has
   F^p = P_c S, a different left rotation P_c each) are their own goals: no elastic force, in every
   mode and with both rotations, and a step of every integrator leaves them where they are. */
static void test_plastic_rest_shape_is_in_equilibrium(void **state)
{
    (void)state;
    static const char *const integrators[] = {"solver.integrator=shape_matching", "solver.integrator=pbd",
                                              "solver.integrator=strain_limited"};
    csm_rng g;
    csm_rng_seed(&g, 5, 4);
    double S[9], Q[9], QS[9], t[3] = {0.3, 1.2, -0.4};
    random_matrix(&g, (double[3]){1.5, 1.0, 1 / 1.5}, S);
    random_rotation(&g, Q);
    csm_m3_mul(Q, S, QS);
    for (int m = 0; m < 3; m++)
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 3; k++) {
                const char *sets[] = {modes[m][0], modes[m][1], rotations[r], integrators[k], "forces=[]",
                                      "colliders=[]"};
                run R;
                run_start(&R, CUBE, sets, 6);
                csm_world *w = &R.sim.w;
                assert_true(w->C.k > 5);
                for (int32_t c = 0; c < w->C.k; c++) {
                    double P[9];
                    random_rotation(&g, P);
                    csm_m3_mul(P, S, &w->C.Fp[9 * c]);
                }
                place_affine(w, QS, t);
                memset(w->P.v, 0, sizeof(double) * 3 * (size_t)w->P.n);
                assert_close(goal_gap(w), 0.0, 1e-12);
                double *x0 = malloc(sizeof(double) * 3 * (size_t)w->P.n);
                memcpy(x0, w->P.x, sizeof(double) * 3 * (size_t)w->P.n);
                for (int f = 0; f < 3; f++) run_frame(&R);
                for (int32_t i = 0; i < 3 * w->P.n; i++) assert_close(w->P.x[i], x0[i], 1e-11);
                free(x0);
                run_stop(&R);
            }
}

/* Falkenstein Sec 2.3.1: left rotations of F^p are discarded by the decomposition, so Eq 12 may
   drop them. Goals at a non-affine deformation are the same for F^p and P F^p. */
static void test_left_rotations_of_Fp_do_not_change_goals(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 9, 5);
    for (int m = 0; m < 3; m++)
        for (int r = 0; r < 2; r++) {
            const char *sets[] = {modes[m][0], modes[m][1], rotations[r]};
            run R;
            run_start(&R, CUBE, sets, 3);
            csm_world *w = &R.sim.w;
            int32_t n = w->P.n, k = w->C.k;
            for (int32_t i = 0; i < 3 * n; i++) w->P.x[i] += 0.05 * (csm_rng_uniform(&g) - 0.5);
            double *Fp = malloc(sizeof(double) * 9 * (size_t)k), *goal = malloc(sizeof(double) * 3 * (size_t)n);
            for (int32_t c = 0; c < k; c++)
                random_matrix(&g, (double[3]){1.4, 1 / 1.4, 1.0}, &Fp[9 * c]);
            memcpy(w->C.Fp, Fp, sizeof(double) * 9 * (size_t)k);
            goal_gap(w);
            memcpy(goal, w->P.goal, sizeof(double) * 3 * (size_t)n);
            for (int32_t c = 0; c < k; c++) {
                double P[9];
                random_rotation(&g, P);
                csm_m3_mul(P, &Fp[9 * c], &w->C.Fp[9 * c]);
            }
            goal_gap(w);
            for (int32_t i = 0; i < 3 * n; i++) assert_close(w->P.goal[i], goal[i], 1e-12);
            free(Fp);
            free(goal);
            run_stop(&R);
        }
}

/* The plasticity stage in a run: the cube released from a squash to 75 % of its length in x
   springs back when elastic and keeps most of the squash when plastic (yield 0.05), under every
   integrator set soft enough to leave deformation for the flow rule; det F^p stays 1, and a yield
   threshold no deformation reaches is `none` bit for bit. */
static const char *const soft_integrators[][3] = {
    {"solver.integrator=shape_matching", "solver.alpha=0.1", "solver.damping=0.05"},
    {"solver.integrator=pbd", "solver.iterations=1", "solver.omega=0.1"},
    {"solver.integrator=strain_limited", "solver.alpha=0.1", "solver.damping=0.05"},
};

static double final_length(const char *const integrator[3], const char *yield, int32_t *yielded, double *worst_det)
{
    const char *sets[] = {integrator[0], integrator[1], integrator[2], "plasticity.model=jones2016", yield,
                          "forces=[]", "colliders=[]", "objects.0.deform=[[0.75,0,0],[0,1.15,0],[0,0,1.15]]",
                          "objects.0.angular_velocity=[0,0,0]", "objects.0.velocity=[0,0,0]", "time.frames=90"};
    run R;
    run_start(&R, CUBE, sets, 11);
    csm_world *w = &R.sim.w;
    *yielded = 0;
    *worst_det = 0;
    for (int f = 0; f < R.cfg.frames; f++) {
        run_frame(&R);
        *yielded += w->report->yielded;
        csm_sim_logged(&R.sim); /* per-frame counts, as a log of every frame has them */
        for (int32_t c = 0; c < w->C.k; c++) *worst_det = fmax(*worst_det, fabs(csm_m3_det(&w->C.Fp[9 * c]) - 1));
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int32_t i = 0; i < w->P.n; i++) {
        lo = fmin(lo, w->P.x[3 * i]);
        hi = fmax(hi, w->P.x[3 * i]);
    }
    run_stop(&R);
    return hi - lo;
}

static void test_every_integrator_keeps_a_plastic_set(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        int32_t y_el, y_pl;
        double det_el, det_pl;
        double elastic = final_length(soft_integrators[k], "plasticity.yield=1e6", &y_el, &det_el);
        double plastic = final_length(soft_integrators[k], "plasticity.yield=0.05", &y_pl, &det_pl);
        print_message("%s: length 1.5 s after release %.4f elastic, %.4f plastic (%d cluster-frames yielded)\n",
                      soft_integrators[k][0], elastic, plastic, y_pl);
        assert_int_equal(y_el, 0);
        assert_true(y_pl > 0);
        assert_true(det_pl < 1e-12);
        assert_true(elastic > 0.78); /* the rest length is 0.8, the squash 0.6 */
        assert_true(plastic < 0.72);
    }
    /* never yielding is no plasticity at all, with either goal */
    static const char *volume[] = {"solver.volume=coupled", "solver.volume=split"};
    for (int v = 0; v < 2; v++) {
        const char *none[] = {"plasticity.model=none", volume[v]};
        const char *high[] = {"plasticity.model=jones2016", "plasticity.yield=1e6", volume[v]};
        run A, B;
        run_start(&A, CUBE, none, 2);
        run_start(&B, CUBE, high, 3);
        for (int f = 0; f < A.cfg.frames; f++) {
            run_frame(&A);
            run_frame(&B);
        }
        assert_memory_equal(A.sim.w.P.x, B.sim.w.P.x, sizeof(double) * 3 * (size_t)A.sim.w.P.n);
        run_stop(&A);
        run_stop(&B);
    }
}

/* An inverted cluster is skipped and counted, and the run stays finite. (Coupled goals: with
   volume split the volume constraint turns the cluster back out within a step.) */
static void test_inverted_cluster_is_counted(void **state)
{
    (void)state;
    const char *sets[] = {"plasticity.model=jones2016", "plasticity.yield=0", "clustering.radius=10", "forces=[]",
                          "colliders=[]", "solver.alpha=0.05", "solver.volume=coupled"};
    run R;
    run_start(&R, CUBE, sets, 7);
    csm_world *w = &R.sim.w;
    assert_int_equal(w->C.k, 1);
    double M[9] = {1, 0, 0, 0, 1, 0, 0, 0, -1}, t[3] = {0, 1, 0}; /* mirrored: det F = -1 */
    place_affine(w, M, t);
    memset(w->P.v, 0, sizeof(double) * 3 * (size_t)w->P.n);
    run_frame(&R);
    assert_int_equal(w->report->plastic_skipped, R.cfg.substeps);
    assert_int_equal(w->report->yielded, 0);
    for (int32_t i = 0; i < 3 * w->P.n; i++) assert_true(isfinite(w->P.x[i]));
    run_stop(&R);
}

/* Sum over clusters of the stored energy (and the explicit step's lag) at the current positions
   and velocities, per cluster into e[k]. */
static void stored_energies(csm_world *w, double h, double *e)
{
    for (int32_t c = 0; c < w->C.k; c++) {
        csm_fixed_fit fit;
        double lag;
        csm_cluster_fixed_fit(&w->C, w->P.x, w->P.v, c, &fit);
        e[c] = csm_cluster_stored(w, c, &fit, &w->C.Fp[9 * c], &w->C.q[4 * c], h, &lag) + lag;
    }
}

/* No energy from the flow: at fixed positions and velocities, a flow step with the energy guard
   never raises any cluster's stored energy (plus the explicit step's lag), for thousands of random
   deformations F, plastic states F^p and flow parameters, with coupled and split goals, both
   rotations, and springs from alpha or a modulus; the report's dissipated_plastic is what the
   clusters lost. Without the guard the coupled goals do gain energy (the flattening of
   plasticity/jones2016.c), so the check is not empty. */
static void test_flow_never_raises_stored_energy(void **state)
{
    (void)state;
    static const char *const variants[][3] = {
        {"solver.volume=coupled", "solver.rotation=polar_f", "solver.alpha=0.4"},
        {"solver.volume=split", "solver.rotation=polar_f", "solver.alpha=0.4"},
        {"solver.volume=coupled", "solver.rotation=polar_apq", "solver.modulus=200"},
        {"solver.volume=split", "solver.rotation=polar_apq", "solver.modulus=200"},
    };
    csm_rng g;
    csm_rng_seed(&g, 20, 1);
    int flowed = 0, raised_unguarded = 0;
    for (int v = 0; v < 4; v++)
        for (int guard = 1; guard >= 0; guard--) {
            const char *sets[] = {"plasticity.model=jones2016", "forces=[]", "colliders=[]",
                                  guard ? "plasticity.energy_guard=true" : "plasticity.energy_guard=false",
                                  variants[v][0], variants[v][1], variants[v][2]};
            run R;
            run_start(&R, CUBE, sets, 7);
            csm_world *w = &R.sim.w;
            csm_flow_params *p = R.sim.plasticity.state;
            int32_t k = w->C.k;
            double h = R.cfg.dt / R.cfg.substeps, *before = malloc(sizeof(double) * 2 * (size_t)k), *after = before + k;
            for (int trial = 0; trial < 150; trial++) {
                double sv[3] = {0.6 + 0.9 * csm_rng_uniform(&g), 0.6 + 0.9 * csm_rng_uniform(&g), 0.6 + 0.9 * csm_rng_uniform(&g)};
                double M[9], t[3] = {0, 0, 0};
                random_matrix(&g, sv, M);
                place_affine(w, M, t);
                for (int32_t i = 0; i < 3 * w->P.n; i++) {
                    w->P.x[i] += 0.02 * (csm_rng_uniform(&g) - 0.5); /* not quite affine */
                    w->P.v[i] = guard && trial % 2 ? 0.0 : csm_rng_uniform(&g) - 0.5;
                }
                for (int32_t c = 0; c < k; c++) { /* a plastic state of condition up to 4, det 1 */
                    double a = 1 + 3 * csm_rng_uniform(&g), b = 1 + csm_rng_uniform(&g), sp[3] = {a, b, 1};
                    double d = cbrt(a * b);
                    for (int j = 0; j < 3; j++) sp[j] /= d;
                    random_matrix(&g, sp, &w->C.Fp[9 * c]);
                    double det = csm_m3_det(&w->C.Fp[9 * c]);
                    if (det < 0)
                        for (int j = 0; j < 9; j++) w->C.Fp[9 * c + j] = -w->C.Fp[9 * c + j];
                }
                p->yield = 0.3 * csm_rng_uniform(&g);
                p->flow_rate = 0.2 + 1.8 * csm_rng_uniform(&g);
                p->hardening = csm_rng_uniform(&g) - 0.5;
                csm_fit_all(w, w->P.x); /* the rotations' warm starts, as after a step */
                stored_energies(w, h, before);
                double dissipated = w->report->dissipated[CSM_DISSIPATED_PLASTIC];
                csm_error err;
                assert_int_equal(R.sim.plasticity.apply(w, p, h, &err), 0);
                stored_energies(w, h, after);
                double lost = 0;
                for (int32_t c = 0; c < k; c++) {
                    flowed += guard && after[c] < before[c];
                    if (guard) assert_true(after[c] <= before[c]);
                    else raised_unguarded += after[c] > before[c] * (1 + 1e-9) + 1e-12;
                    lost += before[c] - after[c];
                }
                if (guard)
                    assert_close(w->report->dissipated[CSM_DISSIPATED_PLASTIC] - dissipated, lost, 1e-9 * (1 + fabs(lost)));
            }
            free(before);
            run_stop(&R);
        }
    print_message("%d guarded cluster flows lowered their energy; unguarded, %d raised it\n", flowed, raised_unguarded);
    assert_true(flowed > 1000);
    assert_true(raised_unguarded > 0);
}

/* plasticity.update lagged commits at the end of a step the flow immediate would have taken at
   the end of the step before: applied twice at the same positions, lagged reaches, bit for bit,
   the F^p, stress and dissipated energy immediate reaches in one application from where the
   first lagged one left, and the first application of a run commits nothing. */
static void test_lagged_commits_the_previous_flow(void **state)
{
    (void)state;
    const char *sets[] = {"plasticity.model=jones2016", "plasticity.yield=0", "plasticity.update=lagged",
                          "solver.integrator=strain_limited", "solver.volume=split"};
    run R;
    run_start(&R, CUBE, sets, 5);
    csm_world *w = &R.sim.w;
    csm_clusters *C = &w->C;
    assert_non_null(C->F_lagged);
    int32_t k = C->k;
    size_t bytes = 9 * (size_t)k * sizeof(double);
    double h = R.sim.cfg->dt / R.sim.cfg->substeps;
    csm_flow_params *p = R.sim.plasticity.state;
    csm_error err = {0};
    double *Fp0 = malloc(bytes), *Fp1 = malloc(bytes), *Fp2 = malloc(bytes), *a1 = malloc(k * sizeof(double));
    /* the cube starts deformed: F is far from F^p = I, but the first step commits nothing */
    memcpy(Fp0, C->Fp, bytes);
    assert_int_equal(R.sim.plasticity.apply(w, p, h, &err), 0);
    assert_memory_equal(C->Fp, Fp0, bytes);
    /* the second commits the flow from the F recorded by the first */
    double d0 = w->report->dissipated[CSM_DISSIPATED_PLASTIC];
    assert_int_equal(R.sim.plasticity.apply(w, p, h, &err), 0);
    memcpy(Fp1, C->Fp, bytes);
    memcpy(a1, C->stress_alpha, k * sizeof(double));
    assert_memory_not_equal(Fp1, Fp0, bytes);
    double d1 = w->report->dissipated[CSM_DISSIPATED_PLASTIC];
    assert_int_equal(R.sim.plasticity.apply(w, p, h, &err), 0);
    memcpy(Fp2, C->Fp, bytes);
    double lagged = w->report->dissipated[CSM_DISSIPATED_PLASTIC] - d1;
    /* immediate from F^p = Fp0 at the same positions: the step the second lagged one committed */
    memcpy(C->Fp, Fp0, bytes);
    memset(C->stress_alpha, 0, k * sizeof(double));
    p->update = CSM_UPDATE_IMMEDIATE;
    assert_int_equal(R.sim.plasticity.apply(w, p, h, &err), 0);
    assert_memory_equal(C->Fp, Fp1, bytes);
    assert_memory_equal(C->stress_alpha, a1, k * sizeof(double));
    assert_true(d1 - d0 == w->report->dissipated[CSM_DISSIPATED_PLASTIC] - d1 - lagged);
    /* and from Fp1, the step the third committed */
    double d3 = w->report->dissipated[CSM_DISSIPATED_PLASTIC];
    assert_int_equal(R.sim.plasticity.apply(w, p, h, &err), 0);
    assert_memory_equal(C->Fp, Fp2, bytes);
    assert_true(w->report->dissipated[CSM_DISSIPATED_PLASTIC] - d3 == lagged);
    free(Fp0);
    free(Fp1);
    free(Fp2);
    free(a1);
    run_stop(&R);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flow_keeps_volume),
        cmocka_unit_test(test_condition_limit_holds),
        cmocka_unit_test(test_below_yield_nothing_flows),
        cmocka_unit_test(test_zero_yield_adopts_deformation),
        cmocka_unit_test(test_hardening_slows_and_stops_flow),
        cmocka_unit_test(test_degenerate_deformation_is_skipped),
        cmocka_unit_test(test_rotation_alone_accumulates_no_stress),
        cmocka_unit_test(test_plastic_rest_shape_is_in_equilibrium),
        cmocka_unit_test(test_left_rotations_of_Fp_do_not_change_goals),
        cmocka_unit_test(test_every_integrator_keeps_a_plastic_set),
        cmocka_unit_test(test_inverted_cluster_is_counted),
        cmocka_unit_test(test_flow_never_raises_stored_energy),
        cmocka_unit_test(test_lagged_commits_the_previous_flow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
