#define _DEFAULT_SOURCE /* mkstemps, fdopen */
/* Contact between particles (core/contact.h) and the constraints the integrators project inside
   their iterations: the broad phase against brute force, momentum and angular momentum through a
   collision, no pair left overlapping, resting contact that holds a cube up, and the same bits
   whatever the thread count. */
#include "box_mesh.h"
#include "check.h"
#include "sim_run.h"

#include "contact.h"
#include "csm_math.h"
#include "kernel.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Three small bodies, for the broad phase. */
static const char *three =
    "name: three\n"
    "seed: 2\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.4, 0.4, 0.4]}, sampling: {type: grid, spacing: 0.05}, mass: 1}\n"
    "  - {shape: {type: sphere, radius: 0.25}, sampling: {type: poisson, spacing: 0.05}, mass: 1, position: [1, 0, 0]}\n"
    "  - {shape: {type: box, size: [0.3, 0.6, 0.3]}, sampling: {type: grid, spacing: 0.05}, mass: 1, position: [0, 1, 0]}\n"
    "clustering: {method: random_radius, radius: 0.12}\n"
    "contact: {method: particles, radius: 0.03}\n";

static int cmp_pair(const void *a, const void *b)
{
    const int32_t *p = a, *q = b;
    return p[0] != q[0] ? (p[0] > q[0]) - (p[0] < q[0]) : (p[1] > q[1]) - (p[1] < q[1]);
}

/* The pairs of positions x the broad phase lists are exactly those a check of every pair finds
   within twice the contact distance and not excluded; returns how many. */
static int32_t check_brute_force(csm_contacts *c, const csm_world *w, const double *x, const char *what)
{
    int32_t n = w->P.n;
    assert_int_equal(csm_contacts_find(c, w, x), 0);
    int32_t np = c->npairs;
    int32_t *found = malloc(sizeof *found * 2 * (size_t)(np + 1));
    assert_non_null(found);
    memcpy(found, c->pair, sizeof *found * 2 * (size_t)np);
    qsort(found, (size_t)np, 2 * sizeof *found, cmp_pair);
    int32_t nb = 0, cap = 1024, *brute = malloc(sizeof *brute * 2 * (size_t)cap);
    assert_non_null(brute);
    double s = 2.0 * c->distance;
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++) {
            double d[3] = {x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1], x[3 * i + 2] - x[3 * j + 2]};
            if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] >= s * s || csm_contacts_excluded(c, w, i, j)) continue;
            if (nb == cap) brute = realloc(brute, sizeof *brute * 2 * (size_t)(cap *= 2));
            assert_non_null(brute);
            brute[2 * nb] = i;
            brute[2 * nb + 1] = j;
            nb++;
        }
    printf("%s: %d pairs found, %d by brute force, %d of %d particles in the grid\n", what, np, nb, c->nnear, n);
    assert_int_equal(np, nb);
    assert_memory_equal(found, brute, sizeof *found * 2 * (size_t)np);
    free(found);
    free(brute);
    return np;
}

/* The broad phase lists exactly the pairs within twice the contact distance that are not
   excluded, as a check of every pair finds them: on particles scattered at random through a box
   (so that many share a cell, and the grid's hash folds distant cells together), with and
   without self-contact; on the three bodies set apart but for 0.1 m, where only the particles
   near another body's box go into the grid; and on a scene of more objects than the broad phase
   asks boxes of, where every particle goes in. */
static void test_broad_phase_is_brute_force(void **state)
{
    (void)state;
    for (int self = 0; self <= 1; self++) {
        const char *sets[] = {self ? "contact.self=true" : "contact.self=false"};
        run r;
        run_start_text(&r, "three.yaml", three, sets, 1);
        csm_world *w = &r.sim.w;
        csm_contacts *c = &r.sim.constraints->contacts;
        int32_t n = w->P.n;
        double *x = malloc(sizeof *x * 3 * (size_t)n);
        assert_non_null(x);
        csm_rng rng;
        csm_rng_seed(&rng, 7, (uint64_t)self);
        char what[64];
        for (int trial = 0; trial < 3; trial++) {
            double side = trial == 0 ? 0.5 : trial == 1 ? 1.5 : 40.0; /* dense, sparse, and far apart */
            for (int64_t a = 0; a < 3 * (int64_t)n; a++) x[a] = side * csm_rng_uniform(&rng) - 0.5 * side + 1e3 * (trial == 2);
            snprintf(what, sizeof what, "self %d, box %g m", self, side);
            int32_t np = check_brute_force(c, w, x, what);
            if (trial == 0) assert_true(np > 1000); /* the dense box has work to do */
        }
        /* the bodies as sampled, the ball and the tall box moved to 0.1 m from the cube */
        for (int32_t i = 0; i < n; i++)
            for (int e = 0; e < 3; e++)
                x[3 * i + e] = w->P.x[3 * i + e] - (w->P.object[i] == 1 && e == 0 ? 0.45 : w->P.object[i] == 2 && e == 1 ? 0.4 : 0);
        snprintf(what, sizeof what, "self %d, three bodies 0.1 m apart", self);
        int32_t np = check_brute_force(c, w, x, what);
        assert_true(np > 100);
        if (!self) assert_true(c->nnear < n / 2); /* the far sides stay out of the grid */
        free(x);
        run_stop(&r);
    }
    /* more objects than CSM_CONTACT_BOX_OBJECTS: 4 x 4 x 5 small cubes, 0.06 m apart */
    char text[16384];
    int len = snprintf(text, sizeof text, "name: many\nseed: 3\nobjects:\n");
    int count = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int e = 0; e < 5; e++, count++)
                len += snprintf(text + len, sizeof text - (size_t)len,
                                "  - {shape: {type: box, size: [0.1, 0.1, 0.1]}, sampling: {type: grid, spacing: 0.05}, "
                                "mass: 1, position: [%g, %g, %g]}\n", 0.16 * a, 0.16 * b, 0.16 * e);
    snprintf(text + len, sizeof text - (size_t)len, "clustering: {method: random_radius, radius: 0.1}\n"
                                                    "contact: {method: particles, radius: 0.03}\n");
    assert_true(count > CSM_CONTACT_BOX_OBJECTS);
    run r;
    run_start_text(&r, "many.yaml", text, NULL, 0);
    csm_contacts *c = &r.sim.constraints->contacts;
    int32_t np = check_brute_force(c, &r.sim.w, r.sim.w.P.x, "80 cubes");
    assert_true(np > 100);
    assert_int_equal(c->nnear, r.sim.w.P.n);
    run_stop(&r);
}

/* A box and a spinning ball thrown at each other off-centre in space, no gravity. */
static const char *collision =
    "name: collision\n"
    "seed: 3\n"
    "time: {dt: 0.0166667, frames: 60}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.5, 0.5, 0.5]}, sampling: {type: grid, spacing: 0.1}, mass: 1,\n"
    "     position: [-0.6, 0.15, 0], velocity: [2, 0, 0]}\n"
    "  - {shape: {type: sphere, radius: 0.3}, sampling: {type: poisson, spacing: 0.1}, mass: 2,\n"
    "     position: [0.6, -0.1, 0.05], velocity: [-1, 0.2, 0], angular_velocity: [0, 0, 1]}\n"
    "clustering: {method: random_radius, radius: 0.25}\n"
    "solver: {integrator: strain_limited, alpha: 0.5, gamma: 0.05, iterations: 5, conserve: angular}\n"
    "contact: {method: particles, friction: 0}\n";

