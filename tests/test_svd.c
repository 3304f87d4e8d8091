/* The fast 3x3 SVD held to LAPACKE dgesvd on random, near-singular, inverted and rank-deficient
   matrices; polar rotations are proper; the warm-started Newton polar; the A_rr pseudo-inverse. */
#include "check.h"
#include "random3.h"

#include "svd3.h"

#include <string.h>

static void check_decomposition(const double A[9], csm_svd3_fn svd, double s_out[3], double R_out[9])
{
    double U[9], s[3], V[9], D[9] = {0}, B[9], I[9];
    svd(A, U, s, V);
    double scale = csm_m3_frobenius(A) + 1e-300;
    D[0] = s[0];
    D[4] = s[1];
    D[8] = s[2];
    csm_m3_mul(U, D, B);
    csm_m3_mul_bt(B, V, B);
    for (int k = 0; k < 9; k++) assert_close(B[k], A[k], 1e-12 * scale);
    csm_m3_mul_at(U, U, I);
    for (int k = 0; k < 9; k++) assert_close(I[k], k % 4 == 0 ? 1.0 : 0.0, 1e-12);
    csm_m3_mul_at(V, V, I);
    for (int k = 0; k < 9; k++) assert_close(I[k], k % 4 == 0 ? 1.0 : 0.0, 1e-12);
    assert_close(csm_m3_det(U), 1.0, 1e-12);
    assert_close(csm_m3_det(V), 1.0, 1e-12);
    assert_true(s[0] >= s[1] - 1e-12 * scale && s[1] >= fabs(s[2]) - 1e-12 * scale);
    memcpy(s_out, s, 3 * sizeof(double));
    csm_m3_mul_bt(U, V, R_out);
}

static void compare_backends(const double A[9])
{
    double sf[3], sl[3], Rf[9], Rl[9];
    check_decomposition(A, csm_svd3_fast, sf, Rf);
    check_decomposition(A, csm_svd3_lapacke, sl, Rl);
    double scale = csm_m3_frobenius(A) + 1e-300;
    for (int k = 0; k < 3; k++) assert_close(sf[k], sl[k], 1e-12 * scale);
    /* The polar rotation is unique when the two smallest signed singular values are distinct
       and not both zero: s1 + s2 > 0. */
    if (sf[1] + sf[2] > 1e-6 * scale)
        for (int k = 0; k < 9; k++) assert_close(Rf[k], Rl[k], 1e-7);
    /* Either way it is a proper rotation, never a reflection. */
    assert_close(csm_m3_det(Rf), 1.0, 1e-12);
    assert_close(csm_m3_det(Rl), 1.0, 1e-12);
}

static void test_random(void **state)
{
    (void)state;
    csm_rng r;
    csm_rng_seed(&r, 42, 1);
    for (int t = 0; t < 5000; t++) {
        double A[9];
        for (int k = 0; k < 9; k++) A[k] = 4 * csm_rng_uniform(&r) - 2;
        compare_backends(A);
    }
}

static void test_near_singular_and_rank_deficient(void **state)
{
    (void)state;
    csm_rng r;
    csm_rng_seed(&r, 7, 2);
    const double spectra[][3] = {
        {1, 1, 1e-9}, {1, 1e-9, 1e-12}, {2, 1, 0}, {3, 0, 0}, {0, 0, 0}, {1, 1, 1},
        {5, 5, 1}, {1, 1 - 1e-9, 1e-3}, {1e6, 1, 1e-6}, {1, 0.5, 1e-15},
    };
    for (size_t k = 0; k < sizeof spectra / sizeof spectra[0]; k++)
        for (int t = 0; t < 300; t++) {
            double A[9];
            random_matrix(&r, spectra[k], A);
            compare_backends(A);
        }
}

static void test_inverted(void **state)
{
    (void)state;
    csm_rng r;
    csm_rng_seed(&r, 9, 3);
    for (int t = 0; t < 2000; t++) {
        double s[3] = {1 + csm_rng_uniform(&r), 0.5 + 0.5 * csm_rng_uniform(&r), -(0.01 + 0.4 * csm_rng_uniform(&r))};
        double A[9], sf[3], R[9];
        random_matrix(&r, s, A);
        assert_true(csm_m3_det(A) < 0);
        compare_backends(A);
        check_decomposition(A, csm_svd3_fast, sf, R);
        assert_true(sf[2] < 0); /* the sign of det A is carried by the smallest value */
    }
    /* a pure reflection gives a proper rotation */
    double Mx[9] = {-1, 0, 0, 0, 1, 0, 0, 0, 1}, R[9], sv[3];
    csm_polar3(csm_svd3_fast, Mx, R, sv);
    assert_close(csm_m3_det(R), 1.0, 1e-12);
}

