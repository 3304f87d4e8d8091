/* Objects with their own clustering, material and plasticity (objects[].clustering,
   objects[].modulus, objects[].plasticity): an object's own sections act exactly as the same
   settings at the top level, on its clusters alone; bad ones are refused with file, line and key. */
#include "check.h"
#include "sim_run.h"

#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Two bodies far apart in space, set off stretched so that they spring back: the cube takes the
   top-level sections; the bar has its own clustering, modulus and plasticity (it yields). */
static const char *pair =
    "name: pair\n"
    "seed: 4\n"
    "time: {dt: 0.01, frames: 40}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.5, 0.5, 0.5]}, sampling: {type: grid, spacing: 0.1}, mass: 1,\n"
    "     deform: [[1.3, 0, 0], [0, 1, 0], [0, 0, 1]], angular_velocity: [0, 1, 0]}\n"
    "  - {shape: {type: box, size: [1.0, 0.3, 0.3]}, sampling: {type: grid, spacing: 0.1}, mass: 2, position: [5, 0, 0],\n"
    "     deform: [[1.4, 0.2, 0], [0, 0.9, 0], [0, 0, 1]], velocity: [0, 0, 1],\n"
    "     clustering: {radius: 0.25, coverage: 2}, modulus: 3000,\n"
    "     plasticity: {model: jones2016, yield: 0.05, flow_rate: 0.5}}\n"
    "clustering: {method: random_radius, radius: 0.3}\n"
    "solver: {integrator: strain_limited, alpha: 0.5, modulus: 20000, gamma: 0.2, iterations: 4}\n";

/* The same scene with the roles swapped: the bar's settings at the top level, the cube's its own. */
static const char *swapped =
    "name: swapped\n"
    "seed: 4\n"
    "time: {dt: 0.01, frames: 40}\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.5, 0.5, 0.5]}, sampling: {type: grid, spacing: 0.1}, mass: 1,\n"
    "     deform: [[1.3, 0, 0], [0, 1, 0], [0, 0, 1]], angular_velocity: [0, 1, 0],\n"
    "     clustering: {radius: 0.3, coverage: 1}, modulus: 20000, plasticity: {model: none}}\n"
    "  - {shape: {type: box, size: [1.0, 0.3, 0.3]}, sampling: {type: grid, spacing: 0.1}, mass: 2, position: [5, 0, 0],\n"
    "     deform: [[1.4, 0.2, 0], [0, 0.9, 0], [0, 0, 1]], velocity: [0, 0, 1]}\n"
    "clustering: {method: random_radius, radius: 0.25, coverage: 2}\n"
    "solver: {integrator: strain_limited, alpha: 0.5, modulus: 3000, gamma: 0.2, iterations: 4}\n"
    "plasticity: {model: jones2016, yield: 0.05, flow_rate: 0.5}\n";

static double plastic_change(const csm_world *w, int32_t object)
{
    double most = 0;
    for (int32_t c = 0; c < w->C.k; c++) {
        if (csm_cluster_object(w, c) != object) continue;
        const double *Fp = &w->C.Fp[9 * c];
        for (int a = 0; a < 9; a++) most = fmax(most, fabs(Fp[a] - (a % 4 == 0)));
    }
    return most;
}

/* Which object takes the top-level sections and which its own changes nothing: both objects
   move bitwise the same, and only the bar flows. */
static void test_own_sections_equal_top_level(void **state)
{
    (void)state;
    run r[2];
    run_start_text(&r[0], "pair.yaml", pair, NULL, 0);
    run_start_text(&r[1], "swapped.yaml", swapped, NULL, 0);
    const csm_world *w[2] = {&r[0].sim.w, &r[1].sim.w};
    int32_t clusters[2][2] = {{0, 0}, {0, 0}};
    for (int s = 0; s < 2; s++)
        for (int32_t c = 0; c < w[s]->C.k; c++) clusters[s][csm_cluster_object(w[s], c)]++;
    printf("clusters: cube %d and %d, bar %d and %d\n", clusters[0][0], clusters[1][0], clusters[0][1], clusters[1][1]);
    assert_int_equal(clusters[0][0], clusters[1][0]);
    assert_int_equal(clusters[0][1], clusters[1][1]);
    assert_true(clusters[0][0] != clusters[0][1]); /* the two clusterings differ */
    for (int f = 0; f < r[0].cfg.frames; f++) {
        run_frame(&r[0]);
        run_frame(&r[1]);
    }
    double worst = 0;
    assert_int_equal(w[0]->P.n, w[1]->P.n);
    for (int32_t i = 0; i < 3 * w[0]->P.n; i++) {
        worst = fmax(worst, fabs(w[0]->P.x[i] - w[1]->P.x[i]));
        worst = fmax(worst, fabs(w[0]->P.v[i] - w[1]->P.v[i]));
    }
    printf("after 0.4 s: largest difference %.3g; |F^p - I| cube %.3g and %.3g, bar %.3g and %.3g\n", worst,
           plastic_change(w[0], 0), plastic_change(w[1], 0), plastic_change(w[0], 1), plastic_change(w[1], 1));
    assert_true(worst == 0.0);
    for (int s = 0; s < 2; s++) {
        assert_true(plastic_change(w[s], 0) == 0.0); /* the cube is elastic */
        assert_true(plastic_change(w[s], 1) > 0.01);  /* the bar yields */
    }
    run_stop(&r[0]);
    run_stop(&r[1]);
}

