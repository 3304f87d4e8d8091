/* Meshes in: OFF and OBJ files read into growing arrays (never sized by what a header claims), a
   mesh built from arrays, its volume, and its placing in the scene. Its tree and queries (inside,
   nearest point) are in mesh_tree.c. */

#include "mesh.h"

#include "files.h"
#include "grow.h"

#include "csm_math.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Growing arrays for the readers: sized by what the file holds, never by what a header claims. */

typedef struct dbuf {
    double *a;
    int64_t n, cap;
} dbuf;
typedef struct ibuf {
    int32_t *a;
    int64_t n, cap;
} ibuf;

static int dbuf_push(dbuf *b, double x)
{
    if (csm_grow((void **)&b->a, &b->cap, b->n + 1, sizeof *b->a)) return -1;
    b->a[b->n++] = x;
    return 0;
}
static int ibuf_push(ibuf *b, int32_t x)
{
    if (csm_grow((void **)&b->a, &b->cap, b->n + 1, sizeof *b->a)) return -1;
    b->a[b->n++] = x;
    return 0;
}

/* A file read whole and walked line by line; '#' starts a comment in both formats. */
typedef struct reader {
    const char *path;
    char *text, *next;
    int line;
} reader;

/* The next line with something on it (comments stripped), or NULL at the end. */
static char *next_line(reader *r)
{
    while (r->next && *r->next) {
        char *s = r->next;
        char *end = strchr(s, '\n');
        if (end) {
            *end = 0;
            r->next = end + 1;
        } else {
            r->next = s + strlen(s);
        }
        r->line++;
        char *hash = strchr(s, '#');
        if (hash) *hash = 0;
        while (isspace((unsigned char)*s)) s++;
        if (*s) return s;
    }
    return NULL;
}

static int read_number(reader *r, char **s, double *x, const char *what, csm_error *err)
{
    while (isspace((unsigned char)**s)) (*s)++;
    if (!**s) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: %s: line ends early", r->path, r->line, what);
    char *end;
    errno = 0;
    *x = strtod(*s, &end);
    if (end == *s || (*end && !isspace((unsigned char)*end) && *end != '/')) {
        int len = 0;
        while ((*s)[len] && !isspace((unsigned char)(*s)[len]) && len < 24) len++;
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: %s: '%.*s' is not a number", r->path, r->line, what,
                        len, *s);
    }
    if (!isfinite(*x))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: %s: coordinate '%.*s' is not finite", r->path, r->line,
                        what, (int)(end - *s) < 24 ? (int)(end - *s) : 24, *s);
    *s = end;
    return 0;
}

static int read_count(reader *r, char **s, int64_t *n, const char *what, csm_error *err)
{
    double x;
    if (read_number(r, s, &x, what, err)) return -1;
    if (x != floor(x) || x < 0 || x > 1e9)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: %s: %g is not a count", r->path, r->line, what, x);
    *n = (int64_t)x;
    return 0;
}

/* A polygon's vertices are fanned into triangles (i0, ik, ik+1). The fan spans the polygon's
   boundary, and a winding number depends on a closed surface's boundary curves only, so the
   inside test is exact even for non-convex or non-planar polygons. */
static int add_polygon(reader *r, const int32_t *idx, int64_t count, ibuf *tri, csm_error *err)
{
    if (count < 3)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: a face has %lld vertices; a face needs at least 3",
                        r->path, r->line, (long long)count);
    for (int64_t k = 1; k + 1 < count; k++)
        if (ibuf_push(tri, idx[0]) || ibuf_push(tri, idx[k]) || ibuf_push(tri, idx[k + 1]))
            return csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory", r->path);
    return 0;
}

