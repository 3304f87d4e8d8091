/* Integrators: the equivalences of Bargteil-Jones Sec 3 and Müller 2005's modes, pinned particles,
   the strain limit, forces and colliders. Two simulations of one config, under different plugin
   settings, run in lockstep and their trajectories are compared. */
#include "sim_run.h"

#include "csm_math.h"
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUBE CSM_TEST_DIR "/configs/solver_cube.yaml"
#define EXPERIMENT(name) CSM_TEST_DIR "/../experiments/configs/" name

/* Largest difference of positions and velocities over every frame of two settings of one
   config; -1 when they are not the same size. Also reports how far the body travelled, so a
   test knows the motion was not trivial. */
static double lockstep(const char *path, const char *const *a, int na, const char *const *b, int nb,
                       double *travel)
{
    run A, B;
    run_start(&A, path, a, na);
    run_start(&B, path, b, nb);
    assert_int_equal(A.sim.w.P.n, B.sim.w.P.n);
    int32_t n = A.sim.w.P.n;
    double *x0 = malloc(sizeof(double) * 3 * (size_t)n);
    memcpy(x0, A.sim.w.P.x, sizeof(double) * 3 * (size_t)n);
    double diff = 0;
    for (int f = 0; f < A.cfg.frames; f++) {
        run_frame(&A);
        run_frame(&B);
        for (int32_t k = 0; k < 3 * n; k++) {
            diff = fmax(diff, fabs(A.sim.w.P.x[k] - B.sim.w.P.x[k]));
            diff = fmax(diff, fabs(A.sim.w.P.v[k] - B.sim.w.P.v[k]));
            if (isnan(A.sim.w.P.x[k]) != isnan(B.sim.w.P.x[k])) diff = INFINITY;
        }
    }
    double t = 0;
    for (int32_t k = 0; k < 3 * n; k++) t = fmax(t, fabs(A.sim.w.P.x[k] - x0[k]));
    if (travel) *travel = t;
    free(x0);
    run_stop(&A);
    run_stop(&B);
    return diff;
}

/* Bargteil-Jones Sec 3: "setting iters = 0 (or omega = 0) is equivalent to the original shape
   matching integrator". Bit for bit, with damping, gravity and a collider in the loop. */
static void test_strain_limited_reduces_to_shape_matching(void **state)
{
    (void)state;
    /* under every solver.conserve, and with per-cluster gains from a modulus */
    const char *conserve[] = {"solver.conserve=none", "solver.conserve=linear", "solver.conserve=angular"};
    for (int c = 0; c < 4; c++) {
        const char *set = c < 3 ? conserve[c] : "solver.modulus=3";
        double travel;
        const char *sm[] = {"solver.damping=0.1", set};
        const char *it0[] = {"solver.integrator=strain_limited", "solver.iterations=0", "solver.gamma=0.1",
                             "solver.damping=0.1", set};
        assert_true(lockstep(CUBE, sm, 2, it0, 5, &travel) == 0.0);
        assert_true(travel > 0.3);
        const char *om0[] = {"solver.integrator=strain_limited", "solver.iterations=5", "solver.omega=0",
                             "solver.gamma=0.1", "solver.damping=0.1", set};
        assert_true(lockstep(CUBE, sm, 2, om0, 6, NULL) == 0.0);
        /* and the projections do change the motion when they run */
        const char *on[] = {"solver.integrator=strain_limited", "solver.iterations=5", "solver.gamma=0.01",
                            "solver.damping=0.1", set};
        assert_true(lockstep(CUBE, sm, 2, on, 5, NULL) > 1e-3);
    }
}

/* Bargteil-Jones Sec 3: with alpha = 0 (and gamma = 0) the solver is a form of PBD, under every
   solver.conserve. */
