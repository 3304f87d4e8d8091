/* The C API of csm.h: a csm_sim and its config behind an opaque handle, stepped as `csm run`
   steps it (the frames it logs take their diagnostics and are written), with the host's forces
   and pins, checkpoints, and the state put back when a step fails. */
#include "simulation.h"

#include "builtins.h"
#include "config.h"
#include "files.h"
#include "kernel.h"
#include "log.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct csm_simulation {
    csm_config cfg;
    csm_sim sim;
    csm_log *log;      /* NULL: none */
    int threads;       /* 0: the process's default */
    int32_t substep;   /* steps done of the frame under way */
    int failed;        /* a step failed: steps are refused until a restore */
    csm_diag diag;     /* of frame diag_frame, taken where csm run takes them */
    int64_t diag_frame;
    double *saved;     /* [6n] x and v at the start of the frame under way */
    double saved_time;
    int64_t saved_step;
    char error[1200];
    char warning[1200];  /* csm_simulation_warning's */
    char log_path[4096]; /* "" when it writes none */
    int finished;        /* csm_simulation_finish: no step after it */
    int restarted;       /* a resume of a log with no complete frame: the run started again into it */
};

int csm_api_version(void) { return CSM_API_VERSION; }

static int fail(csm_simulation *s, const csm_error *err, int code)
{
    snprintf(s->error, sizeof s->error, "%s", err->msg);
    return err->code ? err->code : code;
}

/* The frame csm run logs: every output.every-th, and the last of time.frames. */
static int logged_frame(const csm_simulation *s)
{
    return s->sim.frame % s->cfg.output_every == 0 || s->sim.frame == s->cfg.frames;
}

/* The diagnostics of a frame csm run logs, and the log's frame when there is one. */
static int take_frame(csm_simulation *s)
{
    csm_error err = {{0}, 0};
    csm_diagnostics(&s->sim, &s->diag);
    s->diag_frame = s->sim.frame;
    if (s->log && csm_log_frame(s->log, &s->sim, &s->diag, &err)) { /* the log is broken: no frame after it */
        s->failed = 1;
        return fail(s, &err, CSM_EXIT_FAILURE);
    }
    csm_sim_logged(&s->sim);
    csm_sim_track_contact(&s->sim, &s->diag);
    return 0;
}

/* The config: a file, text, or for a resume the log's own. */
static int load_config(const char *path, const char *text, const char *const *sets, int nsets, const csm_options *opt,
                       csm_config *cfg, csm_error *err)
{
    if (opt && opt->resume) {
        if (!opt->log) return csm_fail(err, CSM_EXIT_BAD_INPUT, "a resume needs the log it continues");
        char *own, *name;
        if (csm_log_read_config(opt->log, &own, &name, err)) return -1;
        if (!own[0] || !name[0]) { /* its attributes hold nothing: a corrupted string (the global heap) */
            free(own);
            free(name);
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: corrupt log: the config it stores cannot be read", opt->log);
        }
        int rc = csm_config_load_text(name, own, sets, nsets, cfg, err);
        if (rc && strstr(err->msg, name) == err->msg) { /* its lines are the stored text's, not the file's */
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg + strlen(name));
            csm_fail(err, err->code, "%s (the config it stores, from %s)%s", opt->log, name, msg);
        }
        free(own);
        free(name);
        return rc;
    }
    if (text) return csm_config_load_text(path ? path : "(text)", text, sets, nsets, cfg, err);
    if (!path) return csm_fail(err, CSM_EXIT_BAD_INPUT, "no config: give its file or its text");
    return csm_config_load(path, sets, nsets, cfg, err);
}

/* A log written at `path`: an existing one replaced only when forced, never a file that is not
   a log; its folder made when missing. */
static int log_room(const char *path, int force, csm_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && !force)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s already exists (use --force to overwrite it, or --resume to "
                        "continue it)", path);
    /* an empty file is what a log's failed creation leaves, and it is replaced too */
    if (stat(path, &st) == 0 && (!S_ISREG(st.st_mode) || (st.st_size > 0 && !csm_log_is_hdf5(path))))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s exists and is not an HDF5 log; --force overwrites only logs", path);
    return csm_make_parent(path, err);
}

/* The simulation and its log: a new one (the old run's sidecar and view file removed once the
   new log holds the lock), or the one it resumes. */
