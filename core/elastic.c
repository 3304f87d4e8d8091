/* The continuum cluster energy (solver.energy: continuum).

   Why. The shape-matching springs store E_c = 1/2 k_c sum_i w_ic m_i |x_i - g_ic|^2 with rigid
   goals g = xbar + R F^p p. A modulus sets k_c so that a uniform strain stores the material's
   energy in an isotropic cluster (csm_modulus_stiffness), but the springs count everything a
   rotation cannot follow as strain: a bent cluster's quadratic field (the rotation varies across
   it, which costs the continuum nothing), and a cluster that the body's surface cut short is
   stiffer along its long axis. Both stiffen a bent body, and neither vanishes as the clusters
   shrink, because k_c grows as their size shrinks.

   What. Each cluster fits its displacement with Müller 2005's quadratic basis (report Sec 4),
   q~(p) = (p, q2(p) - qmean) in R^9 weighted by w m: x - xbar ~ A~ q~(p), A~ = A~_xq A~_qq^-1
   (3x9). The fitted field's elastic gradient at member i is G_i = A~ J_i F^p^-1, J_i = dq~/dp at
   p_i (9x3), and the cluster stores the corotated linear-elastic energy of that field over its
   members' cells, each member of volume v_i = w_ic m_i / rho, and each quadrature point its own
   rotation R_i = polar(G_i), G_i = R_i S_i:
       E_c = sum_i v_i [mu |S_i - 1|^2 + lambda / 2 (tr S_i - 3)^2]
   The quadrature points. Where the particles carry their cells' volumes (sampling.mass: volume),
   each member contributes the six points of its particle's cell (csm_cell_points: the centroid
   plus and minus sqrt(3) times each principal radius of gyration), v_i / 6 each, which integrate
   a quadratic exactly over the cell; a linear strain's energy is quadratic, so a bent or twisted
   cluster stores its field's energy exactly. The particles themselves as the points are the
   trapezoid rule on a grid, which gives the section's second moment (1 + 2 / n^2) times over n
   layers: a bar five particles across (n = 4) 12.5 % too stiff in bending and torsion. Without
   cells (the papers' equal masses) a member is its own point.
   (deviatoric, mu (|S_i - 1|^2 - (tr S_i - 3)^2 / 3), under volume split, whose own term holds the
   volume). That is solver.material corotated, the default; neo_hookean puts the finite-element
   codes' compressible neo-Hookean density in its place (neo_hookean below), the rest unchanged.
   For small strain it is mu |eps|^2 + lambda / 2 (tr eps)^2 of linear elasticity, and it is a
   function of the positions alone (each R_i is its own term's minimiser), so its forces are
   exactly conservative at any strain. Plus a spring of stiffness s k_c on the residual
   r_i = x_i - xbar - A~ q~_i the basis cannot follow, so that no motion is free of energy (the
   hourglass control of one-point finite elements), s k_c = theta k_mu with theta =
   solver.stabilization and k_mu the stiffness bound of the shear term alone (csm_elastic_share):
       E_c += 1/2 s k_c sum_i w m |r_i|^2 = 1/2 s k_c (S - tr(A~ B^T)),  B = A~_xq, S = sum w m |x - xbar|^2.
   Consistent gradients (solver.gradient: consistent, the default). The forces of the energy above
   under a uniform stress P are -P a_i at particle i, a_i = sum_c V_c w_ic m_i [I 0] A~_qq^-1 q~_ic,
   and a_i is not zero inside the body (the clusters do not tile it as finite elements do): the
   method fails the finite elements' patch test, and a uniform load strains what the fits cannot
   follow (a bar in tension came out 4 % softer than E at theta = 1, 20 % at theta = 0.1). So each
   membership's share of its cluster's mean gradient gains a correction xi_ic, G_i += X_c with
   X_c = sum_i x_i xi_ic^T, chosen (after Chen, Hillman and Rüter 2013's variationally consistent
   integration of meshfree methods) so that
       sum_c V_c (a_ic + xi_ic) = b_i,
   b_i the particle's share of the surface as a vector (the integral of the outward normal over
   its cell's part of the surface, csm_sample_volumes; 0 inside): the divergence theorem, which
   makes a uniform strain an equilibrium whose surface forces are P b_i. xi_ic is orthogonal to the
   cluster's basis (1, q~) over its members, so X_c sees only the residual, a quadratic field keeps
   its energy, the forces still sum to zero per cluster and E_c is still invariant under rotation
   (momentum and angular momentum). The least xi (in sum_c M_c sum_i |xi_ic|^2 / (w m)) is
   xi_ic = V_c w m_i / M_c (lam_i - fit_c(lam)(p_ic)), lam solving K lam = b - a,
   (K lam)_i = sum_c V_c^2 / M_c w m_i (lam_i - fit_c(lam)(p_ic)), by conjugate gradients once per
   clustering (csm_elastic_consistent). Its gradient adds Sigma-bar xi_j, Sigma-bar = sum_i v_i P_i,
   to dE / dx_j, and the goals g^_j gain S eta_j, S = -Sigma-bar / (s k_c), eta_j = xi_j / (w m_j).
   Why theta = 0.3. The spring on the residual keeps every motion from being free of energy (the
   hourglass control of one-point finite elements); it also stiffens a bent cluster's cubic
   residual, which vanishes as the clusters shrink but not at five particles through a beam. With
   the cells' quadrature, CalculiX's cantilever (64 clusters) comes out at 1.08 of its deflection
   at theta = 0.1, 1.02 at 0.3 (the CI bar: 1.11, 1.03, 0.99 at 0.5), and torsion, which the spring
   stiffens as it holds the section's warping, at 0.885 and 0.852. With gradient fit, theta = 1
   hides part of the patch test's failure (a uniform load strains the residual, which the spring
   then holds).
   A uniform strain stores mu V_c |eps|^2 + lambda / 2 V_c (tr eps)^2 in any cluster, round or cut;
   a quadratic field (bending, torsion) stores its continuum energy exactly; the residual of a
   smooth field is cubic and its energy vanishes as the clusters shrink. Poisson's ratio comes
   from lambda.

   Its gradient (d psi / d G_i = P_i = 2 mu (G_i - R_i) + lambda (tr S_i - 3) R_i, times F^p^-T) is
       dE / dx_j = w m_j (Z q~_j + s k_c r_j),  Z = Sigma A~_qq^-1,  Sigma = sum_i v_i P_i J_i^T,
   because dA~/dx_j = w m_j A~_qq^-1 q~_j (xbar drops out: q~ is centred). Every integrator takes
   its elastic forces as springs towards goals, k_c w m (g - x), so the goals are
       g_j = x_j - (Z q~_j + s k_c r_j) / k_c = (1 - s) x_j + s g^_j,
       g^_j = xbar + (A~ - Z / (s k_c)) q~_j,
   and g^ is the quadratic goal transform T = (A~ - Z / (s k_c))_p, Q = (...)_q that the
   kernel's goal passes already evaluate; each integrator takes s of the pull towards g^
   (csm_elastic_share). k_c is the largest eigenvalue of the Hessian or above it
   (csm_elastic_stiffness), so the springs' quadratic 1/2 k_c sum w m |x - g|^2 with the goals held
   lies above E_c and touches it at x: projective dynamics' global step is then a majorise-minimise
   step and lowers the energy, and the explicit gain h^2 k_c <= 1 keeps every mode stable. The
   forces sum to zero per cluster and, E_c being invariant under rotation, exert no torque. */
