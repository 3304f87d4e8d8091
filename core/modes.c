/* The goal deformations of Müller et al. 2005 (report Sec 4) beside the rigid one: linear and
   quadratic (solver.mode), blended with the rigid goals by beta. The fit itself is in core/kernel/fit.c. */
#include "modes.h"
#include "error.h"

#include "elastic.h"

#include "csm_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Müller 2005 linear mode (report Sec 4): goals from beta A + (1 - beta) R, A = F^e / cbrt(det F^e)
   so the linear part keeps volume; F^e is Müller's A_pq A_qq^-1 of the plastic rest shape
   q = F^p p. */
void csm_mode_linear(double beta, const double Fe[9], const double R[9], const double Fp[9], double T[9])
{
    double s3 = cbrt(csm_m3_det(Fe)), B[9];
    for (int a = 0; a < 9; a++) B[a] = beta * Fe[a] / s3 + (1.0 - beta) * R[a];
    csm_m3_mul(B, Fp, T);
}

/* Müller 2005 quadratic mode (report Sec 4): A~ = A~_pq A~_qq^-1 over q~ = (p, q2(p) - qmean) (3x9),
   goals from beta A~ + (1 - beta) [R F^p, 0]. The fit is over the rest offsets p, so with
   plasticity the rigid part still carries F^p (Falkenstein Eq 16) and beta = 0 is exactly the rigid mode. */
void csm_mode_quadratic(double beta, csm_clusters *C, const double *x, const double com[3], int32_t c)
{
    const double *mean = &C->qmean[6 * c], *inv = &C->Aqq_inv[81 * c];
    double Axq[27] = {0}, A[27] = {0};
    for (int32_t j = C->offset[c]; j < C->offset[c + 1]; j++) {
        const double *xi = &x[3 * C->member[j]], *p = &C->p[3 * j];
        double t[9], wm = C->wmass[j];
        csm_quad_terms(p, &t[3]);
        for (int a = 0; a < 3; a++) t[a] = p[a];
        for (int a = 0; a < 6; a++) t[3 + a] -= mean[a];
        for (int r = 0; r < 3; r++) {
            double d = wm * (xi[r] - com[r]);
            for (int a = 0; a < 9; a++) Axq[9 * r + a] += d * t[a];
        }
    }
    for (int r = 0; r < 3; r++)
        for (int b = 0; b < 9; b++) {
            double sum = 0;
            for (int a = 0; a < 9; a++) sum += Axq[9 * r + a] * inv[9 * a + b];
            A[9 * r + b] = sum;
        }
    double *T = &C->T[9 * c], *Q = &C->Q[18 * c];
    for (int r = 0; r < 3; r++) {
        for (int a = 0; a < 3; a++) T[3 * r + a] = beta * A[9 * r + a] + (1.0 - beta) * T[3 * r + a];
        for (int a = 0; a < 6; a++) Q[6 * r + a] = beta * A[9 * r + 3 + a];
    }
}

void csm_mode_ready(csm_world *w)
{
    csm_clusters *C = &w->C;
    /* the continuum energy of a modulus fits the same quadratic basis (elastic.c) */
    int quadratic = w->mode == CSM_MODE_QUADRATIC || (w->energy == CSM_ENERGY_CONTINUUM && w->spring_modulus > 0);
    if (quadratic && !C->Q && csm_clusters_quadratic(C)) {
        /* once per clustering; the only allocation a fit may make */
        csm_out_of_memory("the quadratic fit of the clusters");
    }
    /* the continuum energy's consistent gradients, once per clustering (elastic.c) */
    if (csm_elastic_on(w) && w->gradient == CSM_GRADIENT_CONSISTENT && w->boundary &&
        (!C->eta || C->eta_epoch != C->epoch) && csm_elastic_consistent(w)) {
        csm_out_of_memory("the consistent gradients of the clusters");
    }
}

