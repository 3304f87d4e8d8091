/* The kernel's vector lanes: the conserving pass and the fits of clusters of every size against a
   scalar reference, the member sums in the lane order MEMBER_LANES promises, and clusters side by
   side in lanes (solver.lanes: clusters) with the bits of member order. */
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

/* A world of 1200 particles with one cluster of every size from 1 to 500 members, a seventh of
   them drawn from 300 particles on the rest plane z = 0.25 (planar clusters, rank-2 A_rr). Its
   positions are a random affine map of the rest shape, off the origin, with noise; with
   `inverted` the map mirrors (det < 0). */
static void make_sizes_world(csm_world *w, int inverted)
{
    enum { N = 1200, PLANAR = 300, KMAX = 500 };
    memset(w, 0, sizeof *w);
    csm_register_builtins();
    w->rotation = csm_registry_find(CSM_KIND_ROTATION, "polar_f");
    w->svd = csm_svd3_fast;
    assert_int_equal(csm_particles_alloc(&w->P, N), 0);
    csm_rng r;
    csm_rng_seed(&r, 29 + (uint64_t)inverted, 0);
    double A[9];
    for (int a = 0; a < 9; a++) A[a] = (a % 4 == 0 ? 1.0 : 0.0) + 0.4 * (2 * csm_rng_uniform(&r) - 1);
    if ((csm_m3_det(A) < 0) != inverted)
        for (int a = 0; a < 3; a++) A[a] = -A[a];
    for (int32_t i = 0; i < N; i++) {
        double *q = &w->P.rest[3 * i];
        for (int d = 0; d < 3; d++) q[d] = 2 * csm_rng_uniform(&r) - 1;
        if (i < PLANAR) q[2] = 0.25;
        csm_m3_mul_v3(A, q, &w->P.x[3 * i]);
        for (int d = 0; d < 3; d++) w->P.x[3 * i + d] += 3.0 * (d + 1) + 0.1 * (2 * csm_rng_uniform(&r) - 1);
        for (int d = 0; d < 3; d++) w->P.v[3 * i + d] = 2 * csm_rng_uniform(&r) - 1;
        w->P.mass[i] = 0.5 + csm_rng_uniform(&r);
        w->P.inv_mass[i] = 1 / w->P.mass[i];
    }
    csm_cluster_builder b;
    csm_builder_init(&b);
    for (int32_t size = 1; size <= KMAX; size++) {
        int planar = size % 7 == 3 && size <= PLANAR;
        int32_t pool = planar ? PLANAR : N, start = (int32_t)(csm_rng_uniform(&r) * pool) % pool;
        csm_builder_begin(&b);
        for (int32_t m = 0; m < size; m++) csm_builder_add(&b, (start + 7 * m) % pool, 0); /* 7 is prime to both */
        csm_builder_end(&b);
    }
    /* and two longer than the members whose rows the conserving pass keeps (core/kernel/conserve.c, KEEP_MEMBERS) */
    for (int32_t size = 700; size <= 1100; size += 400) {
        csm_builder_begin(&b);
        for (int32_t m = 0; m < size; m++) csm_builder_add(&b, (11 * m + size) % N, 0);
        csm_builder_end(&b);
    }
    csm_builder_equal_weights(&b, 0, N);
    assert_true(csm_clusters_from_builder(&w->C, &b, &w->P) >= 0);
    csm_builder_free(&b);
}

/* The scalar definitions in long double: xbar = sum w m x / M (Falkenstein Eq 7), A_xr =
   sum w m (x - xbar) p^T, csm_cluster_fixed_fit's S, Q and A_vp, and the goal pass of
   csm_goal_pass from the clusters' fitted T and xbar (clamp of Bargteil-Jones Algorithm 2 line 10,
   mean and rigid rotation removed, gain, sum over each particle's memberships). Each error is held
   to 1e-12 of the sum of its terms' sizes; a goal's to 1e-12 of its corrections' and, as x + c
   rounds to x's precision, to the rounding of a sum of its memberships' positions. */