#include "elastic.h"

#include "csm_math.h"
#include "simd.h"
#include "svd3.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* q~ = (p, q2(p) - qmean) of member j, and its gradient J (9x3, row a = d q~_a / d p). */
static void basis(const double p[3], const double mean[6], double t[9], double J[27])
{
    double q[6];
    csm_quad_terms(p, q);
    for (int a = 0; a < 3; a++) t[a] = p[a];
    for (int a = 0; a < 6; a++) t[3 + a] = q[a] - mean[a];
    if (!J) return;
    memset(J, 0, 27 * sizeof *J);
    J[0] = J[4] = J[8] = 1.0;
    /* q2 = (px^2, py^2, pz^2, px py, py pz, pz px) */
    J[9 + 0] = 2 * p[0];
    J[12 + 1] = 2 * p[1];
    J[15 + 2] = 2 * p[2];
    J[18 + 0] = p[1], J[18 + 1] = p[0];
    J[21 + 1] = p[2], J[21 + 2] = p[1];
    J[24 + 0] = p[2], J[24 + 2] = p[0];
}

/* The compressible neo-Hookean solid of the finite-element codes (solver.material: neo_hookean;
   CalculiX's and Abaqus's *HYPERELASTIC, NEO HOOKE with C10 = mu / 2 and D1 = 2 / kappa), at the
   elastic gradient G:
       psi = mu / 2 (J^-2/3 I1 - 3) + kappa / 2 (J - 1)^2,   I1 = |G|^2, J = det G,
       P = d psi / d G = mu J^-2/3 (G - I1 / 3 G^-T) + kappa (J - 1) cof G,   G^-T = cof G / J.
   At small strain it is mu |dev eps|^2 + kappa / 2 (tr eps)^2, linear elasticity with the corotated
   energy's mu and nu. Under volume split (deviatoric) psi keeps its first term, the cluster's own
   1/2 kappa V_c (det F_c - 1)^2 (kernel/volume.c) holding the volume. The first term's J^-2/3
   reads J no smaller than NEO_J_FLOOR, so a point turned inside out keeps a finite energy (there
   it is mu / 2 (NEO_J_FLOOR^-2/3 I1 - 3), still a function of G, and P its gradient). */
#define NEO_J_FLOOR 0.1

static double neo_hookean(const double G[9], double mu, double kappa, int deviatoric, double P[9])
{
    double cof[9], I1 = 0;
    csm_m3_cofactor(G, cof);
    for (int a = 0; a < 9; a++) I1 += G[a] * G[a];
    double J = csm_m3_det(G), Jf = fmax(J, NEO_J_FLOOR), s = pow(Jf, -2.0 / 3.0);
    double psi = 0.5 * mu * (s * I1 - 3.0), cI = J > NEO_J_FLOOR ? -mu * s * I1 / (3.0 * J) : 0.0;
    double cV = deviatoric ? 0.0 : kappa * (J - 1.0);
    if (!deviatoric) psi += 0.5 * kappa * (J - 1.0) * (J - 1.0);
    for (int a = 0; a < 9; a++) P[a] = mu * s * G[a] + (cI + cV) * cof[a];
    return psi;
}

