#define _XOPEN_SOURCE 700 /* realpath */
/* Writing a log: create it with its root attributes and /rest, append frames, close with a status. */
#include "log_internal.h"
#include "error.h"

#include "clustering.h"
#include "csm_version.h"
#include "kernel.h"
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/* One writer per log: the lock beside it, taken before the file is created or touched. */
int csm_log_lock_take(csm_log *log, const char *path, csm_error *err)
{
    size_t len = strlen(path) + 6;
    log->lock_path = malloc(len);
    if (!log->lock_path) CSM_OUT_OF_MEMORY();
    snprintf(log->lock_path, len, "%s.lock", path);
    log->lock_fd = csm_lock_take(log->lock_path, path, "log", err);
    return log->lock_fd < 0 ? -1 : 0;
}

void csm_log_lock_drop(csm_log *log)
{
    if (log->lock_path) csm_lock_drop(log->lock_fd, log->lock_path);
    free(log->lock_path);
    log->lock_path = NULL;
    log->lock_fd = -1;
}

void csm_log_init(void)
{
    H5dont_atexit();
}

static void write_param_attrs(hid_t file, const char *section, const csm_plugin_cfg *pc)
{
    if (!pc->plugin) return;
    for (int k = 0; pc->plugin->params && pc->plugin->params[k].key; k++) {
        const csm_param_spec *s = &pc->plugin->params[k];
        char name[256];
        snprintf(name, sizeof name, "%s.%s", section, s->key);
        const csm_value *v = &pc->values[k];
        switch (s->type) {
        case CSM_REAL: csm_h5_attr_double(file, name, &v->num, 1); break;
        case CSM_INT:
        case CSM_BOOL: csm_h5_attr_int64(file, name, (int64_t)v->num); break; /* integers stay integers */
        case CSM_VEC3: csm_h5_attr_double(file, name, v->vec, 3); break;
        case CSM_MAT3: csm_h5_attr_double(file, name, v->vec, 9); break;
        case CSM_STRING: csm_h5_attr_string(file, name, v->str ? v->str : ""); break;
        case CSM_ENUM: {
            const char *c = s->choices;
            for (int idx = 0; idx < (int)v->num && c; idx++) {
                c = strchr(c, '|');
                if (c) c++;
            }
            char text[128];
            size_t len = c ? (strchr(c, '|') ? (size_t)(strchr(c, '|') - c) : strlen(c)) : 0;
            snprintf(text, sizeof text, "%.*s", (int)len, c ? c : "");
            csm_h5_attr_string(file, name, text);
            break;
        }
        case CSM_POINTS: break;
        case CSM_KEYFRAMES: /* the rows (t, x, y, z) one after another */
            if (v->npoints > 0) csm_h5_attr_double(file, name, v->points, 4 * v->npoints);
            break;
        }
    }
}

hid_t csm_log_event_type(void)
{
    hid_t kind = H5Tcopy(H5T_C_S1);
    H5Tset_size(kind, sizeof ((event_row *)0)->kind);
    H5Tset_strpad(kind, H5T_STR_NULLTERM);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(event_row));
    H5Tinsert(t, "frame", HOFFSET(event_row, frame), H5T_NATIVE_INT32);
    H5Tinsert(t, "time", HOFFSET(event_row, time), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "kind", HOFFSET(event_row, kind), kind);
    H5Tinsert(t, "cluster", HOFFSET(event_row, cluster), H5T_NATIVE_INT32);
    H5Tinsert(t, "seed", HOFFSET(event_row, seed), H5T_NATIVE_INT32);
    H5Tinsert(t, "members", HOFFSET(event_row, members), H5T_NATIVE_INT32);
    H5Tinsert(t, "cond_Fp", HOFFSET(event_row, cond_Fp), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "embedding_energy", HOFFSET(event_row, embedding_energy), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "embedding_iterations", HOFFSET(event_row, embedding_iterations), H5T_NATIVE_INT32);
    H5Tinsert(t, "linear_energy", HOFFSET(event_row, linear_energy), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "embedding_capped", HOFFSET(event_row, embedding_capped), H5T_NATIVE_INT32);
    H5Tclose(kind);
    return t;
}