static void test_strain_limited_reduces_to_pbd(void **state)
{
    (void)state;
    const char *conserve[] = {"solver.conserve=none", "solver.conserve=linear", "solver.conserve=angular"};
    for (int c = 0; c < 3; c++) {
        const char *pbd[] = {"solver.integrator=pbd", "solver.iterations=3", "solver.omega=1.3", conserve[c]};
        const char *sl[] = {"solver.integrator=strain_limited", "solver.alpha=0", "solver.gamma=0",
                            "solver.iterations=3", "solver.omega=1.3", conserve[c]};
        double travel;
        assert_true(lockstep(CUBE, pbd, 4, sl, 6, &travel) == 0.0);
        assert_true(travel > 0.3);
    }
}

/* Müller 2005 Sec 4: beta = 0 leaves only R in the goals, in both extended modes. */
static void test_modes_with_beta_zero_are_rigid(void **state)
{
    (void)state;
    const char *rigid[] = {"solver.mode=rigid"};
    const char *lin[] = {"solver.mode=linear", "solver.beta=0"};
    const char *quad[] = {"solver.mode=quadratic", "solver.beta=0"};
    assert_close(lockstep(CUBE, rigid, 1, lin, 2, NULL), 0.0, 1e-12);
    assert_close(lockstep(CUBE, rigid, 1, quad, 2, NULL), 0.0, 1e-12);
    const char *lin5[] = {"solver.mode=linear", "solver.beta=0.5"};
    assert_true(lockstep(CUBE, rigid, 1, lin5, 2, NULL) > 1e-4);
}

/* Goals of a single cluster holding every particle of a box whose positions are `map` of the
   rest positions; returns max |g_i - x_i|. */
typedef void (*point_map)(const double r[3], double x[3]);

static double goal_error(const char *mode, double beta, point_map map)
{
    char m[64], b[64];
    snprintf(m, sizeof m, "solver.mode=%s", mode);
    snprintf(b, sizeof b, "solver.beta=%.17g", beta);
    const char *sets[] = {m, b, "clustering.radius=10"};
    run r;
    run_start(&r, CUBE, sets, 3);
    csm_world *w = &r.sim.w;
    assert_int_equal(w->C.k, 1);
    int32_t n = w->P.n;
    double c[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) c[d] += w->P.rest[3 * i + d] / n;
    for (int32_t i = 0; i < n; i++) {
        double rel[3] = {w->P.rest[3 * i] - c[0], w->P.rest[3 * i + 1] - c[1], w->P.rest[3 * i + 2] - c[2]};
        map(rel, &w->P.x[3 * i]);
    }
    csm_fit_all(w, w->P.x);
    csm_goals_all(w, w->P.x, 0.0, w->P.goal);
    double e = 0;
    for (int32_t k = 0; k < 3 * n; k++) e = fmax(e, fabs(w->P.goal[k] - w->P.x[k]));
    run_stop(&r);
    return e;
}

/* x = R S r + t with det S = 1: a volume-keeping linear map plus a rotation. */
static void shear_map(const double r[3], double x[3])
{
    double a = 0.7, RS[9];
    double S[9] = {1, 0.4, 0, 0, 1, 0, 0, 0, 1}, R[9] = {cos(a), -sin(a), 0, sin(a), cos(a), 0, 0, 0, 1};
    csm_m3_mul(R, S, RS);
    csm_m3_mul_v3(RS, r, x);
    x[0] += 2;
    x[1] -= 1;
}

/* a bend: quadratic in the rest coordinates */
static void bend_map(const double r[3], double x[3])
{
    x[0] = r[0] + 0.2 * r[1] * r[2];
    x[1] = r[1] + 0.8 * r[0] * r[0];
    x[2] = r[2] - 0.3 * r[2] * r[2] + 0.5;
}

static void test_linear_mode_recovers_volume_keeping_maps(void **state)
{
    (void)state;
    assert_close(goal_error("linear", 1.0, shear_map), 0.0, 1e-12);
    assert_true(goal_error("rigid", 0.0, shear_map) > 0.05); /* rigid goals cannot shear */
}

