/* Reclustering (Falkenstein 2017 Sec 3.2): removal and fades keep the weights a partition of
   every particle's mass and the rest centres at the origin; the local embedding (Eq 21-23)
   reaches zero residual where one exists and beats the linearised one where cluster frames
   disagree; the whole pass is deterministic and changes nothing while no cluster is marked. */
#include "random3.h"
#include "sim_run.h"

#include "embedding.h"
#include "kernel.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#define BAR CSM_TEST_DIR "/configs/recluster_bar.yaml"

/* A cluster's F^p with condition number 8 and det 1: marked at once by cond_max 4. */
static void distort(csm_clusters *C, int32_t c)
{
    double *Fp = &C->Fp[9 * c];
    memset(Fp, 0, 9 * sizeof *Fp);
    Fp[0] = 4.0;
    Fp[4] = Fp[8] = 0.5;
}

/* Sum_c w_ic = 1 with some weight for every particle; wmass, mass and p_ic consistent with the
   weights, each cluster's weighted rest centre at the origin. */
static void check_partition(const csm_world *w)
{
    const csm_clusters *C = &w->C;
    for (int32_t i = 0; i < w->P.n; i++) {
        double sum = 0;
        for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
            int32_t j = C->pmember[s];
            assert_int_equal(C->member[j], i);
            assert_true(C->weight[j] >= 0);
            sum += C->weight[j];
        }
        if (!(fabs(sum - 1.0) <= 1e-12)) fail_msg("particle %d: weights sum to %.17g", i, sum);
    }
    for (int32_t c = 0; c < C->k; c++) {
        double M = 0, centre[3] = {0, 0, 0};
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            assert_int_equal(C->mcluster[j], c);
            assert_close(C->wmass[j], C->weight[j] * w->P.mass[C->member[j]], 1e-15);
            M += C->wmass[j];
            for (int d = 0; d < 3; d++) centre[d] += C->wmass[j] * C->p[3 * j + d];
        }
        assert_close(C->mass[c], M, 1e-13);
        for (int d = 0; d < 3; d++)
            if (!(fabs(centre[d]) <= 1e-12 * (M * (C->width[c] + 1)))) fail_msg("cluster %d: rest centre %g off the origin", c, centre[d] / M);
    }
}

static int has_id(const csm_clusters *C, int32_t id)
{
    for (int32_t c = 0; c < C->k; c++)
        if (C->id[c] == id) return 1;
    return 0;
}

/* Three clusters marked at once fade out over fade_out steps while their replacements fade in;
   the invariants hold after every step, and the marked ids are gone at the end. */
static void fade_scenario(const char *method)
{
    char m[64];
    snprintf(m, sizeof m, "recluster.method=%s", method);
    const char *sets[] = {m, "recluster.fade_out=6", "recluster.fade_in=3", "plasticity.model=none"};
    run R;
    run_start(&R, BAR, sets, 4);
    csm_world *w = &R.sim.w;
    int32_t marked[] = {0, 3, 5};
    for (int a = 0; a < 3; a++) distort(&w->C, marked[a]);
    int removed = 0, added = 0;
    uint64_t epoch = w->C.epoch;
    for (int f = 0; f < 10; f++) {
        run_frame(&R);
        check_partition(w);
        /* fading changes weights every frame, and a plugin holding per-cluster data sees it */
        if (f < 5) assert_true(w->C.epoch > epoch);
        epoch = w->C.epoch;
        for (int32_t e = 0; e < w->report->nevents; e++) {
            removed += w->report->events[e].kind == CSM_EVENT_REMOVED;
            added += w->report->events[e].kind == CSM_EVENT_ADDED;
        }
        csm_sim_logged(&R.sim);
        if (f == 0)
            for (int a = 0; a < 3; a++) assert_int_equal(w->C.state[marked[a]], CSM_CLUSTER_FADING_OUT);
    }
    assert_int_equal(removed, 3);
    assert_true(added >= 1);
    for (int a = 0; a < 3; a++) assert_false(has_id(&w->C, marked[a]));
    for (int32_t c = 0; c < w->C.k; c++) assert_int_equal(w->C.state[c], CSM_CLUSTER_ACTIVE);
    /* once every fade is over nothing changes: the epoch stands */
    for (int f = 0; f < 2; f++) run_frame(&R);
    assert_true(w->C.epoch == epoch);
    run_stop(&R);
}

