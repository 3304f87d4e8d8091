/* The data model (docs/DESIGN.md): particles and clusters as structures of arrays, and the world
   that holds them with the settings every stage reads. */
#ifndef CSM_WORLD_H
#define CSM_WORLD_H

#include <math.h>
#include <stdint.h>

#include "plugin.h"
#include "svd3.h"

/* The quadrature points of a particle's cell (csm_cell_points). */
enum { CSM_CELL_POINTS = 6 };

typedef struct csm_particles {
    int32_t n;
    double *x, *v;        /* [3n] world positions and velocities */
    double *mass;         /* [n] */
    double *inv_mass;     /* [n] 0 = pinned (kinematic) */
    double *rest;         /* [3n] rest positions (initial undeformed shape) */
    int32_t *object;      /* [n] which body */
    double *goal, *x_prev; /* [3n] scratch: gathered goals, positions at the start of a step */
    double *force;        /* [3n] external forces of the current step */
    double *cell;         /* [3 CSM_CELL_POINTS n] the quadrature points of each particle's cell, offsets from
                             its rest position (csm_cell_points); NULL: each particle is its cell's one point */
} csm_particles;

enum csm_cluster_state { CSM_CLUSTER_ACTIVE = 0, CSM_CLUSTER_FADING_OUT = 1, CSM_CLUSTER_FADING_IN = 2 };

/* The kernel's copy of the clusters' members for the fits' sums with one cluster per lane
   (solver.lanes, core/kernel/lanes.c). Block b holds clusters [8b, 8b + 8) side by side: slot s holds member s of each, lane l for
   cluster 8b + l, with its particle, w m and p (p as three vectors of x, y and z). A cluster
   shorter than the block's longest repeats its last member with w m = 0 (adding +0 to sums that
   hold +0 or more), an empty one particle 0 with w m = 0 (its fit is set as csm_cluster_moments
   sets it). A block of small clusters then sums each cluster's members in order in its own lane,
   with no sum across lanes at the end and no shuffle of p; a block of large or unequal clusters
   keeps MEMBER_LANES (its slots not stored). */
typedef struct csm_cluster_blocks {
    uint64_t epoch;         /* of the clusters the blocks were built for */
    int32_t k, m, lanes;    /* their count, their memberships, and the world's solver.lanes */
    int32_t nb;             /* blocks */
    int32_t *first;         /* [nb + 1] first slot of each block; first[b] == first[b + 1]: MEMBER_LANES */
    int32_t *member;        /* [8 slots] */
    double *wmass, *weight; /* [8 slots] */
    double *p;              /* [24 slots] */
} csm_cluster_blocks;