static void test_quadratic_mode_recovers_quadratic_maps(void **state)
{
    (void)state;
    assert_close(goal_error("quadratic", 1.0, bend_map), 0.0, 1e-12);
    assert_close(goal_error("quadratic", 1.0, shear_map), 0.0, 1e-12);
    assert_true(goal_error("linear", 1.0, bend_map) > 0.05);
}

/* Largest change of linear momentum over a run of the cube with no force and no collider,
   relative to the initial momentum. */
static double momentum_drift(const char *a, const char *b)
{
    const char *sets[] = {a, b, "forces=[]", "colliders=[]"};
    run r;
    run_start(&r, CUBE, sets, 4);
    csm_diag d0, d;
    csm_diagnostics(&r.sim, &d0);
    double drift = 0;
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        csm_diagnostics(&r.sim, &d);
        for (int k = 0; k < 3; k++) drift = fmax(drift, fabs(d.momentum[k] - d0.momentum[k]));
    }
    run_stop(&r);
    return drift / csm_v3_norm(d0.momentum);
}

/* Internal forces sum to zero in every mode: the quadratic terms are centred per cluster. */
static void test_modes_keep_linear_momentum(void **state)
{
    (void)state;
    assert_close(momentum_drift("solver.mode=linear", "solver.beta=0.7"), 0.0, 1e-12);
    assert_close(momentum_drift("solver.mode=quadratic", "solver.beta=0.7"), 0.0, 1e-12);
}

/* PBD keeps linear momentum: each projection moves the members of a cluster by w m (g - x),
   which sums to zero (Müller et al. 2007 Sec 3.3). Velocities are position differences over h,
   so round-off of x grows by 1/h. */
static void test_pbd_keeps_linear_momentum(void **state)
{
    (void)state;
    assert_close(momentum_drift("solver.integrator=pbd", "solver.iterations=4"), 0.0, 1e-10);
}

/* Pinned particles (inverse mass 0) never move, under every integrator and with every force. */
static void test_pinned_particles_never_move(void **state)
{
    (void)state;
    const char *integrators[] = {"solver.integrator=shape_matching", "solver.integrator=pbd",
                                 "solver.integrator=strain_limited"};
    for (int k = 0; k < 3; k++) {
        const char *sets[] = {integrators[k], "objects.0.pinned={above: {axis: y, value: 0.9}}",
                              "forces=[{type: gravity}, {type: twist, scale: 5, axis: [0, 1, 0]}, {type: drag}]",
                              "solver.damping=0.2"};
        run r;
        run_start(&r, CUBE, sets, 4);
        csm_particles *P = &r.sim.w.P;
        int32_t pinned = 0;
        double *x0 = malloc(sizeof(double) * 3 * (size_t)P->n);
        memcpy(x0, P->x, sizeof(double) * 3 * (size_t)P->n);
        for (int f = 0; f < 20; f++) run_frame(&r);
        double moved = 0, free_moved = 0;
        for (int32_t i = 0; i < P->n; i++)
            for (int d = 0; d < 3; d++) {
                double dx = fabs(P->x[3 * i + d] - x0[3 * i + d]);
                if (P->inv_mass[i] == 0.0) moved = fmax(moved, dx), pinned += d == 0;
                else free_moved = fmax(free_moved, dx);
            }
        assert_true(pinned > 0);
        assert_true(moved == 0.0);
        assert_true(free_moved > 0.05);
        free(x0);
        run_stop(&r);
    }
}

/* Bargteil-Jones Eq 4: with gamma = 0.05 and enough Jacobi passes, the strain beta of a violently
   stretched cube ends far below where plain shape matching leaves it. */
