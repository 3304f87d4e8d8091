/* The view file beside a log (LOG.view.hdf5): per-frame fields derived from the log for viewers,
   which the sidecar hands to ParaView next to the positions. ParaView's XDMF 3 reader (the one it
   picks for .xmf) evaluates no functions of datasets, so they are written out once the run ends:
     speed         (T, n)    f32  |v_i|
     displacement  (T, n, 3) f32  x_i - r_i, from the rest positions
     cluster       (T, n)    i32  the stable id (/clusters/id) of the nearest centre among the
                                  clusters the particle belongs to, -1 in none: Falkenstein 2017
                                  Fig 2 colours particles by their closest cluster centre
   Single precision: what a picture needs, and half the bytes. The file is written whole under a
   temporary name and renamed, so a view file is complete or absent; it holds nothing the log
   does not, and `csm info` writes it again for a log whose run was killed. */
#include "log_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the view needs of a log's clusters, a frame at a time; the frames' and the versions'
   indexes are read a block at a time (csm_rows), so that writing the view of a long run takes no
   memory that grows with its frames. */
typedef struct cluster_source {
    hid_t com, id, offsets, members;
    csm_rows frame_cluster, version_offsets, version_members, version_clusters;
    csm_rows version;  /* [T] int32 */
    csm_rows cversion; /* [T] int32, the slow state's version of each frame; absent (ds < 0) in a
                          log before it: the ids then lie beside com */
    int32_t *offset, *member;
    int64_t noffset, nmember; /* how many of each are loaded */
    int64_t loaded;           /* version whose offsets and members are loaded, -1 none */
} cluster_source;

static hid_t open_if(hid_t file, const char *path)
{
    return H5Lexists(file, path, H5P_DEFAULT) > 0 ? H5Dopen2(file, path, H5P_DEFAULT) : -1;
}

static void clusters_close(cluster_source *s)
{
    hid_t ds[] = {s->com, s->id, s->offsets, s->members};
    for (int k = 0; k < 4; k++)
        if (ds[k] >= 0) H5Dclose(ds[k]);
    csm_rows *rows[] = {&s->frame_cluster, &s->version_offsets, &s->version_members, &s->version_clusters,
                        &s->version, &s->cversion};
    for (int k = 0; k < 6; k++) csm_rows_close(rows[k]);
    free(s->offset);
    free(s->member);
}

/* Frame t's membership version v, its rows [a, b) of /clusters/com, and ia, the first row of its
   ids: 0, or -1 where the log's indexes disagree (or cannot be read). */
static int frame_rows(cluster_source *s, hsize_t t, int64_t *v, hsize_t *a, hsize_t *b, hsize_t *ia)
{
    int32_t version, cv = 0;
    int64_t fa, fb, vc = 0;
    if (csm_rows_at(&s->version, t, &version) || csm_rows_at(&s->frame_cluster, t, &fa) ||
        csm_rows_at(&s->frame_cluster, t + 1, &fb) || version < 0 || (hsize_t)version + 1 >= s->version_offsets.total ||
        fa < 0 || fb < fa)
        return -1;
    if (s->cversion.ds >= 0 && (csm_rows_at(&s->cversion, t, &cv) || cv < 0 ||
                                (hsize_t)cv + 1 >= s->version_clusters.total || csm_rows_at(&s->version_clusters, (hsize_t)cv, &vc)))
        return -1;
    *v = version;
    *a = (hsize_t)fa;
    *b = (hsize_t)fb;
    *ia = s->cversion.ds >= 0 ? (hsize_t)vc : (hsize_t)fa;
    return 0;
}

/* 0 when the log has versioned memberships for its T frames (logs before them get no colour). */
static int clusters_open(hid_t file, hsize_t T, cluster_source *s)
{
    memset(s, 0, sizeof *s);
    s->loaded = -1;
    s->com = open_if(file, "/clusters/com");
    s->id = open_if(file, "/clusters/id");
    s->offsets = open_if(file, "/clusters/offsets");
    s->members = open_if(file, "/clusters/members");
    csm_rows_open(&s->frame_cluster, file, "/clusters/frame_cluster", H5T_NATIVE_INT64);
    csm_rows_open(&s->version_offsets, file, "/clusters/version_offsets", H5T_NATIVE_INT64);
    csm_rows_open(&s->version_members, file, "/clusters/version_members", H5T_NATIVE_INT64);
    csm_rows_open(&s->version, file, "/clusters/membership_version", H5T_NATIVE_INT32);
    int versions = csm_rows_open(&s->cversion, file, "/clusters/cluster_version", H5T_NATIVE_INT32) == 0;
    if (versions) csm_rows_open(&s->version_clusters, file, "/clusters/version_clusters", H5T_NATIVE_INT64);
    else s->version_clusters.ds = -1;
    int ok = s->com >= 0 && s->id >= 0 && s->offsets >= 0 && s->members >= 0 && s->frame_cluster.total >= T + 1 &&
             s->version.total >= T && s->version_offsets.total > 0 &&
             s->version_offsets.total == s->version_members.total &&
             (!versions || (s->cversion.total >= T && s->version_clusters.total > 0));
    for (hsize_t t = 0; ok && t < T; t++) {
        int64_t v;
        hsize_t a, b, ia;
        ok = frame_rows(s, t, &v, &a, &b, &ia) == 0;
    }
    if (!ok) clusters_close(s);
    return ok ? 0 : -1;
}

