#include "svd3.h"

#include "csm_math.h"
#include "simd.h"

#include <stdint.h>
#include <string.h>

#include <lapacke.h>

/* One Jacobi rotation zeroing S[p][q] of the symmetric S, accumulated into V. */
static void jacobi_rotate(double S[9], double V[9], int p, int q)
{
    double spq = S[3 * p + q];
    if (spq == 0.0) return;
    double theta = (S[3 * q + q] - S[3 * p + p]) / (2.0 * spq);
    double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
    double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
    /* S <- J^T S J with J the rotation in the (p, q) plane. */
    for (int k = 0; k < 3; k++) {
        double skp = S[3 * k + p], skq = S[3 * k + q];
        S[3 * k + p] = c * skp - s * skq;
        S[3 * k + q] = s * skp + c * skq;
    }
    for (int k = 0; k < 3; k++) {
        double spk = S[3 * p + k], sqk = S[3 * q + k];
        S[3 * p + k] = c * spk - s * sqk;
        S[3 * q + k] = s * spk + c * sqk;
    }
    S[3 * p + q] = S[3 * q + p] = 0.0;
    for (int k = 0; k < 3; k++) {
        double vkp = V[3 * k + p], vkq = V[3 * k + q];
        V[3 * k + p] = c * vkp - s * vkq;
        V[3 * k + q] = s * vkp + c * vkq;
    }
}

static void swap_columns(double *M, int a, int b)
{
    for (int k = 0; k < 3; k++) {
        double t = M[3 * k + a];
        M[3 * k + a] = M[3 * k + b];
        M[3 * k + b] = t;
    }
}

/* Givens rotation acting on rows p, q of B that zeroes B[q][col]; accumulated as U <- U G^T. */
static void givens_qr_step(double B[9], double U[9], int p, int q, int col)
{
    double a = B[3 * p + col], b = B[3 * q + col];
    double r = hypot(a, b);
    if (r == 0.0) return;
    double c = a / r, s = b / r;
    for (int k = 0; k < 3; k++) {
        double bp = B[3 * p + k], bq = B[3 * q + k];
        B[3 * p + k] = c * bp + s * bq;
        B[3 * q + k] = -s * bp + c * bq;
    }
    for (int k = 0; k < 3; k++) {
        double up = U[3 * k + p], uq = U[3 * k + q];
        U[3 * k + p] = c * up + s * uq;
        U[3 * k + q] = -s * up + c * uq;
    }
}

/* 2^-k that brings the largest entry of A into [1, 2), and k (0 for a zero or non-finite A).
   Scaling by a power of two is exact and every rounding scales with it, so a decomposition of the
   scaled matrix is the same bits as of A wherever A's own would neither underflow nor overflow:
   forming A^T A, or the cube of a scale in the Newton step, no longer does for tiny or huge
   masses. */
static int scale_exponent(const double A[9])
{
    double big = 0;
    for (int k = 0; k < 9; k++) big = fmax(big, fabs(A[k]));
    return big > 0 && isfinite(big) ? ilogb(big) : 0;
}

/* x 2^k, as ldexp gives it: one multiplication by the double 2^k where that is a normal number
   (a product by a power of two is exact, or rounded once where it falls below the normal range,
   as ldexp rounds it), ldexp beyond. The library call took an eighth of a continuum run's time
   (the polar decompositions of every quadrature point). */
static inline double times_pow2(double x, int k)
{
    if (k < -1022 || k > 1023) return ldexp(x, k);
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double f;
    memcpy(&f, &bits, sizeof f);
    return x * f;
}