static void test_polar_of_rotation_times_stretch(void **state)
{
    (void)state;
    csm_rng r;
    csm_rng_seed(&r, 11, 4);
    for (int t = 0; t < 1000; t++) {
        double Q[9], S[9] = {0}, A[9], R[9], sv[3];
        random_rotation(&r, Q);
        double P[9];
        random_rotation(&r, P);
        double d[9] = {1 + csm_rng_uniform(&r), 0, 0, 0, 1 + csm_rng_uniform(&r), 0, 0, 0, 1 + csm_rng_uniform(&r)};
        csm_m3_mul(P, d, S);
        csm_m3_mul_bt(S, P, S); /* symmetric positive definite */
        csm_m3_mul(Q, S, A);
        csm_polar3(csm_svd3_fast, A, R, sv);
        for (int k = 0; k < 9; k++) assert_close(R[k], Q[k], 1e-10);
    }
}

/* The warm-started Newton polar agrees with the LAPACKE polar wherever the rotation is unique
   (s1 + s2 > 0), from a start near the answer (a fit one step later), from a random rotation
   and cold; and the quaternion round trip is exact to round-off. */
static void test_polar_warm_start(void **state)
{
    (void)state;
    csm_rng r;
    csm_rng_seed(&r, 17, 5);
    int newton = 0, tried = 0;
    for (int t = 0; t < 3000; t++) {
        double s[3] = {0.2 + 2 * csm_rng_uniform(&r), 0, 0}, A[9], Rl[9], sl[3];
        s[1] = s[0] * csm_rng_uniform(&r);
        s[2] = (2 * csm_rng_uniform(&r) - 1) * s[1]; /* inverted for about half */
        if (t % 10 == 0) s[2] = 0;                     /* planar */
        random_matrix(&r, s, A);
        csm_polar3(csm_svd3_lapacke, A, Rl, sl);
        double q[4], Rw[9], Rq[9];
        csm_quat_from_rotation(Rl, q);
        csm_quat_to_rotation(q, Rq);
        for (int k = 0; k < 9; k++) assert_close(Rq[k], Rl[k], 1e-14);
        /* starts: the answer turned by a small rotation, a random rotation, none */
        double turn[9], start[9];
        double a = 0.05 * csm_rng_uniform(&r), axis[3] = {csm_rng_uniform(&r), 1, csm_rng_uniform(&r)};
        double n = csm_v3_norm(axis), qt[4] = {cos(a / 2), sin(a / 2) * axis[0] / n, sin(a / 2) * axis[1] / n,
                                              sin(a / 2) * axis[2] / n};
        csm_quat_to_rotation(qt, turn);
        csm_m3_mul(Rl, turn, start);
        double starts[3][4];
        csm_quat_from_rotation(start, starts[0]);
        random_rotation(&r, start);
        csm_quat_from_rotation(start, starts[1]);
        memset(starts[2], 0, sizeof starts[2]);
        for (int k = 0; k < 3; k++) {
            memcpy(q, starts[k], sizeof q);
            if (k == 0 && s[1] + s[2] > 1e-3 * s[0]) {
                tried++;
                double qn[4];
                memcpy(qn, q, sizeof qn);
                newton += csm_polar3_newton(A, qn, Rw) > 0;
            }
            csm_polar3_warm(csm_svd3_fast, A, q, Rw);
            assert_close(csm_m3_det(Rw), 1.0, 1e-12);
            if (s[1] + s[2] > 1e-6 * s[0])
                for (int j = 0; j < 9; j++) assert_close(Rw[j], Rl[j], 1e-9);
            csm_quat_to_rotation(q, Rq); /* q holds R */
            for (int j = 0; j < 9; j++) assert_close(Rq[j], Rw[j], 1e-14);
        }
    }
    /* Newton itself (not the SVD fallback) answers from a nearby start */
    assert_int_equal(newton, tried);
    assert_true(tried > 2000);
}

