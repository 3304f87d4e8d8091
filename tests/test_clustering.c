/* Clustering methods: every particle covered, weights w_ic summing to 1, the fuzzy c-means fixed
   point on a case computed by hand, per-particle regions with Bender's modified masses,
   determinism for a seed. */
#include "sim_run.h"

#include "clustering.h"
#include "kernel.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

#define CUBE CSM_TEST_DIR "/configs/free_cube.yaml"

static void build(run *b, const char *const *sets, int nsets) { run_start(b, CUBE, sets, nsets); }

/* sum_c w_ic = 1 for every particle, every particle in a cluster, cluster masses add up. */
static void check_partition(const csm_world *w)
{
    const csm_clusters *C = &w->C;
    double total = 0, cluster_total = 0;
    for (int32_t i = 0; i < w->P.n; i++) {
        assert_true(C->poff[i + 1] > C->poff[i]);
        double s = 0;
        for (int32_t q = C->poff[i]; q < C->poff[i + 1]; q++) s += C->weight[C->pmember[q]];
        assert_close(s, 1.0, 1e-12);
        total += w->P.mass[i];
    }
    for (int32_t c = 0; c < C->k; c++) cluster_total += C->mass[c];
    assert_close(cluster_total, total, 1e-12 * total);
}

static void test_fuzzy_cmeans_partition_and_determinism(void **state)
{
    (void)state;
    const char *sets[] = {"clustering={method: fuzzy_cmeans, count: 12}"};
    run a, b, c;
    build(&a, sets, 1);
    build(&b, sets, 1);
    check_partition(&a.sim.w);
    assert_int_equal(a.sim.w.C.k, 12);
    double overlap = (double)a.sim.w.C.m / a.sim.w.P.n;
    assert_true(overlap > 1.2); /* clusters overlap */
    assert_int_equal(a.sim.w.C.m, b.sim.w.C.m);
    assert_memory_equal(a.sim.w.C.member, b.sim.w.C.member, sizeof(int32_t) * (size_t)a.sim.w.C.m);
    assert_memory_equal(a.sim.w.C.weight, b.sim.w.C.weight, sizeof(double) * (size_t)a.sim.w.C.m);
    const char *other[] = {"clustering={method: fuzzy_cmeans, count: 12}", "seed=99"};
    build(&c, other, 2);
    check_partition(&c.sim.w);
    int same = c.sim.w.C.m == a.sim.w.C.m &&
               memcmp(c.sim.w.C.weight, a.sim.w.C.weight, sizeof(double) * (size_t)a.sim.w.C.m) == 0;
    assert_false(same);
    run_stop(&a);
    run_stop(&b);
    run_stop(&c);
}

/* Three equal masses at x = -1, 0, 1, two clusters, m = 2, every membership kept. By symmetry
   the centres are +-c with u_+(x) = (x + c)^2 / ((x + c)^2 + (x - c)^2) and
   c = sum u_+^2 x / sum u_+^2 (the u^m-weighted mean); the weights are the memberships. */
static void test_fuzzy_cmeans_hand_computed(void **state)
{
    (void)state;
    double c = 0.5;
    for (int it = 0; it < 200; it++) {
        double up = (1 + c) * (1 + c) / (2 * (1 + c * c)), um = (1 - c) * (1 - c) / (2 * (1 + c * c));
        c = (up * up - um * um) / (up * up + um * um + 0.25);
    }
    double u1 = (1 + c) * (1 + c) / (2 * (1 + c * c)), u0 = (1 - c) * (1 - c) / (2 * (1 + c * c));
    const char *sets[] = {"objects.0.shape={type: points, positions: [[-1, 0, 0], [0, 0, 0], [1, 0, 0]]}",
                          "objects.0.deform=[[1, 0, 0], [0, 1, 0], [0, 0, 1]]",
                          "clustering={method: fuzzy_cmeans, count: 2, threshold: 0, tolerance: 1e-12}"};
    run b;
    build(&b, sets, 3);
    const csm_clusters *C = &b.sim.w.C;
    assert_int_equal(C->k, 2);
    assert_int_equal(C->m, 6);
    for (int32_t k = 0; k < 2; k++) {
        /* members are sorted by particle: weights of x = -1, 0, 1 */
        const double *w = &C->weight[C->offset[k]];
        int plus = w[2] > w[0];
        assert_close(w[1], 0.5, 1e-9);
        assert_close(w[plus ? 2 : 0], u1, 1e-9);
        assert_close(w[plus ? 0 : 2], u0, 1e-9);
    }
    assert_true(c > 0.5 && c < 1); /* the fixed point lies between the middle and the ends */
    run_stop(&b);
}