void csm_svd3_fast(const double A_in[9], double U[9], double s[3], double V[9])
{
    int ex = scale_exponent(A_in);
    double A[9], S[9];
    for (int k = 0; k < 9; k++) A[k] = times_pow2(A_in[k], -ex);
    csm_m3_mul_at(A, A, S);
    csm_m3_identity(V);
    double scale = S[0] * S[0] + S[4] * S[4] + S[8] * S[8];
    for (int sweep = 0; sweep < 12; sweep++) {
        double off = S[1] * S[1] + S[2] * S[2] + S[5] * S[5];
        if (off <= 1e-32 * scale || off == 0.0) break;
        jacobi_rotate(S, V, 0, 1);
        jacobi_rotate(S, V, 0, 2);
        jacobi_rotate(S, V, 1, 2);
    }
    /* Forming A^T A squares the condition number: eigenvectors of eigenvalues below
       eps * lambda_max come out arbitrary. One-sided (Hestenes) Jacobi on B = A V, warm started
       from V, orthogonalises B's columns at the accuracy of each column. */
    double B[9];
    csm_m3_mul(A, V, B);
    for (int sweep = 0; sweep < 8; sweep++) {
        int rotated = 0;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                double a = 0, b = 0, g = 0;
                for (int k = 0; k < 3; k++) {
                    a += B[3 * k + p] * B[3 * k + p];
                    b += B[3 * k + q] * B[3 * k + q];
                    g += B[3 * k + p] * B[3 * k + q];
                }
                if (g == 0.0 || fabs(g) <= 1e-15 * sqrt(a * b)) continue;
                double zeta = (b - a) / (2.0 * g);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                double c = 1.0 / sqrt(1.0 + t * t), sn = c * t;
                for (int k = 0; k < 3; k++) {
                    double bp = B[3 * k + p], bq = B[3 * k + q];
                    B[3 * k + p] = c * bp - sn * bq;
                    B[3 * k + q] = sn * bp + c * bq;
                    double vp = V[3 * k + p], vq = V[3 * k + q];
                    V[3 * k + p] = c * vp - sn * vq;
                    V[3 * k + q] = sn * vp + c * vq;
                }
                rotated = 1;
            }
        if (!rotated) break;
    }
    /* Order columns by norm, descending (three compare-swaps). */
    double e[3];
    for (int k = 0; k < 3; k++) e[k] = B[k] * B[k] + B[3 + k] * B[3 + k] + B[6 + k] * B[6 + k];
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < 2 - pass; k++)
            if (e[k] < e[k + 1]) {
                double t = e[k];
                e[k] = e[k + 1];
                e[k + 1] = t;
                swap_columns(V, k, k + 1);
                swap_columns(B, k, k + 1);
            }
    if (csm_m3_det(V) < 0)
        for (int k = 0; k < 3; k++) {
            V[3 * k + 2] = -V[3 * k + 2];
            B[3 * k + 2] = -B[3 * k + 2];
        }
    /* B = A V has orthogonal columns; its QR gives U (a product of rotations) and s. */
    csm_m3_identity(U);
    givens_qr_step(B, U, 0, 1, 0);
    givens_qr_step(B, U, 0, 2, 0);
    givens_qr_step(B, U, 1, 2, 1);
    s[0] = times_pow2(B[0], ex);
    s[1] = times_pow2(B[4], ex);
    s[2] = times_pow2(B[8], ex);
    /* The QR leaves s[0], s[1] >= 0 by construction except for an exact zero column; keep the
       ordering invariant s[1] >= |s[2]| by folding a negative s[1] into the last pair. */
    if (s[1] < 0) {
        s[1] = -s[1];
        s[2] = -s[2];
        for (int k = 0; k < 3; k++) {
            U[3 * k + 1] = -U[3 * k + 1];
            U[3 * k + 2] = -U[3 * k + 2];
        }
    }
}

void csm_svd3_lapacke(const double A[9], double U[9], double s[3], double V[9])
{
    double a[9], vt[9], superb[2];
    memcpy(a, A, sizeof a);
    lapack_int info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'A', 'A', 3, 3, a, 3, s, U, 3, vt, 3, superb);
    if (info != 0) { /* not converged: cannot happen for finite 3x3 input; return identity */
        csm_m3_identity(U);
        csm_m3_identity(V);
        s[0] = s[1] = s[2] = 0.0;
        return;
    }
    csm_m3_transpose(vt, V);
    if (csm_m3_det(U) < 0) {
        for (int k = 0; k < 3; k++) U[3 * k + 2] = -U[3 * k + 2];
        s[2] = -s[2];
    }
    if (csm_m3_det(V) < 0) {
        for (int k = 0; k < 3; k++) V[3 * k + 2] = -V[3 * k + 2];
        s[2] = -s[2];
    }
}

