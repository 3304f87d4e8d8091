/* The section tables of the config keys that are not plugins (docs/DESIGN.md "Configs"): the only
   place their defaults, ranges and docs live. config.c assembles a csm_config with them. */
#include "config_tree.h"

#include <stddef.h>

#define ROWS(table) (sizeof(table) / sizeof((table)[0]))

/* The rows of the top level, time and output fill csm_config itself; name and output.path are
   read by load(), which derives their defaults. */
const csm_param_spec csm_time_params[] = {
    CSM_P_REAL(csm_config, dt, 1.0 / 60.0, 1e-9, 10.0, "frame length in seconds"),
    CSM_P_INT(csm_config, frames, 240, 0, 1e9, "frames to simulate after frame 0"),
    CSM_P_INT(csm_config, substeps, 1, 1, 1e5, "steps per frame (step h = dt / substeps)"),
    CSM_P_REAL(csm_config, max_speed, 0, 0, 1e300,
               "stop the run as failed when a particle moves faster than this, in m/s (0: no bound; a NaN or infinite "
               "state always stops it)"),
    CSM_PARAM_END,
};

const csm_param_spec csm_output_params[] = {
    CSM_P_UNBOUND("path", CSM_STRING, 0, 0, 0, "HDF5 log path (default out/<name>.h5)", NULL, "", 0),
    CSM_PARAM_FIELD("every", CSM_INT, csm_config, output_every, 1, 1, 1e9, "log every N-th frame", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("goals", CSM_BOOL, csm_config, output_goals, 0, 0, 1, "also log /frames/goals", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("compression", CSM_INT, csm_config, output_compression, 0, 0, 9,
                    "deflate level of the per-particle datasets, after a byte shuffle (0: none; h5py and ParaView "
                    "read either). Positions and velocities are full-precision doubles: level 1 made the bunny's "
                    "log 10 % smaller and its run 1.4x slower", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_END,
};

const csm_param_spec csm_contact_params[] = {
    CSM_PARAM_FIELD("method", CSM_ENUM, csm_config, contact.method, CSM_CONTACT_NONE, 0, 0,
                    "contact between particles: none; particles (each a sphere of the radius below; pairs closer "
                    "than two radii are pushed apart inside the integrator's iterations); cluster_proxies (Jones et al. "
                    "2015: particles are pushed out of other clusters' proxies, a sphere cut by half-spaces in the "
                    "cluster's rest space, grown by two radii)", "none|particles|cluster_proxies", 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("radius", CSM_REAL, csm_config, contact.radius, 0, 0, 1e9,
                    "m: each particle's radius (0: half the sampling spacing, the largest of the objects')", NULL, 0,
                    0, 0, NULL, 0),
    CSM_PARAM_FIELD("friction", CSM_REAL, csm_config, contact.friction, 0.3, 0, 100,
                    "Coulomb friction coefficient between particles", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("self", CSM_BOOL, csm_config, contact.self, 0, 0, 1,
                    "also between particles of one object, except two that share a cluster or lie within twice the "
                    "contact distance in the rest shape (cluster_proxies: except clusters that share a particle, and "
                    "a particle a proxy holds at rest)", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("passes", CSM_INT, csm_config, contact.passes, 3, 1, 1000,
                    "Gauss-Seidel passes over the pairs each time the integrator projects", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("cut", CSM_REAL, csm_config, contact.cut, 1, 0, 1,
                    "cluster_proxies: a plane bounding a cluster's members along a principal axis of A_rr (grown by "
                    "two radii) joins its proxy when it lies closer to the centre than cut times the sphere's radius "
                    "(Jones et al. 2015; 0: spheres alone, 1: every plane that cuts the sphere)", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("reaction", CSM_ENUM, csm_config, contact.reaction, CSM_REACTION_RIGID, 0, 0,
                    "cluster_proxies: rigid (a particle goes out by the nearest face, or after a path of d or more "
                    "relative to the cluster back out the side it came from, the push shared with the cluster as a "
                    "rigid body by their inverse masses: keeps linear and angular momentum and creates no energy) or "
                    "jones2015 (the paper's: the particle alone moves, out through the nearest face; momentum is not "
                    "kept)",
                    "rigid|jones2015", 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("normal", CSM_ENUM, csm_config, contact.normal, CSM_NORMAL_SURFACE, 0, 0,
                    "particles: the direction a particle is pushed out of another object along. surface: that "
                    "object's surface normal where the particle lies over it, the push shared by the surface "
                    "particles around that point (two flat faces slide on each other as planes, whatever their "
                    "lattices); the line between the two particles' centres elsewhere, and between particles "
                    "of one object. centres: always the line between the centres (spheres: lattices that "
                    "meet interlock, and a body on another grips it even without friction)",
                    "surface|centres", 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("restitution", CSM_REAL, csm_config, contact.restitution, 0, 0, 1,
                    "Newton's coefficient of restitution between two objects, applied after the step to "
                    "each two that touched as rigid bodies, by one impulse at their contact region's centre "
                    "(momentum and angular momentum kept). 0: none added (the pushes stop the bodies against "
                    "each other; what their strain gives back is theirs)", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("bounce_threshold", CSM_REAL, csm_config, contact.bounce_threshold, 0.5, 0, 1e9,
                    "m/s: approaches slower than this get no restitution, so resting contact stays at rest (as "
                    "Box2D's restitution threshold)", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("response", CSM_ENUM, csm_config, contact.response, CSM_CONTACT_RESPONSE_BODY, 0, 0,
                    "what static friction between objects acts on, with either method: body (at the end of each "
                    "projection the two objects that touched are also held as rigid bodies by Coulomb's law on "
                    "their contact region's total: the impulse and the couple about its normal that stop their "
                    "relative slip there, with the pairs' friction within mu times their pushes; "
                    "momentum kept, angular momentum to the first order of the turn) or particles (each pair's "
                    "own friction alone, the papers' per-vertex rule: bodies creep where the iterations stop "
                    "short)",
                    "body|particles", 0, 0, 0, NULL, 0),
    CSM_PARAM_END,
};

const csm_param_spec csm_top_params[] = {
    CSM_P_UNBOUND("name", CSM_STRING, 0, 0, 0, "experiment name (default: the config's file name)", NULL, "", 0),
    CSM_P_INT(csm_config, seed, 1, 0, 9007199254740992.0, "seed of every random choice"),
    CSM_PARAM_END,
};

static const csm_param_spec box_params[] = {
    CSM_P_VEC3(csm_shape_params, size, 1, 1, 1, 1e-9, 1e9, "edge lengths"),
    CSM_PARAM_END,
};
static const csm_param_spec sphere_params[] = {
    CSM_P_REAL(csm_shape_params, radius, 0.5, 1e-9, 1e9, "radius"),
    CSM_PARAM_END,
};
static const csm_param_spec cylinder_params[] = {
    CSM_P_REAL(csm_shape_params, radius, 0.5, 1e-9, 1e9, "radius"),
    CSM_P_REAL(csm_shape_params, height, 1.0, 1e-9, 1e9, "length along the axis"),
    CSM_P_ENUM(csm_shape_params, axis, 1, "x|y|z", "axis of the cylinder"),
    CSM_PARAM_END,
};
static const csm_param_spec torus_params[] = {
    CSM_P_REAL(csm_shape_params, major, 0.5, 1e-9, 1e9, "distance from the centre to the tube's centre"),
    CSM_P_REAL(csm_shape_params, minor, 0.2, 1e-9, 1e9, "tube radius"),
    CSM_P_ENUM(csm_shape_params, axis, 1, "x|y|z", "axis of symmetry"),
    CSM_PARAM_END,
};
static const csm_param_spec points_params[] = {
    CSM_P_POINTS(csm_shape_params, positions, -1e9, 1e9, "explicit particle positions"),
    CSM_PARAM_END,
};

static const csm_param_spec mesh_params[] = {
    CSM_PARAM_FIELD("path", CSM_STRING, csm_shape_params, path, 0, 0, 0,
                    "OFF or OBJ file; a relative path is tried from the current folder, then the config's folder and "
                    "those above",
                    NULL, 0, 0, 0, "", CSM_PARAM_REQUIRED),
    CSM_P_VEC3(csm_shape_params, rotate, 0, 0, 0, -1e9, 1e9, "rotation in degrees about x, then y, then z"),
    CSM_P_ENUM(csm_shape_params, fit, CSM_FIT_NONE, "none|unit_box",
               "unit_box: scale so the longest bounding-box edge is 1"),
    CSM_P_REAL(csm_shape_params, scale, 1.0, 1e-9, 1e9, "uniform scale, after fit"),
    CSM_PARAM_END,
};

static const csm_plugin_head shape_kinds[] = {
    {1, "box", "axis-aligned box centred on the object's position", box_params},
    {1, "sphere", "ball", sphere_params},
    {1, "cylinder", "solid cylinder", cylinder_params},
    {1, "torus", "solid torus", torus_params},
    {1, "points", "particles at the given positions (sampling is ignored)", points_params},
    {1, "mesh", "inside of a triangle or polygon mesh (generalized winding number), centred on its bounding box",
     mesh_params},
};

#define MASS_PARAM \
    CSM_P_ENUM(csm_sampling_params, mass, CSM_MASS_VOLUME, "volume|uniform",                                    \
               "how the object's mass is shared: volume (in proportion to each particle's Voronoi cell clipped to " \
               "the shape, so the particles integrate the body's volume and its moments; a grid's face particles "  \
               "carry half a cell) or uniform (the papers': equal masses, which put a cell's full mass on the faces)")

static const csm_param_spec grid_params[] = {
    CSM_P_REAL(csm_sampling_params, spacing, 0.1, 1e-6, 1e9, "distance between grid points"),
    CSM_P_INT(csm_sampling_params, particles, 0, 0, 1e8, "target particle count; picks the spacing (0: use spacing)"),
    MASS_PARAM,
    CSM_PARAM_END,
};
static const csm_param_spec poisson_params[] = {
    CSM_P_REAL(csm_sampling_params, spacing, 0.1, 1e-6, 1e9, "minimum distance between particles (Bridson 2007)"),
    CSM_P_INT(csm_sampling_params, attempts, 30, 1, 1000, "candidates tried around each active sample"),
    CSM_P_INT(csm_sampling_params, particles, 0, 0, 1e8, "target particle count; picks the spacing (0: use spacing)"),
    MASS_PARAM,
    CSM_PARAM_END,
};
static const csm_plugin_head sampling_kinds[] = {
    {1, "grid", "regular cubic grid inside the shape", grid_params},
    {1, "poisson", "Poisson-disk blue noise inside the shape (Bridson 2007)", poisson_params},
};

const csm_param_spec csm_body_table[] = {
    CSM_P_REAL(csm_body_params, mass, 1.0, 1e-300, 1e300, "total mass of the object (ignored when density is given)"),
    CSM_P_REAL(csm_body_params, density, 0, 0, 1e300, "mass per unit volume (0: use mass)"),
    CSM_P_VEC3(csm_body_params, position, 0, 0, 0, -1e9, 1e9, "where the shape's centre is placed"),
    CSM_P_MAT3(csm_body_params, deform, -1e9, 1e9, "initial deformation about the centroid; rest shape undeformed"),
    CSM_P_VEC3(csm_body_params, velocity, 0, 0, 0, -1e9, 1e9, "initial velocity"),
    CSM_P_VEC3(csm_body_params, angular_velocity, 0, 0, 0, -1e9, 1e9, "initial angular velocity about the centroid"),
    CSM_P_REAL(csm_body_params, modulus, 0, 0, 1e15,
               "shear modulus mu (Pa) of this object's material, in place of the solver's modulus (0: the solver's; "
               "needs an integrator that takes its stiffness from a modulus)"),
    CSM_PARAM_END,
};
const csm_param_spec csm_pin_index_spec = CSM_P_UNBOUND("indices", CSM_INT, 0, 0, 2147483647, "particle index", NULL,
                                                           NULL, 0);
const csm_param_spec csm_pin_table[] = {
    CSM_P_ENUM(csm_pin_params, axis, 1, "x|y|z", "world axis"),
    CSM_PARAM_FIELD("value", CSM_REAL, csm_pin_params, value, 0, -1e9, 1e9, "world coordinate at t = 0", NULL, 0, 0, 0,
                    NULL, CSM_PARAM_REQUIRED),
    CSM_PARAM_END,
};

/* `rotation` names a plugin, which load() looks up; the others fill csm_config. */
const csm_param_spec csm_solver_common_params[] = {
    CSM_P_UNBOUND("rotation", CSM_STRING, 0, 0, 0,
                  "rotation extractor (polar_apq: the springs' energy minimiser, conservative and torque-free)", NULL,
                  "polar_apq", 0),
    CSM_P_ENUM(csm_config, svd, CSM_SVD_FAST, "fast|lapacke", "3x3 SVD backend"),
    CSM_P_ENUM(csm_config, mode, CSM_MODE_RIGID, "rigid|linear|quadratic",
               "goal deformation (Müller 2005): rigid R, linear beta A + (1 - beta) R, quadratic 9-term fit"),
    CSM_P_REAL(csm_config, beta, 0, 0, 1, "how much of the linear / quadratic fit the goals keep (0: rigid)"),
    CSM_P_ENUM(csm_config, conserve, CSM_CONSERVE_ANGULAR, "none|linear|angular",
               "what each cluster's goal corrections keep: none (the papers' goals; the strain clamp and polar_f push "
               "the body), linear (their mass-weighted mean removed: momentum), angular (also their rigid rotation "
               "about the start of the step: angular momentum)"),
    CSM_P_ENUM(csm_config, volume, CSM_VOLUME_AUTO, "auto|coupled|split",
               "how a cluster holds its volume: coupled (the papers' goals R F^p p, whose springs hold shape and volume "
               "together; Falkenstein Eq 16), split (shape springs towards the best similarity s R F^p p, or the "
               "continuum energy's deviatoric part, and volume by its own constraint det F = 1 per cluster, projected "
               "in the solver's loop; under the continuum energy F is the fitted field's mean gradient with its "
               "consistent correction, which passes the patch test), auto (split when "
               "plasticity is on and the integrator projects volume, else coupled)"),
    CSM_P_REAL(csm_config, bulk_modulus, 0, 0, 1e15,
               "with volume split: bulk modulus kappa (Pa) of each cluster's volume term 1/2 kappa V_c (det F - 1)^2, "
               "projected with compliance 1 / (kappa V_c) (Macklin et al. 2016); 0: the bulk stiffness the coupled "
               "springs have at F^p = 1 (Poisson's ratio 0; a hard constraint for pbd, which has no springs)"),
    CSM_P_ENUM(csm_config, energy, CSM_ENERGY_CONTINUUM, "continuum|goals",
               "what the clusters of a modulus store: continuum (the linear-elastic strain energy of each cluster's "
               "quadratic fit over its particles' cells (six points each, exact for a linear strain, where "
               "sampling.mass is volume), with Lame lambda from bulk_modulus or poisson, plus a spring on what the "
               "fit cannot follow; experiments/validation/ measures how close it comes to the material) or goals (the papers' springs "
               "1/2 k_c sum w m |x - g|^2 towards rigid goals, exact only under uniform strain of a round cluster)"),
    CSM_P_REAL(csm_config, stabilization, 0.3, 1e-6, 1,
               "with energy continuum: the stiffness of the spring on what a cluster's quadratic fit cannot follow, as "
               "a share theta of the shear term's stiffness bound (no motion is free of energy; a smooth field's cubic "
               "part pays it too, which stiffens a coarse body in bending and vanishes as the clusters shrink; with "
               "gradient fit a uniform load strains it as well, and below 1 the body is softer than its material)"),
    CSM_P_ENUM(csm_config, gradient, CSM_GRADIENT_CONSISTENT, "consistent|fit",
               "with energy continuum: consistent (each membership's share of its cluster's mean gradient corrected "
               "once per clustering so that the clusters' forces under a uniform stress balance at every particle "
               "and the surface's take the stress times its area: a uniform strain is exact, the patch test of "
               "finite elements, after Chen et al. 2013's variationally consistent integration) or fit (the "
               "quadratic fits' own gradients, whose forces under a uniform stress do not balance inside the body)"),
    CSM_P_ENUM(csm_config, material, CSM_MATERIAL_COROTATED, "corotated|neo_hookean",
               "with energy continuum: the strain energy per volume at each quadrature point, of the fitted field's "
               "gradient F, J = det F: corotated (mu |S - 1|^2 + lambda / 2 (tr S - 3)^2, S the stretch of F's "
               "polar decomposition) or neo_hookean (mu / 2 (J^-2/3 tr(F^T F) - 3) + kappa / 2 (J - 1)^2, the "
               "finite-element codes' compressible neo-Hookean solid, kappa the bulk modulus; under volume split "
               "its first term alone). Both are linear elasticity with the same mu and nu at small strain"),
    CSM_P_REAL(csm_config, young, 0, 0, 1e15,
               "Young's modulus E (Pa): sets the integrator's modulus to mu = E / (2 (1 + nu)) and bulk_modulus to "
               "E / (3 (1 - 2 nu)) (0: give modulus instead)"),
    CSM_P_REAL(csm_config, poisson, 0, -0.99, 0.499,
               "Poisson's ratio nu: with young or the integrator's modulus, sets bulk_modulus = 2 mu (1 + nu) / "
               "(3 (1 - 2 nu)) (the continuum energy's lambda, or the split volume term's kappa)"),
    CSM_P_ENUM(csm_config, lanes, CSM_LANES_AUTO, "auto|members|clusters",
               "whose sums share a vector in a fit: members (8 members of one cluster, summed across the lanes at "
               "the end), clusters (8 clusters side by side, each summing its members in order), auto (clusters for "
               "blocks of small clusters of about equal size); the same physics, rounded differently"),
    CSM_PARAM_END,
};

static const csm_plugin_head config_sections[] = {
    {1, "(top level)", "name, seed", csm_top_params},
    {1, "time", "time stepping", csm_time_params},
    {1, "contact", "contact between objects and within one (core/contact.h)", csm_contact_params},
    {1, "output", "the HDF5 log", csm_output_params},
    {1, "objects[].(body)", "per-object placement and mass", csm_body_table},
    {1, "objects[].pinned.below|above", "kinematic particles", csm_pin_table},
};

const csm_plugin_head *csm_config_shape_kinds(int *count)
{
    *count = (int)(sizeof shape_kinds / sizeof shape_kinds[0]);
    return shape_kinds;
}
const csm_plugin_head *csm_config_sampling_kinds(int *count)
{
    *count = (int)(sizeof sampling_kinds / sizeof sampling_kinds[0]);
    return sampling_kinds;
}
const csm_plugin_head *csm_config_sections(int *count)
{
    *count = (int)(sizeof config_sections / sizeof config_sections[0]);
    return config_sections;
}

_Static_assert(ROWS(csm_top_params) <= CSM_MAX_PARAMS, "a section's values fit csm_plugin_cfg.values");
_Static_assert(ROWS(csm_time_params) <= CSM_MAX_PARAMS, "a section's values fit csm_plugin_cfg.values");
_Static_assert(ROWS(csm_output_params) <= CSM_MAX_PARAMS, "a section's values fit csm_plugin_cfg.values");
_Static_assert(ROWS(csm_contact_params) <= CSM_MAX_PARAMS, "a section's values fit csm_plugin_cfg.values");
_Static_assert(ROWS(csm_body_table) <= CSM_MAX_PARAMS, "a section's values fit csm_plugin_cfg.values");
_Static_assert(ROWS(csm_pin_table) <= CSM_MAX_PARAMS, "a section's values fit csm_plugin_cfg.values");