static int read_off(reader *r, char *header, dbuf *v, ibuf *tri, csm_error *err)
{
    /* [ST][C][N][4]OFF: colours, normals and texture coordinates follow a vertex's x y z */
    char *s = header;
    while (*s && !isspace((unsigned char)*s)) s++;
    if (s - header < 3 || strncmp(s - 3, "OFF", 3) != 0 || strstr(header, "4OFF") || header[0] == 'n')
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: not an OFF header (expected OFF, COFF or NOFF)", r->path,
                        r->line);
    while (isspace((unsigned char)*s)) s++;
    if (!*s) { /* the counts are on the next line */
        s = next_line(r);
        if (!s) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: file ends before the vertex and face counts", r->path, r->line);
    }
    int64_t nv = 0, nf = 0, ne = 0;
    if (read_count(r, &s, &nv, "vertex count", err) || read_count(r, &s, &nf, "face count", err)) return -1;
    while (isspace((unsigned char)*s)) s++;
    if (*s && read_count(r, &s, &ne, "edge count", err)) return -1;
    if (nv == 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: the mesh has no vertices", r->path, r->line);
    if (nf == 0)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: the mesh has no faces; only a closed surface has an inside",
                        r->path, r->line);
    if (nv > INT32_MAX / 3 || nf > INT32_MAX / 3)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: %lld vertices, %lld faces: too many", r->path, r->line,
                        (long long)nv, (long long)nf);
    for (int64_t i = 0; i < nv; i++) {
        s = next_line(r);
        if (!s)
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: truncated: the header promises %lld vertices, the file ends after %lld",
                            r->path, r->line, (long long)nv, (long long)i);
        for (int d = 0; d < 3; d++) {
            double x;
            if (read_number(r, &s, &x, "vertex", err)) return -1;
            if (dbuf_push(v, x)) return csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory", r->path);
        }
    }
    ibuf poly = {0};
    int rc = 0;
    for (int64_t f = 0; f < nf && !rc; f++) {
        s = next_line(r);
        if (!s) {
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: truncated: the header promises %lld faces, the file ends after %lld",
                          r->path, r->line, (long long)nf, (long long)f);
            break;
        }
        int64_t count = 0;
        if (read_count(r, &s, &count, "face size", err)) {
            rc = -1;
            break;
        }
        poly.n = 0;
        for (int64_t k = 0; k < count && !rc; k++) {
            int64_t idx = 0;
            while (isspace((unsigned char)*s)) s++;
            if (!*s)
                rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: a face of %lld vertices lists %lld", r->path, r->line,
                              (long long)count, (long long)k);
            else if (read_count(r, &s, &idx, "face", err))
                rc = -1;
            else if (idx >= nv)
                rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: vertex index %lld is out of range (the mesh has %lld vertices)",
                              r->path, r->line, (long long)idx, (long long)nv);
            else if (ibuf_push(&poly, (int32_t)idx))
                rc = csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory", r->path);
        }
        if (!rc) rc = add_polygon(r, poly.a, poly.n, tri, err);
    }
    free(poly.a);
    return rc;
}

/* Wavefront OBJ: "v x y z [w]" and "f i[/t][/n] ..." with 1-based or negative (relative)
   indices; normals, texture coordinates, groups and materials are skipped. */
