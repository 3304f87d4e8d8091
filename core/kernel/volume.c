/* solver.volume split: each cluster's volume as a constraint of its own. */

#include "kernel_internal.h"

#include "elastic.h"

/* The compliance alpha~_c = 1 / (kappa_c V_c h^2) of cluster c's volume term, V_c = m_c / rho:
   kappa from solver.bulk_modulus, or, with 0, the bulk stiffness the coupled springs have at
   F^p = 1. Those store 1/2 k_c tr(D A_rr D^T), D = F - R, which for a dilation F = (1 + e) 1 is
   1/2 k_c e^2 tr A_rr = 1/2 kappa V_c (3 e)^2: kappa_c V_c = k_c tr A_rr / 9, with shear modulus
   mu = k_c tr A_rr / (6 V_c) the pair of a Poisson's ratio of 0. Under the continuum energy, whose
   k_c bounds its stiffness rather than calibrating it, kappa = 2 mu / 3 of the cluster's mu, the
   coupled energy's lambda = 0 (before, a cube of modulus alone pressed between plates took
   Poisson's ratio 0.296 split against 0 coupled). Springs of no stiffness (pbd)
   hold volume as they hold shape, as a hard constraint: compliance 0. */
static double volume_compliance(const csm_world *w, int32_t c, double h)
{
    const csm_clusters *C = &w->C;
    if (w->bulk_modulus > 0) return csm_cluster_density(w, c) / (w->bulk_modulus * C->mass[c] * h * h);
    if (csm_elastic_volume_on(w)) { /* the continuum energy's lambda = 0: kappa = 2 mu / 3, as coupled */
        double mu, lambda;
        csm_elastic_lame(w, w->spring_modulus, c, &mu, &lambda);
        return mu > 0 ? 1.5 * csm_cluster_density(w, c) / (mu * C->mass[c] * h * h) : 0.0;
    }
    static const double identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    double A[9], k = csm_spring_stiffness(w, c, identity, h);
    cluster_arr(C, c, A);
    double kV = k * (A[0] + A[4] + A[8]) / 9.0;
    return kV > 0 ? 1.0 / (kV * h * h) : 0.0;
}

/* 1/2 kappa_c V_c (J - 1)^2, cluster c's volume energy at det F = J (0 when coupled, for a
   cluster without a volume, and for a hard constraint). */
double csm_kernel_volume_energy(const csm_world *w, int32_t c, double J, double h)
{
    const csm_clusters *C = &w->C;
    if (w->volume != CSM_VOLUME_SPLIT || C->rank[c] < 3 || !(C->mass[c] > 0) || !(csm_cluster_density(w, c) > 0))
        return 0.0;
    double compliance = volume_compliance(w, c, h);
    return compliance > 0 ? 0.5 * (J - 1) * (J - 1) / (compliance * h * h) : 0.0;
}

double csm_kernel_volume_det(const csm_world *w, const double *x, int32_t c, const double Flinear[9])
{
    double F[9];
    if (csm_elastic_volume_on(w) && csm_elastic_mean_gradient(w, x, c, F)) return csm_m3_det(F);
    return csm_m3_det(Flinear);
}

double csm_volume_energy(const csm_world *w, double h)
{
    double e = 0;
    if (w->volume != CSM_VOLUME_SPLIT) return 0.0;
    for (int32_t c = 0; c < w->C.k; c++)
        e += csm_kernel_volume_energy(w, c, csm_kernel_volume_det(w, w->P.x, c, &w->C.F[9 * c]), h);
    return e;
}

/* The same step where the continuum energy's clusters hold the volume (csm_elastic_volume_on):
   C = det F - 1 with F = A~ H_c^T + X, the fitted field's mean gradient with its consistent
   correction (csm_elastic_mean_gradient), so that a uniform pressure's forces balance at every
   inner particle and pull each surface particle by p cof(F) b_i, as the energy's do (with the
   linear fit's F the inner particles of a cube took forces as large as its surface's, and a cube
   between frictionless plates bulged with Poisson's ratio 0.242 for 0.3). Membership j's
   gradient is w m_j cof(F) h_j, h_j = L q~_j + eta_j, L = H_c A~_qq^-1 (H_c the cells' mean of
   dq~/dp, [1 0] without cells); as sum_j w m q~_j q~_j^T = A~_qq and sum_j q~_j xi_j^T = 0
   (csm_elastic_consistent), the weighted sum of |cof h_j|^2 is tr(cof (L H_c^T + Xi) cof^T),
   Xi = sum w m eta eta^T. Each membership moves by d lambda cof h_j: sum_j w m_j h_j = 0 keeps the
   momentum, and sum_j w m_j (x_j - xbar) h_j^T = F makes the moment F cof^T d lambda = det F d lambda 1,
   no torque. */
