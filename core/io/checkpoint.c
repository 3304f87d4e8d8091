/* Checkpoints: the versions of the clusters' rest data, and resuming a log from its last
   complete frame. */
#include "log_internal.h"

#include "kernel.h"
#include "lock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int csm_log_rest_segments(const csm_log *log, const csm_clusters *C, version_segment *s)
{
    hsize_t k = (hsize_t)C->k, m = (hsize_t)C->m;
    int n = 0;
    s[n++] = (version_segment){F_RV_WBASE, C->wbase, sizeof(double) * m, m};
    s[n++] = (version_segment){F_RV_WMASS, C->wmass, sizeof(double) * m, m};
    s[n++] = (version_segment){F_RV_P, C->p, sizeof(double) * 3 * m, m};
    s[n++] = (version_segment){F_RV_MASS, C->mass, sizeof(double) * k, k};
    s[n++] = (version_segment){F_RV_ARR, C->A_rr_inv, sizeof(double) * 9 * k, k};
    s[n++] = (version_segment){F_RV_RANK, C->rank, sizeof(int32_t) * k, k};
    if (log->quadratic) {
        s[n++] = (version_segment){F_RV_QMEAN, C->qmean, sizeof(double) * 6 * k, k};
        s[n++] = (version_segment){F_RV_AQQ, C->Aqq_inv, sizeof(double) * 81 * k, k};
    }
    return n;
}

int csm_log_member_segments(const csm_clusters *C, version_segment *s)
{
    hsize_t k = (hsize_t)C->k, m = (hsize_t)C->m;
    s[0] = (version_segment){F_OFFSETS, C->offset, sizeof(int32_t) * (k + 1), k + 1};
    s[1] = (version_segment){F_MEMBERS, C->member, sizeof(int32_t) * m, m};
    s[2] = (version_segment){F_WEIGHTS, C->weight, sizeof(double) * m, m};
    return 3;
}

int csm_log_keep_version(version_stream *v, const version_segment *seg, int ns)
{
    size_t total = 0;
    for (int i = 0; i < ns; i++) total += seg[i].bytes;
    if (total > v->cap) {
        unsigned char *grown = realloc(v->copy, total);
        if (!grown) return -1;
        v->copy = grown;
        v->cap = total;
    }
    size_t off = 0;
    for (int i = 0; i < ns; off += seg[i].bytes, i++) memcpy(v->copy + off, seg[i].data, seg[i].bytes);
    v->bytes = total;
    v->first = seg[0].bytes;
    v->kept = 1;
    return 0;
}

/* Append the segments as a new version unless their bytes are the last version's. rows0 and rows1
   are the version's rows of each kind. The same total and the same first segment mean the same split
   into segments: both streams' first segment has rows of one kind, and the total fixes the other. */
static int version_append(csm_log *log, version_stream *v, const version_segment *seg, int ns, int64_t rows0,
                          int64_t rows1)
{
    size_t total = 0;
    for (int i = 0; i < ns; i++) total += seg[i].bytes;
    int same = v->kept && total == v->bytes && seg[0].bytes == v->first;
    size_t off = 0;
    for (int i = 0; same && i < ns; off += seg[i].bytes, i++) same = !memcmp(v->copy + off, seg[i].data, seg[i].bytes);
    if (same) return 0;
    int rc = 0;
    for (int i = 0; i < ns; i++)
        rc |= csm_h5_append(log->ds[seg[i].field], log->field[seg[i].field].type, seg[i].rows, seg[i].data);
    v->rows[0] += rows0;
    v->rows[1] += rows1;
    rc |= csm_h5_append(log->ds[v->start_field[0]], T_I64, 1, &v->rows[0]);
    rc |= csm_h5_append(log->ds[v->start_field[1]], T_I64, 1, &v->rows[1]);
    v->count++;
    return rc | csm_log_keep_version(v, seg, ns);
}

