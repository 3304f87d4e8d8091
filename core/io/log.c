#define _XOPEN_SOURCE 700 /* realpath */
#include "log.h"

#include "clustering.h"
#include "csm_version.h"
#include "kernel.h"
#include "lock.h"

#include <errno.h>
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The per-frame datasets, declared as a table (name, type, shape, units, description); one
   generic writer walks it. `rows` says how many rows one frame appends. The /checkpoint datasets
   hold the rest of the state a run continues from (csm_log_resume); the rest data of the
   clusters (/checkpoint/rest) changes only when clusters are added or removed, so it is written
   as a new version only then, and each frame names the version it uses. */
enum { T_F64, T_I32, T_I64 };
enum { SHAPE_SCALAR, SHAPE_VEC3, SHAPE_MAT3, SHAPE_PARTICLES3, SHAPE_COLS };
enum {
    ROWS_ONE, ROWS_CLUSTERS, ROWS_CLUSTERS_PLUS_ONE, ROWS_MEMBERSHIPS,
    ROWS_VERSIONS_PLUS_ONE, ROWS_REST_CLUSTERS, ROWS_REST_MEMBERS /* per version of the rest data */
};
enum { OPT_NONE, OPT_GOALS, OPT_QUADRATIC }; /* written only with output.goals, solver.mode quadratic */

typedef struct field_spec {
    const char *path;
    int type, shape, rows;
    const char *units, *description;
    int cols; /* SHAPE_COLS: values per row */
    int opt;  /* OPT_* */
} field_spec;

enum {
    F_TIME, F_POSITIONS, F_VELOCITIES, F_GOALS,
    F_COUNT, F_FRAME_OFFSET, F_FRAME_CLUSTER, F_OFFSETS, F_MEMBERS, F_WEIGHTS, F_COM, F_R, F_FP, F_ALPHA, F_WIDTH, F_ID, F_STATE,
    F_KINETIC, F_POTENTIAL, F_ELASTIC, F_MOMENTUM, F_ANGULAR, F_COM_ALL, F_MAX_STRAIN, F_VOLUME,
    F_MAX_COND_FP, F_YIELDED, F_PLASTIC_SKIPPED, F_GAIN, F_GAIN_CLAMPED,
    F_T_DYNAMICS, F_T_PLASTICITY, F_T_RECLUSTERING, F_T_EMBEDDING, F_T_TOTAL,
    F_CK_FRAME, F_CK_STEP, F_CK_NEXT_ID, F_CK_VERSION, F_CK_Q, F_CK_FADE, F_CK_F, F_CK_T, F_CK_QUAD,
    F_RV_CLUSTER_START, F_RV_MEMBER_START, F_RV_WBASE, F_RV_WMASS, F_RV_P, F_RV_MASS, F_RV_ARR, F_RV_RANK,
    F_RV_QMEAN, F_RV_AQQ,
    F_NFIELDS
};