typedef struct csm_clusters {
    int32_t k;            /* clusters */
    int32_t m;            /* memberships */
    int32_t cap_k, cap_m; /* room the arrays have; reclustering grows them geometrically */
    int32_t n;            /* particles the reverse CSR covers */
    int32_t next_id;      /* id the next added cluster gets */
    uint64_t epoch;       /* bumped whenever memberships or weights change (reclustering, fades), so that a
                             plugin holding data per cluster or membership can tell it is stale */
    /* cluster -> members, CSR */
    int32_t *offset;      /* [k+1] */
    int32_t *member;      /* [m] particle id */
    int32_t *mcluster;    /* [m] cluster id of each membership (so a gather needs no search) */
    double *weight;       /* [m] w_ic, sum over c of w_ic = 1 for every particle */
    double *wbase;        /* [m] weight before fading: w_ic = phi_c wbase_ic / sum_d phi_d wbase_id, phi the
                             fade factor of a cluster being removed or added (Falkenstein Sec 3.2.1) */
    double *wmass;        /* [m] w_ic m_i, the mass a member lends its cluster (Falkenstein Eq 7) */
    double *p;            /* [3m] rest offset p_ic from the cluster's rest centre of mass */
    double *wgoal;        /* [3m] scratch in cluster order: w_ic g_ic (goal pass), w_ic D_c p_ic (volume pass) */
    /* particle -> memberships, CSR */
    int32_t *poff;        /* [n+1] */
    int32_t *pmember;     /* [m] index into the member arrays */
    /* per cluster state */
    double *mass;         /* [k] sum of w_ic m_i */
    double *A_rr_inv;     /* [9k] pseudo-inverse of sum w m p p^T */
    int32_t *rank;        /* [k] rank of A_rr (3 unless planar, collinear or a single point) */
    double *width;        /* [k] max |F^p p_ic| (Bargteil-Jones Eq 5 on the plastic rest shape) */
    double *Fp;           /* [9k] plastic deformation, I when none */
    double *stress_alpha; /* [k] cumulative plastic stress (Falkenstein Eq 14) */
    int32_t *flowed;      /* [k] steps since the last logged frame in which the cluster flowed plastically */
    int32_t *state;       /* [k] enum csm_cluster_state */
    int32_t *fade;        /* [k] fade counter */
    int32_t *id;          /* [k] stable id: the index at creation, then next_id for added clusters */
    /* last fit */
    double *com;          /* [3k] x-bar */
    double *F;            /* [9k] A_xr A_rr^-1 */
    double *R;            /* [9k] rotation */
    double *T;            /* [9k] goal transform: g_ic = T p_ic + x-bar (R F^p when rigid) */
    double *q;            /* [4k] R as a unit quaternion, the warm start of the next fit (zeros: none) */
    /* quadratic mode only (NULL otherwise; see csm_clusters_quadratic): goals gain Q (q2(p) - qmean) */
    double *qmean;        /* [6k] weighted mean of q2(p) = (px^2, py^2, pz^2, px py, py pz, pz px) */
    double *Aqq_inv;      /* [81k] pseudo-inverse of sum w m q~ q~^T, q~ = (p, q2(p) - qmean) */
    double *Q;            /* [18k] 3x6 quadratic part of the goal transform from the last fit */
    double *ebound;       /* [k] largest eigenvalue of A~_qq^-1 Gamma, Gamma = sum w m J J^T with J = dq~/dp
                             (1/m^2): bounds the continuum energy's stiffness per unit mass (elastic.c) */
    /* the continuum energy's consistent gradients (elastic.c, csm_elastic_consistent; NULL otherwise) */
    double *eta;          /* [3m] each membership's correction of its cluster's mean gradient, over w_ic m_i */
    double *S;            /* [9k] -Sigma-bar / (s k) of the last fit: the goals gain S eta_ic */
    double *ecorr;        /* [k] the stiffness bound with the corrections (elastic.c corrected_bound) */
    double *hmean;        /* [27k] H_c = sum_i v_i J_i^T / V_c over the quadrature points (3x9), the mean of
                             dq~/dp over the cluster's cells: its fitted field's mean gradient is A~ H_c^T */
    const double *cell;   /* the particles' cells (csm_particles.cell), borrowed; NULL: none */
    uint64_t eta_epoch;   /* the epoch eta was solved for */
    /* plasticity.update lagged only (NULL otherwise; see csm_clusters_lagged) */
    double *F_lagged;     /* [9k] F at the end of the previous step: the flow a step commits (NaN: none yet) */
    /* the members of CSM_LANES clusters side by side, for the fits' sums (core/kernel/lanes.c; NULL
       until the first fit, rebuilt when the epoch, k or m change) */
    csm_cluster_blocks *blocks;
} csm_clusters;

int csm_particles_alloc(csm_particles *p, int32_t n);
void csm_particles_free(csm_particles *p);

/* Allocate k clusters with m memberships; the member arrays and offsets are filled by the caller
   (a clustering method), then csm_clusters_finish builds the reverse CSR and the rest data. */
int csm_clusters_alloc(csm_clusters *c, int32_t k, int32_t m, int32_t n);
void csm_clusters_free(csm_clusters *c);
/* Free the kernel's blocks of clusters (csm_clusters.blocks); NULL is allowed. */
void csm_cluster_blocks_free(csm_cluster_blocks *B);

