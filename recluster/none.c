/* Online reclusterers. `none`: the initial clusters are kept. */
#include "recluster.h"

#include "plugin.h"

static const csm_param_spec no_params[] = {CSM_PARAM_END};

static const csm_reclusterer csm_reclusterer_none = {
    "none", "keep the initial clusters for the whole run", no_params, NULL, NULL, NULL, NULL,
};

void csm_recluster_register(void) { csm_registry_add(CSM_KIND_RECLUSTERER, &csm_reclusterer_none); }