static const field_spec fields[F_NFIELDS] = {
    [F_TIME] = {"/frames/time", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "simulated time of each logged frame", 0, OPT_NONE},
    [F_POSITIONS] = {"/frames/positions", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "particle positions x_i", 0, OPT_NONE},
    [F_VELOCITIES] = {"/frames/velocities", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m/s", "particle velocities v_i", 0, OPT_NONE},
    [F_GOALS] = {"/frames/goals", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "goal positions g_i = sum_c w_ic g_ic", 0, OPT_GOALS},
    [F_COUNT] = {"/clusters/count", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                "clusters per frame, those fading in or out included (/clusters/state)", 0, OPT_NONE},
    [F_FRAME_OFFSET] = {"/clusters/frame_offset", T_I64, SHAPE_SCALAR, ROWS_ONE, "1",
                        "(T+1,): frame t's memberships are members/weights[frame_offset[t]:frame_offset[t+1]]", 0, OPT_NONE},
    [F_FRAME_CLUSTER] = {"/clusters/frame_cluster", T_I64, SHAPE_SCALAR, ROWS_ONE, "1",
                         "(T+1,): frame t's clusters are com/R/Fp rows [frame_cluster[t]:frame_cluster[t+1]]; "
                         "its offsets are offsets[frame_cluster[t] + t : frame_cluster[t+1] + t + 1]", 0, OPT_NONE},
    [F_OFFSETS] = {"/clusters/offsets", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS_PLUS_ONE, "1",
                   "per frame, k+1 CSR offsets (from 0) of each cluster's members", 0, OPT_NONE},
    [F_MEMBERS] = {"/clusters/members", T_I32, SHAPE_SCALAR, ROWS_MEMBERSHIPS, "1", "per frame, member particle of each membership", 0, OPT_NONE},
    [F_WEIGHTS] = {"/clusters/weights", T_F64, SHAPE_SCALAR, ROWS_MEMBERSHIPS, "1", "per frame, w_ic of each membership", 0, OPT_NONE},
    [F_COM] = {"/clusters/com", T_F64, SHAPE_VEC3, ROWS_CLUSTERS, "m", "per frame, cluster centre of mass x-bar_c", 0, OPT_NONE},
    [F_R] = {"/clusters/R", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, cluster rotation R_c", 0, OPT_NONE},
    [F_FP] = {"/clusters/Fp", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, plastic deformation F^p_c", 0, OPT_NONE},
    [F_ALPHA] = {"/clusters/stress_alpha", T_F64, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                 "per frame, cumulative plastic stress alpha_c (Falkenstein Eq 14)", 0, OPT_NONE},
    [F_WIDTH] = {"/clusters/width", T_F64, SHAPE_SCALAR, ROWS_CLUSTERS, "m",
                 "per frame, cluster width w_c = max_i |p_ic| (Bargteil-Jones Eq 5)", 0, OPT_NONE},
    [F_ID] = {"/clusters/id", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
              "per frame, stable cluster id (the initial clusters are 0..k-1; added clusters count on)", 0, OPT_NONE},
    [F_STATE] = {"/clusters/state", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                 "per frame, 0 active, 1 fading out (marked for removal), 2 fading in (added)", 0, OPT_NONE},
    [F_KINETIC] = {"/diagnostics/kinetic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "sum 1/2 m |v|^2", 0, OPT_NONE},
    [F_POTENTIAL] = {"/diagnostics/potential_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "gravitational potential energy -sum m g.x", 0, OPT_NONE},
    [F_ELASTIC] = {"/diagnostics/elastic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "kg m^2",
                   "shape-matching energy sum_c sum_i w_ic m_i |x_i - g_ic|^2", 0, OPT_NONE},
    [F_MOMENTUM] = {"/diagnostics/linear_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m/s", "sum m v", 0, OPT_NONE},
    [F_ANGULAR] = {"/diagnostics/angular_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m^2/s", "sum m x cross v about the world origin", 0, OPT_NONE},
    [F_COM_ALL] = {"/diagnostics/center_of_mass", T_F64, SHAPE_VEC3, ROWS_ONE, "m", "centre of mass of all particles", 0, OPT_NONE},
    [F_MAX_STRAIN] = {"/diagnostics/max_strain", T_F64, SHAPE_SCALAR, ROWS_ONE, "1",
                      "max over memberships of beta = |x_i - g_ic| / width_c (Bargteil-Jones Eq 4)", 0, OPT_NONE},
    [F_VOLUME] = {"/diagnostics/volume_ratio", T_F64, SHAPE_SCALAR, ROWS_ONE, "1", "mean det F^p over clusters", 0, OPT_NONE},
    [F_MAX_COND_FP] = {"/diagnostics/max_cond_Fp", T_F64, SHAPE_SCALAR, ROWS_ONE, "1",
                       "largest condition number sigma_max / sigma_min of F^p over clusters", 0, OPT_NONE},
    [F_YIELDED] = {"/diagnostics/yielded", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                   "clusters whose F^p flowed since the previous logged frame (Falkenstein Eq 11-12)", 0, OPT_NONE},
    [F_PLASTIC_SKIPPED] = {"/diagnostics/plastic_skipped", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                           "plastic updates skipped since the previous logged frame on a collapsed or inverted F^e (cluster-steps)", 0, OPT_NONE},
    [F_GAIN] = {"/diagnostics/alpha_c", T_F64, SHAPE_COLS, ROWS_ONE, "1",
                "min, mean and max over clusters of the spring gain alpha_c = h^2 k_c of the frame's last step "
                "(solver.alpha, or from solver.modulus; 0 without springs)", 3, OPT_NONE},
    [F_GAIN_CLAMPED] = {"/diagnostics/alpha_clamped", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                        "clusters whose gain from solver.modulus exceeded 1 and was clamped to 1 in the frame's last "
                        "step (the step is too coarse for the modulus)", 0, OPT_NONE},
    [F_T_DYNAMICS] = {"/timings/dynamics", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "forces, integrator and colliders per frame", 0, OPT_NONE},
    [F_T_PLASTICITY] = {"/timings/plasticity", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "plasticity per frame", 0, OPT_NONE},
    [F_T_RECLUSTERING] = {"/timings/reclustering", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "reclustering per frame (embedding included)", 0, OPT_NONE},
    [F_T_EMBEDDING] = {"/timings/embedding", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "embedding optimisation per frame", 0, OPT_NONE},
    [F_T_TOTAL] = {"/timings/total", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "whole frame: every stage and the diagnostics", 0, OPT_NONE},
    [F_CK_FRAME] = {"/checkpoint/frame", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                    "frames computed when each logged frame was written (logged frames are every output.every-th)", 0,
                    OPT_NONE},
    [F_CK_STEP] = {"/checkpoint/step", T_I64, SHAPE_SCALAR, ROWS_ONE, "1", "steps taken", 0, OPT_NONE},
    [F_CK_NEXT_ID] = {"/checkpoint/next_id", T_I32, SHAPE_SCALAR, ROWS_ONE, "1", "id the next added cluster gets", 0,
                      OPT_NONE},
    [F_CK_VERSION] = {"/checkpoint/rest_version", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                      "version of /checkpoint/rest the frame's clusters use", 0, OPT_NONE},
    [F_CK_Q] = {"/checkpoint/q", T_F64, SHAPE_COLS, ROWS_CLUSTERS, "1",
                "per frame, R_c as a unit quaternion (w, x, y, z): the warm start of the next polar decomposition", 4,
                OPT_NONE},
    [F_CK_FADE] = {"/checkpoint/fade", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                   "per frame, steps since a fading cluster was marked or added", 0, OPT_NONE},
    [F_CK_F] = {"/checkpoint/F", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, F_c = A_xr A_rr^-1 of the last fit", 0,
                OPT_NONE},
    [F_CK_T] = {"/checkpoint/T", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1",
                "per frame, goal transform of the last fit: g_ic = T_c p_ic + com_c", 0, OPT_NONE},
    [F_CK_QUAD] = {"/checkpoint/Q", T_F64, SHAPE_COLS, ROWS_CLUSTERS, "1",
                   "per frame, 3x6 quadratic part of the goal transform (Mueller 2005 Sec 4.3)", 18, OPT_QUADRATIC},
    [F_RV_CLUSTER_START] = {"/checkpoint/rest/cluster_start", T_I64, SHAPE_SCALAR, ROWS_VERSIONS_PLUS_ONE, "1",
                            "(V+1,): version v's per-cluster rows are [cluster_start[v], cluster_start[v+1])", 0, OPT_NONE},
    [F_RV_MEMBER_START] = {"/checkpoint/rest/member_start", T_I64, SHAPE_SCALAR, ROWS_VERSIONS_PLUS_ONE, "1",
                           "(V+1,): version v's per-membership rows are [member_start[v], member_start[v+1])", 0,
                           OPT_NONE},
    [F_RV_WBASE] = {"/checkpoint/rest/wbase", T_F64, SHAPE_SCALAR, ROWS_REST_MEMBERS, "1",
                    "per version, membership weight before fading (Falkenstein Sec 3.2.1)", 0, OPT_NONE},
    [F_RV_WMASS] = {"/checkpoint/rest/wmass", T_F64, SHAPE_SCALAR, ROWS_REST_MEMBERS, "kg",
                    "per version, w_ic m_i (Falkenstein Eq 7)", 0, OPT_NONE},
    [F_RV_P] = {"/checkpoint/rest/p", T_F64, SHAPE_VEC3, ROWS_REST_MEMBERS, "m",
                "per version, rest offset p_ic from the cluster's rest centre of mass", 0, OPT_NONE},
    [F_RV_MASS] = {"/checkpoint/rest/mass", T_F64, SHAPE_SCALAR, ROWS_REST_CLUSTERS, "kg", "per version, sum_i w_ic m_i",
                   0, OPT_NONE},
    [F_RV_ARR] = {"/checkpoint/rest/A_rr_inv", T_F64, SHAPE_MAT3, ROWS_REST_CLUSTERS, "1/(kg m^2)",
                  "per version, pseudo-inverse of A_rr = sum_i w_ic m_i p_ic p_ic^T", 0, OPT_NONE},
    [F_RV_RANK] = {"/checkpoint/rest/rank", T_I32, SHAPE_SCALAR, ROWS_REST_CLUSTERS, "1", "per version, rank of A_rr", 0,
                   OPT_NONE},
    [F_RV_QMEAN] = {"/checkpoint/rest/qmean", T_F64, SHAPE_COLS, ROWS_REST_CLUSTERS, "m^2",
                    "per version, weighted mean of the quadratic terms of p_ic", 6, OPT_QUADRATIC},
    [F_RV_AQQ] = {"/checkpoint/rest/Aqq_inv", T_F64, SHAPE_COLS, ROWS_REST_CLUSTERS, "1",
                  "per version, 9x9 pseudo-inverse of the quadratic moment matrix", 81, OPT_QUADRATIC},
};

struct csm_log {
    hid_t file;
    hid_t ds[F_NFIELDS];
    int32_t n;
    int64_t frames;          /* logged frames */
    int64_t memberships_out; /* rows of /clusters/members written */
    int64_t clusters_out;    /* rows of /clusters/com written */
    hid_t events;            /* /recluster/events */
    hid_t event_type;        /* its compound row type */
    int goals, quadratic;
    char *path;
    double *goal;           /* [3n] gathered goals, with output.goals */
    /* /checkpoint/rest: versions written, their rows, and a copy of the last version's bytes */
    int64_t versions, rest_cluster_rows, rest_member_rows;
    unsigned char *rest_copy;
    size_t rest_bytes, rest_cap;
    int broken; /* a write failed: the file is left as the last flush made it */
    int lock_fd;     /* csm_lock_take of lock_path, held while this process writes the log; -1 when not */
    char *lock_path; /* <log>.lock */
};

/* One writer per log: the lock beside it, taken before the file is created or touched. */
static int take_log_lock(csm_log *log, const char *path, csm_error *err)
{
    size_t len = strlen(path) + 6;
    log->lock_path = malloc(len);
    if (!log->lock_path) abort();
    snprintf(log->lock_path, len, "%s.lock", path);
    log->lock_fd = csm_lock_take(log->lock_path, path, "log", err);
    return log->lock_fd < 0 ? -1 : 0;
}

static void drop_log_lock(csm_log *log)
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

static hid_t h5type(int t)
{
    return t == T_F64 ? H5T_NATIVE_DOUBLE : t == T_I32 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64;
}

static int attr_string(hid_t obj, const char *name, const char *value)
{
    /* variable-length UTF-8: h5py returns str, not bytes */
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    hid_t space = H5Screate(H5S_SCALAR);
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, type, &value);
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
    return rc < 0 ? -1 : 0;
}

static int attr_double(hid_t obj, const char *name, const double *v, int count)
{
    hsize_t dims[1] = {(hsize_t)count};
    hid_t space = count == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, NULL);
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_DOUBLE, v);
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

static int attr_int64(hid_t obj, const char *name, int64_t v)
{
    hid_t space = H5Screate(H5S_SCALAR);
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_INT64, &v);
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

static hid_t link_props(void)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    return lcpl;
}

/* A fixed-size dataset written at once (the /rest group). */
static int write_fixed(hid_t file, const char *path, hid_t type, int rank, const hsize_t *dims,
                       const void *data, const char *units, const char *description)
{
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t lcpl = link_props();
    hid_t ds = H5Dcreate2(file, path, type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = ds < 0 ? -1 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (ds >= 0) {
        attr_string(ds, "units", units);
        attr_string(ds, "description", description);
        H5Dclose(ds);
    }
    H5Pclose(lcpl);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

static hid_t create_extendible(hid_t file, const field_spec *f, int32_t n)
{
    hsize_t dims[4] = {0, 0, 0, 0}, maxdims[4] = {H5S_UNLIMITED, 0, 0, 0}, chunk[4] = {1, 0, 0, 0};
    int rank = 1;
    switch (f->shape) {
    case SHAPE_SCALAR: break;
    case SHAPE_VEC3: rank = 2; dims[1] = maxdims[1] = chunk[1] = 3; break;
    case SHAPE_MAT3: rank = 3; dims[1] = dims[2] = maxdims[1] = maxdims[2] = chunk[1] = chunk[2] = 3; break;
    case SHAPE_PARTICLES3:
        rank = 3;
        dims[1] = maxdims[1] = chunk[1] = (hsize_t)(n > 0 ? n : 1);
        dims[2] = maxdims[2] = chunk[2] = 3;
        break;
    case SHAPE_COLS: rank = 2; dims[1] = maxdims[1] = chunk[1] = (hsize_t)f->cols; break;
    }
    if (f->shape != SHAPE_PARTICLES3)
        chunk[0] = f->rows == ROWS_ONE || f->rows == ROWS_VERSIONS_PLUS_ONE ? 256 : f->cols > 8 ? 256 : 4096;
    hid_t space = H5Screate_simple(rank, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, rank, chunk);
    hid_t lcpl = link_props();
    hid_t ds = H5Dcreate2(file, f->path, h5type(f->type), space, lcpl, dcpl, H5P_DEFAULT);
    if (ds >= 0) {
        attr_string(ds, "units", f->units);
        attr_string(ds, "description", f->description);
    }
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
    return ds;
}

/* Append `rows` rows to an extendible dataset. */
static int append_rows(hid_t ds, int type, hsize_t rows, const void *data)
{
    if (rows == 0) return 0;
    hid_t space = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[4];
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    hsize_t start[4] = {dims[0], 0, 0, 0}, count[4];
    memcpy(count, dims, sizeof count);
    count[0] = rows;
    dims[0] += rows;
    if (H5Dset_extent(ds, dims) < 0) return -1;
    space = H5Dget_space(ds);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mem = H5Screate_simple(rank, count, NULL);
    herr_t rc = H5Dwrite(ds, h5type(type), mem, space, H5P_DEFAULT, data);
    H5Sclose(mem);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
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
        case CSM_REAL: attr_double(file, name, &v->num, 1); break;
        case CSM_INT:
        case CSM_BOOL: attr_int64(file, name, (int64_t)v->num); break; /* integers stay integers */
        case CSM_VEC3: attr_double(file, name, v->vec, 3); break;
        case CSM_MAT3: attr_double(file, name, v->vec, 9); break;
        case CSM_STRING: attr_string(file, name, v->str ? v->str : ""); break;
        case CSM_ENUM: {
            const char *c = s->choices;
            for (int idx = 0; idx < (int)v->num && c; idx++) {
                c = strchr(c, '|');
                if (c) c++;
            }
            char text[128];
            size_t len = c ? (strchr(c, '|') ? (size_t)(strchr(c, '|') - c) : strlen(c)) : 0;
            snprintf(text, sizeof text, "%.*s", (int)len, c ? c : "");
            attr_string(file, name, text);
            break;
        }
        case CSM_POINTS: break;
        }
    }
}

char *csm_log_string_attr_dup(hid_t obj, const char *name)
{
    if (H5Aexists(obj, name) <= 0) return NULL;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    char *out = NULL;
    if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t)) {
        char *value = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5T_CSET_UTF8);
        if (H5Aread(a, mt, &value) >= 0 && value) {
            out = strdup(value);
            H5free_memory(value);
        }
        H5Tclose(mt);
    } else if (H5Tget_class(t) == H5T_STRING) {
        size_t len = H5Tget_size(t);
        out = malloc(len + 1);
        if (out && H5Aread(a, t, out) >= 0) {
            out[len] = '\0';
        } else {
            free(out);
            out = NULL;
        }
    }
    H5Tclose(t);
    H5Aclose(a);
    return out;
}

