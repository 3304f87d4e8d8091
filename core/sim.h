/* A simulation: the world (particles, clusters, time), the selected plugins and the frame loop
   forces -> integrator -> colliders -> plasticity -> reclusterer, each stage timed, and the
   report of what the steps did that the log writes. */
#ifndef CSM_SIM_H
#define CSM_SIM_H

#include "config.h"
#include "contact.h"
#include "plugin.h"
#include "world.h"

/* A stage of the step as the frame loop runs it: a plugin's functions and the state its create
   made. Forces, colliders, plasticity and reclusterers are each their own plugin type; the loop
   sees them alike. */
typedef struct csm_stage {
    const csm_plugin_head *plugin;
    int (*apply)(csm_world *w, void *state, double h, csm_error *err); /* NULL: nothing to do */
    void (*destroy)(void *state);
    double (*potential)(const csm_world *w, const void *state);       /* forces; NULL: none */
    const csm_log_field *fields;                                        /* NULL: none */
    double (*project)(const csm_world *w, void *state, double h, double *x); /* colliders; NULL: none */
    void *state;
} csm_stage;

/* What csm_world_project projects onto: the colliders that project and the contacts. */
/* The most of a quantity over the frames (csm_sim_track_contact), and the frame and time it came at. */
typedef struct csm_most {
    double value, time;
    int32_t frame;
} csm_most;

typedef struct csm_constraints {
    csm_stage *colliders;
    int ncolliders, nprojecting;
    int contact;                 /* contact.method is not none */
    int timing;                  /* the report's "contact" timing (-1: none) */
    csm_contacts contacts;
    int64_t step;                /* the step whose first projection found the pairs (-1: none yet) */
    double work;                 /* J: the colliders' pushes this step (csm_collider.project) */
    int failed;                  /* out of memory inside a projection: the step fails */
    double *scratch;             /* [3n] for an integrator that does not project: x before the contacts */
    double *x_start;             /* [3n] the positions at the step's start (w->x_step during the step) */
    double *v_start;             /* [3n] the velocities then (w->v_step) */
    int64_t cap_scratch, cap_x_start, cap_v_start;
} csm_constraints;

typedef struct csm_sim {
    csm_world w;
    csm_report report;           /* what the steps since the last logged frame did (w.report points here) */
    const csm_config *cfg;
    const csm_integrator *integrator;
    void *integrator_state;
    csm_stage plasticity, recluster;
    /* Objects with their own plasticity section (objects[].plasticity): their models ([nobjects],
       zero for the others, NULL when no object has one) and the scopes the models run under
       (csm_world.scope): [2 nobjects], the objects the top-level model acts on, then one object's. */
    csm_stage *own_plasticity;
    unsigned char *scope;
    csm_stage *forces, *colliders;
    int nforces, ncolliders;
    csm_timings last;            /* timings of the last frame, indexed as report.timing_name */
    int32_t frame;               /* frames completed */
    double *distance;            /* [distance_cap] per cluster, for the diagnostics */
    int64_t distance_cap;
    /* The work done on the bodies from outside, summed over the steps: by the forces that have no
       potential (compress, twist, drag) and the host's, h sum_i f_i . v_i with v the velocity the
       integrator leaves (the power of the force over the step). With the potentials of the other
       forces and the dissipation (report.dissipated, contact's share included) it closes the
       energy budget (csm_diag.energy_error). */
    double work_external;
    double energy0;              /* kinetic + potential + elastic energy of frame 0 (J) */
    int have_energy0;
    /* The contact's share of the budget (csm_diagnostics): whether a collider or the contacts
       moved a particle since the last logged frame, that frame's energy_error, and the last
       diagnostics' energy_error and dissipated_contact, which csm_sim_logged keeps. */
    int contact_acted;
    double error_logged, diag_error, diag_contact;
    /* csm_sim_track_contact: whether a collider did work (it moves) since this process began,
       whether the tracking has begun, and at its first frame contact's share and the outside
       work; since then the most energy the bodies held and the most contact created, and when */
    int collider_worked, check_begun;
    double check_contact0, check_work0, check_error0, check_held;
    csm_most created, made;
    /* cluster_proxies: the deepest a particle lay inside another object's proxy at a logged frame's
       end, beyond the contact distance (0: never), its particle, that object and its speed */
    csm_most inside;
    int32_t inside_particle, inside_object;
    double inside_speed;
    double *work_force, *force_before; /* [3 * work_cap]: those forces' sum, and scratch */
    double *potential_force;           /* [3n] the forces with a potential of the step (csm_world) */
    double *collider_before;           /* [6n] x and v before the colliders, for their work */
    csm_constraints *constraints;      /* w.constraints */
    int64_t work_cap[4];
    double frame_start;                /* when the frame under way began (csm_sim_frame_begin) */
    /* [3n] forces (N) the host sets on each particle, applied at every step after the force
       stages until it changes them; NULL (the default) or all zeros: none. Their work is counted
       in work_external, as a force's without a potential. */
    double *external_force;
} csm_sim;

