/* The C API of libcsm.so (api/csm.h), as a host uses it: frames and steps give the same bits, a
   checkpoint restored continues as the simulation it came from, a host's force changes momentum
   by its impulse, a pinned particle stays, a failed step keeps the state before it, and bad input
   is refused with the command line's messages. tests/test_valgrind.sh runs it under memcheck. */
#include "check.h"

#include "csm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CUBE CSM_TEST_DIR "/configs/solver_cube.yaml"

static csm_simulation *start(const char *path, const char *const *sets, int nsets)
{
    csm_simulation *s;
    char error[1024];
    int rc = csm_simulation_create(path, NULL, sets, nsets, NULL, &s, error, sizeof error);
    if (rc) fail_msg("%s", error);
    return s;
}

static void advance(csm_simulation *s, int64_t frames)
{
    if (csm_simulation_frames(s, frames)) fail_msg("%s", csm_simulation_error(s));
}

static void same_state(csm_simulation *a, csm_simulation *b)
{
    int32_t n = csm_simulation_particle_count(a);
    assert_int_equal(n, csm_simulation_particle_count(b));
    assert_memory_equal(csm_simulation_positions(a), csm_simulation_positions(b), sizeof(double) * 3 * (size_t)n);
    assert_memory_equal(csm_simulation_velocities(a), csm_simulation_velocities(b), sizeof(double) * 3 * (size_t)n);
    assert_true(csm_simulation_time(a) == csm_simulation_time(b));
    assert_int_equal(csm_simulation_frame(a), csm_simulation_frame(b));
}

static void test_steps_and_frames_agree(void **state)
{
    (void)state;
    assert_int_equal(csm_api_version(), CSM_API_VERSION);
    csm_simulation *a = start(CUBE, NULL, 0), *b = start(CUBE, NULL, 0);
    advance(a, 12);
    int32_t sub = csm_simulation_substeps(b);
    for (int k = 0; k < 12 * sub; k++) assert_int_equal(csm_simulation_step(b, 1), 0);
    same_state(a, b);
    assert_int_equal(csm_simulation_step_count(a), 12 * sub);
    assert_true(csm_simulation_time(a) > 0.19 && csm_simulation_time(a) < 0.21);
    csm_simulation_destroy(a);
    csm_simulation_destroy(b);
}

static void test_checkpoint_restores_bit_for_bit(void **state)
{
    (void)state;
    /* a plastic bar that reclusters: the clusters change in number between the checkpoint and
       the restore */
    const char *sets[] = {"recluster={method: embedded, cond_max: 1.5, fade_out: 5, fade_in: 3}"};
    csm_simulation *a = start(CSM_TEST_DIR "/configs/recluster_bar.yaml", sets, 1);
    char path[] = "/tmp/csm_api_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    advance(a, 8);
    double v[64];
    assert_int_equal(csm_simulation_diagnostics(a, v, 64), 0); /* taken between logged frames: changes nothing */
    assert_int_equal(csm_simulation_checkpoint(a, path), 0);
    int32_t k8 = csm_simulation_cluster_count(a);
    advance(a, 30);
    csm_simulation *b = start(CSM_TEST_DIR "/configs/recluster_bar.yaml", sets, 1);
    advance(b, 3); /* wherever it stands, the restore replaces it */
    assert_int_equal(csm_simulation_restore(b, path), 0);
    assert_int_equal(csm_simulation_frame(b), 8);
    assert_int_equal(csm_simulation_cluster_count(b), k8);
    advance(b, 30);
    same_state(a, b);
    assert_int_equal(csm_simulation_cluster_count(a), csm_simulation_cluster_count(b));
    printf("checkpoint at frame 8 (%d clusters), 30 frames on: %d clusters, the same bits\n", k8,
           csm_simulation_cluster_count(b));
    /* and the simulation it came from restores too */
    assert_int_equal(csm_simulation_restore(a, path), 0);
    advance(a, 30);
    same_state(a, b);
    /* the checkpoint is a log: its sidecar and view beside it go too */
    const char *beside[] = {"", ".view.hdf5", ".xmf"};
    for (int k = 0; k < 3; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", path, beside[k]);
        unlink(name);
    }
    csm_simulation_destroy(a);
    csm_simulation_destroy(b);
}

/* sum m v and sum m */
static void momentum(csm_simulation *s, double p[3], double *M)
{
    const double *m = csm_simulation_masses(s), *v = csm_simulation_velocities(s);
    p[0] = p[1] = p[2] = *M = 0;
    for (int32_t i = 0; i < csm_simulation_particle_count(s); i++) {
        for (int a = 0; a < 3; a++) p[a] += m[i] * v[3 * i + a];
        *M += m[i];
    }
}

