/* Core plugins (clustering methods built on the core kernels). */
#ifndef CSM_CORE_H
#define CSM_CORE_H
void csm_core_register(void);
#endif
