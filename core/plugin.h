/* Plugins: const tables of function pointers with a version, a name, a one-line summary and a
   parameter table (docs/DESIGN.md "Plugins"). One registry per kind; lookup by name returns the
   plugin or NULL. A parameter table is the only place a default, a range and a one-line doc
   live: config validation, `csm list`, the resolved config and the plugin's own parameter
   struct all come from it.

   The API grows by appending, as SQLite's modules do: every plugin struct starts with `version`,
   the revision of its kind's struct it was written for. A field added to a kind later is read
   only from plugins whose version is at least the one that added it, so a plugin built against
   an older header keeps working. Registration is typed per kind and checked by the host. */
#ifndef CSM_PLUGIN_H
#define CSM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "svd3.h"

/* Bumped when a change is not an append (a field's meaning or place changed). */
#define CSM_PLUGIN_ABI 4

typedef enum csm_type {
    CSM_REAL,   /* finite double in [min, max]; field: double */
    CSM_INT,    /* integer in [min, max]; field: int32_t, or int64_t for a wider range */
    CSM_BOOL,   /* true | false; field: int (0 or 1) */
    CSM_ENUM,   /* one of `choices` ("a|b|c"); field: int, the index; def the default index */
    CSM_VEC3,   /* [x, y, z]; default def3; field: double[3] */
    CSM_MAT3,   /* [[..],[..],[..]]; default identity; field: double[9], row-major */
    CSM_STRING, /* text; default defs; field: const char * (owned by the config) */
    CSM_POINTS, /* [[x,y,z], ...]; field: csm_points */
    CSM_KEYFRAMES, /* [[t, x, y, z], ...], t increasing, or [] (none); field: csm_keyframes */
} csm_type;

enum { CSM_PARAM_REQUIRED = 1 };

/* The value of a CSM_KEYFRAMES parameter: n rows of (t, x, y, z), t strictly increasing. */
typedef struct csm_keyframes {
    const double *txyz; /* [4n], owned by the config */
    int32_t n;
} csm_keyframes;

/* The value of a CSM_POINTS parameter in a parameter struct. */
typedef struct csm_points {
    const double *xyz; /* [3n], owned by the config */
    int32_t n;
} csm_points;

typedef struct csm_param_spec {
    const char *key;
    csm_type type;
    double def, min, max;
    const char *doc;
    const char *choices; /* CSM_ENUM */
    double def3[3];      /* CSM_VEC3 */
    const char *defs;    /* CSM_STRING */
    int flags;           /* CSM_PARAM_REQUIRED */
    size_t offset, size; /* the field the loader fills in the section's parameter struct; size 0: none */
} csm_param_spec;

/* Table rows, one macro per type. T is the parameter struct and f its field, whose name is the
   key. A plugin's create reads the filled struct (csm_cfg_params), never a key. */
#define CSM_PARAM_FIELD(key_, type_, T, f, def_, min_, max_, doc_, choices_, d0, d1, d2, defs_, flags_)     \
    {(key_), (type_), (def_), (min_), (max_), (doc_), (choices_), {(d0), (d1), (d2)}, (defs_), (flags_),     \
     offsetof(T, f), sizeof(((T *)0)->f)}
#define CSM_P_REAL(T, f, def, min, max, doc) CSM_PARAM_FIELD(#f, CSM_REAL, T, f, def, min, max, doc, NULL, 0, 0, 0, NULL, 0)
#define CSM_P_INT(T, f, def, min, max, doc) CSM_PARAM_FIELD(#f, CSM_INT, T, f, def, min, max, doc, NULL, 0, 0, 0, NULL, 0)
#define CSM_P_BOOL(T, f, def, doc) CSM_PARAM_FIELD(#f, CSM_BOOL, T, f, def, 0, 1, doc, NULL, 0, 0, 0, NULL, 0)
/* choices "a|b|c"; def is the index of the default */
#define CSM_P_ENUM(T, f, def, choices, doc) CSM_PARAM_FIELD(#f, CSM_ENUM, T, f, def, 0, 0, doc, choices, 0, 0, 0, NULL, 0)
#define CSM_P_VEC3(T, f, x, y, z, min, max, doc) CSM_PARAM_FIELD(#f, CSM_VEC3, T, f, 0, min, max, doc, NULL, x, y, z, NULL, 0)
#define CSM_P_MAT3(T, f, min, max, doc) CSM_PARAM_FIELD(#f, CSM_MAT3, T, f, 0, min, max, doc, NULL, 0, 0, 0, NULL, 0)
#define CSM_P_STRING(T, f, def, doc) CSM_PARAM_FIELD(#f, CSM_STRING, T, f, 0, 0, 0, doc, NULL, 0, 0, 0, def, 0)
#define CSM_P_KEYFRAMES(T, f, min, max, doc) CSM_PARAM_FIELD(#f, CSM_KEYFRAMES, T, f, 0, min, max, doc, NULL, 0, 0, 0, NULL, 0)
#define CSM_P_POINTS(T, f, min, max, doc) CSM_PARAM_FIELD(#f, CSM_POINTS, T, f, 0, min, max, doc, NULL, 0, 0, 0, NULL, CSM_PARAM_REQUIRED)
/* A row the loader does not copy into a struct (the host reads the value itself). */
#define CSM_P_UNBOUND(key_, type_, def_, min_, max_, doc_, choices_, defs_, flags_)                               \
    {(key_), (type_), (def_), (min_), (max_), (doc_), (choices_), {0, 0, 0}, (defs_), (flags_), 0, 0}