static void test_host_force_and_pins(void **state)
{
    (void)state;
    /* no gravity, no collider: the host's force alone changes momentum, by its impulse */
    const char *sets[] = {"forces=[]", "colliders=[]"};
    csm_simulation *s = start(CUBE, sets, 2);
    int32_t n = csm_simulation_particle_count(s);
    double *f = csm_simulation_external_force(s), p0[3], p1[3], M;
    assert_non_null(f);
    for (int32_t i = 0; i < n; i++) f[3 * i] = 0.5; /* N on every particle, along x */
    momentum(s, p0, &M);
    advance(s, 10);
    momentum(s, p1, &M);
    double impulse = 0.5 * n * 10 * csm_simulation_dt(s);
    printf("host force: momentum change %.15f, impulse %.15f kg m/s\n", p1[0] - p0[0], impulse);
    assert_close(p1[0] - p0[0], impulse, 1e-10 * impulse);
    assert_close(p1[1] - p0[1], 0, 1e-10 * impulse);
    double v[64];
    assert_int_equal(csm_simulation_diagnostics(s, v, 64), 0);
    int at = 0, width;
    for (int k = 0; k < csm_diagnostic_count(); k++) {
        const char *name = csm_diagnostic_name(k, &width);
        if (!strcmp(name, "work_external")) /* counted as the work of a force without a potential */
            assert_true(v[at] > 0);
        at += width;
    }
    /* a pinned particle stays where it is, and its velocity does not move it */
    assert_int_equal(csm_simulation_pin(s, 3, 1), 0);
    assert_true(csm_simulation_pinned(s, 3));
    double x3[3];
    memcpy(x3, &csm_simulation_positions(s)[9], sizeof x3);
    advance(s, 5);
    assert_memory_equal(x3, &csm_simulation_positions(s)[9], sizeof x3);
    assert_int_equal(csm_simulation_pin(s, 3, 0), 0);
    assert_false(csm_simulation_pinned(s, 3));
    assert_int_equal(csm_simulation_pin(s, n, 1), 2);
    assert_non_null(strstr(csm_simulation_error(s), "particles 0 to"));
    csm_simulation_destroy(s);
}

static void test_failed_step_keeps_the_state_before(void **state)
{
    (void)state;
    csm_simulation *s = start(CUBE, NULL, 0);
    advance(s, 3);
    int32_t n = csm_simulation_particle_count(s);
    double *before = malloc(sizeof(double) * 3 * (size_t)n);
    double *f = csm_simulation_external_force(s);
    for (int32_t i = 0; i < n; i++) f[3 * i + 1] = 1e300; /* blows up at once */
    memcpy(before, csm_simulation_positions(s), sizeof(double) * 3 * (size_t)n);
    double t = csm_simulation_time(s);
    assert_int_equal(csm_simulation_frames(s, 1), 1);
    printf("blow-up: %s\n", csm_simulation_error(s));
    assert_non_null(strstr(csm_simulation_error(s), "unstable"));
    assert_memory_equal(before, csm_simulation_positions(s), sizeof(double) * 3 * (size_t)n);
    assert_true(csm_simulation_time(s) == t);
    assert_int_equal(csm_simulation_frames(s, 1), 1); /* refused until a restore */
    assert_non_null(strstr(csm_simulation_error(s), "until a restore"));
    free(before);
    csm_simulation_destroy(s);
}

static void test_bad_input(void **state)
{
    (void)state;
    csm_simulation *s = (csm_simulation *)1;
    char error[1024];
    assert_int_equal(csm_simulation_create(CSM_TEST_DIR "/configs/missing.yaml", NULL, NULL, 0, NULL, &s, error,
                                           sizeof error), 2);
    assert_null(s);
    assert_non_null(strstr(error, "missing.yaml"));
    const char *text = "time: {dt: -1}\n";
    assert_int_equal(csm_simulation_create("bad.yaml", text, NULL, 0, NULL, &s, error, sizeof error), 2);
    printf("bad text: %s\n", error);
    assert_non_null(strstr(error, "bad.yaml:1"));
    csm_options opt = {.size = sizeof opt - 1};
    assert_int_equal(csm_simulation_create(CUBE, NULL, NULL, 0, &opt, &s, error, sizeof error), 2);
    assert_non_null(strstr(error, "another csm.h"));
    s = start(CUBE, NULL, 0);
    assert_int_equal(csm_simulation_step(s, -1), 2);
    double v[2];
    assert_int_equal(csm_simulation_diagnostics(s, v, 2), 2);
    assert_int_equal(csm_simulation_restore(s, CSM_TEST_DIR "/configs/solver_cube.yaml"), 2);
    assert_non_null(strstr(csm_simulation_error(s), "not a readable log"));
    csm_simulation_destroy(s);
    assert_int_equal(csm_simulation_destroy(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_and_frames_agree),
        cmocka_unit_test(test_checkpoint_restores_bit_for_bit),
        cmocka_unit_test(test_host_force_and_pins),
        cmocka_unit_test(test_failed_step_keeps_the_state_before),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