int csm_log_string_attr(hid_t obj, const char *name, char *buf, size_t size)
{
    buf[0] = '\0';
    char *value = csm_log_string_attr_dup(obj, name);
    if (!value) return -1;
    snprintf(buf, size, "%s", value);
    free(value);
    return 0;
}

static void trim_after_crash(const char *path, hid_t file);

/* A log is written in HDF5's single-writer/multiple-reader mode (SWMR): the superblock marks the
   file as open for writing until the writer closes it, and ordinary readers refuse a file so
   marked. After a kill the mark stays; `h5clear -s` removes it, and so does opening the file
   with the file-access property "clear_status_flags" (what h5clear sets), which is done here
   once the process that wrote the log is known to be gone. */
enum { WRITER_GONE, WRITER_LIVE, WRITER_UNKNOWN };

static int writer_state(hid_t f, char *host, size_t size)
{
    char me[256] = "";
    hid_t a = H5Aexists(f, "writer_pid") > 0 ? H5Aopen(f, "writer_pid", H5P_DEFAULT) : -1;
    int64_t pid = 0;
    if (a >= 0) {
        H5Aread(a, H5T_NATIVE_INT64, &pid);
        H5Aclose(a);
    }
    if (csm_log_string_attr(f, "writer_host", host, size) || pid <= 0) return WRITER_UNKNOWN;
    if (gethostname(me, sizeof me) != 0 || strcmp(host, me)) return WRITER_UNKNOWN;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return WRITER_GONE;
    /* the pid is in use: by csm, or by an unrelated process that reused it */
    char proc[64], comm[64] = "";
    snprintf(proc, sizeof proc, "/proc/%lld/comm", (long long)pid);
    FILE *fp = fopen(proc, "r");
    if (!fp) return WRITER_LIVE;
    int got = fgets(comm, sizeof comm, fp) != NULL;
    fclose(fp);
    return got && strncmp(comm, "csm", 3) ? WRITER_GONE : WRITER_LIVE;
}

/* Open for writing, clearing the open-for-writing mark a killed writer left. */
static hid_t open_clearing(const char *path)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hbool_t clear = 1;
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hid_t f = H5Pset(fapl, "clear_status_flags", &clear) < 0 ? -1 : H5Fopen(path, H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    return f;
}

/* A write that failed for want of room can leave the superblock's end-of-file address past the
   end of the file, and HDF5 then refuses the file as truncated. The bytes missing belong to the
   frame that failed, which nothing complete refers to: the file is extended with zeros to that
   address (superblock version 2 or 3, 8-byte addresses, no user block: what csm writes). */
static void extend_to_stored_eof(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return;
    unsigned char sb[48];
    size_t got = fread(sb, 1, sizeof sb, fp);
    long size = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    fclose(fp);
    static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (got < 36 || memcmp(sb, signature, 8) || (sb[8] != 2 && sb[8] != 3) || sb[9] != 8 || size < 0) return;
    uint64_t eof = 0;
    for (int b = 7; b >= 0; b--) eof = eof << 8 | sb[28 + b];
    if (eof > (uint64_t)size && eof < ((uint64_t)1 << 48)) {
        if (truncate(path, (off_t)eof) != 0) return;
    }
}

/* After a crash: clear the open-for-writing mark and cut the datasets back to the complete
   frames, so every reader sees whole frames only (a log without checkpoints is left uncut). */
