#include "log.h"

#include "clustering.h"
#include "csm_version.h"
#include "kernel.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The per-frame datasets, declared as a table (name, type, shape, units, description); one
   generic writer walks it. `rows` says how many rows one frame appends. */
enum { T_F64, T_I32, T_I64 };
enum { SHAPE_SCALAR, SHAPE_VEC3, SHAPE_MAT3, SHAPE_PARTICLES3 };
enum { ROWS_ONE, ROWS_CLUSTERS, ROWS_CLUSTERS_PLUS_ONE, ROWS_MEMBERSHIPS };

typedef struct field_spec {
    const char *path;
    int type, shape, rows;
    const char *units, *description;
} field_spec;

enum {
    F_TIME, F_POSITIONS, F_VELOCITIES, F_GOALS,
    F_COUNT, F_FRAME_OFFSET, F_FRAME_CLUSTER, F_OFFSETS, F_MEMBERS, F_WEIGHTS, F_COM, F_R, F_FP, F_ALPHA, F_WIDTH, F_ID, F_STATE,
    F_KINETIC, F_POTENTIAL, F_ELASTIC, F_MOMENTUM, F_ANGULAR, F_COM_ALL, F_MAX_STRAIN, F_VOLUME,
    F_MAX_COND_FP, F_YIELDED, F_PLASTIC_SKIPPED,
    F_T_DYNAMICS, F_T_PLASTICITY, F_T_RECLUSTERING, F_T_EMBEDDING, F_T_TOTAL,
    F_NFIELDS
};