/* Complete clusters whose offset/member/weight are set: particle -> membership CSR, wmass, rest
   offsets p_ic about the weighted rest centre, A_rr pseudo-inverse, F^p = I, width. Returns the
   number of degenerate clusters (rank of A_rr below 3). */
int csm_clusters_finish(csm_clusters *c, const csm_particles *p);

/* Rest data of cluster c from its members' weights and offsets p_ic: wmass = w m, mass, p_ic
   shifted so that their weighted centre is the origin (Falkenstein Sec 3.2: the rest centre of
   mass of every cluster stays at the origin when weights change), A_rr pseudo-inverse, rank,
   width, and the quadratic rest data when the clusters have it. The shift taken off p_ic goes
   to `shift` when not NULL. The width is taken with the cluster's F^p, which must be set. */
void csm_cluster_rest(csm_clusters *c, const csm_particles *p, int32_t cl, double shift[3]);

/* |F^p p|: a member's distance from its cluster's centre in the plastic rest shape. */
static inline double csm_plastic_length(const double Fp[9], const double p[3])
{
    double a = Fp[0] * p[0] + Fp[1] * p[1] + Fp[2] * p[2], b = Fp[3] * p[0] + Fp[4] * p[1] + Fp[5] * p[2],
           c = Fp[6] * p[0] + Fp[7] * p[1] + Fp[8] * p[2];
    return sqrt(a * a + b * b + c * c);
}
/* The width w_c = max |F^p p_ic| of cluster cl (Bargteil-Jones Eq 5 on the plastic rest shape), again
   after its F^p changed. */
void csm_cluster_width(csm_clusters *c, int32_t cl);

/* Room for k clusters and m memberships over n particles (arrays grow by half again at least;
   existing data kept). Returns -1 when out of memory. */
int csm_clusters_reserve(csm_clusters *c, int32_t k, int32_t m, int32_t n);
/* Append a cluster (members sorted by particle id, with base weights and rest offsets); its
   weights start as the base weights, for the caller to normalise, and its per-cluster state is
   that of a fresh cluster (F^p = I, active, a new id). The reverse CSR is stale until
   csm_clusters_relink. Returns the new cluster's index or -1 (out of memory). */
int32_t csm_clusters_append(csm_clusters *c, int32_t count, const int32_t *member, const double *wbase,
                            const double *p);
/* Delete the clusters with drop[c] != 0, keeping the order of the others (reverse CSR stale). */
void csm_clusters_remove(csm_clusters *c, const unsigned char *drop);
/* Rebuild the particle -> membership CSR and mcluster after edits. Returns -1 when out of memory. */
int csm_clusters_relink(csm_clusters *c);

/* The quadratic monomials of Müller 2005's extended fit. */
static inline void csm_quad_terms(const double p[3], double q[6])
{
    q[0] = p[0] * p[0];
    q[1] = p[1] * p[1];
    q[2] = p[2] * p[2];
    q[3] = p[0] * p[1];
    q[4] = p[1] * p[2];
    q[5] = p[2] * p[0];
}

/* Rest data of the quadratic mode for every cluster (qmean, A_qq pseudo-inverse) and room for Q.
   Called once after the clusters are built or rebuilt. Returns -1 when out of memory. */
int csm_clusters_quadratic(csm_clusters *c);
/* Room for F_lagged, NaN for every cluster (the first step commits no flow). Returns -1 when out
   of memory. */
int csm_clusters_lagged(csm_clusters *c);

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
    double embedding_energy;      /* Falkenstein Eq 21 sum at the end of the embedding; NaN when none ran */
    int32_t embedding_iterations; /* 0 when none ran */
    double linear_energy;         /* Falkenstein Eq 21 sum of the linear embedding of the same set, when compared; else NaN */
    int32_t embedding_capped;     /* 1 when embedding_iterations, not the tolerance, stopped the embedding */
} csm_recluster_event;

/* The spring gains alpha_c an integrator used in its last step: min, mean and max over clusters,
   and how many a material modulus asked above 1 (clamped to 1: the step is too coarse). */
typedef struct csm_gain_stats {
    double min, mean, max;
    int32_t clamped;
} csm_gain_stats;