/* The momentum and angular momentum about the origin, from the simulation's diagnostics. */
static void momenta(run *r, double p[3], double L[3])
{
    csm_diag d;
    csm_diagnostics(&r->sim, &d);
    memcpy(p, d.momentum, sizeof d.momentum);
    memcpy(L, d.angular_momentum, sizeof d.angular_momentum);
}

/* The smallest distance between particles of different objects, over the contact distance. */
static double closest_between_objects(const csm_world *w)
{
    const csm_particles *P = &w->P;
    double best = INFINITY;
    for (int32_t i = 0; i < P->n; i++)
        for (int32_t j = i + 1; j < P->n; j++) {
            if (P->object[i] == P->object[j]) continue;
            double d[3] = {P->x[3 * i] - P->x[3 * j], P->x[3 * i + 1] - P->x[3 * j + 1], P->x[3 * i + 2] - P->x[3 * j + 2]};
            best = fmin(best, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
        }
    return best / w->constraints->contacts.distance;
}

/* The collision turns both bodies back (momentum moves from one to the other), keeps the total
   momentum to round-off, and the angular momentum too: particle pairs push along their direction
   at the step's start, and a cluster proxy's body answers a particle's push with the opposite
   impulse at the particle's position then. No pair of the two bodies ends a frame closer than
   95 % of the contact distance (90 % with proxies), and the kinetic energy never rises above its
   start. With friction the momentum is kept still; the angular momentum only to the first order
   of the turn that the hold between the two bodies (contact_hold.c) moves each by (proxies: dL
   4e-3 of the bodies' 4 kg m/s, particles 1.5e-2). Both methods. */
static void test_collision_keeps_momenta(void **state)
{
    (void)state;
    const char *methods[] = {"contact.method=particles", "contact.method=cluster_proxies"};
    for (int m = 0; m < 2; m++)
        for (int friction = 0; friction <= 1; friction++) {
            const char *sets[] = {methods[m], friction ? "contact.friction=0.5" : "contact.friction=0"};
            run r;
            run_start_text(&r, "collision.yaml", collision, sets, 2);
            csm_particles *P = &r.sim.w.P;
            double p0[3], L0[3], p[3], L[3], closest = INFINITY, ke0, ke_max = 0;
            csm_diag diag;
            csm_diagnostics(&r.sim, &diag);
            ke0 = diag.kinetic;
            momenta(&r, p0, L0);
            double scale = 4.0; /* kg m/s: the bodies' momenta before, |1 * 2| + |2 * 1| */
            for (int f = 0; f < r.cfg.frames; f++) {
                run_frame(&r);
                closest = fmin(closest, closest_between_objects(&r.sim.w));
                csm_diagnostics(&r.sim, &diag);
                ke_max = fmax(ke_max, diag.kinetic);
            }
            momenta(&r, p, L);
            double box_vx = 0, box_m = 0;
            for (int32_t i = 0; i < P->n; i++)
                if (P->object[i] == 0) box_vx += P->mass[i] * P->v[3 * i], box_m += P->mass[i];
            box_vx /= box_m;
            printf("%s, friction %d: box vx %.3f m/s after; |dp| %.2e, dL %.2e %.2e %.2e; closest pair %.4f d; "
                   "kinetic energy at most %.6f of the start\n", methods[m], friction, box_vx,
                   sqrt((p[0] - p0[0]) * (p[0] - p0[0]) + (p[1] - p0[1]) * (p[1] - p0[1]) + (p[2] - p0[2]) * (p[2] - p0[2])),
                   L[0] - L0[0], L[1] - L0[1], L[2] - L0[2], closest, ke_max / ke0);
            assert_true(box_vx < 0.5); /* it came in at 2 m/s */
            for (int a = 0; a < 3; a++) assert_close(p[a], p0[a], 1e-12 * scale);
            if (!friction)
                for (int a = 0; a < 3; a++) assert_close(L[a], L0[a], 1e-11 * scale);
            /* a proxy keeps d to its members in its rest space, which F maps to the world: a
               cluster compressed in the impact lets particles a few percent closer */
            assert_true(closest > (m ? 0.9 : 0.95));
            assert_true(ke_max <= ke0 * (1 + 1e-12)); /* contact creates no energy */
            run_stop(&r);
        }
}

/* A light cube thrown fast onto a heavy slab with cluster proxies: kinetic + potential + stored
   energy never rises above its start at any frame, from 4 to 20 m/s (the light cube's clusters
   answered the slab's heavy particles by the whole of their impulses, pass after pass, and a
   10 m/s throw reached 1e46 J), and the cube stays above the slab. */
static const char *impact = "name: impact\n"
                            "seed: 1\n"
                            "time: {dt: 0.0166667, frames: 20}\n"
                            "objects:\n"
                            "  - {shape: {type: box, size: [0.2, 0.2, 0.2]}, sampling: {type: grid, spacing: 0.05}, mass: 0.1,"
                            " position: [0, 0.4, 0], velocity: [0, -10, 0]}\n"
                            "  - {shape: {type: box, size: [0.6, 0.2, 0.6]}, sampling: {type: grid, spacing: 0.05}, mass: 4,"
                            " position: [0, -0.1, 0]}\n"
                            "clustering: {method: random_radius, radius: 0.15}\n"
                            "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n"
                            "forces: [{type: gravity}]\n"
                            "colliders: [{type: plane, offset: -0.2, restitution: 0, friction: 0.5}]\n"
                            "contact: {method: cluster_proxies, friction: 0}\n";

static void test_proxy_impact_creates_no_energy(void **state)
{
    (void)state;
    const char *speeds[] = {"objects.0.velocity=[0, -4, 0]", "objects.0.velocity=[0, -10, 0]",
                            "objects.0.velocity=[0, -20, 0]"};
    for (int s = 0; s < 3; s++) {
        run r;
        run_start_text(&r, "impact.yaml", impact, &speeds[s], 1);
        csm_diag d;
        csm_diagnostics(&r.sim, &d);
        double e0 = d.kinetic + d.potential + d.elastic, ke0 = d.kinetic, rise = 0, lowest = INFINITY;
        for (int f = 0; f < r.cfg.frames; f++) {
            run_frame(&r);
            csm_diagnostics(&r.sim, &d);
            rise = fmax(rise, d.kinetic + d.potential + d.elastic - e0);
            const csm_particles *P = &r.sim.w.P;
            for (int32_t i = 0; i < P->n && f == r.cfg.frames - 1; i++)
                if (P->object[i] == 0) lowest = fmin(lowest, P->x[3 * i + 1]);
        }
        printf("cluster_proxies, %s onto a slab: energy rose at most %.3g J, kinetic %.3g J at the start; the "
               "cube's lowest particle %.3f m\n", speeds[s], rise, ke0, lowest);
        assert_true(rise <= 1e-9 * ke0);
        assert_true(lowest > -0.05); /* the slab's top is at 0 */
        run_stop(&r);
    }
}

/* cluster_proxies with the paper's reaction (Jones et al. 2015: the particle alone moves out of
   the proxy) stops the same collision but does not keep momentum: what the rigid reaction of
   the default repairs. */
static void test_proxies_paper_reaction_loses_momentum(void **state)
{
    (void)state;
    const char *sets[] = {"contact.method=cluster_proxies", "contact.reaction=jones2015", "contact.friction=0"};
    run r;
    run_start_text(&r, "collision.yaml", collision, sets, 3);
    double p0[3], L0[3], p[3], L[3];
    momenta(&r, p0, L0);
    for (int f = 0; f < r.cfg.frames; f++) run_frame(&r);
    momenta(&r, p, L);
    double dp = sqrt((p[0] - p0[0]) * (p[0] - p0[0]) + (p[1] - p0[1]) * (p[1] - p0[1]) + (p[2] - p0[2]) * (p[2] - p0[2]));
    printf("jones2015 reaction: |dp| %.3f kg m/s of 4\n", dp);
    assert_true(dp > 1e-2);
    run_stop(&r);
}

/* The same collision with 1 and 2 threads: the same positions bit for bit, for either method. */
static void test_contact_is_thread_independent(void **state)
{
    (void)state;
    double *x[4] = {NULL, NULL, NULL, NULL};
    int32_t n[4] = {0};
    for (int t = 0; t < 4; t++) {
        csm_set_threads(t % 2 + 1);
        const char *sets[] = {"contact.friction=0.5", "time.frames=40",
                              t < 2 ? "contact.method=particles" : "contact.method=cluster_proxies"};
        run r;
        run_start_text(&r, "collision.yaml", collision, sets, 3);
        for (int f = 0; f < r.cfg.frames; f++) run_frame(&r);
        n[t] = r.sim.w.P.n;
        x[t] = malloc(sizeof(double) * 3 * (size_t)n[t]);
        assert_non_null(x[t]);
        memcpy(x[t], r.sim.w.P.x, sizeof(double) * 3 * (size_t)n[t]);
        run_stop(&r);
    }
    csm_set_threads(0);
    for (int t = 0; t < 4; t += 2) {
        assert_int_equal(n[t], n[t + 1]);
        assert_memory_equal(x[t], x[t + 1], sizeof(double) * 3 * (size_t)n[t]);
    }
    for (int t = 0; t < 4; t++) free(x[t]);
}

/* A cube dropped 0.4 m onto the ground at one step per 60 Hz frame (strain limited, damping
   0.1). The ground is projected inside the Jacobi passes, so the cube rests on it at its own
   height and comes to rest. Applied after the step alone (before csm_world_project), the same
   cube bounced on without end, 0.96 of its height and 0.016 J of its 3.9 J after 4 s. */
static const char *drop =
    "name: settle\n"
    "seed: 1\n"
    "time: {dt: 0.0166667, frames: 240}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [1, 1, 1]}, sampling: {type: grid, spacing: 0.1, mass: uniform}, mass: 1, position: [0, 0.9, 0]}\n"
    "clustering: {method: random_radius, radius: 0.35}\n"
    "solver: {integrator: strain_limited, alpha: 0.5, gamma: 0.005, iterations: 5, damping: 0.1}\n"
    "forces: [{type: gravity}]\n"
    "colliders: [{type: plane}]\n";

static void test_dropped_cube_rests_firm(void **state)
{
    (void)state;
    run r;
    run_start_text(&r, "settle.yaml", drop, NULL, 0);
    csm_particles *P = &r.sim.w.P;
    double drop_energy = 1.0 * 9.81 * 0.4;
    for (int f = 0; f < r.cfg.frames; f++) run_frame(&r);
    csm_diag diag;
    csm_diagnostics(&r.sim, &diag);
    double lo = INFINITY, hi = -INFINITY, rlo = INFINITY, rhi = -INFINITY, ke = diag.kinetic;
    for (int32_t i = 0; i < P->n; i++) {
        lo = fmin(lo, P->x[3 * i + 1]);
        hi = fmax(hi, P->x[3 * i + 1]);
        rlo = fmin(rlo, P->rest[3 * i + 1]);
        rhi = fmax(rhi, P->rest[3 * i + 1]);
    }
    double height = (hi - lo) / (rhi - rlo); /* of the particles' rest extent */
    printf("after 4 s: height %.4f of the rest height, lowest particle %.2g m, kinetic energy %.3g J (%.2g of the drop)\n",
           height, lo, ke, ke / drop_energy);
    assert_true(height > 0.97 && height < 1.03);
    assert_true(lo > -1e-9);
    assert_true(ke < 1e-3 * drop_energy);
    run_stop(&r);
}

/* Five cubes stacked, each set off its neighbours by half a spacing, touching at the contact
   distance: they settle onto each other (the lattices nest) and come to rest standing, no pair
   of two cubes closer than 95 % of the contact distance at the end of any frame. Each cube's
   clusters hold it stiff enough to carry the ones above (a column of small clusters sags and
   leans with or without contact: the weight of 25 layers needs more passes to get down). The
   particles are spheres of one radius and one mass (sampling.mass: uniform): with volume shares,
   a corner's eighth of a mass against its neighbours' full ones is pushed eight times as far by
   the contact projections, and the stack leans over (0.76 m of drift, measured). */
#define STACK_CUBE(position)                                                                                       \
    "  - {shape: {type: box, size: [0.4, 0.4, 0.4]}, sampling: {type: grid, spacing: 0.1, mass: uniform}, mass: 1, " \
    "position: " position "}\n"
#define STACK_HEAD "seed: 4\ntime: {dt: 0.0166667, frames: 150}\nobjects:\n" STACK_CUBE("[0, 0.3, 0]") STACK_CUBE("[0.05, 0.8, 0]")
#define STACK_TAIL                                                                                                     \
    "clustering: {method: random_radius, radius: 0.35}\n"                                                              \
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20, damping: 0.1}\n"                         \
    "forces: [{type: gravity}]\n"                                                                                       \
    "colliders: [{type: plane, restitution: 0}]\n"                                                                      \
    "contact: {method: particles, friction: 0.5}\n"