static void check_against_reference(csm_world *w, const csm_goal_pass *pass, const double *out)
{
    const csm_clusters *C = &w->C;
    int32_t n = w->P.n;
    long double *ref = calloc(3 * (size_t)n, sizeof *ref), *size = calloc(6 * (size_t)n, sizeof *size);
    assert_non_null(ref);
    assert_non_null(size);
    for (int32_t c = 0; c < C->k; c++) {
        int32_t lo = C->offset[c], hi = C->offset[c + 1];
        long double M = 0, s[3] = {0, 0, 0}, com[3], Axr[9] = {0}, scale = 0, xscale = 0;
        long double S = 0, Q = 0, Avp[9] = {0}, sscale = 0, qscale = 0, vscale = 0;
        for (int32_t j = lo; j < hi; j++) {
            M += C->wmass[j];
            for (int a = 0; a < 3; a++) s[a] += (long double)C->wmass[j] * w->P.x[3 * C->member[j] + a];
        }
        for (int a = 0; a < 3; a++) com[a] = s[a] / M;
        for (int32_t j = lo; j < hi; j++) {
            const double *x = &w->P.x[3 * C->member[j]], *p = &C->p[3 * j], *v = &w->P.v[3 * C->member[j]];
            long double dn = 0, pn = 0, vn = 0;
            for (int a = 0; a < 3; a++) {
                dn += (x[a] - com[a]) * (x[a] - com[a]);
                pn += (long double)p[a] * p[a];
                vn += (long double)v[a] * v[a];
                xscale = fmaxl(xscale, fabsl((long double)x[a]));
                Q -= C->wmass[j] * (x[a] - com[a]) * v[a];
                for (int b = 0; b < 3; b++) {
                    Axr[3 * a + b] += C->wmass[j] * (x[a] - com[a]) * p[b];
                    Avp[3 * a + b] += (long double)C->wmass[j] * v[a] * p[b];
                }
            }
            S += C->wmass[j] * dn;
            scale += C->wmass[j] * sqrtl(dn * pn);
            sscale += C->wmass[j] * (dn + (fabsl(com[0]) + fabsl(com[1]) + fabsl(com[2])) * sqrtl(dn));
            qscale += C->wmass[j] * sqrtl(vn) * (sqrtl(dn) + xscale);
            vscale += C->wmass[j] * sqrtl(vn * pn);
        }
        double gcom[3], gAxr[9];
        csm_cluster_moments(C, w->P.x, c, gcom, gAxr);
        for (int a = 0; a < 3; a++) assert_close(gcom[a], (double)com[a], 1e-12 * (double)xscale);
        for (int a = 0; a < 9; a++) assert_close(gAxr[a], (double)Axr[a], 1e-12 * (double)scale);
        /* the pass's own fit (whichever lanes its sums took): x-bar, and F = A_xr A_rr^-1 */
        const double *inv = &C->A_rr_inv[9 * c];
        for (int a = 0; a < 3; a++) assert_close(C->com[3 * c + a], (double)com[a], 1e-12 * (double)xscale);
        for (int a = 0; a < 3; a++)
            for (int e = 0; e < 3; e++) {
                long double F = 0, Fsize = 0;
                for (int q = 0; q < 3; q++) {
                    F += Axr[3 * a + q] * inv[3 * q + e];
                    Fsize += fabsl(Axr[3 * a + q] * inv[3 * q + e]) + scale * fabs(inv[3 * q + e]);
                }
                assert_close(C->F[9 * c + 3 * a + e], (double)F, 1e-12 * (double)Fsize);
            }
        csm_fixed_fit fit;
        csm_cluster_fixed_fit(C, w->P.x, w->P.v, c, &fit);
        assert_close(fit.S, (double)S, 1e-12 * (double)sscale);
        assert_close(fit.Q, (double)Q, 1e-12 * (double)qscale);
        for (int a = 0; a < 9; a++) assert_close(fit.Avp[a], (double)Avp[a], 1e-12 * (double)vscale);

        /* the goal pass, from the fit the pass left in the clusters */
        const double *T = &C->T[9 * c], *fc = &C->com[3 * c];
        const double *fr = pass->conserve == CSM_CONSERVE_ANGULAR ? &pass->frame[12 * c] : NULL;
        long double limit = pass->gamma * C->width[c], cs[3] = {0, 0, 0}, t[3] = {0, 0, 0}, sr[3] = {0, 0, 0};
        long double *corr = calloc(3 * (size_t)(hi - lo), sizeof *corr);
        assert_true(corr != NULL || hi == lo);
        for (int32_t j = lo; j < hi; j++) {
            const double *x = &w->P.x[3 * C->member[j]], *p = &C->p[3 * j];
            long double d[3], len = 0, *cc = &corr[3 * (j - lo)];
            double gq[3] = {0, 0, 0};
            if (C->Q) csm_membership_goal(C, j, gq); /* + Q (q2(p) - qmean), in double */
            for (int a = 0; a < 3; a++) {
                long double g = fc[a];
                for (int b = 0; b < 3; b++) g += (long double)T[3 * a + b] * p[b];
                d[a] = x[a] - (C->Q ? (long double)gq[a] : g);
                len += d[a] * d[a];
            }
            len = sqrtl(len);
            long double k = pass->gamma > 0 && len > limit ? limit / len - 1 : pass->gamma > 0 ? 0 : -1;
            for (int a = 0; a < 3; a++) cc[a] = k * d[a];
            for (int a = 0; a < 3; a++) cs[a] += C->wmass[j] * cc[a];
            if (fr) {
                const double *xr = &pass->x_ref[3 * C->member[j]];
                long double rr[3] = {xr[0] - fr[0], xr[1] - fr[1], xr[2] - fr[2]};
                t[0] += C->wmass[j] * (rr[1] * cc[2] - rr[2] * cc[1]);
                t[1] += C->wmass[j] * (rr[2] * cc[0] - rr[0] * cc[2]);
                t[2] += C->wmass[j] * (rr[0] * cc[1] - rr[1] * cc[0]);
                for (int a = 0; a < 3; a++) sr[a] += C->wmass[j] * rr[a];
            }
        }
        long double mean[3] = {0, 0, 0}, om[3] = {0, 0, 0}, gain = pass->gain ? pass->gain[c] : 1;
        if (pass->conserve != CSM_CONSERVE_NONE)
            for (int a = 0; a < 3; a++) mean[a] = cs[a] / M;
        if (fr) {
            long double tt[3] = {t[0] - (sr[1] * mean[2] - sr[2] * mean[1]), t[1] - (sr[2] * mean[0] - sr[0] * mean[2]),
                                 t[2] - (sr[0] * mean[1] - sr[1] * mean[0])};
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) om[a] += fr[3 + 3 * a + b] * tt[b];
        }
        for (int32_t j = lo; j < hi; j++) {
            int32_t i = C->member[j];
            const double *x = &w->P.x[3 * i];
            long double *cc = &corr[3 * (j - lo)], rr[3] = {0, 0, 0};
            if (fr)
                for (int a = 0; a < 3; a++) rr[a] = pass->x_ref[3 * i + a] - fr[a];
            long double rot[3] = {om[1] * rr[2] - om[2] * rr[1], om[2] * rr[0] - om[0] * rr[2],
                                  om[0] * rr[1] - om[1] * rr[0]};
            for (int a = 0; a < 3; a++) {
                long double cp = cc[a] - mean[a] - rot[a];
                ref[3 * i + a] += C->weight[j] * (x[a] + gain * cp);
                size[6 * i + a] += C->weight[j] * (fabsl(cc[a]) + fabsl(mean[a]) + fabsl(rot[a]));
                size[6 * i + 3 + a] += C->weight[j] * fabsl((long double)x[a]);
            }
        }
        free(corr);
    }
    for (int32_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            if (C->poff[i] == C->poff[i + 1]) ref[3 * i + a] = w->P.x[3 * i + a];
            assert_close(out[3 * i + a], (double)ref[3 * i + a],
                         (double)(1e-12 * size[6 * i + a] +
                                  (C->poff[i + 1] - C->poff[i] + 4) * DBL_EPSILON * size[6 * i + 3 + a]));
        }
    free(ref);
    free(size);
}