/* Terminates a parameter table. */
#define CSM_PARAM_END {NULL, 0, 0, 0, 0, NULL, NULL, {0, 0, 0}, NULL, 0, 0, 0}

/* A resolved value of one parameter (parallel to a spec table). */
typedef struct csm_value {
    double num;     /* REAL, INT, BOOL (0/1), ENUM (index) */
    double vec[9];  /* VEC3 (3), MAT3 (9, row-major) */
    char *str;      /* STRING (owned) */
    double *points; /* POINTS (owned, 3 * npoints), KEYFRAMES (4 * npoints) */
    int32_t npoints;
    int line;       /* where it was given: a line of the config, 0 for a default */
    int given;      /* 1 when the config or --set gave it */
} csm_value;

#define CSM_MAX_PARAMS 32
/* Plugins of one kind the registry holds. */
#define CSM_MAX_PLUGINS 64
/* Room for a section's parameter struct. */
#define CSM_PARAMS_BYTES 512

/* A plugin selected by a config section, with its resolved parameter values and the parameter
   struct filled from them. */
typedef struct csm_plugin_cfg {
    const struct csm_plugin_head *plugin;
    csm_value values[CSM_MAX_PARAMS];
    const char *src; /* the config file (or "--set") the section came from */
    int line;
    union {
        max_align_t align;
        unsigned char bytes[CSM_PARAMS_BYTES];
    } params;
} csm_plugin_cfg;

/* The section's parameter struct, as its table's rows describe it. */
static inline const void *csm_cfg_params(const csm_plugin_cfg *pc) { return pc->params.bytes; }
/* Fill `out` (a parameter struct) from values resolved against `spec`. */
void csm_params_fill(const csm_param_spec *spec, const csm_value *values, void *out);
/* For config assembly (core/io) and tests: the value of `key` when the selected plugin declares
   it, else NULL. Plugin code reads its struct, and the host what the plugin describes (an
   integrator's csm_integrator_traits, a plasticity model's lagged), so no key is spelt twice. */
const csm_value *csm_cfg_value(const csm_plugin_cfg *pc, const char *key);
/* The value that filled the field at byte `offset` of the section's parameter struct (its line
   for a message), or NULL when no row fills it. */
