/* What the files of the log share (core/io/: log.c writes, log_fields.c declares the datasets,
   versions.c writes the versioned data, trim.c cuts a log back to its complete frames,
   checkpoint.c restores and resumes, recover.c opens what a killed run left, sidecar.c writes
   the XDMF file, h5.c wraps HDF5). Internal to core/io/. */
#ifndef CSM_IO_LOG_INTERNAL_H
#define CSM_IO_LOG_INTERNAL_H

#include "log.h"

#include <hdf5.h>
#include <stdint.h>


/* The per-frame datasets, declared as a table (name, type, shape, units, description, and an
   accessor for the frame's rows), in the manner of SWIFT's i/o properties: one generic writer
   walks it. `rows` says how many rows one frame appends. The built-in datasets are the rows of
   csm_log_fields; a log adds the timings plugins named and the fields plugins declare
   (csm_log_field) as rows of the same kind. The /checkpoint datasets
   hold the rest of the state a run continues from (csm_log_resume). Two kinds of data change far
   less often than every frame, so they are written as versions (version_stream), a new one only
   when a frame's bytes differ from the last, and each frame names the version it uses: the
   clusters' memberships (offsets, members, weights: they change when clusters are added or
   removed, and while they fade), their rest data (/checkpoint/rest: only when clusters are
   added or removed) and their slow state (F^p, stress_alpha, width, id, state: with plasticity,
   reclustering or fades; never in an elastic run). What the next step needs of each cluster's
   last fit (/checkpoint/q, fade, F, T, Q, F_lagged) changes every frame but is read only for the
   last complete one, so it is kept in two slots, not per frame (ROWS_SLOTS). */
enum { T_F64, T_I32, T_I64, T_F32 };
enum { SHAPE_SCALAR, SHAPE_VEC3, SHAPE_MAT3, SHAPE_PARTICLES3, SHAPE_COLS };
enum {
    ROWS_ONE, ROWS_CLUSTERS, ROWS_CLUSTERS_PLUS_ONE, ROWS_MEMBERSHIPS,
    ROWS_VERSIONS_PLUS_ONE, ROWS_REST_CLUSTERS, ROWS_REST_MEMBERS, /* per version of the rest data */
    ROWS_MVERSIONS_PLUS_ONE, ROWS_MV_OFFSETS, ROWS_MV_MEMBERS,       /* per version of the memberships */
    ROWS_CVERSIONS_PLUS_ONE, ROWS_CV_CLUSTERS,                       /* per version of the clusters' slow state */
    ROWS_SLOTS /* two slots of a row per cluster, interleaved: cluster c of logged frame t is row 2c + t % 2 */
}; /* the values are stored in a log's extra_datasets: append, never renumber */
enum { OPT_NONE, OPT_GOALS, OPT_QUADRATIC, OPT_LAGGED, OPT_CONTACT }; /* written only with output.goals, solver.mode quadratic,
                                                                      plasticity.update lagged, contact.method not none */

struct field_spec;
struct csm_log;

/* What an accessor reads a frame from. */
typedef struct frame_ctx {
    const csm_sim *sim;
    const csm_diag *d;
    const struct csm_log *log;
    int32_t version;  /* of /checkpoint/rest the frame's clusters use */
    int32_t mversion; /* of the memberships */
    int32_t cversion; /* of the clusters' slow state */
    void *scratch;   /* room for a plugin field's rows */
} frame_ctx;

typedef struct field_spec {
    const char *path;
    int type, shape, rows;
    const char *units, *description;
    int cols; /* SHAPE_COLS, SHAPE_PARTICLES3 (0: 3): values per row */
    int opt;  /* OPT_* */
    /* The frame's rows; NULL for a dataset written apart (/frames/time last, the versions). */
    const void *(*data)(const frame_ctx *c, const struct field_spec *f);
    int index;                   /* a timing's index in the report */
    const csm_log_field *plugin; /* a plugin's field, and the state its accessor reads */
    const void *state;
    int listed; /* not in every log: named in its extra_datasets (a plugin's fields, the colliders' poses),
                   its rows gathered in the frame's scratch */
} field_spec;

