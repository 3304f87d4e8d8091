#include "clustering.h"
#include "core.h"

void csm_core_register(void)
{
    csm_registry_add(CSM_KIND_CLUSTERING, &csm_clustering_random_radius);
    csm_registry_add(CSM_KIND_CLUSTERING, &csm_clustering_fuzzy_cmeans);
    csm_registry_add(CSM_KIND_CLUSTERING, &csm_clustering_per_particle);
}
