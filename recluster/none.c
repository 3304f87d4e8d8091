/* `none`: the initial clusters are kept for the whole run. */
#include "recluster.h"

#include "plugin.h"

static const csm_param_spec no_params[] = {CSM_PARAM_END};

const csm_reclusterer csm_reclusterer_none = {
    .version = 1,
    .name = "none",
    .summary = "keep the initial clusters for the whole run",
    .params = no_params,
};
