/* The goals: each membership's goal with Bargteil-Jones's strain clamp, and each particle's gathered
   goal (Falkenstein Eq 8). */

#include "kernel_internal.h"
#include "modes.h"

/* Cluster c's share of every member's goal, w_ic g_ic, into C->wgoal (cluster order). g_ic is
   pulled towards x_i by the strain-limit clamp of Bargteil-Jones Algorithm 2 line 10,
   g_ic + min(gamma / beta, 1)(x_i - g_ic) with beta = |x_i - g_ic| / width_c (Bargteil-Jones Eq 4), written
   without dividing by beta: the allowed stretch is gamma width_c, and a goal beyond it is pulled
   back onto it. Compiled for each instruction set (simd.h); each membership's goal is its own, so
   the vectors change no bit. */
CSM_CLONES static void cluster_goals(csm_clusters *C, const double *x, int32_t c, double gamma)
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const int32_t *member = C->member;
    const double *weight = C->weight, *p = C->p;
    double *out = C->wgoal;
    if (C->Q) {
        for (int32_t j = lo; j < hi; j++) {
            double g[3], wgt = weight[j];
            csm_membership_goal(C, j, g);
            if (gamma > 0) {
                const double *xi = &x[3 * member[j]];
                double d[3] = {xi[0] - g[0], xi[1] - g[1], xi[2] - g[2]};
                double len = csm_v3_norm(d), limit = gamma * C->width[c];
                double f = len <= limit ? 1.0 : limit / len;
                for (int a = 0; a < 3; a++) g[a] += f * d[a];
            }
            for (int a = 0; a < 3; a++) out[3 * j + a] = wgt * g[a];
        }
        return;
    }
    const double *T = &C->T[9 * c], *com = &C->com[3 * c];
    double t0 = T[0], t1 = T[1], t2 = T[2], t3 = T[3], t4 = T[4], t5 = T[5], t6 = T[6], t7 = T[7], t8 = T[8];
    double c0 = com[0], c1 = com[1], c2 = com[2];
    if (gamma > 0) {
        double limit = gamma * C->width[c], limit2 = limit * limit;
#pragma omp simd
        for (int32_t j = lo; j < hi; j++) {
            const double *pj = &p[3 * j], *xi = &x[3 * member[j]];
            double g0 = t0 * pj[0] + t1 * pj[1] + t2 * pj[2] + c0;
            double g1 = t3 * pj[0] + t4 * pj[1] + t5 * pj[2] + c1;
            double g2 = t6 * pj[0] + t7 * pj[1] + t8 * pj[2] + c2;
            double d0 = xi[0] - g0, d1 = xi[1] - g1, d2 = xi[2] - g2;
            double len2 = d0 * d0 + d1 * d1 + d2 * d2;
            /* both sides computed, one selected: no branch for the clamp to mispredict (limit / 0
               lands only on the side not taken) */
            double clamp = limit / sqrt(len2), f = len2 <= limit2 ? 1.0 : clamp;
            double wgt = weight[j];
            out[3 * j] = wgt * (g0 + f * d0);
            out[3 * j + 1] = wgt * (g1 + f * d1);
            out[3 * j + 2] = wgt * (g2 + f * d2);
        }
    } else {
#pragma omp simd
        for (int32_t j = lo; j < hi; j++) {
            const double *pj = &p[3 * j];
            double wgt = weight[j];
            out[3 * j] = wgt * (t0 * pj[0] + t1 * pj[1] + t2 * pj[2] + c0);
            out[3 * j + 1] = wgt * (t3 * pj[0] + t4 * pj[1] + t5 * pj[2] + c1);
            out[3 * j + 2] = wgt * (t6 * pj[0] + t7 * pj[1] + t8 * pj[2] + c2);
        }
    }
}

/* cluster_goals of the clusters of block b of B, one per lane, from the block's copy of their
   members: each membership's goal rounds as in cluster_goals, the same bits. */
