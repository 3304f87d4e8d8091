#define _DEFAULT_SOURCE /* mkstemps, fdopen */
/* Mesh files, the generalized winding number, mesh shapes and target particle counts. */
#include "check.h"

#include "commands.h"
#include "config.h"
#include "csm_math.h"
#include "geometry.h"
#include "kernel.h"
#include "mesh.h"
#include "rng.h"
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The unit cube [-1/2, 1/2]^3 with outward, counter-clockwise faces: 8 vertices, 12 triangles. */
static const double CUBE_V[24] = {-0.5, -0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, -0.5, -0.5, 0.5, -0.5,
                                  -0.5, -0.5, 0.5,  0.5, -0.5, 0.5,  0.5, 0.5, 0.5,  -0.5, 0.5, 0.5};
static const int32_t CUBE_QUADS[24] = {0, 3, 2, 1, 4, 5, 6, 7, 0, 1, 5, 4, 2, 3, 7, 6, 1, 2, 6, 5, 0, 4, 7, 3};

static void cube_triangles(int32_t tri[36], int skip_face, int flip_face)
{
    int t = 0;
    for (int f = 0; f < 6; f++) {
        if (f == skip_face) continue;
        const int32_t *q = &CUBE_QUADS[4 * f];
        int32_t a[6] = {q[0], q[1], q[2], q[0], q[2], q[3]};
        if (f == flip_face) {
            int32_t b[6] = {q[0], q[2], q[1], q[0], q[3], q[2]};
            memcpy(a, b, sizeof a);
        }
        memcpy(&tri[3 * t], a, sizeof a);
        t += 2;
    }
}

/* A mesh from arrays with its tree, ready for winding numbers. */
static void mesh_with_tree(csm_mesh *m, const double *v, int32_t nv, const int32_t *tri, int32_t nt)
{
    assert_int_equal(csm_mesh_from_arrays(m, v, nv, tri, nt), 0);
    assert_int_equal(csm_mesh_build_tree(m), 0);
}

