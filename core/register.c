#include "clustering.h"
#include "core.h"

void csm_core_register(void)
{
    csm_register_clustering(&csm_clustering_random_radius);
    csm_register_clustering(&csm_clustering_fuzzy_cmeans);
    csm_register_clustering(&csm_clustering_per_particle);
}