/* What the steps since the last logged frame did: counters, events and stage timings that the
   stages add to and the log writes. The simulation owns it and resets it once a frame is logged;
   the world points to it so that plugins can report. */
enum {
    CSM_TIMING_DYNAMICS,     /* forces, integrator and colliders */
    CSM_TIMING_PLASTICITY,
    CSM_TIMING_RECLUSTERING, /* embedding included */
    CSM_TIMING_EMBEDDING,
    CSM_TIMING_TOTAL,        /* the whole frame, diagnostics included */
    CSM_TIMING_BUILTIN       /* the first index a plugin's own timing gets */
};
#define CSM_MAX_TIMINGS 16

/* Seconds per frame, indexed as csm_report's timing names (Table 1 of Falkenstein 2017 first). */
typedef struct csm_timings {
    double seconds[CSM_MAX_TIMINGS];
} csm_timings;

/* Where energy leaves the bodies, summed since the run began (csm_report.dissipated, J). */
enum {
    CSM_DISSIPATED_DAMPING,   /* the integrators' `damping` (Müller et al. 2007 Sec 3.5) */
    CSM_DISSIPATED_VISCOSITY, /* the integrators' `viscosity` (csm_viscous_velocities) */
    CSM_DISSIPATED_PLASTIC,   /* stored energy the plastic flow released at fixed positions */
    CSM_DISSIPATED_CONTACT,   /* what the frames in which contact acted lost (< 0: created), beyond
                                 the colliders' counted work (csm_diagnostics) */
    CSM_DISSIPATED_NUMERICAL, /* implicit Euler's own loss in projective_dynamics (solvers/projective.c) */
    CSM_DISSIPATED_N
};

typedef struct csm_report {
    int32_t frame;               /* the frame being computed (frames completed + 1) */
    double dissipated[CSM_DISSIPATED_N]; /* J, cumulative over the run (not reset per frame) */
    double recluster_energy;     /* J, cumulative: stored energy reclustering's weight changes added (< 0: released) */
    int32_t yielded;             /* clusters that flowed plastically since the last logged frame */
    int32_t plastic_skipped;     /* plastic updates skipped on a degenerate F^e since then */
    double iteration_residual;   /* the implicit integrators' last iteration, since then: its largest position
                                    change over the step's largest displacement, the worst step's */
    csm_gain_stats gains;        /* the spring gains alpha_c of the last step (integrators with alpha) */
    int collider_pushed;         /* a collider's projection pushed a particle in the step under way (the
                                    budget's frames with contact: a collider at rest does no work) */
    csm_recluster_event *events; /* reclustering events since the last logged frame */
    int32_t nevents;
    int64_t cap_events;
    csm_timings timings;         /* of the frame being computed */
    int ntimings;                /* named timings: the built-in ones, then those plugins added */
    const char *timing_name[CSM_MAX_TIMINGS], *timing_doc[CSM_MAX_TIMINGS];
} csm_report;

/* An object's particles [lo, hi) of total mass M at positions x as a rigid body: its centre of mass
   and its inverse inertia about it, per unit mass (a pseudo-inverse: a line of particles has none
   about itself). */
void csm_object_frame(const csm_particles *P, const double *x, int32_t lo, int32_t hi, double M, double com[3],
                      double Iinv[9]);
/* Its rigid motion: the velocity of its centre of mass and its angular velocity, from its momentum
   and angular momentum under velocities v, plus h times the forces f over each mass where f is
   given (the velocities a step's forces would add). */
void csm_object_motion(const csm_particles *P, int32_t lo, int32_t hi, double M, const double com[3],
                       const double Iinv[9], const double *v, const double *f, double h, double vel[3], double omega[3]);

/* Monotonic seconds, for timings. */
double csm_now(void);

/* Names the built-in timings. */
void csm_report_init(csm_report *r);
/* A timing of its own a plugin charges (r->timings.seconds[index] += s), logged as
   /timings/<name>; call it from create. Returns its index, the existing one for a name given
   before, or -1 when CSM_MAX_TIMINGS are named already. name and doc must outlive the run. */