static int create_events(csm_log *log)
{
    hid_t t = log->event_type = csm_log_event_type();
    hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {256};
    hid_t space = H5Screate_simple(1, dims, maxdims);
    hid_t dcpl = csm_h5_chunked(1, chunk, 0); /* it grows by rows: see csm_log_field_create */
    hid_t lcpl = csm_h5_link_props();
    log->events = H5Dcreate2(log->file, "/recluster/events", t, space, lcpl, dcpl, H5P_DEFAULT);
    if (log->events >= 0)
        csm_h5_attr_string(log->events, "description",
                    "one row per cluster marked for removal (kind removed: it fades out) or added (kind added: it "
                    "fades in); cluster is the stable id of /clusters/id; seed -1 for a removal; cond_Fp the "
                    "condition number that triggered a removal; embedding_energy the Falkenstein Eq 21 sum (terms "
                    "weighted by w_ic m_i) at the "
                    "end of the embedding (NaN when none ran), embedding_iterations its Jacobi iterations, and "
                    "linear_energy the same sum for the linear embedding of the same set (NaN unless compared); "
                    "embedding_capped 1 when the embedding stopped at its iteration cap before its tolerance");
    if (log->events >= 0) /* a compound: the units of each field */
        csm_h5_attr_string(log->events, "units",
                    "frame: 1, time: s, kind: 1, cluster: 1, seed: 1, members: 1, cond_Fp: 1, embedding_energy: kg m^2, "
                    "embedding_iterations: 1, linear_energy: kg m^2, embedding_capped: 1");
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
    return log->events < 0 ? -1 : 0;
}

static int write_events(csm_log *log, const csm_report *w)
{
    if (w->nevents == 0) return 0;
    event_row *rows = calloc((size_t)w->nevents, sizeof *rows);
    if (!rows) return -1;
    for (int32_t e = 0; e < w->nevents; e++) {
        const csm_recluster_event *ev = &w->events[e];
        rows[e] = (event_row){ev->frame, ev->time, {0}, ev->cluster, ev->seed, ev->members,
                              ev->cond_Fp, ev->embedding_energy, ev->embedding_iterations, ev->linear_energy,
                              ev->embedding_capped};
        strcpy(rows[e].kind, ev->kind == CSM_EVENT_ADDED ? "added" : "removed");
    }
    hid_t space = H5Dget_space(log->events);
    hsize_t dims[1], start[1], count[1] = {(hsize_t)w->nevents};
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    start[0] = dims[0];
    dims[0] += count[0];
    herr_t rc = H5Dset_extent(log->events, dims);
    if (rc >= 0) {
        space = H5Dget_space(log->events);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t mem = H5Screate_simple(1, count, NULL);
        rc = H5Dwrite(log->events, log->event_type, mem, space, H5P_DEFAULT, rows);
        H5Sclose(mem);
        H5Sclose(space);
    }
    free(rows);
    return rc < 0 ? -1 : 0;
}

/* Who writes the log, so a reader can tell a live run from a killed one. */
int csm_log_writer_attrs(hid_t f)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    return csm_h5_attr_string(f, "writer_host", host) | csm_h5_attr_int64(f, "writer_pid", (int64_t)getpid());
}

/* SWMR writing from here on. HDF5 1.10's H5Fstart_swmr_write reopens every open dataset with the
   default access, whose chunk cache (1 MiB a dataset) keeps every chunk written until it fills: the
   datasets are opened again with a cache of two chunks (csm_h5_open_append). */
int csm_log_start_swmr(csm_log *log)
{
    if (H5Fstart_swmr_write(log->file) < 0) return -1;
    int rc = 0;
    for (int k = 0; k < log->nfield; k++) {
        if (log->ds[k] < 0) continue;
        H5Dclose(log->ds[k]);
        if ((log->ds[k] = csm_h5_open_append(log->file, log->field[k].path)) < 0) rc = -1;
    }
    if (log->events >= 0) {
        H5Dclose(log->events);
        if ((log->events = csm_h5_open_append(log->file, "/recluster/events")) < 0) rc = -1;
    }
    return rc;
}