static void test_fade_embedded(void **state)
{
    (void)state;
    fade_scenario("embedded");
}

static void test_fade_world_space(void **state)
{
    (void)state;
    fade_scenario("world_space");
}

/* Under compression with yield 0 the bar reclusters many times; the invariants hold throughout. */
static void test_plastic_bar_invariants(void **state)
{
    (void)state;
    const char *sets[] = {"recluster.method=embedded", "recluster.cond_max=1.5", "recluster.fade_out=8",
                          "recluster.fade_in=4"};
    run R;
    run_start(&R, BAR, sets, 4);
    int added = 0;
    for (int f = 0; f < 60; f++) {
        run_frame(&R);
        check_partition(&R.sim.w);
        for (int32_t e = 0; e < R.sim.report.nevents; e++) added += R.sim.report.events[e].kind == CSM_EVENT_ADDED;
        csm_sim_logged(&R.sim);
    }
    assert_true(added >= 5);
    run_stop(&R);
}

/* What a reclustering pass changes in the stored energy at fixed positions is what the report's
   recluster_energy adds, pass by pass, for both memberships of new clusters. */
static void test_recluster_energy_accounted(void **state)
{
    (void)state;
    for (int kernel = 0; kernel < 2; kernel++) {
        const char *sets[] = {"recluster.method=embedded", kernel ? "recluster.membership=kernel" : "recluster.membership=fuzzy_cmeans",
                              "recluster.fade_out=6", "recluster.fade_in=3", "plasticity.model=none"};
        run R;
        run_start(&R, BAR, sets, 5);
        csm_world *w = &R.sim.w;
        double h = R.sim.cfg->dt / R.sim.cfg->substeps, mean = (double)w->C.m / w->C.k;
        run_frame(&R); /* something stored to account for */
        int32_t marked[] = {0, 3, 5};
        for (int a = 0; a < 3; a++) distort(&w->C, marked[a]);
        int added = 0, smallest = w->C.m;
        double moved = 0;
        for (int pass = 0; pass < 8; pass++) {
            double before = 0, after = 0, reported = w->report->recluster_energy;
            for (int32_t c = 0; c < w->C.k; c++) before += csm_cluster_energy(w, c, w->P.x, w->P.v, h);
            csm_error err = {0};
            int32_t events = w->report->nevents;
            assert_int_equal(R.sim.recluster.apply(w, R.sim.recluster.state, h, &err), 0);
            for (int32_t c = 0; c < w->C.k; c++) after += csm_cluster_energy(w, c, w->P.x, w->P.v, h);
            double change = w->report->recluster_energy - reported;
            if (!(fabs(change - (after - before)) <= 1e-9 * (fabs(before) + fabs(after))))
                fail_msg("pass %d: recluster_energy moved %.17g, the stored energy %.17g", pass, change, after - before);
            moved += fabs(change);
            check_partition(w);
            for (int32_t e = events; e < w->report->nevents; e++)
                if (w->report->events[e].kind == CSM_EVENT_ADDED) {
                    added++;
                    if (w->report->events[e].members < smallest) smallest = w->report->events[e].members;
                }
        }
        assert_true(added >= 1 && moved > 0);
        print_message("%s: %d added, smallest %d members (first clusters: %.1f on average), |recluster_energy| moved %.3g J\n",
                      kernel ? "kernel" : "fuzzy_cmeans", added, smallest, mean, moved);
        run_stop(&R);
    }
}

/* The bar's positions rotated rigidly by Q, and every cluster's F^p a different rotation P_c (the
   left rotations the flow rule leaves in F^p): R_c = Q P_c^T maps each plastic rest shape onto
   the world exactly, so Falkenstein Eq 21 has a zero minimum. */