int csm_report_timing(csm_report *r, const char *name, const char *doc);
void csm_report_free(csm_report *r);

/* Goal settings (solver.svd, solver.mode, solver.conserve). */
enum { CSM_SVD_FAST, CSM_SVD_LAPACKE };
enum { CSM_MODE_RIGID, CSM_MODE_LINEAR, CSM_MODE_QUADRATIC };
/* solver.conserve: what each cluster's goal corrections keep (csm_goal_pass in kernel.h). */
enum { CSM_CONSERVE_NONE, CSM_CONSERVE_LINEAR, CSM_CONSERVE_ANGULAR };
/* solver.volume: how a cluster holds its volume (csm_volume_project in kernel.h). AUTO is a
   config value only; the world holds what it resolved to. */
enum { CSM_VOLUME_AUTO, CSM_VOLUME_COUPLED, CSM_VOLUME_SPLIT };
/* solver.energy: what the clusters of a modulus store (elastic.c): the continuum's strain energy of
   their quadratic fit, or the papers' shape-matching springs 1/2 k sum w m |x - g|^2. */
enum { CSM_ENERGY_CONTINUUM, CSM_ENERGY_GOALS };
enum { CSM_GRADIENT_CONSISTENT, CSM_GRADIENT_FIT };
/* solver.material: the continuum energy's density per quadrature point (elastic.c): corotated linear
   elasticity, or the compressible neo-Hookean solid of the finite-element codes (isochoric and
   volumetric parts apart). */
enum { CSM_MATERIAL_COROTATED, CSM_MATERIAL_NEO_HOOKEAN };
/* solver.lanes: whose sums share a vector in a fit (core/kernel/lanes.c). MEMBERS: 8 members of one cluster,
   summed across the lanes at the end; CLUSTERS: one cluster per lane, its members summed in order;
   AUTO: CLUSTERS for blocks of small clusters of about equal size, MEMBERS otherwise. */
enum { CSM_LANES_AUTO, CSM_LANES_MEMBERS, CSM_LANES_CLUSTERS };

