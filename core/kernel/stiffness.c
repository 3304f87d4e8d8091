/* The springs' stiffness: a material's shear modulus as each cluster's stiffness, and the explicit
   gains h^2 k_c. */

#include "kernel_internal.h"
#include "elastic.h"

/* Material stiffness (solver.modulus). A cluster's shape-matching springs store
       E_c = 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2
   (the force k_c w_ic m_i (g_ic - x_i) of Bargteil-Jones Algorithm 1 line 2 with alpha_c = h^2 k_c is minus
   its gradient at fixed goals, and the fit makes the goals stationary). Under a uniform
   deformation x_i - xbar = F p_ic with F = F^e F^p, the goals are g_ic = R F^p p_ic + xbar, so
   with D = F^e - R and B = F^p A_rr F^pT (A_rr = sum w m p p^T, the plastic rest shape's moment)
       E_c = 1/2 k_c tr(D B D^T).
   A material of shear modulus mu stores mu V_c |D|_F^2 in the cluster's share of the body,
   V_c = m_c / rho (the weights split every particle's volume among its clusters as they split
   its mass, so sum_c V_c is the body's volume). The two agree for every D only when B is
   isotropic, B = (tr B / 3) 1; then k_c = 2 mu V_c / (tr B / 3) = 6 mu m_c / (rho tr B), which for
   F^p = 1 is 6 mu V_c / (m_c r_g^2) with r_g the cluster's mass-weighted radius of gyration.
   An anisotropic cluster (flat, elongated, or cut by the body's surface) cannot match every D
   with one scalar k_c; it gets the same formula, which matches the energy averaged over the
   orientations of D (E[tr(D B D^T)] = tr B E[|D|^2] / 3 for isotropically distributed D). It
   is then stiffer than the material, by lambda_max(B) / (tr B / 3), when stretched along its
   long axis and softer across it; refining clusters inside a body makes them isotropic, so the
   error stays with the clusters the surface cuts. An object with its own material
   (objects[].modulus) gives its clusters its mu in place of the integrator's. */
double csm_kernel_modulus_stiffness(const csm_world *w, double mu, int32_t c, const double Fp[9])
{
    const csm_clusters *C = &w->C;
    if (w->energy == CSM_ENERGY_CONTINUUM && C->ebound) return csm_elastic_stiffness(w, mu, c);
    int32_t o = csm_cluster_object(w, c);
    if (o < 0) return 0.0;
    if (w->object_modulus && w->object_modulus[o] > 0) mu = w->object_modulus[o];
    double M = C->mass[c], rho = w->object_density[o];
    if (!(M > 0) || !(rho > 0)) return 0.0;
    double A[9];
    cluster_arr(C, c, A);
    double trB = plastic_moment(A, Fp);
    if (!(trB > 0)) return 0.0;
    return 6.0 * mu * M / (rho * trB);
}

double csm_modulus_stiffness(const csm_world *w, double mu, int32_t c)
{
    return csm_kernel_modulus_stiffness(w, mu, c, &w->C.Fp[9 * c]);
}

double csm_spring_stiffness(const csm_world *w, int32_t c, const double Fp[9], double h)
{
    if (!(w->spring_modulus > 0)) return w->spring_alpha / (h * h);
    double k = csm_kernel_modulus_stiffness(w, w->spring_modulus, c, Fp);
    return w->spring_capped ? fmin(k, 1.0 / (h * h)) : k;
}

void csm_modulus_gains(const csm_world *w, double mu, double h, double *gain, csm_gain_stats *stats)
{
    int32_t k = w->C.k;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < k; c++) gain[c] = h * h * csm_modulus_stiffness(w, mu, c);
    csm_gain_stats st = {k ? INFINITY : 0, 0, 0, 0};
    for (int32_t c = 0; c < k; c++) {
        if (gain[c] > 1.0) {
            gain[c] = 1.0;
            st.clamped++;
        }
        gain[c] *= csm_elastic_share(w, c); /* the continuum goals' share of the pull (elastic.c) */
        st.min = fmin(st.min, gain[c]);
        st.max = fmax(st.max, gain[c]);
        st.mean += gain[c] / k;
    }
    *stats = st;
}
