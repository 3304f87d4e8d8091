/* Plasticity models (plugins). */
#ifndef CSM_PLASTICITY_H
#define CSM_PLASTICITY_H

#include "svd3.h"

void csm_plasticity_register(void);

/* Parameters of the Jones 2016 flow rule as Falkenstein 2017 Sec 2.3.1 writes it. */
enum { CSM_STRESS_STRETCH, CSM_STRESS_PAPER };

typedef struct csm_flow_params {
    double yield;       /* lambda, Falkenstein Eq 11 */
    double flow_rate;   /* nu, Falkenstein Eq 13 */
    double hardening;   /* K, Falkenstein Eq 13 (negative: softening) */
    double min_stretch; /* smallest singular value of F^e that still flows */
    double cond_limit;  /* 0, or the largest cond(F^p) a step may flow to */
    int stress_measure; /* CSM_STRESS_*: Falkenstein Eq 14 as printed, |F^e - I|, or |F^e - R|, rotation-free */
    int energy_guard;   /* 1: a step that would raise the cluster's stored energy at fixed positions is
                           halved until it does not (jones2016.c); 0: Falkenstein Eq 12-13 as printed */
    int update;         /* CSM_UPDATE_*: when a step's flow takes effect */
} csm_flow_params;

/* CSM_UPDATE_IMMEDIATE: the flow computed from a step's end positions takes effect at once, so the
   next step's goals see it. CSM_UPDATE_LAGGED (the order of the authors' code, which the paper
   does not state): it takes effect one step later, so each step's goals and strain limit use the
   F^p from before the previous step's flow. */
enum { CSM_UPDATE_IMMEDIATE, CSM_UPDATE_LAGGED };

typedef enum csm_flow_result {
    CSM_FLOW_ELASTIC,  /* below the yield threshold (or hardened past it): F^p unchanged */
    CSM_FLOW_YIELDED,  /* F^p took a step towards F^e's shape */
    CSM_FLOW_SKIPPED,  /* F^e degenerate (collapsed, inverted or not finite): nothing changed */
} csm_flow_result;

/* One step of length h of the flow rule for one cluster whose deformation gradient is F
   (Falkenstein Eq 3): F^e = F (F^p)^-1 (Eq 9), its volume-preserving part F* (Eq 10), the yield test
   (Falkenstein Eq 11), the flow fraction (Eq 13, clamped to [0, 1]) times `scale`,
   F^p <- (F*)^gamma V^T F^p (Eq 12) and the cumulative stress alpha (Falkenstein Eq 14). Updates Fp and
   alpha in place. */
csm_flow_result csm_plastic_flow(const csm_flow_params *p, csm_svd3_fn svd, const double F[9], double h, double scale,
                                 double Fp[9], double *alpha);

#endif