/* The quadrature points of a membership: its particle's cell's (csm_cell_points) about p_j, each
   of 1 / cell_count of its volume; with no cells, p_j alone. */
static int cell_count(const csm_clusters *C)
{
    return C->cell ? CSM_CELL_POINTS : 1;
}

static void cell_point(const csm_clusters *C, int32_t j, int k, double s[3])
{
    const double *p = &C->p[3 * j];
    const double *o = C->cell ? &C->cell[3 * (CSM_CELL_POINTS * (size_t)C->member[j] + (size_t)k)] : NULL;
    for (int d = 0; d < 3; d++) s[d] = o ? p[d] + o[d] : p[d];
}

double csm_elastic_bound(const csm_clusters *C, int32_t c, const double V[81], const double lam[9], double tol)
{
    /* Gamma = sum w m J J^T, then W^T Gamma W with W = V Lambda^-1/2 over the kept eigenvalues:
       its largest eigenvalue is that of A~_qq^+ Gamma on the space the fit spans */
    double G[81] = {0}, W[81] = {0}, M[81] = {0}, ev[9];
    const double *mean = &C->qmean[6 * c];
    int points = cell_count(C);
    for (int64_t u = (int64_t)C->offset[c] * points; u < (int64_t)C->offset[c + 1] * points; u++) {
        int32_t j = (int32_t)(u / points);
        double t[9], J[27], at[3], wm = C->wmass[j] / points;
        cell_point(C, j, (int)(u % points), at);
        basis(at, mean, t, J);
        for (int a = 0; a < 9; a++)
            for (int b = 0; b < 9; b++)
                G[9 * a + b] += wm * (J[3 * a] * J[3 * b] + J[3 * a + 1] * J[3 * b + 1] + J[3 * a + 2] * J[3 * b + 2]);
    }
    int kept = 0;
    for (int e = 0; e < 9; e++) {
        if (!(lam[e] > tol)) continue;
        for (int a = 0; a < 9; a++) W[9 * a + kept] = V[9 * a + e] / sqrt(lam[e]);
        kept++;
    }
    if (!kept) return 0.0;
    for (int r = 0; r < kept; r++)
        for (int s = 0; s < kept; s++) {
            double sum = 0;
            for (int a = 0; a < 9; a++)
                for (int b = 0; b < 9; b++) sum += W[9 * a + r] * G[9 * a + b] * W[9 * b + s];
            M[kept * r + s] = sum;
        }
    if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', kept, M, kept, ev) != 0) return 0.0;
    return ev[kept - 1] > 0 ? ev[kept - 1] : 0.0;
}

void csm_elastic_lame(const csm_world *w, double mu, int32_t c, double *mu_c, double *lambda_c)
{
    int32_t o = csm_cluster_object(w, c);
    if (o >= 0 && w->object_modulus && w->object_modulus[o] > 0) mu = w->object_modulus[o];
    *mu_c = mu;
    *lambda_c = w->volume != CSM_VOLUME_SPLIT && w->bulk_modulus > 0 ? w->bulk_modulus - 2.0 * mu / 3.0 : 0.0;
}

double csm_elastic_share(const csm_world *w, int32_t c)
{
    if (!csm_elastic_on(w)) return 1.0;
    double m, l;
    csm_elastic_lame(w, w->spring_modulus, c, &m, &l);
    double bound = m + 1.5 * fmax(l, 0.0); /* csm_elastic_stiffness's, over 2 ebound / rho */
    return bound > 0 ? w->stabilization * m / bound : w->stabilization;
}

double csm_elastic_stiffness(const csm_world *w, double mu, int32_t c)
{
    const csm_clusters *C = &w->C;
    double rho = csm_cluster_density(w, c), m, l;
    if (!C->ebound || !(rho > 0) || !(C->mass[c] > 0)) return 0.0;
    csm_elastic_lame(w, mu, c, &m, &l);
    /* |sym H|^2 <= |H|^2 and (tr eps)^2 <= 3 |eps|^2: the energy is at most
       (mu + 3/2 lambda+) / rho sum w m |A~ J|^2, whose Hessian over the mass is 2 (...) Gamma;
       with the consistent gradient's X (csm_elastic_consistent) the same for sum w m |A~ J + X|^2
       (corrected_bound) */
    double e = C->ebound[c];
    if (C->eta && C->eta_epoch == C->epoch) e = fmax(e, C->ecorr[c]); /* corrected_bound: X included */
    return 2.0 * (m + 1.5 * fmax(l, 0.0)) / rho * e;
}

