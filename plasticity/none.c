/* Plasticity models. `none`: F^p stays I; `jones2016` is in jones2016.c. */
#include "plasticity.h"

#include "plugin.h"

static const csm_param_spec no_params[] = {CSM_PARAM_END};

static const csm_plasticity csm_plasticity_none = {
    .version = 2,
    .name = "none",
    .summary = "no plastic flow: F^p = I for every cluster",
    .params = no_params,
};

extern const csm_plasticity csm_plasticity_jones2016;

void csm_plasticity_register(void)
{
    csm_register_plasticity(&csm_plasticity_none);
    csm_register_plasticity(&csm_plasticity_jones2016);
}