static void test_strain_limit_bounds_strain(void **state)
{
    (void)state;
    const char *sm[] = {"objects.0.deform=[[3, 0, 0], [0, 1, 0], [0, 0, 1]]", "solver.alpha=1"};
    const char *sl[] = {"objects.0.deform=[[3, 0, 0], [0, 1, 0], [0, 0, 1]]", "solver.alpha=1",
                        "solver.integrator=strain_limited", "solver.gamma=0.05", "solver.iterations=50"};
    double strain[2];
    for (int k = 0; k < 2; k++) {
        run r;
        run_start(&r, CUBE, k ? sl : sm, k ? 5 : 2);
        csm_error err;
        if (csm_sim_step(&r.sim, r.cfg.dt, &err)) fail_msg("%s", err.msg);
        csm_diag d;
        csm_diagnostics(&r.sim, &d);
        strain[k] = d.max_strain;
        run_stop(&r);
    }
    assert_true(strain[0] > 0.5);
    assert_true(strain[1] < 0.25 * strain[0]);
}

/* Bargteil-Jones Sec 3: explicit shape matching at alpha = 1 and 60 Hz gains energy without
   bound; strain limiting keeps it bounded. A coarse stretched cube (216 particles, 11 clusters,
   polar_f), 300 frames. The runaway is the net torque of polar_f's goals (Falkenstein Sec 3.1):
   with it removed (solver.conserve: angular) or with polar_apq's torque-free goals, plain shape
   matching stays bounded too. */
static double peak_kinetic_energy(const char *iterations, const char *conserve, const char *rotation)
{
    const char *sets[] = {"objects.0.sampling.spacing=0.2", "clustering.radius=0.5", "time.frames=300",
                          iterations, conserve, rotation};
    run r;
    run_start(&r, EXPERIMENT("stretch_cube.yaml"), sets, 6);
    double peak = 0;
    csm_diag d;
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        csm_diagnostics(&r.sim, &d);
        peak = fmax(peak, d.kinetic);
    }
    run_stop(&r);
    return peak;
}

static void test_strain_limiting_keeps_energy_bounded(void **state)
{
    (void)state;
    const char *none = "solver.conserve=none", *polar_f = "solver.rotation=polar_f";
    double sm = peak_kinetic_energy("solver.iterations=0", none, polar_f);
    double sl = peak_kinetic_energy("solver.iterations=5", none, polar_f);
    assert_true(sl < 40.0);      /* the released stretch holds about 20 J of motion */
    assert_true(sm > 10.0 * sl); /* plain shape matching runs away */
    double sm_angular = peak_kinetic_energy("solver.iterations=0", "solver.conserve=angular", polar_f);
    double sm_apq = peak_kinetic_energy("solver.iterations=0", none, "solver.rotation=polar_apq");
    assert_true(sm_angular < 40.0);
    assert_true(sm_apq < 40.0);
}

/* Bargteil-Jones Sec 3: a mass on a zero-rest-length spring oscillates about the anchor under
   shape matching; under PBD the motion stops once the constraint holds. */
/* A body's dynamics does not depend on its mass's scale: the clusters' moments scale with it, and
   the polar decompositions scale their matrices by a power of two first, so that forming A^T A or
   a Newton step's cube neither underflows nor overflows. Masses from 1e-300 to 1e300 kg give the
   1 kg run's positions (1e-200 exploded the box and 1e200 failed at frame 1). */
static void test_mass_scale_changes_nothing(void **state)
{
    (void)state;
    static const char *box =
        "name: mass_scale\n"
        "time: {frames: 20}\n"
        "objects:\n"
        "  - shape: {type: box, size: [0.5, 0.5, 0.5]}\n"
        "    sampling: {type: grid, spacing: 0.1}\n"
        "    position: [0, 0.5, 0]\n"
        "    angular_velocity: [0.3, 1, 0]\n"
        "clustering: {method: random_radius, radius: 0.2}\n"
        "solver: {integrator: shape_matching, alpha: 0.5}\n"
        "forces: [{type: gravity}]\n"
        "colliders: [{type: plane, normal: [0, 1, 0], offset: 0}]\n";
    const char *masses[] = {"objects.0.mass=1", "objects.0.mass=1e-300", "objects.0.mass=1e-200",
                            "objects.0.mass=1e120", "objects.0.mass=1e300"};
    double *ref = NULL;
    for (int k = 0; k < 5; k++) {
        run r;
        run_start_text(&r, "mass_scale.yaml", box, &masses[k], 1);
        for (int f = 0; f < 20; f++) run_frame(&r);
        const csm_particles *P = &r.sim.w.P;
        if (!ref) {
            ref = malloc(sizeof *ref * 3 * (size_t)P->n);
            memcpy(ref, P->x, sizeof *ref * 3 * (size_t)P->n);
        }
        double worst = 0;
        for (int32_t a = 0; a < 3 * P->n; a++) worst = fmax(worst, fabs(P->x[a] - ref[a]));
        printf("%s: positions within %.2g m of the 1 kg run\n", masses[k], worst);
        assert_true(worst < 1e-12);
        run_stop(&r);
    }
    free(ref);
}

