/* The shape-matching kernel: rigid motions give goals equal to positions, internal forces sum to
   zero per cluster, weights partition each particle's mass, the strain-limit clamp, the
   Falkenstein 2017 Sec 3.1 rectangle, and the vector loops against a scalar reference. */
#include "check.h"
#include "random_world.h"

#include "clustering.h"
#include "commands.h"
#include "csm_math.h"
#include "kernel.h"
#include "rng.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

static void rigid_goals_for(const char *rotation, csm_svd3_fn svd)
{
    csm_world w;
    make_world(&w, 400, rotation, svd, 3);
    double Q[9], c = cos(0.7), s = sin(0.7);
    double Rz[9] = {c, -s, 0, s, c, 0, 0, 0, 1}, Rx[9] = {1, 0, 0, 0, cos(2.1), -sin(2.1), 0, sin(2.1), cos(2.1)};
    csm_m3_mul(Rz, Rx, Q);
    double t[3] = {3, -1, 0.5};
    for (int32_t i = 0; i < w.P.n; i++) {
        csm_m3_mul_v3(Q, &w.P.rest[3 * i], &w.P.x[3 * i]);
        for (int d = 0; d < 3; d++) w.P.x[3 * i + d] += t[d];
    }
    csm_fit_all(&w, w.P.x);
    csm_goals_all(&w, w.P.x, 0.0, w.P.goal);
    for (int32_t k = 0; k < 3 * w.P.n; k++) assert_close(w.P.goal[k], w.P.x[k], 1e-12);
    for (int32_t cl = 0; cl < w.C.k; cl++)
        for (int k = 0; k < 9; k++) assert_close(w.C.R[9 * cl + k], Q[k], 1e-12);
    free_world(&w);
}

static void test_rigid_motion_goals_equal_positions(void **state)
{
    (void)state;
    rigid_goals_for("polar_f", csm_svd3_fast);
    rigid_goals_for("polar_apq", csm_svd3_fast);
    rigid_goals_for("polar_f", csm_svd3_lapacke);
    rigid_goals_for("polar_apq", csm_svd3_lapacke);
}

static void test_internal_forces_sum_to_zero(void **state)
{
    (void)state;
    const char *rotations[] = {"polar_f", "polar_apq"};
    for (int rr = 0; rr < 2; rr++) {
        csm_world w;
        make_world(&w, 300, rotations[rr], csm_svd3_fast, 5);
        csm_rng r;
        csm_rng_seed(&r, 99, 0);
        for (int32_t k = 0; k < 3 * w.P.n; k++) w.P.x[k] += 0.3 * (2 * csm_rng_uniform(&r) - 1);
        csm_fit_all(&w, w.P.x);
        for (int32_t c = 0; c < w.C.k; c++) {
            double sum[3] = {0, 0, 0};
            for (int32_t j = w.C.offset[c]; j < w.C.offset[c + 1]; j++) {
                double g[3];
                csm_membership_goal(&w.C, j, g);
                for (int d = 0; d < 3; d++) sum[d] += w.C.wmass[j] * (g[d] - w.P.x[3 * w.C.member[j] + d]);
            }
            for (int d = 0; d < 3; d++) assert_close(sum[d], 0.0, 1e-12);
        }
        free_world(&w);
    }
}

static void test_weights_partition_mass(void **state)
{
    (void)state;
    csm_world w;
    make_world(&w, 500, "polar_f", csm_svd3_fast, 8);
    for (int32_t i = 0; i < w.P.n; i++) {
        double sum = 0;
        for (int32_t s = w.C.poff[i]; s < w.C.poff[i + 1]; s++) sum += w.C.weight[w.C.pmember[s]];
        assert_close(sum, 1.0, 1e-14);
    }
    /* the weighted rest offsets of each cluster have zero mean */
    for (int32_t c = 0; c < w.C.k; c++) {
        double m[3] = {0, 0, 0};
        for (int32_t j = w.C.offset[c]; j < w.C.offset[c + 1]; j++)
            for (int d = 0; d < 3; d++) m[d] += w.C.wmass[j] * w.C.p[3 * j + d];
        for (int d = 0; d < 3; d++) assert_close(m[d], 0.0, 1e-13);
    }
    free_world(&w);
}

