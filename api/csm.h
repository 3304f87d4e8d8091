/* csm's C API (libcsm.so): a simulation built from a config, stepped, read and written in the
   host's process, with the HDF5 log of `csm run` or none. The command line runs through it, and
   the Python package `csm` binds it with ctypes (docs/python.md).

   Stable: what this header declares. It grows by appending functions and, for csm_options, fields
   at its end (the host says the size it was built with); nothing declared here changes meaning or
   goes away without CSM_API_VERSION changing. A host checks csm_api_version() against the
   CSM_API_VERSION it was compiled with, and csm_simulation_create refuses options of a size it does not know.

   Errors: a function that can fail returns an exit status as `csm run` does (0 ok, 2 bad input,
   1 a failed run) and leaves the one-line message the command line prints in csm_simulation_error(). Arrays
   are the library's own: pointers stay valid while the simulation lives, those of the particles
   as long as it does, those of the clusters until the next step (reclustering may move them).
   Units are SI. Two simulations share nothing but the OpenMP thread pool, which each sets to its
   own count when it steps. */
#ifndef CSM_API_H
#define CSM_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CSM_API_VERSION 1

/* The API version the library was built with. */
int csm_api_version(void);

typedef struct csm_simulation csm_simulation;

/* How a simulation runs, besides its config. Zero-initialise, set size = sizeof(csm_options). */
typedef struct csm_options {
    size_t size;      /* sizeof(csm_options) as the host compiled it */
    const char *log;  /* the HDF5 log to write as csm run does (its output.every), or NULL */
    int log_config;   /* with log NULL: 1 writes it at the config's output.path, 0 writes none */
    int force;        /* replace an existing log (never a file that is not one) */
    int resume;       /* continue the log at `log` from its last complete frame, with its own config
                         (path and text NULL; sets may hold time.frames) */
    int threads;      /* OpenMP threads while it steps (0: the process's default) */
} csm_options;

/* A simulation from a config file (`path`), or from YAML text (`text`, with `path` the name its
   messages give it), with --set overrides sets[0..nsets) ("key.path=value"). With a log it
   writes frame 0 at once (missing folders are made); an existing log is replaced only with
   `force`. On failure *out is NULL and the message is in `error` (size bytes). */
int csm_simulation_create(const char *path, const char *text, const char *const *sets, int nsets, const csm_options *opt,
               csm_simulation **out, char *error, size_t size);
/* Ends the log (status "ok", or the failure that stopped it) and refuses every step after it; the
   arrays stay readable until csm_simulation_destroy. 1 when the log could not be closed cleanly. */
int csm_simulation_finish(csm_simulation *s);
/* Finishes the simulation and frees it; NULL is allowed. */
int csm_simulation_destroy(csm_simulation *s);
/* The message of the last failure, "" when none. */
const char *csm_simulation_error(const csm_simulation *s);

/* Advance by `steps` steps of length dt / substeps, or by `frames` whole frames. A frame ends
   when its last step does: then the state is checked (a non-finite position, velocity,
   rotation or energy fails it), and at the frames csm run logs (output.every, and the last of
   time.frames) the diagnostics are taken and the log written. A step that fails leaves the
   positions, velocities, time and counters as they were before it, and every later step is
   refused until csm_simulation_restore. */
int csm_simulation_step(csm_simulation *s, int64_t steps);
int csm_simulation_frames(csm_simulation *s, int64_t frames);

int32_t csm_simulation_particle_count(const csm_simulation *s);
double csm_simulation_time(const csm_simulation *s);      /* s */
int64_t csm_simulation_frame(const csm_simulation *s);    /* frames completed */
int64_t csm_simulation_step_count(const csm_simulation *s); /* steps completed */
double csm_simulation_dt(const csm_simulation *s);        /* s per frame (time.dt) */
int64_t csm_simulation_frames_wanted(const csm_simulation *s); /* the config's time.frames */
const char *csm_simulation_log_path(const csm_simulation *s); /* the log it writes ("": none) */
int32_t csm_simulation_substeps(const csm_simulation *s); /* steps per frame */

/* The particles, [3n] or [n], row-major x, y, z. Positions and the masses are the library's to
   change; velocities the host may write between steps. */
const double *csm_simulation_positions(const csm_simulation *s);
double *csm_simulation_velocities(csm_simulation *s);
const double *csm_simulation_masses(const csm_simulation *s);
const double *csm_simulation_rest_positions(const csm_simulation *s);
/* [3n] forces (N) on each particle, applied at every step until the host changes them; zeros at
   first. Their work enters the energy budget as a force's without a potential; a step with one
   that is not finite is refused (2). NULL when out of memory. */
double *csm_simulation_external_force(csm_simulation *s);
/* Pin particle i (its inverse mass 0: it keeps its velocity's effect off and stays where it is
   put) or free it; 2 when i is out of range. */
int csm_simulation_pin(csm_simulation *s, int32_t i, int pinned);
/* 1 when particle i is pinned. */
int csm_simulation_pinned(const csm_simulation *s, int32_t i);

/* The clusters as CSR: offsets [k + 1] into members and weights [m]; per cluster the centre of
   mass [3k], the rotation R and the plastic deformation F^p [9k] (row-major), its state (0
   active, 1 fading out, 2 fading in) and its stable id [k]. The centre and R are those of the last
   fit: at a frame's diagnostics, of that frame's positions. */
int32_t csm_simulation_cluster_count(const csm_simulation *s);
int32_t csm_simulation_membership_count(const csm_simulation *s);
const int32_t *csm_simulation_cluster_offsets(const csm_simulation *s);
const int32_t *csm_simulation_cluster_members(const csm_simulation *s);
const double *csm_simulation_cluster_weights(const csm_simulation *s);
const double *csm_simulation_cluster_centers(const csm_simulation *s);
const double *csm_simulation_cluster_rotations(const csm_simulation *s);
const double *csm_simulation_cluster_plastic(const csm_simulation *s);
const int32_t *csm_simulation_cluster_states(const csm_simulation *s);
const int32_t *csm_simulation_cluster_ids(const csm_simulation *s);

/* The diagnostics (the /diagnostics datasets of the log, docs/log.md): their number, and the
   name and width (values per frame: 1, or 3 for a vector or alpha_c's min, mean and max) of the
   k-th. */
int csm_diagnostic_count(void);
const char *csm_diagnostic_name(int k, int *width);
/* The diagnostics of the state the simulation is in, each value at its offset in the order of
   csm_diagnostic_name (widths summed): taken at the frame's end where csm run takes them, else
   now, leaving the simulation to continue as it would have. */
int csm_simulation_diagnostics(csm_simulation *s, double *values, int size);

/* The whole state, written to an HDF5 file of one frame that csm_simulation_restore takes back into a
   simulation built from the same config (`csm info` reads it too). The simulation goes on as it
   would have, and one restored from the file goes on the same way, bit for bit. */
int csm_simulation_checkpoint(csm_simulation *s, const char *path);
int csm_simulation_restore(csm_simulation *s, const char *path);

/* A warning about what the run has done so far that the physics forbids, "" when none: contact
   that gave the bodies energy with every collider at rest (more than 1 % of what they held and
   were given), or energy the integrator created (more than 10 %; core/sim.h
   csm_sim_contact_warning). A finished log keeps it in its `warning` attribute, and csm run
   prints it. */
const char *csm_simulation_warning(csm_simulation *s);

#ifdef __cplusplus
}
#endif

#endif