/* A text file in /tmp with the given suffix; returns its malloc'd path. */
static char *write_file(const char *suffix, const char *text)
{
    char *path = malloc(64);
    snprintf(path, 64, "/tmp/csm_mesh_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_closed_mesh_winding(void **state)
{
    (void)state;
    int32_t tri[36];
    cube_triangles(tri, -1, -1);
    csm_mesh m;
    mesh_with_tree(&m, CUBE_V, 8, tri, 12);
    assert_close(csm_mesh_volume(&m), 1.0, 1e-15);
    double centre[3] = {0, 0, 0}, far[3] = {3, -2, 1}, near_in[3] = {0.49, 0.3, -0.2}, near_out[3] = {0.51, 0.3, -0.2};
    assert_close(csm_mesh_winding_exact(&m, centre), 1.0, 1e-12);
    assert_close(csm_mesh_winding_exact(&m, far), 0.0, 1e-12);
    assert_close(csm_mesh_winding_exact(&m, near_in), 1.0, 1e-12);
    assert_close(csm_mesh_winding_exact(&m, near_out), 0.0, 1e-12);
    /* the same cube inside out: w = -1 inside, and the inside test does not care */
    for (int t = 0; t < 12; t++) {
        int32_t s = tri[3 * t + 1];
        tri[3 * t + 1] = tri[3 * t + 2];
        tri[3 * t + 2] = s;
    }
    csm_mesh inv;
    mesh_with_tree(&inv, CUBE_V, 8, tri, 12);
    assert_close(csm_mesh_winding(&inv, centre), -1.0, 1e-12);
    assert_true(csm_mesh_inside(&inv, near_in));
    assert_false(csm_mesh_inside(&inv, near_out));
    csm_mesh_free(&m);
    csm_mesh_free(&inv);
}

static void test_open_and_misoriented_mesh(void **state)
{
    (void)state;
    int32_t tri[36];
    /* top face (+z, index 1) missing: from the centre each face subtends 4 pi / 6 */
    cube_triangles(tri, 1, -1);
    csm_mesh m;
    mesh_with_tree(&m, CUBE_V, 8, tri, 10);
    double centre[3] = {0, 0, 0}, above_hole[3] = {0, 0, 0.6}, low[3] = {0.2, -0.3, -0.4};
    assert_close(csm_mesh_winding_exact(&m, centre), 5.0 / 6.0, 1e-12);
    assert_true(csm_mesh_inside(&m, centre));
    assert_true(csm_mesh_inside(&m, low));
    assert_false(csm_mesh_inside(&m, above_hole));
    csm_mesh_free(&m);
    /* one face turned the wrong way: the centre still reads 4/6 */
    cube_triangles(tri, -1, 2);
    mesh_with_tree(&m, CUBE_V, 8, tri, 12);
    assert_close(csm_mesh_winding(&m, centre), 4.0 / 6.0, 1e-12);
    assert_true(csm_mesh_inside(&m, centre));
    csm_mesh_free(&m);
}

/* The unit sphere as a cube of N x N quads a face pushed out onto it, wound outwards; v and tri
   are malloc'd. */
static void sphere_mesh(int N, double **vout, int32_t **tout, int32_t *nvout, int32_t *ntout)
{
    double *v = malloc(sizeof *v * 3 * 6 * (size_t)((N + 1) * (N + 1)));
    int32_t *tri = malloc(sizeof *tri * 3 * 6 * 2 * (size_t)(N * N));
    int32_t nv = 0, nt = 0;
    for (int f = 0; f < 6; f++) {
        int axis = f / 2, sign = f % 2 ? 1 : -1, b = (axis + 1) % 3, c = (axis + 2) % 3;
        int32_t base = nv;
        for (int i = 0; i <= N; i++)
            for (int j = 0; j <= N; j++) {
                double p[3];
                p[axis] = sign;
                p[b] = -1 + 2.0 * i / N;
                p[c] = -1 + 2.0 * j / N;
                double len = csm_v3_norm(p);
                for (int d = 0; d < 3; d++) v[3 * nv + d] = p[d] / len;
                nv++;
            }
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                int32_t a = base + i * (N + 1) + j, bb = a + N + 1;
                int32_t q[6] = {a, bb, bb + 1, a, bb + 1, a + 1};
                if (sign < 0) {
                    int32_t r[6] = {a, bb + 1, bb, a, a + 1, bb + 1};
                    memcpy(q, r, sizeof q);
                }
                memcpy(&tri[3 * nt], q, sizeof q);
                nt += 2;
            }
    }
    *vout = v, *tout = tri, *nvout = nv, *ntout = nt;
}

/* csm_mesh_winding_lanes walks the tree once for up to 8 points; each must get csm_mesh_winding's
   value bit for bit: packets of 1 to 8 points, near one another and scattered, inside, outside,
   within a hair of the surface and on vertices, on the sphere mesh (many levels) and on a mesh
   too small for a tree. */
static void test_winding_lanes_are_winding(void **state)
{
    (void)state;
    double *v;
    int32_t *tri, nv, nt;
    sphere_mesh(24, &v, &tri, &nv, &nt);
    csm_mesh m, flat;
    mesh_with_tree(&m, v, nv, tri, nt);
    double one_v[9];
    const int32_t one_tri[3] = {0, 1, 2};
    for (int j = 0; j < 3; j++) memcpy(&one_v[3 * j], &v[3 * tri[j]], sizeof(double) * 3);
    assert_int_equal(csm_mesh_from_arrays(&flat, one_v, 3, one_tri, 1), 0); /* one triangle, no tree */
    csm_rng rng;
    csm_rng_seed(&rng, 29, 0);
    int64_t differ = 0, far_and_near = 0;
    for (int k = 0; k < 600; k++) {
        int n = 1 + k % 8;
        double p[24], w[8], centre[3], spread = k % 3 == 0 ? 1.5 : k % 3 == 1 ? 0.05 : 1e-9;
        for (int d = 0; d < 3; d++) centre[d] = 2.4 * csm_rng_uniform(&rng) - 1.2;
        for (int l = 0; l < n; l++)
            for (int d = 0; d < 3; d++) p[3 * l + d] = centre[d] + spread * (2.0 * csm_rng_uniform(&rng) - 1.0);
        if (k % 5 == 0) memcpy(&p[0], &v[3 * (k % nv)], sizeof(double) * 3); /* on a vertex */
        const csm_mesh *mm = k % 50 == 7 ? &flat : &m;
        csm_mesh_winding_lanes(mm, p, n, w);
        int in = 0;
        for (int l = 0; l < n; l++) {
            double one = csm_mesh_winding(mm, &p[3 * l]);
            differ += memcmp(&one, &w[l], sizeof one) != 0;
            in += fabs(one) >= 0.5;
        }
        far_and_near += in > 0 && in < n;
    }
    assert_int_equal(differ, 0);
    assert_true(far_and_near > 20); /* packets that split between inside and outside */
    csm_mesh_free(&m);
    csm_mesh_free(&flat);
    free(v);
    free(tri);
}

/* A finely triangulated sphere (a cube's faces split into a grid, projected), so the tree has
   many levels; the far-field approximation must classify like the exact sum. */
static void test_fast_winding_matches_exact(void **state)
{
    (void)state;
    double *v;
    int32_t *tri, nv, nt;
    sphere_mesh(24, &v, &tri, &nv, &nt);
    csm_mesh m;
    mesh_with_tree(&m, v, nv, tri, nt);
    csm_rng rng;
    csm_rng_seed(&rng, 11, 0);
    double worst = 0;
    for (int k = 0; k < 400; k++) {
        double p[3];
        for (int d = 0; d < 3; d++) p[d] = 3.0 * csm_rng_uniform(&rng) - 1.5;
        double exact = csm_mesh_winding_exact(&m, p), fast = csm_mesh_winding(&m, p);
        worst = fmax(worst, fabs(exact - fast));
        /* points near the surface are within round-off of 1/2 either way; elsewhere they agree */
        double r = csm_v3_norm(p);
        if (fabs(r - 1.0) > 0.02) {
            assert_int_equal(fabs(exact) >= 0.5, r < 1.0);
            assert_int_equal(csm_mesh_inside(&m, p), r < 1.0);
        }
    }
    assert_true(worst < 0.02);

    /* the nearest triangle: the tree's search finds the same distance as a look at every
       triangle, and it is the distance to the unit sphere within the mesh's chord error */
    csm_mesh flat;
    assert_int_equal(csm_mesh_from_arrays(&flat, v, nv, tri, nt), 0); /* no tree: every triangle */
    double sphere_gap = 0;
    for (int k = 0; k < 400; k++) {
        double p[3], q[3], qf[3];
        int32_t t, tf;
        for (int d = 0; d < 3; d++) p[d] = 3.0 * csm_rng_uniform(&rng) - 1.5;
        double dist = csm_mesh_closest(&m, p, q, &t), brute = csm_mesh_closest(&flat, p, qf, &tf);
        assert_true(dist == brute);
        double e[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
        assert_close(csm_v3_norm(e), dist, 1e-15);
        sphere_gap = fmax(sphere_gap, fabs(dist - fabs(csm_v3_norm(p) - 1.0)));
    }
    printf("nearest triangle: the tree equals every triangle; |distance - |r - 1|| <= %.2e\n", sphere_gap);
    assert_true(sphere_gap < 0.01); /* the flat triangles of 24 x 24 a face sag about 0.002 below the sphere */
    assert_true(csm_mesh_signed_volume(&m) > 0); /* wound outwards */
    csm_mesh_free(&flat);
    csm_mesh_free(&m);
    free(v);
    free(tri);
}

/* The tree's triangle order by its definition: from the triangles in index order, each node of
   more than 8 sorts its triangles by (centroid along the longest extent of their centroids,
   index) and gives the lower half to its left child. */
static void reference_order(const double *cen, int32_t *order, int32_t first, int32_t count)
{
    if (count <= 8) return;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int32_t k = first; k < first + count; k++)
        for (int d = 0; d < 3; d++) {
            lo[d] = fmin(lo[d], cen[3 * order[k] + d]);
            hi[d] = fmax(hi[d], cen[3 * order[k] + d]);
        }
    int axis = 0;
    for (int d = 1; d < 3; d++)
        if (hi[d] - lo[d] > hi[axis] - lo[axis]) axis = d;
    for (int32_t a = first + 1; a < first + count; a++) /* insertion sort: plain, and stable */
        for (int32_t b = a; b > first; b--) {
            int32_t t = order[b], u = order[b - 1];
            double kt = cen[3 * t + axis], ku = cen[3 * u + axis];
            if (ku < kt || (ku == kt && u < t)) break;
            order[b] = u;
            order[b - 1] = t;
        }
    reference_order(cen, order, first, count / 2);
    reference_order(cen, order, first + count / 2, count - count / 2);
}

/* The tree is built from three orders sorted once (one per axis) and split without sorting
   again; its triangle order must be the definition's, the order in which a leaf's winding
   terms are summed. Meshes with many equal centroid coordinates (the sphere of quads, the
   cube) test the ties; a row of triangles along x, two of them with centroids at x = +0 and
   x = -0 (equal, so in index order), tests the sign of zero. */
static void test_tree_order_is_the_definition(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        double *v;
        int32_t *tri, nv, nt;
        if (t < 2) {
            sphere_mesh(t == 0 ? 24 : 7, &v, &tri, &nv, &nt);
        } else if (t == 3) {
            nt = 20, nv = 3 * nt;
            v = malloc(sizeof(double) * 3 * (size_t)nv);
            tri = malloc(sizeof(int32_t) * 3 * (size_t)nt);
            for (int32_t k = 0; k < nt; k++) {
                double x = k == 9 ? 0.0 : k == 12 ? -0.0 : (double)(k % 7) - 3.0;
                for (int j = 0; j < 3; j++) {
                    double *q = &v[3 * (3 * k + j)];
                    q[0] = x, q[1] = j == 1 ? 0.1 : 0.0, q[2] = j == 2 ? 0.1 : 0.0;
                    tri[3 * k + j] = 3 * k + j;
                }
            }
        } else {
            nv = 8, nt = 12;
            v = malloc(sizeof CUBE_V);
            tri = malloc(sizeof(int32_t) * 36);
            memcpy(v, CUBE_V, sizeof CUBE_V);
            cube_triangles(tri, -1, -1);
        }
        csm_mesh m;
        mesh_with_tree(&m, v, nv, tri, nt);
        double *cen = malloc(sizeof *cen * 3 * (size_t)nt);
        int32_t *order = malloc(sizeof *order * (size_t)nt);
        for (int32_t k = 0; k < nt; k++) {
            order[k] = k;
            for (int d = 0; d < 3; d++)
                cen[3 * k + d] = (v[3 * tri[3 * k] + d] + v[3 * tri[3 * k + 1] + d] + v[3 * tri[3 * k + 2] + d]) / 3.0;
        }
        reference_order(cen, order, 0, nt);
        assert_memory_equal(m.order, order, sizeof *order * (size_t)nt);
        int32_t leaves = 0;
        for (int32_t k = 0; k < m.nnode; k++) leaves += m.node[k].count;
        assert_int_equal(leaves, nt); /* every triangle in exactly one leaf */
        csm_mesh_free(&m);
        free(cen);
        free(order);
        free(v);
        free(tri);
    }
}