const csm_value *csm_cfg_field(const csm_plugin_cfg *pc, size_t offset);
/* "file:line", or "--set #N" for the N-th override, for messages; returns buf. */
const char *csm_cfg_where(const char *src, int line, char *buf, int size);
/* A bad-input error about a plugin's section: "file:line: <plugin>: message". */
int csm_cfg_fail(const csm_plugin_cfg *pc, csm_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct csm_world;
struct csm_cluster_builder;
struct csm_particles;

/* A dataset a plugin adds to the log, written every logged frame by the log's one generic
   writer (the built-in datasets are rows of the same kind of table). Rows per frame: one
   (a per-frame value), one per particle, per cluster or per membership. */
typedef enum csm_field_rows { CSM_ROWS_FRAME, CSM_ROWS_PARTICLE, CSM_ROWS_CLUSTER, CSM_ROWS_MEMBERSHIP } csm_field_rows;
typedef enum csm_field_type { CSM_FIELD_F64, CSM_FIELD_I32, CSM_FIELD_I64 } csm_field_type;
typedef struct csm_log_field {
    const char *name;        /* dataset path in the log ("diagnostics/..."); a plugin's go under its own name */
    csm_field_type type;
    csm_field_rows rows;
    int width;               /* values per row: 1, 3 or 9 */
    const char *units, *description;
    /* Writes the frame's rows (width values each) to `out`, which has room for as many rows as
       `rows` says; `ctx` is the plugin's state (the log's frame context for built-in fields). */
    void (*get)(const struct csm_world *w, const void *ctx, void *out);
} csm_log_field;

#define CSM_PLUGIN_HEAD                                                                          \
    int version;                 /* the revision of the kind's struct the plugin fills */        \
    const char *name;                                                                            \
    const char *summary;                                                                         \
    const csm_param_spec *params /* terminated by CSM_PARAM_END */

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

/* The newest revision of each kind's struct this host reads. */
#define CSM_INTEGRATOR_VERSION 4
#define CSM_ROTATION_VERSION 2
#define CSM_CLUSTERING_VERSION 1
#define CSM_PLASTICITY_VERSION 3
#define CSM_RECLUSTERER_VERSION 1
#define CSM_FORCE_VERSION 1
#define CSM_COLLIDER_VERSION 3

/* What the host needs of an integrator's parameters, which are the plugin's own struct
   (csm_integrator.describe). */
typedef struct csm_integrator_traits {
    double alpha;       /* the spring gain h^2 k / m every cluster takes without a modulus (0: none) */
    double modulus;     /* the shear modulus mu (Pa) its springs take their stiffness from (0: alpha's) */
    int32_t iterations; /* goal projections or solver iterations a step makes (0: none) */
    int implicit;       /* 1: any stiffness is stable at any step, and no gain is clamped */
    int clamped;        /* 1: its springs act through gains alpha_c = h^2 k_c clamped at 1 (explicit) */
} csm_integrator_traits;

/* Advances particles by one step of length h. create sees the world as it starts (particles,
   clusters, densities), so it can size and prefactor what it needs; a step can compare
   w->C.epoch with the one it saw to learn that memberships or weights changed. */
typedef struct csm_integrator {
    CSM_PLUGIN_HEAD;
    int (*create)(const csm_plugin_cfg *cfg, const struct csm_world *w, void **state, csm_error *err);
    int (*step)(struct csm_world *w, void *state, double h, csm_error *err);
    void (*destroy)(void *state);
    const csm_log_field *fields; /* NULL or terminated by a NULL name: datasets it adds to the log */
    /* Version 2. The elastic energy (J) its springs store at the last fit, for steps of length h;
       distance[c] = sum_i w_ic m_i |x_i - g_ic|^2 of each cluster (kg m^2). NULL: it declares
       none, and /diagnostics/elastic_energy is NaN. */
    double (*elastic_energy)(const struct csm_world *w, void *state, double h, const double *distance);
    /* Version 3. 1 when its step projects each cluster's volume constraint (csm_volume_project)
       under solver.volume: split, whose shape springs hold no volume; 0: it takes coupled goals
       only, and `split` is refused. */
    int projects_volume;
    /* Version 4. Its parameters (csm_cfg_params) as the host reads them: the gain, the modulus,
       the iterations. An integrator of an earlier version is described as all zeros. */
    void (*describe)(const void *params, csm_integrator_traits *out);
} csm_integrator;

/* The traits of the integrator a config section selects (zeros before version 4). */
void csm_integrator_describe(const csm_plugin_cfg *pc, csm_integrator_traits *out);

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
       unclamped spring goals is a no-op the kernel may skip; 0: project. */
    int torque_free;
    /* Version 2. When extract is exactly csm_polar3_warm(polar->svd, M, polar->q, R) of M = Apq
       (CSM_POLAR_OF_APQ) or M = Fe (CSM_POLAR_OF_FE), the kernel takes several clusters' at once
       on vector lanes (csm_polar3_warm_lanes), with the same result; 0: extract per cluster. */
    int polar_of;
} csm_rotation;

enum { CSM_POLAR_OF_APQ = 1, CSM_POLAR_OF_FE = 2 };

/* Builds initial clusters over particles [first, first + count) of one object. */
typedef struct csm_clustering {
    CSM_PLUGIN_HEAD;
    int (*build)(const csm_plugin_cfg *cfg, const struct csm_particles *p, int32_t first,
                 int32_t count, uint64_t seed, struct csm_cluster_builder *out, csm_error *err);
} csm_clustering;

/* The stages of a step after the integrator's prediction: each has a state made at set-up and
   an apply run every step. */
#define CSM_STAGE_FUNCTIONS                                                                      \
    int (*create)(const csm_plugin_cfg *cfg, const struct csm_world *w, void **state,            \
                  csm_error *err);                                                               \
    int (*apply)(struct csm_world *w, void *state, double h, csm_error *err);                    \
    void (*destroy)(void *state)

/* Adds to w->P.force for the current step. */
typedef struct csm_force {
    CSM_PLUGIN_HEAD;
    CSM_STAGE_FUNCTIONS;
    /* NULL: none. Potential energy of a conservative force at the current state. Where it is set,
       the diagnostics also call apply once more at the logged state, on forces cleared for it,
       for the explicit step's lag (h/2) f . v (csm_diag.elastic_lag): apply must then depend on
       the state alone. */
    double (*potential)(const struct csm_world *w, const void *state);
    const csm_log_field *fields;
} csm_force;