static void rotated_bar(run *R, csm_rng *g)
{
    const char *sets[] = {"plasticity.model=none"};
    run_start(R, BAR, sets, 1);
    csm_world *w = &R->sim.w;
    double Q[9];
    random_rotation(g, Q);
    for (int32_t i = 0; i < w->P.n; i++) csm_m3_mul_v3(Q, &w->P.rest[3 * i], &w->P.x[3 * i]);
    for (int32_t c = 0; c < w->C.k; c++) random_rotation(g, &w->C.Fp[9 * c]);
}

/* sum w m |p|^2 over every membership: the size of Falkenstein Eq 21 when nothing fits. */
static double rest_scale(const csm_clusters *C)
{
    double scale = 0;
    for (int32_t j = 0; j < C->m; j++) scale += C->wmass[j] * csm_v3_dot(&C->p[3 * j], &C->p[3 * j]);
    return scale;
}

/* Every embedded position moved by up to 0.02 m, from the stream g. */
static void perturb(csm_embedding *E, csm_rng *g)
{
    for (int32_t a = 0; a < E->np; a++)
        for (int d = 0; d < 3; d++) E->e[3 * E->particle[a] + d] += 0.02 * (2 * csm_rng_uniform(g) - 1);
}

/* A perturbed start with its own stream (seed), the same for the same seed. */
static void perturb_seeded(csm_embedding *E, uint64_t seed)
{
    csm_rng g;
    csm_rng_seed(&g, seed, 2);
    perturb(E, &g);
}

/* Every cluster's F^p = P_c S_c, S_c a symmetric stretch of its own (up to 15 % per entry), so
   that the clusters' rest shapes no longer fit together and Falkenstein Eq 21's minimum is not zero. */
static void stretch_plastic(csm_clusters *C, csm_rng *g)
{
    for (int32_t c = 0; c < C->k; c++) {
        double S[9], *Fp = &C->Fp[9 * c];
        for (int r = 0; r < 3; r++)
            for (int k = r; k < 3; k++) S[3 * r + k] = S[3 * k + r] = (r == k) + 0.15 * (2 * csm_rng_uniform(g) - 1);
        csm_m3_mul(Fp, S, Fp);
    }
}

typedef int (*embed_fn)(csm_embedding *E, const csm_clusters *C, csm_svd3_fn svd, int max_iterations,
                        double tolerance, double *energy, int *converged);

/* `steps` single iterations of `solve` from E's positions: none raises Falkenstein Eq 21, and
   together they bring it below 1e-6 of where they started. */
static void descends(csm_embedding *E, const csm_clusters *C, embed_fn solve, int steps, double scale,
                     const char *what)
{
    double energy, start = csm_embedding_energy(E, C, csm_svd3_lapacke), last = start;
    int converged;
    for (int it = 0; it < steps; it++) {
        assert_int_equal(solve(E, C, csm_svd3_lapacke, 1, 1e-8, &energy, &converged), 1);
        if (!(energy <= last * (1 + 1e-12) + 1e-24 * scale))
            fail_msg("%s %d raised Falkenstein Eq 21 from %g to %g", what, it, last, energy);
        last = energy;
    }
    if (!(last < 1e-6 * start)) fail_msg("%d %ss left Falkenstein Eq 21 at %g of %g", steps, what, last, start);
}

static void test_embedding_zero_residual(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 3, 1);
    run R;
    rotated_bar(&R, &g);
    csm_world *w = &R.sim.w;
    csm_embedding E = {0};
    assert_int_equal(csm_embedding_set(&E, &w->C, w->P.x, 0), 0);
    assert_true(E.nc >= 2 && E.np > 10);
    /* at the world positions the residual is already zero, and the solver keeps it there */
    double scale = rest_scale(&w->C);
    assert_true(csm_embedding_energy(&E, &w->C, csm_svd3_lapacke) < 1e-24 * scale);
    double energy;
    int converged;
    csm_embed_nonlinear(&E, &w->C, csm_svd3_lapacke, 20, 1e-8, &energy, &converged);
    assert_true(energy < 1e-24 * scale);
    assert_int_equal(converged, 1);
    /* from a perturbed start every Jacobi sweep lowers Falkenstein Eq 21 (block coordinate descent) and the
       sweeps go back to zero */
    perturb(&E, &g);
    descends(&E, &w->C, csm_embed_nonlinear, 400, scale, "sweep");
    csm_embedding_free(&E);
    run_stop(&R);
}