/* The moments and goal passes run in lanes and vector loops (simd.h); they must agree with the
   scalar definitions on clusters of every size from 1 to 500 members and two longer ones, planar
   and inverted ones included, with and without the strain clamp, the conserving projections and gains, and in the
   quadratic mode (whose corrections take their own lanes), with the fits' sums in the lanes of
   one cluster's members and with one cluster per lane (solver.lanes). */
static void test_lanes_match_reference(void **state)
{
    (void)state;
    for (int variant = 0; variant < 6; variant++) {
        int inverted = variant % 3 == 1;
        csm_world w;
        make_sizes_world(&w, inverted);
        w.lanes = variant < 3 ? CSM_LANES_MEMBERS : CSM_LANES_CLUSTERS;
        if (variant % 3 == 2) {
            w.mode = CSM_MODE_QUADRATIC;
            w.beta = 0.6;
        }
        int32_t n = w.P.n, k = w.C.k;
        double *out = malloc(sizeof(double) * 3 * (size_t)n), *frame = malloc(sizeof(double) * 12 * (size_t)k);
        double *gain = malloc(sizeof(double) * (size_t)k);
        assert_non_null(out);
        assert_non_null(frame);
        assert_non_null(gain);
        csm_rng r;
        csm_rng_seed(&r, 31, 0);
        for (int32_t c = 0; c < k; c++) gain[c] = 0.05 + 0.95 * csm_rng_uniform(&r);
        csm_conserve_frames(&w, w.P.rest, frame);
        int planar = 0;
        for (int32_t c = 0; c < k; c++) planar += w.C.rank[c] < 3;
        assert_true(planar > 10);
        const csm_goal_pass passes[] = {
            {0.0, NULL, CSM_CONSERVE_NONE, NULL, NULL, 0.0, NULL},
            {0.02, NULL, CSM_CONSERVE_NONE, NULL, NULL, 0.0, NULL},
            {0.02, NULL, CSM_CONSERVE_LINEAR, NULL, NULL, 0.0, NULL},
            {0.02, gain, CSM_CONSERVE_ANGULAR, w.P.rest, frame, 0.0, NULL},
            {0.0, gain, CSM_CONSERVE_ANGULAR, w.P.rest, frame, 0.0, NULL},
        };
        for (size_t q = 0; q < sizeof passes / sizeof *passes; q++) {
            csm_fit_goals_pass(&w, w.P.x, &passes[q], out);
            check_against_reference(&w, &passes[q], out);
        }
        int fitted_inverted = 0;
        for (int32_t c = 0; c < k; c++) fitted_inverted += w.C.rank[c] == 3 && csm_m3_det(&w.C.F[9 * c]) < 0;
        assert_true(inverted ? fitted_inverted > k / 2 : fitted_inverted == 0);
        assert_true((w.C.Q != NULL) == (variant % 3 == 2));
        free(out);
        free(frame);
        free(gain);
        free_world(&w);
    }
}

