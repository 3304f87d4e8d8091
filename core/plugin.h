/* Plugins: const tables of function pointers with a name, a one-line summary and a parameter
   table (DESIGN.md "Plugins"). One registry per kind; lookup by name returns the plugin or NULL.
   A parameter table is the only place a default, a range and a one-line doc live: config
   validation, `csm list` and the resolved config all come from it. Append fields only. */
#ifndef CSM_PLUGIN_H
#define CSM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "svd3.h"

/* Bumped whenever a plugin struct or csm_world changes layout. */
#define CSM_PLUGIN_ABI 3

typedef enum csm_type {
    CSM_REAL,   /* finite double in [min, max] */
    CSM_INT,    /* integer in [min, max] */
    CSM_BOOL,   /* true | false */
    CSM_ENUM,   /* one of `choices` ("a|b|c"); the value is the index, def the default index */
    CSM_VEC3,   /* [x, y, z]; default def3 */
    CSM_MAT3,   /* [[..],[..],[..]]; default identity */
    CSM_STRING, /* text; default defs */
    CSM_POINTS, /* [[x,y,z], ...] */
} csm_type;

enum { CSM_PARAM_REQUIRED = 1 };

/* Terminates a parameter table. */
#define CSM_PARAM_END {NULL, 0, 0, 0, 0, NULL, NULL, {0, 0, 0}, NULL, 0}

typedef struct csm_param_spec {
    const char *key;
    csm_type type;
    double def, min, max;
    const char *doc;
    const char *choices; /* CSM_ENUM */
    double def3[3];      /* CSM_VEC3 */
    const char *defs;    /* CSM_STRING */
    int flags;           /* CSM_PARAM_REQUIRED */
} csm_param_spec;

/* A resolved value of one parameter (parallel to a spec table). */
typedef struct csm_value {
    double num;     /* REAL, INT, BOOL (0/1), ENUM (index) */
    double vec[9];  /* VEC3 (3), MAT3 (9, row-major) */
    char *str;      /* STRING (owned) */
    double *points; /* POINTS (owned, 3 * npoints) */
    int32_t npoints;
    int line;       /* where it was given: a line of the config, 0 for a default */
    int given;      /* 1 when the config or --set gave it */
} csm_value;

#define CSM_MAX_PARAMS 32
/* Plugins of one kind the registry holds. */
#define CSM_MAX_PLUGINS 64

/* A plugin selected by a config section, with its resolved parameter values. */
typedef struct csm_plugin_cfg {
    const struct csm_plugin_head *plugin;
    csm_value values[CSM_MAX_PARAMS];
    const char *src; /* the config file (or "--set") the section came from */
    int line;
} csm_plugin_cfg;

double csm_cfg_num(const csm_plugin_cfg *pc, const char *key);
const double *csm_cfg_vec(const csm_plugin_cfg *pc, const char *key);
const char *csm_cfg_str(const csm_plugin_cfg *pc, const char *key);
/* "file:line", or "--set #N" for the N-th override, for messages; returns buf. */
const char *csm_cfg_where(const char *src, int line, char *buf, int size);
/* A bad-input error about a plugin's section: "file:line: <plugin>: message". */
int csm_cfg_fail(const csm_plugin_cfg *pc, csm_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct csm_world;

#define CSM_PLUGIN_HEAD                                                                          \
    const char *name;                                                                            \
    const char *summary;                                                                         \
    const csm_param_spec *params /* terminated by an entry with key NULL */

typedef struct csm_plugin_head {
    CSM_PLUGIN_HEAD;
} csm_plugin_head;

typedef enum csm_kind {
    CSM_KIND_INTEGRATOR,
    CSM_KIND_ROTATION,
    CSM_KIND_CLUSTERING,
    CSM_KIND_PLASTICITY,
    CSM_KIND_RECLUSTERER,
    CSM_KIND_FORCE,
    CSM_KIND_COLLIDER,
    CSM_KIND_COUNT
} csm_kind;

/* Advances particles by one step of length h. */
typedef struct csm_integrator {
    CSM_PLUGIN_HEAD;
    int (*create)(const csm_plugin_cfg *cfg, void **state, csm_error *err);
    int (*step)(struct csm_world *w, void *state, double h, csm_error *err);
    void (*destroy)(void *state);
} csm_integrator;

/* How a rotation plugin takes a polar decomposition: through the configured SVD backend,
   warm started from the cluster's last rotation q (csm_polar3_warm), which it updates. */
typedef struct csm_polar_ctx {
    csm_svd3_fn svd;
    double *q; /* [4] unit quaternion of the cluster's last rotation; zeros when it has none */
} csm_polar_ctx;

/* Extracts a cluster's rotation from its fit. Apq = sum_i w m (x_i - xbar) (F^p p_ic)^T (A_xr
   with the plastic rest shape folded in), Fe = F (F^p)^-1. Writes R, a proper rotation. */
typedef struct csm_rotation {
    CSM_PLUGIN_HEAD;
    void (*extract)(const csm_polar_ctx *polar, const double Apq[9], const double Fe[9], double R[9]);
    /* 1 when the rigid goals R F^p p + x-bar exert no net torque about x-bar at the fitted
       positions (a Procrustes rotation: A_pq R^T symmetric), so the angular projection of
       unclamped spring goals is a no-op the kernel may skip; 0 (the default): project. */
    int torque_free;
} csm_rotation;

/* Builds initial clusters over particles [first, first + count) of one object. */
struct csm_cluster_builder;
struct csm_particles;
typedef struct csm_clustering {
    CSM_PLUGIN_HEAD;
    int (*build)(const csm_plugin_cfg *cfg, const struct csm_particles *p, int32_t first,
                 int32_t count, uint64_t seed, struct csm_cluster_builder *out, csm_error *err);
} csm_clustering;

/* Generic stage plugin: forces (add to w->P.force), colliders, plasticity, reclusterers. */
typedef struct csm_stage {
    CSM_PLUGIN_HEAD;
    int (*create)(const csm_plugin_cfg *cfg, const struct csm_world *w, void **state,
                  csm_error *err);
    int (*apply)(struct csm_world *w, void *state, double h, csm_error *err);
    void (*destroy)(void *state);
    /* Optional (NULL: none): potential energy of a conservative force at the current state. */
    double (*potential)(const struct csm_world *w, const void *state);
} csm_stage;

typedef csm_stage csm_force;
typedef csm_stage csm_collider;
typedef csm_stage csm_plasticity;
typedef csm_stage csm_reclusterer;

/* Registry. Built-in plugins are added at start-up; a shared object named in a config's
   `plugins:` list exports `int csm_plugin_register(const csm_registrar *r)` and adds its own. */
typedef struct csm_registrar {
    int abi; /* CSM_PLUGIN_ABI of the host */
    int (*add)(csm_kind kind, const void *plugin);
} csm_registrar;

int csm_registry_add(csm_kind kind, const void *plugin);
const void *csm_registry_find(csm_kind kind, const char *name);
int csm_registry_count(csm_kind kind);
const csm_plugin_head *csm_registry_at(csm_kind kind, int index);
const char *csm_kind_name(csm_kind kind);
/* "a, b, c": the valid names of a kind, for error messages. */
void csm_registry_names(csm_kind kind, char *buf, int size);
/* Load a plugin shared object; checks the ABI number. */
int csm_registry_load(const char *path, csm_error *err);

#endif