void csm_polar3(csm_svd3_fn svd, const double A[9], double R[9], double s[3])
{
    double U[9], V[9];
    svd(A, U, s, V);
    csm_m3_mul_bt(U, V, R);
}

/* csm_quat_to_rotation, inlined where it runs on lanes */
static inline __attribute__((always_inline)) void quat_to_rotation(const double q[4], double R[9])
{
    double w = q[0], x = q[1], y = q[2], z = q[3];
    double xx = x * x, yy = y * y, zz = z * z, xy = x * y, xz = x * z, yz = y * z, wx = w * x, wy = w * y,
           wz = w * z;
    R[0] = 1 - 2 * (yy + zz);
    R[1] = 2 * (xy - wz);
    R[2] = 2 * (xz + wy);
    R[3] = 2 * (xy + wz);
    R[4] = 1 - 2 * (xx + zz);
    R[5] = 2 * (yz - wx);
    R[6] = 2 * (xz - wy);
    R[7] = 2 * (yz + wx);
    R[8] = 1 - 2 * (xx + yy);
}

void csm_quat_to_rotation(const double q[4], double R[9]) { quat_to_rotation(q, R); }

void csm_quat_from_rotation(const double R[9], double q[4])
{
    /* Shepperd's method: divide by the largest of the four candidates. */
    double tr = R[0] + R[4] + R[8];
    if (tr >= R[0] && tr >= R[4] && tr >= R[8]) {
        double r = sqrt(1 + tr), s = 0.5 / r;
        q[0] = 0.5 * r;
        q[1] = (R[7] - R[5]) * s;
        q[2] = (R[2] - R[6]) * s;
        q[3] = (R[3] - R[1]) * s;
    } else if (R[0] >= R[4] && R[0] >= R[8]) {
        double r = sqrt(1 + R[0] - R[4] - R[8]), s = 0.5 / r;
        q[0] = (R[7] - R[5]) * s;
        q[1] = 0.5 * r;
        q[2] = (R[1] + R[3]) * s;
        q[3] = (R[2] + R[6]) * s;
    } else if (R[4] >= R[8]) {
        double r = sqrt(1 + R[4] - R[0] - R[8]), s = 0.5 / r;
        q[0] = (R[2] - R[6]) * s;
        q[1] = (R[1] + R[3]) * s;
        q[2] = 0.5 * r;
        q[3] = (R[5] + R[7]) * s;
    } else {
        double r = sqrt(1 + R[8] - R[0] - R[4]), s = 0.5 / r;
        q[0] = (R[3] - R[1]) * s;
        q[1] = (R[2] + R[6]) * s;
        q[2] = (R[5] + R[7]) * s;
        q[3] = 0.5 * r;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) q[k] /= n;
}

/* Newton's method for the polar rotation (csm_polar3_newton) on n <= CSM_LANES matrices at
   once, one per vector lane; each lane stops where its own iteration stops, so a lane's result
   does not depend on the others. ok[l] is the steps lane l took, or -1 where it failed (q[l] is
   then unspecified); R[l] is written where it converged. Compiled for each instruction set
   (simd.h): the step has no branch, and each lane rounds as scalar code does. */