static const char *stack = "name: stack\n" STACK_HEAD STACK_CUBE("[0, 1.3, 0.05]") STACK_CUBE("[-0.05, 1.8, 0]")
    STACK_CUBE("[0, 2.3, -0.05]") STACK_TAIL;

static void test_stack_comes_to_rest(void **state)
{
    (void)state;
    run r;
    run_start_text(&r, "stack.yaml", stack, NULL, 0);
    csm_particles *P = &r.sim.w.P;
    const int32_t *obj = r.sim.w.P.object;
    double start[5][2] = {{0}}, closest = INFINITY;
    int32_t count[5] = {0};
    for (int32_t i = 0; i < P->n; i++) count[obj[i]]++;
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        closest = fmin(closest, closest_between_objects(&r.sim.w));
    }
    csm_diag diag;
    csm_diagnostics(&r.sim, &diag);
    double ke = diag.kinetic, top = -INFINITY, end[5][2] = {{0}}, drift = 0;
    for (int32_t i = 0; i < P->n; i++) {
        top = fmax(top, P->x[3 * i + 1]);
        start[obj[i]][0] += P->rest[3 * i] / count[obj[i]];
        start[obj[i]][1] += P->rest[3 * i + 2] / count[obj[i]];
        end[obj[i]][0] += P->x[3 * i] / count[obj[i]];
        end[obj[i]][1] += P->x[3 * i + 2] / count[obj[i]];
    }
    for (int k = 0; k < 5; k++) drift = fmax(drift, hypot(end[k][0] - start[k][0], end[k][1] - start[k][1]));
    /* standing, the top is near 2.3 m: five cubes of 0.4 m of particles and four gaps of d = 0.1 m
       less what the nested lattices take (0.013 m or 0.029 m a gap); a fallen cube takes 0.4 m */
    printf("stack: closest pair %.4f d, top %.4f m, the cubes' largest sideways drift %.4f m, kinetic %.3g J\n", closest,
           top, drift, ke);
    assert_true(closest > 0.95);
    assert_true(top > 2.2);
    assert_true(drift < 0.05); /* half a spacing: a lattice settling into the pockets of the one below */
    assert_true(ke < 1e-3);
    run_stop(&r);
}

