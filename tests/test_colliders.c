#define _DEFAULT_SOURCE /* mkstemps, fdopen */
/* Forces and colliders: the force plugins' impulses, the load's traction, and colliders that stop,
   carry and push a body along their scripted paths. */
#include "box_mesh.h"
#include "sim_run.h"

#include "csm_math.h"
#include "kernel.h"

#include <stdlib.h>
#include <string.h>

#define CUBE CSM_TEST_DIR "/configs/solver_cube.yaml"

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
        "forces=[]",
        "colliders=[{type: sphere, radius: 1, restitution: 1, friction: 0, bounce_threshold: 0, response: particles}]"};
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
        "colliders=[{type: plane, normal: [0, -1, 0], offset: -1, restitution: 0, friction: 0, response: particles, "
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
   at 1 m/s along x is carried at the belt's speed after 3 s (the soft block rocks as it rides, its
   speed swinging between 0.6 and 1.3 m/s: over the last 1.5 s it averages 0.994 m/s, measured);
   on a frictionless belt it stays where it landed. */
static void test_belt_carries_a_block(void **state)
{
    (void)state;
    const char *grip[] = {"colliders=[{type: plane, velocity: [1, 0, 0], restitution: 0, friction: 0.5}]"};
    const char *slip[] = {"colliders=[{type: plane, velocity: [1, 0, 0], restitution: 0, friction: 0}]"};
    double vg = mean_vx_late(grip, 1, 90), vs = mean_vx_late(slip, 1, 90);
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

/* A stiff cube (strain-limited, alpha 1, one 60 Hz step per frame) dropped with its bottom 1 m
   above a frictionless floor, sliding along x at 0.3 m/s. Returns its first apex after the impact
   over the drop, the centre of mass's normal velocity after the impact over its approach, and its
   velocity along x at the end. */
static const char *bounce =
    "name: bounce\n"
    "time: {dt: 0.0166667, frames: 60}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.4, 0.4, 0.4]}, sampling: {type: grid, spacing: 0.1}, mass: 1, "
    "position: [0, 1.2, 0], velocity: [0.3, 0, 0]}\n"
    "clustering: {method: random_radius, radius: 0.35}\n"
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n"
    "forces: [{type: gravity}]\n";

static double bounce_apex(const char *integrator, const char *collider, double *ratio, double *vx)
{
    const char *sets[] = {integrator, collider};
    run r;
    run_start_text(&r, "bounce.yaml", bounce, sets, 2);
    const csm_particles *P = &r.sim.w.P;
    double M = 0, apex = 0;
    int phase = 0; /* 0 falling, 1 rising, 2 past the apex */
    for (int32_t i = 0; i < P->n; i++) M += P->mass[i];
    for (int f = 0; f < r.cfg.frames && phase < 2; f++) {
        double v0 = 0;
        for (int32_t i = 0; i < P->n; i++) v0 += P->mass[i] * P->v[3 * i + 1] / M;
        run_frame(&r);
        double v = 0, low = INFINITY, px = 0;
        for (int32_t i = 0; i < P->n; i++) {
            v += P->mass[i] * P->v[3 * i + 1] / M;
            px += P->mass[i] * P->v[3 * i] / M;
            low = fmin(low, P->x[3 * i + 1]);
        }
        *vx = px;
        if (phase == 0 && v > 0) {
            phase = 1;
            *ratio = v / -(v0 - 9.81 * r.cfg.dt); /* its approach: the velocity the step would have reached */
        }
        if (phase == 1) {
            apex = fmax(apex, low);
            if (v < 0) phase = 2;
        }
    }
    run_stop(&r);
    return apex;
}

/* Restitution answers the body (response: body, the default): Newton's law for the object as a
   rigid body, the contact's normal velocity leaving at e times its approach (to 2e-3). The
   cube's apex over its drop is e^2 less the flight's own step error at one step per frame
   (about e v h / 2, 0.03 at e = 0.9): measured 0.0000, 0.2317 and 0.7746 for e = 0, 0.5 and 0.9
   under strain_limited and pbd, 0.2269 and 0.7767 under xpbd, 0.2407 and 0.7938 under
   projective_dynamics, held within 0.055. The frictionless floor leaves its sliding speed alone
   (projective_dynamics: 0.997 of it at 10 iterations, its contacts held toward where the last
   iteration's projection put them, across the floor as well);
   with the papers' per-vertex response (response: particles) the clusters' pull cancels the
   bounce. */
static void test_restitution_answers_the_body(void **state)
{
    (void)state;
    const char *integrators[] = {"solver.integrator=strain_limited", "solver.integrator=pbd",
                                 "solver.integrator=xpbd", "solver.integrator=projective_dynamics"};
    const double es[] = {0, 0.5, 0.9};
    for (int k = 0; k < 4; k++)
        for (int q = 0; q < 3; q++) {
            char collider[160];
            snprintf(collider, sizeof collider, "colliders=[{type: plane, restitution: %g, friction: 0}]", es[q]);
            double ratio = NAN, vx = NAN, apex = bounce_apex(integrators[k], collider, &ratio, &vx);
            printf("%s, e %.1f: apex / drop %.4f, v_out / v_in %.4f, sliding %.4f m/s\n", integrators[k] + 18, es[q],
                   apex, ratio, vx);
            assert_close(apex, es[q] * es[q], 0.055);
            if (es[q] > 0) assert_close(ratio, es[q], 2e-3);
            assert_close(vx, 0.3, k < 3 ? 1e-9 : 0.3 * 5e-3);
        }
    double ratio = NAN, vx = NAN,
           apex = bounce_apex("solver.integrator=strain_limited",
                              "colliders=[{type: plane, restitution: 0.9, friction: 0, response: particles}]", &ratio, &vx);
    printf("per-vertex restitution 0.9: apex / drop %.4f\n", apex);
    assert_true(apex < 0.1);
}

/* A stiff cube (strain-limited, alpha 1, 20 iterations, 60 Hz) resting on a floor under gravity
   tilted by theta (the incline), friction mu. Returns how far its centre of mass moves along the
   slope from 1 s (settled) to the end, and its acceleration along the slope over the run's second
   half (a parabola's fit). */
static const char *incline =
    "name: incline\n"
    "time: {dt: 0.0166667, frames: 300}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.4, 0.4, 0.4]}, sampling: {type: grid, spacing: 0.1}, mass: 1, "
    "position: [0, 0.2, 0]}\n"
    "clustering: {method: random_radius, radius: 0.35}\n"
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n";

static double incline_slide(double theta_deg, double mu, double *accel)
{
    char gravity[120], floor[120];
    double th = theta_deg * CSM_PI / 180;
    snprintf(gravity, sizeof gravity, "forces=[{type: gravity, g: [%.17g, %.17g, 0]}]", 9.81 * sin(th), -9.81 * cos(th));
    snprintf(floor, sizeof floor, "colliders=[{type: plane, restitution: 0, friction: %g}]", mu);
    const char *sets[] = {gravity, floor};
    run r;
    run_start_text(&r, "incline.yaml", incline, sets, 2);
    const csm_particles *P = &r.sim.w.P;
    int half = r.cfg.frames / 2;
    double M = 0, settled = 0, x = 0, S[5] = {0}, b[3] = {0}; /* sums of t^k and t^k x for the fit */
    for (int32_t i = 0; i < P->n; i++) M += P->mass[i];
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        x = 0;
        for (int32_t i = 0; i < P->n; i++) x += P->mass[i] * P->x[3 * i] / M;
        if (f == 59) settled = x;
        if (f < half) continue;
        double t = (f - half) * r.cfg.dt, tk = 1;
        for (int k = 0; k < 5; k++, tk *= t) {
            S[k] += tk;
            if (k < 3) b[k] += tk * x;
        }
    }
    run_stop(&r);
    /* least squares x = c0 + c1 t + c2 t^2: the normal equations, by Cramer's rule */
    double A[9] = {S[0], S[1], S[2], S[1], S[2], S[3], S[2], S[3], S[4]}, A2[9];
    memcpy(A2, A, sizeof A);
    for (int k = 0; k < 3; k++) A2[3 * k + 2] = b[k];
    *accel = 2 * csm_m3_det(A2) / csm_m3_det(A);
    return x - settled;
}