enum {
    F_TIME, F_POSITIONS, F_VELOCITIES, F_GOALS,
    F_COUNT, F_FRAME_MEMBERSHIP, F_FRAME_CLUSTER, F_MVERSION, F_MV_OFFSETS_START, F_MV_MEMBER_START, F_CVERSION, F_CV_START,
    F_OFFSETS, F_MEMBERS, F_WEIGHTS, F_COM, F_R, F_FP, F_ALPHA, F_WIDTH, F_ID, F_STATE,
    F_KINETIC, F_POTENTIAL, F_ELASTIC, F_GOAL_DISTANCE, F_WORK_EXTERNAL, F_MOMENTUM, F_ANGULAR, F_COM_ALL, F_MAX_STRAIN, F_VOLUME,
    F_MAX_COND_FP, F_INVERTED, F_YIELDED, F_PLASTIC_SKIPPED, F_GAIN, F_GAIN_CLAMPED, F_ITERATION_RESIDUAL, F_ENERGY_ERROR, F_ELASTIC_LAG, F_DISSIPATED_DAMPING,
    F_DISSIPATED_VISCOSITY, F_DISSIPATED_PLASTIC, F_DISSIPATED_CONTACT, F_DISSIPATED_NUMERICAL, F_RECLUSTER_ENERGY, F_CONTACT_PAIRS, F_CONTACT_DEPTH,
    F_CK_FRAME, F_CK_STEP, F_CK_NEXT_ID, F_CK_VERSION, F_CK_Q, F_CK_FADE, F_CK_F, F_CK_T, F_CK_QUAD, F_CK_F_LAGGED,
    F_RV_CLUSTER_START, F_RV_MEMBER_START, F_RV_WBASE, F_RV_WMASS, F_RV_P, F_RV_MASS, F_RV_ARR, F_RV_RANK,
    F_RV_QMEAN, F_RV_AQQ,
    F_NFIELDS
};

/* Data written as versions: a new version only when its bytes differ from the last one's. Each
   version has rows of two kinds (the rest data: per cluster and per membership; the memberships:
   k + 1 offsets and per membership), counted in two (V+1,) start datasets, or of one (the slow
   state: per cluster; start_field[1] is -1). */
typedef struct version_stream {
    int64_t count;          /* versions written */
    int64_t rows[2];        /* rows of each kind written */
    int start_field[2];     /* the (V+1,) datasets that count them */
    unsigned char *copy;    /* the last version's bytes, */
    size_t bytes, cap;
    size_t first;           /* those of its first segment */
    int kept;               /* and whether there is one */
} version_stream;

struct csm_log {
    hid_t file;
    field_spec *field;       /* csm_log_fields, then the log's own: plugins' timings and fields */
    int nfield;
    hid_t *ds;               /* [nfield], -1 for a field this log does not write */
    char **owned;            /* paths made for the log's own fields */
    int nowned;
    void *scratch;           /* a plugin field's rows */
    size_t scratch_bytes;
    int32_t n;
    int64_t frames;          /* logged frames */
    int64_t memberships_out; /* memberships of the frames written (/clusters/frame_membership) */
    int64_t clusters_out;    /* rows of /clusters/com written */
    hid_t events;            /* /recluster/events */
    hid_t event_type;        /* its compound row type */
    int goals, quadratic, lagged, contact;
    int compression; /* deflate level of the datasets it creates */
    char *path;
    double *goal;           /* [3n] gathered goals, with output.goals */
    version_stream rest;    /* /checkpoint/rest */
    version_stream members; /* /clusters/offsets, members, weights */
    version_stream state;   /* /clusters/Fp, stress_alpha, width, id, state */
    int broken; /* a write failed: the file is left as the last flush made it */
    int lock_fd;     /* csm_lock_take of lock_path, held while this process writes the log; -1 when not */
    char *lock_path; /* <log>.lock */
    int fd;          /* the log's file opened apart from HDF5, so that the status written at the end
                        reaches it even when it was moved while written; -1 when not */
    char *warning;   /* csm_log_set_warning's, written beside the status (NULL: none) */
};

