/* Checkpoints: resuming a log from its last complete frame, and reading a log's config back. */
#include "log_internal.h"
#include "error.h"

#include "kernel.h"
#include "lock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Read the last complete frame of the log into the world. */
static int restore_frame(csm_log *log, csm_sim *sim, const log_frames *lf, csm_error *err)
{
    hsize_t t = lf->e.T - 1;
    const int64_t *fo = lf->fo, *fc = lf->fc, *ms = lf->ms, *cs = lf->cs, *mo = lf->mo, *mm = lf->mm, *cv = lf->cv;
    csm_world *w = &sim->w;
    csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    int32_t k = 0;
    hsize_t c0 = (hsize_t)fc[0], m0 = (hsize_t)mm[0];
    int64_t m = fo[1] - fo[0];
    csm_h5_read(log->ds[F_COUNT], H5T_NATIVE_INT32, t, 1, &k);
    if (k < 0 || m < 0 || m > INT32_MAX || fc[1] - fc[0] != k || cs[1] - cs[0] != k || ms[1] - ms[0] != m ||
        mo[1] - mo[0] != k + 1 || mm[1] - mm[0] != m || cv[1] - cv[0] != k)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: frame %llu's cluster rows do not agree with each other",
                        log->path, (unsigned long long)t);
    if (csm_clusters_reserve(C, k, (int32_t)m, P->n)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    C->k = k;
    C->m = (int32_t)m;
    hsize_t hk = (hsize_t)k, hm = (hsize_t)m, rc0 = (hsize_t)cs[0], rm0 = (hsize_t)ms[0], cv0 = (hsize_t)cv[0];
    hsize_t slot = t & 1; /* the slot frame t's per-cluster checkpoint was written in */
    int32_t frame = 0, version = 0;
    int rc = 0;
    rc |= csm_h5_read(log->ds[F_POSITIONS], H5T_NATIVE_DOUBLE, t, 1, P->x);
    rc |= csm_h5_read(log->ds[F_VELOCITIES], H5T_NATIVE_DOUBLE, t, 1, P->v);
    rc |= csm_h5_read(log->ds[F_TIME], H5T_NATIVE_DOUBLE, t, 1, &w->time);
    rc |= csm_h5_read(log->ds[F_CK_FRAME], H5T_NATIVE_INT32, t, 1, &frame);
    rc |= csm_h5_read(log->ds[F_CK_STEP], H5T_NATIVE_INT64, t, 1, &w->step);
    rc |= csm_h5_read(log->ds[F_WORK_EXTERNAL], H5T_NATIVE_DOUBLE, t, 1, &sim->work_external);
    static const int dissipated[CSM_DISSIPATED_N] = {F_DISSIPATED_DAMPING, F_DISSIPATED_VISCOSITY, F_DISSIPATED_PLASTIC,
                                                      F_DISSIPATED_CONTACT, F_DISSIPATED_NUMERICAL};
    for (int k = 0; k < CSM_DISSIPATED_N; k++)
        rc |= csm_h5_read(log->ds[dissipated[k]], H5T_NATIVE_DOUBLE, t, 1, &sim->report.dissipated[k]);
    rc |= csm_h5_read(log->ds[F_RECLUSTER_ENERGY], H5T_NATIVE_DOUBLE, t, 1, &sim->report.recluster_energy);
    rc |= csm_h5_read(log->ds[F_ENERGY_ERROR], H5T_NATIVE_DOUBLE, t, 1, &sim->error_logged); /* contact's share */
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
        {F_COM, C->com, c0, hk}, {F_R, C->R, c0, hk}, {F_FP, C->Fp, cv0, hk}, {F_ALPHA, C->stress_alpha, cv0, hk},
        {F_WIDTH, C->width, cv0, hk}, {F_ID, C->id, cv0, hk}, {F_STATE, C->state, cv0, hk}, {F_CK_Q, C->q, slot, hk},
        {F_CK_FADE, C->fade, slot, hk}, {F_CK_F, C->F, slot, hk}, {F_CK_T, C->T, slot, hk}, {F_CK_QUAD, C->Q, slot, hk},
        {F_CK_F_LAGGED, C->F_lagged, slot, hk},
        {F_RV_WBASE, C->wbase, rm0, hm}, {F_RV_WMASS, C->wmass, rm0, hm}, {F_RV_P, C->p, rm0, hm},
        {F_RV_MASS, C->mass, rc0, hk}, {F_RV_ARR, C->A_rr_inv, rc0, hk}, {F_RV_RANK, C->rank, rc0, hk},
        {F_RV_QMEAN, C->qmean, rc0, hk}, {F_RV_AQQ, C->Aqq_inv, rc0, hk},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const field_spec *f = &log->field[parts[i].field];
        hid_t ds = log->ds[parts[i].field];
        if (ds >= 0)
            rc |= (f->rows == ROWS_SLOTS ? csm_h5_read_slot : csm_h5_read)(ds, csm_h5_type(f->type), parts[i].start,
                                                                            parts[i].rows, parts[i].to);
    }
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
    sim->contact_acted = 0;
    sim->frame = sim->report.frame = frame;
    return 0;
}

/* The log's datasets measured for `sim` (what its config writes), and its particles the ones
   `sim` has: the config in the log must build the same particles. */