static void volume_step_mean(csm_world *w, const double *x, int32_t c, double h, double *lambda)
{
    csm_clusters *C = &w->C;
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    for (int32_t j = lo; j < hi; j++) C->wgoal[3 * j] = C->wgoal[3 * j + 1] = C->wgoal[3 * j + 2] = 0.0;
    double F[9], cof[9];
    if (C->rank[c] < 3 || !(csm_cluster_density(w, c) > 0) || !csm_elastic_mean_gradient(w, x, c, F)) return;
    const double *inv = &C->Aqq_inv[81 * c], *mean = &C->qmean[6 * c];
    const double *eta = C->eta && C->eta_epoch == C->epoch ? C->eta : NULL;
    const double *H = eta && C->hmean ? &C->hmean[27 * c] : NULL;
    /* L = H_c A~_qq^-1 (3x9), K = L H_c^T + Xi */
    double L[27], K[9];
    for (int e = 0; e < 3; e++)
        for (int a = 0; a < 9; a++) {
            double sum = 0;
            for (int b = 0; b < 9; b++) sum += (H ? H[9 * e + b] : b == e) * inv[9 * b + a];
            L[9 * e + a] = sum;
        }
    for (int e = 0; e < 3; e++)
        for (int f = 0; f < 3; f++) {
            double sum = 0;
            for (int a = 0; a < 9; a++) sum += L[9 * e + a] * (H ? H[9 * f + a] : a == f);
            K[3 * e + f] = sum;
        }
    for (int32_t j = lo; j < hi && eta; j++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) K[3 * a + b] += C->wmass[j] * eta[3 * j + a] * eta[3 * j + b];
    csm_m3_cofactor(F, cof);
    double G[9], GG[9];
    csm_m3_mul(cof, K, G);
    csm_m3_mul_bt(G, cof, GG);
    double den = GG[0] + GG[4] + GG[8], compliance = volume_compliance(w, c, h);
    double dl = -(csm_m3_det(F) - 1.0 + compliance * lambda[c]) / (den + compliance);
    if (!isfinite(dl) || !(den > 0)) return;
    lambda[c] += dl;
    /* D = d lambda cof L (3x9), E = d lambda cof: membership j moves by D q~_j + E eta_j */
    double D[27], E[9];
    for (int r = 0; r < 3; r++) {
        for (int a = 0; a < 9; a++) {
            double sum = 0;
            for (int b = 0; b < 3; b++) sum += cof[3 * r + b] * L[9 * b + a];
            D[9 * r + a] = dl * sum;
        }
        for (int b = 0; b < 3; b++) E[3 * r + b] = dl * cof[3 * r + b];
    }
    for (int32_t j = lo; j < hi; j++) {
        const double *p = &C->p[3 * j];
        double q[6], t[9], wgt = C->weight[j];
        csm_quad_terms(p, q);
        for (int a = 0; a < 3; a++) t[a] = p[a], t[3 + a] = q[a] - mean[a], t[6 + a] = q[3 + a] - mean[3 + a];
        for (int r = 0; r < 3; r++) {
            double move = 0;
            for (int a = 0; a < 9; a++) move += D[9 * r + a] * t[a];
            for (int b = 0; b < 3 && eta; b++) move += E[3 * r + b] * eta[3 * j + b];
            C->wgoal[3 * j + r] = wgt * move;
        }
    }
}

