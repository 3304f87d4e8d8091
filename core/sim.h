/* A simulation: the world (particles, clusters, time), the selected plugins and the frame loop
   forces -> integrator -> colliders -> plasticity -> reclusterer, each stage timed. */
#ifndef CSM_SIM_H
#define CSM_SIM_H

#include "config.h"
#include "plugin.h"
#include "world.h"

/* Table 1 of Falkenstein 2017, per frame, in seconds. `total` also counts diagnostics. */
typedef struct csm_timings {
    double dynamics, plasticity, reclustering, embedding, total;
} csm_timings;

/* One row of /recluster/events: a cluster marked for removal or added (Falkenstein Sec 3.2). */
enum { CSM_EVENT_REMOVED = 0, CSM_EVENT_ADDED = 1 };
typedef struct csm_recluster_event {
    int32_t frame;                /* the frame whose steps made it (frame 0 is the initial state) */
    double time;                  /* simulated time at the start of the step that made it */
    int32_t kind;                 /* CSM_EVENT_* */
    int32_t cluster;              /* the cluster's stable id (/clusters/id) */
    int32_t seed;                 /* seed particle of an added cluster; -1 for a removal */
    int32_t members;
    double cond_Fp;               /* cond(F^p) that triggered a removal; 1 for an addition */
    double embedding_energy;      /* Eq 21 sum at the end of the embedding; NaN when none ran */
    int32_t embedding_iterations; /* 0 when none ran */
    double linear_energy;         /* Eq 21 sum of the linear embedding of the same set, when compared; else NaN */
} csm_recluster_event;

/* The spring gains alpha_c an integrator used in its last step: min, mean and max over clusters,
   and how many a material modulus asked above 1 (clamped to 1: the step is too coarse). */
typedef struct csm_gain_stats {
    double min, mean, max;
    int32_t clamped;
} csm_gain_stats;

typedef struct csm_world {
    csm_particles P;
    csm_clusters C;
    int32_t nobjects;
    int32_t *object_first;     /* [nobjects+1] particle ranges */
    double *object_spacing;    /* [nobjects] sampling spacing used (chosen for a `particles` target) */
    double time;
    int64_t step;
    const csm_rotation *rotation;
    csm_svd3_fn svd;
    int mode;                    /* CSM_MODE_*: goal deformation (Müller 2005 Sec 4) */
    double beta;                 /* share of the linear / quadratic fit in the goals */
    int conserve;                /* CSM_CONSERVE_*: what the goal corrections keep (csm_goal_pass) */
    double *object_density;      /* [nobjects] mass / volume (0 for a points shape, which has no volume) */
    int32_t degenerate_clusters; /* A_rr of rank < 3, inverted with the pseudo-inverse */
    double gravity[3];           /* sum of gravity forces, for diagnostics */
    double embedding_seconds;    /* reclusterers add their embedding time here */
    int32_t yielded;             /* clusters that flowed plastically since the last logged frame */
    int32_t plastic_skipped;     /* plastic updates skipped on a degenerate F^e since then */
    csm_gain_stats gains;        /* the spring gains alpha_c of the last step (integrators with alpha) */
    int32_t frame;               /* the frame being computed (frames completed + 1) */
    csm_recluster_event *events; /* reclustering events since the last logged frame */
    int32_t nevents;
    int64_t cap_events;
} csm_world;

/* Record a reclustering event (stamped with the world's frame and time). Returns -1 when out
   of memory. */
int csm_world_event(csm_world *w, csm_recluster_event e);

typedef struct csm_sim {
    csm_world w;
    const csm_config *cfg;
    const csm_integrator *integrator;
    void *integrator_state;
    const csm_stage *plasticity, *recluster;
    void *plasticity_state, *recluster_state;
    const csm_stage **forces, **colliders;
    void **force_state, **collider_state;
    int nforces, ncolliders;
    csm_timings last;            /* timings of the last frame */
    int32_t frame;               /* frames completed */
} csm_sim;

/* Build particles from the objects, cluster them, create every plugin. */
int csm_sim_create(const csm_config *cfg, csm_sim *sim, csm_error *err);
void csm_sim_destroy(csm_sim *sim);
/* Advance one frame (cfg->substeps steps). Fails on a non-finite state. */
int csm_sim_frame(csm_sim *sim, csm_error *err);
/* One step of length h through every stage (what a frame repeats). */
int csm_sim_step(csm_sim *sim, double h, csm_timings *t, csm_error *err);

/* The frame just logged: counters that cover the frames between two logged ones (clusters that
   yielded, plastic updates skipped) start again, and the reclustering events written are
   dropped. */
void csm_sim_logged(csm_sim *sim);

/* Monotonic seconds. */
double csm_now(void);

/* Per-frame diagnostics (DESIGN.md /diagnostics). */
typedef struct csm_diag {
    double kinetic, potential, elastic;
    double momentum[3], angular_momentum[3], center_of_mass[3];
    double max_strain, volume_ratio;
    double max_cond_Fp; /* largest sigma_max / sigma_min of F^p */
} csm_diag;

/* Fits every cluster at the current positions (so logged R and com describe the logged
   state) and measures. */
void csm_diagnostics(csm_sim *sim, csm_diag *d);

#endif