int csm_elastic_mean_gradient(const csm_world *w, const double *x, int32_t c, double F[9])
{
    const csm_clusters *C = &w->C;
    memset(F, 0, 9 * sizeof *F);
    if (!C->Aqq_inv || !C->qmean || !(C->mass[c] > 0)) return 0;
    const double *mean = &C->qmean[6 * c], *inv = &C->Aqq_inv[81 * c];
    const double *eta = C->eta && C->eta_epoch == C->epoch ? C->eta : NULL;
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    double com[3] = {0, 0, 0}, B[27] = {0};
    for (int32_t j = lo; j < hi; j++)
        for (int r = 0; r < 3; r++) com[r] += C->wmass[j] * x[3 * C->member[j] + r];
    for (int r = 0; r < 3; r++) com[r] /= C->mass[c];
    for (int32_t j = lo; j < hi; j++) {
        const double *xi = &x[3 * C->member[j]];
        double t[9], wm = C->wmass[j], d[3] = {xi[0] - com[0], xi[1] - com[1], xi[2] - com[2]};
        basis(&C->p[3 * j], mean, t, NULL);
        for (int r = 0; r < 3; r++) {
            for (int a = 0; a < 9; a++) B[9 * r + a] += wm * d[r] * t[a];
            for (int b = 0; b < 3 && eta; b++) F[3 * r + b] += wm * d[r] * eta[3 * j + b]; /* X */
        }
    }
    /* A~ H_c^T; H_c = [1 0] where the particles are the points (q~ is centred) */
    const double *H = eta && C->hmean ? &C->hmean[27 * c] : NULL;
    for (int r = 0; r < 3; r++)
        for (int e = 0; e < 3; e++)
            for (int a = 0; a < 9; a++) {
                double A = 0;
                for (int t = 0; t < 9; t++) A += B[9 * r + t] * inv[9 * t + a];
                F[3 * r + e] += A * (H ? H[9 * e + a] : a == e);
            }
    return 1;
}

