/* The fits: each cluster's centre and moments (Falkenstein Eq 7), its deformation gradient, rotation and
   goal transform (Falkenstein Eqs 3, 9 and 16), one cluster at a time or CSM_LANES side by side. */

#include "kernel_internal.h"
#include "elastic.h"
#include "modes.h"

/* A block of 8 members' shares of csm_cluster_moments' sums: sum w m x (3), sum w m p (3) and
   sum w m (x - r) p^T (9). */
static inline __attribute__((always_inline)) void moment_block(const double *restrict x, const int32_t *m,
                                                                const double *pp, const double *wmass, csm_v8d keep,
                                                                const double r[3], csm_v8d acc[15])
{
    const double *q[CSM_LANES];
    csm_v8d pv[3], wm = csm_v8d_load(wmass) * keep;
    csm_v8d_load3(pp, pv);
    csm_v8d_rows(x, m, q);
    csm_v8d x0 = csm_v8d_at(q, 0), x1 = csm_v8d_at(q, 1), x2 = csm_v8d_at(q, 2);
    csm_v8d d0 = wm * (x0 - r[0]), d1 = wm * (x1 - r[1]), d2 = wm * (x2 - r[2]);
    acc[0] += wm * x0;
    acc[1] += wm * x1;
    acc[2] += wm * x2;
    acc[3] += wm * pv[0];
    acc[4] += wm * pv[1];
    acc[5] += wm * pv[2];
    acc[6] += d0 * pv[0];
    acc[7] += d0 * pv[1];
    acc[8] += d0 * pv[2];
    acc[9] += d1 * pv[0];
    acc[10] += d1 * pv[1];
    acc[11] += d1 * pv[2];
    acc[12] += d2 * pv[0];
    acc[13] += d2 * pv[1];
    acc[14] += d2 * pv[2];
}

/* The sums of csm_cluster_moments over members [lo, hi), in lanes (MEMBER_LANES). */
CSM_CLONES static void moments_sums(const int32_t *member, const double *x, const double *p, const double *wmass,
                                    int32_t lo, int32_t hi, const double r[3], double out[15])
{
    csm_v8d z = csm_v8d_set1(0.0), acc[16] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
#define MOMENT(m, pp, wm, keep, o) moment_block(x, m, pp, wm, keep, r, acc)
    MEMBER_LANES(member, p, wmass, lo, hi, MOMENT);
#undef MOMENT
    csm_v8d_sums(acc, 15, out);
}

/* x-bar and A_xr from the sums s of moment_block about the reference point r (Falkenstein Eq 7):
   A_xr = sum w m (x - xbar) p^T = sum w m d p^T - (xbar - r) sum w m p^T with d = x - r, where the
   last sum is zero up to round-off (p_ic have zero weighted mean, Falkenstein Sec 3.2). */
static void moments_from_sums(double M, const double r[3], const double s[15], double com[3], double Axr[9])
{
    double r0 = r[0], r1 = r[1], r2 = r[2];
    if (M > 0) {
        com[0] = s[0] / M;
        com[1] = s[1] / M;
        com[2] = s[2] / M;
    } else {
        com[0] = com[1] = com[2] = 0;
    }
    double e0 = com[0] - r0, e1 = com[1] - r1, e2 = com[2] - r2;
    Axr[0] = s[6] - e0 * s[3];
    Axr[1] = s[7] - e0 * s[4];
    Axr[2] = s[8] - e0 * s[5];
    Axr[3] = s[9] - e1 * s[3];
    Axr[4] = s[10] - e1 * s[4];
    Axr[5] = s[11] - e1 * s[5];
    Axr[6] = s[12] - e2 * s[3];
    Axr[7] = s[13] - e2 * s[4];
    Axr[8] = s[14] - e2 * s[5];
}

