/* A log's complete frames: measured (the rows each dataset holds up to the last complete frame),
   and what was written after them cut off, after a crash (recover.c) and before a resume
   (checkpoint.c). */
#include "log_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* Events written up to and including frame `frame`: the rows from the first, in order, while their
   frames are at least 1 and do not fall (a write that failed after the dataset grew leaves rows of
   zeros, frame 0, which no event has: reclustering runs after a step). */
static hsize_t events_up_to(hid_t events, int32_t frame)
{
    hsize_t rows = csm_h5_rows(events);
    if (rows == 0) return 0;
    int32_t *f = malloc(sizeof *f * rows);
    if (!f) return rows;
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(int32_t));
    H5Tinsert(t, "frame", 0, H5T_NATIVE_INT32);
    hsize_t keep = 0;
    if (H5Dread(events, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, f) >= 0)
        while (keep < rows && f[keep] <= frame && f[keep] >= (keep ? f[keep - 1] : 1)) keep++;
    H5Tclose(t);
    free(f);
    return keep;
}

/* The datasets of an open log and the rows its complete frames fill: the last complete frame is
   the last one /frames/time holds (it is appended last). Opens the datasets `log` uses, and with
   `all` every dataset present. */
int csm_log_measure(csm_log *log, int all, log_frames *lf, csm_error *err)
{
    const char *path = log->path;
    memset(lf, 0, sizeof *lf);
    for (int k = 0; k < log->nfield; k++) {
        if (!csm_log_field_used(log, k) && !(all && H5Lexists(log->file, log->field[k].path, H5P_DEFAULT) > 0)) continue;
        if (all && H5Lexists(log->file, log->field[k].path, H5P_DEFAULT) <= 0 && k >= F_NFIELDS) continue;
        log->ds[k] = H5Dopen2(log->file, log->field[k].path, H5P_DEFAULT);
        if (log->ds[k] < 0)
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: has no %s: written by an older csm, without checkpoints, or "
                            "with other output settings", path, log->field[k].path);
    }
    log->event_type = csm_log_event_type();
    log->events = H5Dopen2(log->file, "/recluster/events", H5P_DEFAULT);
    if (log->events < 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: has no /recluster/events", path);
    log_extent *e = &lf->e;
    e->T = csm_h5_rows(log->ds[F_TIME]);
    if (e->T == 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: holds no complete frame", path);
    hsize_t t = e->T - 1;
    int32_t version = -1, mversion = -1, cversion = -1;
    if (csm_h5_read(log->ds[F_FRAME_MEMBERSHIP], H5T_NATIVE_INT64, t, 2, lf->fo) ||
        csm_h5_read(log->ds[F_FRAME_CLUSTER], H5T_NATIVE_INT64, t, 2, lf->fc) ||
        csm_h5_read(log->ds[F_CK_VERSION], H5T_NATIVE_INT32, t, 1, &version) || version < 0 ||
        csm_h5_read(log->ds[F_RV_MEMBER_START], H5T_NATIVE_INT64, (hsize_t)version, 2, lf->ms) ||
        csm_h5_read(log->ds[F_RV_CLUSTER_START], H5T_NATIVE_INT64, (hsize_t)version, 2, lf->cs) ||
        csm_h5_read(log->ds[F_MVERSION], H5T_NATIVE_INT32, t, 1, &mversion) || mversion < 0 ||
        csm_h5_read(log->ds[F_MV_OFFSETS_START], H5T_NATIVE_INT64, (hsize_t)mversion, 2, lf->mo) ||
        csm_h5_read(log->ds[F_MV_MEMBER_START], H5T_NATIVE_INT64, (hsize_t)mversion, 2, lf->mm) ||
        csm_h5_read(log->ds[F_CVERSION], H5T_NATIVE_INT32, t, 1, &cversion) || cversion < 0 ||
        csm_h5_read(log->ds[F_CV_START], H5T_NATIVE_INT64, (hsize_t)cversion, 2, lf->cv))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: the offsets of frame %llu are missing", path, (unsigned long long)t);
    e->clusters = (hsize_t)lf->fc[1];
    e->memberships = (hsize_t)lf->fo[1];
    e->versions = (hsize_t)version + 1;
    e->rest_clusters = (hsize_t)lf->cs[1];
    e->rest_members = (hsize_t)lf->ms[1];
    e->mversions = (hsize_t)mversion + 1;
    e->mv_offsets = (hsize_t)lf->mo[1];
    e->mv_members = (hsize_t)lf->mm[1];
    e->cversions = (hsize_t)cversion + 1;
    e->cv_clusters = (hsize_t)lf->cv[1];
    e->slots = 2 * (hsize_t)(lf->fc[1] - lf->fc[0]);
    for (int k = 0; k < log->nfield; k++)
        if (log->ds[k] >= 0 && csm_h5_rows(log->ds[k]) < csm_log_field_rows(log, k, e))
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s holds %llu rows, %llu are needed", path, log->field[k].path,
                            (unsigned long long)csm_h5_rows(log->ds[k]), (unsigned long long)csm_log_field_rows(log, k, e));
    return 0;
}

/* Drop whatever was written after the last complete frame. A slot dataset is left as it is: the
   last complete frame's slot is whole, the other slot is the next frame's to write. */
int csm_log_trim(csm_log *log, const log_frames *lf)
{
    int rc = 0;
    for (int k = 0; k < log->nfield; k++)
        if (log->ds[k] >= 0 && log->field[k].rows != ROWS_SLOTS && csm_h5_rows(log->ds[k]) != csm_log_field_rows(log, k, &lf->e) &&
            csm_h5_set_rows(log->ds[k], csm_log_field_rows(log, k, &lf->e)))
            rc = -1;
    int32_t frame = 0;
    rc |= csm_h5_read(log->ds[F_CK_FRAME], H5T_NATIVE_INT32, lf->e.T - 1, 1, &frame);
    hsize_t events = events_up_to(log->events, frame);
    if (events != csm_h5_rows(log->events) && csm_h5_set_rows(log->events, events)) rc = -1;
    return rc;
}

/* A handle on an open log file, with the fields a simulation writes (sim NULL: those the file
   holds). */
csm_log *csm_log_handle(const char *path, hid_t file, const csm_sim *sim)
{
    csm_log *log = calloc(1, sizeof *log);
    if (!log) return NULL;
    log->events = log->event_type = -1;
    log->file = file;
    log->path = strdup(path);
    log->fd = open(path, O_RDONLY | O_CLOEXEC);
    csm_error err;
    if (!log->path || csm_log_fields_build(log, sim, &err)) {
        csm_log_fields_free(log);
        free(log->path);
        free(log);
        return NULL;
    }
    return log;
}

void csm_log_trim_after_crash(const char *path, hid_t file)
{
    csm_log *log = csm_log_handle(path, file, NULL);
    if (!log) return;
    log_frames lf;
    if (csm_log_measure(log, 1, &lf, NULL) == 0) csm_log_trim(log, &lf);
    log->file = -1; /* the caller's */
    csm_log_close(log, NULL, NULL);
}