/* Static friction holds below the friction angle (Coulomb): a cube on a plane 0.57 degrees under
   atan mu stays where it settled, less than 1 mm in 4 s (measured 0 to 1e-8 m at mu = 0.5 and
   0.2; without the body's friction it crept at 2.9 mm/s at 26 degrees, 57 mm in 10 s in the
   papers' particle rule). Above it, the cube slides at g (sin theta - mu cos theta) to 1e-3
   (measured 1.0000). */
static void test_static_friction_holds(void **state)
{
    (void)state;
    const double cases[][3] = {{0.5, 26.0, 28.0}, {0.2, 10.74, 13.0}};
    for (int k = 0; k < 2; k++) {
        double mu = cases[k][0], a_stick, a_slip;
        double stick = incline_slide(cases[k][1], mu, &a_stick);
        incline_slide(cases[k][2], mu, &a_slip);
        double th = cases[k][2] * CSM_PI / 180, coulomb = 9.81 * (sin(th) - mu * cos(th));
        printf("mu %.1f: %.2f degrees, moved %.3g m after settling; %.1f degrees, %.4f m/s^2 against %.4f\n", mu,
               cases[k][1], stick, cases[k][2], a_slip, coulomb);
        assert_true(fabs(stick) < 1e-3);
        assert_close(a_slip / coulomb, 1.0, 1e-3);
    }
}

