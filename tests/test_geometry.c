#define _DEFAULT_SOURCE /* mkstemp, fdopen */
/* Shapes, sampling and random-radius clustering. */
#include "check.h"

#include "clustering.h"
#include "commands.h"
#include "config.h"
#include "csm_math.h"
#include "geometry.h"
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void load(const char *yaml, const char *const *sets, int nsets, csm_config *cfg)
{
    csm_register_builtins();
    char path[] = "/tmp/csm_geom_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(yaml, f);
    fclose(f);
    csm_error err;
    int rc = csm_config_load(path, sets, nsets, cfg, &err);
    unlink(path);
    if (rc) fail_msg("%s", err.msg);
}

static const char *BOX = "objects:\n  - shape: {type: box, size: [1, 1, 1]}\n    sampling: {type: grid, spacing: 0.1}\n";

static void test_grid_counts(void **state)
{
    (void)state;
    csm_config cfg;
    load(BOX, NULL, 0, &cfg);
    double *pts, vol;
    int32_t n;
    csm_error err;
    assert_int_equal(csm_sample_object(&cfg.objects[0], 0, 1, &pts, &n, &vol, NULL, &err), 0);
    assert_int_equal(n, 11 * 11 * 11); /* symmetric grid, both faces included */
    assert_close(vol, 1.0, 1e-15);
    free(pts);
    csm_config_free(&cfg);
    const char *sphere[] = {"objects.0.shape={type: sphere, radius: 0.5}"};
    load(BOX, sphere, 1, &cfg);
    assert_int_equal(csm_sample_object(&cfg.objects[0], 0, 1, &pts, &n, &vol, NULL, &err), 0);
    /* about the ball's volume over the cell volume */
    assert_true(fabs(n - vol / 1e-3) < 0.05 * vol / 1e-3);
    for (int32_t i = 0; i < n; i++) assert_true(csm_v3_norm(&pts[3 * i]) <= 0.5 + 1e-12);
    free(pts);
    csm_config_free(&cfg);
}

static void test_poisson_spacing_and_determinism(void **state)
{
    (void)state;
    const char *sets[] = {"objects.0.sampling={type: poisson, spacing: 0.12}",
                          "objects.0.shape={type: cylinder, radius: 0.4, height: 0.8, axis: z}"};
    csm_config cfg;
    load(BOX, sets, 2, &cfg);
    double *a, *b, vol;
    int32_t na, nb;
    csm_error err;
    assert_int_equal(csm_sample_object(&cfg.objects[0], 0, 7, &a, &na, &vol, NULL, &err), 0);
    assert_int_equal(csm_sample_object(&cfg.objects[0], 0, 7, &b, &nb, &vol, NULL, &err), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, sizeof(double) * 3 * (size_t)na);
    double r = 0.12, minimum = 1e9;
    csm_shape sh;
    assert_int_equal(csm_shape_open(&sh, &cfg.objects[0], 0, &err), 0);
    for (int32_t i = 0; i < na; i++) {
        assert_true(csm_shape_inside(&sh, &a[3 * i]));
        for (int32_t j = i + 1; j < na; j++) {
            double d[3] = {a[3 * i] - a[3 * j], a[3 * i + 1] - a[3 * j + 1], a[3 * i + 2] - a[3 * j + 2]};
            minimum = fmin(minimum, csm_v3_norm(d));
        }
    }
    csm_shape_close(&sh);
    assert_true(minimum >= r * (1 - 1e-12));
    /* maximal Poisson-disk sets in 3-D pack at roughly 0.5-0.7 of r^3 per sample */
    double per_sample = vol / na / (r * r * r);
    assert_true(per_sample > 0.9 && per_sample < 3.0);
    free(a);
    free(b);
    csm_config_free(&cfg);
}

/* The sampler's approximations are held to the bounds its margin (1e-6 of r) relies on:
   sin and cos within 1e-11 on [0, 2 pi], cbrt within 1e-13 relative on [1, 8]. */
static void test_sampler_approximations(void **state)
{
    (void)state;
    double worst_trig = 0, worst_cbrt = 0;
    for (int i = 0; i <= 1000000; i++) {
        double phi = 2.0 * CSM_PI * i / 1e6, s, c, a = 1.0 + 7.0 * i / 1e6;
        csm_sincos_approx(phi, &s, &c);
        worst_trig = fmax(worst_trig, fmax(fabs(s - sin(phi)), fabs(c - cos(phi))));
        worst_cbrt = fmax(worst_cbrt, fabs(csm_cbrt_approx(a) / cbrt(a) - 1.0));
    }
    assert_true(worst_trig < 1e-11);
    assert_true(worst_cbrt < 1e-13);
}

