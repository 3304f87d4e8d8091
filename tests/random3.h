/* Shared test helper: random rotations and matrices with chosen singular values. */
#ifndef CSM_TEST_RANDOM3_H
#define CSM_TEST_RANDOM3_H

#include <math.h>
#include <string.h>

#include "csm_math.h"
#include "rng.h"

static inline void random_rotation(csm_rng *r, double R[9])
{
    /* from a random unit quaternion */
    double q[4], n = 0;
    for (int k = 0; k < 4; k++) {
        q[k] = 2 * csm_rng_uniform(r) - 1;
        n += q[k] * q[k];
    }
    n = sqrt(n);
    for (int k = 0; k < 4; k++) q[k] /= n;
    double w = q[0], x = q[1], y = q[2], z = q[3];
    double M[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                   2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                   2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
    memcpy(R, M, sizeof M);
}

/* A = Q1 diag(s) Q2^T with chosen singular values. */
static inline void random_matrix(csm_rng *r, const double s[3], double A[9])
{
    double Q1[9], Q2[9], D[9] = {s[0], 0, 0, 0, s[1], 0, 0, 0, s[2]};
    random_rotation(r, Q1);
    random_rotation(r, Q2);
    csm_m3_mul(Q1, D, A);
    csm_m3_mul_bt(A, Q2, A);
}

#endif