/* The local/global steps minimise the same Falkenstein Eq 21 as the Jacobi sweeps: on the rotated
   bar they keep the zero residual, from a perturbed start no step raises Eq 21, and with every
   cluster's F^p also stretched differently (so the minimum is not zero) both reach the same
   minimum from the same start. */
static void test_local_global_same_minimum(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 5, 1);
    run R;
    rotated_bar(&R, &g);
    csm_world *w = &R.sim.w;
    csm_embedding E = {0};
    double scale = rest_scale(&w->C), energy;
    int converged;
    assert_int_equal(csm_embedding_set(&E, &w->C, w->P.x, 3), 0);
    assert_true(csm_embed_local_global(&E, &w->C, csm_svd3_lapacke, 20, 1e-8, &energy, &converged) >= 1);
    assert_true(energy < 1e-24 * scale);
    assert_int_equal(converged, 1);
    perturb_seeded(&E, 1);
    descends(&E, &w->C, csm_embed_local_global, 60, scale, "local/global step");

    stretch_plastic(&w->C, &g);
    double jacobi, local_global;
    assert_int_equal(csm_embedding_set(&E, &w->C, w->P.x, 3), 0);
    perturb_seeded(&E, 2);
    int sweeps = csm_embed_nonlinear(&E, &w->C, csm_svd3_lapacke, 20000, 1e-20, &jacobi, &converged);
    assert_int_equal(csm_embedding_set(&E, &w->C, w->P.x, 3), 0);
    perturb_seeded(&E, 2);
    int steps = csm_embed_local_global(&E, &w->C, csm_svd3_lapacke, 20000, 1e-20, &local_global, &converged);
    print_message("stretched F^p: Falkenstein Eq 21 minimum %.12g after %d Jacobi sweeps, %.12g after %d "
                  "local/global steps (of sum w m |p|^2 = %.3g)\n", jacobi, sweeps, local_global, steps, scale);
    assert_true(local_global > 1e-4 * scale); /* a minimum that is not zero */
    if (!(fabs(local_global - jacobi) <= 1e-9 * jacobi))
        fail_msg("the minima differ: %.15g (local/global) against %.15g (Jacobi)", local_global, jacobi);
    csm_embedding_free(&E);
    run_stop(&R);
}

/* One local/global step lands on the minimiser of Falkenstein Eq 21 over the particles and the
   centres with the fitted T_c = R_c F^p_c held, one centre (lg_pin) held at its fitted e~_c and
   eps W_c |e_c - e~_c|^2 added for the rest (csm_embed_local_global). The step reaches
   it through the clusters' Schur complement and sums taken in vector blocks; here the whole
   system in the np + nc unknowns is solved densely (LAPACKE dposv) and the two must agree.
   Every cluster's F^p is stretched so that the minimum is not a rigid motion of the start. */
