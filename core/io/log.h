/* The HDF5 log (docs/DESIGN.md "The HDF5 log"): one file per run, frames appended to chunked,
   extendible datasets and flushed every frame, so a killed run leaves a readable file holding
   every frame written; an XDMF sidecar (.xmf) lets ParaView open the particle time series. */
#ifndef CSM_LOG_H
#define CSM_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sim.h"

typedef struct csm_log csm_log;

/* Call first in a program that writes logs: HDF5 then leaves files alone at exit, so a log
   whose writes failed keeps its last complete frame. */
void csm_log_init(void);

/* Create the log (status "running"), write the root attributes and /rest. */
int csm_log_open(const char *path, const csm_sim *sim, csm_log **out, csm_error *err);
/* Append the current state as one frame (the goals, when logged, are gathered through the
   clusters' goal scratch). */
int csm_log_frame(csm_log *log, csm_sim *sim, const csm_diag *d, csm_error *err);
/* Set the status ("ok", "failed: ...", "interrupted"), write the sidecar, close. With status
   NULL the file is closed as it stands. */
int csm_log_close(csm_log *log, const char *status, csm_error *err);
/* A one-line warning the close writes as the root attribute `warning` beside the status (what
   the run did that the physics forbids: csm_simulation_warning); the last one given counts. */
void csm_log_set_warning(csm_log *log, const char *text);

/* Write the XDMF sidecar of an existing log (next to it, extension .xmf); returns its path in
   buf. Used at close and by `csm info` for logs whose run was killed. */
int csm_log_write_xdmf(const char *h5path, char *buf, int size, csm_error *err);

/* A whole dataset of an open file, read as memtype into memory the caller frees (*out); returns
   its number of values (every dimension), or -1 with *out NULL when it is absent. */
int64_t csm_h5_read_all(int64_t file, const char *path, int64_t memtype, void **out);

/* A string attribute (fixed or variable length) of an HDF5 object into buf; -1 when absent. */
int csm_log_string_attr(int64_t obj, const char *name, char *buf, size_t size);
/* The same, whole, in memory the caller frees; NULL when absent. */
char *csm_log_string_attr_dup(int64_t obj, const char *name);

/* Open a log read-only, the log of a killed run too. A log being written is open in HDF5's SWMR
   mode and marked so until it is closed; a mark left by a run that is gone (same host, its
   process ended) is cleared, so every HDF5 reader opens the file again. With `recover` the mark
   is also cleared when the writer cannot be checked (another host). *live (when not NULL) says
   a run is writing the log now; note says what was found, or is empty. Returns the HDF5 file
   id, or -1 when the file is not HDF5 or unreadable. */
int64_t csm_log_open_read(const char *path, int recover, int *live, char *note, int size);

/* The resolved config a log was written with and the name of its config file (both malloc'd). */
int csm_log_read_config(const char *path, char **config, char **name, csm_error *err);
/* The complete frames a log holds, read without writing anything to it (-1: not readable as it
   stands, or no /frames/time). */
int64_t csm_log_frames_untouched(const char *path);
/* Whether the shapes of an open log's datasets agree with each other (frames, times, velocities,
   the clusters' offsets within their members): 0, or -1 with why filled in. */
int csm_log_check_shapes(int64_t file, char *why, int size);
/* Why path cannot be a log, in a few words: "no such file", "a folder, not a log", "cannot be read
   (why)", or "not an HDF5 file" when it is a readable file that HDF5 does not take. */
const char *csm_log_not_a_log(const char *path, char *buf, int size);

/* Continue a log: `sim` is built from the log's own config; the state of its last complete
   frame (positions, velocities, clusters with their rest data, F^p, stress, fade counters, the
   rotations that warm-start the next fit, step and frame counters) replaces the fresh state,
   whatever was written after that frame is dropped, and frames are appended from there. The
   run then continues bit for bit as the uninterrupted run would. */
int csm_log_resume(const char *path, csm_sim *sim, csm_log **out, csm_error *err);

/* 1 when `path` is an HDF5 file (a log, or what a log's creation left), else 0. */
int csm_log_is_hdf5(const char *path);

/* The /diagnostics datasets of a log, for a host that reads them in process: their count, the
   k-th's name (after /diagnostics/) and width, and the values of a frame (sim and its
   diagnostics d) at their offsets in that order, as doubles; the count written, -1 when `size`
   is too small. */
/* About how many bytes the log of `sim`'s run takes uncompressed: its frames of particles and
   clusters, the clusters' slow state once or (with plasticity or reclustering) per frame, the
   memberships and rest data once. *most (when not NULL): with a version of those every frame, as
   a reclustering run may write. */
double csm_log_estimate(const csm_sim *sim, double *most);
/* A size in bytes as people read it, in powers of 1000: "29 MB", "3.5 GB". Returns buf. */
const char *csm_bytes_text(double bytes, char *buf, size_t size);
/* Before a new log is created at `path`: -1 (err says how much is needed and what there is) when
   the estimate above exceeds the room on its file system or under the file size limit. A resume
   checks only the room of its next frames (csm_log_check_room). */
int csm_log_check_fits(const char *path, const csm_sim *sim, csm_error *err);
int csm_log_diagnostic_count(void);
const char *csm_log_diagnostic_name(int k, int *width);
int csm_log_diagnostic_values(const csm_sim *sim, const csm_diag *d, double *out, int size);

/* The state of a log's last complete frame put into `sim`, as csm_log_resume puts it, with the
   log read only: `sim` must be built from the config that wrote it. */
int csm_log_restore(const char *path, csm_sim *sim, csm_error *err);
/* A log of one frame, the state `sim` is in now with its diagnostics d: what csm_log_restore
   takes back. */
int csm_log_checkpoint(const char *path, csm_sim *sim, const csm_diag *d, csm_error *err);

/* The `status` attribute of a finished or running log and its number of frames (-1 when the
   file is not a readable log). Returns 0 when the status was read. */
int csm_log_status(const char *path, char *status, int size, int64_t *frames);

/* Path of the sidecar of a log. */
void csm_log_xdmf_path(const char *h5path, char *buf, int size);
/* Path of the view file the sidecar reads speed, displacement and cluster from (LOG.view.hdf5). */
void csm_log_view_path(const char *h5path, char *buf, int size);

#endif