/* The stack with its lattices aligned (each particle over one of the cube below: a face five
   particles across has no surface patch, its particles lie within 2 d of an edge, so the cubes
   stand as balls on balls) comes to rest: kinetic energy under 1e-6 J from 5 s to 10 s, and no
   cube's centre moves 1 mm sideways from 4 s to 10 s. The pairs' own friction left each step a
   little slip between two cubes, and the column swayed on those hinges (6.5e-4 J after 5 s, the
   top cube 13 mm off by 30 s); contact.response body holds the two as rigid bodies by Coulomb's
   law on their contact region's total (csm_contacts_hold). */
static void test_aligned_stack_rests(void **state)
{
    (void)state;
    const char *sets[] = {"objects.1.position=[0, 0.8, 0]", "objects.2.position=[0, 1.3, 0]",
                          "objects.3.position=[0, 1.8, 0]", "objects.4.position=[0, 2.3, 0]", "time.frames=600",
                          "colliders.0.friction=0.5"};
    run r;
    run_start_text(&r, "stack.yaml", stack, sets, 6);
    const csm_particles *P = &r.sim.w.P;
    double at4[5][2] = {{0}}, late = 0, drift = 0;
    for (int f = 1; f <= r.cfg.frames; f++) {
        run_frame(&r);
        csm_diag diag;
        csm_diagnostics(&r.sim, &diag);
        if (f >= 300) late = fmax(late, diag.kinetic);
        if (f != 240 && f != r.cfg.frames) continue;
        double c[5][2] = {{0}}, m[5] = {0};
        for (int32_t i = 0; i < P->n; i++) {
            c[P->object[i]][0] += P->mass[i] * P->x[3 * i];
            c[P->object[i]][1] += P->mass[i] * P->x[3 * i + 2];
            m[P->object[i]] += P->mass[i];
        }
        for (int k = 0; k < 5; k++) {
            c[k][0] /= m[k];
            c[k][1] /= m[k];
            if (f == 240)
                memcpy(at4[k], c[k], sizeof c[k]);
            else
                drift = fmax(drift, hypot(c[k][0] - at4[k][0], c[k][1] - at4[k][1]));
        }
    }
    printf("aligned stack: kinetic energy at most %.3g J over 5 to 10 s, largest drift %.3f mm from 4 s to 10 s\n",
           late, 1e3 * drift);
    assert_true(late < 1e-6);
    assert_true(drift < 1e-3);
    run_stop(&r);
}

/* The same stack with cluster_proxies settles: its kinetic energy over 9 to 10 s is under half of
   what it was over 4 to 5 s, and under 1e-3 J. Friction took back a particle's slip relative to
   its proxy's centre, as if the cluster under it did not turn: a rocking cube's contacts were
   dragged along its turn, and the stack swayed ever more (2.4e-2 J at 5 s, 3.0e-2 J at 10 s,
   5e-2 J at 25 s, the top cube 87 mm off). */
static void test_proxy_stack_settles(void **state)
{
    (void)state;
    const char *sets[] = {"contact.method=cluster_proxies", "time.frames=600", "colliders.0.friction=0.5"};
    run r;
    run_start_text(&r, "stack.yaml", stack, sets, 3);
    double early = 0, late = 0;
    for (int f = 0; f < r.cfg.frames; f++) {
        run_frame(&r);
        csm_diag diag;
        csm_diagnostics(&r.sim, &diag);
        if (f >= 240 && f < 300) early = fmax(early, diag.kinetic);
        if (f >= 540) late = fmax(late, diag.kinetic);
    }
    printf("cluster_proxies stack: kinetic energy at most %.3g J over 4 to 5 s, %.3g J over 9 to 10 s\n", early, late);
    assert_true(late < 0.5 * early);
    assert_true(late < 1e-3);
    run_stop(&r);
}

/* The stack's two lowest cubes with cluster_proxies, one on the other on the ground, rest:
   kinetic energy under 1e-6 J from 2 s to 6 s. The proxies' pushes move their clusters, and the
   hold its bodies, as rigid bodies, which slid the lower cube's bottom particles along the ground
   after the ground's friction had taken back their slip; with the contacts last in each
   projection they left each step sliding, one particle at a time (up to 0.02 m/s: 6.7e-6 J to the
   end). The colliders now project after the contacts as well (csm_world_project). */
static void test_proxy_pair_rests_on_ground(void **state)
{
    (void)state;
    const char *pair = "name: pair\n" STACK_HEAD STACK_TAIL;
    const char *sets[] = {"contact.method=cluster_proxies", "time.frames=360", "colliders.0.friction=0.5"};
    run r;
    run_start_text(&r, "pair.yaml", pair, sets, 3);
    double late = 0;
    for (int f = 1; f <= r.cfg.frames; f++) {
        run_frame(&r);
        csm_diag diag;
        csm_diagnostics(&r.sim, &diag);
        if (f >= 120) late = fmax(late, diag.kinetic);
    }
    printf("two cluster_proxies cubes on the ground: kinetic energy at most %.3g J from 2 s to 6 s\n", late);
    assert_true(late < 1e-6);
    run_stop(&r);
}

/* Leaving out the proxy candidates whose margins prove them outside changes no bit: the proxy stack
   falling, landing and settling over 1.5 s, every pair looked at in every pass, and left out where
   the margins allow; most are. */
static void test_proxy_margins_change_nothing(void **state)
{
    (void)state;
    const char *sets[] = {"contact.method=cluster_proxies", "time.frames=90"};
    run r[2];
    for (int cull = 0; cull < 2; cull++) {
        run_start_text(&r[cull], "stack.yaml", stack, sets, 2);
        r[cull].sim.constraints->contacts.proxy_cull = cull;
        for (int f = 0; f < r[cull].cfg.frames; f++) run_frame(&r[cull]);
    }
    const csm_contacts *c = &r[1].sim.constraints->contacts;
    int32_t n = r[0].sim.w.P.n;
    size_t bytes = sizeof(double) * 3 * (size_t)n;
    double share = (double)c->proxy_left_out / (double)(c->proxy_left_out + c->proxy_looks);
    printf("cluster_proxies stack, 1.5 s: %.1f %% of the candidates' looks left out, positions %s\n", 100 * share,
           memcmp(r[0].sim.w.P.x, r[1].sim.w.P.x, bytes) ? "differ" : "the same to the bit");
    assert_int_equal(r[0].sim.constraints->contacts.proxy_left_out, 0);
    assert_memory_equal(r[0].sim.w.P.x, r[1].sim.w.P.x, bytes);
    assert_memory_equal(r[0].sim.w.P.v, r[1].sim.w.P.v, bytes);
    assert_true(share > 0.3);
    run_stop(&r[0]);
    run_stop(&r[1]);
}

