/* Müller 2005's linear and quadratic goal modes (solver.mode), used by the cluster fit. */
#ifndef CSM_MODES_H
#define CSM_MODES_H

#include "world.h"

/* The linear mode's goal transform T = (beta F^e / cbrt(det F^e) + (1 - beta) R) F^p, for a
   cluster with a volume (rank 3, det F^e > 0; any other stays rigid). */
void csm_mode_linear(double beta, const double Fe[9], const double R[9], const double Fp[9], double T[9]);
/* The quadratic mode's fit of cluster c about its centre com: T becomes beta A + (1 - beta) T
   and Q the quadratic part beta A~_q. */
void csm_mode_quadratic(double beta, csm_clusters *C, const double *x, const double com[3], int32_t c);
/* The quadratic rest data, made once per clustering when the mode is quadratic. */
void csm_mode_ready(csm_world *w);

#endif
