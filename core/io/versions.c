/* The data a log writes as versions (version_stream): the clusters' rest data, their
   memberships and their slow state, a new version only when a frame's bytes differ from the last
   one's. */
#include "log_internal.h"

#include "kernel.h"

#include <stdlib.h>
#include <string.h>

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

int csm_log_state_segments(const csm_clusters *C, version_segment *s)
{
    hsize_t k = (hsize_t)C->k;
    s[0] = (version_segment){F_FP, C->Fp, sizeof(double) * 9 * k, k};
    s[1] = (version_segment){F_ALPHA, C->stress_alpha, sizeof(double) * k, k};
    s[2] = (version_segment){F_WIDTH, C->width, sizeof(double) * k, k};
    s[3] = (version_segment){F_ID, C->id, sizeof(int32_t) * k, k};
    s[4] = (version_segment){F_STATE, C->state, sizeof(int32_t) * k, k};
    return 5;
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
    if (v->start_field[1] >= 0) rc |= csm_h5_append(log->ds[v->start_field[1]], T_I64, 1, &v->rows[1]);
    v->count++;
    return rc | csm_log_keep_version(v, seg, ns);
}

void csm_log_version_streams(csm_log *log)
{
    log->rest.start_field[0] = F_RV_CLUSTER_START;
    log->rest.start_field[1] = F_RV_MEMBER_START;
    log->members.start_field[0] = F_MV_OFFSETS_START;
    log->members.start_field[1] = F_MV_MEMBER_START;
    log->state.start_field[0] = F_CV_START;
    log->state.start_field[1] = -1;
}

int csm_log_versions(csm_log *log, const csm_clusters *C)
{
    version_segment seg[8];
    int rc = version_append(log, &log->rest, seg, csm_log_rest_segments(log, C, seg), C->k, C->m);
    rc |= version_append(log, &log->members, seg, csm_log_member_segments(C, seg), (int64_t)C->k + 1, C->m);
    return rc | version_append(log, &log->state, seg, csm_log_state_segments(C, seg), C->k, 0);
}
