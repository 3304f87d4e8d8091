/* The conserving corrections and per-cluster gains of csm_goal_pass: what a pass's clamped or weighted
   goals would change of a cluster's momentum and angular momentum, removed. */

#include "kernel_internal.h"
#include "modes.h"

void csm_conserve_frames(csm_world *w, const double *x, double *frame)
{
    const csm_clusters *C = &w->C;
    int32_t k = C->k;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) {
        double *fr = &frame[12 * c];
        int32_t lo = C->offset[c], hi = C->offset[c + 1];
        double M = C->mass[c];
        memset(fr, 0, 12 * sizeof *fr);
        if (lo == hi || !(M > 0)) continue;
        /* about the first member, as in csm_cluster_moments, so nothing cancels far from the
           origin: S = sum w m (x - xbar)(x - xbar)^T = sum w m d d^T - M e e^T, e = xbar - ref */
        const double *ref = &x[3 * C->member[lo]];
        double s[3] = {0, 0, 0}, S[6] = {0, 0, 0, 0, 0, 0};
        for (int32_t j = lo; j < hi; j++) {
            const double *xi = &x[3 * C->member[j]];
            double wm = C->wmass[j], d0 = xi[0] - ref[0], d1 = xi[1] - ref[1], d2 = xi[2] - ref[2];
            s[0] += wm * d0;
            s[1] += wm * d1;
            s[2] += wm * d2;
            S[0] += wm * d0 * d0;
            S[1] += wm * d1 * d1;
            S[2] += wm * d2 * d2;
            S[3] += wm * d0 * d1;
            S[4] += wm * d1 * d2;
            S[5] += wm * d2 * d0;
        }
        double e[3] = {s[0] / M, s[1] / M, s[2] / M};
        for (int a = 0; a < 3; a++) fr[a] = ref[a] + e[a];
        double xx = S[0] - M * e[0] * e[0], yy = S[1] - M * e[1] * e[1], zz = S[2] - M * e[2] * e[2];
        double xy = S[3] - M * e[0] * e[1], yz = S[4] - M * e[1] * e[2], zx = S[5] - M * e[2] * e[0];
        double I[9] = {yy + zz, -xy, -zx, -xy, xx + zz, -yz, -zx, -yz, xx + yy};
        /* a collinear cluster has a singular inertia (no torque about its line arises from
           corrections either), a single particle none at all */
        double tr = I[0] + I[4] + I[8], det = csm_m3_det(I), mean = tr / 3;
        if (!(det > 1e-9 * mean * mean * mean) || csm_m3_inverse(I, &fr[3]) == 0.0) csm_pinv_sym3(I, 1e-12, &fr[3]);
    }
}

/* The members of a cluster whose corrections, positions and rest offsets r pass one keeps for
   pass two (cluster_corrections), on the stack in rows of KEEP_MEMBERS; members past them are
   read again through their particle index. */
enum { KEEP_MEMBERS = 512, KEEP_ROWS = 9 };

/* Pass one of cluster_corrections for a block of 8 memberships whose goals are g, w m their
   weights times keep (0 adds nothing to the sums; where live is given, its false lanes add -0,
   which changes no sum at all): their corrections c_ic = g_ic - x_i
   (the strain clamp of Bargteil-Jones Algorithm 2 line 10 moves g_ic to g + f (x - g), so
   c = (f - 1)(x - g)), and their share of what the projection removes:
   s = sum w m c and, for the angular projection, t = sum w m r x c and sr = sum w m r,
   r = x_ref - xbar_ref. The corrections go to rows (with x, and r for the angular projection:
   rows[KEEP_MEMBERS * q], q = c0, c1, c2, x0, x1, x2, r0, r1, r2) when rows is given, else to
   out (nl of them). Inlined with constant `clamp` and `angular`, so each setting gets its own
   loop. */