static int build(csm_simulation *s, const csm_options *opt, csm_error *err)
{
    int resume = opt && opt->resume;
    const char *log = opt && opt->log ? opt->log : opt && opt->log_config ? s->cfg.output_path : NULL;
    /* a log killed before its first frame was complete holds its config and nothing to continue:
       its run starts again, from that config, into it */
    if (resume && log && csm_log_frames_untouched(log) == 0) resume = 0, s->restarted = 1;
    if (log && !resume && log_room(log, opt->force || s->restarted, err)) return -1;
    if (s->threads > 0) csm_set_threads(s->threads);
    if (csm_sim_create(&s->cfg, &s->sim, err)) return -1;
    if (log && ((!resume && csm_log_check_fits(log, &s->sim, err)) ||
                (resume ? csm_log_resume(log, &s->sim, &s->log, err) : csm_log_open(log, &s->sim, &s->log, err)))) {
        csm_sim_destroy(&s->sim);
        return -1;
    }
    if (log && !resume) {
        char side[4200];
        csm_log_xdmf_path(log, side, sizeof side);
        unlink(side);
        csm_log_view_path(log, side, sizeof side);
        unlink(side);
    }
    snprintf(s->log_path, sizeof s->log_path, "%s", log ? log : "");
    return 0;
}

int csm_simulation_create(const char *path, const char *text, const char *const *sets, int nsets,
                          const csm_options *opt, csm_simulation **out, char *error, size_t size)
{
    *out = NULL;
    csm_error err = {{0}, 0};
    if (opt && opt->size != sizeof(csm_options)) {
        snprintf(error, size, "csm_options of %zu bytes, this library takes %zu (built against another csm.h)",
                 opt->size, sizeof(csm_options));
        return CSM_EXIT_BAD_INPUT;
    }
    csm_simulation *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(error, size, "out of memory");
        return CSM_EXIT_FAILURE;
    }
    csm_register_builtins();
    csm_log_init();
    s->threads = opt ? opt->threads : 0;
    s->diag_frame = -1;
    if (load_config(path, text, sets, nsets, opt, &s->cfg, &err)) {
        snprintf(error, size, "%s", err.msg);
        free(s);
        return err.code ? err.code : CSM_EXIT_BAD_INPUT;
    }
    if (build(s, opt, &err)) {
        snprintf(error, size, "%s", err.msg);
        csm_config_free(&s->cfg);
        free(s);
        return err.code ? err.code : CSM_EXIT_FAILURE;
    }
    s->saved = malloc(sizeof(double) * 6 * (size_t)s->sim.w.P.n + 1);
    if (!s->saved || ((!(opt && opt->resume) || s->restarted) && take_frame(s))) {
        snprintf(error, size, "%s", s->saved ? s->error : "out of memory");
        csm_simulation_close(s, s->saved ? NULL : "failed: out of memory", NULL, 0);
        return CSM_EXIT_FAILURE;
    }
    *out = s;
    return 0;
}

/* The log ended with `status` (NULL: "ok", or the failure that stopped the run); 1 when it could not
   be closed cleanly, with the reason in s->error. No step follows. */
static int end_log(csm_simulation *s, const char *status)
{
    s->finished = 1;
    if (!s->log) return 0;
    char text[1300] = "ok", warning[1200];
    if (status) snprintf(text, sizeof text, "%s", status);
    else if (s->failed) snprintf(text, sizeof text, "failed: %s", s->error);
    if (csm_sim_contact_warning(&s->sim, warning, sizeof warning)) csm_log_set_warning(s->log, warning);
    csm_error err = {{0}, 0};
    int rc = csm_log_close(s->log, text, &err) ? CSM_EXIT_FAILURE : 0;
    s->log = NULL;
    if (rc) snprintf(s->error, sizeof s->error, "%s", err.msg);
    return rc;
}

int csm_simulation_close(csm_simulation *s, const char *status, char *error, size_t size)
{
    if (!s) return 0;
    int rc = end_log(s, status);
    if (rc && error) snprintf(error, size, "%s", s->error);
    csm_sim_destroy(&s->sim);
    csm_config_free(&s->cfg);
    free(s->saved);
    free(s);
    return rc;
}

int csm_simulation_finish(csm_simulation *s) { return end_log(s, NULL); }

int csm_simulation_destroy(csm_simulation *s) { return csm_simulation_close(s, NULL, NULL, 0); }

const char *csm_simulation_error(const csm_simulation *s) { return s ? s->error : "no simulation"; }

const char *csm_simulation_warning(csm_simulation *s)
{
    if (!s) return "";
    s->warning[0] = 0;
    csm_sim_contact_warning(&s->sim, s->warning, sizeof s->warning);
    return s->warning;
}

/* One step; the frame's beginning and end around it where they fall. A frame's failure, at
   whichever of its steps, puts back the positions, velocities, time and step count of its start. */