void csm_log_version_streams(csm_log *log)
{
    log->rest.start_field[0] = F_RV_CLUSTER_START;
    log->rest.start_field[1] = F_RV_MEMBER_START;
    log->members.start_field[0] = F_MV_OFFSETS_START;
    log->members.start_field[1] = F_MV_MEMBER_START;
}

int csm_log_versions(csm_log *log, const csm_clusters *C)
{
    version_segment seg[8];
    int rc = version_append(log, &log->rest, seg, csm_log_rest_segments(log, C, seg), C->k, C->m);
    return rc | version_append(log, &log->members, seg, csm_log_member_segments(C, seg), (int64_t)C->k + 1, C->m);
}

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

/* Read the last complete frame of the log into the world. */
static int restore_frame(csm_log *log, csm_sim *sim, const log_frames *lf, csm_error *err)
{
    hsize_t t = lf->e.T - 1;
    const int64_t *fo = lf->fo, *fc = lf->fc, *ms = lf->ms, *cs = lf->cs, *mo = lf->mo, *mm = lf->mm;
    csm_world *w = &sim->w;
    csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    int32_t k = 0;
    hsize_t c0 = (hsize_t)fc[0], m0 = (hsize_t)mm[0];
    int64_t m = fo[1] - fo[0];
    csm_h5_read(log->ds[F_COUNT], H5T_NATIVE_INT32, t, 1, &k);
    if (k < 0 || m < 0 || m > INT32_MAX || fc[1] - fc[0] != k || cs[1] - cs[0] != k || ms[1] - ms[0] != m ||
        mo[1] - mo[0] != k + 1 || mm[1] - mm[0] != m)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: frame %llu's cluster rows do not agree with each other",
                        log->path, (unsigned long long)t);
    if (csm_clusters_reserve(C, k, (int32_t)m, P->n)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    C->k = k;
    C->m = (int32_t)m;
    hsize_t hk = (hsize_t)k, hm = (hsize_t)m, rc0 = (hsize_t)cs[0], rm0 = (hsize_t)ms[0];
    int32_t frame = 0, version = 0;
    int rc = 0;
    rc |= csm_h5_read(log->ds[F_POSITIONS], H5T_NATIVE_DOUBLE, t, 1, P->x);
    rc |= csm_h5_read(log->ds[F_VELOCITIES], H5T_NATIVE_DOUBLE, t, 1, P->v);
    rc |= csm_h5_read(log->ds[F_TIME], H5T_NATIVE_DOUBLE, t, 1, &w->time);
    rc |= csm_h5_read(log->ds[F_CK_FRAME], H5T_NATIVE_INT32, t, 1, &frame);
    rc |= csm_h5_read(log->ds[F_CK_STEP], H5T_NATIVE_INT64, t, 1, &w->step);
    rc |= csm_h5_read(log->ds[F_WORK_EXTERNAL], H5T_NATIVE_DOUBLE, t, 1, &sim->work_external);
    static const int dissipated[CSM_DISSIPATED_N] = {F_DISSIPATED_DAMPING, F_DISSIPATED_VISCOSITY, F_DISSIPATED_PLASTIC};
    for (int k = 0; k < CSM_DISSIPATED_N; k++)
        rc |= csm_h5_read(log->ds[dissipated[k]], H5T_NATIVE_DOUBLE, t, 1, &sim->report.dissipated[k]);
    rc |= csm_h5_read(log->ds[F_RECLUSTER_ENERGY], H5T_NATIVE_DOUBLE, t, 1, &sim->report.recluster_energy);
    /* the energy budget's reference is frame 0's energy */
    static const int energy[4] = {F_KINETIC, F_POTENTIAL, F_ELASTIC, F_ELASTIC_LAG};
    sim->energy0 = 0;
    for (int k = 0; k < 4; k++) {
        double e = 0;
        rc |= csm_h5_read(log->ds[energy[k]], H5T_NATIVE_DOUBLE, 0, 1, &e);
        sim->energy0 += e;
    }
    sim->have_energy0 = 1;
    rc |= csm_h5_read(log->ds[F_CK_NEXT_ID], H5T_NATIVE_INT32, t, 1, &C->next_id);
    rc |= csm_h5_read(log->ds[F_CK_VERSION], H5T_NATIVE_INT32, t, 1, &version);
    rc |= csm_h5_read(log->ds[F_OFFSETS], H5T_NATIVE_INT32, (hsize_t)mo[0], hk + 1, C->offset);
    rc |= csm_h5_read(log->ds[F_MEMBERS], H5T_NATIVE_INT32, m0, hm, C->member);
    rc |= csm_h5_read(log->ds[F_WEIGHTS], H5T_NATIVE_DOUBLE, m0, hm, C->weight);
    struct {
        int field;
        void *to;
        hsize_t start, rows;
    } parts[] = {
        {F_COM, C->com, c0, hk}, {F_R, C->R, c0, hk}, {F_FP, C->Fp, c0, hk}, {F_ALPHA, C->stress_alpha, c0, hk},
        {F_WIDTH, C->width, c0, hk}, {F_ID, C->id, c0, hk}, {F_STATE, C->state, c0, hk}, {F_CK_Q, C->q, c0, hk},
        {F_CK_FADE, C->fade, c0, hk}, {F_CK_F, C->F, c0, hk}, {F_CK_T, C->T, c0, hk}, {F_CK_QUAD, C->Q, c0, hk}, {F_CK_F_LAGGED, C->F_lagged, c0, hk},
        {F_RV_WBASE, C->wbase, rm0, hm}, {F_RV_WMASS, C->wmass, rm0, hm}, {F_RV_P, C->p, rm0, hm},
        {F_RV_MASS, C->mass, rc0, hk}, {F_RV_ARR, C->A_rr_inv, rc0, hk}, {F_RV_RANK, C->rank, rc0, hk},
        {F_RV_QMEAN, C->qmean, rc0, hk}, {F_RV_AQQ, C->Aqq_inv, rc0, hk},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (log->ds[parts[i].field] >= 0)
            rc |= csm_h5_read(log->ds[parts[i].field], csm_h5_type(log->field[parts[i].field].type), parts[i].start, parts[i].rows,
                            parts[i].to);
    if (rc) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot read frame %llu's state", log->path, (unsigned long long)t);
    int bad = C->offset[0] != 0 || C->offset[k] != C->m;
    for (int32_t c = 0; c < k && !bad; c++) bad = C->offset[c + 1] < C->offset[c];
    for (int32_t j = 0; j < C->m && !bad; j++) bad = C->member[j] < 0 || C->member[j] >= P->n;
    if (bad) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: frame %llu's clusters are corrupt", log->path, (unsigned long long)t);
    if (csm_clusters_relink(C)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    /* what a logged frame starts again (csm_sim_logged) */
    memset(C->flowed, 0, sizeof *C->flowed * (size_t)k);
    sim->report.nevents = 0;
    sim->report.yielded = sim->report.plastic_skipped = 0;
    sim->report.iteration_residual = 0;
    sim->frame = sim->report.frame = frame;
    return 0;
}

/* The datasets of an open log and the rows its complete frames fill: the last complete frame is
   the last one /frames/time holds (it is appended last). Opens the datasets `log` uses, and with
   `all` every dataset present. */
static int measure_log(csm_log *log, int all, log_frames *lf, csm_error *err)
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
    int32_t version = -1, mversion = -1;
    if (csm_h5_read(log->ds[F_FRAME_MEMBERSHIP], H5T_NATIVE_INT64, t, 2, lf->fo) ||
        csm_h5_read(log->ds[F_FRAME_CLUSTER], H5T_NATIVE_INT64, t, 2, lf->fc) ||
        csm_h5_read(log->ds[F_CK_VERSION], H5T_NATIVE_INT32, t, 1, &version) || version < 0 ||
        csm_h5_read(log->ds[F_RV_MEMBER_START], H5T_NATIVE_INT64, (hsize_t)version, 2, lf->ms) ||
        csm_h5_read(log->ds[F_RV_CLUSTER_START], H5T_NATIVE_INT64, (hsize_t)version, 2, lf->cs) ||
        csm_h5_read(log->ds[F_MVERSION], H5T_NATIVE_INT32, t, 1, &mversion) || mversion < 0 ||
        csm_h5_read(log->ds[F_MV_OFFSETS_START], H5T_NATIVE_INT64, (hsize_t)mversion, 2, lf->mo) ||
        csm_h5_read(log->ds[F_MV_MEMBER_START], H5T_NATIVE_INT64, (hsize_t)mversion, 2, lf->mm))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: the offsets of frame %llu are missing", path, (unsigned long long)t);
    e->clusters = (hsize_t)lf->fc[1];
    e->memberships = (hsize_t)lf->fo[1];
    e->versions = (hsize_t)version + 1;
    e->rest_clusters = (hsize_t)lf->cs[1];
    e->rest_members = (hsize_t)lf->ms[1];
    e->mversions = (hsize_t)mversion + 1;
    e->mv_offsets = (hsize_t)lf->mo[1];
    e->mv_members = (hsize_t)lf->mm[1];
    for (int k = 0; k < log->nfield; k++)
        if (log->ds[k] >= 0 && csm_h5_rows(log->ds[k]) < csm_log_field_rows(log, k, e))
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s holds %llu rows, %llu are needed", path, log->field[k].path,
                            (unsigned long long)csm_h5_rows(log->ds[k]), (unsigned long long)csm_log_field_rows(log, k, e));
    return 0;
}