static inline __attribute__((always_inline)) void correction_block(
    const double *restrict x, const int32_t *m, const csm_v8d g[3], csm_v8d wm, const csm_v8l *live, double *out,
    int nl, double *rows, const double *restrict x_ref, const double *restrict fr, double limit, double limit2,
    const int clamp, const int angular, csm_v8d acc[9])
{
    const double *q[CSM_LANES];
    csm_v8d_rows(x, m, q);
    csm_v8d xv[3] = {csm_v8d_at(q, 0), csm_v8d_at(q, 1), csm_v8d_at(q, 2)};
    csm_v8d d0 = xv[0] - g[0], d1 = xv[1] - g[1], d2 = xv[2] - g[2];
    csm_v8d k = csm_v8d_set1(-1.0);
    if (clamp) {
        /* both sides computed where a lane needs the pull, one selected (limit / 0 lands only on
           the side not taken); the square root and the division only for a block that has one */
        csm_v8d len2 = d0 * d0 + d1 * d1 + d2 * d2;
        csm_v8l within = len2 <= limit2;
        k = csm_v8d_set1(0.0);
        if (!csm_v8l_all(within)) k = csm_v8d_select(within, k, limit / csm_v8d_sqrt(len2) - 1.0);
    }
    csm_v8d c[3] = {k * d0, k * d1, k * d2};
    if (rows) {
        for (int a = 0; a < 3; a++) {
            memcpy(rows + KEEP_MEMBERS * a, &c[a], sizeof c[a]);
            memcpy(rows + KEEP_MEMBERS * (3 + a), &xv[a], sizeof xv[a]);
        }
    } else if (nl == CSM_LANES) {
        csm_v8d_store3(out, c);
    } else {
        double o[3 * CSM_LANES];
        csm_v8d_store3(o, c);
        memcpy(out, o, 3 * sizeof(double) * (size_t)nl);
    }
    csm_v8d n0 = csm_v8d_set1(-0.0);
#define ADD(a, term) acc[a] += live ? csm_v8d_select(*live, (term), n0) : (term)
    ADD(0, wm * c[0]);
    ADD(1, wm * c[1]);
    ADD(2, wm * c[2]);
    if (angular) {
        csm_v8d_rows(x_ref, m, q);
        csm_v8d r0 = csm_v8d_at(q, 0) - fr[0], r1 = csm_v8d_at(q, 1) - fr[1], r2 = csm_v8d_at(q, 2) - fr[2];
        if (rows) {
            memcpy(rows + KEEP_MEMBERS * 6, &r0, sizeof r0);
            memcpy(rows + KEEP_MEMBERS * 7, &r1, sizeof r1);
            memcpy(rows + KEEP_MEMBERS * 8, &r2, sizeof r2);
        }
        ADD(3, wm * (r1 * c[2] - r2 * c[1]));
        ADD(4, wm * (r2 * c[0] - r0 * c[2]));
        ADD(5, wm * (r0 * c[1] - r1 * c[0]));
        ADD(6, wm * r0);
        ADD(7, wm * r1);
        ADD(8, wm * r2);
    }
#undef ADD
}

/* Pass one of cluster_corrections over cluster c's members, in lanes: the linear goals
   T p + xbar in the blocks of MEMBER_LANES; the quadratic ones (csm_membership_goal) member
   j - lo in lane (j - lo) mod 8, the last block's empty lanes adding -0. A block that ends within
   KEEP_MEMBERS leaves its rows in rows (correction_block). */