static int recover_log(const char *path)
{
    extend_to_stored_eof(path);
    hid_t f = open_clearing(path);
    if (f < 0) return -1;
    trim_after_crash(path, f);
    return H5Fclose(f) < 0 ? -1 : 0;
}

int64_t csm_log_open_read(const char *path, int recover, int *live, char *note, int size)
{
    note[0] = '\0';
    if (live) *live = 0;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (H5Fis_hdf5(path) <= 0) return -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0) return f;
    /* marked as open for writing: a live run, or one that was killed */
    f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
    if (f < 0) return -1;
    char host[256] = "";
    int writer = writer_state(f, host, sizeof host);
    if (writer == WRITER_LIVE) {
        if (live) *live = 1;
        snprintf(note, (size_t)size, "a run is writing this log now (read as it stood at this moment)");
        return f;
    }
    if (writer == WRITER_UNKNOWN && !recover) {
        snprintf(note, (size_t)size, "the log is marked as being written on host %s; if that run has stopped, "
                 "csm run --resume or h5clear -s opens it to every reader", host[0] ? host : "(unknown)");
        return f;
    }
    H5Fclose(f);
    recover_log(path);
    if ((f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)) >= 0) {
        snprintf(note, (size_t)size, "the run that wrote this log stopped without closing it (killed?); its "
                 "open-for-writing mark is cleared and it holds every frame flushed");
        return f;
    }
    snprintf(note, (size_t)size, "the run that wrote this log stopped without closing it, and the mark it left "
             "cannot be cleared here (a read-only file, or no room?): HDF5 readers need SWMR mode, h5py "
             "File(path, swmr=True), until h5clear -s clears it");
    return H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
}

int csm_log_status(const char *path, char *status, int size, int64_t *frames)
{
    status[0] = '\0';
    *frames = -1;
    char note[512];
    hid_t f = csm_log_open_read(path, 0, NULL, note, sizeof note);
    if (f < 0) return -1;
    int rc = csm_log_string_attr(f, "status", status, (size_t)size);
    if (H5Lexists(f, "/frames/time", H5P_DEFAULT) > 0) {
        hid_t ds = H5Dopen2(f, "/frames/time", H5P_DEFAULT);
        hid_t sp = H5Dget_space(ds);
        hsize_t dim = 0;
        if (H5Sget_simple_extent_ndims(sp) == 1) H5Sget_simple_extent_dims(sp, &dim, NULL);
        *frames = (int64_t)dim;
        H5Sclose(sp);
        H5Dclose(ds);
    }
    H5Fclose(f);
    return rc;
}

void csm_log_xdmf_path(const char *h5path, char *buf, int size)
{
    const char *dot = strrchr(h5path, '.'), *slash = strrchr(h5path, '/');
    if (dot && (!slash || dot > slash))
        snprintf(buf, (size_t)size, "%.*s.xmf", (int)(dot - h5path), h5path);
    else
        snprintf(buf, (size_t)size, "%s.xmf", h5path);
}

/* /recluster/events: one compound row per cluster marked for removal or added. `kind` is a
   fixed-length string ("removed" | "added"), so h5py shows it as it reads. */
typedef struct event_row {
    int32_t frame;
    double time;
    char kind[8];
    int32_t cluster, seed, members;
    double cond_Fp, embedding_energy;
    int32_t embedding_iterations;
    double linear_energy;
} event_row;

static hid_t make_event_type(void)
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
    H5Tclose(kind);
    return t;
}

static int create_events(csm_log *log)
{
    hid_t t = log->event_type = make_event_type();
    hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {256};
    hid_t space = H5Screate_simple(1, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    hid_t lcpl = link_props();
    log->events = H5Dcreate2(log->file, "/recluster/events", t, space, lcpl, dcpl, H5P_DEFAULT);
    if (log->events >= 0)
        attr_string(log->events, "description",
                    "one row per cluster marked for removal (kind removed: it fades out) or added (kind added: it "
                    "fades in); cluster is the stable id of /clusters/id; seed -1 for a removal; cond_Fp the "
                    "condition number that triggered a removal; embedding_energy the Falkenstein Eq 21 sum (terms "
                    "weighted by w_ic m_i) at the "
                    "end of the embedding (NaN when none ran), embedding_iterations its Jacobi iterations, and "
                    "linear_energy the same sum for the linear embedding of the same set (NaN unless compared)");
    if (log->events >= 0) /* a compound: the units of each field */
        attr_string(log->events, "units",
                    "frame: 1, time: s, kind: 1, cluster: 1, seed: 1, members: 1, cond_Fp: 1, embedding_energy: kg m^2, "
                    "embedding_iterations: 1, linear_energy: kg m^2");
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
                              ev->cond_Fp, ev->embedding_energy, ev->embedding_iterations, ev->linear_energy};
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

static int field_used(const csm_log *log, int k)
{
    return fields[k].opt == OPT_NONE || (fields[k].opt == OPT_GOALS && log->goals) ||
           (fields[k].opt == OPT_QUADRATIC && log->quadratic);
}

/* Who writes the log, so a reader can tell a live run from a killed one. */
static int writer_attrs(hid_t f)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    return attr_string(f, "writer_host", host) | attr_int64(f, "writer_pid", (int64_t)getpid());
}

