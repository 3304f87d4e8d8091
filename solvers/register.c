#include "solvers.h"

#include "plugin.h"

extern const csm_integrator csm_integrator_shape_matching, csm_integrator_pbd, csm_integrator_strain_limited,
    csm_integrator_xpbd, csm_integrator_projective_dynamics;
extern const csm_rotation csm_rotation_polar_apq, csm_rotation_polar_f;
extern const csm_force csm_force_gravity, csm_force_compress, csm_force_twist, csm_force_load, csm_force_drag;
extern const csm_collider csm_collider_plane, csm_collider_sphere, csm_collider_box, csm_collider_mesh;

void csm_solvers_register(void)
{
    csm_register_integrator(&csm_integrator_shape_matching);
    csm_register_integrator(&csm_integrator_pbd);
    csm_register_integrator(&csm_integrator_strain_limited);
    csm_register_integrator(&csm_integrator_xpbd);
    csm_register_integrator(&csm_integrator_projective_dynamics);
    csm_register_rotation(&csm_rotation_polar_apq);
    csm_register_rotation(&csm_rotation_polar_f);
    csm_register_force(&csm_force_gravity);
    csm_register_force(&csm_force_compress);
    csm_register_force(&csm_force_twist);
    csm_register_force(&csm_force_load);
    csm_register_force(&csm_force_drag);
    csm_register_collider(&csm_collider_plane);
    csm_register_collider(&csm_collider_sphere);
    csm_register_collider(&csm_collider_box);
    csm_register_collider(&csm_collider_mesh);
}