/* Build particles from the objects, cluster them, create every plugin. */
int csm_sim_create(const csm_config *cfg, csm_sim *sim, csm_error *err);
void csm_sim_destroy(csm_sim *sim);
/* Advance one frame (cfg->substeps steps). Fails on a non-finite state. */
int csm_sim_frame(csm_sim *sim, csm_error *err);
/* csm_sim_frame in parts, for a host that steps: begin, cfg->substeps csm_sim_step, end (which
   checks the state and counts the frame). */
void csm_sim_frame_begin(csm_sim *sim);
int csm_sim_frame_end(csm_sim *sim, csm_error *err);
/* One step of length h through every stage (what a frame repeats); its stage times add to
   sim->report.timings. */
int csm_sim_step(csm_sim *sim, double h, csm_error *err);

/* The frame just logged: counters that cover the frames between two logged ones (clusters that
   yielded, plastic updates skipped) start again, and the reclustering events written are
   dropped. */
void csm_sim_logged(csm_sim *sim);


/* Per-frame diagnostics (docs/DESIGN.md /diagnostics). */
typedef struct csm_diag {
    double kinetic, potential;
    double elastic;       /* J: what the integrator's springs store (csm_integrator.elastic_energy) */
    double goal_distance; /* kg m^2: sum_c sum_i w_ic m_i |x_i - g_ic|^2 */
    double momentum[3], angular_momentum[3], center_of_mass[3];
    double max_strain, volume_ratio;
    double max_cond_Fp; /* largest sigma_max / sigma_min of F^p */
    int32_t inverted;   /* clusters of full rank whose fit F = A_xr A_rr^-1 has det F < 0 */
    double volume_energy; /* J: the split volume terms' share of `elastic` (csm_volume_energy) */
    /* J: (h/2) sum_i f_i . v_i with f the explicit springs' forces (0 for the implicit
       integrators). Symplectic Euler (v from the forces at x(t), then x from v) conserves
       kinetic + potential + elastic + this to O(h^2), not the plain sum (the modified energy of
       Hairer, Lubich and Wanner, Geometric Numerical Integration, Sec IX.3): it is the energy
       held between a force and the motion it causes a step later. */
    double elastic_lag;
    /* J: kinetic + potential + elastic + elastic_lag - frame 0's - work_external + dissipated,
       the energy the simulation created (> 0) or lost without account (< 0) */
    double energy_error;
    /* J: what contact took from the bodies so far (< 0: gave them), beyond the colliders' counted
       work: the budget's change over the logged frames in which a collider or the contacts moved
       a particle (report.dissipated[CSM_DISSIPATED_CONTACT] as of the last logged frame, plus
       this frame's) */
    double dissipated_contact;
    int32_t contact_pairs; /* the broad phase's pairs of the last step */
    double contact_depth;  /* m: the deepest overlap d - |x_i - x_j| over them (0: none) */
    int32_t contact_particle, contact_cluster; /* cluster_proxies: the particle pushed deepest and the cluster
                                                  whose proxy it lies in (-1: none) */
} csm_diag;

/* Fits every cluster at the current positions (so logged R and com describe the logged
   state) and measures. */
void csm_diagnostics(csm_sim *sim, csm_diag *d);

/* Contact gives the bodies no energy while every collider is at rest: its pushes and friction
   only take. csm_sim_track_contact follows the contact's share of the budget
   (csm_diag.dissipated_contact) from the first frame it is given on (a run's, or a resume's);
   call it with the diagnostics of each logged frame, as it follows csm_diag.energy_error.
   csm_sim_contact_warning writes a one-line warning when what contact gave (its most) exceeds
   CSM_CONTACT_CREATED of the energy the bodies were given (the most kinetic + elastic +
   elastic_lag they held, plus the work done from outside) and no collider has done work (a
   moving one gives energy as it should), or when energy_error's most created exceeds
   CSM_ENERGY_CREATED of it (and it is more than round-off, 1e-9 J: the explicit integrators'
   own error reaches a few percent on the papers' scenes, 1.9 % on spin_cube.yaml and 3.2 % on
   stretch_cube.yaml's first frame), or when a particle outran the particles' sweep
   or travelled beyond CSM_PROXY_TRAVEL relative to a cluster (csm_contacts.outran: the fastest,
   after either; "; " between two), and returns 1; else 0. projective_dynamics, whose colliders were projected after each global solve, at one
   long step onto the ground made 2.1e3 J of a 9 J impact; a cube started half inside the ground
   is thrown out with 14.9 J created. */
#define CSM_CONTACT_CREATED 0.01
#define CSM_ENERGY_CREATED 0.1
void csm_sim_track_contact(csm_sim *sim, const csm_diag *d);
int csm_sim_contact_warning(const csm_sim *sim, char *text, size_t size);

#endif