int csm_log_open(const char *path, const csm_sim *sim, csm_log **out, csm_error *err)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported by us, in one line */
    const csm_world *w = &sim->w;
    const csm_config *cfg = sim->cfg;
    csm_log *log = calloc(1, sizeof *log);
    if (!log) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    /* before the file is truncated: a log another process writes is refused, not overwritten */
    if (take_log_lock(log, path, err)) {
        drop_log_lock(log);
        free(log);
        return -1;
    }
    /* SWMR needs the latest file format (DESIGN.md: HDF5 SWMR) */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    errno = 0;
    log->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (log->file < 0) {
        int e = errno;
        drop_log_lock(log);
        free(log);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot create the log: %s", path,
                        e ? strerror(e) : "HDF5 error");
    }
    log->n = w->P.n;
    log->goals = cfg->output_goals;
    log->quadratic = w->C.Q != NULL;
    log->path = strdup(path);
    log->goal = log->goals ? malloc(sizeof(double) * 3 * (size_t)w->P.n + 1) : NULL;
    if (!log->path || (log->goals && !log->goal)) abort();

    hid_t f = log->file;
    int rc = 0;
    rc |= attr_string(f, "csm_version", CSM_VERSION);
    rc |= attr_string(f, "git_commit", CSM_GIT_COMMIT);
    rc |= attr_string(f, "compiler", CSM_COMPILER);
    rc |= attr_string(f, "build_type", CSM_BUILD_TYPE);
    char hdf5v[64];
    unsigned maj, min, rel;
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5v, sizeof hdf5v, "%u.%u.%u", maj, min, rel);
    rc |= attr_string(f, "hdf5_version", hdf5v);
    rc |= attr_string(f, "config", cfg->resolved);
    /* absolute, so that csm run --resume finds the meshes the config names from any folder */
    char *absolute = realpath(cfg->file, NULL);
    rc |= attr_string(f, "config_file", absolute ? absolute : cfg->file);
    free(absolute);
    rc |= attr_string(f, "name", cfg->name);
    rc |= attr_int64(f, "seed", (int64_t)cfg->seed);
    rc |= attr_string(f, "integrator", cfg->integrator.plugin->name);
    rc |= attr_string(f, "rotation", cfg->rotation.plugin->name);
    rc |= attr_string(f, "svd", cfg->svd == CSM_SVD_LAPACKE ? "lapacke" : "fast");
    static const char *const modes[] = {"rigid", "linear", "quadratic"};
    rc |= attr_string(f, "solver.mode", modes[cfg->mode]);
    rc |= attr_double(f, "solver.beta", &cfg->beta, 1);
    static const char *const conserve[] = {"none", "linear", "angular"};
    rc |= attr_string(f, "solver.conserve", conserve[cfg->conserve]);
    rc |= attr_string(f, "clustering", cfg->clustering.plugin->name);
    rc |= attr_string(f, "plasticity", cfg->plasticity.plugin->name);
    rc |= attr_string(f, "reclusterer", cfg->recluster.plugin->name);
    rc |= attr_string(f, "status", "running");
    rc |= writer_attrs(f);
    rc |= attr_double(f, "dt", &cfg->dt, 1);
    rc |= attr_int64(f, "substeps", cfg->substeps);
    rc |= attr_int64(f, "particles", w->P.n);
    rc |= attr_double(f, "object_spacing", w->object_spacing, w->nobjects);
    csm_cluster_stats cs;
    csm_cluster_stats_compute(&w->C, w->P.n, &cs);
    rc |= attr_int64(f, "clusters.count", cs.count);
    rc |= attr_double(f, "clusters.members", cs.members, 3);
    rc |= attr_double(f, "clusters.per_particle", cs.per_particle, 3);
    rc |= attr_double(f, "clusters.width", cs.width, 3);
    rc |= attr_int64(f, "degenerate_clusters", w->degenerate_clusters);
    rc |= attr_int64(f, "threads", csm_get_threads());
    write_param_attrs(f, "solver", &cfg->integrator);
    write_param_attrs(f, "clustering", &cfg->clustering);
    write_param_attrs(f, "plasticity", &cfg->plasticity);
    write_param_attrs(f, "recluster", &cfg->recluster);

    hsize_t d2[2] = {(hsize_t)w->P.n, 3}, d1[1] = {(hsize_t)w->P.n};
    rc |= write_fixed(f, "/rest/positions", H5T_NATIVE_DOUBLE, 2, d2, w->P.rest, "m", "rest positions r_i");
    rc |= write_fixed(f, "/rest/mass", H5T_NATIVE_DOUBLE, 1, d1, w->P.mass, "kg", "particle masses m_i");
    rc |= write_fixed(f, "/rest/object", H5T_NATIVE_INT32, 1, d1, w->P.object, "1", "object (body) of each particle");
    int32_t *id = malloc(sizeof *id * (size_t)w->P.n + 1);
    if (!id) abort();
    for (int32_t i = 0; i < w->P.n; i++) id[i] = i;
    rc |= write_fixed(f, "/rest/id", H5T_NATIVE_INT32, 1, d1, id, "1",
                      "particle index 0..n-1 (the sidecar's Polyvertex connectivity)");
    free(id);
    for (int k = 0; k < F_NFIELDS; k++) {
        if (!field_used(log, k)) {
            log->ds[k] = -1;
            continue;
        }
        log->ds[k] = create_extendible(f, &fields[k], w->P.n);
        if (log->ds[k] < 0) rc = -1;
    }
    if (!rc) rc |= create_events(log);
    int64_t zero = 0;
    if (!rc) rc |= append_rows(log->ds[F_FRAME_OFFSET], T_I64, 1, &zero);
    if (!rc) rc |= append_rows(log->ds[F_FRAME_CLUSTER], T_I64, 1, &zero);
    if (!rc) rc |= append_rows(log->ds[F_RV_CLUSTER_START], T_I64, 1, &zero);
    if (!rc) rc |= append_rows(log->ds[F_RV_MEMBER_START], T_I64, 1, &zero);
    /* every object exists: from here on frames are only appended, readers may watch */
    if (!rc && H5Fstart_swmr_write(f) < 0) rc = -1;
    if (rc || H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) {
        csm_log_close(log, "failed: could not write the log header", NULL);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the log", path);
    }
    *out = log;
    return 0;
}

/* The rest data of the clusters, in /checkpoint/rest order, as byte ranges. */
typedef struct rest_segment {
    int field;
    const void *data;
    size_t bytes;
    hsize_t rows;
} rest_segment;

static int rest_segments(const csm_log *log, const csm_clusters *C, rest_segment *s)
{
    hsize_t k = (hsize_t)C->k, m = (hsize_t)C->m;
    int n = 0;
    s[n++] = (rest_segment){F_RV_WBASE, C->wbase, sizeof(double) * m, m};
    s[n++] = (rest_segment){F_RV_WMASS, C->wmass, sizeof(double) * m, m};
    s[n++] = (rest_segment){F_RV_P, C->p, sizeof(double) * 3 * m, m};
    s[n++] = (rest_segment){F_RV_MASS, C->mass, sizeof(double) * k, k};
    s[n++] = (rest_segment){F_RV_ARR, C->A_rr_inv, sizeof(double) * 9 * k, k};
    s[n++] = (rest_segment){F_RV_RANK, C->rank, sizeof(int32_t) * k, k};
    if (log->quadratic) {
        s[n++] = (rest_segment){F_RV_QMEAN, C->qmean, sizeof(double) * 6 * k, k};
        s[n++] = (rest_segment){F_RV_AQQ, C->Aqq_inv, sizeof(double) * 81 * k, k};
    }
    return n;
}

/* Keep a copy of the rest data last written, so that a version is written only on change. */
static int keep_rest_copy(csm_log *log, const rest_segment *seg, int ns)
{
    size_t total = 0;
    for (int i = 0; i < ns; i++) total += seg[i].bytes;
    if (total > log->rest_cap) {
        unsigned char *grown = realloc(log->rest_copy, total);
        if (!grown) return -1;
        log->rest_copy = grown;
        log->rest_cap = total;
    }
    size_t off = 0;
    for (int i = 0; i < ns; off += seg[i].bytes, i++) memcpy(log->rest_copy + off, seg[i].data, seg[i].bytes);
    log->rest_bytes = total;
    return 0;
}

static int write_rest_version(csm_log *log, const csm_clusters *C)
{
    rest_segment seg[8];
    int ns = rest_segments(log, C, seg);
    size_t total = 0;
    for (int i = 0; i < ns; i++) total += seg[i].bytes;
    int same = log->versions > 0 && total == log->rest_bytes && seg[0].rows == (hsize_t)C->m;
    size_t off = 0;
    for (int i = 0; same && i < ns; off += seg[i].bytes, i++)
        same = !memcmp(log->rest_copy + off, seg[i].data, seg[i].bytes);
    if (same) return 0;
    int rc = 0;
    for (int i = 0; i < ns; i++) rc |= append_rows(log->ds[seg[i].field], fields[seg[i].field].type, seg[i].rows, seg[i].data);
    log->rest_cluster_rows += C->k;
    log->rest_member_rows += C->m;
    rc |= append_rows(log->ds[F_RV_CLUSTER_START], T_I64, 1, &log->rest_cluster_rows);
    rc |= append_rows(log->ds[F_RV_MEMBER_START], T_I64, 1, &log->rest_member_rows);
    log->versions++;
    return rc | keep_rest_copy(log, seg, ns);
}

