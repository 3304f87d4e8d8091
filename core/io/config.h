/* Experiment configs (docs/DESIGN.md "Configs"): YAML or JSON parsed with libfyaml into a small tree
   that keeps the file and line of every node, `--set key.path=value` overrides applied to that
   tree, then every section validated against a parameter table. Defaults are inserted into the
   tree, so the tree printed back is the resolved config stored in every log. */
#ifndef CSM_CONFIG_H
#define CSM_CONFIG_H

#include <stdint.h>

#include "contact.h"
#include "error.h"
#include "plugin.h"
#include "world.h"

typedef enum csm_node_kind { CSM_NODE_SCALAR, CSM_NODE_MAP, CSM_NODE_SEQ } csm_node_kind;

typedef struct csm_node {
    csm_node_kind kind;
    char *key;       /* the key, for a mapping's child */
    char *text;      /* a scalar's text */
    int quoted;      /* a quoted scalar is a string, never a number */
    int line;        /* 1-based line in src; for --set, the override's index */
    const char *src; /* file name, or "--set" */
    struct csm_node **child;
    int nchild, cap;
} csm_node;

enum { CSM_SHAPE_BOX, CSM_SHAPE_SPHERE, CSM_SHAPE_CYLINDER, CSM_SHAPE_TORUS, CSM_SHAPE_POINTS, CSM_SHAPE_MESH };
enum { CSM_SAMPLING_GRID, CSM_SAMPLING_POISSON };

enum { CSM_FIT_NONE, CSM_FIT_UNIT_BOX };

/* objects[].shape: the rows of every shape kind fill this one struct (csm_cfg_params). */
typedef struct csm_shape_params {
    double size[3];       /* box */
    double radius;        /* sphere, cylinder */
    double height;        /* cylinder */
    double major, minor;  /* torus */
    int axis;             /* cylinder, torus: 0 x, 1 y, 2 z */
    csm_points positions; /* points */
    const char *path;     /* mesh */
    double rotate[3];     /* mesh: degrees about x, then y, then z */
    int fit;              /* mesh: CSM_FIT_* */
    double scale;         /* mesh */
} csm_shape_params;

/* objects[].sampling */
typedef struct csm_sampling_params {
    double spacing;
    int32_t particles;    /* target count (0: use spacing) */
    int32_t attempts;     /* poisson */
    int32_t mass;         /* CSM_MASS_*: how the object's mass is shared among its particles */
} csm_sampling_params;

/* sampling.mass: volume (each particle's share of the shape's volume, its Voronoi cell clipped
   to the shape) or uniform (the papers': every particle the same mass). */
enum { CSM_MASS_VOLUME, CSM_MASS_UNIFORM };

/* the body keys of objects[] */
typedef struct csm_body_params {
    double mass, density;
    double position[3], deform[9], velocity[3], angular_velocity[3];
    double modulus;           /* shear modulus (Pa) of this object's material; 0: the solver's */
} csm_body_params;

typedef struct csm_object_cfg {
    int line;
    int shape_type;           /* CSM_SHAPE_* */
    csm_plugin_cfg shape;     /* the shape's parameters: csm_shape_params */
    int sampling_type;        /* CSM_SAMPLING_* */
    csm_plugin_cfg sampling;  /* csm_sampling_params */
    csm_plugin_cfg body;      /* csm_body_params */
    int pin_axis[2];          /* below, above: axis index, -1 when absent */
    double pin_value[2];
    int32_t *pin_index;       /* pinned.indices: particle indices within the object */
    int npin_index;
    /* the object's own clustering and plasticity sections, in place of the top-level ones */
    int own_clustering, own_plasticity;
    csm_plugin_cfg clustering, plasticity;
} csm_object_cfg;

/* One key of a config's `sweep:` mapping: a key path and its values, each as YAML flow text
   ready for an override ("key.path=value"). */
typedef struct csm_sweep_axis {
    char *key;
    char **values;
    int nvalues;
    int line;                 /* of the key in the config */
} csm_sweep_axis;

typedef struct csm_config {
    char *file;               /* path of the config */
    char *name;
    int64_t seed;             /* in [0, 2^53] */
    double dt;
    int32_t frames, substeps;
    double max_speed;         /* time.max_speed: a faster particle fails the run (0: no bound) */
    csm_object_cfg *objects;
    int nobjects;
    csm_plugin_cfg clustering, integrator, rotation, plasticity, recluster;
    int svd;                  /* CSM_SVD_* */
    int mode;                 /* CSM_MODE_* (solver.mode) */
    double beta;              /* solver.beta */
    int conserve;             /* CSM_CONSERVE_* (solver.conserve) */
    int volume;               /* CSM_VOLUME_* (solver.volume) */
    double bulk_modulus;      /* solver.bulk_modulus (resolved from young and poisson when they are given) */
    int energy;               /* CSM_ENERGY_* (solver.energy) */
    double stabilization;     /* solver.stabilization */
    int gradient;             /* CSM_GRADIENT_* (solver.gradient) */
    int material;             /* CSM_MATERIAL_* (solver.material) */
    double young, poisson;    /* solver.young (0: not given) and solver.poisson */
    int lanes;                /* CSM_LANES_* (solver.lanes) */
    csm_plugin_cfg *forces, *colliders;
    int nforces, ncolliders;
    csm_contact_cfg contact;  /* the contact: section */
    char *output_path;
    int32_t output_every;
    int output_goals;         /* 0 or 1 */
    int32_t output_compression; /* deflate level, 0: none */
    csm_sweep_axis *sweep;    /* the `sweep:` mapping, in the order written; not part of the run */
    int nsweep;
    csm_node *root;           /* resolved tree (defaults filled in) */
    char *resolved;           /* the resolved tree as YAML text */
} csm_config;

/* Load, override, validate. overrides are "key.path=value" strings. A `sweep:` mapping of key
   paths to non-empty lists is taken out of the tree into cfg->sweep (the base config is the run
   without it); `--set sweep={}` drops it. */
int csm_config_load(const char *path, const char *const *overrides, int noverrides,
                    csm_config *cfg, csm_error *err);
/* The same for a config held in memory; `name` stands for the file name in messages and gives
   the default run name. */
int csm_config_load_text(const char *name, const char *text, const char *const *overrides, int noverrides,
                         csm_config *cfg, csm_error *err);
void csm_config_free(csm_config *cfg);

/* Specs of the sections that are not plugins, for `csm list` and docs/parameters.md. */
const csm_plugin_head *csm_config_shape_kinds(int *count);
const csm_plugin_head *csm_config_sampling_kinds(int *count);
const csm_plugin_head *csm_config_sections(int *count);

/* Registered `solver` keys that are not integrator parameters (rotation, svd, mode, beta,
   conserve, volume, bulk_modulus, lanes). */
extern const csm_param_spec csm_solver_common_params[];

/* Format a parameter's default for listings ("0.5", "[0, -9.81, 0]", "rigid"). */
void csm_param_default_text(const csm_param_spec *s, char *buf, int size);

#endif