static inline __attribute__((always_inline)) void corrections_sum(const csm_clusters *C, const double *x, int32_t c,
                                                                  const double *x_ref, const double *fr, double limit,
                                                                  double *rows, const int clamp, const int angular,
                                                                  double sums[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const double *T = &C->T[9 * c], *com = &C->com[3 * c];
    double limit2 = limit * limit;
    csm_v8d z = csm_v8d_set1(0.0), acc[16] = {z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z};
    if (C->Q) {
        for (int32_t b = lo; b < hi; b += CSM_LANES) {
            int nl = hi - b < CSM_LANES ? (int)(hi - b) : CSM_LANES;
            int32_t m[CSM_LANES];
            double gl[3][CSM_LANES], wl[CSM_LANES];
            for (int l = 0; l < CSM_LANES; l++) {
                int32_t j = b + (l < nl ? l : nl - 1);
                double gj[3];
                csm_membership_goal(C, j, gj);
                for (int a = 0; a < 3; a++) gl[a][l] = gj[a];
                m[l] = C->member[j];
                wl[l] = C->wmass[j];
            }
            csm_v8d g[3] = {csm_v8d_load(gl[0]), csm_v8d_load(gl[1]), csm_v8d_load(gl[2])};
            csm_v8l live = (csm_v8l){0, 1, 2, 3, 4, 5, 6, 7} < (int64_t)nl;
            double *keep = b - lo + CSM_LANES <= KEEP_MEMBERS ? rows + (b - lo) : NULL;
            correction_block(x, m, g, csm_v8d_load(wl), &live, &C->wgoal[3 * b], nl, keep, x_ref, fr, limit, limit2,
                             clamp, angular, acc);
        }
    } else {
        double *out = &C->wgoal[3 * lo];
        int nl = hi - lo < CSM_LANES ? (int)(hi - lo) : CSM_LANES;
#define CORRECTION(m, pp, wm, keep, o)                                                                                 \
    do {                                                                                                               \
        csm_v8d rp_[3];                                                                                                \
        csm_v8d_load3(pp, rp_);                                                                                        \
        csm_v8d gc_[3] = {T[0] * rp_[0] + T[1] * rp_[1] + T[2] * rp_[2] + com[0],                                      \
                          T[3] * rp_[0] + T[4] * rp_[1] + T[5] * rp_[2] + com[1],                                      \
                          T[6] * rp_[0] + T[7] * rp_[1] + T[8] * rp_[2] + com[2]};                                     \
        correction_block(x, m, gc_, csm_v8d_load(wm) * (keep), NULL, out + 3 * (o), nl,                                \
                         (o) + CSM_LANES <= KEEP_MEMBERS ? rows + (o) : NULL, x_ref, fr, limit, limit2, clamp,         \
                         angular, acc);                                                                                \
    } while (0)
        MEMBER_LANES(C->member, C->p, C->wmass, lo, hi, CORRECTION);
#undef CORRECTION
    }
    csm_v8d_sums(acc, 9, sums);
}

/* c' = c - mean - omega x r and out = w (x + gain c') (cluster_corrections' pass two), on scalars
   or on vectors alike: r = x_ref - xbar_ref taken per member (not omega x x_ref less a constant,
   which would cancel far from the origin). */
#define CORRECTED(c0, c1, c2, x0, x1, x2, r0, r1, r2, wgt, out)                                                        \
    do {                                                                                                               \
        c0 = c0 - m0, c1 = c1 - m1, c2 = c2 - m2;                                                                      \
        if (angular) {                                                                                                 \
            c0 -= o1 * (r2) - o2 * (r1);                                                                               \
            c1 -= o2 * (r0) - o0 * (r2);                                                                               \
            c2 -= o0 * (r1) - o1 * (r0);                                                                               \
        }                                                                                                              \
        out[0] = (wgt) * ((x0) + gain * c0);                                                                           \
        out[1] = (wgt) * ((x1) + gain * c1);                                                                           \
        out[2] = (wgt) * ((x2) + gain * c2);                                                                           \
    } while (0)

/* Cluster c's share of every member's out_i (csm_goal_pass): pass one finds the corrections and
   sums what the projection removes, pass two removes it, a constant `mean` and a rotation
   omega x r, and weighs: out = w_ic (x_i + gain_c c'_ic). Pass two takes the first KEEP_MEMBERS
   members' corrections, positions and r from the rows pass one kept, 8 at a time; the rest from
   the corrections pass one wrote to out and x and x_ref read again. Compiled for each
   instruction set (simd.h). */
CSM_CLONES static void cluster_corrections(csm_clusters *C, const double *x, int32_t c, const csm_goal_pass *pass,
                                           int project)
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1], n = hi - lo;
    const int32_t *member = C->member;
    double *out = C->wgoal, M = C->mass[c], gain = pass->gain ? pass->gain[c] : 1.0;
    double limit = pass->gamma * C->width[c];
    int clamp = pass->gamma > 0, angular = project && pass->conserve == CSM_CONSERVE_ANGULAR;
    const double *fr = angular ? &pass->frame[12 * c] : NULL, *x_ref = pass->x_ref;
    double sums[9], rows[KEEP_ROWS * KEEP_MEMBERS];
    if (angular)
        if (clamp) corrections_sum(C, x, c, x_ref, fr, limit, rows, 1, 1, sums);
        else corrections_sum(C, x, c, x_ref, fr, limit, rows, 0, 1, sums);
    else if (clamp) corrections_sum(C, x, c, x_ref, fr, limit, rows, 1, 0, sums);
    else corrections_sum(C, x, c, x_ref, fr, limit, rows, 0, 0, sums);
    double mean[3] = {0, 0, 0}, omega[3] = {0, 0, 0};
    if (project && M > 0)
        for (int a = 0; a < 3; a++) mean[a] = sums[a] / M;
    if (angular) {
        /* the torque of the corrections once their mean is gone: t - (sum w m r) x mean */
        double srm[3], t[3];
        csm_v3_cross(&sums[6], mean, srm);
        for (int a = 0; a < 3; a++) t[a] = sums[3 + a] - srm[a];
        csm_m3_mul_v3(&fr[3], t, omega);
    }
    const double *restrict weight = C->weight;
    double m0 = mean[0], m1 = mean[1], m2 = mean[2], o0 = omega[0], o1 = omega[1], o2 = omega[2];
    double f0 = angular ? fr[0] : 0, f1 = angular ? fr[1] : 0, f2 = angular ? fr[2] : 0;
    /* the kept members, 8 at a time; the last 8 end at the last kept member (written twice, the
       same), or, in a cluster smaller than 8, its padded lanes are left out */
    int32_t kept = n < KEEP_MEMBERS ? n : KEEP_MEMBERS;
    for (int32_t t = 0; t < kept; t += CSM_LANES) {
        int32_t s = t + CSM_LANES <= kept || kept < CSM_LANES ? t : kept - CSM_LANES;
        const double *row = rows + s;
        csm_v8d v[KEEP_ROWS];
        for (int q = 0; q < (angular ? 9 : 6); q++) v[q] = csm_v8d_load(row + KEEP_MEMBERS * q);
        csm_v8d wgt, g[3];
        if (kept >= CSM_LANES) {
            wgt = csm_v8d_load(&weight[lo + s]);
        } else {
            double wl[CSM_LANES] = {0};
            memcpy(wl, &weight[lo], sizeof(double) * (size_t)kept);
            wgt = csm_v8d_load(wl);
        }
        CORRECTED(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], wgt, g);
        if (kept >= CSM_LANES) {
            csm_v8d_store3(&out[3 * (lo + s)], g);
        } else {
            double o[3 * CSM_LANES];
            csm_v8d_store3(o, g);
            memcpy(&out[3 * lo], o, 3 * sizeof(double) * (size_t)kept);
        }
    }
