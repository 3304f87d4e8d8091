/* The HDF5 log (DESIGN.md "The HDF5 log"): one file per run, frames appended to chunked,
   extendible datasets and flushed every frame, so a killed run leaves a readable file holding
   every frame written; an XDMF sidecar (.xmf) lets ParaView open the particle time series. */
#ifndef CSM_LOG_H
#define CSM_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sim.h"

typedef struct csm_log csm_log;

/* Create the log (status "running"), write the root attributes and /rest. */
int csm_log_open(const char *path, const csm_sim *sim, csm_log **out, csm_error *err);
/* Append the current state as one frame (the goals, when logged, are gathered through the
   clusters' goal scratch). */
int csm_log_frame(csm_log *log, csm_sim *sim, const csm_diag *d, csm_error *err);
/* Set the status ("ok", "failed: ...", "interrupted"), write the sidecar, close. */
int csm_log_close(csm_log *log, const char *status, csm_error *err);

/* Write the XDMF sidecar of an existing log (next to it, extension .xmf); returns its path in
   buf. Used at close and by `csm info` for logs whose run was killed. */
int csm_log_write_xdmf(const char *h5path, char *buf, int size, csm_error *err);

/* A string attribute (fixed or variable length) of an HDF5 object into buf; -1 when absent. */
int csm_log_string_attr(int64_t obj, const char *name, char *buf, size_t size);

/* The `status` attribute of a finished or running log and its number of frames (-1 when the
   file is not a readable log). Returns 0 when the status was read. */
int csm_log_status(const char *path, char *status, int size, int64_t *frames);

/* Path of the sidecar of a log. */
void csm_log_xdmf_path(const char *h5path, char *buf, int size);

#endif