CSM_CLONES static void goals_across(csm_clusters *C, const csm_cluster_blocks *B, int32_t b, const double *x,
                                    double gamma)
{
    int32_t f = B->first[b], n = B->first[b + 1] - f, c0 = CSM_LANES * b;
    const int32_t *mem = &B->member[CSM_LANES * f];
    const double *weight = &B->weight[CSM_LANES * f], *p = &B->p[3 * CSM_LANES * f];
    double tl[12][CSM_LANES], lim[CSM_LANES], sink[3];
    double *o[CSM_LANES];
    int32_t len[CSM_LANES];
    for (int l = 0; l < CSM_LANES; l++) {
        int32_t c = c0 + l < C->k ? c0 + l : c0;
        for (int a = 0; a < 9; a++) tl[a][l] = C->T[9 * c + a];
        for (int a = 0; a < 3; a++) tl[9 + a][l] = C->com[3 * c + a];
        lim[l] = gamma * C->width[c];
        len[l] = c0 + l < C->k ? C->offset[c + 1] - C->offset[c] : 0;
        o[l] = &C->wgoal[3 * (size_t)C->offset[c]];
    }
    csm_v8d t0 = csm_v8d_load(tl[0]), t1 = csm_v8d_load(tl[1]), t2 = csm_v8d_load(tl[2]);
    csm_v8d t3 = csm_v8d_load(tl[3]), t4 = csm_v8d_load(tl[4]), t5 = csm_v8d_load(tl[5]);
    csm_v8d t6 = csm_v8d_load(tl[6]), t7 = csm_v8d_load(tl[7]), t8 = csm_v8d_load(tl[8]);
    csm_v8d e0 = csm_v8d_load(tl[9]), e1 = csm_v8d_load(tl[10]), e2 = csm_v8d_load(tl[11]);
    csm_v8d limit = csm_v8d_load(lim), limit2 = limit * limit, one = csm_v8d_set1(1.0);
    const double *q[CSM_LANES];
    for (int32_t t = 0; t < n; t++) {
        const double *pt = p + 3 * CSM_LANES * t;
        csm_v8d p0 = csm_v8d_load(pt), p1 = csm_v8d_load(pt + CSM_LANES), p2 = csm_v8d_load(pt + 2 * CSM_LANES);
        csm_v8d wgt = csm_v8d_load(weight + CSM_LANES * t);
        csm_v8d g0 = t0 * p0 + t1 * p1 + t2 * p2 + e0;
        csm_v8d g1 = t3 * p0 + t4 * p1 + t5 * p2 + e1;
        csm_v8d g2 = t6 * p0 + t7 * p1 + t8 * p2 + e2;
        if (gamma > 0) {
            csm_v8d_rows(x, mem + CSM_LANES * t, q);
            csm_v8d d0 = csm_v8d_at(q, 0) - g0, d1 = csm_v8d_at(q, 1) - g1, d2 = csm_v8d_at(q, 2) - g2;
            csm_v8d len2 = d0 * d0 + d1 * d1 + d2 * d2;
            csm_v8d f = csm_v8d_select(len2 <= limit2, one, limit / csm_v8d_sqrt(len2));
            g0 = g0 + f * d0;
            g1 = g1 + f * d1;
            g2 = g2 + f * d2;
        }
        g0 = wgt * g0, g1 = wgt * g1, g2 = wgt * g2;
        for (int l = 0; l < CSM_LANES; l++) { /* a slot past a cluster's end writes into sink */
            double *to = t < len[l] ? o[l] + 3 * (size_t)t : sink;
            to[0] = g0[l];
            to[1] = g1[l];
            to[2] = g2[l];
        }
    }
}

/* g_i = sum_c w_ic g_ic (Falkenstein Eq 8): a gather over particle i's memberships, in
   cluster order, so the sum is the same for any thread count. A particle in no cluster feels
   no internal force: its goal is where it is. With relax_x, the particle then moves to
   relax g_i + (1 - relax) relax_x_i unless its inverse mass is 0 (csm_goal_pass). */
void csm_kernel_gather_goals(const csm_world *w, const double *x, double *out, double relax, double *relax_x)
{
    const csm_clusters *C = &w->C;
    const int32_t *poff = C->poff, *pmember = C->pmember;
    const double *wg = C->wgoal, *inv_mass = w->P.inv_mass;
    int32_t n = w->P.n;
#pragma omp for schedule(static)
    for (int32_t i = 0; i < n; i++) {
        int32_t lo = poff[i], hi = poff[i + 1];
        double g0 = x[3 * i], g1 = x[3 * i + 1], g2 = x[3 * i + 2];
        if (lo < hi) {
            g0 = g1 = g2 = 0;
            for (int32_t s = lo; s < hi; s++) {
                const double *v = &wg[3 * pmember[s]];
                g0 += v[0];
                g1 += v[1];
                g2 += v[2];
            }
        }
        out[3 * i] = g0;
        out[3 * i + 1] = g1;
        out[3 * i + 2] = g2;
        if (relax_x && inv_mass[i] != 0.0) {
            double *xi = &relax_x[3 * i];
            xi[0] = relax * g0 + (1.0 - relax) * xi[0];
            xi[1] = relax * g1 + (1.0 - relax) * xi[1];
            xi[2] = relax * g2 + (1.0 - relax) * xi[2];
        }
    }
}

void csm_goals_all(csm_world *w, const double *x, double gamma, double *out)
{
    csm_clusters *C = &w->C;
#pragma omp parallel
    {
        int32_t lo, hi;
        csm_kernel_share(C, NULL, &lo, &hi);
        for (int32_t c = lo; c < hi; c++) cluster_goals(C, x, c, gamma);
#pragma omp barrier
        csm_kernel_gather_goals(w, x, out, 0.0, NULL);
    }
}

/* csm_fit_goals_all, and the Jacobi update of csm_goal_pass's relax_x when not NULL. */
void csm_kernel_fit_goals_relax(csm_world *w, const double *x, double gamma, double *out, double relax, double *relax_x)
{
    csm_mode_ready(w);
    csm_clusters *C = &w->C;
    const csm_cluster_blocks *B = csm_kernel_blocks(w);
#pragma omp parallel
    {
        int32_t lo, hi;
        csm_kernel_share(C, B, &lo, &hi);
        for (int32_t b = lo; b < hi; b = block_end(b, hi)) {
            int n = block_end(b, hi) - b;
            csm_kernel_fit_lanes(w, C, B, x, b, n);
            if (!C->Q && starts_block(B, b))
                goals_across(C, B, b / CSM_LANES, x, gamma);
            else
                for (int32_t c = b; c < b + n; c++) cluster_goals(C, x, c, gamma);
        }
#pragma omp barrier
        csm_kernel_gather_goals(w, x, out, relax, relax_x);
    }
}

void csm_fit_goals_all(csm_world *w, const double *x, double gamma, double *out)
{
    csm_kernel_fit_goals_relax(w, x, gamma, out, 0.0, NULL);
}