/* The Poisson sampler rejects most candidates from approximations of sin, cos and cbrt with a
   margin, and places the rest with the library's functions; it must give the reference sampler's
   points bit for bit: cubes, slabs thinner than a cell, a rod, spacings that do and do not
   divide the box, 1 and 30 attempts, several seeds. */
static void test_poisson_fast_path_is_reference(void **state)
{
    (void)state;
    const struct {
        double half[3], r;
        int attempts;
    } cases[] = {{{0.5, 0.5, 0.5}, 0.05, 30}, {{2.0, 0.5, 0.5}, 0.0775, 30}, {{0.5, 0.5, 0.01}, 0.04, 30},
                 {{1.0, 0.03, 0.03}, 0.02, 30},  {{0.3, 0.3, 0.3}, 0.1, 1},        {{0.25, 0.5, 0.75}, 0.0333, 7}};
    int64_t total = 0;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            double *fast, *ref;
            int32_t nf, nr;
            csm_sample_poisson_box(cases[t].half, cases[t].r, cases[t].attempts, seed, 7, 0, &fast, &nf);
            csm_sample_poisson_box(cases[t].half, cases[t].r, cases[t].attempts, seed, 7, 1, &ref, &nr);
            assert_int_equal(nf, nr);
            assert_memory_equal(fast, ref, sizeof(double) * 3 * (size_t)nr);
            for (int32_t i = 0; i < nr; i++)
                for (int d = 0; d < 3; d++) assert_true(fabs(ref[3 * i + d]) <= cases[t].half[d]);
            total += nr;
            free(fast);
            free(ref);
        }
    assert_true(total > 20000);
}

static void test_random_radius(void **state)
{
    (void)state;
    const char *sets[] = {"clustering.radius=0.25"};
    csm_config cfg;
    load(BOX, sets, 1, &cfg);
    csm_sim sim;
    csm_error err;
    if (csm_sim_create(&cfg, &sim, &err)) fail_msg("%s", err.msg);
    const csm_clusters *C = &sim.w.C;
    const csm_particles *P = &sim.w.P;
    assert_true(C->k > 10);
    for (int32_t i = 0; i < P->n; i++) {
        int32_t ni = C->poff[i + 1] - C->poff[i];
        assert_true(ni >= 1); /* every particle in at least one cluster */
        for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) assert_close(C->weight[C->pmember[s]], 1.0 / ni, 1e-15);
    }
    /* members lie within the radius of some seed: every pair within 2 radii (Bargteil-Jones Eq 3) */
    for (int32_t c = 0; c < C->k; c++) {
        assert_true(C->width[c] <= 2 * 0.25 + 1e-12);
        for (int32_t j = C->offset[c] + 1; j < C->offset[c + 1]; j++) assert_true(C->member[j] > C->member[j - 1]);
    }
    double mass = 0;
    for (int32_t i = 0; i < P->n; i++) mass += P->mass[i];
    assert_close(mass, 1.0, 1e-12);
    csm_sim_destroy(&sim);
    csm_config_free(&cfg);
}

static void test_placement_and_pinning(void **state)
{
    (void)state;
    const char *sets[] = {"objects.0.position=[1, 2, 3]", "objects.0.deform=[[2, 0, 0], [0, 1, 0], [0, 0, 1]]",
                          "objects.0.angular_velocity=[0, 0, 1]", "objects.0.pinned={below: {axis: y, value: 1.55}}"};
    csm_config cfg;
    load(BOX, sets, 4, &cfg);
    csm_sim sim;
    csm_error err;
    if (csm_sim_create(&cfg, &sim, &err)) fail_msg("%s", err.msg);
    const csm_particles *P = &sim.w.P;
    int pinned = 0;
    for (int32_t i = 0; i < P->n; i++) {
        /* rest shape undeformed about the position; x stretched by 2 in x about the centroid */
        assert_close(P->x[3 * i] - 1, 2 * (P->rest[3 * i] - 1), 1e-12);
        assert_close(P->x[3 * i + 1], P->rest[3 * i + 1], 1e-12);
        if (P->inv_mass[i] == 0) {
            pinned++;
            assert_true(P->x[3 * i + 1] < 1.55);
            assert_close(csm_v3_norm(&P->v[3 * i]), 0.0, 0);
        } else {
            /* v = omega x (x - c) */
            assert_close(P->v[3 * i], -(P->x[3 * i + 1] - 2), 1e-12);
            assert_close(P->v[3 * i + 1], P->x[3 * i] - 1, 1e-12);
        }
    }
    assert_int_equal(pinned, 11 * 11); /* the bottom layer y = 1.5 */
    csm_sim_destroy(&sim);
    csm_config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_counts),
        cmocka_unit_test(test_poisson_spacing_and_determinism),
        cmocka_unit_test(test_sampler_approximations),
        cmocka_unit_test(test_poisson_fast_path_is_reference),
        cmocka_unit_test(test_random_radius),
        cmocka_unit_test(test_placement_and_pinning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