int csm_log_open(const char *path, const csm_sim *sim, csm_log **out, csm_error *err)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported by us, in one line */
    const csm_world *w = &sim->w;
    const csm_config *cfg = sim->cfg;
    csm_log *log = calloc(1, sizeof *log);
    if (!log) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    log->fd = -1;
    /* before the file is truncated: a log another process writes is refused, not overwritten */
    if (csm_log_lock_take(log, path, err)) {
        csm_log_lock_drop(log);
        free(log);
        return -1;
    }
    /* The log is made whole beside its place, PATH.creating, and moved there once its header is on
       disk: a run killed before that leaves no log that reads as none (a plain run starts again),
       and a --force run leaves the log it replaces as it was until then. */
    char creating[4200];
    snprintf(creating, sizeof creating, "%s.creating", path);
    /* SWMR needs the latest file format (docs/DESIGN.md: HDF5 SWMR) */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    errno = 0;
    log->file = H5Fcreate(creating, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (log->file < 0) {
        int e = errno;
        /* a create that failed (a full disk) can leave the file it opened, empty: nothing of a log,
           and it would stand in the way of the next run, --force and --resume alike */
        unlink(creating);
        csm_log_lock_drop(log);
        free(log);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot create the log: %s", path,
                        e ? strerror(e) : "HDF5 error");
    }
    log->n = w->P.n;
    log->goals = cfg->output_goals;
    log->quadratic = w->C.Q != NULL;
    log->lagged = w->C.F_lagged != NULL;
    log->contact = cfg->contact.method != CSM_CONTACT_NONE;
    log->compression = cfg->output_compression;
    log->path = strdup(path);
    log->fd = open(creating, O_RDONLY | O_CLOEXEC);
    log->goal = log->goals ? malloc(sizeof(double) * 3 * (size_t)w->P.n + 1) : NULL;
    if (!log->path || (log->goals && !log->goal)) CSM_OUT_OF_MEMORY();

    hid_t f = log->file;
    int rc = 0;
    rc |= csm_h5_attr_string(f, "csm_version", CSM_VERSION);
    rc |= csm_h5_attr_string(f, "git_commit", csm_git_commit);
    rc |= csm_h5_attr_string(f, "compiler", CSM_COMPILER);
    rc |= csm_h5_attr_string(f, "build_type", CSM_BUILD_TYPE);
    char hdf5v[64];
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5v, sizeof hdf5v, "%u.%u.%u", maj, min, rel);
    rc |= csm_h5_attr_string(f, "hdf5_version", hdf5v);
    rc |= csm_h5_attr_string(f, "config", cfg->resolved);
    /* absolute, so that csm run --resume finds the meshes the config names from any folder */
    char *absolute = realpath(cfg->file, NULL);
    rc |= csm_h5_attr_string(f, "config_file", absolute ? absolute : cfg->file);
    free(absolute);
    rc |= csm_h5_attr_string(f, "name", cfg->name);
    rc |= csm_h5_attr_int64(f, "seed", (int64_t)cfg->seed);
    rc |= csm_h5_attr_string(f, "integrator", cfg->integrator.plugin->name);
    rc |= csm_h5_attr_string(f, "rotation", cfg->rotation.plugin->name);
    rc |= csm_h5_attr_string(f, "svd", cfg->svd == CSM_SVD_LAPACKE ? "lapacke" : "fast");
    static const char *const modes[] = {"rigid", "linear", "quadratic"};
    rc |= csm_h5_attr_string(f, "solver.mode", modes[cfg->mode]);
    rc |= csm_h5_attr_double(f, "solver.beta", &cfg->beta, 1);
    static const char *const conserve[] = {"none", "linear", "angular"};
    rc |= csm_h5_attr_string(f, "solver.conserve", conserve[cfg->conserve]);
    static const char *const lanes[] = {"auto", "members", "clusters"};
    rc |= csm_h5_attr_string(f, "solver.lanes", lanes[cfg->lanes]);
    rc |= csm_h5_attr_string(f, "clustering", cfg->clustering.plugin->name);
    rc |= csm_h5_attr_string(f, "plasticity", cfg->plasticity.plugin->name);
    rc |= csm_h5_attr_string(f, "reclusterer", cfg->recluster.plugin->name);
    rc |= csm_h5_attr_string(f, "status", "running");
    rc |= csm_log_writer_attrs(f);
    rc |= csm_h5_attr_double(f, "dt", &cfg->dt, 1);
    rc |= csm_h5_attr_int64(f, "substeps", cfg->substeps);
    rc |= csm_h5_attr_int64(f, "particles", w->P.n);
    rc |= csm_h5_attr_double(f, "object_spacing", w->object_spacing, w->nobjects);
    if (w->constraints && w->constraints->contact) {
        rc |= csm_h5_attr_double(f, "contact.distance", &w->constraints->contacts.distance, 1);
        rc |= csm_h5_attr_int64(f, "contact.self", cfg->contact.self);
    }
    csm_cluster_stats cs;
    csm_cluster_stats_compute(&w->C, w->P.n, &cs);
    rc |= csm_h5_attr_int64(f, "clusters.count", cs.count);
    rc |= csm_h5_attr_double(f, "clusters.members", cs.members, 3);
    rc |= csm_h5_attr_double(f, "clusters.per_particle", cs.per_particle, 3);
    rc |= csm_h5_attr_double(f, "clusters.width", cs.width, 3);
    rc |= csm_h5_attr_int64(f, "degenerate_clusters", w->degenerate_clusters);
    rc |= csm_h5_attr_int64(f, "threads", csm_get_threads());
    write_param_attrs(f, "solver", &cfg->integrator);
    write_param_attrs(f, "clustering", &cfg->clustering);
    write_param_attrs(f, "plasticity", &cfg->plasticity);
    write_param_attrs(f, "recluster", &cfg->recluster);

    hsize_t d2[2] = {(hsize_t)w->P.n, 3}, d1[1] = {(hsize_t)w->P.n};
    rc |= csm_h5_write_fixed(f, "/rest/positions", H5T_NATIVE_DOUBLE, 2, d2, w->P.rest, "m", "rest positions r_i");
    rc |= csm_h5_write_fixed(f, "/rest/mass", H5T_NATIVE_DOUBLE, 1, d1, w->P.mass, "kg", "particle masses m_i");
    rc |= csm_h5_write_fixed(f, "/rest/object", H5T_NATIVE_INT32, 1, d1, w->P.object, "1", "object (body) of each particle");
    int32_t *id = malloc(sizeof *id * (size_t)w->P.n + 1);
    if (!id) CSM_OUT_OF_MEMORY();
    for (int32_t i = 0; i < w->P.n; i++) id[i] = i;
    rc |= csm_h5_write_fixed(f, "/rest/id", H5T_NATIVE_INT32, 1, d1, id, "1",
                      "particle index 0..n-1 (the sidecar's Polyvertex connectivity)");
    free(id);
    if (csm_log_fields_build(log, sim, err)) {
        csm_log_close(log, "failed: could not write the log header", NULL);
        unlink(creating);
        return -1;
    }
    for (int k = 0; k < log->nfield; k++) {
        if (!csm_log_field_used(log, k)) continue;
        log->ds[k] = csm_log_field_create(f, &log->field[k], w->P.n, log->compression);
        if (log->ds[k] < 0) rc = -1;
    }
    rc |= csm_log_fields_record(log);
    if (!rc) rc |= create_events(log);
    int64_t zero = 0;
    csm_log_version_streams(log);
    static const int starts[] = {F_FRAME_MEMBERSHIP, F_FRAME_CLUSTER, F_RV_CLUSTER_START, F_RV_MEMBER_START,
                                 F_MV_OFFSETS_START, F_MV_MEMBER_START, F_CV_START};
    for (size_t i = 0; i < sizeof starts / sizeof starts[0] && !rc; i++) rc |= csm_h5_append(log->ds[starts[i]], T_I64, 1, &zero);
    /* every object exists: from here on frames are only appended, readers may watch */
    if (!rc && csm_log_start_swmr(log) < 0) rc = -1;
    if (rc || H5Fflush(f, H5F_SCOPE_GLOBAL) < 0 || rename(creating, path) != 0) {
        int e = errno;
        csm_log_close(log, "failed: could not write the log header", NULL);
        unlink(creating);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the log%s%s", path, rc ? "" : ": ",
                        rc ? "" : strerror(e));
    }
    *out = log;
    return 0;
}

