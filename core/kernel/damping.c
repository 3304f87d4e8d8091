/* Damping and viscosity: velocities pulled towards their clusters' rigid motion, and the energy each
   takes out. */

#include "kernel_internal.h"

/* Rigid velocity of cluster c: v_cm and omega = I^-1 L about the cluster's centre of mass. */
static void cluster_rigid_velocity(const csm_clusters *C, const double *x, const double *v, int32_t c,
                                   double out[9])
{
    double M = C->mass[c], com[3] = {0, 0, 0}, vcm[3] = {0, 0, 0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        for (int d = 0; d < 3; d++) {
            com[d] += C->wmass[j] * x[3 * i + d];
            vcm[d] += C->wmass[j] * v[3 * i + d];
        }
    }
    for (int d = 0; d < 3; d++) {
        com[d] = M > 0 ? com[d] / M : 0;
        vcm[d] = M > 0 ? vcm[d] / M : 0;
    }
    double L[3] = {0, 0, 0}, I[9] = {0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        double r[3] = {x[3 * i] - com[0], x[3 * i + 1] - com[1], x[3 * i + 2] - com[2]}, rv[3];
        double wm = C->wmass[j];
        csm_v3_cross(r, &v[3 * i], rv);
        double r2 = csm_v3_dot(r, r);
        for (int a = 0; a < 3; a++) {
            L[a] += wm * rv[a];
            for (int b = 0; b < 3; b++) I[3 * a + b] += wm * ((a == b ? r2 : 0.0) - r[a] * r[b]);
        }
    }
    /* a collinear or single-particle cluster has a singular inertia tensor */
    double Iinv[9];
    csm_pinv_sym3(I, 1e-12, Iinv);
    memcpy(out, vcm, sizeof vcm);
    csm_m3_mul_v3(Iinv, L, &out[3]);
    memcpy(&out[6], com, sizeof com);
}

/* The energy a velocity change dv of particle i takes from the explicit step's conserved energy:
   the kinetic energy it removes, less the share of the lag (csm_diag.elastic_lag) it moves,
   (h/2) f_i . dv = 1/2 m_i kick_i . dv with kick_i = a (g_i - x_i) the springs' velocity change of
   the step (none when g is NULL), and (h/2) f_i . dv of the forces with a potential
   (csm_world.potential_force). */
static double removed_energy(const csm_world *w, int32_t i, const double *v_before, const double *v_after,
                             const double *g, double a, const double *x)
{
    double m = w->P.mass[i], e = 0.5 * m * (csm_v3_dot(v_before, v_before) - csm_v3_dot(v_after, v_after));
    if (g)
        for (int d = 0; d < 3; d++) e += 0.5 * m * a * (g[3 * i + d] - x[3 * i + d]) * (v_after[d] - v_before[d]);
    if (w->potential_force) /* the forces with a potential hold their share of the lag too */
        for (int d = 0; d < 3; d++) e += 0.5 * w->potential_h * w->potential_force[3 * i + d] * (v_after[d] - v_before[d]);
    return e;
}

/* Müller et al. 2007 Sec 3.5: each velocity pulled towards its clusters' rigid motion. */
void csm_damp_velocities(csm_world *w, const double *x, double *v, double k, double *scratch, const double *g, double a)
{
    if (k <= 0) return;
    const csm_clusters *C = &w->C;
    int32_t nc = C->k, n = w->P.n;
#pragma omp parallel for schedule(static)
    for (int32_t c = 0; c < nc; c++) cluster_rigid_velocity(C, x, v, c, &scratch[9 * c]);
    /* Gather per particle (no atomics); v is only written after every cluster is measured. */
    double part[CSM_SUM_BLOCKS] = {0};
#pragma omp parallel for schedule(static)
    for (int b = 0; b < CSM_SUM_BLOCKS; b++) {
        double sum = 0;
        for (int32_t i = csm_block_start(n, b); i < csm_block_start(n, b + 1); i++) {
            if (w->P.inv_mass[i] == 0.0) continue;
            double before[3] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
            double dv[3] = {0, 0, 0};
            for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
                int32_t j = C->pmember[s];
                int32_t c = C->mcluster[j];
                const double *rv = &scratch[9 * c];
                double r[3], wr[3];
                for (int d = 0; d < 3; d++) r[d] = x[3 * i + d] - rv[6 + d];
                csm_v3_cross(&rv[3], r, wr);
                for (int d = 0; d < 3; d++) dv[d] += C->weight[j] * (rv[d] + wr[d] - v[3 * i + d]);
            }
            for (int d = 0; d < 3; d++) v[3 * i + d] += k * dv[d];
            sum += removed_energy(w, i, before, &v[3 * i], g, a, x);
        }
        part[b] = sum;
    }
    if (w->report) w->report->dissipated[CSM_DISSIPATED_DAMPING] += csm_block_total(part);
}