int csm_log_frame(csm_log *log, csm_sim *sim, const csm_diag *d, csm_error *err)
{
    errno = 0;
    csm_world *w = &sim->w;
    const csm_clusters *C = &w->C;
    const csm_timings *t = &sim->last;
    int rc = 0;
    double scalar;
#define APPEND1(field, value) (scalar = (value), append_rows(log->ds[field], T_F64, 1, &scalar))
    rc |= append_rows(log->ds[F_POSITIONS], T_F64, 1, w->P.x);
    rc |= append_rows(log->ds[F_VELOCITIES], T_F64, 1, w->P.v);
    if (log->goals) {
        csm_goals_all(w, w->P.x, 0.0, log->goal);
        rc |= append_rows(log->ds[F_GOALS], T_F64, 1, log->goal);
    }
    int32_t k = C->k;
    rc |= append_rows(log->ds[F_COUNT], T_I32, 1, &k);
    rc |= append_rows(log->ds[F_OFFSETS], T_I32, (hsize_t)k + 1, C->offset);
    rc |= append_rows(log->ds[F_MEMBERS], T_I32, (hsize_t)C->m, C->member);
    rc |= append_rows(log->ds[F_WEIGHTS], T_F64, (hsize_t)C->m, C->weight);
    rc |= append_rows(log->ds[F_COM], T_F64, (hsize_t)k, C->com);
    rc |= append_rows(log->ds[F_R], T_F64, (hsize_t)k, C->R);
    rc |= append_rows(log->ds[F_FP], T_F64, (hsize_t)k, C->Fp);
    rc |= append_rows(log->ds[F_ALPHA], T_F64, (hsize_t)k, C->stress_alpha);
    rc |= append_rows(log->ds[F_WIDTH], T_F64, (hsize_t)k, C->width);
    rc |= append_rows(log->ds[F_ID], T_I32, (hsize_t)k, C->id);
    rc |= append_rows(log->ds[F_STATE], T_I32, (hsize_t)k, C->state);
    rc |= write_events(log, &sim->report);
    log->memberships_out += C->m;
    log->clusters_out += k;
    rc |= append_rows(log->ds[F_FRAME_OFFSET], T_I64, 1, &log->memberships_out);
    rc |= append_rows(log->ds[F_FRAME_CLUSTER], T_I64, 1, &log->clusters_out);
    rc |= APPEND1(F_KINETIC, d->kinetic);
    rc |= APPEND1(F_POTENTIAL, d->potential);
    rc |= APPEND1(F_ELASTIC, d->elastic);
    rc |= append_rows(log->ds[F_MOMENTUM], T_F64, 1, d->momentum);
    rc |= append_rows(log->ds[F_ANGULAR], T_F64, 1, d->angular_momentum);
    rc |= append_rows(log->ds[F_COM_ALL], T_F64, 1, d->center_of_mass);
    rc |= APPEND1(F_MAX_STRAIN, d->max_strain);
    rc |= APPEND1(F_VOLUME, d->volume_ratio);
    rc |= APPEND1(F_MAX_COND_FP, d->max_cond_Fp);
    const csm_report *r = &sim->report;
    rc |= append_rows(log->ds[F_YIELDED], T_I32, 1, &r->yielded);
    rc |= append_rows(log->ds[F_PLASTIC_SKIPPED], T_I32, 1, &r->plastic_skipped);
    double gain[3] = {r->gains.min, r->gains.mean, r->gains.max};
    rc |= append_rows(log->ds[F_GAIN], T_F64, 1, gain);
    rc |= append_rows(log->ds[F_GAIN_CLAMPED], T_I32, 1, &r->gains.clamped);
    rc |= APPEND1(F_T_DYNAMICS, t->seconds[CSM_TIMING_DYNAMICS]);
    rc |= APPEND1(F_T_PLASTICITY, t->seconds[CSM_TIMING_PLASTICITY]);
    rc |= APPEND1(F_T_RECLUSTERING, t->seconds[CSM_TIMING_RECLUSTERING]);
    rc |= APPEND1(F_T_EMBEDDING, t->seconds[CSM_TIMING_EMBEDDING]);
    rc |= APPEND1(F_T_TOTAL, t->seconds[CSM_TIMING_TOTAL]);
    /* the state a resumed run continues from */
    rc |= write_rest_version(log, C);
    int32_t version = (int32_t)log->versions - 1, frame = sim->frame;
    int64_t step = w->step;
    rc |= append_rows(log->ds[F_CK_FRAME], T_I32, 1, &frame);
    rc |= append_rows(log->ds[F_CK_STEP], T_I64, 1, &step);
    rc |= append_rows(log->ds[F_CK_NEXT_ID], T_I32, 1, &C->next_id);
    rc |= append_rows(log->ds[F_CK_VERSION], T_I32, 1, &version);
    rc |= append_rows(log->ds[F_CK_Q], T_F64, (hsize_t)k, C->q);
    rc |= append_rows(log->ds[F_CK_FADE], T_I32, (hsize_t)k, C->fade);
    rc |= append_rows(log->ds[F_CK_F], T_F64, (hsize_t)k, C->F);
    rc |= append_rows(log->ds[F_CK_T], T_F64, (hsize_t)k, C->T);
    if (log->quadratic) rc |= append_rows(log->ds[F_CK_QUAD], T_F64, (hsize_t)k, C->Q);
    /* Flushed every frame, /frames/time last and on its own: a killed run keeps every frame
       whose time was written, and the other datasets hold at least those frames. */
    if (!rc && H5Fflush(log->file, H5F_SCOPE_GLOBAL) >= 0) rc |= APPEND1(F_TIME, w->time);
#undef APPEND1
    if (rc || H5Fflush(log->file, H5F_SCOPE_GLOBAL) < 0) {
        log->broken = 1;
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: write error at frame %d%s; the log keeps the %lld frames before it",
                        log->path, sim->frame, errno == EFBIG ? " (file size limit)" : errno == ENOSPC ? " (disk full)" : "",
                        (long long)log->frames);
    }
    log->frames++;
    return 0;
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
    for (int k = 0; k < F_NFIELDS && !log->broken; k++)
        if (log->ds[k] > 0) H5Dclose(log->ds[k]);
    if (log->events > 0 && !log->broken) H5Dclose(log->events);
    if (log->event_type > 0) H5Tclose(log->event_type);
    if (log->file >= 0 && !log->broken && H5Fclose(log->file) < 0) rc = -1;
    if (log->broken) {
        rc = -1;
    } else if (status) {
        /* a file in SWMR mode takes no new attribute values: the status goes in once it is closed */
        hid_t f = open_clearing(log->path);
        if (f < 0) rc = -1;
        else {
            rc |= attr_string(f, "status", status);
            rc |= attr_int64(f, "frames", log->frames);
            if (H5Fclose(f) < 0) rc = -1;
        }
        char xmf[4096];
        if (!rc) rc = csm_log_write_xdmf(log->path, xmf, sizeof xmf, err);
        else csm_fail(err, CSM_EXIT_FAILURE, "%s: could not close the log cleanly", log->path);
    } /* else given up while opening: the file keeps what it had */
    drop_log_lock(log);
    free(log->path);
    free(log->goal);
    free(log->rest_copy);
    free(log);
    return rc ? -1 : 0;
}

/* ParaView 5.11's Xdmf3 reader (the one picked for .xmf) reads slices of the (T, n, 3)
   datasets through HDF5 hyperslab paths "file.h5:/path|start:stride:count:dims"; each time
   step is one Polyvertex grid with an explicit connectivity item. */