double csm_elastic_cluster(const csm_world *w, int32_t c, const double *x, const double *v, const double com[3],
                           const double R[9], const double Fp[9], double mu, double k, double *T, double *Q,
                           double *Sout, double *dot)
{
    const csm_clusters *C = &w->C;
    const double *mean = &C->qmean[6 * c], *inv = &C->Aqq_inv[81 * c];
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    double rho = csm_cluster_density(w, c), m_c, l_c;
    csm_elastic_lame(w, mu, c, &m_c, &l_c);
    int deviatoric = w->volume == CSM_VOLUME_SPLIT, neo = w->material == CSM_MATERIAL_NEO_HOOKEAN;
    double kappa = l_c + 2.0 * m_c / 3.0; /* neo_hookean's bulk modulus (2 mu / 3 with no bulk_modulus: nu 0) */
    /* the fit: B = sum w m (x - xbar) q~^T, A~ = B A~_qq^-1 (Müller 2005 report Sec 4) */
    double B[27] = {0}, A[27], S = 0;
    for (int32_t j = lo; j < hi; j++) {
        const double *xi = &x[3 * C->member[j]];
        double t[9], wm = C->wmass[j], d[3] = {xi[0] - com[0], xi[1] - com[1], xi[2] - com[2]};
        basis(&C->p[3 * j], mean, t, NULL);
        S += wm * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        for (int r = 0; r < 3; r++)
            for (int a = 0; a < 9; a++) B[9 * r + a] += wm * d[r] * t[a];
    }
    for (int r = 0; r < 3; r++)
        for (int b = 0; b < 9; b++) {
            double sum = 0;
            for (int a = 0; a < 9; a++) sum += B[9 * r + a] * inv[9 * a + b];
            A[9 * r + b] = sum;
        }
    /* the consistent gradient's correction X = sum_j x_j (xi_j)^T = sum_j w m_j (x_j - xbar) eta_j^T,
       the same for every member (csm_elastic_consistent) */
    double X[9] = {0};
    const double *eta = C->eta && C->eta_epoch == C->epoch ? C->eta : NULL;
    for (int32_t j = lo; j < hi && eta; j++) {
        const double *xi = &x[3 * C->member[j]], *e = &eta[3 * j];
        double wm = C->wmass[j], d[3] = {xi[0] - com[0], xi[1] - com[1], xi[2] - com[2]};
        for (int r = 0; r < 3; r++)
            for (int b = 0; b < 3; b++) X[3 * r + b] += wm * d[r] * e[b];
    }
    double Fpi[9], Re[9];
    int plastic = !csm_m3_is_identity(Fp);
    if (!plastic || csm_m3_inverse(Fp, Fpi) == 0.0) csm_m3_identity(Fpi);
    /* the rotation of the fitted field's mean gradient F^e = A~_p F^p^-1 (Falkenstein Eq 5, 15),
       whatever the rotation plugin, warm-started from R (the fit's): each member's rotation starts
       from it */
    double F[9], Fe[9], q0[4];
    for (int r = 0; r < 3; r++)
        for (int a = 0; a < 3; a++) F[3 * r + a] = A[9 * r + a];
    csm_m3_mul(F, Fpi, Fe);
    csm_quat_from_rotation(R, q0);
    csm_polar3_warm(w->svd, Fe, q0, Re);
    if (!(csm_m3_det(Re) > 0)) csm_quat_from_rotation(R, q0);
    /* the strain energy at the members, and Sigma = sum v P J^T; the members' polar
       decompositions run CSM_LANES at a time, each lane as it would alone */
    double E = 0, Sig[27] = {0}, Sbar[9] = {0};
    int points = cell_count(C);
    for (int64_t base = (int64_t)lo * points; base < (int64_t)hi * points && rho > 0; base += CSM_LANES) {
        int n = (int64_t)hi * points - base < CSM_LANES ? (int)((int64_t)hi * points - base) : CSM_LANES;
        double J[CSM_LANES][27], Ge[CSM_LANES][9], Ri[CSM_LANES][9], q[CSM_LANES][4], vols[CSM_LANES];
        for (int l = 0; l < n; l++) {
            double t[9], G[9], at[3];
            int32_t j = (int32_t)((base + l) / points);
            cell_point(C, j, (int)((base + l) % points), at);
            basis(at, mean, t, J[l]);
            vols[l] = C->wmass[j] / (rho * points);
            for (int r = 0; r < 3; r++)
                for (int b = 0; b < 3; b++) {
                    double sum = 0;
                    for (int a = 0; a < 9; a++) sum += A[9 * r + a] * J[l][3 * a + b];
                    G[3 * r + b] = sum + X[3 * r + b];
                }
            if (plastic) csm_m3_mul(G, Fpi, Ge[l]);
            else memcpy(Ge[l], G, sizeof G);
            /* the member's own rotation, warm-started from the cluster's: psi is a function of G alone */
            memcpy(q[l], q0, sizeof q[l]);
        }
        if (!neo) csm_polar3_warm_lanes(w->svd, n, (const double(*)[9])Ge, q, Ri);
        for (int l = 0; l < n; l++) {
            double P[9], Pe[9], vol = vols[l];
            const double *Jl = J[l];
            double psi;
            if (neo) {
                psi = neo_hookean(Ge[l], m_c, kappa, deviatoric, Pe);
            } else {
                double S[9];
                csm_m3_mul_at(Ri[l], Ge[l], S);
                double tr = S[0] + S[4] + S[8] - 3.0, dev = 0;
                for (int r = 0; r < 3; r++)
                    for (int b = 0; b < 3; b++) {
                        double e = S[3 * r + b] - (r == b);
                        dev += e * e;
                    }
                /* corotated linear elasticity: mu |S - 1|^2 + lambda / 2 (tr S - 3)^2, or its deviatoric
                   part mu (|S - 1|^2 - (tr S - 3)^2 / 3); P = dpsi / dG^e */
                psi = deviatoric ? m_c * (dev - tr * tr / 3.0) : m_c * dev + 0.5 * l_c * tr * tr;
                double cR = deviatoric ? -2.0 * m_c * tr / 3.0 : l_c * tr;
                for (int a = 0; a < 9; a++) Pe[a] = 2.0 * m_c * (Ge[l][a] - Ri[l][a]) + cR * Ri[l][a];
            }
            E += vol * psi;
            if (plastic) csm_m3_mul_bt(Pe, Fpi, P); /* dpsi / dG = P^e F^p^-T */
            else memcpy(P, Pe, sizeof P);
            for (int r = 0; r < 3; r++)
                for (int a = 0; a < 9; a++)
                    Sig[9 * r + a] += vol * (P[3 * r] * Jl[3 * a] + P[3 * r + 1] * Jl[3 * a + 1] + P[3 * r + 2] * Jl[3 * a + 2]);
            for (int a = 0; a < 9; a++) Sbar[a] += vol * P[a];
        }
    }
    double fitted = 0, share = csm_elastic_share(w, c), ks = share * k;
    for (int a = 0; a < 27; a++) fitted += A[a] * B[a];
    E += 0.5 * ks * fmax(0.0, S - fitted);
    if (!T && !dot) return E;
    /* the goals' transform A~ - Z / (s k), Z = Sigma A~_qq^-1 */
    double G[27];
    for (int r = 0; r < 3; r++)
        for (int b = 0; b < 9; b++) {
            double sum = 0;
            for (int a = 0; a < 9; a++) sum += Sig[9 * r + a] * inv[9 * a + b];
            G[9 * r + b] = A[9 * r + b] - (ks > 0 ? sum / ks : 0.0);
        }
    double Sg[9];
    for (int a = 0; a < 9; a++) Sg[a] = eta && ks > 0 ? -Sbar[a] / ks : 0.0;
    if (T)
        for (int r = 0; r < 3; r++) {
            for (int a = 0; a < 3; a++) T[3 * r + a] = G[9 * r + a];
            for (int a = 0; a < 6; a++) Q[6 * r + a] = G[9 * r + 3 + a];
        }
    if (Sout) memcpy(Sout, Sg, sizeof Sg);
    if (dot) {
        double s = 0;
        for (int32_t j = lo; j < hi && v; j++) {
            const double *xi = &x[3 * C->member[j]], *vi = &v[3 * C->member[j]];
            double t[9];
            basis(&C->p[3 * j], mean, t, NULL);
            for (int r = 0; r < 3; r++) {
                double g = com[r];
                for (int a = 0; a < 9; a++) g += G[9 * r + a] * t[a];
                if (eta)
                    for (int b = 0; b < 3; b++) g += Sg[3 * r + b] * eta[3 * j + b];
                s += C->wmass[j] * (g - xi[r]) * vi[r];
            }
        }
        *dot = share * s;
    }
    return E;
}