/* The update cluster optimization reuses (Falkenstein Sec 3.2.2): points at x = -1, 0, 1, a
   held centre at -1, a free one started at 0.5 and an ignored one (a cluster being removed) at
   0.2. With m = 2, u ~ 1/d^2: the free centre's fixed point c = sum u^2 x / sum u^2 solves
   c = u_b^2 / (u_a^2 + u_b^2) with u_a = 1/(1 + c^2) (x = 0) and u_b = 4/(4 + (1 - c)^2) (x = 1);
   x = -1 sits on the held centre. */
static void test_fuzzy_cmeans_with_held_centres(void **state)
{
    (void)state;
    double c = 0.5;
    for (int it = 0; it < 500; it++) {
        double ua = 1 / (1 + c * c), ub = 4 / (4 + (1 - c) * (1 - c));
        c = ub * ub / (ua * ua + ub * ub);
    }
    double x[9] = {-1, 0, 0, 0, 0, 0, 1, 0, 0}, mass[3] = {1, 1, 1};
    double centres[9] = {-1, 0, 0, 0.5, 0, 0, 0.2, 0, 0}, u[9];
    unsigned char st[3] = {CSM_FCM_HELD, CSM_FCM_FREE, CSM_FCM_IGNORED};
    int it = csm_fcm_iterate(x, mass, 3, centres, 3, st, 2.0, 1e-13, 1000, u);
    assert_true(it > 1 && it < 1000);
    assert_close(centres[3], c, 1e-10);
    assert_true(centres[0] == -1 && centres[1] == 0 && centres[6] == 0.2); /* held and ignored stay */
    for (int i = 0; i < 3; i++) {
        assert_close(u[3 * i] + u[3 * i + 1], 1.0, 1e-15);
        assert_true(u[3 * i + 2] == 0.0);
    }
    assert_close(u[3 * 1 + 1], 1 / (1 + c * c), 1e-9);
}

/* With one free centre csm_fcm_iterate sums the held centres once per point; it must land where
   the general update does, for m = 2 and another m, with points on a held centre and ignored
   centres in the mix. */
static void test_fuzzy_cmeans_one_free_matches_general(void **state)
{
    (void)state;
    enum { N = 300, K = 7 };
    csm_rng r;
    csm_rng_seed(&r, 9, 2);
    double x[3 * N], mass[N];
    for (int i = 0; i < 3 * N; i++) x[i] = csm_rng_uniform(&r);
    for (int i = 0; i < N; i++) mass[i] = 0.5 + csm_rng_uniform(&r);
    double start[3 * K];
    for (int c = 0; c < 3 * K; c++) start[c] = csm_rng_uniform(&r);
    memcpy(&x[0], &start[3], 3 * sizeof(double)); /* point 0 sits on held centre 1 */
    unsigned char st[K] = {CSM_FCM_HELD, CSM_FCM_HELD, CSM_FCM_IGNORED, CSM_FCM_HELD,
                           CSM_FCM_FREE, CSM_FCM_HELD, CSM_FCM_HELD};
    const double ms[2] = {2.0, 1.6};
    for (int t = 0; t < 2; t++) {
        double fast[3 * K], general[3 * K], *u = malloc(sizeof(double) * N * K);
        memcpy(fast, start, sizeof fast);
        memcpy(general, start, sizeof general);
        int it = csm_fcm_iterate(x, mass, N, fast, K, st, ms[t], 1e-13, 500, u);
        int git = 0;
        while (git < 500) {
            double change = csm_fcm_update(x, mass, N, general, K, st, ms[t], u);
            if (git++ > 0 && change <= 1e-13) break;
        }
        assert_true(it > 2 && it < 500 && abs(it - git) <= 1);
        for (int c = 0; c < 3 * K; c++) assert_close(fast[c], general[c], 1e-11);
        for (int c = 0; c < 3 * K; c++)
            if (c / 3 != 4) assert_true(fast[c] == start[c]); /* only the free centre moves */
        free(u);
    }
}