static void test_off_and_obj_files(void **state)
{
    (void)state;
    /* quads, a comment, counts on the header line, colours after a face */
    char *off = write_file(".off", "OFF 8 6 0\n# a cube of quads\n"
                                   "-0.5 -0.5 -0.5\n0.5 -0.5 -0.5\n0.5 0.5 -0.5\n-0.5 0.5 -0.5\n"
                                   "-0.5 -0.5 0.5\n0.5 -0.5 0.5\n0.5 0.5 0.5\n-0.5 0.5 0.5\n"
                                   "4 0 3 2 1\n4 4 5 6 7 255 0 0\n4 0 1 5 4\n4 2 3 7 6\n4 1 2 6 5\n4 0 4 7 3\n");
    /* quads and triangles, v/vt/vn items, negative indices, other records skipped */
    char *obj = write_file(".obj", "o cube\nv -0.5 -0.5 -0.5\nv 0.5 -0.5 -0.5\nv 0.5 0.5 -0.5\nv -0.5 0.5 -0.5\n"
                                   "v -0.5 -0.5 0.5\nv 0.5 -0.5 0.5\nv 0.5 0.5 0.5\nv -0.5 0.5 0.5\nvn 0 0 1\n"
                                   "usemtl x\nf 1/1/1 4/1/1 3/1/1 2/1/1\nf 5//1 6//1 7//1 8//1\nf 1 2 6\nf 1 6 5\n"
                                   "f -6 -5 -1 -2\nf 2 3 7 6\ns off\nf -8 -4 -1 -5\n");
    csm_error err;
    csm_mesh a, b;
    if (csm_mesh_load(&a, off, &err)) fail_msg("%s", err.msg);
    if (csm_mesh_load(&b, obj, &err)) fail_msg("%s", err.msg);
    assert_int_equal(csm_mesh_build_tree(&a), 0);
    assert_int_equal(csm_mesh_build_tree(&b), 0);
    assert_int_equal(a.nv, 8);
    assert_int_equal(a.nt, 12);
    assert_int_equal(b.nt, 12);
    assert_close(csm_mesh_volume(&a), 1.0, 1e-15);
    assert_close(csm_mesh_volume(&b), 1.0, 1e-15);
    double centre[3] = {0.1, -0.2, 0.3};
    assert_close(csm_mesh_winding(&a, centre), 1.0, 1e-12);
    assert_close(csm_mesh_winding(&b, centre), 1.0, 1e-12);
    csm_mesh_free(&a);
    csm_mesh_free(&b);
    unlink(off);
    unlink(obj);
    free(off);
    free(obj);
}