/* A 0.4 m cube on a 3 x 0.2 x 1 m slab whose bottom layer is pinned, under gravity tilted by theta
   about z, as on a slope (make validation's contact page measures the same). */
static const char *slope =
    "name: slope\n"
    "seed: 1\n"
    "time: {dt: 0.0166667, frames: 45}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.4, 0.4, 0.4]}, sampling: {type: grid, spacing: 0.1}, mass: 1, position: [-1, 0.4, 0]}\n"
    "  - {shape: {type: box, size: [3, 0.2, 1]}, sampling: {type: grid, spacing: 0.1}, mass: 10,\n"
    "     pinned: {below: {axis: y, value: -0.05}}}\n"
    "clustering: {method: random_radius, radius: 0.35}\n"
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n"
    "contact: {method: particles, friction: 0}\n";

/* The cube's acceleration down the slope of theta degrees: a least-squares parabola through its
   centre of mass from frame `from` on (it starts at rest; the contact takes a few frames to carry
   its weight); *moved the distance it went from frame `from` to the end. */
static double slope_acceleration(double theta, const char **extra, int nextra, int from, double *moved)
{
    char g[128];
    double th = theta * M_PI / 180;
    snprintf(g, sizeof g, "forces=[{type: gravity, g: [%.17g, %.17g, 0]}]", 9.81 * sin(th), -9.81 * cos(th));
    const char *sets[8] = {g};
    for (int e = 0; e < nextra; e++) sets[1 + e] = extra[e];
    run r;
    run_start_text(&r, "slope.yaml", slope, sets, 1 + nextra);
    const csm_particles *P = &r.sim.w.P;
    double S[3][3] = {{0}}, b[3] = {0}, start = 0, x = 0;
    for (int f = 1; f <= r.cfg.frames; f++) {
        run_frame(&r);
        double m = 0;
        x = 0;
        for (int32_t i = 0; i < P->n; i++)
            if (P->object[i] == 0) x += P->mass[i] * P->x[3 * i], m += P->mass[i];
        x /= m;
        if (f == from) start = x;
        if (f < from) continue;
        double t = f * r.cfg.dt, v[3] = {1, t, 0.5 * t * t};
        for (int a = 0; a < 3; a++) {
            b[a] += v[a] * x;
            for (int c = 0; c < 3; c++) S[a][c] += v[a] * v[c];
        }
    }
    run_stop(&r);
    *moved = x - start;
    double Sinv[9] = {0};
    assert_true(csm_m3_inverse(&S[0][0], Sinv) != 0);
    return Sinv[6] * b[0] + Sinv[7] * b[1] + Sinv[8] * b[2];
}

/* Frictionless contact between two objects is Coulomb's with mu = 0: the cube slides down a 10 or
   20 degree slope at g sin theta within 1 %, whatever the two lattices (both grids, aligned or
   set off by half a spacing, a Poisson sample on a grid, two Poisson samples; the last within 3 %
   at 20 degrees, 2.4 % slow as measured: the cube, its bottom's particles at any depth, leans by
   up to three degrees as it slides, and the slab's particles are pushed off its tilted face), as the particles
   over the other's surface are held off it as a plane (contact.normal: surface). As spheres
   (contact.normal: centres) the aligned grids' lattices interlock and the cube stops within 10 cm.
   With mu = 0.5 it slides at g (sin theta - mu cos theta) within 2 % at 35 degrees, and stays
   within a millimetre over 3 s at 26 degrees (atan 0.5 = 26.57), and at mu = 0.3 half a degree
   under atan 0.3. With cluster_proxies, frictionless, it slides at g sin theta within 2 % at 10
   and 20 degrees (0.9965 and 0.9983); at 35 degrees, mu = 0.5, at Coulomb's within 2 %; half a
   degree under atan 0.2 it stays within a millimetre over 3 s, and a Poisson cube half a degree
   under atan 0.5 within 5 cm as it lands. */