/* ---- consistent gradients ------------------------------------------------------------------- */

/* The residual of the weighted least-squares fit of the field f (3 per particle, or with
   per_membership 3 per membership) over cluster c's basis (1, q~): out[3 j] = f - fit(p_j) for each
   membership j. out may be f when per_membership. */
static void fit_residual(const csm_clusters *C, int32_t c, const double *f, int per_membership, double *out)
{
    int32_t lo = C->offset[c], hi = C->offset[c + 1];
    const double *mean = &C->qmean[6 * c], *inv = &C->Aqq_inv[81 * c];
    double M = C->mass[c], s0[3] = {0, 0, 0}, s[9][3] = {{0}}, coef[9][3] = {{0}};
    for (int32_t j = lo; j < hi; j++) {
        double t[9], wm = C->wmass[j];
        const double *fi = &f[3 * (per_membership ? j : C->member[j])];
        basis(&C->p[3 * j], mean, t, NULL);
        for (int d = 0; d < 3; d++) {
            s0[d] += wm * fi[d];
            for (int a = 0; a < 9; a++) s[a][d] += wm * t[a] * fi[d];
        }
    }
    for (int a = 0; a < 9; a++)
        for (int b = 0; b < 9; b++)
            for (int d = 0; d < 3; d++) coef[a][d] += inv[9 * a + b] * s[b][d];
    for (int32_t j = lo; j < hi; j++) {
        double t[9];
        const double *fi = &f[3 * (per_membership ? j : C->member[j])];
        basis(&C->p[3 * j], mean, t, NULL);
        for (int d = 0; d < 3; d++) {
            double g = M > 0 ? s0[d] / M : 0.0;
            for (int a = 0; a < 9; a++) g += t[a] * coef[a][d];
            out[3 * j + d] = fi[d] - g;
        }
    }
}

/* y = K f over the particles that take part (on[i]): (K f)_i = sum_c alpha_c w_ic m_i (f_i - fit_c(f)(p_ic)),
   alpha_c = V_c^2 / M_c; res holds 3 m doubles. */
static void consistency_apply(const csm_world *w, const unsigned char *on, const double *f, double *y, double *res)
{
    const csm_clusters *C = &w->C;
#pragma omp parallel for schedule(dynamic, 16)
    for (int32_t c = 0; c < C->k; c++) fit_residual(C, c, f, 0, res);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < w->P.n; i++) {
        double s[3] = {0, 0, 0};
        for (int32_t a = C->poff[i]; on[i] && a < C->poff[i + 1]; a++) {
            int32_t j = C->pmember[a], c = C->mcluster[j];
            double rho = csm_cluster_density(w, c), alpha = rho > 0 ? C->mass[c] / (rho * rho) : 0.0;
            for (int d = 0; d < 3; d++) s[d] += alpha * C->wmass[j] * res[3 * j + d];
        }
        for (int d = 0; d < 3; d++) y[3 * i + d] = s[d];
    }
}

/* The stiffness bound of cluster c with its corrections eta (csm_elastic_bound's, in its units):
   per spatial row, the energy sum_i w m |a J_i + X|^2 is a form Q in z = (a, X), a = A~_qq^-1
   sum_j w m q~_j x_j the fit's coefficients and X = sum_j w m eta_j x_j, and the least
   sum_j w m x_j^2 that gives z is z^T Gram^-1 z, Gram = diag(A~_qq^-1, Xi), Xi = sum_j w m eta_j
   eta_j^T (eta is orthogonal to q~ over the members, so the blocks do not mix): the bound is the
   largest eigenvalue of Gram^1/2 Q Gram^1/2, 12 x 12. */
static double corrected_bound(const csm_clusters *C, int32_t c)
{
    const double *mean = &C->qmean[6 * c], *inv = &C->Aqq_inv[81 * c];
    double Q[144] = {0}, G[144] = {0}, lam[12], S[144] = {0}, M[144];
    int points = cell_count(C);
    for (int64_t u = (int64_t)C->offset[c] * points; u < (int64_t)C->offset[c + 1] * points; u++) {
        int32_t j = (int32_t)(u / points);
        double t[9], J[27], K[36], at[3], wm = C->wmass[j] / points;
        cell_point(C, j, (int)(u % points), at);
        basis(at, mean, t, J);
        for (int a = 0; a < 12; a++) /* K = [J; I], 12 x 3 */
            for (int b = 0; b < 3; b++) K[3 * a + b] = a < 9 ? J[3 * a + b] : (a - 9 == b);
        for (int a = 0; a < 12; a++)
            for (int b = 0; b < 12; b++)
                Q[12 * a + b] += wm * (K[3 * a] * K[3 * b] + K[3 * a + 1] * K[3 * b + 1] + K[3 * a + 2] * K[3 * b + 2]);
    }
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        const double *e = &C->eta[3 * j];
        double wm = C->wmass[j];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) G[12 * (9 + a) + 9 + b] += wm * e[a] * e[b];
    }
    for (int a = 0; a < 9; a++)
        for (int b = 0; b < 9; b++) G[12 * a + b] = inv[9 * a + b];
    if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', 12, G, 12, lam) != 0) return 0.0;
    for (int a = 0; a < 12; a++) /* S = Gram^1/2 */
        for (int b = 0; b < 12; b++)
            for (int e = 0; e < 12; e++) S[12 * a + b] += G[12 * a + e] * sqrt(fmax(lam[e], 0.0)) * G[12 * b + e];
    for (int a = 0; a < 12; a++)
        for (int b = 0; b < 12; b++) {
            double sum = 0;
            for (int e = 0; e < 12; e++)
                for (int f = 0; f < 12; f++) sum += S[12 * a + e] * Q[12 * e + f] * S[12 * f + b];
            M[12 * a + b] = sum;
        }
    if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', 12, M, 12, lam) != 0) return 0.0;
    return fmax(lam[11], 0.0);
}