/* Moves particles out of an obstacle: inside the integrator's iterations (project, from
   version 2) and after the integrator (apply), where it answers on velocities with restitution
   and friction. */
typedef struct csm_collider {
    CSM_PLUGIN_HEAD;
    CSM_STAGE_FUNCTIONS;
    const csm_log_field *fields;
    /* Version 2; NULL: apply alone. Pushes positions x out of the collider as it stands at the
       step's end (w->time + h), velocities untouched; the integrators call it after their
       prediction and after each iteration (csm_world_project). Returns the work its pushes did,
       sum_i m_i dx_i . v_c / h with v_c the surface's velocity (0 at rest), or NaN when out of
       memory. apply, after the integrator, answers every particle it pushed during the step. */
    double (*project)(const struct csm_world *w, void *state, double h, double *x);
    /* Version 3; NULL: nothing to log. Where the collider stands at time t: its centre, and the
       rotation its path has turned it by since it started (its initial orientation, a config's
       `rotate`, not included). The log keeps both every frame (/colliders/<k>/center and
       rotation, k its index in the config's list). */
    void (*pose)(const void *state, double t, double center[3], double R[9]);
} csm_collider;

/* Updates each cluster's plastic deformation F^p. Version 2: the model acts only on the clusters
   csm_cluster_in_scope admits (objects with their own plasticity section run their own model);
   a version 1 model cannot share a scene with objects' own sections. */
typedef struct csm_plasticity {
    CSM_PLUGIN_HEAD;
    CSM_STAGE_FUNCTIONS;
    const csm_log_field *fields;
    /* Version 3. 1 when, with these parameters, a step's flow takes effect only at the next step
       (the world then keeps each cluster's F of the step's end, csm_clusters_lagged); NULL or an
       earlier version: never. */
    int (*lagged)(const void *params);
} csm_plasticity;

/* Whether the plasticity model a config section selects lags its flow (csm_plasticity.lagged). */
int csm_plasticity_lagged(const csm_plugin_cfg *pc);

/* Removes and adds clusters (and bumps w->C.epoch when it changes memberships or weights). */
typedef struct csm_reclusterer {
    CSM_PLUGIN_HEAD;
    CSM_STAGE_FUNCTIONS;
    const csm_log_field *fields;
} csm_reclusterer;

/* Registry. Built-in plugins are added at start-up; a shared object named in a config's
   `plugins:` list exports `int csm_plugin_register(const csm_registrar *r)` and adds its own
   through the registrar's typed functions (docs/example_plugin.c). Each returns 0, or -1 when
   the plugin is malformed (no name, a version this host does not know, a parameter row whose
   field does not match its type) or the registry is full; the reason goes to stderr. */
int csm_register_integrator(const csm_integrator *p);
int csm_register_rotation(const csm_rotation *p);
int csm_register_clustering(const csm_clustering *p);
int csm_register_plasticity(const csm_plasticity *p);
int csm_register_reclusterer(const csm_reclusterer *p);
int csm_register_force(const csm_force *p);
int csm_register_collider(const csm_collider *p);

typedef struct csm_registrar {
    int abi; /* CSM_PLUGIN_ABI of the host */
    int (*integrator)(const csm_integrator *p);
    int (*rotation)(const csm_rotation *p);
    int (*clustering)(const csm_clustering *p);
    int (*plasticity)(const csm_plasticity *p);
    int (*reclusterer)(const csm_reclusterer *p);
    int (*force)(const csm_force *p);
    int (*collider)(const csm_collider *p);
} csm_registrar;

/* A plugin library states the ABI it was built for with this line at file scope; the host
   reads it before calling csm_plugin_register. */
#define CSM_PLUGIN_EXPORT_ABI const int csm_plugin_abi = CSM_PLUGIN_ABI

/* 0 when a parameter table fits the loader (see csm_params_fill); else -1 and a line on stderr
   naming `what` and `name`. */
int csm_params_check(const char *what, const char *name, const csm_param_spec *spec);
const void *csm_registry_find(csm_kind kind, const char *name);
int csm_registry_count(csm_kind kind);
const csm_plugin_head *csm_registry_at(csm_kind kind, int index);
const char *csm_kind_name(csm_kind kind);
/* "a, b, c": the valid names of a kind, for error messages. */
void csm_registry_names(csm_kind kind, char *buf, int size);
/* Load a plugin shared object; the host checks its ABI number and each plugin it registers. */
int csm_registry_load(const char *path, csm_error *err);

#endif