static void test_zero_length_spring(void **state)
{
    (void)state;
    const char *sm[] = {"solver.integrator=shape_matching"};
    const char *pbd[] = {"solver.integrator=pbd"};
    for (int k = 0; k < 2; k++) {
        run r;
        run_start(&r, EXPERIMENT("spring.yaml"), k ? pbd : sm, 1);
        csm_particles *P = &r.sim.w.P;
        assert_int_equal(P->n, 2);
        int crossings = 0;
        double last = P->x[3], vmax_late = 0;
        for (int f = 0; f < r.cfg.frames; f++) {
            run_frame(&r);
            double x = P->x[3];
            if ((x > 0) != (last > 0)) crossings++;
            last = x;
            if (f >= r.cfg.frames / 2) vmax_late = fmax(vmax_late, fabs(P->v[3]));
        }
        if (k == 0) {
            assert_true(crossings >= 6);   /* keeps oscillating */
            assert_true(vmax_late > 0.5); /* without losing its amplitude: v0 = 1 */
        } else {
            assert_true(vmax_late < 1e-9); /* stopped */
        }
        run_stop(&r);
    }
}

/* Falkenstein Sec 3.1: the rectangle through (1,3), (3,1), (-1,-3), (-3,-1) stretched by 2 in x.
   polar(A_pq) turns it by 11.31 degrees; polar(F) finds no rotation. */
static void test_rotation_rectangle_experiment(void **state)
{
    (void)state;
    const char *apq[] = {"solver.rotation=polar_apq", "solver.conserve=none"};
    const char *f[] = {"solver.rotation=polar_f", "solver.conserve=none"};
    double angle[2];
    for (int k = 0; k < 2; k++) {
        run r;
        run_start(&r, EXPERIMENT("rotation_rectangle.yaml"), k ? f : apq, 2);
        assert_int_equal(r.sim.w.C.k, 1);
        csm_fit_all(&r.sim.w, r.sim.w.P.x);
        const double *R = r.sim.w.C.R;
        angle[k] = atan2(R[3], R[0]) * 180.0 / CSM_PI;
        assert_close(csm_m3_det(R), 1.0, 1e-12);
        run_stop(&r);
    }
    assert_close(fabs(angle[0]), 11.309932474020215, 1e-9); /* atan(1/5), Falkenstein Eq 19 */
    assert_close(angle[1], 0.0, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strain_limited_reduces_to_shape_matching),
        cmocka_unit_test(test_strain_limited_reduces_to_pbd),
        cmocka_unit_test(test_modes_with_beta_zero_are_rigid),
        cmocka_unit_test(test_linear_mode_recovers_volume_keeping_maps),
        cmocka_unit_test(test_quadratic_mode_recovers_quadratic_maps),
        cmocka_unit_test(test_modes_keep_linear_momentum),
        cmocka_unit_test(test_pbd_keeps_linear_momentum),
        cmocka_unit_test(test_pinned_particles_never_move),
        cmocka_unit_test(test_strain_limit_bounds_strain),
        cmocka_unit_test(test_strain_limiting_keeps_energy_bounded),
        cmocka_unit_test(test_zero_length_spring),
        cmocka_unit_test(test_mass_scale_changes_nothing),
        cmocka_unit_test(test_rotation_rectangle_experiment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