/* Frame t's nearest cluster of each particle, as a stable id. */
static int nearest_clusters(cluster_source *s, hsize_t t, const double *x, int32_t n, double *best, int32_t *out)
{
    int64_t v, o0, o1, m0, m1;
    hsize_t a, b, ia;
    if (frame_rows(s, t, &v, &a, &b, &ia)) return -1;
    if (v != s->loaded) {
        if (csm_rows_at(&s->version_offsets, (hsize_t)v, &o0) || csm_rows_at(&s->version_offsets, (hsize_t)v + 1, &o1) ||
            csm_rows_at(&s->version_members, (hsize_t)v, &m0) || csm_rows_at(&s->version_members, (hsize_t)v + 1, &m1) ||
            o1 <= o0 || m1 < m0)
            return -1;
        int32_t *off = realloc(s->offset, sizeof *off * (size_t)(o1 - o0 + 1)),
                *mem = off ? realloc(s->member, sizeof *mem * (size_t)(m1 - m0 + 1)) : NULL;
        if (off) s->offset = off;
        if (mem) s->member = mem;
        if (!off || !mem || csm_h5_read(s->offsets, H5T_NATIVE_INT32, (hsize_t)o0, (hsize_t)(o1 - o0), s->offset) ||
            csm_h5_read(s->members, H5T_NATIVE_INT32, (hsize_t)m0, (hsize_t)(m1 - m0), s->member))
            return -1;
        s->loaded = v;
        s->noffset = o1 - o0;
        s->nmember = m1 - m0;
    }
    int32_t k = (int32_t)(b - a);
    if ((int64_t)k + 1 > s->noffset) return -1;
    for (int32_t c = 0; c <= k; c++)
        if (s->offset[c] < 0 || s->offset[c] > s->nmember || (c > 0 && s->offset[c] < s->offset[c - 1])) return -1;
    double *com = malloc(sizeof *com * 3 * (size_t)(k + 1));
    int32_t *id = malloc(sizeof *id * (size_t)(k + 1));
    int rc = !com || !id || (k > 0 && (csm_h5_read(s->com, H5T_NATIVE_DOUBLE, a, (hsize_t)k, com) ||
                                       csm_h5_read(s->id, H5T_NATIVE_INT32, ia, (hsize_t)k, id)));
    for (int32_t i = 0; i < n && !rc; i++) {
        best[i] = INFINITY;
        out[i] = -1;
    }
    for (int32_t c = 0; c < k && !rc; c++)
        for (int32_t j = s->offset[c]; j < s->offset[c + 1]; j++) {
            int32_t i = s->member[j];
            if (i < 0 || i >= n) continue;
            const double *p = &x[3 * i], *q = &com[3 * c];
            double d = (p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]);
            if (d < best[i]) {
                best[i] = d;
                out[i] = id[c];
            }
        }
    free(com);
    free(id);
    return rc ? -1 : 0;
}

/* A (T, n[, cols]) dataset the frames are appended to, its chunks of at most 4,096 particles as in
   the log (csm_log_field_create). A frame of fewer particles shares its chunk with the next ones, up
   to 4,096 particles' worth and T frames: a chunk a frame made a 27-particle run of 10^6 frames keep
   10^6 chunks a dataset, whose index (version 1 B-trees) grew the process by 41 MB while it wrote
   them. The view is written once, at the end, so no chunk is written twice. */
