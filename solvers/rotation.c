/* Rotation extractors. Falkenstein 2017 Sec 3.1: Müller 2005 takes R = polar(A_pq), ignoring
   A_qq; that is wrong whenever A_qq is not diagonal and F stretches non-uniformly. Both are kept
   so the error can be studied. */
#include "plugin.h"
#include "svd3.h"

static const csm_param_spec no_params[] = {CSM_PARAM_END};

/* Müller 2005 Sec 3.3: R from the polar decomposition of A_pq (here A_xr of the plastic rest
   shape q = F^p p, i.e. A_xr (F^p)^T). Exerts no net torque (A_pq R^T is symmetric). */
static void polar_apq_extract(const csm_polar_ctx *polar, const double Apq[9], const double Fe[9], double R[9])
{
    (void)Fe;
    csm_polar3_warm(polar->svd, Apq, polar->q, R);
}

/* Falkenstein 2017 Eq 5 and 15: R from the polar decomposition of F^e = A_xr A_rr^-1 (F^p)^-1. */
static void polar_f_extract(const csm_polar_ctx *polar, const double Apq[9], const double Fe[9], double R[9])
{
    (void)Apq;
    csm_polar3_warm(polar->svd, Fe, polar->q, R);
}

const csm_rotation csm_rotation_polar_apq = {
    .version = 1,
    .name = "polar_apq",
    .summary = "Müller 2005: R = polar(A_pq), ignores A_qq (Falkenstein Sec 3.1 erratum)",
    .params = no_params,
    .extract = polar_apq_extract,
    .torque_free = 1,
};

const csm_rotation csm_rotation_polar_f = {
    .version = 1,
    .name = "polar_f",
    .summary = "Falkenstein 2017: R = polar(F^e), F^e = A_xr A_rr^-1 (F^p)^-1 (Eq 5, 15)",
    .params = no_params,
    .extract = polar_f_extract,
};