static void test_slope_follows_coulomb(void **state)
{
    (void)state;
    const char *lattices[][3] = {
        {"objects.0.sampling.type=grid", "objects.1.sampling.type=grid", "objects.0.position=[-1, 0.4, 0]"},
        {"objects.0.sampling.type=grid", "objects.1.sampling.type=grid", "objects.0.position=[-0.95, 0.4, 0.05]"},
        {"objects.0.sampling.type=poisson", "objects.1.sampling.type=grid", "objects.0.position=[-1, 0.4, 0]"},
        {"objects.0.sampling.type=poisson", "objects.1.sampling.type=poisson", "objects.0.position=[-1, 0.4, 0]"},
    };
    const char *names[] = {"grids aligned", "grids set off", "Poisson on a grid", "Poisson on Poisson"};
    for (int l = 0; l < 4; l++)
        for (int theta = 10; theta <= 20; theta += 10) {
            double moved, a = slope_acceleration(theta, lattices[l], 3, 15, &moved);
            double ref = 9.81 * sin(theta * M_PI / 180);
            printf("%s, %d degrees, frictionless: %.4f m/s^2, g sin theta %.4f (%.4f)\n", names[l], theta, a, ref,
                   a / ref);
            assert_true(fabs(a / ref - 1) < (l < 3 || theta == 10 ? 0.01 : 0.03));
        }
    const char *centres[] = {lattices[0][0], lattices[0][1], lattices[0][2], "contact.normal=centres"};
    double moved, a = slope_acceleration(10, centres, 4, 1, &moved);
    printf("grids aligned, 10 degrees, frictionless, contact.normal centres: %.4f m/s^2, went %.3f m\n", a, moved);
    assert_true(moved < 0.1);
    const char *rough[] = {lattices[0][0], lattices[0][1], lattices[0][2], "contact.friction=0.5"};
    a = slope_acceleration(35, rough, 4, 15, &moved);
    double ref = 9.81 * (sin(35 * M_PI / 180) - 0.5 * cos(35 * M_PI / 180));
    printf("grids aligned, 35 degrees, mu 0.5: %.4f m/s^2, Coulomb %.4f (%.4f)\n", a, ref, a / ref);
    assert_true(fabs(a / ref - 1) < 0.02);
    const char *held[] = {lattices[0][0], lattices[0][1], lattices[0][2], "contact.friction=0.5", "time.frames=240"};
    slope_acceleration(26, held, 5, 60, &moved);
    printf("grids aligned, 26 degrees, mu 0.5: went %.3f mm from 1 s to 4 s\n", 1e3 * moved);
    assert_true(fabs(moved) < 1e-3);
    /* half a degree under the friction angle at mu = 0.3 it holds as well: the pairs' friction caps
       what it holds in the end, not the sum of its corrections, which the iterations undo in part
       (summed, they spent the whole of mu and the cube crept at 3 mm/s) */
    const double mu3 = 0.3;
    char mu3set[64];
    snprintf(mu3set, sizeof mu3set, "contact.friction=%g", mu3);
    const char *held3[] = {lattices[0][0], lattices[0][1], lattices[0][2], mu3set, "time.frames=240"};
    slope_acceleration(atan(mu3) * 180 / M_PI - 0.5, held3, 5, 60, &moved);
    printf("grids aligned, %.2f degrees, mu 0.3: went %.3f mm from 1 s to 4 s\n", atan(mu3) * 180 / M_PI - 0.5,
           1e3 * moved);
    assert_true(fabs(moved) < 1e-3);
    /* cluster_proxies, frictionless: a particle that sank a little into a proxy leaves by the
       nearest face and keeps its motion along it (sent back along its path to where it went in,
       the cube stood still) */
    for (int theta = 10; theta <= 20; theta += 10) {
        const char *proxies[] = {lattices[0][0], lattices[0][1], lattices[0][2], "contact.method=cluster_proxies"};
        a = slope_acceleration(theta, proxies, 4, 15, &moved);
        ref = 9.81 * sin(theta * M_PI / 180);
        printf("grids aligned, %d degrees, frictionless, cluster_proxies: %.4f m/s^2, g sin theta %.4f (%.4f)\n", theta,
               a, ref, a / ref);
        assert_true(fabs(a / ref - 1) < 0.02);
    }
    /* cluster_proxies with friction: Coulomb's slide at 35 degrees, and static friction half a
       degree under atan 0.2, where the hold bounds the sum of the two objects' frictions (their
       lengths summed, the cube crept 5 mm/s) */
    const char *proxy_rough[] = {lattices[0][0], lattices[0][1], lattices[0][2], "contact.friction=0.5",
                                 "contact.method=cluster_proxies"};
    a = slope_acceleration(35, proxy_rough, 5, 15, &moved);
    ref = 9.81 * (sin(35 * M_PI / 180) - 0.5 * cos(35 * M_PI / 180));
    printf("grids aligned, 35 degrees, mu 0.5, cluster_proxies: %.4f m/s^2, Coulomb %.4f (%.4f)\n", a, ref, a / ref);
    assert_true(fabs(a / ref - 1) < 0.02);
    const double mu2 = 0.2;
    char mu2set[64];
    snprintf(mu2set, sizeof mu2set, "contact.friction=%g", mu2);
    const char *proxy_held[] = {lattices[0][0], lattices[0][1], lattices[0][2], mu2set, "time.frames=240",
                                "contact.method=cluster_proxies"};
    slope_acceleration(atan(mu2) * 180 / M_PI - 0.5, proxy_held, 6, 60, &moved);
    printf("grids aligned, %.2f degrees, mu 0.2, cluster_proxies: went %.3f mm from 1 s to 4 s\n",
           atan(mu2) * 180 / M_PI - 0.5, 1e3 * moved);
    assert_true(fabs(moved) < 1e-3);
    /* a Poisson cube half a degree under atan 0.5: its proxies reach the shape's surface, not its
       outer particles' centres at any depth under it, and it lands and settles (17 mm from 1 s to
       4 s; bounded by the centres it landed tilted on their steps and rolled down the slope, 1.4 m
       by 2 s) */
    const char *poisson_held[] = {lattices[2][0], lattices[2][1], lattices[2][2], "contact.friction=0.5",
                                  "time.frames=240", "contact.method=cluster_proxies"};
    slope_acceleration(atan(0.5) * 180 / M_PI - 0.5, poisson_held, 6, 60, &moved);
    printf("Poisson on a grid, %.2f degrees, mu 0.5, cluster_proxies: went %.3f mm from 1 s to 4 s\n",
           atan(0.5) * 180 / M_PI - 0.5, 1e3 * moved);
    assert_true(fabs(moved) < 0.05);
}

/* Two 0.2 m cubes of 0.05 m spacing thrown at each other, no gravity. */
static const char *headon =
    "name: headon\n"
    "seed: 1\n"
    "time: {dt: 0.0166667, frames: 30}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.2, 0.2, 0.2]}, sampling: {type: grid, spacing: 0.05}, mass: 0.1, position: [-1, 0, 0]}\n"
    "  - {shape: {type: box, size: [0.2, 0.2, 0.2]}, sampling: {type: grid, spacing: 0.05}, mass: 0.1, position: [1, 0.03, 0.02]}\n"
    "clustering: {method: random_radius, radius: 0.15}\n"
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n"
    "contact: {method: particles, friction: 0}\n";

/* The headon cubes with sets, each frame's end tracked as csm run tracks it: the run's warning,
   which there must be. */
static void headon_warning(const char *const *sets, int nsets, char *warning, size_t size)
{
    run r;
    run_start_text(&r, "headon.yaml", headon, sets, nsets);
    for (int f = 0; f < r.cfg.frames; f++) {
        csm_diag diag;
        run_frame(&r);
        csm_diagnostics(&r.sim, &diag);
        csm_sim_track_contact(&r.sim, &diag);
    }
    warning[0] = 0;
    assert_int_equal(csm_sim_contact_warning(&r.sim, warning, size), 1);
    run_stop(&r);
}

/* No tunnelling between bodies: two cubes meeting at 3, 10 and 30 m/s each, slightly off centre (a
   relative travel of 0.1 to 1 m a step, 2 to 20 contact distances; from the predicted positions
   alone they passed through each other at 30 m/s) end every frame with no particle of one
   closer than 0.9 d to one of the other and cube 0's centre left of cube 1's, the momentum kept
   to round-off and the kinetic energy never above its start: the broad phase sweeps the step
   when particles travel more than d / 4 over it. (Spheres pack loosely: at 10 m/s the squashed
   cubes' lattices slip into each other, their centres 0.05 m apart, no pair closer than d.) The
   same with cluster_proxies: a particle whose path relative to a cluster crosses its proxy over
   the step goes back to where it went in (at 30 m/s they passed through each other). Faster than
   the particles' sweep holds whole, the run warns; so does one whose particle ends a frame deeper
   than d inside another object's proxy (since the proxies are rounded, none of these cubes'
   particles does at 60, 100 or 300 m/s each), and so does one whose particle travels more than
   64 contact distances relative to another object's cluster in a step (from 120 m/s each these
   cubes go through each other, docs/physics.md). */
