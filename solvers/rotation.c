/* Rotation extractors. Falkenstein 2017 Sec 3.1: Müller 2005 takes R = polar(A_pq), ignoring
   A_qq, which is not the rotation of F whenever A_qq is not diagonal and F stretches
   non-uniformly. But polar(A_pq) is the rotation that minimises the goal springs' energy
   sum w m |x - xbar - R q|^2 (Müller 2005 Sec 3.3), so the spring forces are that energy's
   gradient (the derivative through R vanishes at the minimiser) and conserve energy. polar(F^e)
   is not the minimiser: its goals do work, measured as energy created on anisotropic clusters
   and strongly flowed plastic ones. polar_apq is the default; polar_f reproduces Falkenstein. */
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
    .version = 2,
    .name = "polar_apq",
    .summary = "Müller 2005: R = polar(A_pq), the minimiser of the springs' energy: conservative, torque-free "
               "(not the rotation of F when A_qq is anisotropic, Falkenstein Sec 3.1)",
    .params = no_params,
    .extract = polar_apq_extract,
    .torque_free = 1,
    .polar_of = CSM_POLAR_OF_APQ,
};

const csm_rotation csm_rotation_polar_f = {
    .version = 2,
    .name = "polar_f",
    .summary = "Falkenstein 2017: R = polar(F^e), F^e = A_xr A_rr^-1 (F^p)^-1 (Eq 5, 15); its goals are not "
               "torque-free and do work on anisotropic clusters",
    .params = no_params,
    .extract = polar_f_extract,
    .polar_of = CSM_POLAR_OF_FE,
};