/* csm_fcm_iterate keeps no memberships between updates (it recomputes the previous centres'
   rows to compare); it must take exactly the steps of csm_fcm_update repeated until its change is
   at most the tolerance: the same centres bit for bit, the same count of updates, the same final
   memberships, on 1 and 2 threads. Cases: every centre free (m = 2 and m = 1.6) with a tolerance
   that is reached and one that is not (the cap decides), and held and ignored centres with two
   free. */
static void test_fuzzy_cmeans_iterate_is_repeated_update(void **state)
{
    (void)state;
    enum { N = 400, K = 9 };
    csm_rng r;
    csm_rng_seed(&r, 12, 4);
    double x[3 * N], mass[N], start[3 * K];
    for (int i = 0; i < 3 * N; i++) /* K blobs along x, so that the updates settle */
        x[i] = (i % 3 == 0 ? (double)(i / 3 % K) : 0.0) + 0.3 * csm_rng_uniform(&r);
    for (int i = 0; i < N; i++) mass[i] = 0.5 + csm_rng_uniform(&r);
    for (int c = 0; c < K; c++) memcpy(&start[3 * c], &x[3 * (37 * c + 5)], 3 * sizeof(double));
    memcpy(&x[3 * 7], &start[3 * 2], 3 * sizeof(double)); /* a point on a centre: the general row */
    unsigned char held[K] = {CSM_FCM_HELD, CSM_FCM_FREE, CSM_FCM_IGNORED, CSM_FCM_HELD, CSM_FCM_FREE,
                             CSM_FCM_HELD, CSM_FCM_HELD, CSM_FCM_HELD, CSM_FCM_HELD};
    const struct {
        const unsigned char *st;
        double m, tolerance;
        int cap;
    } cases[] = {{NULL, 2.0, 1e-12, 400}, {NULL, 2.0, 1e-12, 5}, {NULL, 1.6, 1e-12, 400}, {held, 2.0, 1e-12, 400}};
    double *u = malloc(sizeof(double) * N * K), *uref = malloc(sizeof(double) * N * K);
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        double want[3 * K];
        memcpy(want, start, sizeof want);
        memset(uref, 0, sizeof(double) * N * K);
        csm_set_threads(1);
        int want_it = 0;
        while (want_it < cases[t].cap) {
            double change = csm_fcm_update(x, mass, N, want, K, cases[t].st, cases[t].m, uref);
            if (want_it++ > 0 && change <= cases[t].tolerance) break;
        }
        double moved[3 * K];
        memcpy(moved, want, sizeof moved);
        csm_fcm_update(x, mass, N, moved, K, cases[t].st, cases[t].m, uref); /* the rows of `want` */
        for (int threads = 1; threads <= 2; threads++) {
            double got[3 * K];
            memcpy(got, start, sizeof got);
            csm_set_threads(threads);
            int it = csm_fcm_iterate(x, mass, N, got, K, cases[t].st, cases[t].m, cases[t].tolerance, cases[t].cap, u);
            assert_int_equal(it, want_it);
            assert_memory_equal(got, want, sizeof got);
            assert_memory_equal(u, uref, sizeof(double) * N * K);
        }
        assert_true(cases[t].cap == 5 ? want_it == 5 : want_it > 3 && want_it < cases[t].cap);
    }
    csm_set_threads(0);
    free(u);
    free(uref);
}

/* The update for m = 2 runs in lanes (core/simd.h) with one division per centre; it must match
   the definition u_ic = 1 / sum_j (d_ic / d_ij)^2 and c = sum m u^2 x / sum m u^2 to 1e-12 for
   every centre count from 1 to 40 (whole lanes and not), with held and ignored centres, a point
   on a centre and one a hair's breadth from one (the rows the general path takes), and give the
   same bits on 1 and 2 threads. */