static void test_bodies_never_pass(void **state)
{
    (void)state;
    const double speeds[] = {3, 10, 30};
    for (int k = 0; k < 6; k++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "objects.0.velocity=[%g, 0, 0]", speeds[k % 3]);
        snprintf(b, sizeof b, "objects.1.velocity=[%g, 0, 0]", -speeds[k % 3]);
        const char *sets[] = {a, b, k < 3 ? "contact.method=particles" : "contact.method=cluster_proxies"};
        run r;
        run_start_text(&r, "headon.yaml", headon, sets, 3);
        const csm_particles *P = &r.sim.w.P;
        double p0[3], L0[3], p[3], L[3], closest = INFINITY, ke_max = 0, ke0, gap = INFINITY;
        csm_diag diag;
        csm_diagnostics(&r.sim, &diag);
        ke0 = diag.kinetic;
        momenta(&r, p0, L0);
        for (int f = 0; f < r.cfg.frames; f++) {
            run_frame(&r);
            closest = fmin(closest, closest_between_objects(&r.sim.w));
            csm_diagnostics(&r.sim, &diag);
            csm_sim_track_contact(&r.sim, &diag);
            ke_max = fmax(ke_max, diag.kinetic);
            double cx[2] = {0, 0}, m[2] = {0, 0};
            for (int32_t i = 0; i < P->n; i++) {
                cx[P->object[i]] += P->mass[i] * P->x[3 * i];
                m[P->object[i]] += P->mass[i];
            }
            gap = fmin(gap, cx[1] / m[1] - cx[0] / m[0]);
        }
        momenta(&r, p, L);
        double dp = sqrt((p[0] - p0[0]) * (p[0] - p0[0]) + (p[1] - p0[1]) * (p[1] - p0[1]) + (p[2] - p0[2]) * (p[2] - p0[2]));
        printf("%s, head-on at %g m/s each: closest pair %.4f d, the cubes' centres at least %.4f m apart in x, |dp| %.2e, "
               "kinetic energy at most %.6f of the start\n", sets[2], speeds[k % 3], closest, gap, dp, ke_max / ke0);
        assert_true(closest > 0.9);
        assert_true(gap > 0); /* cube 0 left of cube 1 at every frame's end */
        assert_true(dp < 1e-12 * 0.2 * speeds[k % 3]);
        assert_true(ke_max <= ke0 * (1 + 1e-12));
        assert_true(r.sim.constraints->contacts.outran == 0); /* within the sweep, and the proxies' bound: no warning */
        assert_true(r.sim.inside.value == 0); /* no particle deeper than d in a proxy: no warning */
        run_stop(&r);
    }
    /* With cluster_proxies, the two cubes set 0.1 m into each other and both held in place: no
       contact can part them, at the frame's end a particle lies 0.12 m inside a proxy, deeper than
       the contact distance, and the run says so. */
    const char *stuck[] = {"objects.0.position=[-0.05, 0, 0]", "objects.1.position=[0.05, 0.03, 0.02]",
                           "objects.0.velocity=[0, 0, 0]", "objects.1.velocity=[0, 0, 0]",
                           "objects.0.pinned={below: {axis: y, value: 1}}", "objects.1.pinned={below: {axis: y, value: 1}}",
                           "time.frames=2", "contact.method=cluster_proxies"};
    char inside[1200];
    headon_warning(stuck, 8, inside, sizeof inside);
    printf("cluster_proxies, two cubes held 0.1 m into each other: %s\n", inside);
    assert_non_null(strstr(inside, "m inside a proxy of object"));
    assert_non_null(strstr(inside, "deeper than the contact distance 0.05 m"));
    /* With cluster_proxies at 150 m/s each (5 m, 100 contact distances, of relative travel a step)
       the two go through each other: beyond the proxies' 64 contact distances the run says so. */
    const char *through[] = {"objects.0.velocity=[150, 0, 0]", "objects.1.velocity=[-150, 0, 0]", "time.frames=2",
                             "contact.method=cluster_proxies"};
    char beyond[1200];
    headon_warning(through, 4, beyond, sizeof beyond);
    printf("cluster_proxies, head-on at 150 m/s each: %s\n", beyond);
    assert_non_null(strstr(beyond, "travelled 5 m in one step at t = 0 s (300 m/s) relative to a cluster of object"));
    assert_non_null(strstr(beyond, "beyond the 3.2 m (64 contact distances) within which cluster_proxies hold"));
    /* Beyond the sweep's 512 contact distances a step (2,000 m/s each, 33 m a step) the run says so,
       with the particle, its speed and the object it passed near. */
    const char *fast[] = {"objects.0.velocity=[2000, 0, 0]", "objects.1.velocity=[-2000, 0, 0]", "time.frames=1"};
    char warning[1200];
    headon_warning(fast, 3, warning, sizeof warning);
    printf("head-on at 2000 m/s each: %s\n", warning);
    assert_non_null(strstr(warning, "of object 0 travelled 33.3 m in one step"));
    assert_non_null(strstr(warning, "(2e+03 m/s) near object 1, beyond the 25.6 m (512 contact distances)"));
}

/* A 0.4 m cube dropped from 1 m onto a 2 x 0.2 x 2 m slab held in place. */
static const char *drop_on_slab =
    "name: drop_on_slab\n"
    "seed: 1\n"
    "time: {dt: 0.0166667, frames: 60}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.4, 0.4, 0.4]}, sampling: {type: grid, spacing: 0.1}, mass: 1, position: [0, 1.4, 0]}\n"
    "  - {shape: {type: box, size: [2, 0.2, 2]}, sampling: {type: grid, spacing: 0.1}, mass: 10,\n"
    "     pinned: {below: {axis: y, value: 1}}}\n"
    "clustering: {method: random_radius, radius: 0.35}\n"
    "solver: {integrator: strain_limited, alpha: 1, gamma: 0, iterations: 20}\n"
    "forces: [{type: gravity}]\n"
    "contact: {method: particles, friction: 0}\n";

/* The velocity of object o's centre of mass. */
static void object_velocity(const csm_particles *P, int32_t o, double v[3])
{
    double m = 0;
    v[0] = v[1] = v[2] = 0;
    for (int32_t i = 0; i < P->n; i++)
        if (P->object[i] == o) {
            m += P->mass[i];
            for (int e = 0; e < 3; e++) v[e] += P->mass[i] * P->v[3 * i + e];
        }
    for (int e = 0; e < 3; e++) v[e] /= m;
}

/* contact.restitution is Newton's law between bodies: two cubes meeting head-on at 3 m/s each part
   at e times their approach within 0.002 (e = 0.5, 0.9, 1; at e = 0 the pushes alone leave 6 % of
   it, what the cubes' strain gives back), momentum kept to round-off and the kinetic energy never
   above its start; the off-centre collision of a box and a spinning ball at e = 0.8 keeps
   momentum and angular momentum to round-off; a cube dropped 1 m onto a slab held in place rises
   to e^2 of it within 0.02 (0.5, 0.9). The same with cluster_proxies (each particle pushed out of
   the other's clusters is a push of the contact region; the head-on parting within 0.005,
   measured 0.4979, 0.8969, 0.9967). */
