/* Plasticity models. `none`: F^p stays I. */
#include "plasticity.h"

#include "plugin.h"

static const csm_param_spec no_params[] = {CSM_PARAM_END};

static const csm_plasticity csm_plasticity_none = {
    "none", "no plastic flow: F^p = I for every cluster", no_params, NULL, NULL, NULL, NULL,
};

void csm_plasticity_register(void) { csm_registry_add(CSM_KIND_PLASTICITY, &csm_plasticity_none); }
