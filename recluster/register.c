/* Registers the built-in reclusterers. */
#include "recluster.h"

#include "plugin.h"

extern const csm_reclusterer csm_reclusterer_none, csm_reclusterer_embedded, csm_reclusterer_world_space;

void csm_recluster_register(void)
{
    csm_register_reclusterer(&csm_reclusterer_none);
    csm_register_reclusterer(&csm_reclusterer_embedded);
    csm_register_reclusterer(&csm_reclusterer_world_space);
}