/* A cube spinning on its face about the vertical slows by Coulomb's torque and then stays: its
   angular velocity falls at mu g rho / k^2 (rho the mean distance of its bottom face's particles
   from the face's centre, k^2 the mean of x^2 + z^2 over its particles: equal loads on the grid,
   0.5 % off as measured) and, once stopped, it turns less than 1e-5 rad in a second. The body's
   friction (response body) stops the contact region's turn about its normal with what the
   particles' friction left of each point's mu N times that point's arm; taking the budget at the
   points' mean arm instead turned the centre's unused friction into torque, 2.2 % too much. */
static const char *spinning =
    "name: spinning\n"
    "time: {dt: 0.0166667, frames: 120}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.4, 0.4, 0.4]}, sampling: {type: grid, spacing: 0.1, mass: uniform}, mass: 1, "
    "position: [0, 0.2, 0], angular_velocity: [0, 3, 0]}\n"
    "clustering: {method: random_radius, radius: 0.35}\n"
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n"
    "forces: [{type: gravity}]\n"
    "colliders: [{type: plane, restitution: 0, friction: 0.1}]\n";

/* The body's angular velocity about y and its turn about y since rest (the mean of the particles'
   angles about its centre, from their rest offsets). */
static void spin_of(const csm_particles *P, double *omega, double *angle)
{
    double M = 0, c[3] = {0, 0, 0}, c0[3] = {0, 0, 0}, L = 0, I = 0, s = 0, co = 0;
    for (int32_t i = 0; i < P->n; i++) {
        M += P->mass[i];
        for (int a = 0; a < 3; a++) c[a] += P->mass[i] * P->x[3 * i + a], c0[a] += P->mass[i] * P->rest[3 * i + a];
    }
    for (int a = 0; a < 3; a++) c[a] /= M, c0[a] /= M;
    for (int32_t i = 0; i < P->n; i++) {
        double qx = P->x[3 * i] - c[0], qz = P->x[3 * i + 2] - c[2], px = P->rest[3 * i] - c0[0], pz = P->rest[3 * i + 2] - c0[2];
        L += P->mass[i] * (qz * P->v[3 * i] - qx * P->v[3 * i + 2]);
        I += P->mass[i] * (qx * qx + qz * qz);
        s += P->mass[i] * (pz * qx - px * qz); /* sum m p x q . y: the best turn's sine, times the spread */
        co += P->mass[i] * (px * qx + pz * qz);
    }
    *omega = L / I;
    *angle = atan2(s, co);
}

static void test_spin_slows_by_coulomb(void **state)
{
    (void)state;
    run r;
    run_start_text(&r, "spinning.yaml", spinning, NULL, 0);
    const csm_particles *P = &r.sim.w.P;
    double low = INFINITY, k2 = 0, M = 0, rho = 0, c[3] = {0, 0, 0};
    int32_t face = 0;
    for (int32_t i = 0; i < P->n; i++) {
        low = fmin(low, P->rest[3 * i + 1]);
        M += P->mass[i];
        for (int a = 0; a < 3; a++) c[a] += P->mass[i] * P->rest[3 * i + a];
    }
    for (int a = 0; a < 3; a++) c[a] /= M;
    for (int32_t i = 0; i < P->n; i++) {
        double dx = P->rest[3 * i] - c[0], dz = P->rest[3 * i + 2] - c[2];
        k2 += P->mass[i] / M * (dx * dx + dz * dz);
        if (P->rest[3 * i + 1] > low + 1e-9) continue;
        rho += hypot(dx, dz);
        face++;
    }
    rho /= face;
    double coulomb = 0.1 * 9.81 * rho / k2, t[2] = {0.2, 0.4}, w[2] = {0}, at1 = 0, at2 = 0, omega = 0, angle = 0;
    for (int f = 1; f <= r.cfg.frames; f++) {
        run_frame(&r);
        spin_of(P, &omega, &angle);
        for (int k = 0; k < 2; k++)
            if (f == (int)lround(t[k] * 60)) w[k] = omega;
        if (f == 60) at1 = angle;
        if (f == r.cfg.frames) at2 = angle;
    }
    double slowing = (w[0] - w[1]) / (t[1] - t[0]);
    printf("spinning cube, mu 0.1: slows at %.4f rad/s^2, Coulomb mu g rho / k^2 %.4f (%.4f); turned %.2e rad from 1 s "
           "to 2 s, omega %.2e rad/s at 2 s\n", slowing, coulomb, slowing / coulomb, at2 - at1, omega);
    assert_close(slowing / coulomb, 1.0, 0.015);
    assert_true(fabs(at2 - at1) < 1e-5);
    assert_true(fabs(omega) < 1e-4);
    run_stop(&r);
}