static void test_fuzzy_cmeans_lanes_match_definition(void **state)
{
    (void)state;
    enum { N = 157 };
    csm_rng r;
    csm_rng_seed(&r, 5, 7);
    double x[3 * N], mass[N];
    for (int i = 0; i < 3 * N; i++) x[i] = 2.0 * csm_rng_uniform(&r) - 1.0;
    for (int i = 0; i < N; i++) mass[i] = 0.5 + csm_rng_uniform(&r);
    double worst = 0;
    for (int k = 1; k <= 40; k++) {
        double start[3 * 40], want[3 * 40], got[3 * 40], again[3 * 40];
        unsigned char st[40];
        for (int c = 0; c < 3 * k; c++) start[c] = 2.0 * csm_rng_uniform(&r) - 1.0;
        for (int c = 0; c < k; c++) st[c] = c % 5 == 3 ? CSM_FCM_HELD : c % 7 == 5 ? CSM_FCM_IGNORED : CSM_FCM_FREE;
        memcpy(&x[3 * 3], &start[3 * (k - 1)], 3 * sizeof(double)); /* point 3 sits on the last centre */
        memcpy(&x[3 * 4], &start[0], 3 * sizeof(double));
        x[3 * 4] += 1e-155; /* point 4 at d^2 = 1e-310 from the first: 1 / d^2 overflows */
        double *u = calloc((size_t)N * k, sizeof *u), *ref = malloc(sizeof *ref * (size_t)N * k);
        double W[40] = {0}, S[40][3] = {{0}};
        for (int i = 0; i < N; i++) {
            double d[40];
            int at = -1;
            for (int c = 0; c < k; c++) {
                const double *z = &start[3 * c], *q = &x[3 * i];
                d[c] = (q[0] - z[0]) * (q[0] - z[0]) + (q[1] - z[1]) * (q[1] - z[1]) + (q[2] - z[2]) * (q[2] - z[2]);
                if (st[c] != CSM_FCM_IGNORED && at < 0 && d[c] == 0) at = c;
            }
            for (int c = 0; c < k; c++) {
                double v = 0;
                if (st[c] != CSM_FCM_IGNORED && at >= 0) v = c == at;
                else if (st[c] != CSM_FCM_IGNORED) {
                    for (int j = 0; j < k; j++)
                        if (st[j] != CSM_FCM_IGNORED) v += (d[c] / d[j]);
                    v = 1.0 / v;
                }
                ref[(size_t)i * k + c] = v;
                W[c] += mass[i] * v * v;
                for (int a = 0; a < 3; a++) S[c][a] += mass[i] * v * v * x[3 * i + a];
            }
        }
        memcpy(want, start, sizeof want);
        for (int c = 0; c < k; c++)
            if (st[c] == CSM_FCM_FREE && W[c] > 0)
                for (int a = 0; a < 3; a++) want[3 * c + a] = S[c][a] / W[c];
        memcpy(got, start, sizeof got);
        csm_set_threads(1);
        csm_fcm_update(x, mass, N, got, k, st, 2.0, u);
        for (int i = 0; i < N * k; i++) {
            worst = fmax(worst, fabs(u[i] - ref[i]));
            assert_true(fabs(u[i] - ref[i]) <= 1e-12 * fmax(ref[i], 1e-300) || fabs(u[i] - ref[i]) < 1e-300);
        }
        for (int c = 0; c < 3 * k; c++) {
            assert_true(fabs(got[c] - want[c]) <= 1e-12 * fmax(1.0, fabs(want[c])));
            if (st[c / 3] != CSM_FCM_FREE) assert_true(got[c] == start[c]);
        }
        memcpy(again, start, sizeof again);
        csm_set_threads(2);
        csm_fcm_update(x, mass, N, again, k, st, 2.0, u);
        assert_memory_equal(again, got, sizeof(double) * 3 * (size_t)k);
        free(u);
        free(ref);
    }
    csm_set_threads(0);
    print_message("fuzzy c-means in lanes: largest membership difference from the definition %.2e\n", worst);
}