static hid_t view_dataset(hid_t file, const char *name, int type, hsize_t T, hsize_t n, int cols, const char *units,
                          const char *description, int compress)
{
    hsize_t dims[3] = {0, n, (hsize_t)cols}, maxdims[3] = {H5S_UNLIMITED, n, (hsize_t)cols};
    hsize_t per = n < 4096 ? 4096 / (n ? n : 1) : 1;
    hsize_t chunk[3] = {per < T ? per : T ? T : 1, n < 4096 ? (n ? n : 1) : 4096, (hsize_t)cols};
    int rank = cols > 1 ? 3 : 2;
    hid_t space = H5Screate_simple(rank, dims, maxdims);
    hid_t dcpl = csm_h5_chunked(rank, chunk, compress);
    hid_t dapl = csm_h5_append_access(dcpl, csm_h5_type(type));
    hid_t ds = H5Dcreate2(file, name, csm_h5_type(type), space, H5P_DEFAULT, dcpl, dapl);
    H5Pclose(dapl);
    if (ds >= 0) {
        csm_h5_attr_string(ds, "units", units);
        csm_h5_attr_string(ds, "description", description);
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    return ds;
}

int csm_log_write_view(hid_t log, const char *viewpath, hsize_t T, hsize_t n, int *has_cluster)
{
    *has_cluster = 0;
    hid_t pos = open_if(log, "/frames/positions"), vel = open_if(log, "/frames/velocities");
    double *rest;
    int64_t values = csm_h5_read_all(log, "/rest/positions", H5T_NATIVE_DOUBLE, (void **)&rest);
    if (pos < 0 || vel < 0 || values != 3 * (int64_t)n || T == 0 || n > INT32_MAX) {
        if (pos >= 0) H5Dclose(pos);
        if (vel >= 0) H5Dclose(vel);
        free(rest);
        return 1; /* nothing to view: no velocities, no frame */
    }
    cluster_source cs;
    int colour = clusters_open(log, T, &cs) == 0;
    char tmp[4200];
    /* a name of this process's own: a run and a csm info that write the same files at once each
       rename a whole file into place, and neither fails for the other's */
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", viewpath, (long)getpid());
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t speed = f >= 0 ? view_dataset(f, "speed", T_F32, T, n, 1, "m/s", "|v_i| of each frame", 0) : -1;
    hid_t disp = f >= 0 ? view_dataset(f, "displacement", T_F32, T, n, 3, "m", "x_i - r_i: from the rest position", 0) : -1;
    hid_t near = f >= 0 && colour ? view_dataset(f, "cluster", T_I32, T, n, 1, "1",
                                              "stable id of the nearest centre among the particle's clusters "
                                              "(Falkenstein 2017 Fig 2), -1 in none", 1)
                                  : -1;
    double *x = malloc(sizeof *x * 3 * n + 1), *v = malloc(sizeof *v * 3 * n + 1), *best = malloc(sizeof *best * n + 1);
    float *s = malloc(sizeof *s * 3 * n + 1);
    int32_t *id = malloc(sizeof *id * n + 1);
    int rc = f < 0 || speed < 0 || disp < 0 || (colour && near < 0) || !x || !v || !best || !s || !id ? -1 : 0;
    for (hsize_t t = 0; t < T && !rc; t++) {
        rc = csm_h5_read(pos, H5T_NATIVE_DOUBLE, t, 1, x) || csm_h5_read(vel, H5T_NATIVE_DOUBLE, t, 1, v) ? -1 : 0;
        for (hsize_t i = 0; i < n && !rc; i++) {
            const double *vi = &v[3 * i];
            s[i] = (float)sqrt(vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
        }
        if (!rc) rc = csm_h5_append(speed, T_F32, 1, s);
        for (hsize_t a = 0; a < 3 * n && !rc; a++) s[a] = (float)(x[a] - rest[a]);
        if (!rc) rc = csm_h5_append(disp, T_F32, 1, s);
        if (!rc && colour)
            rc = nearest_clusters(&cs, t, x, (int32_t)n, best, id) || csm_h5_append(near, T_I32, 1, id) ? -1 : 0;
    }
    hid_t ds[] = {speed, disp, near, pos, vel};
    for (int k = 0; k < 5; k++)
        if (ds[k] >= 0) H5Dclose(ds[k]);
    if (colour) clusters_close(&cs);
    if (f >= 0 && H5Fclose(f) < 0) rc = -1;
    free(x);
    free(v);
    free(best);
    free(s);
    free(id);
    free(rest);
    if (!rc && rename(tmp, viewpath) != 0) rc = -1;
    if (rc) {
        int e = errno; /* the write's reason, not the removal's */
        remove(tmp);
        errno = e;
    }
    *has_cluster = colour && !rc;
    return rc;
}
