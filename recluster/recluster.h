/* Online reclustering (plugins). */
#ifndef CSM_RECLUSTER_H
#define CSM_RECLUSTER_H
void csm_recluster_register(void);
#endif
