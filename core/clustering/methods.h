/* The clustering plugins: random_radius and per_particle (radius.c), fuzzy_cmeans
   (fuzzy_cmeans.c). They fill a csm_cluster_builder (core/clustering.h), which core turns into
   clusters. */
#ifndef CSM_CLUSTERING_METHODS_H
#define CSM_CLUSTERING_METHODS_H

#include "plugin.h"

extern const csm_clustering csm_clustering_random_radius, csm_clustering_fuzzy_cmeans, csm_clustering_per_particle;

/* Add every clustering plugin of this folder to the registry. */
void csm_clustering_register(void);

#endif