/* Every malformed file is refused with its file and line in the message. */
static void test_malformed_meshes(void **state)
{
    (void)state;
    static const struct {
        const char *suffix, *text, *where, *what;
    } cases[] = {
        {".off", "", ":1:", "empty"},
        {".off", "OFF\n3 1 0\n0 0 0\n1 0 0\n", ":4:", "truncated"},
        {".off", "OFF\n3 1 0\n0 0 0\n1 nan 0\n0 1 0\n3 0 1 2\n", ":4:", "not finite"},
        {".off", "OFF\n3 1 0\n0 0 0\n1 1e400 0\n0 1 0\n3 0 1 2\n", ":4:", "not finite"},
        {".off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n", ":6:", "out of range"},
        {".off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n", ":6:", "at least 3"},
        {".off", "OFF\n3 0 0\n0 0 0\n1 0 0\n0 1 0\n", ":2:", "no faces"},
        {".off", "OFF\n3 1 0\n0 0 0\n1 x 0\n0 1 0\n3 0 1 2\n", ":4:", "not a number"},
        {".off", "PLY\n", ":1:", "not an OFF header"},
        {".obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", ":4:", "out of range"},
        {".obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n", ":3:", "no faces"},
        {".obj", "v 0 0 0\nv 1 0\n", ":2:", "line ends early"},
        {".obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", ":4:", "at least 3"},
        {".obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 0 2\n", ":4:", "out of range"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *path = write_file(cases[k].suffix, cases[k].text);
        csm_mesh m;
        csm_error err;
        assert_int_not_equal(csm_mesh_load(&m, path, &err), 0);
        assert_int_equal(err.code, CSM_EXIT_BAD_INPUT);
        char where[96];
        snprintf(where, sizeof where, "%s%s", path, cases[k].where);
        if (!strstr(err.msg, where) || !strstr(err.msg, cases[k].what))
            fail_msg("case %zu: '%s' lacks '%s' or '%s'", k, err.msg, where, cases[k].what);
        unlink(path);
        free(path);
    }
    csm_mesh m;
    csm_error err;
    assert_int_not_equal(csm_mesh_load(&m, "/nonexistent/bunny.off", &err), 0);
    assert_non_null(strstr(err.msg, "/nonexistent/bunny.off"));
}

static void load(const char *yaml, csm_config *cfg)
{
    csm_register_builtins();
    char *path = write_file(".yaml", yaml);
    csm_error err;
    int rc = csm_config_load(path, NULL, 0, cfg, &err);
    unlink(path);
    free(path);
    if (rc) fail_msg("%s", err.msg);
}

/* A cube mesh sampled on a grid gives the box shape's samples; rotate, fit and scale place it. */
static void test_mesh_shape(void **state)
{
    (void)state;
    char *off = write_file(".off", "OFF\n8 6 0\n0 0 0\n2 0 0\n2 4 0\n0 4 0\n0 0 1\n2 0 1\n2 4 1\n0 4 1\n"
                                   "4 0 3 2 1\n4 4 5 6 7\n4 0 1 5 4\n4 2 3 7 6\n4 1 2 6 5\n4 0 4 7 3\n");
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "objects:\n  - shape: {type: mesh, path: %s, rotate: [0, 0, 90], fit: unit_box, scale: 2}\n"
             "    sampling: {type: grid, spacing: 0.3}\n", off);
    csm_config cfg;
    load(yaml, &cfg);
    csm_shape sh;
    csm_error err;
    if (csm_shape_open(&sh, &cfg.objects[0], 0, &err)) fail_msg("%s", err.msg);
    /* 2 x 4 x 1 turned 90 degrees about z is 4 x 2 x 1; fit to a longest edge 1, then doubled */
    assert_close(sh.half[0], 1.0, 1e-12);
    assert_close(sh.half[1], 0.5, 1e-12);
    assert_close(sh.half[2], 0.25, 1e-12);
    assert_close(sh.volume, 1.0, 1e-12);
    csm_shape_close(&sh);
    double *pts, vol, h;
    int32_t n;
    if (csm_sample_object(&cfg.objects[0], 0, 1, &pts, &n, &vol, &h, &err)) fail_msg("%s", err.msg);
    /* grid points strictly inside: 0, +-0.3, +-0.6, +-0.9 in x; +-0.15, +-0.45 in y; +-0.15 in z */
    assert_int_equal(n, 7 * 4 * 2);
    assert_close(h, 0.3, 0);
    free(pts);
    csm_config_free(&cfg);
    /* Poisson samples of the mesh are the same points on 1 and 2 threads (the inside tests run
       in parallel) */
    snprintf(yaml, sizeof yaml,
             "objects:\n  - shape: {type: mesh, path: %s, rotate: [0, 0, 90], fit: unit_box, scale: 2}\n"
             "    sampling: {type: poisson, particles: 3000}\n", off);
    load(yaml, &cfg);
    double *by[2];
    int32_t nby[2];
    for (int t = 0; t < 2; t++) {
        csm_set_threads(t + 1);
        if (csm_sample_object(&cfg.objects[0], 0, 1, &by[t], &nby[t], &vol, &h, &err)) fail_msg("%s", err.msg);
    }
    csm_set_threads(0);
    assert_true(abs(nby[0] - 3000) < 60);
    assert_int_equal(nby[1], nby[0]);
    assert_memory_equal(by[1], by[0], sizeof(double) * 3 * (size_t)nby[0]);
    free(by[0]);
    free(by[1]);
    csm_config_free(&cfg);
    unlink(off);
    free(off);
}