CSM_CLONES static void newton_lanes(int n, const double (*A)[9], double (*q)[4], double (*R)[9], int *ok)
{
    double a[9][CSM_LANES], qw[CSM_LANES], qx[CSM_LANES], qy[CSM_LANES], qz[CSM_LANES], tol[CSM_LANES];
    double state[CSM_LANES], steps[CSM_LANES]; /* doubles, as wide as the lanes they select in */
    for (int l = 0; l < CSM_LANES; l++) { /* lanes past n: failed from the start, never read */
        for (int k = 0; k < 9; k++) a[k][l] = 0.0;
        qw[l] = 1.0, qx[l] = qy[l] = qz[l] = tol[l] = 0.0;
        state[l] = -1.0, steps[l] = 0.0;
    }
    for (int l = 0; l < n; l++) {
        double scale = 0;
        int e = scale_exponent(A[l]); /* the rotation of 2^-e A is A's */
        for (int k = 0; k < 9; k++) {
            a[k][l] = times_pow2(A[l][k], -e);
            scale += fabs(a[k][l]);
        }
        qw[l] = q[l][0], qx[l] = q[l][1], qy[l] = q[l][2], qz[l] = q[l][3];
        tol[l] = 1e-10 * scale;
        state[l] = scale > 0 && isfinite(scale) ? 0.0 : -1.0; /* 0 running, 1 converged, -1 failed */
    }
    for (int step = 1; step <= 16; step++) {
#pragma omp simd
        for (int l = 0; l < CSM_LANES; l++) {
            double w = qw[l], x = qx[l], y = qy[l], z = qz[l];
            /* R(q) (csm_quat_to_rotation) */
            double xx = x * x, yy = y * y, zz = z * z, xy = x * y, xz = x * z, yz = y * z, wx = w * x, wy = w * y,
                   wz = w * z;
            double r0 = 1 - 2 * (yy + zz), r1 = 2 * (xy - wz), r2 = 2 * (xz + wy);
            double r3 = 2 * (xy + wz), r4 = 1 - 2 * (xx + zz), r5 = 2 * (yz - wx);
            double r6 = 2 * (xz - wy), r7 = 2 * (yz + wx), r8 = 1 - 2 * (xx + yy);
            /* M = R^T A */
            double a0 = a[0][l], a1 = a[1][l], a2 = a[2][l], a3 = a[3][l], a4 = a[4][l], a5 = a[5][l];
            double a6 = a[6][l], a7 = a[7][l], a8 = a[8][l];
            double m0 = r0 * a0 + r3 * a3 + r6 * a6, m1 = r0 * a1 + r3 * a4 + r6 * a7, m2 = r0 * a2 + r3 * a5 + r6 * a8;
            double m3 = r1 * a0 + r4 * a3 + r7 * a6, m4 = r1 * a1 + r4 * a4 + r7 * a7, m5 = r1 * a2 + r4 * a5 + r7 * a8;
            double m6 = r2 * a0 + r5 * a3 + r8 * a6, m7 = r2 * a1 + r5 * a4 + r8 * a7, m8 = r2 * a2 + r5 * a5 + r8 * a8;
            /* f(omega) = tr((R exp[omega]x)^T A) = f + g.omega - omega^T H omega / 2 + O(omega^3) with
               g = axial(M - M^T) and H = tr(S) I - S, S = (M + M^T) / 2. */
            double g0 = m7 - m5, g1 = m2 - m6, g2 = m3 - m1;
            double h00 = m4 + m8, h11 = m0 + m8, h22 = m0 + m4;
            double h01 = -0.5 * (m1 + m3), h02 = -0.5 * (m2 + m6), h12 = -0.5 * (m5 + m7);
            /* adjugate of H; H is positive definite at a strict maximum over SO(3) */
            double c00 = h11 * h22 - h12 * h12, c01 = h02 * h12 - h01 * h22, c02 = h01 * h12 - h02 * h11;
            double c11 = h00 * h22 - h02 * h02, c12 = h01 * h02 - h00 * h12, c22 = h00 * h11 - h01 * h01;
            double det = h00 * c00 + h01 * c01 + h02 * c02, t = tol[l];
            double inv = 1.0 / det;
            double w0 = (c00 * g0 + c01 * g1 + c02 * g2) * inv;
            double w1 = (c01 * g0 + c11 * g1 + c12 * g2) * inv;
            double w2 = (c02 * g0 + c12 * g1 + c22 * g2) * inv;
            /* q <- q (1, omega / 2), normalised: R exp[omega]x up to O(|omega|^3) */
            double ha = 0.5 * w0, hb = 0.5 * w1, hc = 0.5 * w2;
            double n0 = w - x * ha - y * hb - z * hc;
            double n1 = x + w * ha + y * hc - z * hb;
            double n2 = y + w * hb - x * hc + z * ha;
            double n3 = z + w * hc + x * hb - y * ha;
            double norm = 1.0 / sqrt(n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3);
            double turn = w0 * w0 + w1 * w1 + w2 * w2;
            /* failed: H not positive definite, or a turn of more than about 2 rad (far from the
               basin); converged: a turn below 1e-9 rad */
            int bad = !(h00 > t) | !(c22 > t * t) | !(det > t * t * t) | !(turn < 4.0), go = state[l] == 0.0;
            double next = bad ? -1.0 : turn < 1e-18 ? 1.0 : 0.0;
            qw[l] = go ? n0 * norm : w;
            qx[l] = go ? n1 * norm : x;
            qy[l] = go ? n2 * norm : y;
            qz[l] = go ? n3 * norm : z;
            steps[l] = go ? (double)step : steps[l];
            state[l] = go ? next : state[l];
        }
        int running = 0;
        for (int l = 0; l < n; l++) running |= state[l] == 0.0;
        if (!running) break;
    }
    for (int l = 0; l < n; l++) {
        ok[l] = state[l] == 1.0 ? (int)steps[l] : -1;
        q[l][0] = qw[l], q[l][1] = qx[l], q[l][2] = qy[l], q[l][3] = qz[l];
        if (ok[l] > 0) quat_to_rotation(q[l], R[l]);
    }
}

