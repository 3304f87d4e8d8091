/* 3x3 singular value decomposition and polar decomposition.

   Both backends return the *signed* SVD A = U diag(s) V^T with U and V proper rotations
   (det = +1), s[0] >= s[1] >= |s[2]|, and s[2] < 0 exactly when det A < 0. The rotation of the
   polar decomposition is then R = U V^T, always a proper rotation: an inverted cluster
   (det F < 0) yields the nearest rotation, never a reflection (docs/DESIGN.md errata). */
#ifndef CSM_SVD3_H
#define CSM_SVD3_H

typedef void (*csm_svd3_fn)(const double A[9], double U[9], double s[3], double V[9]);

/* Fast backend: Jacobi eigen-decomposition of A^T A for V, polished by one-sided Jacobi on A V
   (accurate small singular values), then a Givens QR of A V for U and s, so U is orthogonal by
   construction even for rank-deficient A. */
void csm_svd3_fast(const double A[9], double U[9], double s[3], double V[9]);

/* Reference backend: LAPACKE dgesvd, with signs arranged as above. */
void csm_svd3_lapacke(const double A[9], double U[9], double s[3], double V[9]);

/* Rotation of the polar decomposition A = R S through the given backend. */
void csm_polar3(csm_svd3_fn svd, const double A[9], double R[9], double s[3]);

/* The same rotation (the R in SO(3) maximising tr(R^T A)) by Newton's method on the rotation,
   started from the unit quaternion q (w, x, y, z) and leaving the result there. Each step
   solves (tr(S) I - S) omega = axial(M - M^T) for M = R^T A, S its symmetric part, and turns
   R by omega; near the answer the error squares every step, so a warm start from the last
   step's rotation takes one to three steps. Returns the steps taken, or -1 when
   tr(S) I - S is not positive definite on the way (a collinear or nearly inverted A, where
   the maximiser is not isolated), a step turns by 2 rad or more (the start was far from the
   answer) or 16 steps do not converge; R and q are then unspecified. */
int csm_polar3_newton(const double A[9], double q[4], double R[9]);

/* R = polar(A) warm started from q (csm_polar3_newton) when svd is the fast backend and q is a
   unit quaternion, else (or when Newton fails) through svd; q is left holding R. The LAPACKE
   backend is always used cold, as the reference. */
void csm_polar3_warm(csm_svd3_fn svd, const double A[9], double q[4], double R[9]);

/* csm_polar3_warm of n <= CSM_LANES (simd.h) matrices A[l], their quaternions q[l] and rotations
   R[l], the Newton steps of all of them side by side in vector lanes: the same bits as n calls. */
void csm_polar3_warm_lanes(csm_svd3_fn svd, int n, const double (*A)[9], double (*q)[4], double (*R)[9]);

/* Unit quaternion (w, x, y, z) of a rotation matrix and back (Hamilton convention). */
void csm_quat_from_rotation(const double R[9], double q[4]);
void csm_quat_to_rotation(const double q[4], double R[9]);

/* Moore-Penrose pseudo-inverse of a symmetric positive semi-definite matrix (A_rr): singular
   values below rel_tol * s_max are treated as zero. Returns the rank kept (3 for a proper
   volume, 2 planar, 1 collinear, 0 a single point). */
int csm_pinv_sym3(const double A[9], double rel_tol, double out[9]);

#endif