/* Objects with the same mesh file placed the same way share one loaded mesh, kept until the last
   of them is sampled; each must still get the particles it gets alone, and a mesh placed
   otherwise (scaled) must not be shared. Objects 3 and 4 use the meshes of objects 0 and 2 after
   another was loaded. */
static void test_objects_share_a_mesh(void **state)
{
    (void)state;
    char *off = write_file(".off", "OFF\n8 6 0\n0 0 0\n2 0 0\n2 4 0\n0 4 0\n0 0 1\n2 0 1\n2 4 1\n0 4 1\n"
                                   "4 0 3 2 1\n4 4 5 6 7\n4 0 1 5 4\n4 2 3 7 6\n4 1 2 6 5\n4 0 4 7 3\n");
    char yaml[2048];
    const char *obj = "  - shape: {type: mesh, path: %s, rotate: [0, 0, 90], fit: unit_box, scale: %s}\n"
                      "    sampling: {type: poisson, particles: 400}\n";
    enum { OBJECTS = 5 };
    char one[OBJECTS][256];
    const char *scales[OBJECTS] = {"2", "2", "1.5", "2", "1.5"};
    for (int k = 0; k < OBJECTS; k++) snprintf(one[k], sizeof one[k], obj, off, scales[k]);
    snprintf(yaml, sizeof yaml, "objects:\n%s%s%s%s%s", one[0], one[1], one[2], one[3], one[4]);
    csm_config cfg;
    load(yaml, &cfg);
    assert_true(csm_shape_same_mesh(&cfg.objects[0], &cfg.objects[1]));
    assert_false(csm_shape_same_mesh(&cfg.objects[0], &cfg.objects[2]));
    csm_sim sim;
    csm_error err;
    if (csm_sim_create(&cfg, &sim, &err)) fail_msg("%s", err.msg);
    const csm_particles *P = &sim.w.P;
    for (int k = 0; k < OBJECTS; k++) {
        double *pts, vol;
        int32_t n;
        if (csm_sample_object(&cfg.objects[k], k, cfg.seed, &pts, &n, &vol, NULL, &err)) fail_msg("%s", err.msg);
        int32_t first = sim.w.object_first[k];
        assert_int_equal(sim.w.object_first[k + 1] - first, n);
        assert_memory_equal(&P->rest[3 * first], pts, sizeof(double) * 3 * (size_t)n); /* at position 0 */
        free(pts);
    }
    csm_sim_destroy(&sim);
    csm_config_free(&cfg);
    unlink(off);
    free(off);
}