/* Cluster c's step of the volume constraint C_c = det F - 1 (F = A_xr A_rr^-1, Falkenstein Eq 3;
   det F^p = 1, so det F = det F^e). Each membership is a share w_ic m_i of its particle, and
   d C / d x_ic = w_ic m_i cof(F) A_rr^-1 p_ic, so the step of Macklin et al. 2016 Eq 18,
       d lambda = -(C + alpha~ lambda) / (sum w m |cof(F) A_rr^-1 p|^2 + alpha~),
       dx_ic = d lambda cof(F) A_rr^-1 p_ic,
   is linear in p_ic: D = d lambda cof(F) A_rr^-1 goes to D[9]. The weighted sum over the members
   is tr(cof A_rr^-1 cof^T), and alpha~ = 1 / (kappa V_c h^2) (volume_compliance). The moves keep the cluster's momentum (sum w m p = 0) and exert no torque
   about its centre (sum w m d (D p)^T = F A_rr A_rr^-1 cof^T d lambda = det F d lambda 1). */
static void volume_step(const csm_world *w, const double *x, int32_t c, double h, double *lambda, double D[9])
{
    const csm_clusters *C = &w->C;
    memset(D, 0, 9 * sizeof *D);
    double rho = csm_cluster_density(w, c), M = C->mass[c];
    if (C->rank[c] < 3 || !(M > 0) || !(rho > 0)) return;
    double com[3], Axr[9], F[9], cof[9], G[9], GG[9];
    const double *Ainv = &C->A_rr_inv[9 * c];
    csm_cluster_moments(C, x, c, com, Axr);
    csm_m3_mul(Axr, Ainv, F);
    csm_m3_cofactor(F, cof);
    csm_m3_mul(cof, Ainv, G);
    csm_m3_mul_bt(G, cof, GG); /* cof A_rr^-1 cof^T */
    double den = GG[0] + GG[4] + GG[8];
    double compliance = volume_compliance(w, c, h);
    double dl = -(csm_m3_det(F) - 1.0 + compliance * lambda[c]) / (den + compliance);
    if (!isfinite(dl) || !(den > 0)) return;
    lambda[c] += dl;
    for (int a = 0; a < 9; a++) D[a] = dl * G[a];
}

/* Cluster c's share of each member's move, w_ic D p_ic, into C->wgoal (cluster order). Compiled
   for each instruction set (simd.h); each membership's share is its own. */
CSM_CLONES static void volume_shares(csm_clusters *C, int32_t c, const double D[9])
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const double *p = C->p, *weight = C->weight;
    double *out = C->wgoal;
    double D0 = D[0], D1 = D[1], D2 = D[2], D3 = D[3], D4 = D[4], D5 = D[5], D6 = D[6], D7 = D[7], D8 = D[8];
#pragma omp simd
    for (int32_t j = lo; j < hi; j++) {
        double wgt = weight[j], p0 = p[3 * j], p1 = p[3 * j + 1], p2 = p[3 * j + 2];
        out[3 * j] = wgt * (D0 * p0 + D1 * p1 + D2 * p2);
        out[3 * j + 1] = wgt * (D3 * p0 + D4 * p1 + D5 * p2);
        out[3 * j + 2] = wgt * (D6 * p0 + D7 * p1 + D8 * p2);
    }
}

double csm_volume_project(csm_world *w, double *x, double h, double *lambda, double *scratch)
{
    csm_clusters *C = &w->C;
    int32_t k = C->k, n = w->P.n;
    const double *inv_mass = w->P.inv_mass, *share = C->wgoal;
    int mean = csm_elastic_volume_on(w);
    double change = 0, most = 0;
#pragma omp parallel
    {
#pragma omp for schedule(static) reduction(max : change, most)
        for (int32_t c = 0; c < k; c++) {
            double before = lambda[c];
            if (mean) {
                volume_step_mean(w, x, c, h, lambda);
            } else {
                volume_step(w, x, c, h, lambda, &scratch[9 * c]);
                volume_shares(C, c, &scratch[9 * c]);
            }
            change = fmax(change, fabs(lambda[c] - before));
            most = fmax(most, fabs(lambda[c]));
        }
        /* every particle moves by the weighted shares of its clusters, in cluster order (Jacobi) */
#pragma omp for schedule(static)
        for (int32_t i = 0; i < n; i++) {
            if (inv_mass[i] == 0.0) continue;
            double d0 = 0, d1 = 0, d2 = 0;
            for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
                const double *v = &share[3 * C->pmember[s]];
                d0 += v[0];
                d1 += v[1];
                d2 += v[2];
            }
            x[3 * i] += d0;
            x[3 * i + 1] += d1;
            x[3 * i + 2] += d2;
        }
    }
    return most > 0 ? change / most : 0.0;
}