static void test_local_global_step_solves_the_system(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 7, 1);
    run R;
    rotated_bar(&R, &g);
    csm_world *w = &R.sim.w;
    csm_clusters *C = &w->C;
    stretch_plastic(C, &g);
    csm_embedding E = {0};
    assert_int_equal(csm_embedding_set(&E, C, w->P.x, 3), 0);
    perturb_seeded(&E, 3);
    csm_embedding_energy(&E, C, csm_svd3_lapacke); /* the fit the step starts from */
    int32_t np = E.np, nc = E.nc, N = np + nc;
    double *T = malloc(9 * sizeof(double) * (size_t)nc), *held = malloc(3 * sizeof(double) * (size_t)nc);
    double *L = calloc((size_t)N * (size_t)N, sizeof(double)), *b = calloc(3 * (size_t)N, sizeof(double));
    assert_non_null(T);
    assert_non_null(held);
    assert_non_null(L);
    assert_non_null(b);
    memcpy(T, E.T, 9 * sizeof(double) * (size_t)nc);
    memcpy(held, E.centre, 3 * sizeof(double) * (size_t)nc);
    double energy;
    int converged;
    assert_int_equal(csm_embed_local_global(&E, C, csm_svd3_lapacke, 1, 1e-8, &energy, &converged), 1);

    const double eps = 1e-12; /* the embedding's regularisation */
    int32_t pin = E.lg_pin;
    for (int32_t a = 0; a < nc; a++) {
        int32_t c = E.cluster[a], uc = np + a;
        double Wc = 0;
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
            int32_t ui = E.local[C->member[j]];
            double W = C->wmass[j], d[3];
            csm_m3_mul_v3(&T[9 * a], &C->p[3 * j], d);
            L[(int64_t)ui * N + ui] += W;
            L[(int64_t)uc * N + uc] += W;
            L[(int64_t)ui * N + uc] -= W;
            L[(int64_t)uc * N + ui] -= W;
            for (int k = 0; k < 3; k++) {
                b[3 * ui + k] += W * d[k];
                b[3 * uc + k] -= W * d[k];
            }
            Wc += W;
        }
        assert_true(Wc > 0);
        L[(int64_t)uc * N + uc] += eps * Wc;
        for (int k = 0; k < 3; k++) b[3 * uc + k] += eps * Wc * held[3 * a + k];
    }
    int32_t up = np + pin; /* e_pin = e~_pin: its column to the right-hand side, its row the identity */
    for (int32_t r = 0; r < N; r++) {
        for (int k = 0; k < 3; k++) b[3 * r + k] -= L[(int64_t)r * N + up] * held[3 * pin + k];
        L[(int64_t)r * N + up] = L[(int64_t)up * N + r] = 0;
    }
    L[(int64_t)up * N + up] = 1;
    for (int k = 0; k < 3; k++) b[3 * up + k] = held[3 * pin + k];
    assert_int_equal(LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', N, 3, L, N, b, 3), 0);
    double worst = 0, moved = 0;
    for (int32_t a = 0; a < np; a++)
        for (int k = 0; k < 3; k++) {
            int32_t i = E.particle[a];
            worst = fmax(worst, fabs(E.e[3 * i + k] - b[3 * a + k]));
            moved = fmax(moved, fabs(b[3 * a + k] - w->P.x[3 * i + k]));
        }
    print_message("one local/global step: %d particles, %d clusters, within %.3g of the dense solve\n", np, nc, worst);
    assert_true(moved > 1e-3); /* the stretched clusters pull the particles off the start */
    if (!(worst <= 1e-10)) fail_msg("the step is %.3g from the minimiser", worst);
    free(T);
    free(held);
    free(L);
    free(b);
    csm_embedding_free(&E);
    run_stop(&R);
}

/* Where cluster frames disagree (F^p with different left rotations), leaving the rotations out
   (Jones 2014's linearisation) cannot fit them; the nonlinear embedding can. Where they agree
   (F^p = I), both find the zero residual. */
static void test_nonlinear_below_linear(void **state)
{
    (void)state;
    csm_rng g;
    csm_rng_seed(&g, 4, 1);
    run R;
    rotated_bar(&R, &g);
    csm_world *w = &R.sim.w;
    csm_embedding E = {0};
    double linear, nonlinear;
    int converged;
    assert_int_equal(csm_embedding_set(&E, &w->C, w->P.x, 7), 0);
    assert_int_equal(csm_embed_linear(&E, &w->C, csm_svd3_lapacke, 7, &linear), 0);
    assert_int_equal(csm_embedding_set(&E, &w->C, w->P.x, 7), 0);
    csm_embed_nonlinear(&E, &w->C, csm_svd3_lapacke, 20, 1e-8, &nonlinear, &converged);
    double scale = rest_scale(&w->C);
    print_message("Falkenstein Eq 21 on the rotated bar: linear %.3g, nonlinear %.3g (of sum w m |p|^2 = %.3g)\n", linear,
                  nonlinear, scale);
    assert_true(linear > 1e-3 * scale);
    assert_true(nonlinear < 1e-12 * linear);

    for (int32_t c = 0; c < w->C.k; c++) csm_m3_identity(&w->C.Fp[9 * c]);
    assert_int_equal(csm_embedding_set(&E, &w->C, w->P.x, 7), 0);
    assert_int_equal(csm_embed_linear(&E, &w->C, csm_svd3_lapacke, 7, &linear), 0);
    assert_true(linear < 1e-20 * scale);
    csm_embedding_free(&E);
    run_stop(&R);
}