/* Bender: one region per particle; with grid spacing 0.1 and radius 0.15 an interior particle's
   region holds it, its 6 face and 12 edge neighbours; modified masses m_i / |R_i| keep the
   total mass. */
static void test_per_particle_regions(void **state)
{
    (void)state;
    const char *sets[] = {"clustering={method: per_particle, radius: 0.15}"};
    run b;
    build(&b, sets, 1);
    const csm_world *w = &b.sim.w;
    const csm_clusters *C = &w->C;
    assert_int_equal(C->k, w->P.n);
    check_partition(w);
    int32_t largest = 0;
    for (int32_t c = 0; c < C->k; c++) {
        int32_t size = C->offset[c + 1] - C->offset[c];
        largest = size > largest ? size : largest;
        int own = 0;
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) own |= C->member[j] == c;
        assert_true(own);
    }
    assert_int_equal(largest, 19);
    for (int32_t i = 0; i < w->P.n; i++) /* |R_i| regions, each w_ic = 1 / |R_i| */
        for (int32_t q = C->poff[i]; q < C->poff[i + 1]; q++)
            assert_close(C->weight[C->pmember[q]], 1.0 / (C->poff[i + 1] - C->poff[i]), 1e-15);
    run_stop(&b);
}

/* Whether the clusters of a world are one body: the graph of clusters that share a particle is
   connected (a breadth-first walk from cluster 0 reaches every cluster). */
static int one_body(const csm_world *w)
{
    const csm_clusters *C = &w->C;
    unsigned char *seen = calloc((size_t)C->k, 1);
    int32_t *queue = malloc(sizeof *queue * (size_t)C->k), head = 0, tail = 0;
    assert_non_null(seen);
    assert_non_null(queue);
    seen[0] = 1;
    queue[tail++] = 0;
    while (head < tail) {
        int32_t c = queue[head++];
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            int32_t i = C->member[j];
            for (int32_t q = C->poff[i]; q < C->poff[i + 1]; q++) {
                int32_t d = C->mcluster[C->pmember[q]];
                if (!seen[d]) seen[d] = 1, queue[tail++] = d;
            }
        }
    }
    free(seen);
    free(queue);
    return tail == C->k;
}

/* Bodies hold together: a clustering whose pieces share no particle is joined into one body
   (csm_builder_connect). Clusters of radius 0.05 on a grid of spacing 0.1 hold one particle
   each, 693 pieces: they are joined in 330 joins (each brings four pieces in), and every
   particle's weights stay 1 / n_i. A radius that overlaps is left as it was. */
static void test_clusters_make_one_body(void **state)
{
    (void)state;
    const char *apart[] = {"clustering={method: random_radius, radius: 0.05}"};
    run b;
    build(&b, apart, 1);
    const csm_world *w = &b.sim.w;
    const csm_clusters *C = &w->C;
    printf("radius 0.05: %d pieces joined, %d clusters, %d memberships\n", w->joined_pieces, C->k, C->m);
    assert_true(w->joined_pieces > 0);
    assert_true(one_body(w));
    check_partition(w);
    for (int32_t i = 0; i < w->P.n; i++)
        for (int32_t q = C->poff[i]; q < C->poff[i + 1]; q++)
            assert_close(C->weight[C->pmember[q]], 1.0 / (C->poff[i + 1] - C->poff[i]), 1e-15);
    run_stop(&b);
    const char *overlap[] = {"clustering={method: random_radius, radius: 0.25}"};
    build(&b, overlap, 1);
    assert_int_equal(b.sim.w.joined_pieces, 0);
    assert_true(one_body(&b.sim.w));
    run_stop(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzzy_cmeans_partition_and_determinism),
        cmocka_unit_test(test_fuzzy_cmeans_hand_computed),
        cmocka_unit_test(test_fuzzy_cmeans_with_held_centres),
        cmocka_unit_test(test_fuzzy_cmeans_one_free_matches_general),
        cmocka_unit_test(test_fuzzy_cmeans_iterate_is_repeated_update),
        cmocka_unit_test(test_fuzzy_cmeans_lanes_match_definition),
        cmocka_unit_test(test_per_particle_regions),
        cmocka_unit_test(test_clusters_make_one_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