/* Room for the largest rows a plugin field appends this frame. */
static int plugin_scratch(csm_log *log, const csm_world *w)
{
    size_t need = 0;
    for (int k = 0; k < log->nfield; k++) {
        const field_spec *f = &log->field[k];
        if (!f->listed || log->ds[k] < 0) continue;
        hsize_t rows = f->shape == SHAPE_PARTICLES3 ? (hsize_t)w->P.n : csm_log_frame_rows(f, w);
        size_t bytes = (size_t)rows * (size_t)f->cols * (f->type == T_I32 ? 4 : 8);
        if (bytes > need) need = bytes;
    }
    if (need <= log->scratch_bytes) return 0;
    void *grown = realloc(log->scratch, need);
    if (!grown) return -1;
    log->scratch = grown;
    log->scratch_bytes = need;
    return 0;
}

int csm_log_frame(csm_log *log, csm_sim *sim, const csm_diag *d, csm_error *err)
{
    errno = 0;
    csm_world *w = &sim->w;
    const csm_clusters *C = &w->C;
    int rc = 0;
    if (log->goals) csm_goals_all(w, w->P.x, 0.0, log->goal);
    rc |= write_events(log, &sim->report);
    log->memberships_out += C->m;
    log->clusters_out += C->k;
    /* the memberships, the rest data a resumed run continues from and the clusters' slow state,
       when they changed */
    rc |= csm_log_versions(log, C);
    rc |= plugin_scratch(log, w);
    frame_ctx ctx = {.sim = sim, .d = d, .log = log, .version = (int32_t)log->rest.count - 1,
                     .mversion = (int32_t)log->members.count - 1, .cversion = (int32_t)log->state.count - 1,
                     .scratch = log->scratch};
    /* every dataset of the table with an accessor, in one loop; a slot dataset's rows go in place
       into the slot of this frame, the other holding the previous frame's */
    for (int k = 0; k < log->nfield && !rc; k++) {
        const field_spec *f = &log->field[k];
        if (log->ds[k] < 0 || !f->data) continue;
        if (f->rows == ROWS_SLOTS)
            rc |= csm_h5_write_slot(log->ds[k], f->type, (hsize_t)(log->frames & 1), csm_log_frame_rows(f, w), f->data(&ctx, f));
        else
            rc |= csm_h5_append(log->ds[k], f->type, csm_log_frame_rows(f, w), f->data(&ctx, f));
    }
    /* Flushed every frame, /frames/time last and on its own: a killed run keeps every frame
       whose time was written, and the other datasets hold at least those frames. */
    if (!rc && H5Fflush(log->file, H5F_SCOPE_GLOBAL) >= 0) rc |= csm_h5_append(log->ds[F_TIME], T_F64, 1, &w->time);
    if (rc || H5Fflush(log->file, H5F_SCOPE_GLOBAL) < 0) {
        log->broken = 1;
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: write error at frame %d%s; the log keeps the %lld frames before it",
                        log->path, sim->frame, errno == EFBIG ? " (file size limit)" : errno == ENOSPC ? " (disk full)" : "",
                        (long long)log->frames);
    }
    log->frames++;
    return 0;
}