static const field_spec fields[F_NFIELDS] = {
    [F_TIME] = {"/frames/time", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "simulated time of each logged frame"},
    [F_POSITIONS] = {"/frames/positions", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "particle positions x_i"},
    [F_VELOCITIES] = {"/frames/velocities", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m/s", "particle velocities v_i"},
    [F_GOALS] = {"/frames/goals", T_F64, SHAPE_PARTICLES3, ROWS_ONE, "m", "goal positions g_i = sum_c w_ic g_ic"},
    [F_COUNT] = {"/clusters/count", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                "clusters per frame, those fading in or out included (/clusters/state)"},
    [F_FRAME_OFFSET] = {"/clusters/frame_offset", T_I64, SHAPE_SCALAR, ROWS_ONE, "1",
                        "(T+1,): frame t's memberships are members/weights[frame_offset[t]:frame_offset[t+1]]"},
    [F_FRAME_CLUSTER] = {"/clusters/frame_cluster", T_I64, SHAPE_SCALAR, ROWS_ONE, "1",
                         "(T+1,): frame t's clusters are com/R/Fp rows [frame_cluster[t]:frame_cluster[t+1]]; "
                         "its offsets are offsets[frame_cluster[t] + t : frame_cluster[t+1] + t + 1]"},
    [F_OFFSETS] = {"/clusters/offsets", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS_PLUS_ONE, "1",
                   "per frame, k+1 CSR offsets (from 0) of each cluster's members"},
    [F_MEMBERS] = {"/clusters/members", T_I32, SHAPE_SCALAR, ROWS_MEMBERSHIPS, "1", "per frame, member particle of each membership"},
    [F_WEIGHTS] = {"/clusters/weights", T_F64, SHAPE_SCALAR, ROWS_MEMBERSHIPS, "1", "per frame, w_ic of each membership"},
    [F_COM] = {"/clusters/com", T_F64, SHAPE_VEC3, ROWS_CLUSTERS, "m", "per frame, cluster centre of mass x-bar_c"},
    [F_R] = {"/clusters/R", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, cluster rotation R_c"},
    [F_FP] = {"/clusters/Fp", T_F64, SHAPE_MAT3, ROWS_CLUSTERS, "1", "per frame, plastic deformation F^p_c"},
    [F_ALPHA] = {"/clusters/stress_alpha", T_F64, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                 "per frame, cumulative plastic stress alpha_c (Falkenstein Eq 14)"},
    [F_WIDTH] = {"/clusters/width", T_F64, SHAPE_SCALAR, ROWS_CLUSTERS, "m",
                 "per frame, cluster width w_c = max_i |p_ic| (Bargteil-Jones Eq 5)"},
    [F_ID] = {"/clusters/id", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
              "per frame, stable cluster id (the initial clusters are 0..k-1; added clusters count on)"},
    [F_STATE] = {"/clusters/state", T_I32, SHAPE_SCALAR, ROWS_CLUSTERS, "1",
                 "per frame, 0 active, 1 fading out (marked for removal), 2 fading in (added)"},
    [F_KINETIC] = {"/diagnostics/kinetic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "sum 1/2 m |v|^2"},
    [F_POTENTIAL] = {"/diagnostics/potential_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "J", "gravitational potential energy -sum m g.x"},
    [F_ELASTIC] = {"/diagnostics/elastic_energy", T_F64, SHAPE_SCALAR, ROWS_ONE, "kg m^2",
                   "shape-matching energy sum_c sum_i w_ic m_i |x_i - g_ic|^2"},
    [F_MOMENTUM] = {"/diagnostics/linear_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m/s", "sum m v"},
    [F_ANGULAR] = {"/diagnostics/angular_momentum", T_F64, SHAPE_VEC3, ROWS_ONE, "kg m^2/s", "sum m x cross v about the world origin"},
    [F_COM_ALL] = {"/diagnostics/center_of_mass", T_F64, SHAPE_VEC3, ROWS_ONE, "m", "centre of mass of all particles"},
    [F_MAX_STRAIN] = {"/diagnostics/max_strain", T_F64, SHAPE_SCALAR, ROWS_ONE, "1",
                      "max over memberships of beta = |x_i - g_ic| / width_c (Bargteil-Jones Eq 4)"},
    [F_VOLUME] = {"/diagnostics/volume_ratio", T_F64, SHAPE_SCALAR, ROWS_ONE, "1", "mean det F^p over clusters"},
    [F_MAX_COND_FP] = {"/diagnostics/max_cond_Fp", T_F64, SHAPE_SCALAR, ROWS_ONE, "1",
                       "largest condition number sigma_max / sigma_min of F^p over clusters"},
    [F_YIELDED] = {"/diagnostics/yielded", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                   "clusters whose F^p flowed since the previous logged frame (Falkenstein Eq 11-12)"},
    [F_PLASTIC_SKIPPED] = {"/diagnostics/plastic_skipped", T_I32, SHAPE_SCALAR, ROWS_ONE, "1",
                           "plastic updates skipped since the previous logged frame on a collapsed or inverted F^e (cluster-steps)"},
    [F_T_DYNAMICS] = {"/timings/dynamics", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "forces, integrator and colliders per frame"},
    [F_T_PLASTICITY] = {"/timings/plasticity", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "plasticity per frame"},
    [F_T_RECLUSTERING] = {"/timings/reclustering", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "reclustering per frame (embedding included)"},
    [F_T_EMBEDDING] = {"/timings/embedding", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "embedding optimisation per frame"},
    [F_T_TOTAL] = {"/timings/total", T_F64, SHAPE_SCALAR, ROWS_ONE, "s", "whole frame: every stage and the diagnostics"},
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
    int goals;
    char *path;
    double *scratch;        /* [9 max(n, k, m)] */
    int32_t *iscratch;      /* [max(k + 1, m)] */
};

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
    }
    if (f->shape != SHAPE_PARTICLES3) chunk[0] = f->rows == ROWS_ONE ? 256 : 4096;
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
        case CSM_REAL:
        case CSM_INT:
        case CSM_BOOL: attr_double(file, name, &v->num, 1); break;
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

int csm_log_string_attr(hid_t obj, const char *name, char *buf, size_t size)
{
    buf[0] = '\0';
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    int rc = -1;
    if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t)) {
        char *value = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5T_CSET_UTF8);
        if (H5Aread(a, mt, &value) >= 0 && value) {
            snprintf(buf, size, "%s", value);
            H5free_memory(value);
            rc = 0;
        }
        H5Tclose(mt);
    } else if (H5Tget_class(t) == H5T_STRING) {
        size_t len = H5Tget_size(t);
        char *tmp = malloc(len + 1);
        if (tmp && H5Aread(a, t, tmp) >= 0) {
            tmp[len] = '\0';
            snprintf(buf, size, "%s", tmp);
            rc = 0;
        }
        free(tmp);
    }
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

int csm_log_status(const char *path, char *status, int size, int64_t *frames)
{
    status[0] = '\0';
    *frames = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (H5Fis_hdf5(path) <= 0) return -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
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

static int create_events(csm_log *log)
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
    log->event_type = t;
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
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
    return log->events < 0 ? -1 : 0;
}

static int write_events(csm_log *log, const csm_world *w)
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

int csm_log_open(const char *path, const csm_sim *sim, csm_log **out, csm_error *err)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported by us, in one line */
    const csm_world *w = &sim->w;
    const csm_config *cfg = sim->cfg;
    csm_log *log = calloc(1, sizeof *log);
    if (!log) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    log->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (log->file < 0) {
        free(log);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot create the log: %s", path,
                        errno ? strerror(errno) : "HDF5 error");
    }
    log->n = w->P.n;
    log->goals = cfg->output_goals;
    log->path = strdup(path);
    int32_t big = w->P.n > w->C.k + 1 ? w->P.n : w->C.k + 1;
    if (w->C.m > big) big = w->C.m;
    log->scratch = malloc(sizeof(double) * 9 * (size_t)big);
    log->iscratch = malloc(sizeof(int32_t) * ((size_t)big + 1));
    if (!log->path || !log->scratch || !log->iscratch) abort();

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
    rc |= attr_string(f, "config_file", cfg->file);
    rc |= attr_string(f, "name", cfg->name);
    rc |= attr_int64(f, "seed", (int64_t)cfg->seed);
    rc |= attr_string(f, "integrator", cfg->integrator.plugin->name);
    rc |= attr_string(f, "rotation", cfg->rotation.plugin->name);
    rc |= attr_string(f, "svd", cfg->svd == CSM_SVD_LAPACKE ? "lapacke" : "fast");
    static const char *const modes[] = {"rigid", "linear", "quadratic"};
    rc |= attr_string(f, "solver.mode", modes[cfg->mode]);
    rc |= attr_double(f, "solver.beta", &cfg->beta, 1);
    rc |= attr_string(f, "clustering", cfg->clustering.plugin->name);
    rc |= attr_string(f, "plasticity", cfg->plasticity.plugin->name);
    rc |= attr_string(f, "reclusterer", cfg->recluster.plugin->name);
    rc |= attr_string(f, "status", "running");
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
    for (int32_t i = 0; i < w->P.n; i++) log->iscratch[i] = i;
    rc |= write_fixed(f, "/rest/id", H5T_NATIVE_INT32, 1, d1, log->iscratch, "1",
                      "particle index 0..n-1 (the sidecar's Polyvertex connectivity)");
    for (int k = 0; k < F_NFIELDS; k++) {
        if (k == F_GOALS && !log->goals) {
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
    if (rc || H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) {
        csm_log_close(log, "failed: could not write the log header", NULL);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the log", path);
    }
    *out = log;
    return 0;
}

int csm_log_frame(csm_log *log, csm_sim *sim, const csm_diag *d, csm_error *err)
{
    csm_world *w = &sim->w;
    const csm_clusters *C = &w->C;
    const csm_timings *t = &sim->last;
    int rc = 0;
    double scalar;
#define APPEND1(field, value) (scalar = (value), append_rows(log->ds[field], T_F64, 1, &scalar))
    rc |= APPEND1(F_TIME, w->time);
    rc |= append_rows(log->ds[F_POSITIONS], T_F64, 1, w->P.x);
    rc |= append_rows(log->ds[F_VELOCITIES], T_F64, 1, w->P.v);
    if (log->goals) {
        csm_goals_all(w, w->P.x, 0.0, log->scratch);
        rc |= append_rows(log->ds[F_GOALS], T_F64, 1, log->scratch);
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
    rc |= write_events(log, w);
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
    rc |= append_rows(log->ds[F_YIELDED], T_I32, 1, &w->yielded);
    rc |= append_rows(log->ds[F_PLASTIC_SKIPPED], T_I32, 1, &w->plastic_skipped);
    rc |= APPEND1(F_T_DYNAMICS, t->dynamics);
    rc |= APPEND1(F_T_PLASTICITY, t->plasticity);
    rc |= APPEND1(F_T_RECLUSTERING, t->reclustering);
    rc |= APPEND1(F_T_EMBEDDING, t->embedding);
    rc |= APPEND1(F_T_TOTAL, t->total);
#undef APPEND1
    /* Flushed every frame: a killed run keeps every frame written. */
    if (rc || H5Fflush(log->file, H5F_SCOPE_GLOBAL) < 0)
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: write error at frame %d (disk full?)", log->path, sim->frame);
    log->frames++;
    return 0;
}

int csm_log_close(csm_log *log, const char *status, csm_error *err)
{
    if (!log) return 0;
    int rc = attr_string(log->file, "status", status);
    rc |= attr_int64(log->file, "frames", log->frames);
    for (int k = 0; k < F_NFIELDS; k++)
        if (log->ds[k] > 0) H5Dclose(log->ds[k]);
    if (log->events > 0) H5Dclose(log->events);
    if (log->event_type > 0) H5Tclose(log->event_type);
    if (H5Fclose(log->file) < 0) rc = -1;
    char xmf[4096];
    if (!rc) rc = csm_log_write_xdmf(log->path, xmf, sizeof xmf, err);
    else csm_fail(err, CSM_EXIT_FAILURE, "%s: could not close the log cleanly", log->path);
    free(log->path);
    free(log->scratch);
    free(log->iscratch);
    free(log);
    return rc ? -1 : 0;
}

/* ParaView 5.11's Xdmf3 reader (the one picked for .xmf) reads slices of the (T, n, 3)
   datasets through HDF5 hyperslab paths "file.h5:/path|start:stride:count:dims"; each time
   step is one Polyvertex grid with an explicit connectivity item. */
int csm_log_write_xdmf(const char *h5path, char *buf, int size, csm_error *err)
{
    csm_log_xdmf_path(h5path, buf, size);
    hid_t file = H5Fopen(h5path, H5F_ACC_RDONLY, H5P_DEFAULT);
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

    /* The sidecar refers to the log by its file name: both sit in one folder. */
    const char *base = strrchr(h5path, '/');
    base = base ? base + 1 : h5path;
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