/* Drop whatever was written after the last complete frame. */
static int trim_log(csm_log *log, const log_frames *lf)
{
    int rc = 0;
    for (int k = 0; k < log->nfield; k++)
        if (log->ds[k] >= 0 && csm_h5_rows(log->ds[k]) != csm_log_field_rows(log, k, &lf->e) &&
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
static csm_log *log_handle(const char *path, hid_t file, const csm_sim *sim)
{
    csm_log *log = calloc(1, sizeof *log);
    if (!log) return NULL;
    log->events = log->event_type = -1;
    log->file = file;
    log->path = strdup(path);
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
    csm_log *log = log_handle(path, file, NULL);
    if (!log) return;
    log_frames lf;
    if (measure_log(log, 1, &lf, NULL) == 0) trim_log(log, &lf);
    log->file = -1; /* the caller's */
    csm_log_close(log, NULL, NULL);
}

int csm_log_resume(const char *path, csm_sim *sim, csm_log **out, csm_error *err)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const csm_world *w = &sim->w;
    char note[512];
    int live = 0;
    /* before anything is written to it, recovery included: a resume on a full disk used to leave
       the log unreadable */
    if (csm_log_check_room(path, err)) return -1;
    hid_t probe = csm_log_open_read(path, 1, &live, note, sizeof note);
    if (probe < 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: not a readable log", path);
    H5Fclose(probe);
    if (live) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s; it cannot be resumed while it runs", path, note);
    csm_log lock = {0};
    if (csm_log_lock_take(&lock, path, err)) { /* a resume or a --force run of this log elsewhere */
        csm_log_lock_drop(&lock);
        return -1;
    }
    hid_t file = csm_log_open_clearing(path);
    if (file < 0) {
        csm_log_lock_drop(&lock);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot open the log for writing", path);
    }
    csm_log *log = log_handle(path, file, sim);
    if (!log) {
        H5Fclose(file);
        csm_log_lock_drop(&lock);
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    }
    log->lock_fd = lock.lock_fd;
    log->lock_path = lock.lock_path;
    log->n = w->P.n;
    log->goals = sim->cfg->output_goals;
    log->quadratic = w->C.Q != NULL;
    log->lagged = w->C.F_lagged != NULL;
    log_frames lf;
    int rc = measure_log(log, 0, &lf, err);
    /* the same set-up: the config in the log must build the same particles */
    if (!rc && (!csm_h5_same(log->file, "/rest/positions", H5T_NATIVE_DOUBLE, w->P.rest, sizeof(double) * 3 * (size_t)w->P.n) ||
                !csm_h5_same(log->file, "/rest/mass", H5T_NATIVE_DOUBLE, w->P.mass, sizeof(double) * (size_t)w->P.n)))
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: its config no longer builds the same particles (another csm "
                      "version, or a changed mesh file?); it cannot be resumed", path);
    if (!rc) rc = restore_frame(log, sim, &lf, err);
    /* nothing is written yet: a run that would end before the frame it continues from is refused */
    if (!rc && sim->frame > sim->cfg->frames)
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT,
                      "%s: it already holds frame %d, past the %d frames asked (--frames counts from the start "
                      "of the run: give more, or leave it out to run the config's own)",
                      path, sim->frame, sim->cfg->frames);
    if (!rc) {
        rc = trim_log(log, &lf);
        log->frames = (int64_t)lf.e.T;
        log->memberships_out = lf.fo[1];
        log->clusters_out = lf.fc[1];
        csm_log_version_streams(log);
        log->rest.count = (int64_t)lf.e.versions;
        log->rest.rows[0] = lf.cs[1];
        log->rest.rows[1] = lf.ms[1];
        log->members.count = (int64_t)lf.e.mversions;
        log->members.rows[0] = lf.mo[1];
        log->members.rows[1] = lf.mm[1];
        version_segment seg[8];
        rc |= csm_log_keep_version(&log->rest, seg, csm_log_rest_segments(log, &w->C, seg));
        rc |= csm_log_keep_version(&log->members, seg, csm_log_member_segments(&w->C, seg));
        int64_t resumes = 0;
        hid_t a = H5Aexists(log->file, "resumes") > 0 ? H5Aopen(log->file, "resumes", H5P_DEFAULT) : -1;
        if (a >= 0) {
            H5Aread(a, H5T_NATIVE_INT64, &resumes);
            H5Aclose(a);
        }
        rc |= csm_h5_attr_string(log->file, "status", "running");
        rc |= csm_h5_attr_int64(log->file, "resumes", resumes + 1);
        rc |= csm_h5_attr_int64(log->file, "resumed_from_frame", (int64_t)lf.e.T - 1);
        rc |= csm_h5_attr_int64(log->file, "threads", csm_get_threads());
        rc |= csm_log_writer_attrs(log->file);
        if (rc) csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the log", path);
    }
    if (!rc) {
        log->goal = log->goals ? malloc(sizeof(double) * 3 * (size_t)w->P.n + 1) : NULL;
        if (log->goals && !log->goal) abort();
        if (H5Fflush(log->file, H5F_SCOPE_GLOBAL) < 0 || H5Fstart_swmr_write(log->file) < 0)
            rc = csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the log", path);
    }
    if (rc) {
        csm_log_close(log, NULL, NULL);
        return -1;
    }
    *out = log;
    return 0;
}

const char *csm_log_not_a_log(const char *path, char *buf, int size)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(buf, (size_t)size, "%s", errno == ENOENT ? "no such file" : strerror(errno));
        return buf;
    }
    if (S_ISDIR(st.st_mode)) return "a folder, not a log";
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(buf, (size_t)size, "cannot be read (%s)", strerror(errno));
        return buf;
    }
    fclose(fp);
    return "not an HDF5 file";
}

int csm_log_read_config(const char *path, char **config, char **name, csm_error *err)
{
    *config = *name = NULL;
    hid_t f = csm_log_open_untouched(path); /* a resume checks for room before anything is written */
    char why[160];
    if (f < 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s", path, csm_log_not_a_log(path, why, sizeof why));
    *config = csm_log_string_attr_dup(f, "config");
    *name = csm_log_string_attr_dup(f, "config_file");
    H5Fclose(f);
    if (!*name) *name = strdup(path);
    if (!*config || !*name) {
        free(*config);
        free(*name);
        *config = *name = NULL;
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: not a csm log (no config attribute)", path);
    }
    return 0;
}