static int read_obj(reader *r, char *s, dbuf *v, ibuf *tri, csm_error *err)
{
    ibuf poly = {0};
    int rc = 0, faces = 0;
    for (; s && !rc; s = next_line(r)) {
        if (s[0] == 'v' && isspace((unsigned char)s[1])) {
            s++;
            for (int d = 0; d < 3 && !rc; d++) {
                double x;
                if (read_number(r, &s, &x, "vertex", err)) rc = -1;
                else if (dbuf_push(v, x)) rc = csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory", r->path);
            }
            if (!rc && v->n / 3 > INT32_MAX / 3) rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: too many vertices", r->path, r->line);
        } else if (s[0] == 'f' && isspace((unsigned char)s[1])) {
            s++;
            poly.n = 0;
            int64_t nv = v->n / 3;
            for (;;) {
                while (isspace((unsigned char)*s)) s++;
                if (!*s) break;
                char *end;
                errno = 0;
                long long idx = strtoll(s, &end, 10);
                if (end == s || (*end && *end != '/' && !isspace((unsigned char)*end))) {
                    rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: face: '%.*s' is not a vertex index", r->path, r->line,
                                  (int)strcspn(s, " \t\r"), s);
                    break;
                }
                long long abs_idx = idx < 0 ? nv + idx : idx - 1;
                if (idx == 0 || errno || abs_idx < 0 || abs_idx >= nv) {
                    rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: vertex index %lld is out of range (%lld vertices so far)",
                                  r->path, r->line, idx, (long long)nv);
                    break;
                }
                if (ibuf_push(&poly, (int32_t)abs_idx)) {
                    rc = csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory", r->path);
                    break;
                }
                s = end;
                while (*s && !isspace((unsigned char)*s)) s++; /* /t/n */
            }
            if (!rc) rc = add_polygon(r, poly.a, poly.n, tri, err);
            faces++;
        }
    }
    free(poly.a);
    if (rc) return rc;
    if (v->n == 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: the mesh has no vertices", r->path, r->line);
    if (faces == 0)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: the mesh has no faces; only a closed surface has an inside",
                        r->path, r->line);
    return 0;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    if (n < k) return 0;
    for (size_t j = 0; j < k; j++)
        if (tolower((unsigned char)s[n - k + j]) != suffix[j]) return 0;
    return 1;
}

/* Parse `text` (len bytes, NUL at text[len], modified in place, freed here) read from `path`. */
static int parse_owned(csm_mesh *m, const char *path, char *text, size_t len, csm_error *err)
{
    memset(m, 0, sizeof *m);
    reader r = {path, text, NULL, 0};
    if (memchr(r.text, 0, len)) {
        free(r.text);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: binary data; expected an OFF or OBJ text file", path);
    }
    r.next = r.text;
    dbuf v = {0};
    ibuf tri = {0};
    char *first = next_line(&r);
    int rc;
    if (!first)
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: empty mesh file", path, r.line > 0 ? r.line : 1);
    else if (strncmp(first, "ply", 3) == 0 && (!first[3] || isspace((unsigned char)first[3])))
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: a PLY file; meshes are read from OFF or OBJ text", path, r.line);
    else if (has_suffix(path, ".off") || (!has_suffix(path, ".obj") && strstr(first, "OFF") && first[0] != 'v'))
        rc = read_off(&r, first, &v, &tri, err);
    else
        rc = read_obj(&r, first, &v, &tri, err);
    free(r.text);
    if (rc) {
        free(v.a);
        free(tri.a);
        return rc;
    }
    m->v = v.a;
    m->nv = (int32_t)(v.n / 3);
    m->tri = tri.a;
    m->nt = (int32_t)(tri.n / 3);
    return 0;
}

int csm_mesh_parse(csm_mesh *m, const char *name, const char *text, size_t len, csm_error *err)
{
    char *copy = malloc(len + 1);
    if (!copy) return csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory", name);
    memcpy(copy, text, len);
    copy[len] = 0;
    return parse_owned(m, name, copy, len, err);
}

int csm_mesh_load(csm_mesh *m, const char *path, csm_error *err)
{
    memset(m, 0, sizeof *m);
    char *text;
    size_t len;
    if (csm_read_file(path, "mesh", CSM_MESH_MAX_BYTES, &text, &len, err)) return -1;
    return parse_owned(m, path, text, len, err);
}

int csm_mesh_from_arrays(csm_mesh *m, const double *v, int32_t nv, const int32_t *tri, int32_t nt)
{
    memset(m, 0, sizeof *m);
    m->v = malloc(sizeof *m->v * 3 * (size_t)(nv > 0 ? nv : 1));
    m->tri = malloc(sizeof *m->tri * 3 * (size_t)(nt > 0 ? nt : 1));
    if (!m->v || !m->tri) {
        csm_mesh_free(m);
        return -1;
    }
    memcpy(m->v, v, sizeof *m->v * 3 * (size_t)nv);
    memcpy(m->tri, tri, sizeof *m->tri * 3 * (size_t)nt);
    m->nv = nv;
    m->nt = nt;
    return 0;
}