void csm_log_set_warning(csm_log *log, const char *text)
{
    if (!log) return;
    free(log->warning);
    log->warning = strdup(text); /* out of memory: no warning, the status still goes in */
}

int csm_log_close(csm_log *log, const char *status, csm_error *err)
{
    if (!log) return 0;
    if (log->broken) {
        /* Closing would flush what the failed frame left half written, and HDF5 can fail to close
           such a file at all: leave it as its last good flush made it, like a killed run, and say so. */
        csm_fail(err, CSM_EXIT_FAILURE, "%s: the log stays as its last complete frame left it (status running; "
                 "csm run --resume continues it once there is room)", log->path);
    }
    int rc = 0;
    for (int k = 0; k < log->nfield && !log->broken; k++)
        if (log->ds[k] > 0) H5Dclose(log->ds[k]);
    if (log->events > 0 && !log->broken) H5Dclose(log->events);
    if (log->event_type > 0) H5Tclose(log->event_type);
    if (log->file >= 0 && !log->broken && H5Fclose(log->file) < 0) rc = -1;
    if (log->broken) {
        rc = -1;
    } else if (status) {
        /* a file in SWMR mode takes no new attribute values: the status goes in once it is closed,
           through the descriptor held since the start (wherever the file is now) */
        char held[64];
        if (log->fd >= 0) snprintf(held, sizeof held, "/proc/self/fd/%d", log->fd);
        hid_t f = csm_log_open_clearing(log->fd >= 0 ? held : log->path);
        if (f < 0) rc = -1;
        else {
            rc |= csm_h5_attr_string(f, "status", status);
            if (log->warning) rc |= csm_h5_attr_string(f, "warning", log->warning);
            rc |= csm_h5_attr_int64(f, "frames", log->frames);
            if (H5Fclose(f) < 0) rc = -1;
        }
        char xmf[4096];
        struct stat now, held_st;
        int moved = log->fd >= 0 && fstat(log->fd, &held_st) == 0 &&
                    (stat(log->path, &now) != 0 || now.st_ino != held_st.st_ino || now.st_dev != held_st.st_dev);
        if (!rc && moved)
            rc = csm_fail(err, CSM_EXIT_FAILURE, "%s: the log was moved while it was written; it holds status '%s', "
                          "and its sidecar is not written (csm info on the moved file writes it)", log->path, status);
        else if (!rc) rc = csm_log_write_xdmf(log->path, xmf, sizeof xmf, err);
        else csm_fail(err, CSM_EXIT_FAILURE, "%s: could not close the log cleanly", log->path);
    } /* else given up while opening: the file keeps what it had */
    csm_log_lock_drop(log);
    if (log->fd >= 0) close(log->fd);
    free(log->path);
    free(log->warning);
    free(log->goal);
    free(log->rest.copy);
    free(log->members.copy);
    free(log->state.copy);
    csm_log_fields_free(log);
    free(log);
    return rc ? -1 : 0;
}