/* The reclustered bar after 40 frames: every cluster array and event, as bytes. */
typedef struct snapshot {
    int32_t k, m, nevents;
    int32_t *member, *id;
    double *weight, *p, *x;
} snapshot;

static void take(run *R, snapshot *s)
{
    const csm_clusters *C = &R->sim.w.C;
    s->k = C->k;
    s->m = C->m;
    s->member = malloc((size_t)C->m * sizeof *s->member);
    s->id = malloc((size_t)C->k * sizeof *s->id);
    s->weight = malloc((size_t)C->m * sizeof *s->weight);
    s->p = malloc(3 * (size_t)C->m * sizeof *s->p);
    s->x = malloc(3 * (size_t)R->sim.w.P.n * sizeof *s->x);
    memcpy(s->member, C->member, (size_t)C->m * sizeof *s->member);
    memcpy(s->id, C->id, (size_t)C->k * sizeof *s->id);
    memcpy(s->weight, C->weight, (size_t)C->m * sizeof *s->weight);
    memcpy(s->p, C->p, 3 * (size_t)C->m * sizeof *s->p);
    memcpy(s->x, R->sim.w.P.x, 3 * (size_t)R->sim.w.P.n * sizeof *s->x);
}

static void release(snapshot *s)
{
    free(s->member);
    free(s->id);
    free(s->weight);
    free(s->p);
    free(s->x);
}

static void reclustered(int threads, snapshot *s, int *events)
{
    const char *sets[] = {"recluster.method=embedded", "recluster.cond_max=1.5"};
    csm_set_threads(threads);
    run R;
    run_start(&R, BAR, sets, 2);
    *events = 0;
    for (int f = 0; f < 40; f++) {
        run_frame(&R);
        *events += R.sim.report.nevents;
        csm_sim_logged(&R.sim);
    }
    take(&R, s);
    run_stop(&R);
}

static void test_deterministic(void **state)
{
    (void)state;
    snapshot a, b;
    int ea, eb;
    reclustered(1, &a, &ea);
    reclustered(2, &b, &eb);
    csm_set_threads(0);
    assert_true(ea > 0);
    assert_int_equal(ea, eb);
    assert_int_equal(a.k, b.k);
    assert_int_equal(a.m, b.m);
    assert_memory_equal(a.member, b.member, (size_t)a.m * sizeof *a.member);
    assert_memory_equal(a.id, b.id, (size_t)a.k * sizeof *a.id);
    assert_memory_equal(a.weight, b.weight, (size_t)a.m * sizeof *a.weight);
    assert_memory_equal(a.p, b.p, 3 * (size_t)a.m * sizeof *a.p);
    release(&a);
    release(&b);
}

/* While no cluster reaches cond_max, `embedded` and `world_space` are `none` bit for bit. */
static void test_unmarked_is_none(void **state)
{
    (void)state;
    const char *methods[] = {"recluster.method=none", "recluster.method=embedded", "recluster.method=world_space"};
    double *ref = NULL;
    for (int k = 0; k < 3; k++) {
        const char *sets[] = {methods[k], "recluster.cond_max=1e12"};
        run R;
        run_start(&R, BAR, sets, k == 0 ? 1 : 2);
        for (int f = 0; f < 30; f++) run_frame(&R);
        size_t bytes = 3 * (size_t)R.sim.w.P.n * sizeof(double);
        if (k == 0) {
            ref = malloc(bytes);
            memcpy(ref, R.sim.w.P.x, bytes);
        } else {
            assert_memory_equal(ref, R.sim.w.P.x, bytes);
            assert_int_equal(R.sim.report.nevents, 0);
        }
        run_stop(&R);
    }
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fade_embedded),
        cmocka_unit_test(test_fade_world_space),
        cmocka_unit_test(test_plastic_bar_invariants),
        cmocka_unit_test(test_recluster_energy_accounted),
        cmocka_unit_test(test_embedding_zero_residual),
        cmocka_unit_test(test_nonlinear_below_linear),
        cmocka_unit_test(test_local_global_same_minimum),
        cmocka_unit_test(test_local_global_step_solves_the_system),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_unmarked_is_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