int csm_log_write_xdmf(const char *h5path, char *buf, int size, csm_error *err)
{
    csm_log_xdmf_path(h5path, buf, size);
    char note[512];
    hid_t file = csm_log_open_read(h5path, 0, NULL, note, sizeof note);
    if (file < 0) return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot open the log", h5path);
    hid_t pos = H5Dopen2(file, "/frames/positions", H5P_DEFAULT);
    hid_t tds = H5Dopen2(file, "/frames/time", H5P_DEFAULT);
    if (pos < 0 || tds < 0) {
        if (pos >= 0) H5Dclose(pos);
        if (tds >= 0) H5Dclose(tds);
        H5Fclose(file);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: not a csm log (no /frames/positions)", h5path);
    }
    hsize_t dims[3];
    hid_t space = H5Dget_space(pos);
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    hsize_t T = dims[0], n = dims[1];
    double *times = malloc(sizeof(double) * (T > 0 ? T : 1));
    if (!times) abort();
    if (T > 0) H5Dread(tds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, times);
    int has_goals = H5Lexists(file, "/frames/goals", H5P_DEFAULT) > 0;
    H5Dclose(pos);
    H5Dclose(tds);
    H5Fclose(file);

    /* The sidecar refers to the log by its file name: both sit in one folder. The name goes into
       element text, so &, < and > are escaped (quotes too, for good measure). */
    const char *name = strrchr(h5path, '/');
    name = name ? name + 1 : h5path;
    char base[6 * 1024];
    size_t nb = 0;
    for (const char *ch = name; *ch && nb + 7 < sizeof base; ch++) {
        const char *esc = *ch == '&' ? "&amp;" : *ch == '<' ? "&lt;" : *ch == '>' ? "&gt;" : *ch == '"' ? "&quot;"
                        : *ch == '\'' ? "&apos;" : NULL;
        if (esc) {
            memcpy(base + nb, esc, strlen(esc));
            nb += strlen(esc);
        } else {
            base[nb++] = *ch;
        }
    }
    base[nb] = '\0';
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", buf);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(times);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the sidecar: %s", tmp, strerror(errno));
    }
    fprintf(f, "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n");
    fprintf(f, "  <Grid Name=\"particles\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
    for (hsize_t t = 0; t < T; t++) {
        fprintf(f, "   <Grid Name=\"frame%llu\" GridType=\"Uniform\">\n", (unsigned long long)t);
        fprintf(f, "    <Time Value=\"%.17g\"/>\n", times[t]);
        fprintf(f, "    <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%llu\" NodesPerElement=\"1\">\n",
                (unsigned long long)n);
        fprintf(f, "     <DataItem Dimensions=\"%llu\" NumberType=\"Int\" Format=\"HDF\">%s:/rest/id|0:1:%llu:%llu</DataItem>\n",
                (unsigned long long)n, base, (unsigned long long)n, (unsigned long long)n);
        fprintf(f, "    </Topology>\n");
        fprintf(f, "    <Geometry GeometryType=\"XYZ\">\n");
        fprintf(f, "     <DataItem Dimensions=\"%llu 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
                   "%s:/frames/positions|%llu 0 0:1 1 1:1 %llu 3:%llu %llu 3</DataItem>\n",
                (unsigned long long)n, base, (unsigned long long)t, (unsigned long long)n,
                (unsigned long long)T, (unsigned long long)n);
        fprintf(f, "    </Geometry>\n");
        const char *attrs[2] = {"velocities", "goals"};
        for (int a = 0; a < 1 + has_goals; a++) {
            fprintf(f, "    <Attribute Name=\"%s\" AttributeType=\"Vector\" Center=\"Node\">\n", attrs[a]);
            fprintf(f, "     <DataItem Dimensions=\"%llu 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
                       "%s:/frames/%s|%llu 0 0:1 1 1:1 %llu 3:%llu %llu 3</DataItem>\n",
                    (unsigned long long)n, base, attrs[a], (unsigned long long)t, (unsigned long long)n,
                    (unsigned long long)T, (unsigned long long)n);
            fprintf(f, "    </Attribute>\n");
        }
        fprintf(f, "   </Grid>\n");
    }
    fprintf(f, "  </Grid>\n </Domain>\n</Xdmf>\n");
    free(times);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, buf) != 0) {
        remove(tmp);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the sidecar", buf);
    }
    return 0;
}

/* ---- Resume: the state of the last complete frame back into a simulation ---- */

/* Rows each dataset holds once the log has T frames, with the offsets of frame T. */
typedef struct log_extent {
    hsize_t T, clusters, memberships, versions, rest_clusters, rest_members;
} log_extent;

/* The extent of a log's complete frames and the offsets of the last. */
typedef struct log_frames {
    log_extent e;
    int64_t fo[2], fc[2], ms[2], cs[2]; /* frame_offset, frame_cluster, member_start, cluster_start of the last */
} log_frames;

static hsize_t field_rows(int k, const log_extent *e)
{
    if (k == F_FRAME_OFFSET || k == F_FRAME_CLUSTER) return e->T + 1;
    switch (fields[k].rows) {
    case ROWS_CLUSTERS: return e->clusters;
    case ROWS_CLUSTERS_PLUS_ONE: return e->clusters + e->T;
    case ROWS_MEMBERSHIPS: return e->memberships;
    case ROWS_VERSIONS_PLUS_ONE: return e->versions + 1;
    case ROWS_REST_CLUSTERS: return e->rest_clusters;
    case ROWS_REST_MEMBERS: return e->rest_members;
    default: return e->T;
    }
}

static hsize_t dataset_rows(hid_t ds)
{
    hid_t space = H5Dget_space(ds);
    hsize_t dims[4] = {0, 0, 0, 0};
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    return dims[0];
}

/* Rows [start, start + count) of an extendible dataset. */
static int read_rows(hid_t ds, hid_t type, hsize_t start, hsize_t count, void *buf)
{
    if (count == 0) return 0;
    hid_t space = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[4], offset[4] = {start, 0, 0, 0};
    H5Sget_simple_extent_dims(space, dims, NULL);
    herr_t rc = -1;
    if (start + count <= dims[0]) {
        dims[0] = count;
        H5Sselect_hyperslab(space, H5S_SELECT_SET, offset, NULL, dims, NULL);
        hid_t mem = H5Screate_simple(rank, dims, NULL);
        rc = H5Dread(ds, type, mem, space, H5P_DEFAULT, buf);
        H5Sclose(mem);
    }
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

static int set_rows(hid_t ds, hsize_t rows)
{
    hid_t space = H5Dget_space(ds);
    hsize_t dims[4];
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    dims[0] = rows;
    return H5Dset_extent(ds, dims) < 0 ? -1 : 0;
}

/* A whole fixed dataset equals `data` byte for byte. */
static int same_fixed(hid_t file, const char *path, hid_t type, const void *data, size_t bytes)
{
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return 0;
    hid_t space = H5Dget_space(ds);
    hssize_t count = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    void *buf = malloc(bytes ? bytes : 1);
    int same = buf && (size_t)count * H5Tget_size(type) == bytes &&
               H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0 && !memcmp(buf, data, bytes);
    free(buf);
    H5Dclose(ds);
    return same;
}

/* Events written up to and including frame `frame`. */
static hsize_t events_up_to(hid_t events, int32_t frame)
{
    hsize_t rows = dataset_rows(events);
    if (rows == 0) return 0;
    int32_t *f = malloc(sizeof *f * rows);
    if (!f) return rows;
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(int32_t));
    H5Tinsert(t, "frame", 0, H5T_NATIVE_INT32);
    hsize_t keep = 0;
    if (H5Dread(events, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, f) >= 0)
        while (keep < rows && f[keep] <= frame) keep++;
    H5Tclose(t);
    free(f);
    return keep;
}

