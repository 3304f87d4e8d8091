/* Triangle meshes from OFF and OBJ files, and the generalized winding number (Jacobson, Kavan and
   Sorkine-Hornung 2013) as an inside test that survives small holes, flipped faces and an
   inside-out orientation: "sample the bounding box, keep the points inside" on real meshes. */
#ifndef CSM_MESH_H
#define CSM_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct csm_mesh_node {
    double centre[3]; /* area-weighted centroid of the node's triangles */
    double normal[3]; /* sum of the triangles' area vectors A_t = 1/2 (b - a) x (c - a) */
    double radius;    /* every vertex of the node lies within radius of centre */
    int32_t first, count; /* triangles [first, first + count) of the tree's order; count 0: inner */
    int32_t left, right;  /* children, for an inner node */
} csm_mesh_node;

typedef struct csm_mesh {
    int32_t nv, nt;
    double *v;       /* [3 nv] vertex positions */
    int32_t *tri;    /* [3 nt] vertex indices; polygons are fanned into triangles */
    csm_mesh_node *node; /* bounding-volume tree over triangles, node 0 the root */
    int32_t nnode;
    int32_t *order;  /* [nt] triangle indices in tree order */
} csm_mesh;

/* Read an OFF or OBJ file (by its extension, else by its first keyword). Errors name the file
   and line: truncated files, non-finite coordinates, indices out of range, faces of fewer than
   three vertices, files without faces. Build the tree before csm_mesh_winding. */
int csm_mesh_load(csm_mesh *m, const char *path, csm_error *err);
/* The same for a file's text held in memory (len bytes); `name` stands for the file in messages
   and its extension picks the format. */
int csm_mesh_parse(csm_mesh *m, const char *name, const char *text, size_t len, csm_error *err);
/* A mesh from arrays (copied), for generated shapes and tests; no tree yet. */
int csm_mesh_from_arrays(csm_mesh *m, const double *v, int32_t nv, const int32_t *tri, int32_t nt);
void csm_mesh_free(csm_mesh *m);

/* v <- A v + t for every vertex; a tree built before no longer fits: build it again. */
void csm_mesh_transform(csm_mesh *m, const double A[9], const double t[3]);
void csm_mesh_bounds(const csm_mesh *m, double lo[3], double hi[3]);
/* Enclosed volume by the divergence theorem (exact for closed meshes; its absolute value, so an
   inside-out mesh has a positive volume). */
double csm_mesh_volume(const csm_mesh *m);
/* The same with its sign: positive when the faces wind outwards (counter-clockwise seen from
   outside), negative for an inside-out mesh. */
double csm_mesh_signed_volume(const csm_mesh *m);

/* Build the tree csm_mesh_winding and csm_mesh_inside need: once placed, after load and any
   transform. */
int csm_mesh_build_tree(csm_mesh *m);
/* Exact winding number: the sum of the triangles' solid angles over 4 pi. */
double csm_mesh_winding_exact(const csm_mesh *m, const double p[3]);
/* Tree-accelerated winding number: exact near p, a far node's dipole term elsewhere (the exact
   sum when no tree was built). */
double csm_mesh_winding(const csm_mesh *m, const double p[3]);
/* |w| >= 1/2: inside, whatever the orientation. */
int csm_mesh_inside(const csm_mesh *m, const double p[3]);
/* csm_mesh_winding of n <= 8 points p[3 n] into w[n], bit for bit, in one walk of the tree: the
   faster, the nearer the points are to one another. */
void csm_mesh_winding_lanes(const csm_mesh *m, const double *p, int n, double *w);
/* The distance from p to the mesh's nearest triangle: its nearest point q and that triangle's
   index (-1 for a mesh without triangles, which is at infinite distance). Uses the tree when
   built; exact either way. */
double csm_mesh_closest(const csm_mesh *m, const double p[3], double q[3], int32_t *tri);
/* Where the segment p0 -> p1 first crosses a triangle, as a fraction of it in [0, 1], and that
   triangle's index; -1 (and tri -1) when it crosses none. Uses the tree when built. */
double csm_mesh_segment_first(const csm_mesh *m, const double p0[3], const double p1[3], int32_t *tri);
/* Rotate (degrees about x, then y, then z), centre the bounding box at the origin, then scale by
   `scale`, over the longest edge of the bounding box when fit_unit_box (objects' and colliders'
   `rotate`, `fit` and `scale`). Build the tree after. */
void csm_mesh_place(csm_mesh *m, const double rotate[3], int fit_unit_box, double scale);
/* A mesh a config names, ready for queries: found beside the config `src` (csm_find_beside),
   loaded, placed (csm_mesh_place), its tree built, and refused when it encloses no volume.
   `where` starts the message when it is not found ("file:line: objects[0].shape.path"). */
int csm_mesh_open(csm_mesh *m, const char *path, const char *src, const char *where, const double rotate[3],
                  int fit_unit_box, double scale, csm_error *err);

#endif