static int one_step(csm_simulation *s)
{
    csm_sim *sim = &s->sim;
    csm_error err = {{0}, 0};
    size_t bytes = sizeof(double) * 3 * (size_t)sim->w.P.n;
    if (s->substep == 0) {
        memcpy(s->saved, sim->w.P.x, bytes);
        memcpy(s->saved + 3 * (size_t)sim->w.P.n, sim->w.P.v, bytes);
        s->saved_time = sim->w.time;
        s->saved_step = sim->w.step;
        csm_sim_frame_begin(sim);
    }
    int rc = csm_sim_step(sim, s->cfg.dt / s->cfg.substeps, &err);
    if (!rc && s->substep + 1 == s->cfg.substeps) rc = csm_sim_frame_end(sim, &err);
    if (rc) {
        memcpy(sim->w.P.x, s->saved, bytes);
        memcpy(sim->w.P.v, s->saved + 3 * (size_t)sim->w.P.n, bytes);
        sim->w.time = s->saved_time;
        sim->w.step = s->saved_step;
        s->substep = 0;
        s->failed = 1;
        return fail(s, &err, CSM_EXIT_FAILURE);
    }
    if (++s->substep < s->cfg.substeps) return 0;
    s->substep = 0;
    return logged_frame(s) ? take_frame(s) : 0;
}

int csm_simulation_step(csm_simulation *s, int64_t steps)
{
    if (s->failed) {
        snprintf(s->error, sizeof s->error, "the simulation failed at frame %lld and takes no step until a restore",
                 (long long)s->sim.frame + 1);
        return CSM_EXIT_FAILURE;
    }
    if (s->finished) {
        snprintf(s->error, sizeof s->error, "the simulation is finished: it takes no step");
        return CSM_EXIT_BAD_INPUT;
    }
    const double *f = s->sim.external_force;
    for (int64_t a = 0; f && a < 3 * (int64_t)s->sim.w.P.n; a++)
        if (!isfinite(f[a])) {
            snprintf(s->error, sizeof s->error, "the external force on particle %lld is not finite (%g)",
                     (long long)(a / 3), f[a]);
            return CSM_EXIT_BAD_INPUT;
        }
    if (steps < 0) {
        snprintf(s->error, sizeof s->error, "steps = %lld: give a count of 0 or more", (long long)steps);
        return CSM_EXIT_BAD_INPUT;
    }
    if (s->threads > 0) csm_set_threads(s->threads);
    for (int64_t k = 0; k < steps; k++) {
        int rc = one_step(s);
        if (rc) return rc;
    }
    return 0;
}

int csm_simulation_frames(csm_simulation *s, int64_t frames)
{
    if (frames < 0) {
        snprintf(s->error, sizeof s->error, "frames = %lld: give a count of 0 or more", (long long)frames);
        return CSM_EXIT_BAD_INPUT;
    }
    /* the rest of a frame under way counts as the first */
    return csm_simulation_step(s, frames * s->cfg.substeps - (frames > 0 ? s->substep : 0));
}

int32_t csm_simulation_particle_count(const csm_simulation *s) { return s->sim.w.P.n; }
double csm_simulation_time(const csm_simulation *s) { return s->sim.w.time; }
int64_t csm_simulation_frame(const csm_simulation *s) { return s->sim.frame; }
int64_t csm_simulation_step_count(const csm_simulation *s) { return s->sim.w.step; }
double csm_simulation_dt(const csm_simulation *s) { return s->cfg.dt; }
int64_t csm_simulation_frames_wanted(const csm_simulation *s) { return s->cfg.frames; }
int32_t csm_simulation_substeps(const csm_simulation *s) { return s->cfg.substeps; }

const double *csm_simulation_positions(const csm_simulation *s) { return s->sim.w.P.x; }
double *csm_simulation_velocities(csm_simulation *s) { return s->sim.w.P.v; }
const double *csm_simulation_masses(const csm_simulation *s) { return s->sim.w.P.mass; }
const double *csm_simulation_rest_positions(const csm_simulation *s) { return s->sim.w.P.rest; }

double *csm_simulation_external_force(csm_simulation *s)
{
    if (!s->sim.external_force) s->sim.external_force = calloc(3 * (size_t)s->sim.w.P.n + 1, sizeof(double));
    return s->sim.external_force;
}

int csm_simulation_pin(csm_simulation *s, int32_t i, int pinned)
{
    csm_particles *P = &s->sim.w.P;
    if (i < 0 || i >= P->n) {
        snprintf(s->error, sizeof s->error, "particle %d: the simulation has particles 0 to %d", i, P->n - 1);
        return CSM_EXIT_BAD_INPUT;
    }
    double inv = pinned ? 0.0 : 1.0 / P->mass[i];
    if (P->inv_mass[i] != inv) {
        P->inv_mass[i] = inv;
        s->sim.w.pins++;
    }
    return 0;
}

int csm_simulation_pinned(const csm_simulation *s, int32_t i)
{
    return i >= 0 && i < s->sim.w.P.n && s->sim.w.P.inv_mass[i] == 0.0;
}

