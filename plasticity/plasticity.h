/* Plasticity models (plugins). */
#ifndef CSM_PLASTICITY_H
#define CSM_PLASTICITY_H
void csm_plasticity_register(void);
#endif
