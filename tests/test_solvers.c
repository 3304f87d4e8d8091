/* Integrators: the equivalences of Bargteil-Jones Sec 3 and Müller 2005's modes, pinned particles,
   the strain limit, forces and colliders. Two simulations of one config, under different plugin
   settings, run in lockstep and their trajectories are compared. */
#include "sim_run.h"

#include "csm_math.h"
#include "kernel.h"

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

/* compress and twist act about the object's centre of mass and sum to zero; drag pulls towards
   the wind; all are accelerations, independent of particle mass. */
static void test_forces(void **state)
{
    (void)state;
    const char *sets[] = {"forces=[{type: compress, scale: 3, until: 1}, {type: twist, scale: 2, axis: [0, 0, 2]}, "
                          "{type: drag, coefficient: 0.5, wind: [1, 0, 0]}]"};
    run r;
    run_start(&r, CUBE, sets, 1);
    csm_world *w = &r.sim.w;
    csm_particles *P = &w->P;
    memset(P->force, 0, sizeof(double) * 3 * (size_t)P->n);
    for (int k = 0; k < r.sim.nforces; k++) {
        csm_error err;
        if (r.sim.forces[k].apply(w, r.sim.forces[k].state, 0.01, &err)) fail_msg("%s", err.msg);
    }
    double M = 0, c[3] = {0, 0, 0}, worst = 0, scale = 0;
    for (int32_t i = 0; i < P->n; i++) {
        M += P->mass[i];
        for (int d = 0; d < 3; d++) c[d] += P->mass[i] * P->x[3 * i + d];
    }
    for (int d = 0; d < 3; d++) c[d] /= M;
    for (int32_t i = 0; i < P->n; i++) {
        const double *x = &P->x[3 * i], *v = &P->v[3 * i];
        double r3[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
        double s = r3[2] > 0 ? 1 : r3[2] < 0 ? -1 : 0;
        double expect[3] = {-3 * r3[0] - 2 * s * r3[1] - 0.5 * (v[0] - 1), 2 * s * r3[0] - 0.5 * v[1], -0.5 * v[2]};
        for (int d = 0; d < 3; d++) {
            worst = fmax(worst, fabs(P->force[3 * i + d] / P->mass[i] - expect[d]));
            scale = fmax(scale, fabs(expect[d]));
        }
    }
    assert_close(worst, 0.0, 1e-12 * scale);
    /* after `until`, compress stops */
    w->time = 1.5;
    memset(P->force, 0, sizeof(double) * 3 * (size_t)P->n);
    csm_error err;
    if (r.sim.forces[0].apply(w, r.sim.forces[0].state, 0.01, &err)) fail_msg("%s", err.msg);
    for (int32_t k = 0; k < 3 * P->n; k++) assert_true(P->force[k] == 0.0);
    run_stop(&r);
}

/* A load spreads its resultant over the particles of its slab by mass: the forces sum to the
   force and their moment about the slab's centre of mass at rest to the torque; nothing else is
   touched, and its potential is minus the forces' work from the origin. */
static void test_load(void **state)
{
    (void)state;
    const char *sets[] = {"forces=[{type: load, axis: y, from: 0.95, to: 2, force: [1, -2, 3], torque: [0.5, -0.2, 0.3]}]"};
    run r;
    run_start(&r, CUBE, sets, 1);
    csm_world *w = &r.sim.w;
    csm_particles *P = &w->P;
    memset(P->force, 0, sizeof(double) * 3 * (size_t)P->n);
    csm_error err;
    if (r.sim.forces[0].apply(w, r.sim.forces[0].state, 0.01, &err)) fail_msg("%s", err.msg);
    double F[3] = {0, 0, 0}, M = 0, C[3] = {0, 0, 0}, T[3] = {0, 0, 0}, U = 0;
    int32_t n = 0;
    for (int32_t i = 0; i < P->n; i++) {
        const double *f = &P->force[3 * i];
        if (P->rest[3 * i + 1] < 0.95) {
            assert_true(f[0] == 0.0 && f[1] == 0.0 && f[2] == 0.0);
            continue;
        }
        n++;
        M += P->mass[i];
        for (int d = 0; d < 3; d++) F[d] += f[d], C[d] += P->mass[i] * P->rest[3 * i + d];
        U -= csm_v3_dot(f, &P->x[3 * i]);
    }
    assert_true(n > 3);
    for (int d = 0; d < 3; d++) C[d] /= M;
    for (int32_t i = 0; i < P->n; i++) {
        if (P->rest[3 * i + 1] < 0.95) continue;
        double rr[3] = {P->rest[3 * i] - C[0], P->rest[3 * i + 1] - C[1], P->rest[3 * i + 2] - C[2]}, t[3];
        csm_v3_cross(rr, &P->force[3 * i], t);
        for (int d = 0; d < 3; d++) T[d] += t[d];
    }
    const double Fe[3] = {1, -2, 3}, Te[3] = {0.5, -0.2, 0.3};
    for (int d = 0; d < 3; d++) {
        assert_close(F[d], Fe[d], 1e-12);
        assert_close(T[d], Te[d], 1e-12);
    }
    assert_close(r.sim.forces[0].potential(w, r.sim.forces[0].state), U, 1e-12);
    run_stop(&r);
}

/* The sphere collider pushes particles onto its surface and reflects the normal velocity with
   restitution; the shell variant keeps them inside. Pinned particles stay put. */
static void test_sphere_collider(void **state)
{
    (void)state;
    const char *sets[] = {
        "objects.0={shape: {type: points, positions: [[0.5, 0, 0], [0, 0.9, 0], [0, 0, 2], [0.1, 0, 0]]}, "
        "velocity: [-1, 0, 0], pinned: {indices: [3]}}",
        "forces=[]", "colliders=[{type: sphere, radius: 1, restitution: 1, friction: 0, bounce_threshold: 0}]"};
    run r;
    run_start(&r, CUBE, sets, 3);
    csm_world *w = &r.sim.w;
    csm_particles *P = &w->P;
    csm_error err;
    if (r.sim.colliders[0].apply(w, r.sim.colliders[0].state, 0.01, &err)) fail_msg("%s", err.msg);
    assert_close(P->x[0], 1.0, 1e-15);
    assert_close(P->v[0], 1.0, 1e-15); /* reflected, restitution 1 */
    assert_close(csm_v3_norm(&P->x[3]), 1.0, 1e-15);
    assert_close(P->v[3], -1.0, 1e-15); /* tangential: kept without friction */
    assert_close(P->x[6 + 2], 2.0, 0.0);  /* outside: untouched */
    assert_close(P->x[9], 0.1, 0.0);      /* pinned */
    run_stop(&r);
}

/* Applies collider k of a run once, as a step from t0 of length h would. */
static void collide(run *r, int k, double t0, double h)
{
    csm_error err;
    r->sim.w.time = t0;
    if (r->sim.colliders[k].apply(&r->sim.w, r->sim.colliders[k].state, h, &err)) fail_msg("%s", err.msg);
}

/* Moving colliders follow their path and the response is relative to the surface's velocity: a
   rising floor lifts a particle to where it is and gives it its speed, and stops with it at
   `until`; a belt carries a particle that lands on it; a spinning shell drags a particle along its
   wall. A box pushes out through its nearest face, turned by `rotate`, and a
   container box pushes back in. */
static void test_moving_colliders(void **state)
{
    (void)state;
    const char *sets[] = {
        "objects.0={shape: {type: points, positions: [[0, 0.3, 0], [0, -0.01, 0], [0.99, 0, 0], [0, 0, 0]]}, "
        "velocity: [0, 0, 0], pinned: {indices: [3]}}",
        "forces=[]",
        "colliders=[{type: plane, velocity: [0, 2, 0], until: 0.5, restitution: 0, friction: 0}, "
        "{type: plane, velocity: [1, 0, 0], restitution: 0, friction: 100}, "
        "{type: sphere, radius: 1, inside: true, angular_velocity: [0, 0, 3], restitution: 0, friction: 100}, "
        "{type: box, size: [0.2, 2, 0.2], rotate: [0, 0, 90], center: [0, 0.3, 0], friction: 0}, "
        "{type: box, size: [2, 2, 2], inside: true, velocity: [0, 0, 1], restitution: 0, friction: 0}]"};
    run r;
    run_start(&r, CUBE, sets, 3);
    csm_particles *P = &r.sim.w.P;
    double h = 0.01;

    /* the rising floor, at y = 2 (0.21) = 0.42 by the step's end */
    collide(&r, 0, 0.2, h);
    assert_close(P->x[1], 0.42, 1e-15);
    assert_close(P->v[1], 2.0, 1e-12);
    assert_close(P->x[4], 0.42, 1e-15); /* the particle below the floor too */
    /* after `until` it stays at y = 1, and no longer moves */
    P->v[1] = P->v[4] = 0;
    collide(&r, 1.0, h, h);
    collide(&r, 0, 1.0, h);
    assert_close(P->x[1], 1.0, 1e-15);
    assert_close(P->v[1], 0.0, 0.0);
    assert_close(P->x[9 + 1], 0.0, 0.0); /* pinned */

    /* the belt: a particle falling onto it at 1 m/s leaves with the belt's speed */
    P->x[4] = -0.01;
    P->v[3] = 0, P->v[4] = -1, P->v[5] = 0;
    collide(&r, 1, 3.0, h);
    assert_close(P->x[4], 0.0, 1e-15);
    assert_close(P->v[3], 1.0, 1e-12);
    assert_close(P->v[4], 0.0, 1e-12);

    /* the spinning shell: a particle at its wall, moving out at 1 m/s, turns with the wall */
    P->x[6] = 1.01, P->x[7] = P->x[8] = 0;
    P->v[6] = 1, P->v[7] = P->v[8] = 0;
    collide(&r, 2, 0.0, h);
    assert_close(csm_v3_norm(&P->x[6]), 1.0, 1e-15);
    /* the wall's velocity over the step: the chord of its turn by 0.03 rad, omega x r = (0, 3, 0)
       to first order */
    assert_close(P->v[6], (1 - cos(0.03)) / h, 1e-12);
    assert_close(P->v[7], sin(0.03) / h, 1e-12);
    assert_close(P->v[8], 0.0, 0.0);

    /* the solid box, 2 m tall but turned a quarter about z, so 2 m along x and 0.2 m along y */
    P->x[0] = 0.5, P->x[1] = 0.35, P->x[2] = 0;
    P->v[0] = P->v[1] = P->v[2] = 0;
    collide(&r, 3, 0.0, h);
    assert_close(P->x[0], 0.5, 1e-15);
    assert_close(P->x[1], 0.4, 1e-12); /* out through the top face at y = 0.3 + 0.1 */

    /* the container, moving along z: a particle left behind is pushed back in, at its speed */
    P->x[0] = 0, P->x[1] = 0, P->x[2] = -0.5;
    P->v[0] = P->v[1] = P->v[2] = 0;
    collide(&r, 4, 1.0, h); /* its faces at z = 1.01 -+ 1 */
    assert_close(P->x[2], 0.01, 1e-12);
    assert_close(P->v[2], 1.0, 1e-12);
    run_stop(&r);
}

/* A config whose collider stops before it starts is refused, naming the collider. */
static void test_collider_path_is_checked(void **state)
{
    (void)state;
    csm_register_builtins();
    const char *sets[] = {"colliders=[{type: box, from: 2, until: 1}]"};
    csm_config cfg;
    csm_sim sim;
    csm_error err;
    if (csm_config_load(CUBE, sets, 1, &cfg, &err)) fail_msg("%s", err.msg);
    assert_int_not_equal(csm_sim_create(&cfg, &sim, &err), 0);
    assert_non_null(strstr(err.msg, "until = 1 is before from = 2"));
    csm_config_free(&cfg);
}

/* Keyframes move a collider's centre piecewise linearly and hold it outside their times: a press
   plate that goes down 0.5 m in 1 s, holds for 1 s and comes back. Keyframes out of order are a
   one-line error naming the file, line and key. */
static void test_collider_keyframes(void **state)
{
    (void)state;
    const char *sets[] = {
        "objects.0={shape: {type: points, positions: [[0, 0.9, 0], [0, 0.3, 0]]}, velocity: [0, 0, 0]}", "forces=[]",
        "colliders=[{type: plane, normal: [0, -1, 0], offset: -1, restitution: 0, friction: 0, "
        "keyframes: [[0, 0, 0, 0], [1, 0, -0.5, 0], [2, 0, -0.5, 0], [3, 0, 0, 0]]}]"};
    run r;
    run_start(&r, CUBE, sets, 3);
    csm_particles *P = &r.sim.w.P;
    collide(&r, 0, 0.49, 0.01); /* the plate at y = 1 - 0.25 by the step's end, coming down at 0.5 m/s */
    assert_close(P->x[1], 0.75, 1e-12);
    assert_close(P->v[1], -0.5, 1e-12);
    assert_close(P->x[4], 0.3, 0.0);
    P->v[1] = 0;
    collide(&r, 0, 1.5, 0.01); /* held at y = 0.5 */
    assert_close(P->x[1], 0.5, 1e-12);
    assert_close(P->v[1], 0.0, 1e-12);
    P->x[1] = 0.45;
    collide(&r, 0, 2.49, 0.01); /* going back up: the plate is at 0.75 and the particle is free */
    assert_close(P->x[1], 0.45, 0.0);
    collide(&r, 0, 10, 0.01); /* back at rest where it started */
    assert_close(P->x[1], 0.45, 0.0);
    run_stop(&r);

    const char *bad[] = {"colliders=[{type: plane, keyframes: [[0, 0, 0, 0], [0, 1, 0, 0]]}]"};
    csm_config cfg;
    csm_error err;
    assert_int_not_equal(csm_config_load(CUBE, bad, 1, &cfg, &err), 0);
    assert_non_null(strstr(err.msg, "colliders[0].keyframes[1]: its time 0 does not come after 0"));
}

/* A small soft block dropped from just above a floor, for the moving-collider tests. */
static const char *belt =
    "name: belt\n"
    "seed: 1\n"
    "time: {dt: 0.0166667, frames: 180, substeps: 2}\n"
    "objects:\n"
    "  - shape: {type: box, size: [0.4, 0.4, 0.4]}\n"
    "    sampling: {type: grid, spacing: 0.1}\n"
    "    mass: 1.0\n"
    "    position: [0, 0.25, 0]\n"
    "clustering: {method: random_radius, radius: 0.25}\n"
    "solver: {integrator: shape_matching, alpha: 0.5, damping: 0.05}\n"
    "forces: [{type: gravity}]\n";

/* The velocity of a run's centre of mass along x, averaged over its last `frames` frames. */
static double mean_vx_late(const char *const *sets, int nsets, int frames)
{
    run r;
    run_start_text(&r, "belt.yaml", belt, sets, nsets);
    double sum = 0, M = 0;
    const csm_particles *P = &r.sim.w.P;
    for (int32_t i = 0; i < P->n; i++) M += P->mass[i];
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        if (f < r.cfg.frames - frames) continue;
        for (int32_t i = 0; i < P->n; i++) sum += P->mass[i] * P->v[3 * i];
    }
    run_stop(&r);
    return sum / (M * frames);
}