/* An object's own modulus changes its clusters' stiffness alone: k_c scales with mu. */
static void test_object_modulus_reaches_its_clusters(void **state)
{
    (void)state;
    run r;
    run_start_text(&r, "pair.yaml", pair, NULL, 0);
    const csm_world *w = &r.sim.w;
    for (int32_t c = 0; c < w->C.k; c++) {
        double k_top = csm_modulus_stiffness(w, 20000, c), k_own = csm_modulus_stiffness(w, 5, c);
        if (csm_cluster_object(w, c) == 0) assert_true(k_own < 1e-3 * k_top); /* the integrator's mu */
        else assert_true(k_own == k_top); /* its own 3000 Pa, whatever the integrator's */
    }
    run_stop(&r);
}

/* A bad own section is refused with the file, line and key. */
static void test_object_sections_refused(void **state)
{
    (void)state;
    csm_register_builtins();
    static const char *bad[][2] = {
        {"objects.0.clustering={method: no_such}", "objects[0].clustering"},
        {"objects.1.plasticity={yield: -1}", "objects[1].plasticity.yield"},
        {"objects.0.clustering=3", "objects[0].clustering must be a mapping"},
        {"solver.integrator=shape_matching", "objects[1].modulus needs"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        csm_config cfg;
        csm_error err;
        const char *sets[2] = {bad[k][0], "solver.modulus=0"};
        int n = k == 3 ? 2 : 1;
        int rc = csm_config_load_text("pair.yaml", pair, sets, n, &cfg, &err);
        printf("%s -> %s\n", bad[k][0], rc ? err.msg : "(accepted)");
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(err.msg, bad[k][1]));
    }
}

/* Two bodies, neither with sections of its own. */
static const char *cube_pair_without_own =
    "name: plain\n"
    "objects:\n"
    "  - {shape: {type: box, size: [0.5, 0.5, 0.5]}, sampling: {type: grid, spacing: 0.1}, mass: 1}\n"
    "  - {shape: {type: box, size: [0.5, 0.5, 0.5]}, sampling: {type: grid, spacing: 0.1}, mass: 1}\n"
    "clustering: {method: random_radius, radius: 0.3}\n";

/* A model of plugin version 1 acts on every cluster: it cannot share a scene with objects'
   own plasticity sections, where it is refused with the file, line and key; alone it runs. */
static int legacy_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)w, (void)state, (void)h, (void)err;
    return 0;
}
static const csm_param_spec legacy_params[] = {CSM_PARAM_END};
static const csm_plasticity legacy = {
    .version = 1,
    .name = "legacy_flow",
    .summary = "a version 1 model (tests)",
    .params = legacy_params,
    .apply = legacy_apply,
};

static void test_version_1_model_refused_beside_own(void **state)
{
    (void)state;
    csm_register_builtins();
    if (!csm_registry_find(CSM_KIND_PLASTICITY, "legacy_flow")) assert_int_equal(csm_register_plasticity(&legacy), 0);
    static const char *sets[][1] = {
        {"plasticity={model: legacy_flow}"},         /* beside the bar's own jones2016 */
        {"objects.1.plasticity={model: legacy_flow}"}, /* as the bar's own */
    };
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        csm_config cfg;
        csm_error err;
        int rc = csm_config_load_text("pair.yaml", pair, sets[k], 1, &cfg, &err);
        printf("%s -> %s\n", sets[k][0], rc ? err.msg : "(accepted)");
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(err.msg, k == 0 ? "pair.yaml:10: " : "--set #1: ")); /* where the section was written */
        assert_non_null(strstr(err.msg, "objects[1].plasticity: the plasticity model legacy_flow"));
    }
    run r; /* with no object's own section it runs */
    const char *alone[] = {"plasticity={model: legacy_flow}", "objects.1.position=[5, 0, 0]"};
    run_start_text(&r, "cube.yaml", cube_pair_without_own, alone, 2);
    run_frame(&r);
    run_stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_sections_equal_top_level),
        cmocka_unit_test(test_object_modulus_reaches_its_clusters),
        cmocka_unit_test(test_object_sections_refused),
        cmocka_unit_test(test_version_1_model_refused_beside_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