/* Material viscosity per cluster. The velocity field's best affine fit about the centre has the
   gradient L = A_vd A_dd^-1 (A_vd = sum w m (v - vbar) d^T, A_dd = sum w m d d^T, d = x - xbar); a
   Newtonian viscosity eta dissipates 2 eta V_c |sym L|^2 (the deviatoric and the volumetric rate
   alike). With the cluster's inertia in that mode, 1/2 tr(S A_dd S) ~ 1/2 (tr A_dd / 3) |S|^2,
   S = sym L decays at the rate r = 6 eta V_c / tr A_dd (the same form as the stiffness from a
   modulus, csm_modulus_stiffness), taken implicitly: dv = -(h r / (1 + h r)) S d, stable for any
   step. The rigid rotation that correction would carry when A_dd is not isotropic is removed
   (omega = I^-1 sum w m d x dv), so the cluster's momentum and angular momentum stay as they were. */
static void viscosity_row(const csm_world *w, const double *x, const double *v, int32_t c, double eta, double h,
                          double row[12])
{
    const csm_clusters *C = &w->C;
    double com[3] = {0, 0, 0}, vcm[3] = {0, 0, 0}, Add[9] = {0}, Avd[9] = {0}, M = C->mass[c];
    double rho = csm_cluster_density(w, c);
    memset(row, 0, 12 * sizeof *row);
    if (!(M > 0) || !(rho > 0)) return;
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++)
        for (int a = 0; a < 3; a++) {
            com[a] += C->wmass[j] * x[3 * C->member[j] + a] / M;
            vcm[a] += C->wmass[j] * v[3 * C->member[j] + a] / M;
        }
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        int32_t i = C->member[j];
        double wm = C->wmass[j], d[3], u[3];
        for (int a = 0; a < 3; a++) {
            d[a] = x[3 * i + a] - com[a];
            u[a] = v[3 * i + a] - vcm[a];
        }
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                Add[3 * a + b] += wm * d[a] * d[b];
                Avd[3 * a + b] += wm * u[a] * d[b];
            }
    }
    double tr = Add[0] + Add[4] + Add[8];
    if (!(tr > 0)) return;
    double Addinv[9], L[9], K[9], KA[9], I[9], Iinv[9], torque[3], omega[3];
    csm_pinv_sym3(Add, 1e-12, Addinv);
    csm_m3_mul(Avd, Addinv, L);
    double r = 6.0 * eta * (M / rho) / tr, f = h * r / (1.0 + h * r);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) K[3 * a + b] = -0.5 * f * (L[3 * a + b] + L[3 * b + a]);
    /* the torque sum w m d x (K d) is the axial vector of K A_dd's skew part */
    csm_m3_mul(K, Add, KA);
    torque[0] = KA[7] - KA[5];
    torque[1] = KA[2] - KA[6];
    torque[2] = KA[3] - KA[1];
    for (int a = 0; a < 9; a++) I[a] = (a % 4 == 0 ? tr : 0.0) - Add[a];
    csm_pinv_sym3(I, 1e-12, Iinv);
    csm_m3_mul_v3(Iinv, torque, omega);
    memcpy(row, com, 3 * sizeof *row);
    double W[9] = {0, -omega[2], omega[1], omega[2], 0, -omega[0], -omega[1], omega[0], 0};
    for (int a = 0; a < 9; a++) row[3 + a] = K[a] - W[a];
}

void csm_viscous_velocities(csm_world *w, const double *x, double *v, double eta, double h, double *scratch,
                            const double *g, double a)
{
    if (!(eta > 0)) return;
    const csm_clusters *C = &w->C;
    int32_t k = C->k, n = w->P.n;
    double part[CSM_SUM_BLOCKS] = {0};
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int32_t c = 0; c < k; c++) viscosity_row(w, x, v, c, eta, h, &scratch[12 * c]);
#pragma omp for schedule(static)
        for (int b = 0; b < CSM_SUM_BLOCKS; b++) {
            double sum = 0;
            for (int32_t i = csm_block_start(n, b); i < csm_block_start(n, b + 1); i++) {
                if (w->P.inv_mass[i] == 0.0) continue;
                double dv[3] = {0, 0, 0};
                for (int32_t s = C->poff[i]; s < C->poff[i + 1]; s++) {
                    int32_t j = C->pmember[s];
                    const double *row = &scratch[12 * C->mcluster[j]], *K = &row[3];
                    double r0 = x[3 * i] - row[0], r1 = x[3 * i + 1] - row[1], r2 = x[3 * i + 2] - row[2];
                    for (int d = 0; d < 3; d++)
                        dv[d] += C->weight[j] * (K[3 * d] * r0 + K[3 * d + 1] * r1 + K[3 * d + 2] * r2);
                }
                double *vi = &v[3 * i], before[3] = {vi[0], vi[1], vi[2]};
                for (int d = 0; d < 3; d++) vi[d] += dv[d];
                sum += removed_energy(w, i, before, vi, g, a, x);
            }
            part[b] = sum;
        }
    }
    if (w->report) w->report->dissipated[CSM_DISSIPATED_VISCOSITY] += csm_block_total(part);
}