int32_t csm_simulation_cluster_count(const csm_simulation *s) { return s->sim.w.C.k; }
int32_t csm_simulation_membership_count(const csm_simulation *s) { return s->sim.w.C.m; }
const int32_t *csm_simulation_cluster_offsets(const csm_simulation *s) { return s->sim.w.C.offset; }
const int32_t *csm_simulation_cluster_members(const csm_simulation *s) { return s->sim.w.C.member; }
const double *csm_simulation_cluster_weights(const csm_simulation *s) { return s->sim.w.C.weight; }
const double *csm_simulation_cluster_centers(const csm_simulation *s) { return s->sim.w.C.com; }
const double *csm_simulation_cluster_rotations(const csm_simulation *s) { return s->sim.w.C.R; }
const double *csm_simulation_cluster_plastic(const csm_simulation *s) { return s->sim.w.C.Fp; }
const int32_t *csm_simulation_cluster_states(const csm_simulation *s) { return s->sim.w.C.state; }
const int32_t *csm_simulation_cluster_ids(const csm_simulation *s) { return s->sim.w.C.id; }

int csm_diagnostic_count(void) { return csm_log_diagnostic_count(); }

const char *csm_diagnostic_name(int k, int *width) { return csm_log_diagnostic_name(k, width); }

/* What a fit changes of the clusters, kept aside so that diagnostics taken between the frames
   csm run logs leave the simulation to go on as it would have (the rotation is the next fit's
   warm start). */
typedef struct fit_state {
    double *part[7];
    size_t bytes[7];
} fit_state;

static int fit_save(const csm_clusters *C, fit_state *f)
{
    double *from[7] = {C->q, C->R, C->F, C->T, C->com, C->Q, C->S};
    size_t per[7] = {4, 9, 9, 9, 3, 18, 9};
    memset(f, 0, sizeof *f);
    for (int a = 0; a < 7; a++) {
        if (!from[a]) continue;
        f->bytes[a] = sizeof(double) * per[a] * (size_t)C->k;
        f->part[a] = malloc(f->bytes[a] + 1);
        if (!f->part[a]) return -1;
        memcpy(f->part[a], from[a], f->bytes[a]);
    }
    return 0;
}

static void fit_restore(csm_clusters *C, fit_state *f)
{
    double *to[7] = {C->q, C->R, C->F, C->T, C->com, C->Q, C->S};
    for (int a = 0; a < 7; a++) {
        if (f->part[a] && to[a]) memcpy(to[a], f->part[a], f->bytes[a]);
        free(f->part[a]);
    }
}

/* The diagnostics of the state now, in d: the frame's when it has them, else taken aside. */
static int diagnose(csm_simulation *s, csm_diag *d)
{
    if (s->diag_frame == s->sim.frame && s->substep == 0) {
        *d = s->diag;
        return 0;
    }
    fit_state f;
    int rc = fit_save(&s->sim.w.C, &f);
    if (!rc) {
        double total = s->sim.last.seconds[CSM_TIMING_TOTAL];
        csm_diagnostics(&s->sim, d);
        s->sim.last.seconds[CSM_TIMING_TOTAL] = total;
    }
    fit_restore(&s->sim.w.C, &f);
    if (rc) snprintf(s->error, sizeof s->error, "out of memory");
    return rc ? CSM_EXIT_FAILURE : 0;
}

int csm_simulation_diagnostics(csm_simulation *s, double *values, int size)
{
    csm_diag d;
    int rc = diagnose(s, &d);
    if (rc) return rc;
    if (csm_log_diagnostic_values(&s->sim, &d, values, size) < 0) {
        snprintf(s->error, sizeof s->error, "room for %d diagnostic values, too few", size);
        return CSM_EXIT_BAD_INPUT;
    }
    return 0;
}

int csm_simulation_checkpoint(csm_simulation *s, const char *path)
{
    if (s->substep) {
        snprintf(s->error, sizeof s->error, "a checkpoint is taken between frames; %d of the frame's %d steps are done",
                 s->substep, s->cfg.substeps);
        return CSM_EXIT_BAD_INPUT;
    }
    csm_diag d;
    int rc = diagnose(s, &d);
    if (rc) return rc;
    csm_error err = {{0}, 0};
    if (csm_log_checkpoint(path, &s->sim, &d, &err)) return fail(s, &err, CSM_EXIT_FAILURE);
    return 0;
}

int csm_simulation_restore(csm_simulation *s, const char *path)
{
    csm_error err = {{0}, 0};
    if (csm_log_restore(path, &s->sim, &err)) return fail(s, &err, CSM_EXIT_BAD_INPUT);
    s->failed = 0;
    s->substep = 0;
    s->diag_frame = -1;
    s->error[0] = '\0';
    return 0;
}

const csm_sim *csm_simulation_state(const csm_simulation *s) { return &s->sim; }
const csm_config *csm_simulation_config(const csm_simulation *s) { return &s->cfg; }
const char *csm_simulation_log_path(const csm_simulation *s) { return s->log_path; }