/* ---- Resume: the state of the last complete frame back into a simulation ---- */

/* Rows each dataset holds once the log has T frames, with the offsets of frame T. */
typedef struct log_extent {
    hsize_t T, clusters, memberships, versions, rest_clusters, rest_members, mversions, mv_offsets, mv_members;
    hsize_t cversions, cv_clusters; /* the slow state's versions and rows */
    hsize_t slots;                  /* rows the last frame's slot needs: 2k */
} log_extent;

/* The extent of a log's complete frames and the offsets of the last. */
typedef struct log_frames {
    log_extent e;
    /* of the last: frame_membership, frame_cluster; the rest version's member_start, cluster_start;
       the membership version's version_offsets, version_members; the slow state version's
       version_clusters */
    int64_t fo[2], fc[2], ms[2], cs[2], mo[2], mm[2], cv[2];
} log_frames;

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
    int32_t embedding_capped;
} event_row;

/* A version's data as byte ranges, each appended to a dataset. */
typedef struct version_segment {
    int field;
    const void *data;
    size_t bytes;
    hsize_t rows;
} version_segment;

extern const field_spec csm_log_fields[F_NFIELDS];

/* h5.c */
hid_t csm_h5_type(int t);
int csm_h5_attr_string(hid_t obj, const char *name, const char *value);
int csm_h5_attr_double(hid_t obj, const char *name, const double *v, int count);
int csm_h5_attr_int64(hid_t obj, const char *name, int64_t v);
/* Link creation that makes intermediate groups. */
hid_t csm_h5_link_props(void);
/* A fixed-size dataset written at once (the /rest group). */
int csm_h5_write_fixed(hid_t file, const char *path, hid_t type, int rank, const hsize_t *dims, const void *data,
                       const char *units, const char *description);
/* Append `rows` rows to an extendible dataset. */
int csm_h5_append(hid_t ds, int type, hsize_t rows, const void *data);
hsize_t csm_h5_rows(hid_t ds);
/* Rows [start, start + count) of an extendible dataset. */
int csm_h5_read(hid_t ds, hid_t type, hsize_t start, hsize_t count, void *buf);
/* A 1-D dataset read CSM_ROWS_BLOCK rows at a time: csm_rows_at copies row t (0, or -1 past the
   end or on a read error). */
enum { CSM_ROWS_BLOCK = 4096 };
typedef struct csm_rows {
    hid_t ds, type;
    size_t size;
    hsize_t first, count, total;
    void *buf;
} csm_rows;
int csm_rows_open(csm_rows *r, hid_t file, const char *path, hid_t type);
int csm_rows_at(csm_rows *r, hsize_t t, void *out);
void csm_rows_close(csm_rows *r);
/* Rows first, first + 2, ... (count of them) of a ROWS_SLOTS dataset: read, or written in place
   with the dataset grown to hold them. */
int csm_h5_read_slot(hid_t ds, hid_t type, hsize_t first, hsize_t count, void *buf);
int csm_h5_write_slot(hid_t ds, int type, hsize_t first, hsize_t count, const void *data);
int csm_h5_set_rows(hid_t ds, hsize_t rows);
/* Read a dataset's last row and drop it: 0 when its index and chunk read back. */
int csm_h5_read_last(hid_t ds);
/* 1 when the dataset at `path` holds exactly these bytes. */
int csm_h5_same(hid_t file, const char *path, hid_t type, const void *data, size_t bytes);
/* Open for writing, clearing the open-for-writing mark a killed writer left. */
hid_t csm_log_open_clearing(const char *path);