static int measure_same(csm_log *log, const csm_sim *sim, log_frames *lf, const char *refused, csm_error *err)
{
    const csm_world *w = &sim->w;
    log->n = w->P.n;
    log->goals = sim->cfg->output_goals;
    log->quadratic = w->C.Q != NULL;
    log->lagged = w->C.F_lagged != NULL;
    int rc = csm_log_measure(log, 0, lf, err);
    if (!rc && (!csm_h5_same(log->file, "/rest/positions", H5T_NATIVE_DOUBLE, w->P.rest, sizeof(double) * 3 * (size_t)w->P.n) ||
                !csm_h5_same(log->file, "/rest/mass", H5T_NATIVE_DOUBLE, w->P.mass, sizeof(double) * (size_t)w->P.n)))
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: its config no longer builds the same particles (another csm "
                      "version, or a changed mesh file?); %s", log->path, refused);
    return rc;
}

int csm_log_restore(const char *path, csm_sim *sim, csm_error *err)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char note[512];
    hid_t file = csm_log_open_read(path, 0, NULL, note, sizeof note);
    if (file < 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: not a readable log", path);
    csm_log *log = csm_log_handle(path, file, sim);
    if (!log) {
        H5Fclose(file);
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    }
    log_frames lf;
    int rc = measure_same(log, sim, &lf, "it cannot be restored into this simulation", err);
    if (!rc) rc = restore_frame(log, sim, &lf, err);
    csm_log_close(log, NULL, NULL);
    return rc;
}

int csm_log_checkpoint(const char *path, csm_sim *sim, const csm_diag *d, csm_error *err)
{
    csm_log *log;
    if (csm_log_open(path, sim, &log, err)) return -1;
    int rc = csm_log_frame(log, sim, d, err);
    csm_error cerr;
    if (csm_log_close(log, rc ? NULL : "ok", &cerr) && !rc) rc = csm_fail(err, cerr.code, "%s", cerr.msg);
    return rc;
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
    if (live) { /* the writer's pid, from its lock */
        char lock_path[4200], pid[32] = "";
        snprintf(lock_path, sizeof lock_path, "%s.lock", path);
        FILE *f = fopen(lock_path, "r");
        if (f) {
            if (!fgets(pid, sizeof pid, f)) pid[0] = '\0';
            fclose(f);
        }
        pid[strcspn(pid, "\n")] = '\0';
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s; it cannot be resumed while it runs (pid %s)", path, note,
                        pid[0] ? pid : "?");
    }
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
    csm_log *log = csm_log_handle(path, file, sim);
    if (!log) {
        H5Fclose(file);
        csm_log_lock_drop(&lock);
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    }
    log->lock_fd = lock.lock_fd;
    log->lock_path = lock.lock_path;
    log_frames lf;
    int rc = measure_same(log, sim, &lf, "it cannot be resumed", err);
    if (!rc) rc = restore_frame(log, sim, &lf, err);
    /* nothing is written yet: a run that would end before the frame it continues from is refused */
    if (!rc && sim->frame > sim->cfg->frames)
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT,
                      "%s: it already holds frame %d, past the %d frames asked (--frames counts from the start "
                      "of the run: give more, or leave it out to run the config's own)",
                      path, sim->frame, sim->cfg->frames);
    /* Every dataset's last row read back before the resume writes in SWMR mode: there a metadata
       read whose checksum fails is retried a hundred times, backing off (minutes, on a log with
       a corrupted chunk index); here it fails at once. */
    for (int k = 0; k < log->nfield && !rc; k++)
        if (log->ds[k] >= 0 && csm_h5_read_last(log->ds[k]))
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: corrupt log: %s cannot be read back", path, log->field[k].path);
    if (!rc) {
        rc = csm_log_trim(log, &lf);
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
        log->state.count = (int64_t)lf.e.cversions;
        log->state.rows[0] = lf.cv[1];
        version_segment seg[8];
        rc |= csm_log_keep_version(&log->rest, seg, csm_log_rest_segments(log, &w->C, seg));
        rc |= csm_log_keep_version(&log->members, seg, csm_log_member_segments(&w->C, seg));
        rc |= csm_log_keep_version(&log->state, seg, csm_log_state_segments(&w->C, seg));
        int64_t resumes = 0;
        hid_t a = H5Aexists(log->file, "resumes") > 0 ? H5Aopen(log->file, "resumes", H5P_DEFAULT) : -1;
        if (a >= 0) {
            H5Aread(a, H5T_NATIVE_INT64, &resumes);
            H5Aclose(a);
        }
        rc |= csm_h5_attr_string(log->file, "status", "running");
        /* the config it now runs (a --frames given to the resume), so that a later resume and the
           advice an interruption prints continue this run, not the first */
        rc |= csm_h5_attr_string(log->file, "config", sim->cfg->resolved);
        rc |= csm_h5_attr_int64(log->file, "resumes", resumes + 1);
        rc |= csm_h5_attr_int64(log->file, "resumed_from_frame", (int64_t)lf.e.T - 1);
        rc |= csm_h5_attr_int64(log->file, "threads", csm_get_threads());
        rc |= csm_log_writer_attrs(log->file);
        if (rc) csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the log", path);
    }
    if (!rc) {
        log->goal = log->goals ? malloc(sizeof(double) * 3 * (size_t)w->P.n + 1) : NULL;
        if (log->goals && !log->goal) CSM_OUT_OF_MEMORY();
        if (H5Fflush(log->file, H5F_SCOPE_GLOBAL) < 0 || csm_log_start_swmr(log) < 0)
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
    if (f < 0 && csm_log_is_hdf5(path)) {
        /* marked open for writing outside SWMR (a killed resume): recovered, once there is room */
        char note[512];
        int live = 0;
        if (csm_log_check_room(path, err)) return -1;
        f = csm_log_open_read(path, 1, &live, note, sizeof note);
        if (f < 0 && live) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s; it cannot be resumed now", path, note);
    }
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
