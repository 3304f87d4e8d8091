/* Small 3-vector and 3x3 matrix kernels. Matrices are row-major double[9]: M[3*r + c]. */
#ifndef CSM_MATH_H
#define CSM_MATH_H

#include <math.h>
#include <string.h>

#define CSM_PI 3.14159265358979323846

static inline void csm_v3_set(double *a, double x, double y, double z)
{
    a[0] = x;
    a[1] = y;
    a[2] = z;
}
static inline double csm_v3_dot(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static inline void csm_v3_cross(const double *a, const double *b, double *out)
{
    double x = a[1] * b[2] - a[2] * b[1];
    double y = a[2] * b[0] - a[0] * b[2];
    double z = a[0] * b[1] - a[1] * b[0];
    csm_v3_set(out, x, y, z);
}
static inline double csm_v3_norm(const double *a) { return sqrt(csm_v3_dot(a, a)); }

/* Two unit vectors t1, t2 across the unit vector n, with (t1, t2, n) right-handed. */
static inline void csm_v3_tangents(const double *n, double *t1, double *t2)
{
    double a[3] = {0, 0, 0};
    a[fabs(n[0]) < 0.57735 ? 0 : fabs(n[1]) < 0.57735 ? 1 : 2] = 1; /* an axis not along n */
    csm_v3_cross(a, n, t1);
    double len = csm_v3_norm(t1);
    for (int e = 0; e < 3; e++) t1[e] /= len;
    csm_v3_cross(n, t1, t2);
}

static inline void csm_m3_identity(double *M)
{
    memset(M, 0, 9 * sizeof(double));
    M[0] = M[4] = M[8] = 1.0;
}

/* Whether M is exactly the identity (no plastic deformation, say). */
static inline int csm_m3_is_identity(const double *M)
{
    return M[0] == 1.0 && M[4] == 1.0 && M[8] == 1.0 && M[1] == 0.0 && M[2] == 0.0 && M[3] == 0.0 && M[5] == 0.0 &&
           M[6] == 0.0 && M[7] == 0.0;
}
/* out = A b (out may not alias b). */
static inline void csm_m3_mul_v3(const double *A, const double *b, double *out)
{
    out[0] = A[0] * b[0] + A[1] * b[1] + A[2] * b[2];
    out[1] = A[3] * b[0] + A[4] * b[1] + A[5] * b[2];
    out[2] = A[6] * b[0] + A[7] * b[1] + A[8] * b[2];
}
/* out = A B (out may alias A or B). */
static inline void csm_m3_mul(const double *A, const double *B, double *out)
{
    double t[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            t[3 * r + c] = A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c];
    memcpy(out, t, sizeof t);
}
/* out = A B^T (out may alias). */
static inline void csm_m3_mul_bt(const double *A, const double *B, double *out)
{
    double t[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            t[3 * r + c] = A[3 * r] * B[3 * c] + A[3 * r + 1] * B[3 * c + 1] +
                           A[3 * r + 2] * B[3 * c + 2];
    memcpy(out, t, sizeof t);
}
/* out = A^T B (out may alias). */
static inline void csm_m3_mul_at(const double *A, const double *B, double *out)
{
    double t[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            t[3 * r + c] = A[r] * B[c] + A[3 + r] * B[3 + c] + A[6 + r] * B[6 + c];
    memcpy(out, t, sizeof t);
}
static inline void csm_m3_transpose(const double *A, double *out)
{
    double t[9] = {A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8]};
    memcpy(out, t, sizeof t);
}
static inline double csm_m3_det(const double *A)
{
    return A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
           A[2] * (A[3] * A[7] - A[4] * A[6]);
}
/* Inverse through the adjugate; returns the determinant (out untouched when it is 0). */
static inline double csm_m3_inverse(const double *A, double *out)
{
    double c0 = A[4] * A[8] - A[5] * A[7];
    double c1 = A[5] * A[6] - A[3] * A[8];
    double c2 = A[3] * A[7] - A[4] * A[6];
    double det = A[0] * c0 + A[1] * c1 + A[2] * c2;
    if (det == 0.0) return 0.0;
    double s = 1.0 / det;
    double t[9] = {c0 * s,
                   (A[2] * A[7] - A[1] * A[8]) * s,
                   (A[1] * A[5] - A[2] * A[4]) * s,
                   c1 * s,
                   (A[0] * A[8] - A[2] * A[6]) * s,
                   (A[2] * A[3] - A[0] * A[5]) * s,
                   c2 * s,
                   (A[1] * A[6] - A[0] * A[7]) * s,
                   (A[0] * A[4] - A[1] * A[3]) * s};
    memcpy(out, t, sizeof t);
    return det;
}
/* The cofactor matrix, cof(A) = det(A) A^-T where A is invertible: d det(A) / dA = cof(A), and
   A cof(A)^T = det(A) 1 for every A. */
static inline void csm_m3_cofactor(const double *A, double *out)
{
    double t[9] = {A[4] * A[8] - A[5] * A[7], A[5] * A[6] - A[3] * A[8], A[3] * A[7] - A[4] * A[6],
                   A[2] * A[7] - A[1] * A[8], A[0] * A[8] - A[2] * A[6], A[1] * A[6] - A[0] * A[7],
                   A[1] * A[5] - A[2] * A[4], A[2] * A[3] - A[0] * A[5], A[0] * A[4] - A[1] * A[3]};
    memcpy(out, t, sizeof t);
}
static inline double csm_m3_frobenius(const double *A)
{
    double s = 0;
    for (int k = 0; k < 9; k++) s += A[k] * A[k];
    return sqrt(s);
}

/* The rotation of a config's `rotate`: deg[0] degrees about x, then deg[1] about y, then deg[2]
   about z (R = Rz Ry Rx). */
static inline void csm_m3_rotation_degrees(const double deg[3], double R[9])
{
    csm_m3_identity(R);
    for (int axis = 0; axis < 3; axis++) {
        double t = deg[axis] * CSM_PI / 180.0, c = cos(t), s = sin(t), A[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, RA[9];
        int b = (axis + 1) % 3, d = (axis + 2) % 3;
        A[3 * b + b] = c;
        A[3 * b + d] = -s;
        A[3 * d + b] = s;
        A[3 * d + d] = c;
        csm_m3_mul(A, R, RA);
        memcpy(R, RA, sizeof RA);
    }
}

/* sin and cos of phi in [0, 2 pi] to within 1e-11: a reduction to |y| <= pi/4 and Taylor series
   to y^11 and y^12. For tests with a margin, not for results (the library's are those). */
static inline void csm_sincos_approx(double phi, double *s, double *c)
{
    int k = (int)(phi * (2.0 / CSM_PI) + 0.5);
    double y = phi - k * (0.5 * CSM_PI), y2 = y * y;
    double sy = y * (1 + y2 * (-1.0 / 6 + y2 * (1.0 / 120 + y2 * (-1.0 / 5040 + y2 * (1.0 / 362880 +
                                                                                     y2 * (-1.0 / 39916800))))));
    double cy = 1 + y2 * (-0.5 + y2 * (1.0 / 24 + y2 * (-1.0 / 720 + y2 * (1.0 / 40320 +
                                                                           y2 * (-1.0 / 3628800 + y2 / 479001600)))));
    switch (k & 3) {
    case 0: *s = sy, *c = cy; break;
    case 1: *s = cy, *c = -sy; break;
    case 2: *s = -sy, *c = -cy; break;
    default: *s = -cy, *c = sy; break;
    }
}

/* cbrt(a) for a in [1, 8] to within 1e-13 of it: a quadratic through a = 1, 4.5 and 8 (within
   4 %), then two Halley steps y <- y (y^3 + 2a) / (2y^3 + a), each cubing the relative error. For
   tests with a margin, as csm_sincos_approx. */
static inline double csm_cbrt_approx(double a)
{
    double y = 0.75855437 + a * (0.25376919 + a * -0.01232356);
    for (int it = 0; it < 2; it++) {
        double y3 = y * y * y;
        y *= (y3 + 2 * a) / (2 * y3 + a);
    }
    return y;
}

#endif
