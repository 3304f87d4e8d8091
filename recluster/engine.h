/* What the reclusterers share (Falkenstein 2017 Sec 3.2): removal of clusters whose F^p is
   ill-conditioned, fading weights out and in, seeding new clusters at the particles that would
   otherwise be left without one, and keeping weights normalised and rest centres at the origin.
   A reclusterer differs only in how it builds the new cluster around a seed: `embedded` in a
   locally optimised embedded space (Sec 3.2.2), `world_space` from the world positions. */
#ifndef CSM_RECLUSTER_ENGINE_H
#define CSM_RECLUSTER_ENGINE_H

#include "embedding.h"
#include "plugin.h"
#include "world.h"

/* The parameters every reclusterer has. */
/* The parameters every reclusterer on the engine shares: the first member of its parameter
   struct, named `common`, so the engine reads them without knowing the rest. */
typedef struct csm_rc_common_params {
    double cond_max;
    int32_t fade_out, fade_in, max_clusters;
} csm_rc_common_params;

#define CSM_RC_COMMON_ROW_(T, key, type, def, min, max, doc)                                      \
    CSM_PARAM_FIELD(#key, type, T, common.key, def, min, max, doc, NULL, 0, 0, 0, NULL, 0)
#define CSM_RC_COMMON_PARAMS(T)                                                                   \
    CSM_RC_COMMON_ROW_(T, cond_max, CSM_REAL, 4, 1, 1e12,                                           \
                       "mark a cluster for removal when cond(F^p) exceeds this (Sec 3.2.1)"),         \
    CSM_RC_COMMON_ROW_(T, fade_out, CSM_INT, 30, 1, 1e6, "steps over which a marked cluster's weights fade to zero"), \
    CSM_RC_COMMON_ROW_(T, fade_in, CSM_INT, 10, 1, 1e6,                                             \
                       "steps over which an added cluster's weights come to full (fewer than fade_out)"), \
    CSM_RC_COMMON_ROW_(T, max_clusters, CSM_INT, 0, 0, 1e9,                                         \
                       "stop the run when reclustering makes more clusters than this (0: four times the initial " \
                       "count): runaway reclustering means the simulation has become unstable")

typedef struct csm_rc_engine csm_rc_engine;

/* Build the cluster seeded at particle `seed` into the engine's new_* arrays (members in
   increasing id order, base weights, rest positions in the space the cluster is built in; the
   engine centres them) and fill the event's embedding fields. */
typedef int (*csm_rc_build_fn)(csm_rc_engine *e, csm_world *w, int32_t seed, csm_recluster_event *ev, csm_error *err);

struct csm_rc_engine {
    double cond_max;      /* a cluster is marked for removal when cond(F^p) exceeds this */
    int32_t fade_out;     /* steps over which a marked cluster's weights go to zero */
    int32_t fade_in;      /* steps over which an added cluster's weights come to full */
    int32_t min_clusters; /* a particle in fewer clusters not being removed seeds a new one */
    int32_t max_clusters; /* more clusters than this stops the run */
    csm_rc_build_fn build;

    /* the cluster being built */
    int32_t nnew;
    int32_t *new_member;
    double *new_wbase, *new_p;
    int64_t cap_member, cap_wbase, cap_p;

    /* scratch over particles and clusters */
    int32_t cap_n, cap_k;
    unsigned char *touched; /* [n] particles whose weights change this step ... */
    unsigned char *candidate; /* [n] particles that seed a cluster unless an earlier addition takes them in */
    int32_t *touch_list;    /* ... and the same particles as a list */
    int64_t ntouched, cap_touch;
    unsigned char *flag;    /* [k] clusters to drop, then clusters whose rest data change */
    double *cond;           /* [k] cond(F^p) of each cluster, for the marking of Sec 3.2.1 */
    double *energy;         /* [k] each cluster's stored energy (stored_energy) */

    /* embedded */
    int embedding_linear, compare_linear;
    int embedding_solver;    /* the nonlinear embedding's: local/global steps or Falkenstein's Jacobi sweeps */
    int32_t embedding_iterations;
    double embedding_tolerance;
    double m, threshold, optimization_tolerance;
    int32_t optimization_iterations;
    int from_seed_clusters;  /* only members of the seed's clusters may join a new one */
    int kernel_membership;   /* members by a fixed-radius kernel about a mean-shift centre, not fuzzy c-means */
    double kernel_radius;    /* its radius in embedded space, m */
    csm_embedding emb;
    double *points, *masses, *centres, *u;
    unsigned char *eligible; /* [np] may join the new cluster */
    unsigned char *fcm_state;
    int64_t cap_points, cap_masses, cap_eligible, cap_centres, cap_state, cap_u;

    /* world_space */
    double radius;
};

/* Fade factor phi_c of a cluster: 1 when active; (f + 1) / fade_in while fading in and
   1 - (f + 1) / fade_out while fading out, f the steps since it was added or marked. */
double csm_rc_fade_factor(const csm_rc_engine *e, int32_t state, int32_t fade);

/* Read the shared parameters (cond_max, fade_out, fade_in, max_clusters) into a new engine. */
int csm_rc_engine_create(const csm_plugin_cfg *cfg, const csm_world *w, csm_rc_engine **out, csm_error *err);
void csm_rc_engine_destroy(void *state);
/* One reclustering pass after a step's plasticity. */
int csm_rc_engine_apply(csm_world *w, void *state, double h, csm_error *err);

/* Room for `count` members in the new cluster's arrays. */
int csm_rc_new_reserve(csm_rc_engine *e, int32_t count);

/* The base weight a particle gives a cluster built around it when nothing better is known: the
   mean of its base weights in clusters not being removed, 1 when it has none. */
double csm_rc_mean_live_weight(const csm_clusters *C, int32_t i);

#endif