static void test_strain_limit_clamp(void **state)
{
    (void)state;
    csm_world w;
    make_world(&w, 200, "polar_f", csm_svd3_fast, 12);
    csm_rng r;
    csm_rng_seed(&r, 1, 0);
    for (int32_t k = 0; k < 3 * w.P.n; k++) w.P.x[k] += 0.2 * (2 * csm_rng_uniform(&r) - 1);
    csm_fit_all(&w, w.P.x);
    double *plain = malloc(sizeof(double) * 3 * (size_t)w.P.n), *loose = malloc(sizeof(double) * 3 * (size_t)w.P.n);
    double *mid = malloc(sizeof(double) * 3 * (size_t)w.P.n);
    csm_goals_all(&w, w.P.x, 0.0, plain);
    csm_goals_all(&w, w.P.x, 1e6, loose);
    csm_goals_all(&w, w.P.x, 0.05, mid);
    for (int32_t i = 0; i < w.P.n; i++)
        for (int d = 0; d < 3; d++) assert_close(loose[3 * i + d], w.P.x[3 * i + d], 1e-12); /* no strain over the limit */
    /* every clamped g_ic lies within gamma * width of x_i, so the gathered goal is closer to x_i
       than the plain one, never further */
    int moved = 0;
    for (int32_t i = 0; i < w.P.n; i++) {
        double dp[3], dm[3];
        for (int d = 0; d < 3; d++) {
            dp[d] = plain[3 * i + d] - w.P.x[3 * i + d];
            dm[d] = mid[3 * i + d] - w.P.x[3 * i + d];
        }
        assert_true(csm_v3_norm(dm) <= csm_v3_norm(dp) + 1e-15);
        if (csm_v3_norm(dm) < csm_v3_norm(dp) - 1e-9) moved++;
    }
    assert_true(moved > 0);
    free(plain);
    free(loose);
    free(mid);
    free_world(&w);
}

/* Falkenstein 2017 Sec 3.1: a rectangle with corners (1,3), (3,1), (-1,-3), (-3,-1), stretched by
   2 in x. polar(A_xr) gives the rotation of Eq 19 (11.3 degrees); polar(F) the identity. The
   rectangle is planar, so its A_rr is singular in 3-D and goes through the pseudo-inverse. */
static void rectangle_rotation(const char *rotation, double R[9])
{
    csm_world w;
    memset(&w, 0, sizeof w);
    csm_register_builtins();
    w.rotation = csm_registry_find(CSM_KIND_ROTATION, rotation);
    w.svd = csm_svd3_fast;
    csm_particles_alloc(&w.P, 4);
    const double corners[4][2] = {{1, 3}, {3, 1}, {-1, -3}, {-3, -1}};
    for (int i = 0; i < 4; i++) {
        w.P.rest[3 * i] = corners[i][0];
        w.P.rest[3 * i + 1] = corners[i][1];
        w.P.x[3 * i] = 2 * corners[i][0];
        w.P.x[3 * i + 1] = corners[i][1];
        w.P.mass[i] = w.P.inv_mass[i] = 1;
    }
    csm_cluster_builder b;
    csm_builder_init(&b);
    csm_builder_begin(&b);
    for (int i = 0; i < 4; i++) csm_builder_add(&b, i, 1.0);
    csm_builder_end(&b);
    assert_int_equal(csm_clusters_from_builder(&w.C, &b, &w.P), 1); /* one degenerate (planar) */
    csm_builder_free(&b);
    csm_fit_all(&w, w.P.x);
    memcpy(R, w.C.R, 9 * sizeof(double));
    /* F = A_xr A_rr^+ recovers the stretch (Falkenstein Eq 20) */
    assert_close(w.C.F[0], 2.0, 1e-12);
    assert_close(w.C.F[1], 0.0, 1e-12);
    assert_close(w.C.F[3], 0.0, 1e-12);
    assert_close(w.C.F[4], 1.0, 1e-12);
    free_world(&w);
}

static void test_falkenstein_rectangle(void **state)
{
    (void)state;
    double R[9];
    rectangle_rotation("polar_apq", R);
    /* Falkenstein Eq 19 gives R as the inverse of [[.9806, -.19611], [.19611, .9806]] */
    assert_close(R[0], 0.9806, 5e-5);
    assert_close(R[1], 0.19611, 1e-5); /* the paper truncates 0.1961161 */
    assert_close(R[3], -0.19611, 1e-5);
    assert_close(R[4], 0.9806, 5e-5);
    assert_close(atan2(-R[3], R[0]) * 180 / CSM_PI, 11.31, 0.005);
    rectangle_rotation("polar_f", R);
    for (int k = 0; k < 9; k++) assert_close(R[k], k % 4 == 0 ? 1.0 : 0.0, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rigid_motion_goals_equal_positions),
        cmocka_unit_test(test_internal_forces_sum_to_zero),
        cmocka_unit_test(test_weights_partition_mass),
        cmocka_unit_test(test_strain_limit_clamp),
        cmocka_unit_test(test_falkenstein_rectangle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