/* log_fields.c */
/* The fields of a log: the built-in ones, then with a simulation the timings its plugins named
   and the fields its plugins declare; without one (a log opened to recover it) those the log's
   `extra_datasets` attribute lists. Returns -1 when out of memory or a plugin's field is
   malformed (err says which). */
int csm_log_fields_build(csm_log *log, const csm_sim *sim, csm_error *err);
void csm_log_fields_free(csm_log *log);
/* The root attribute that lists the log's own fields (none: nothing is written). */
int csm_log_fields_record(const csm_log *log);
int csm_log_field_used(const csm_log *log, int k);
/* Rows field k holds in a log of extent e. */
hsize_t csm_log_field_rows(const csm_log *log, int k, const log_extent *e);
/* Rows one frame appends to field f. */
hsize_t csm_log_frame_rows(const field_spec *f, const csm_world *w);
hid_t csm_log_field_create(hid_t file, const field_spec *f, int32_t n, int compression);
/* Chunked, and with a level > 0 shuffled and deflated (when this HDF5 has deflate). */
hid_t csm_h5_chunked(int rank, const hsize_t *chunk, int compression);
/* Access for a dataset frames are appended to: a chunk cache of two of its chunks. */
hid_t csm_h5_append_access(hid_t dcpl, hid_t type);
hid_t csm_h5_open_append(hid_t file, const char *path);

/* log.c */
int csm_log_lock_take(csm_log *log, const char *path, csm_error *err);
void csm_log_lock_drop(csm_log *log);
int csm_log_writer_attrs(hid_t f);
/* Start SWMR writing, the datasets reopened with a chunk cache of two chunks. */
int csm_log_start_swmr(csm_log *log);
hid_t csm_log_event_type(void);

/* versions.c */
/* The segments of each stream's version: the clusters' rest data, their memberships. */
int csm_log_rest_segments(const csm_log *log, const csm_clusters *C, version_segment *s);
int csm_log_member_segments(const csm_clusters *C, version_segment *s);
int csm_log_state_segments(const csm_clusters *C, version_segment *s);
/* Which datasets count each stream's rows. */
void csm_log_version_streams(csm_log *log);
/* Take these bytes as the stream's last version (a resumed log's). */
int csm_log_keep_version(version_stream *v, const version_segment *seg, int ns);
/* A new version of each stream whose data changed since its last version. */
int csm_log_versions(csm_log *log, const csm_clusters *C);

/* trim.c */
/* The datasets of an open log and the rows its complete frames fill: the last complete frame is
   the last one /frames/time holds (it is appended last). Opens the datasets `log` uses, and with
   `all` every dataset present. */
int csm_log_measure(csm_log *log, int all, log_frames *lf, csm_error *err);
/* Drop whatever was written after the last complete frame. */
int csm_log_trim(csm_log *log, const log_frames *lf);
/* A handle on an open log file, with the fields a simulation writes (sim NULL: those the file
   holds); NULL when out of memory. */
csm_log *csm_log_handle(const char *path, hid_t file, const csm_sim *sim);
/* Cut every dataset back to the complete frames (a log without checkpoints is left uncut). */
void csm_log_trim_after_crash(const char *path, hid_t file);

/* view.c */
/* The view file of a log (file open for reading, T frames of n particles): speed, displacement
   and nearest cluster per frame, written whole or not at all. *has_cluster says whether the log
   had the memberships for the colour. 0 written, 1 nothing to view (no velocities or frames), -1
   it could not be written (errno says why, when the system knows). */
int csm_log_write_view(hid_t log, const char *viewpath, hsize_t T, hsize_t n, int *has_cluster);

/* recover.c */
/* Before a resume writes anything: room for its set-up and two frames on the log's file system
   and under the file size limit. A log a write failed on is left as it is, not made worse. */
int csm_log_check_room(const char *path, csm_error *err);
/* Open a log read-only as it stands, a live or killed writer's too, writing nothing (no
   recovery); -1 when it is not a readable HDF5 file. */
hid_t csm_log_open_untouched(const char *path);

#endif