static void test_restitution_between_bodies(void **state)
{
    (void)state;
    const double es[] = {0, 0.5, 0.9, 1};
    const char *methods[] = {"contact.method=particles", "contact.method=cluster_proxies"};
    for (int k = 0; k < 8; k++) {
        char e[64];
        snprintf(e, sizeof e, "contact.restitution=%g", es[k % 4]);
        const char *sets[] = {"objects.0.velocity=[3, 0, 0]", "objects.1.velocity=[-3, 0, 0]",
                              "objects.1.position=[1, 0, 0]", "time.frames=40", e, methods[k / 4]};
        run r;
        run_start_text(&r, "headon.yaml", headon, sets, 6);
        double p0[3], L0[3], p[3], L[3], ke0, ke_max = 0, va[3], vb[3];
        csm_diag diag;
        csm_diagnostics(&r.sim, &diag);
        ke0 = diag.kinetic;
        momenta(&r, p0, L0);
        for (int f = 0; f < r.cfg.frames; f++) {
            run_frame(&r);
            csm_diagnostics(&r.sim, &diag);
            ke_max = fmax(ke_max, diag.kinetic);
        }
        momenta(&r, p, L);
        object_velocity(&r.sim.w.P, 0, va);
        object_velocity(&r.sim.w.P, 1, vb);
        double parted = (vb[0] - va[0]) / 6, dp = fabs(p[0] - p0[0]) + fabs(p[1] - p0[1]) + fabs(p[2] - p0[2]);
        printf("%s, head-on at e = %g: part at %.4f of the approach, |dp| %.2e, kinetic energy at most %.6f of the "
               "start\n", methods[k / 4], es[k % 4], parted, dp, ke_max / ke0);
        if (es[k % 4] > 0) assert_true(fabs(parted - es[k % 4]) < (k < 4 ? 2e-3 : 5e-3));
        else assert_true(parted < 0.1);
        assert_true(dp < 1e-12);
        assert_true(ke_max <= ke0 * (1 + 1e-12));
        run_stop(&r);
    }
    const char *sets[] = {"contact.restitution=0.8"};
    run r;
    run_start_text(&r, "collision.yaml", collision, sets, 1);
    double p0[3], L0[3], p[3], L[3];
    momenta(&r, p0, L0);
    for (int f = 0; f < r.cfg.frames; f++) run_frame(&r);
    momenta(&r, p, L);
    double box[3];
    object_velocity(&r.sim.w.P, 0, box);
    printf("box and ball at e = 0.8: box vx %.3f m/s after; dp %.2e %.2e %.2e, dL %.2e %.2e %.2e\n", box[0], p[0] - p0[0],
           p[1] - p0[1], p[2] - p0[2], L[0] - L0[0], L[1] - L0[1], L[2] - L0[2]);
    for (int a = 0; a < 3; a++) {
        assert_close(p[a], p0[a], 4e-12);
        assert_close(L[a], L0[a], 4e-11);
    }
    run_stop(&r);
    for (int k = 1; k <= 4; k++) {
        char e[64];
        snprintf(e, sizeof e, "contact.restitution=%g", es[2 - k % 2]);
        const char *drop_sets[] = {e, methods[(k - 1) / 2]};
        run d;
        run_start_text(&d, "drop_on_slab.yaml", drop_on_slab, drop_sets, 2);
        const csm_particles *P = &d.sim.w.P;
        double y = 0, m = 0, prev = INFINITY, apex = -INFINITY;
        int rising = 0;
        for (int f = 0; f < d.cfg.frames; f++) {
            run_frame(&d);
            y = m = 0;
            for (int32_t i = 0; i < P->n; i++)
                if (P->object[i] == 0) y += P->mass[i] * P->x[3 * i + 1], m += P->mass[i];
            y /= m;
            rising |= y > prev;
            if (rising) apex = fmax(apex, y);
            prev = y;
        }
        /* at rest the cube's centre is 0.4 m up: the slab's top particles at 0.1, d = 0.1 apart */
        double ratio = (apex - 0.4) / 1.0;
        double ek = es[2 - k % 2];
        printf("%s, cube dropped 1 m onto a slab at e = %g: rises %.4f m, e^2 = %.4f\n", methods[(k - 1) / 2], ek, ratio,
               ek * ek);
        assert_true(fabs(ratio - ek * ek) < 0.02);
        run_stop(&d);
    }
}

/* The mesh collider of a cube's 12 triangles pushes every particle exactly as the box collider
   of the same size, pose and motion does: out through the nearest face from inside, not at all
   from outside. Both project the same random points, inside and around the cube, turned and
   moving (so its pose at the step's end is what both see). */
static void test_mesh_collider_is_the_box(void **state)
{
    (void)state;
    char off[] = "/tmp/csm_cube_XXXXXX.off";
    box_off(off, 1, 1, 1); /* a cube of edge 2 about the origin */
    enum { N = 2000 };
    csm_rng rng;
    csm_rng_seed(&rng, 11, 0);
    size_t cap = 96 * N + 4096;
    char *text = malloc(cap);
    assert_non_null(text);
    int len = snprintf(text, cap, "name: mesh_box\nobjects:\n  - {shape: {type: points, positions: [");
    for (int i = 0; i < N; i++)
        len += snprintf(text + len, cap - (size_t)len, "%s[%.17g, %.17g, %.17g]", i ? ", " : "",
                        0.3 + 1.6 * (csm_rng_uniform(&rng) - 0.5), 0.2 + 1.6 * (csm_rng_uniform(&rng) - 0.5),
                        -0.1 + 1.6 * (csm_rng_uniform(&rng) - 0.5));
    len += snprintf(text + len, cap - (size_t)len, "]}, mass: 1}\nclustering: {method: random_radius, radius: 10}\n");
    const char *pose = "center: [0.3, 0.2, -0.1], rotate: [20, 35, -10], velocity: [0.2, -0.1, 0.3], "
                       "angular_velocity: [0.5, 1, -0.7]";
    char box_text[512], mesh_text[1024];
    snprintf(box_text, sizeof box_text, "colliders=[{type: box, size: [1, 1, 1], %s}]", pose);
    snprintf(mesh_text, sizeof mesh_text, "colliders=[{type: mesh, path: '%s', scale: 0.5, %s}]", off, pose);
    const char *sets[2][1] = {{box_text}, {mesh_text}};
    double *x[2];
    int32_t moved = 0, kept = 0;
    for (int k = 0; k < 2; k++) {
        run r;
        run_start_text(&r, "mesh_box.yaml", text, sets[k], 1);
        csm_world *w = &r.sim.w;
        w->time = 0.7;
        x[k] = malloc(3 * sizeof *x[k] * (size_t)w->P.n);
        assert_non_null(x[k]);
        memcpy(x[k], w->P.x, 3 * sizeof *x[k] * (size_t)w->P.n);
        const csm_stage *st = &r.sim.colliders[0];
        double work = st->project(w, st->state, 0.01, x[k]);
        assert_true(isfinite(work));
        if (k == 1)
            for (int32_t i = 0; i < w->P.n; i++) {
                double d[3] = {x[1][3 * i] - w->P.x[3 * i], x[1][3 * i + 1] - w->P.x[3 * i + 1],
                               x[1][3 * i + 2] - w->P.x[3 * i + 2]};
                if (d[0] != 0 || d[1] != 0 || d[2] != 0) moved++;
                else kept++;
            }
        run_stop(&r);
    }
    double worst = 0;
    for (int32_t i = 0; i < 3 * N; i++) worst = fmax(worst, fabs(x[0][i] - x[1][i]));
    printf("mesh collider of a cube against the box: %d points pushed, %d left, largest difference %.2e m\n", moved,
           kept, worst);
    assert_true(moved > N / 10 && kept > N / 10); /* both kinds of point are there */
    assert_true(worst < 1e-12);
    free(x[0]);
    free(x[1]);
    free(text);
    remove(off);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broad_phase_is_brute_force),
        cmocka_unit_test(test_collision_keeps_momenta),
        cmocka_unit_test(test_proxy_impact_creates_no_energy),
        cmocka_unit_test(test_proxies_paper_reaction_loses_momentum),
        cmocka_unit_test(test_contact_is_thread_independent),
        cmocka_unit_test(test_dropped_cube_rests_firm),
        cmocka_unit_test(test_stack_comes_to_rest),
        cmocka_unit_test(test_aligned_stack_rests),
        cmocka_unit_test(test_proxy_stack_settles),
        cmocka_unit_test(test_proxy_pair_rests_on_ground),
        cmocka_unit_test(test_proxy_margins_change_nothing),
        cmocka_unit_test(test_slope_follows_coulomb),
        cmocka_unit_test(test_bodies_never_pass),
        cmocka_unit_test(test_restitution_between_bodies),
        cmocka_unit_test(test_mesh_collider_is_the_box),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