/* n polar decompositions side by side in vector lanes give each one's bits of csm_polar3_warm,
   whatever the other lanes hold: nearby, random and missing starts, planar, inverted, zero and
   non-finite matrices, for every n from 1 to CSM_LANES. */
static void test_polar_lanes_same_bits(void **state)
{
    (void)state;
    csm_rng r;
    csm_rng_seed(&r, 23, 9);
    int converged = 0;
    for (int t = 0; t < 400; t++) {
        int n = 1 + t % 8;
        double A[8][9], q[8][4], R[8][9], q1[8][4], R1[8][9];
        for (int l = 0; l < n; l++) {
            double s[3] = {0.2 + 2 * csm_rng_uniform(&r), 0, 0}, Rl[9], sl[3];
            s[1] = s[0] * csm_rng_uniform(&r);
            s[2] = (2 * csm_rng_uniform(&r) - 1) * s[1];
            int kind = (int)(8 * csm_rng_uniform(&r));
            if (kind == 0) s[2] = 0; /* planar */
            random_matrix(&r, s, A[l]);
            if (kind == 1) memset(A[l], 0, sizeof A[l]);
            if (kind == 2) A[l][4] = NAN;
            csm_polar3(csm_svd3_lapacke, A[l], Rl, sl);
            if (kind == 3 || kind == 1 || kind == 2) {
                memset(q[l], 0, sizeof q[l]); /* no last rotation */
            } else if (kind == 4) {
                double Rr[9];
                random_rotation(&r, Rr);
                csm_quat_from_rotation(Rr, q[l]);
            } else { /* the answer, turned a little */
                double a = 0.1 * csm_rng_uniform(&r), qt[4] = {cos(a / 2), sin(a / 2), 0, 0}, turn[9], start[9];
                csm_quat_to_rotation(qt, turn);
                csm_m3_mul(Rl, turn, start);
                csm_quat_from_rotation(start, q[l]);
            }
        }
        memcpy(q1, q, sizeof q);
        memset(R, 0, sizeof R);
        memset(R1, 0, sizeof R1);
        csm_polar3_warm_lanes(csm_svd3_fast, n, (const double(*)[9])A, q, R);
        for (int l = 0; l < n; l++) {
            double qn[4];
            memcpy(qn, q1[l], sizeof qn);
            converged += csm_polar3_newton(A[l], qn, R1[l]) > 0;
            csm_polar3_warm(csm_svd3_fast, A[l], q1[l], R1[l]);
            assert_memory_equal(q[l], q1[l], sizeof q[l]);
            assert_memory_equal(R[l], R1[l], sizeof R[l]);
        }
    }
    assert_true(converged > 400); /* most lanes take Newton's way, not the SVD's */
}

static void test_pinv(void **state)
{
    (void)state;
    double planar[9] = {2, 1, 0, 1, 3, 0, 0, 0, 0}, line[9] = {4, 0, 0, 0, 0, 0, 0, 0, 0}, zero[9] = {0};
    double full[9] = {4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 2}, out[9], AXA[9];
    assert_int_equal(csm_pinv_sym3(full, 1e-10, out), 3);
    double inv[9];
    csm_m3_inverse(full, inv);
    for (int k = 0; k < 9; k++) assert_close(out[k], inv[k], 1e-12);
    assert_int_equal(csm_pinv_sym3(planar, 1e-10, out), 2);
    csm_m3_mul(planar, out, AXA);
    csm_m3_mul(AXA, planar, AXA); /* A A+ A = A */
    for (int k = 0; k < 9; k++) assert_close(AXA[k], planar[k], 1e-12);
    assert_close(out[8], 0.0, 1e-300);
    assert_int_equal(csm_pinv_sym3(line, 1e-10, out), 1);
    assert_close(out[0], 0.25, 1e-15);
    assert_int_equal(csm_pinv_sym3(zero, 1e-10, out), 0);
    for (int k = 0; k < 9; k++) assert_close(out[k], 0.0, 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_near_singular_and_rank_deficient),
        cmocka_unit_test(test_polar_warm_start),
        cmocka_unit_test(test_inverted),
        cmocka_unit_test(test_polar_of_rotation_times_stretch),
        cmocka_unit_test(test_polar_lanes_same_bits),
        cmocka_unit_test(test_pinv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