int csm_elastic_consistent(csm_world *w)
{
    csm_clusters *C = &w->C;
    const csm_particles *P = &w->P;
    int32_t n = P->n, k = C->k, m = C->m;
    if (!w->boundary || !C->Aqq_inv) return 0;
    free(C->eta);
    free(C->S);
    free(C->ecorr);
    C->eta = calloc(3 * (size_t)(m > 0 ? m : 1), sizeof *C->eta);
    C->S = calloc(9 * (size_t)(k > 0 ? k : 1), sizeof *C->S);
    C->ecorr = calloc((size_t)(k > 0 ? k : 1), sizeof *C->ecorr);
    unsigned char *on = calloc((size_t)n, 1);
    double *work = malloc(sizeof *work * (3 * (size_t)m + 16 * (size_t)n + 3));
    if (!C->eta || !C->S || !C->ecorr || !on || !work) {
        free(on);
        free(work);
        return -1;
    }
    double *res = work, *r = res + 3 * (size_t)m, *lam = r + 3 * (size_t)n, *z = lam + 3 * (size_t)n,
           *pdir = z + 3 * (size_t)n, *q = pdir + 3 * (size_t)n, *diag = q + 3 * (size_t)n;
    for (int32_t i = 0; i < n; i++) on[i] = isfinite(w->boundary[3 * i]) && P->inv_mass[i] >= 0;
    /* H_c = sum_i v_i J_i^T / V_c over the quadrature points (3 x 9): [I 0] when they are the
       particles (q~ is centred), and with cells its quadratic part is J's at the mean of their
       centroids. A uniform stress P exerts -w m_j P V_c H_c A~_qq^-1 q~_j on member j. */
    free(C->hmean);
    double *H = C->hmean = calloc(27 * (size_t)(k > 0 ? k : 1), sizeof *H);
    if (!H) {
        free(on);
        free(work);
        return -1;
    }
    for (int32_t c = 0, points = cell_count(C); c < k; c++)
        for (int64_t u = (int64_t)C->offset[c] * points; u < (int64_t)C->offset[c + 1] * points && C->mass[c] > 0; u++) {
            int32_t j = (int32_t)(u / points);
            double t[9], J[27], at[3], f = C->wmass[j] / (points * C->mass[c]);
            cell_point(C, j, (int)(u % points), at);
            basis(at, &C->qmean[6 * c], t, J);
            for (int e = 0; e < 3; e++)
                for (int b = 0; b < 9; b++) H[27 * c + 9 * e + b] += f * J[3 * b + e];
        }
    /* the right side b_i - d_i, d_i = sum_c V_c w m_i H_c A~_qq^-1 q~_i, the uncorrected sum */
    for (int32_t i = 0; i < n; i++) {
        double d[3] = {0, 0, 0};
        for (int32_t a = C->poff[i]; a < C->poff[i + 1]; a++) {
            int32_t j = C->pmember[a], c = C->mcluster[j];
            double t[9], u[9], rho = csm_cluster_density(w, c), V = rho > 0 ? C->mass[c] / rho : 0.0;
            basis(&C->p[3 * j], &C->qmean[6 * c], t, NULL);
            for (int b = 0; b < 9; b++) {
                u[b] = 0;
                for (int e = 0; e < 9; e++) u[b] += C->Aqq_inv[81 * c + 9 * b + e] * t[e];
            }
            for (int e = 0; e < 3; e++) {
                double g = 0;
                for (int b = 0; b < 9; b++) g += H[27 * c + 9 * e + b] * u[b];
                d[e] += V * C->wmass[j] * g;
            }
        }
        for (int e = 0; e < 3; e++) r[3 * i + e] = on[i] ? w->boundary[3 * i + e] - d[e] : 0.0;
    }
    /* K annihilates every field that is quadratic over the whole object (each cluster's fit holds it):
       the right side loses its part in that space, where the surface's probes and the particles'
       places disagree at second order */
    for (int32_t o = 0; o < w->nobjects; o++) {
        int32_t first = w->object_first[o], last = w->object_first[o + 1];
        double cen[3] = {0, 0, 0}, size = 0, G[100] = {0}, B[30] = {0};
        int32_t cnt = 0;
        for (int32_t i = first; i < last; i++)
            if (on[i]) {
                for (int d = 0; d < 3; d++) cen[d] += P->rest[3 * i + d];
                cnt++;
            }
        if (cnt < 10) continue;
        for (int d = 0; d < 3; d++) cen[d] /= cnt;
        for (int32_t i = first; i < last; i++)
            for (int d = 0; d < 3 && on[i]; d++) size = fmax(size, fabs(P->rest[3 * i + d] - cen[d]));
        if (!(size > 0)) continue;
        for (int pass = 0; pass < 2; pass++) {
            double c[30];
            if (pass == 1) {
                memcpy(c, B, sizeof c);
                double Gc[100];
                memcpy(Gc, G, sizeof Gc);
                if (LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', 10, 3, Gc, 10, c, 3) != 0) break;
            }
            for (int32_t i = first; i < last; i++) {
                if (!on[i]) continue;
                double p[3], t[10];
                for (int d = 0; d < 3; d++) p[d] = (P->rest[3 * i + d] - cen[d]) / size;
                t[0] = 1;
                basis(p, (const double[6]){0, 0, 0, 0, 0, 0}, t + 1, NULL);
                for (int a = 0; a < 10; a++) {
                    if (pass == 0) {
                        for (int b = 0; b < 10; b++) G[10 * a + b] += t[a] * t[b];
                        for (int d = 0; d < 3; d++) B[3 * a + d] += t[a] * r[3 * i + d];
                    } else {
                        for (int d = 0; d < 3; d++) r[3 * i + d] -= t[a] * c[3 * a + d];
                    }
                }
            }
        }
    }
    double rhs = 0;
    for (int64_t a = 0; a < 3 * (int64_t)n; a++) rhs += r[a] * r[a];
    /* conjugate gradients on K lam = r, preconditioned by K's diagonal: K is symmetric and positive
       semi-definite; a cluster of ten members or fewer fits any field, so what no cluster constrains
       is held by 1e-10 of the diagonal */
    for (int32_t i = 0; i < n; i++) { /* K's diagonal, the same for the three components */
        double s = 0, hold = 0;
        for (int32_t a = C->poff[i]; on[i] && a < C->poff[i + 1]; a++) {
            int32_t j = C->pmember[a], c = C->mcluster[j];
            double t[9], rho = csm_cluster_density(w, c), alpha = rho > 0 ? C->mass[c] / (rho * rho) : 0.0;
            basis(&C->p[3 * j], &C->qmean[6 * c], t, NULL);
            double h = C->mass[c] > 0 ? 1.0 / C->mass[c] : 0.0;
            for (int a2 = 0; a2 < 9; a2++)
                for (int b = 0; b < 9; b++) h += t[a2] * C->Aqq_inv[81 * c + 9 * a2 + b] * t[b];
            s += alpha * C->wmass[j] * fmax(1.0 - C->wmass[j] * h, 0.0);
            hold += alpha * C->wmass[j];
        }
        s += 1e-10 * hold;
        diag[i] = s > 0 ? s : 1.0;
    }
    memset(lam, 0, sizeof *lam * 3 * (size_t)n);
    double rz = 0;
    for (int64_t a = 0; a < 3 * (int64_t)n; a++) {
        z[a] = r[a] / diag[a / 3];
        pdir[a] = z[a];
        rz += r[a] * z[a];
    }
    double rr = rhs;
    int it = 0;
    for (; it < 2000 && rr > 1e-20 * rhs; it++) {
        consistency_apply(w, on, pdir, q, res);
        double pq = 0;
        for (int64_t a = 0; a < 3 * (int64_t)n; a++) {
            q[a] += 1e-10 * diag[a / 3] * pdir[a]; /* the hold on what no cluster constrains (above) */
            pq += pdir[a] * q[a];
        }
        if (!(pq > 0)) break;
        double alpha = rz / pq, next = 0, nrr = 0;
        for (int64_t a = 0; a < 3 * (int64_t)n; a++) {
            lam[a] += alpha * pdir[a];
            r[a] -= alpha * q[a];
            z[a] = r[a] / diag[a / 3];
            next += r[a] * z[a];
            nrr += r[a] * r[a];
        }
        double beta = next / rz;
        rz = next;
        rr = nrr;
        for (int64_t a = 0; a < 3 * (int64_t)n; a++) pdir[a] = z[a] + beta * pdir[a];
    }
    /* eta_ic = (lam_i - fit_c(lam)(p_ic)) / rho_c */
    for (int32_t c = 0; c < k; c++) {
        /* twice: lam may be large along what no cluster constrains, and the second fit takes the
           first's rounding out, so that sum_i w m eta_ic is zero to round-off of eta itself (the
           forces of a cluster sum to zero: momentum) */
        fit_residual(C, c, lam, 0, res);
        fit_residual(C, c, res, 1, res);
        double rho = csm_cluster_density(w, c);
        for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++)
            for (int e = 0; e < 3; e++) C->eta[3 * j + e] = rho > 0 ? res[3 * j + e] / rho : 0.0;
        C->ecorr[c] = corrected_bound(C, c);
    }
    C->eta_epoch = C->epoch;
    free(on);
    free(work);
    return 0;
}
