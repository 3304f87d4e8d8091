#include "solvers.h"

#include "plugin.h"

extern const csm_integrator csm_integrator_shape_matching, csm_integrator_pbd, csm_integrator_strain_limited;
extern const csm_rotation csm_rotation_polar_apq, csm_rotation_polar_f;
extern const csm_force csm_force_gravity, csm_force_compress, csm_force_twist, csm_force_drag;
extern const csm_collider csm_collider_plane, csm_collider_sphere;

void csm_solvers_register(void)
{
    csm_registry_add(CSM_KIND_INTEGRATOR, &csm_integrator_shape_matching);
    csm_registry_add(CSM_KIND_INTEGRATOR, &csm_integrator_pbd);
    csm_registry_add(CSM_KIND_INTEGRATOR, &csm_integrator_strain_limited);
    csm_registry_add(CSM_KIND_ROTATION, &csm_rotation_polar_apq);
    csm_registry_add(CSM_KIND_ROTATION, &csm_rotation_polar_f);
    csm_registry_add(CSM_KIND_FORCE, &csm_force_gravity);
    csm_registry_add(CSM_KIND_FORCE, &csm_force_compress);
    csm_registry_add(CSM_KIND_FORCE, &csm_force_twist);
    csm_registry_add(CSM_KIND_FORCE, &csm_force_drag);
    csm_registry_add(CSM_KIND_COLLIDER, &csm_collider_plane);
    csm_registry_add(CSM_KIND_COLLIDER, &csm_collider_sphere);
}