#pragma omp simd
    for (int32_t j = lo + kept; j < hi; j++) {
        int32_t i = 3 * member[j];
        double c0 = out[3 * j], c1 = out[3 * j + 1], c2 = out[3 * j + 2];
        const double *xr = angular ? &x_ref[i] : &x[i];
        CORRECTED(c0, c1, c2, x[i], x[i + 1], x[i + 2], xr[0] - f0, xr[1] - f1, xr[2] - f2, weight[j], (&out[3 * j]));
    }
}
#undef CORRECTED

int csm_goal_pass_conserve(const csm_world *w, const csm_goal_pass *pass, const double *x)
{
    /* Unclamped goals keep their cluster's centre of mass (sum w m p = 0, and the quadratic terms
       are centred), so LINEAR has nothing to remove from them, and a Procrustes rotation's rigid
       goals exert no torque about the positions they were fitted at. */
    int conserve = pass->conserve;
    if (pass->gamma == 0 && (conserve == CSM_CONSERVE_LINEAR ||
                             (conserve == CSM_CONSERVE_ANGULAR && w->rotation->torque_free &&
                              w->mode == CSM_MODE_RIGID && pass->x_ref == x)))
        return CSM_CONSERVE_NONE;
    return conserve;
}

void csm_fit_goals_pass(csm_world *w, const double *x, const csm_goal_pass *pass, double *out)
{
    int conserve = csm_goal_pass_conserve(w, pass, x);
    if (conserve == CSM_CONSERVE_NONE && !pass->gain) {
        csm_kernel_fit_goals_relax(w, x, pass->gamma, out, pass->relax, pass->relax_x);
        return;
    }
    csm_mode_ready(w);
    csm_clusters *C = &w->C;
    const csm_cluster_blocks *B = csm_kernel_blocks(w);
    int project = conserve != CSM_CONSERVE_NONE;
    csm_goal_pass p = *pass;
    p.conserve = conserve;
#pragma omp parallel
    {
        int32_t lo, hi;
        csm_kernel_share(C, B, &lo, &hi);
        for (int32_t b = lo; b < hi; b = block_end(b, hi)) {
            int n = block_end(b, hi) - b;
            csm_kernel_fit_lanes(w, C, B, x, b, n);
            for (int32_t c = b; c < b + n; c++) cluster_corrections(C, x, c, &p, project);
        }
#pragma omp barrier
        csm_kernel_gather_goals(w, x, out, p.relax, p.relax_x);
    }
}