/* Read the last complete frame of the log into the world. */
static int restore_frame(csm_log *log, csm_sim *sim, const log_frames *lf, csm_error *err)
{
    hsize_t t = lf->e.T - 1;
    const int64_t *fo = lf->fo, *fc = lf->fc, *ms = lf->ms, *cs = lf->cs;
    csm_world *w = &sim->w;
    csm_particles *P = &w->P;
    csm_clusters *C = &w->C;
    int32_t k = 0;
    hsize_t c0 = (hsize_t)fc[0], m0 = (hsize_t)fo[0];
    int64_t m = fo[1] - fo[0];
    read_rows(log->ds[F_COUNT], H5T_NATIVE_INT32, t, 1, &k);
    if (k < 0 || m < 0 || m > INT32_MAX || fc[1] - fc[0] != k || cs[1] - cs[0] != k || ms[1] - ms[0] != m)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: frame %llu's cluster rows do not agree with each other",
                        log->path, (unsigned long long)t);
    if (csm_clusters_reserve(C, k, (int32_t)m, P->n)) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    C->k = k;
    C->m = (int32_t)m;
    hsize_t hk = (hsize_t)k, hm = (hsize_t)m, rc0 = (hsize_t)cs[0], rm0 = (hsize_t)ms[0];
    int32_t frame = 0, version = 0;
    int rc = 0;
    rc |= read_rows(log->ds[F_POSITIONS], H5T_NATIVE_DOUBLE, t, 1, P->x);
    rc |= read_rows(log->ds[F_VELOCITIES], H5T_NATIVE_DOUBLE, t, 1, P->v);
    rc |= read_rows(log->ds[F_TIME], H5T_NATIVE_DOUBLE, t, 1, &w->time);
    rc |= read_rows(log->ds[F_CK_FRAME], H5T_NATIVE_INT32, t, 1, &frame);
    rc |= read_rows(log->ds[F_CK_STEP], H5T_NATIVE_INT64, t, 1, &w->step);
    rc |= read_rows(log->ds[F_CK_NEXT_ID], H5T_NATIVE_INT32, t, 1, &C->next_id);
    rc |= read_rows(log->ds[F_CK_VERSION], H5T_NATIVE_INT32, t, 1, &version);
    rc |= read_rows(log->ds[F_OFFSETS], H5T_NATIVE_INT32, c0 + t, hk + 1, C->offset);
    rc |= read_rows(log->ds[F_MEMBERS], H5T_NATIVE_INT32, m0, hm, C->member);
    rc |= read_rows(log->ds[F_WEIGHTS], H5T_NATIVE_DOUBLE, m0, hm, C->weight);
    struct {
        int field;
        void *to;
        hsize_t start, rows;
    } parts[] = {
        {F_COM, C->com, c0, hk}, {F_R, C->R, c0, hk}, {F_FP, C->Fp, c0, hk}, {F_ALPHA, C->stress_alpha, c0, hk},
        {F_WIDTH, C->width, c0, hk}, {F_ID, C->id, c0, hk}, {F_STATE, C->state, c0, hk}, {F_CK_Q, C->q, c0, hk},
        {F_CK_FADE, C->fade, c0, hk}, {F_CK_F, C->F, c0, hk}, {F_CK_T, C->T, c0, hk}, {F_CK_QUAD, C->Q, c0, hk},
        {F_RV_WBASE, C->wbase, rm0, hm}, {F_RV_WMASS, C->wmass, rm0, hm}, {F_RV_P, C->p, rm0, hm},
        {F_RV_MASS, C->mass, rc0, hk}, {F_RV_ARR, C->A_rr_inv, rc0, hk}, {F_RV_RANK, C->rank, rc0, hk},
        {F_RV_QMEAN, C->qmean, rc0, hk}, {F_RV_AQQ, C->Aqq_inv, rc0, hk},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (log->ds[parts[i].field] >= 0)
            rc |= read_rows(log->ds[parts[i].field], h5type(fields[parts[i].field].type), parts[i].start, parts[i].rows,
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
    for (int k = 0; k < F_NFIELDS; k++) {
        if (!field_used(log, k) && !(all && H5Lexists(log->file, fields[k].path, H5P_DEFAULT) > 0)) continue;
        log->ds[k] = H5Dopen2(log->file, fields[k].path, H5P_DEFAULT);
        if (log->ds[k] < 0)
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: has no %s: written by an older csm, without checkpoints, or "
                            "with other output settings", path, fields[k].path);
    }
    log->event_type = make_event_type();
    log->events = H5Dopen2(log->file, "/recluster/events", H5P_DEFAULT);
    if (log->events < 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: has no /recluster/events", path);
    log_extent *e = &lf->e;
    e->T = dataset_rows(log->ds[F_TIME]);
    if (e->T == 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: holds no complete frame", path);
    hsize_t t = e->T - 1;
    int32_t version = -1;
    if (read_rows(log->ds[F_FRAME_OFFSET], H5T_NATIVE_INT64, t, 2, lf->fo) ||
        read_rows(log->ds[F_FRAME_CLUSTER], H5T_NATIVE_INT64, t, 2, lf->fc) ||
        read_rows(log->ds[F_CK_VERSION], H5T_NATIVE_INT32, t, 1, &version) || version < 0 ||
        read_rows(log->ds[F_RV_MEMBER_START], H5T_NATIVE_INT64, (hsize_t)version, 2, lf->ms) ||
        read_rows(log->ds[F_RV_CLUSTER_START], H5T_NATIVE_INT64, (hsize_t)version, 2, lf->cs))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: the offsets of frame %llu are missing", path, (unsigned long long)t);
    e->clusters = (hsize_t)lf->fc[1];
    e->memberships = (hsize_t)lf->fo[1];
    e->versions = (hsize_t)version + 1;
    e->rest_clusters = (hsize_t)lf->cs[1];
    e->rest_members = (hsize_t)lf->ms[1];
    for (int k = 0; k < F_NFIELDS; k++)
        if (log->ds[k] >= 0 && dataset_rows(log->ds[k]) < field_rows(k, e))
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s holds %llu rows, %llu are needed", path, fields[k].path,
                            (unsigned long long)dataset_rows(log->ds[k]), (unsigned long long)field_rows(k, e));
    return 0;
}

/* Drop whatever was written after the last complete frame. */
static int trim_log(csm_log *log, const log_frames *lf)
{
    int rc = 0;
    for (int k = 0; k < F_NFIELDS; k++)
        if (log->ds[k] >= 0 && dataset_rows(log->ds[k]) != field_rows(k, &lf->e) && set_rows(log->ds[k], field_rows(k, &lf->e)))
            rc = -1;
    int32_t frame = 0;
    rc |= read_rows(log->ds[F_CK_FRAME], H5T_NATIVE_INT32, lf->e.T - 1, 1, &frame);
    hsize_t events = events_up_to(log->events, frame);
    if (events != dataset_rows(log->events) && set_rows(log->events, events)) rc = -1;
    return rc;
}

static csm_log *log_handle(const char *path, hid_t file)
{
    csm_log *log = calloc(1, sizeof *log);
    if (!log) return NULL;
    for (int k = 0; k < F_NFIELDS; k++) log->ds[k] = -1;
    log->events = log->event_type = -1;
    log->file = file;
    log->path = strdup(path);
    if (!log->path) {
        free(log);
        return NULL;
    }
    return log;
}

static void trim_after_crash(const char *path, hid_t file)
{
    csm_log *log = log_handle(path, -1);
    if (!log) return;
    log->file = file;
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
    hid_t probe = csm_log_open_read(path, 1, &live, note, sizeof note);
    if (probe < 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: not a readable log", path);
    H5Fclose(probe);
    if (live) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s; it cannot be resumed while it runs", path, note);
    csm_log lock = {0};
    if (take_log_lock(&lock, path, err)) { /* a resume or a --force run of this log elsewhere */
        drop_log_lock(&lock);
        return -1;
    }
    hid_t file = open_clearing(path);
    if (file < 0) {
        drop_log_lock(&lock);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot open the log for writing", path);
    }
    csm_log *log = log_handle(path, file);
    if (!log) {
        H5Fclose(file);
        drop_log_lock(&lock);
        return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    }
    log->lock_fd = lock.lock_fd;
    log->lock_path = lock.lock_path;
    log->n = w->P.n;
    log->goals = sim->cfg->output_goals;
    log->quadratic = w->C.Q != NULL;
    log_frames lf;
    int rc = measure_log(log, 0, &lf, err);
    /* the same set-up: the config in the log must build the same particles */
    if (!rc && (!same_fixed(log->file, "/rest/positions", H5T_NATIVE_DOUBLE, w->P.rest, sizeof(double) * 3 * (size_t)w->P.n) ||
                !same_fixed(log->file, "/rest/mass", H5T_NATIVE_DOUBLE, w->P.mass, sizeof(double) * (size_t)w->P.n)))
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
        log->versions = (int64_t)lf.e.versions;
        log->rest_cluster_rows = lf.cs[1];
        log->rest_member_rows = lf.ms[1];
        rest_segment seg[8];
        rc |= keep_rest_copy(log, seg, rest_segments(log, &w->C, seg));
        int64_t resumes = 0;
        hid_t a = H5Aexists(log->file, "resumes") > 0 ? H5Aopen(log->file, "resumes", H5P_DEFAULT) : -1;
        if (a >= 0) {
            H5Aread(a, H5T_NATIVE_INT64, &resumes);
            H5Aclose(a);
        }
        rc |= attr_string(log->file, "status", "running");
        rc |= attr_int64(log->file, "resumes", resumes + 1);
        rc |= attr_int64(log->file, "resumed_from_frame", (int64_t)lf.e.T - 1);
        rc |= attr_int64(log->file, "threads", csm_get_threads());
        rc |= writer_attrs(log->file);
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

int csm_log_read_config(const char *path, char **config, char **name, csm_error *err)
{
    char note[512];
    *config = *name = NULL;
    hid_t f = csm_log_open_read(path, 0, NULL, note, sizeof note);
    if (f < 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: not an HDF5 file (or unreadable)", path);
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
