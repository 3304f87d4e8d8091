/* Integrators, rotation extractors, forces and colliders. */
#ifndef CSM_SOLVERS_H
#define CSM_SOLVERS_H

/* Add every built-in plugin of this folder to the registry. */
void csm_solvers_register(void);

#endif