/* `particles` picks the spacing: counts land on or next to the target. */
static void test_target_particle_count(void **state)
{
    (void)state;
    static const char *yaml[] = {
        "objects:\n  - shape: {type: sphere, radius: 0.5}\n    sampling: {type: poisson, particles: 1500}\n",
        "objects:\n  - shape: {type: torus, major: 0.5, minor: 0.2}\n    sampling: {type: grid, particles: 800}\n",
    };
    const double tolerance[] = {0.002, 0.05};
    for (int k = 0; k < 2; k++) {
        csm_config cfg;
        load(yaml[k], &cfg);
        double *pts, vol, h;
        int32_t n;
        csm_error err;
        if (csm_sample_object(&cfg.objects[0], 0, 4, &pts, &n, &vol, &h, &err)) fail_msg("%s", err.msg);
        int32_t target = ((const csm_sampling_params *)csm_cfg_params(&cfg.objects[0].sampling))->particles;
        if (fabs((double)n - target) > tolerance[k] * target) fail_msg("case %d: %d particles for %d", k, n, target);
        /* the spacing reported is the one sampled with: no two samples closer (Poisson), and
           about one sample per h^3 of volume (grid) */
        if (k == 0) {
            double closest = 1e9;
            for (int32_t i = 0; i < n; i++)
                for (int32_t j = i + 1; j < n; j++) {
                    double d[3] = {pts[3 * i] - pts[3 * j], pts[3 * i + 1] - pts[3 * j + 1], pts[3 * i + 2] - pts[3 * j + 2]};
                    closest = fmin(closest, csm_v3_norm(d));
                }
            assert_true(closest >= h * (1 - 1e-12));
            assert_true(closest < 1.2 * h);
        } else {
            assert_close(n * h * h * h / vol, 1.0, 0.1);
        }
        free(pts);
        csm_config_free(&cfg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_mesh_winding),        cmocka_unit_test(test_open_and_misoriented_mesh),
        cmocka_unit_test(test_fast_winding_matches_exact), cmocka_unit_test(test_tree_order_is_the_definition),
        cmocka_unit_test(test_winding_lanes_are_winding), cmocka_unit_test(test_objects_share_a_mesh),
        cmocka_unit_test(test_off_and_obj_files),
        cmocka_unit_test(test_malformed_meshes),           cmocka_unit_test(test_mesh_shape),
        cmocka_unit_test(test_target_particle_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