void csm_mesh_free(csm_mesh *m)
{
    free(m->v);
    free(m->tri);
    free(m->node);
    free(m->order);
    memset(m, 0, sizeof *m);
}

void csm_mesh_transform(csm_mesh *m, const double A[9], const double t[3])
{
    for (int32_t i = 0; i < m->nv; i++) {
        double y[3];
        csm_m3_mul_v3(A, &m->v[3 * i], y);
        for (int d = 0; d < 3; d++) m->v[3 * i + d] = y[d] + t[d];
    }
}

void csm_mesh_bounds(const csm_mesh *m, double lo[3], double hi[3])
{
    for (int d = 0; d < 3; d++) {
        lo[d] = INFINITY;
        hi[d] = -INFINITY;
    }
    /* only vertices that some face uses: stray vertices bound nothing */
    for (int32_t k = 0; k < 3 * m->nt; k++)
        for (int d = 0; d < 3; d++) {
            double x = m->v[3 * m->tri[k] + d];
            lo[d] = x < lo[d] ? x : lo[d];
            hi[d] = x > hi[d] ? x : hi[d];
        }
}

double csm_mesh_volume(const csm_mesh *m) { return fabs(csm_mesh_signed_volume(m)); }

double csm_mesh_signed_volume(const csm_mesh *m)
{
    double vol = 0;
    for (int32_t t = 0; t < m->nt; t++) {
        const double *a = &m->v[3 * m->tri[3 * t]], *b = &m->v[3 * m->tri[3 * t + 1]], *c = &m->v[3 * m->tri[3 * t + 2]];
        double bc[3];
        csm_v3_cross(b, c, bc);
        vol += csm_v3_dot(a, bc);
    }
    return vol / 6.0;
}


void csm_mesh_place(csm_mesh *m, const double rotate[3], int fit_unit_box, double scale)
{
    double R[9], zero[3] = {0, 0, 0};
    csm_m3_rotation_degrees(rotate, R);
    csm_mesh_transform(m, R, zero);
    double lo[3], hi[3], shift[3], longest = 0;
    csm_mesh_bounds(m, lo, hi);
    for (int d = 0; d < 3; d++) {
        shift[d] = -0.5 * (lo[d] + hi[d]);
        longest = hi[d] - lo[d] > longest ? hi[d] - lo[d] : longest;
    }
    if (fit_unit_box && longest > 0) scale /= longest;
    double S[9] = {scale, 0, 0, 0, scale, 0, 0, 0, scale};
    for (int d = 0; d < 3; d++) shift[d] *= scale;
    csm_mesh_transform(m, S, shift);
}

int csm_mesh_open(csm_mesh *m, const char *path, const char *src, const char *where, const double rotate[3],
                  int fit_unit_box, double scale, csm_error *err)
{
    char found[4096];
    memset(m, 0, sizeof *m);
    int why = csm_find_beside(path, src, found, sizeof found);
    if (why > 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: mesh %s: %s", where, found, strerror(why));
    if (why)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: no mesh '%s' here or in the config's folder or above it%s", where,
                        path, strncmp(path, "data/meshes/", 12) == 0 ? "; data/fetch_meshes.sh fetches it" : "");
    if (csm_mesh_load(m, found, err)) return -1;
    csm_mesh_place(m, rotate, fit_unit_box, scale);
    if (csm_mesh_build_tree(m)) {
        csm_mesh_free(m);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory", found);
    }
    double lo[3], hi[3];
    csm_mesh_bounds(m, lo, hi);
    int solid = hi[0] > lo[0] && hi[1] > lo[1] && hi[2] > lo[2];
    double box = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]), volume = csm_mesh_volume(m);
    if (!(solid && volume > 1e-9 * box)) {
        csm_mesh_free(m);
        if (solid) /* its faces' signed volumes cancel: parts that face opposite ways */
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: the mesh's faces enclose no net volume (%.3g of its %.3g "
                            "bounding box): parts of it face opposite ways, one of them turned inside out", found,
                            volume, box);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: the mesh encloses no volume (it is flat or a single point)",
                        found);
    }
    return 0;
}
