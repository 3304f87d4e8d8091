/* A mesh's queries: its bounding-volume tree of triangles, the generalized winding number (exact
   and with Barill et al. 2018's far-field dipoles) that says what is inside, and the nearest
   point of the surface. Reading and placing a mesh are in mesh.c. */

#include "mesh.h"

#include "csm_math.h"
#include "simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Nodes whose triangles all lie within radius of their centre are replaced by their dipole term
   once p is farther than this many radii (Barill et al. 2018, "Fast winding numbers for soups and
   clouds", Sec 3.2, call it beta). At 3 the first-order term errs by at most 0.013 at the centre
   of a finely triangulated sphere, the worst case the tests know; adding the second-order term
   (the area vectors' first moment) made that case worse at beta 2 and 3, so it is left out. */
#define FAR_FIELD_RADII 3.0
#define LEAF_TRIANGLES 8

/* ------------------------------------------------------------------------------------------ */
/* The tree: median splits along the longest extent of the triangles' centroids. */

/* A triangle's key for sorting: its centroid along one axis as an unsigned integer that orders
   as the double does, -0 and +0 alike. */
typedef struct tri_key {
    uint64_t key;
    int32_t tri;
} tri_key;

static uint64_t sortable(double x)
{
    x += 0.0; /* -0 to +0 */
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u >> 63 ? ~u : u | 0x8000000000000000ull;
}

/* out[nt]: the triangles by (centroid along axis d, index), by a stable radix sort of 11-bit
   digits from the lowest (a digit every key shares is skipped); keys, tmp: scratch [nt]. */
static void sort_by_centroid(const double *cen, int d, int32_t nt, tri_key *keys, tri_key *tmp, int32_t *out)
{
    enum { BITS = 11, BUCKETS = 1 << BITS };
    for (int32_t t = 0; t < nt; t++) keys[t] = (tri_key){sortable(cen[3 * t + d]), t};
    int32_t count[BUCKETS];
    for (int shift = 0; shift < 64; shift += BITS) {
        memset(count, 0, sizeof count);
        for (int32_t t = 0; t < nt; t++) count[keys[t].key >> shift & (BUCKETS - 1)]++;
        if (nt == 0 || count[keys[0].key >> shift & (BUCKETS - 1)] == nt) continue;
        for (int32_t b = 0, at = 0; b < BUCKETS; b++) {
            int32_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (int32_t t = 0; t < nt; t++) tmp[count[keys[t].key >> shift & (BUCKETS - 1)]++] = keys[t];
        tri_key *swap = keys;
        keys = tmp;
        tmp = swap;
    }
    for (int32_t t = 0; t < nt; t++) out[t] = keys[t].tri;
}

/* What the build reads of every triangle, computed once: centroid and area vector
   A_t = 1/2 (b - a) x (c - a); and the triangles sorted by centroid along each axis, sorted once:
   a node's triangles are [first, first + count) of each of the three orders, so a split takes the
   first half of one and partitions the other two stably, with no sort below the root. */
typedef struct tree_build {
    double *cen;       /* [3 nt] */
    double *area;      /* [3 nt] */
    double *size;      /* [nt] |A_t| */
    int32_t *axis[3];  /* [nt] each: triangles by (centroid along the axis, index) */
    int32_t *tmp;      /* [nt] partition scratch */
    unsigned char *in; /* [nt] on the left of the split being made */
} tree_build;

/* Node statistics for the far field (Barill et al. 2018 Sec 3.2): the area vectors' sum, an
   area-weighted centre, and a radius that bounds the expansion's error. */
static void node_stats(const csm_mesh *m, const tree_build *tb, csm_mesh_node *nd)
{
    double area = 0, wc[3] = {0, 0, 0}, mc[3] = {0, 0, 0};
    memset(nd->normal, 0, sizeof nd->normal);
    for (int32_t k = nd->first; k < nd->first + nd->count; k++) {
        const double *n = &tb->area[3 * m->order[k]], *c = &tb->cen[3 * m->order[k]];
        double a = tb->size[m->order[k]];
        area += a;
        for (int d = 0; d < 3; d++) {
            nd->normal[d] += n[d];
            wc[d] += a * c[d];
        }
    }
    if (!(area > 0)) /* no area: the centroids' mean */
        for (int32_t k = nd->first; k < nd->first + nd->count; k++)
            for (int d = 0; d < 3; d++) mc[d] += tb->cen[3 * m->order[k] + d] / nd->count;
    for (int d = 0; d < 3; d++) nd->centre[d] = area > 0 ? wc[d] / area : mc[d];
    double r2 = 0;
    for (int32_t k = nd->first; k < nd->first + nd->count; k++) {
        int32_t t = m->order[k];
        for (int j = 0; j < 3; j++) {
            const double *p = &m->v[3 * m->tri[3 * t + j]];
            double d[3] = {p[0] - nd->centre[0], p[1] - nd->centre[1], p[2] - nd->centre[2]};
            double l2 = csm_v3_dot(d, d);
            r2 = l2 > r2 ? l2 : r2;
        }
    }
    nd->radius = sqrt(r2);
}

static int32_t build_node(csm_mesh *m, const tree_build *tb, int32_t first, int32_t count)
{
    int32_t id = m->nnode++;
    csm_mesh_node *nd = &m->node[id];
    nd->first = first;
    nd->count = count;
    nd->left = nd->right = -1;
    node_stats(m, tb, nd);
    if (count <= LEAF_TRIANGLES) return id;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int32_t k = first; k < first + count; k++) {
        const double *c = &tb->cen[3 * m->order[k]];
        for (int d = 0; d < 3; d++) {
            lo[d] = c[d] < lo[d] ? c[d] : lo[d];
            hi[d] = c[d] > hi[d] ? c[d] : hi[d];
        }
    }
    int axis = 0;
    for (int d = 1; d < 3; d++)
        if (hi[d] - lo[d] > hi[axis] - lo[axis]) axis = d;
    /* the node's triangles by (centroid along the axis, index), the lower half to the left */
    memcpy(&m->order[first], &tb->axis[axis][first], sizeof *m->order * (size_t)count);
    int32_t half = count / 2;
    for (int32_t k = first; k < first + count; k++) tb->in[m->order[k]] = k < first + half;
    for (int d = 0; d < 3; d++) {
        if (d == axis) continue;
        int32_t *o = tb->axis[d], nl = 0, nr = half;
        for (int32_t k = first; k < first + count; k++) tb->tmp[tb->in[o[k]] ? nl++ : nr++] = o[k];
        memcpy(&o[first], tb->tmp, sizeof *o * (size_t)count);
    }
    int32_t left = build_node(m, tb, first, half);
    int32_t right = build_node(m, tb, first + half, count - half);
    nd = &m->node[id];
    nd->left = left;
    nd->right = right;
    nd->count = 0;
    return id;
}

int csm_mesh_build_tree(csm_mesh *m)
{
    free(m->node);
    free(m->order);
    m->nnode = 0;
    size_t nt = (size_t)(m->nt > 0 ? m->nt : 1);
    m->node = malloc(sizeof *m->node * 2 * nt);
    m->order = malloc(sizeof *m->order * nt);
    tree_build tb = {malloc(sizeof *tb.cen * 3 * nt), malloc(sizeof *tb.area * 3 * nt), malloc(sizeof *tb.size * nt),
                     {NULL, NULL, NULL}, NULL, NULL};
    int32_t *index = malloc(sizeof *index * 4 * nt);
    tri_key *keys = malloc(sizeof *keys * 2 * nt);
    tb.in = malloc(nt);
    int rc = m->node && m->order && tb.cen && tb.area && tb.size && index && keys && tb.in ? 0 : -1;
    for (int d = 0; d < 3 && !rc; d++) tb.axis[d] = index + (size_t)d * nt;
    tb.tmp = index ? index + 3 * nt : NULL;
    for (int32_t t = 0; t < m->nt && !rc; t++) {
        const double *a = &m->v[3 * m->tri[3 * t]], *b = &m->v[3 * m->tri[3 * t + 1]], *c = &m->v[3 * m->tri[3 * t + 2]];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        csm_v3_cross(e1, e2, &tb.area[3 * t]);
        for (int d = 0; d < 3; d++) {
            tb.area[3 * t + d] *= 0.5;
            tb.cen[3 * t + d] = (a[d] + b[d] + c[d]) / 3.0;
        }
        tb.size[t] = sqrt(csm_v3_dot(&tb.area[3 * t], &tb.area[3 * t]));
        m->order[t] = t;
    }
    for (int d = 0; d < 3 && !rc; d++) sort_by_centroid(tb.cen, d, m->nt, keys, keys + nt, tb.axis[d]);
    if (!rc && m->nt > 0) build_node(m, &tb, 0, m->nt);
    free(keys);
    free(index);
    free(tb.in);
    free(tb.cen);
    free(tb.area);
    free(tb.size);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */

/* Solid angle of triangle abc seen from p (Van Oosterom and Strackee 1983, as Jacobson et al.
   2013 Eq 6): tan(Omega / 2) = det[a b c] / (|a||b||c| + (a.b)|c| + (b.c)|a| + (c.a)|b|), with
   a, b, c relative to p. atan2 keeps the sign and the quadrant. */
static double solid_angle(const csm_mesh *m, int32_t t, const double p[3])
{
    double a[3], b[3], c[3];
    for (int d = 0; d < 3; d++) {
        a[d] = m->v[3 * m->tri[3 * t] + d] - p[d];
        b[d] = m->v[3 * m->tri[3 * t + 1] + d] - p[d];
        c[d] = m->v[3 * m->tri[3 * t + 2] + d] - p[d];
    }
    double la = sqrt(csm_v3_dot(a, a)), lb = sqrt(csm_v3_dot(b, b)), lc = sqrt(csm_v3_dot(c, c));
    double bc[3];
    csm_v3_cross(b, c, bc);
    double det = csm_v3_dot(a, bc);
    double den = la * lb * lc + csm_v3_dot(a, b) * lc + csm_v3_dot(b, c) * la + csm_v3_dot(c, a) * lb;
    return 2.0 * atan2(det, den);
}

double csm_mesh_winding_exact(const csm_mesh *m, const double p[3])
{
    double sum = 0;
    for (int32_t t = 0; t < m->nt; t++) sum += solid_angle(m, t, p);
    return sum / (4.0 * CSM_PI);
}

double csm_mesh_winding(const csm_mesh *m, const double p[3])
{
    if (m->nnode == 0) return csm_mesh_winding_exact(m, p);
    int32_t stack[128];
    int top = 0;
    double sum = 0;
    stack[top++] = 0;
    while (top > 0) {
        const csm_mesh_node *nd = &m->node[stack[--top]];
        double d[3] = {nd->centre[0] - p[0], nd->centre[1] - p[1], nd->centre[2] - p[2]};
        double dist2 = csm_v3_dot(d, d);
        double far = FAR_FIELD_RADII * nd->radius;
        if (dist2 > far * far) {
            /* Barill et al. 2018 Eq 11, first order: Omega ~ N . (c - p) / |c - p|^3 */
            sum += csm_v3_dot(nd->normal, d) / (dist2 * sqrt(dist2));
        } else if (nd->count > 0) {
            for (int32_t k = nd->first; k < nd->first + nd->count; k++) sum += solid_angle(m, m->order[k], p);
        } else {
            stack[top++] = nd->left; /* a median-split tree over < 2^31 triangles is < 128 deep */
            stack[top++] = nd->right;
        }
    }
    return sum / (4.0 * CSM_PI);
}

int csm_mesh_inside(const csm_mesh *m, const double p[3]) { return fabs(csm_mesh_winding(m, p)) >= 0.5; }

/* csm_mesh_winding of n <= CSM_LANES points in one walk of the tree. The walk is csm_mesh_winding's
   (a node, then its right subtree, then its left); each point leaves it where its own walk would,
   at a far node (that point's far-field term) or a leaf (its triangles one by one), so each point
   adds the same terms in the same order: the same bits. Nearby points share most of the walk, and
   a node's test is one vector operation for all of them. */
CSM_CLONES void csm_mesh_winding_lanes(const csm_mesh *m, const double *p, int n, double *w)
{
    if (m->nnode == 0 || n < 1 || n > CSM_LANES) {
        for (int l = 0; l < n; l++) w[l] = csm_mesh_winding(m, &p[3 * l]);
        return;
    }
    csm_v8d px, py, pz, sum = csm_v8d_set1(0.0);
    csm_v8l live;
    for (int l = 0; l < CSM_LANES; l++) {
        const double *q = &p[3 * (l < n ? l : 0)]; /* idle lanes repeat the first point */
        px[l] = q[0], py[l] = q[1], pz[l] = q[2], live[l] = l < n ? -1 : 0;
    }
    int32_t stack[128];
    csm_v8l lanes[128]; /* the points that go down that subtree */
    int top = 0;
    stack[top] = 0;
    lanes[top++] = live;
    while (top > 0) {
        top--;
        const csm_mesh_node *nd = &m->node[stack[top]];
        csm_v8l in = lanes[top];
        double far = FAR_FIELD_RADII * nd->radius;
        csm_v8d dx = nd->centre[0] - px, dy = nd->centre[1] - py, dz = nd->centre[2] - pz;
        csm_v8d dist2 = dx * dx + dy * dy + dz * dz;
        csm_v8l is_far = in & (dist2 > far * far), near = in & ~is_far;
        if (!csm_v8l_all(~is_far)) {
            /* Barill et al. 2018 Eq 11, first order: Omega ~ N . (c - p) / |c - p|^3 */
            csm_v8d dot = nd->normal[0] * dx + nd->normal[1] * dy + nd->normal[2] * dz;
            csm_v8d term = dot / (dist2 * csm_v8d_sqrt(dist2));
            sum = csm_v8d_select(is_far, sum + term, sum);
        }
        if (csm_v8l_all(~near)) continue;
        if (nd->count > 0) {
            for (int l = 0; l < CSM_LANES; l++) {
                if (!near[l]) continue;
                double q[3] = {px[l], py[l], pz[l]}, t = sum[l];
                for (int32_t k = nd->first; k < nd->first + nd->count; k++) t += solid_angle(m, m->order[k], q);
                sum[l] = t;
            }
        } else {
            stack[top] = nd->left;
            lanes[top++] = near;
            stack[top] = nd->right;
            lanes[top++] = near;
        }
    }
    for (int l = 0; l < n; l++) w[l] = sum[l] / (4.0 * CSM_PI);
}

/* ------------------------------------------------------------------------------------------ */
/* Distance: the point of a triangle nearest to p, by the region of the triangle's plane p
   projects into (Voronoi regions of the vertices, edges and face, as in Ericson's "Real-Time
   Collision Detection" Sec 5.1.5). */

static void closest_on_triangle(const double p[3], const double a[3], const double b[3], const double c[3],
                                double q[3])
{
    double ab[3], ac[3], ap[3];
    for (int d = 0; d < 3; d++) ab[d] = b[d] - a[d], ac[d] = c[d] - a[d], ap[d] = p[d] - a[d];
    double d1 = csm_v3_dot(ab, ap), d2 = csm_v3_dot(ac, ap);
    if (d1 <= 0 && d2 <= 0) { /* vertex a */
        memcpy(q, a, 3 * sizeof *q);
        return;
    }
    double bp[3];
    for (int d = 0; d < 3; d++) bp[d] = p[d] - b[d];
    double d3 = csm_v3_dot(ab, bp), d4 = csm_v3_dot(ac, bp);
    if (d3 >= 0 && d4 <= d3) { /* vertex b */
        memcpy(q, b, 3 * sizeof *q);
        return;
    }
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) { /* edge ab */
        double s = d1 / (d1 - d3);
        for (int d = 0; d < 3; d++) q[d] = a[d] + s * ab[d];
        return;
    }
    double cp[3];
    for (int d = 0; d < 3; d++) cp[d] = p[d] - c[d];
    double d5 = csm_v3_dot(ab, cp), d6 = csm_v3_dot(ac, cp);
    if (d6 >= 0 && d5 <= d6) { /* vertex c */
        memcpy(q, c, 3 * sizeof *q);
        return;
    }
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) { /* edge ac */
        double s = d2 / (d2 - d6);
        for (int d = 0; d < 3; d++) q[d] = a[d] + s * ac[d];
        return;
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) { /* edge bc */
        double s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        for (int d = 0; d < 3; d++) q[d] = b[d] + s * (c[d] - b[d]);
        return;
    }
    double den = va + vb + vc; /* inside the face: barycentric (va, vb, vc) / den */
    if (!(den > 0)) {          /* a degenerate triangle: its nearest vertex */
        double best = INFINITY;
        const double *v[3] = {a, b, c};
        for (int k = 0; k < 3; k++) {
            double e[3] = {p[0] - v[k][0], p[1] - v[k][1], p[2] - v[k][2]}, l = csm_v3_dot(e, e);
            if (l < best) best = l, memcpy(q, v[k], 3 * sizeof *q);
        }
        return;
    }
    double s = vb / den, t = vc / den;
    for (int d = 0; d < 3; d++) q[d] = a[d] + s * ab[d] + t * ac[d];
}

static double tri_distance2(const csm_mesh *m, int32_t t, const double p[3], double q[3])
{
    const int32_t *v = &m->tri[3 * t];
    closest_on_triangle(p, &m->v[3 * v[0]], &m->v[3 * v[1]], &m->v[3 * v[2]], q);
    double e[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
    return csm_v3_dot(e, e);
}

double csm_mesh_closest(const csm_mesh *m, const double p[3], double q[3], int32_t *tri)
{
    double best = INFINITY;
    *tri = -1;
    if (m->nnode == 0) {
        for (int32_t t = 0; t < m->nt; t++) {
            double y[3], d2 = tri_distance2(m, t, p, y);
            if (d2 < best) best = d2, *tri = t, memcpy(q, y, 3 * sizeof *q);
        }
        return sqrt(best);
    }
    /* depth first, the nearer child first; a node whose sphere lies farther than the best so far
       holds nothing nearer (every vertex of its triangles lies within its radius) */
    int32_t stack[128];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const csm_mesh_node *nd = &m->node[stack[--top]];
        double e[3] = {nd->centre[0] - p[0], nd->centre[1] - p[1], nd->centre[2] - p[2]};
        double near = sqrt(csm_v3_dot(e, e)) - nd->radius;
        if (near > 0 && near * near >= best) continue;
        if (nd->count > 0) {
            for (int32_t k = nd->first; k < nd->first + nd->count; k++) {
                double y[3], d2 = tri_distance2(m, m->order[k], p, y);
                if (d2 < best) best = d2, *tri = m->order[k], memcpy(q, y, 3 * sizeof *q);
            }
            continue;
        }
        const csm_mesh_node *l = &m->node[nd->left], *r = &m->node[nd->right];
        double el[3] = {l->centre[0] - p[0], l->centre[1] - p[1], l->centre[2] - p[2]};
        double er[3] = {r->centre[0] - p[0], r->centre[1] - p[1], r->centre[2] - p[2]};
        int left_first = sqrt(csm_v3_dot(el, el)) - l->radius <= sqrt(csm_v3_dot(er, er)) - r->radius;
        stack[top++] = left_first ? nd->right : nd->left; /* popped second */
        stack[top++] = left_first ? nd->left : nd->right;
    }
    return sqrt(best);
}

/* Where the segment p0 -> p1 first crosses triangle t, as a fraction of it in [0, 1], or -1 when it
   does not (Möller and Trumbore 1997; a segment in the triangle's plane does not cross it). */
static double tri_crossing(const csm_mesh *m, int32_t t, const double p0[3], const double d[3])
{
    const int32_t *v = &m->tri[3 * t];
    const double *a = &m->v[3 * v[0]], *b = &m->v[3 * v[1]], *c = &m->v[3 * v[2]];
    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double pv[3], qv[3], tv[3] = {p0[0] - a[0], p0[1] - a[1], p0[2] - a[2]};
    csm_v3_cross(d, e2, pv);
    double det = csm_v3_dot(e1, pv);
    if (det == 0) return -1;
    double u = csm_v3_dot(tv, pv) / det;
    if (u < 0 || u > 1) return -1;
    csm_v3_cross(tv, e1, qv);
    double w = csm_v3_dot(d, qv) / det;
    if (w < 0 || u + w > 1) return -1;
    double at = csm_v3_dot(e2, qv) / det;
    return at >= 0 && at <= 1 ? at : -1;
}

double csm_mesh_segment_first(const csm_mesh *m, const double p0[3], const double p1[3], int32_t *tri)
{
    double d[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]}, dd = csm_v3_dot(d, d), best = INFINITY;
    *tri = -1;
    if (m->nnode == 0) {
        for (int32_t t = 0; t < m->nt; t++) {
            double at = tri_crossing(m, t, p0, d);
            if (at >= 0 && at < best) best = at, *tri = t;
        }
        return *tri >= 0 ? best : -1;
    }
    /* a node whose sphere the segment does not reach holds no triangle it crosses */
    int32_t stack[128];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const csm_mesh_node *nd = &m->node[stack[--top]];
        double r[3] = {nd->centre[0] - p0[0], nd->centre[1] - p0[1], nd->centre[2] - p0[2]};
        double along = dd > 0 ? fmin(fmax(csm_v3_dot(r, d) / dd, 0.0), fmin(best, 1.0)) : 0.0;
        for (int e = 0; e < 3; e++) r[e] -= along * d[e];
        if (csm_v3_dot(r, r) > nd->radius * nd->radius) continue;
        if (nd->count > 0) {
            for (int32_t k = nd->first; k < nd->first + nd->count; k++) {
                double at = tri_crossing(m, m->order[k], p0, d);
                if (at >= 0 && (at < best || (at == best && m->order[k] < *tri))) best = at, *tri = m->order[k];
            }
            continue;
        }
        stack[top++] = nd->right;
        stack[top++] = nd->left;
    }
    return *tri >= 0 ? best : -1;
}