/* No tunnelling through solid boxes and balls: a particle that came from outside is pushed back
   through the side it entered (the swept test), however far it went in the step. A 0.2 m cube
   thrown at a 0.05 m thick box collider at 3 and 10 m/s (travel per step 1 and 3.3 times the
   box's thickness) stops on its top; at 30 m/s (10 times, and 2.5 times the cube's own size) the
   step flattens it onto the top, and it springs back off upwards with 0.12 J of its 45 J (before:
   it passed through at all three); so does the same box as a mesh collider (a particle's path
   is tested against its triangles: before, the cube passed through at all three speeds); a 2 cm
   cube at 10 m/s onto a 0.1 m ball stops on the ball's top. Restitution 0, no gravity. */
static const char *thin =
    "name: thin\n"
    "seed: 1\n"
    "time: {dt: 0.0166667, frames: 30}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.2, 0.2, 0.2]}, sampling: {type: grid, spacing: 0.05}, mass: 0.1, "
    "position: [0, 0.6, 0]}\n"
    "clustering: {method: random_radius, radius: 0.15}\n"
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n";

static double lowest_after(const char *const *sets, int nsets)
{
    run r;
    run_start_text(&r, "thin.yaml", thin, sets, nsets);
    for (int f = 0; f < r.cfg.frames; f++) run_frame(&r);
    double low = INFINITY;
    for (int32_t i = 0; i < r.sim.w.P.n; i++) low = fmin(low, r.sim.w.P.x[3 * i + 1]);
    run_stop(&r);
    return low;
}

static void test_no_tunnelling(void **state)
{
    (void)state;
    const double speeds[] = {3, 10, 30};
    for (int k = 0; k < 3; k++) {
        char v[80];
        snprintf(v, sizeof v, "objects.0.velocity=[0, %g, 0]", -speeds[k]);
        const char *sets[] = {v, "colliders=[{type: box, center: [0, -0.025, 0], size: [2, 0.05, 2], restitution: 0, "
                                 "friction: 0}]"};
        double low = lowest_after(sets, 2);
        printf("box 0.05 m thick, %g m/s: lowest particle at %.4f m\n", speeds[k], low);
        assert_true(low > -1e-9);
    }
    char off[] = "/tmp/csm_slab_XXXXXX.off"; /* the same box as a mesh collider */
    box_off(off, 1, 0.025, 1);
    for (int k = 0; k < 3; k++) {
        char v[80], mesh[256];
        snprintf(v, sizeof v, "objects.0.velocity=[0, %g, 0]", -speeds[k]);
        snprintf(mesh, sizeof mesh, "colliders=[{type: mesh, path: '%s', center: [0, -0.025, 0], restitution: 0, friction: 0}]",
                 off);
        /* 3 cm higher: at 10 m/s no step of the cube's bottom ends within the box (the box above
           was met at its top face) */
        const char *sets[] = {v, mesh, "objects.0.position=[0, 0.63, 0]"};
        double low = lowest_after(sets, 3);
        printf("mesh of that box, %g m/s, 3 cm higher: lowest particle at %.4f m\n", speeds[k], low);
        assert_true(low > -1e-9);
    }
    remove(off);
    const char *ball[] = {"objects.0.velocity=[0, -10, 0]", "objects.0.shape.size=[0.02, 0.02, 0.02]",
                          "objects.0.sampling.spacing=0.02",
                          "colliders=[{type: sphere, center: [0, -0.05, 0], radius: 0.05, restitution: 0, friction: 0}]"};
    double low = lowest_after(ball, 4);
    printf("ball of radius 0.05 m, 10 m/s: lowest particle at %.4f m\n", low);
    assert_true(low > -0.01 && low < 0.01);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forces),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_sphere_collider),
        cmocka_unit_test(test_moving_colliders),
        cmocka_unit_test(test_collider_path_is_checked),
        cmocka_unit_test(test_collider_keyframes),
        cmocka_unit_test(test_belt_carries_a_block),
        cmocka_unit_test(test_plate_pushes_a_block),
        cmocka_unit_test(test_restitution_answers_the_body),
        cmocka_unit_test(test_static_friction_holds),
        cmocka_unit_test(test_spin_slows_by_coulomb),
        cmocka_unit_test(test_no_tunnelling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
