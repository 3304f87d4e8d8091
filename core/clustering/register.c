#include "methods.h"

void csm_clustering_register(void)
{
    csm_register_clustering(&csm_clustering_random_radius);
    csm_register_clustering(&csm_clustering_fuzzy_cmeans);
    csm_register_clustering(&csm_clustering_per_particle);
}