/* Friction acts on the velocity relative to the surface: a block dropped onto a floor that slides
   at 1 m/s along x is carried at the belt's speed after 3 s (0.9996 m/s over the last half second,
   measured); on a frictionless belt it stays where it landed. */
static void test_belt_carries_a_block(void **state)
{
    (void)state;
    const char *grip[] = {"colliders=[{type: plane, velocity: [1, 0, 0], restitution: 0, friction: 0.5}]"};
    const char *slip[] = {"colliders=[{type: plane, velocity: [1, 0, 0], restitution: 0, friction: 0}]"};
    double vg = mean_vx_late(grip, 1, 30), vs = mean_vx_late(slip, 1, 30);
    printf("block on a 1 m/s belt: %.4f m/s with friction, %.2g without\n", vg, vs);
    assert_close(vg, 1.0, 0.02);
    assert_close(vs, 0.0, 1e-9);
}

/* A plate pushes: the plane x = -0.4 (normal +x) moving at 0.5 m/s meets the block resting on a
   floor with friction 0.5 after 0.4 s and drives it ahead at its own speed, the floor's friction
   holding the block against it (0.5000 m/s, measured). On a frictionless floor the stiff block
   leaves the plate at 0.58 m/s: the block's own elasticity, not the plate's restitution of 0. */
static void test_plate_pushes_a_block(void **state)
{
    (void)state;
    const char *push[] = {"colliders=[{type: plane, restitution: 0, friction: 0.5}, "
                          "{type: plane, normal: [1, 0, 0], offset: -0.4, velocity: [0.5, 0, 0], restitution: 0, friction: 0}]",
                          "solver={integrator: strain_limited, alpha: 1, gamma: 0, iterations: 10}"};
    double v = mean_vx_late(push, 2, 30);
    printf("block pushed by a 0.5 m/s plate: %.4f m/s\n", v);
    assert_close(v, 0.5, 0.005);
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
        cmocka_unit_test(test_rotation_rectangle_experiment),
        cmocka_unit_test(test_forces),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_sphere_collider),
        cmocka_unit_test(test_moving_colliders),
        cmocka_unit_test(test_collider_path_is_checked),
        cmocka_unit_test(test_collider_keyframes),
        cmocka_unit_test(test_belt_carries_a_block),
        cmocka_unit_test(test_plate_pushes_a_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