void csm_cluster_moments(const csm_clusters *C, const double *x, int32_t c, double com[3], double Axr[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    if (lo == hi) {
        com[0] = com[1] = com[2] = 0;
        for (int a = 0; a < 9; a++) Axr[a] = 0;
        return;
    }
    /* One pass about a reference point, the first member, so that nothing cancels far from the
       origin. */
    const double *ref = &x[3 * C->member[lo]];
    double s[15];
    moments_sums(C->member, x, C->p, C->wmass, lo, hi, ref, s);
    moments_from_sums(C->mass[c], ref, s, com, Axr);
}

/* solver.volume split: the goal transform R F^p becomes the best similarity s R F^p, with
   s = argmin sum w m |x - xbar - s R F^p p|^2 = tr((R F^p)^T A_xr) / tr(F^p A_rr F^pT). The shape
   springs then hold no volume (a uniform scaling costs nothing) and csm_volume_project holds it.
   An inverted or empty fit (s <= 0) keeps the rigid goal. */
void csm_kernel_similarity(const csm_clusters *C, int32_t c, const double Axr[9], const double Fp[9], double T[9])
{
    double A[9], num = 0;
    cluster_arr(C, c, A);
    for (int a = 0; a < 9; a++) num += T[a] * Axr[a];
    double s = num / plastic_moment(A, Fp);
    if (s > 0 && isfinite(s))
        for (int a = 0; a < 9; a++) T[a] *= s;
}

/* A cluster's fit up to its rotation: the centre, the moments, and the two matrices a rotation
   plugin may decompose. */
typedef struct fit_part {
    double com[3], Axr[9], Fe[9], Apq[9];
    int elastic; /* no plastic flow yet: F^e = F, A_pq = A_xr, T = R */
} fit_part;

/* The fit of cluster c from its moments in f->com and f->Axr. */
static void fit_begin(csm_clusters *C, int32_t c, fit_part *f)
{
    double *F = &C->F[9 * c];
    const double *Fp = &C->Fp[9 * c];
    csm_m3_mul(f->Axr, &C->A_rr_inv[9 * c], F); /* Falkenstein Eq 3 */
    f->elastic = csm_m3_is_identity(Fp);
    if (f->elastic) {
        memcpy(f->Fe, F, sizeof f->Fe);
        memcpy(f->Apq, f->Axr, sizeof f->Apq);
    } else {
        double Fp_inv[9];
        if (csm_m3_inverse(Fp, Fp_inv) == 0.0) csm_m3_identity(Fp_inv);
        csm_m3_mul(F, Fp_inv, f->Fe);     /* Falkenstein Eq 9 / 15 */
        csm_m3_mul_bt(f->Axr, Fp, f->Apq); /* A_pq of the plastic rest shape q = F^p p */
    }
}

/* The rest of the fit once C->R holds the cluster's rotation: the goal transform T and the centre. */
static void fit_end(const csm_world *w, csm_clusters *C, const double *x, int32_t c, const fit_part *f)
{
    const double *R = &C->R[9 * c], *Fp = &C->Fp[9 * c];
    double *T = &C->T[9 * c];
    if (w->mode == CSM_MODE_LINEAR && C->rank[c] == 3 && csm_m3_det(f->Fe) > 0) {
        csm_mode_linear(w->beta, f->Fe, R, Fp, T);
    } else if (f->elastic) {
        memcpy(T, R, 9 * sizeof *T);
    } else {
        csm_m3_mul(R, Fp, T); /* Falkenstein Eq 16: g = R F^p p + xbar */
    }
    if (w->volume == CSM_VOLUME_SPLIT && w->mode == CSM_MODE_RIGID) csm_kernel_similarity(C, c, f->Axr, Fp, T);
    if (C->Q) {
        if (w->fit_energy && csm_elastic_on(w)) {
            /* the goals whose springs give the continuum energy's gradient (elastic.c) */
            double k = csm_elastic_stiffness(w, w->spring_modulus, c);
            csm_elastic_cluster(w, c, x, NULL, f->com, R, Fp, w->spring_modulus, k, T, &C->Q[18 * c],
                                C->S ? &C->S[9 * c] : NULL, NULL);
        } else if (w->mode == CSM_MODE_QUADRATIC) {
            csm_mode_quadratic(w->beta, C, x, f->com, c);
        } else {
            memset(&C->Q[18 * c], 0, 18 * sizeof *C->Q);
        }
        if (C->S && !(w->fit_energy && csm_elastic_on(w))) memset(&C->S[9 * c], 0, 9 * sizeof *C->S);
    }
    memcpy(&C->com[3 * c], f->com, sizeof f->com);
}

/* The fit of cluster c from its moments in f, its rotation from the rotation plugin. */
static void fit_from_moments(const csm_world *w, csm_clusters *C, const double *x, int32_t c, fit_part *f)
{
    fit_begin(C, c, f);
    csm_polar_ctx polar = {w->svd, &C->q[4 * c]};
    w->rotation->extract(&polar, f->Apq, f->Fe, &C->R[9 * c]);
    fit_end(w, C, x, c, f);
}

void csm_cluster_fit(const csm_world *w, csm_clusters *C, const double *x, int32_t c)
{
    fit_part f;
    csm_cluster_moments(C, x, c, f.com, f.Axr);
    fit_from_moments(w, C, x, c, &f);
}

/* csm_cluster_fit of clusters [c, c + n), n <= CSM_LANES, their polar decompositions side by
   side in vector lanes when the rotation plugin says which matrix it decomposes (the same bits).
   When c starts a block of B that holds its clusters one per lane (c a multiple of CSM_LANES and
   n the block's clusters), their moments are taken in those lanes: the same sums, added in
   member order rather than MEMBER_LANES's. */
void csm_kernel_fit_lanes(const csm_world *w, csm_clusters *C, const csm_cluster_blocks *B, const double *x, int32_t c,
                      int n)
{
    fit_part f[CSM_LANES];
    if (starts_block(B, c)) {
        double s[15][CSM_LANES], r[3][CSM_LANES];
        csm_kernel_moments_across(B, c / CSM_LANES, x, s, r);
        for (int l = 0; l < n; l++) {
            double sl[15], rl[3] = {r[0][l], r[1][l], r[2][l]};
            for (int q = 0; q < 15; q++) sl[q] = s[q][l];
            if (C->offset[c + l] == C->offset[c + l + 1]) csm_cluster_moments(C, x, c + l, f[l].com, f[l].Axr);
            else moments_from_sums(C->mass[c + l], rl, sl, f[l].com, f[l].Axr);
        }
    } else {
        for (int l = 0; l < n; l++) csm_cluster_moments(C, x, c + l, f[l].com, f[l].Axr);
    }
    int of = w->rotation->version >= 2 ? w->rotation->polar_of : 0;
    if (of != CSM_POLAR_OF_APQ && of != CSM_POLAR_OF_FE) {
        for (int l = 0; l < n; l++) fit_from_moments(w, C, x, c + l, &f[l]);
        return;
    }
    double A[CSM_LANES][9];
    for (int l = 0; l < n; l++) {
        fit_begin(C, c + l, &f[l]);
        memcpy(A[l], of == CSM_POLAR_OF_APQ ? f[l].Apq : f[l].Fe, sizeof A[l]);
    }
    csm_polar3_warm_lanes(w->svd, n, (const double(*)[9])A, (double(*)[4]) & C->q[4 * c], (double(*)[9]) & C->R[9 * c]);
    for (int l = 0; l < n; l++) fit_end(w, C, x, c + l, &f[l]);
}

void csm_fit_all(csm_world *w, const double *x)
{
    csm_mode_ready(w);
    csm_clusters *C = &w->C;
    const csm_cluster_blocks *B = csm_kernel_blocks(w);
#pragma omp parallel
    {
        int32_t lo, hi;
        csm_kernel_share(C, B, &lo, &hi);
        for (int32_t c = lo; c < hi; c = block_end(c, hi)) csm_kernel_fit_lanes(w, C, B, x, c, block_end(c, hi) - c);
    }
}