/* The simulated state and the settings every stage reads. */
typedef struct csm_world {
    csm_particles P;
    csm_clusters C;
    int32_t nobjects;
    int32_t *object_first;       /* [nobjects+1] particle ranges */
    double *object_spacing;      /* [nobjects] sampling spacing used (chosen for a `particles` target) */
    double *object_density;      /* [nobjects] mass / volume (0 for a points shape, which has no volume) */
    double *boundary;            /* [3n] each particle's share of its object's surface, the vector area b_i (NaN: unknown) */
    double *surface;             /* [4n] each particle's outward surface normal in its rest shape, the direction of
                                    b_i (zero: an inner particle, or unknown), and how far inside the shape it lies
                                    along it (m); NULL unless contact.method is cluster_proxies, or
                                    particles with contact.normal surface */
    double *object_modulus;      /* [nobjects] shear modulus (Pa) of each object's material, in place of the
                                    integrator's (objects[].modulus; 0 or NULL: the integrator's) */
    uint64_t pins;               /* bumped whenever a particle is pinned or freed between steps (its
                                    inverse mass set to or from 0), so that a solver that factored
                                    which particles move factors again */
    /* The objects the plasticity model now running acts on: NULL (all), or [nobjects] flags.
       The simulation sets it around each model's apply when objects carry their own
       (objects[].plasticity); a model skips the clusters csm_cluster_in_scope refuses. */
    const unsigned char *scope;
    double time;
    int64_t step;
    const csm_rotation *rotation;
    csm_svd3_fn svd;
    int mode;                    /* CSM_MODE_*: goal deformation (Müller 2005 Sec 4) */
    double beta;                 /* share of the linear / quadratic fit in the goals */
    int conserve;                /* CSM_CONSERVE_*: what the goal corrections keep (csm_goal_pass) */
    int lanes;                   /* CSM_LANES_*: how the fits' sums fill vector lanes (solver.lanes, core/kernel/lanes.c) */
    int volume;                  /* CSM_VOLUME_COUPLED or CSM_VOLUME_SPLIT (solver.volume, resolved) */
    double bulk_modulus;         /* kappa (Pa) of the split volume term; 0: the coupled springs' own (core/kernel/volume.c) */
    int energy;                  /* CSM_ENERGY_*: what a modulus's clusters store (solver.energy, elastic.c) */
    int gradient;                /* CSM_GRADIENT_*: the continuum energy's gradients corrected (solver.gradient) */
    int material;                /* CSM_MATERIAL_*: the continuum energy's density (solver.material, elastic.c) */
    double stabilization;        /* theta: the continuum energy's spring on what its fit cannot follow, as a
                                    share of the stiffness bound k_c (solver.stabilization, elastic.c) */
    int fit_energy;              /* set by an integrator while its fits are to give the elastic energy's goals
                                    (CSM_ENERGY_CONTINUUM: the gradient's goals); 0: the rigid goals R F^p p */
    /* The stiffness of the integrator's springs, for the stages that weigh a cluster's stored
       energy (the plastic flow's energy guard and its dissipation): spring_modulus > 0, k_c from
       csm_modulus_stiffness, capped at 1 / h^2 when spring_capped; else alpha / h^2 per unit mass. */
    double spring_alpha, spring_modulus;
    int spring_capped;
    int32_t degenerate_clusters; /* A_rr of rank < 3, inverted with the pseudo-inverse */
    /* pieces of an object's clustering that shared no particle with the rest, joined
       (csm_builder_connect), and the first such object's smallest piece */
    int32_t joined_pieces, joined_object, joined_clusters, joined_particles;
    csm_report *report;          /* the simulation's report; NULL in a world made without one */
    /* The position constraints the integrators project inside their iterations: the colliders
       and the contacts between particles (csm_world_project). The simulation owns them; NULL in a
       world made without one. */
    struct csm_constraints *constraints;
    const double *x_step;        /* [3n] the positions at the start of the step under way, while the
                                    constraints project (their friction's slip); NULL otherwise */
    const double *v_step;        /* [3n] the velocities then (a body's approach); NULL as x_step */
    /* [3n] the forces with a potential (gravity, a load) of the step under way, and its length:
       the explicit step's lag (h/2) f . v holds them as it holds the springs' (csm_diag.elastic_lag),
       so damping and viscosity count the share of it they move; NULL where no such force acts or
       the integrator is implicit. */
    const double *potential_force;
    double potential_h;
} csm_world;

/* The object cluster c belongs to (clusters never span objects); -1 for a cluster without members. */
static inline int32_t csm_cluster_object(const csm_world *w, int32_t c)
{
    const csm_clusters *C = &w->C;
    return C->offset[c] < C->offset[c + 1] ? w->P.object[C->member[C->offset[c]]] : -1;
}

/* The density (kg/m^3) of cluster c's object: 0 for a points shape or a cluster without members. */
static inline double csm_cluster_density(const csm_world *w, int32_t c)
{
    int32_t o = csm_cluster_object(w, c);
    return o >= 0 && w->object_density ? w->object_density[o] : 0.0;
}

/* Whether the stage now running acts on cluster c (csm_world.scope). */
static inline int csm_cluster_in_scope(const csm_world *w, int32_t c)
{
    if (!w->scope) return 1;
    int32_t o = csm_cluster_object(w, c);
    return o >= 0 && w->scope[o];
}

/* Project positions x (the integrator's iterate) onto the world's constraints: every collider
   that projects, then the contacts between particles (core/contact.h), whose pairs the first
   call of a step finds, then the colliders again (what the contacts moved into one or along
   it). An integrator calls it after its prediction and after each iteration, so that contact is
   firm inside the solve and not only after it; without constraints it does nothing. */
void csm_world_project(csm_world *w, double *x, double h);

/* Record a reclustering event in w->report (stamped with its frame and the world's time).
   Returns -1 when out of memory. */
int csm_world_event(csm_world *w, csm_recluster_event e);

#endif