/* The lane order the kernel's member sums promise (MEMBER_LANES, core/kernel/kernel_internal.h), in plain scalar code:
   member j of a cluster smaller than 8 in lane j - lo; otherwise blocks lo, lo + 8, ... lane by
   lane, and a last block that ends at hi, its lanes already counted weighted 0; the lanes summed
   in the tree of csm_lanes_sum. Here for the sums of csm_cluster_moments about the first member. */
static void moments_in_lane_order(const csm_clusters *C, const double *x, int32_t c, double com[3], double Axr[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const double *r = &x[3 * C->member[lo]];
    double lane[15][8] = {{0}}, s[15];
    for (int32_t b = lo; b < hi; b += 8) {
        int32_t start = hi - lo < 8 || b + 8 <= hi ? b : hi - 8;
        for (int32_t j = start; j < (hi - lo < 8 ? hi : start + 8); j++) {
            int l = (int)(j - start);
            double wm = C->wmass[j] * (j < b ? 0.0 : 1.0);
            const double *xi = &x[3 * C->member[j]], *p = &C->p[3 * j];
            double d[3] = {wm * (xi[0] - r[0]), wm * (xi[1] - r[1]), wm * (xi[2] - r[2])};
            for (int a = 0; a < 3; a++) {
                lane[a][l] += wm * xi[a];
                lane[3 + a][l] += wm * p[a];
                for (int e = 0; e < 3; e++) lane[6 + 3 * a + e][l] += d[a] * p[e];
            }
        }
    }
    for (int q = 0; q < 15; q++) {
        const double *v = lane[q];
        s[q] = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
    }
    double M = C->mass[c];
    for (int a = 0; a < 3; a++) com[a] = s[a] / M;
    for (int a = 0; a < 3; a++)
        for (int e = 0; e < 3; e++) Axr[3 * a + e] = s[6 + 3 * a + e] - (com[a] - r[a]) * s[3 + e];
}

/* The member sums run on vectors as wide as the machine has (simd.h); the bits must be those of
   the lane order in scalar code, so that every instruction set, and every later rewrite of the
   vector code, gives the same results. */
static void test_moments_keep_lane_order_bits(void **state)
{
    (void)state;
    csm_world w;
    make_sizes_world(&w, 1);
    const csm_clusters *C = &w.C;
    int32_t same = 0;
    for (int32_t c = 0; c < C->k; c++) {
        double com[3], Axr[9], rcom[3], rAxr[9];
        if (!(C->mass[c] > 0)) continue;
        csm_cluster_moments(C, w.P.x, c, com, Axr);
        moments_in_lane_order(C, w.P.x, c, rcom, rAxr);
        assert_memory_equal(com, rcom, sizeof com);
        assert_memory_equal(Axr, rAxr, sizeof Axr);
        same++;
    }
    assert_int_equal(same, C->k);
    assert_int_equal(C->k, 502);
    free_world(&w);
}

/* The fits of csm_fit_all, whose rotations are taken CSM_LANES clusters at a time in vector
   lanes, are the bits of csm_cluster_fit one cluster at a time: 21 clusters (two whole lane
   blocks and a part), elastic and plastic, deformed and inverted, for both rotation plugins. */
static void test_fit_lanes_same_bits(void **state)
{
    (void)state;
    const char *rotations[] = {"polar_f", "polar_apq"};
    for (int rr = 0; rr < 2; rr++) {
        csm_world w;
        make_world(&w, 500, rotations[rr], csm_svd3_fast, 11);
        csm_clusters_free(&w.C);
        memset(&w.C, 0, sizeof w.C);
        csm_cluster_builder b;
        csm_builder_init(&b);
        csm_rng r;
        csm_rng_seed(&r, 5, 1);
        for (int c = 0; c < 21; c++) { /* spheres of random centre and radius */
            double o[3] = {2 * csm_rng_uniform(&r) - 1, 2 * csm_rng_uniform(&r) - 1, 2 * csm_rng_uniform(&r) - 1};
            double rad = 0.3 + 0.5 * csm_rng_uniform(&r);
            csm_builder_begin(&b);
            for (int32_t i = 0; i < w.P.n; i++) {
                const double *p = &w.P.rest[3 * i];
                double d[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
                if (csm_v3_dot(d, d) <= rad * rad) csm_builder_add(&b, i, 0);
            }
            csm_builder_end(&b);
        }
        csm_builder_equal_weights(&b, 0, w.P.n);
        assert_true(csm_clusters_from_builder(&w.C, &b, &w.P) >= 0); /* > 0: some are degenerate */
        csm_builder_free(&b);
        w.lanes = CSM_LANES_MEMBERS; /* with a cluster per lane, the sums are added in another order */
        int32_t k = w.C.k;
        assert_int_equal(k, 21);
        for (int32_t c = 0; c < k; c += 3) { /* plastic flow in every third cluster */
            double *Fp = &w.C.Fp[9 * c];
            for (int a = 0; a < 9; a++) Fp[a] = (a % 4 == 0 ? 1.0 : 0.0) + 0.1 * (2 * csm_rng_uniform(&r) - 1);
        }
        for (int32_t i = 0; i < w.P.n; i++) { /* a shear, noise, and the particles with x > 0.6 mirrored */
            double *x = &w.P.x[3 * i];
            x[0] += 0.4 * x[1];
            for (int d = 0; d < 3; d++) x[d] += 0.05 * (2 * csm_rng_uniform(&r) - 1);
            if (x[0] > 0.6) x[0] = 1.2 - x[0];
        }
        for (int pass = 0; pass < 3; pass++) { /* from no rotation, then warm */
            size_t n9 = sizeof(double) * 9 * (size_t)k, n4 = sizeof(double) * 4 * (size_t)k;
            double *q = malloc(n4), *R = malloc(n9), *T = malloc(n9), *F = malloc(n9);
            memcpy(q, w.C.q, n4);
            csm_fit_all(&w, w.P.x);
            memcpy(R, w.C.R, n9);
            memcpy(T, w.C.T, n9);
            memcpy(F, w.C.F, n9);
            double *q_after = malloc(n4);
            memcpy(q_after, w.C.q, n4);
            memcpy(w.C.q, q, n4);
            for (int32_t c = 0; c < k; c++) csm_cluster_fit(&w, &w.C, w.P.x, c);
            assert_memory_equal(w.C.q, q_after, n4);
            assert_memory_equal(w.C.R, R, n9);
            assert_memory_equal(w.C.T, T, n9);
            assert_memory_equal(w.C.F, F, n9);
            for (int32_t i = 0; i < w.P.n; i++) w.P.x[3 * i + 1] += 0.02 * w.P.x[3 * i]; /* move on a little */
            free(q);
            free(R);
            free(T);
            free(F);
            free(q_after);
        }
        free_world(&w);
    }
}

/* With one cluster per lane (solver.lanes: clusters), cluster c's sums add its members in order:
   the same bits as that order in scalar code, x-bar = s / M and F = A_xr A_rr^-1 as fit_begin
   takes them. */
static void fit_in_member_order(const csm_clusters *C, const double *x, int32_t c, double com[3], double F[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const double *r = &x[3 * C->member[lo]];
    double s[15] = {0}, Axr[9];
    for (int32_t j = lo; j < hi; j++) {
        double wm = C->wmass[j];
        const double *xi = &x[3 * C->member[j]], *p = &C->p[3 * j];
        double d[3] = {wm * (xi[0] - r[0]), wm * (xi[1] - r[1]), wm * (xi[2] - r[2])};
        for (int a = 0; a < 3; a++) {
            s[a] += wm * xi[a];
            s[3 + a] += wm * p[a];
            for (int e = 0; e < 3; e++) s[6 + 3 * a + e] += d[a] * p[e];
        }
    }
    for (int a = 0; a < 3; a++) com[a] = s[a] / C->mass[c];
    for (int a = 0; a < 3; a++)
        for (int e = 0; e < 3; e++) Axr[3 * a + e] = s[6 + 3 * a + e] - (com[a] - r[a]) * s[3 + e];
    csm_m3_mul(Axr, &C->A_rr_inv[9 * c], F);
}

static void expect_member_order(const csm_world *w)
{
    const csm_clusters *C = &w->C;
    for (int32_t c = 0; c < C->k; c++) {
        double com[3], F[9];
        fit_in_member_order(C, w->P.x, c, com, F);
        assert_memory_equal(&C->com[3 * c], com, sizeof com);
        assert_memory_equal(&C->F[9 * c], F, sizeof F);
    }
}

/* One cluster per lane: the fits are the bits of each cluster's members added in order, on one
   thread and on two; the goals of csm_fit_goals_all (taken in the same lanes) are the bits of
   csm_goals_all's, one cluster at a time, from the same fits; and the members' copy the lanes
   read follows the clusters when they change (csm_clusters.epoch). */
static void test_cluster_lanes_keep_member_order_bits(void **state)
{
    (void)state;
    csm_world w;
    make_sizes_world(&w, 1);
    w.lanes = CSM_LANES_CLUSTERS;
    int32_t n = w.P.n, k = w.C.k;
    size_t n3 = sizeof(double) * 3 * (size_t)n;
    double *a = malloc(n3), *b = malloc(n3);
    assert_non_null(a);
    assert_non_null(b);
    int threads = csm_get_threads();
    for (int t = 1; t <= 2; t++) {
        csm_set_threads(t);
        csm_fit_all(&w, w.P.x);
        expect_member_order(&w);
    }
    for (int g = 0; g < 2; g++) {
        double gamma = g ? 0.02 : 0.0;
        csm_fit_goals_all(&w, w.P.x, gamma, a);
        expect_member_order(&w);
        csm_goals_all(&w, w.P.x, gamma, b);
        assert_memory_equal(a, b, n3);
    }
    /* new rest offsets for one cluster, announced by the epoch */
    int32_t c = k / 2;
    for (int32_t j = w.C.offset[c]; j < w.C.offset[c + 1]; j++)
        for (int e = 0; e < 3; e++) w.C.p[3 * j + e] *= 1.25;
    w.C.epoch++;
    csm_fit_all(&w, w.P.x);
    expect_member_order(&w);
    csm_set_threads(threads);
    free(a);
    free(b);
    free_world(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_lanes_same_bits),
        cmocka_unit_test(test_lanes_match_reference),
        cmocka_unit_test(test_moments_keep_lane_order_bits),
        cmocka_unit_test(test_cluster_lanes_keep_member_order_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
