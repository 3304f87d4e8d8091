/* The built-in plugins of every kind, registered once: the one place the layers meet. */
#ifndef CSM_BUILTINS_H
#define CSM_BUILTINS_H

/* Register every built-in plugin; call before loading a config (again: nothing happens). */
void csm_register_builtins(void);

#endif