int csm_polar3_newton(const double A[9], double q[4], double R[9])
{
    int steps;
    newton_lanes(1, (const double(*)[9])A, (double(*)[4])q, (double(*)[9])R, &steps);
    return steps;
}

void csm_polar3_warm(csm_svd3_fn svd, const double A[9], double q[4], double R[9])
{
    csm_polar3_warm_lanes(svd, 1, (const double(*)[9])A, (double(*)[4])q, (double(*)[9])R);
}

void csm_polar3_warm_lanes(csm_svd3_fn svd, int n, const double (*A)[9], double (*q)[4], double (*R)[9])
{
    int ok[CSM_LANES] = {0};
    if (svd == csm_svd3_fast) {
        double start[CSM_LANES][4];
        int warm[CSM_LANES];
        memcpy(start, q, (size_t)n * sizeof *start);
        for (int l = 0; l < n; l++) {
            double n2 = q[l][0] * q[l][0] + q[l][1] * q[l][1] + q[l][2] * q[l][2] + q[l][3] * q[l][3];
            warm[l] = fabs(n2 - 1.0) < 1e-6;
        }
        newton_lanes(n, A, q, R, ok);
        for (int l = 0; l < n; l++) {
            ok[l] = ok[l] > 0 && warm[l];
            if (!ok[l]) memcpy(q[l], start[l], sizeof start[l]);
        }
    }
    for (int l = 0; l < n; l++) { /* through the SVD where Newton does not serve */
        if (ok[l]) continue;
        double s[3];
        csm_polar3(svd, A[l], R[l], s);
        csm_quat_from_rotation(R[l], q[l]);
    }
}

int csm_pinv_sym3(const double A[9], double rel_tol, double out[9])
{
    double U[9], s[3], V[9];
    csm_svd3_fast(A, U, s, V);
    /* For a symmetric PSD matrix U = V and s >= 0 up to round-off; use |s|. */
    double smax = fabs(s[0]);
    int rank = 0;
    double inv[3];
    for (int k = 0; k < 3; k++) {
        double sk = fabs(s[k]);
        if (smax > 0 && sk > rel_tol * smax) {
            inv[k] = 1.0 / sk;
            rank++;
        } else {
            inv[k] = 0.0;
        }
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            out[3 * r + c] = V[3 * r] * inv[0] * V[3 * c] + V[3 * r + 1] * inv[1] * V[3 * c + 1] +
                             V[3 * r + 2] * inv[2] * V[3 * c + 2];
    return rank;
}
