/* Shapes, sampling and neighbour queries. */
#ifndef CSM_GEOMETRY_H
#define CSM_GEOMETRY_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "mesh.h"

/* One object's shape, ready for inside tests: its parameters, and for a mesh the loaded,
   transformed and centred triangles. Every shape is centred at the origin of its own frame. */
typedef struct csm_shape {
    const csm_object_cfg *o;
    csm_mesh mesh;   /* CSM_SHAPE_MESH only */
    double half[3];  /* half extents of the bounding box */
    double volume;   /* enclosed volume (0 for explicit points) */
} csm_shape;

/* Open an object's shape (loads a mesh: errors name the mesh file and line). */
int csm_shape_open(csm_shape *s, const csm_object_cfg *o, int index, csm_error *err);
void csm_shape_close(csm_shape *s);
int csm_shape_inside(const csm_shape *s, const double p[3]);
/* in[k] = csm_mesh_inside for each of n candidates of a mesh shape: the candidates in Morton order
   of the box, 8 near ones to a walk of the tree (csm_mesh_winding_lanes, the same bits as one at a
   time). */
void csm_shape_inside_many(const csm_shape *s, const double *cand, int32_t n, unsigned char *in);
/* Points along one axis of the grid of spacing h over [-half, half], symmetric about 0. */
int32_t csm_grid_points(double half, double h);

/* Sample one object's shape in its own frame. Returns the points (malloc'd, 3 * count), the
   shape's volume (0 for explicit points) and the spacing used (chosen from the sampling's
   `particles` target when it has one; 0 for explicit points). */
int csm_sample_object(const csm_object_cfg *o, int index, uint64_t seed, double **points,
                      int32_t *count, double *volume, double *spacing, csm_error *err);
/* The same for a shape already open (its `o` the object, `index` the object's place): objects
   whose meshes are the same file placed the same way (csm_shape_same_mesh) can share one loaded
   mesh and its tree, each with its own copy of the csm_shape pointing at it. */
int csm_sample_shape(const csm_shape *sh, int index, uint64_t seed, double **points, int32_t *count, double *spacing,
                     csm_error *err);
int csm_shape_same_mesh(const csm_object_cfg *a, const csm_object_cfg *b);
/* Each of the n points' share of the shape's volume (sampling.mass: volume): its Voronoi cell
   clipped to the shape, counted on a lattice of probes a quarter of the spacing h apart (on a
   grid, a particle with all 26 neighbours owns its cube h^3 without probes). A grid's particles
   on a box's faces, edges and corners get 1/2, 1/4 and 1/8 of a cell: the trapezoid rule, under
   which the particles integrate the box's volume exactly and its second moments to O(h^2)
   instead of the (n + 2) / n of equal masses. With area not NULL (3 n), each point's share of the
   surface as a vector, the integral of the outward normal over the surface within its cell (the
   probe cells' faces that look outside; the particle's b_i of the divergence theorem: a face
   particle of a box gets its area, the trapezoid rule's). With cell not NULL (9 n), each cell's
   centroid less the point (3) and its second moment about the centroid per volume (xx, yy, zz,
   xy, yz, zx), each probe counted as its own small cube: what integrates a quadratic exactly over
   the cell (csm_cell_points). -1 when out of memory. */
int csm_sample_volumes(const csm_shape *sh, const double *pts, int32_t n, double h, double *vol, double *area,
                       double *cell);
/* The CSM_CELL_POINTS quadrature points of a cell with centroid offset and second moment
   cell[0..9) (csm_sample_volumes), as offsets from its particle, each of weight 1 / CSM_CELL_POINTS:
   the centroid plus and minus sqrt(3) times the square root of each principal second moment along
   its axis. They integrate every quadratic exactly over the cell and every odd moment about the
   centroid to zero. */
void csm_cell_points(const double cell[9], double out[3 * CSM_CELL_POINTS]);

/* Bridson's Poisson-disk sampling of the box [-half, half] at spacing r, with `attempts`
   candidates per active sample, from the random stream (seed, stream): the points (malloc'd,
   3 * count) in the order they were placed. reference: every candidate placed with the library's
   sin, cos and cbrt alone (the sampler's definition); otherwise most are rejected first from
   approximations with a margin, which gives the same points, bit for bit. */
void csm_sample_poisson_box(const double half[3], double r, int attempts, uint64_t seed, uint64_t stream,
                            int reference, double **points, int32_t *count);

/* A key and the index it belongs to; csm_key_index_sort orders by key, then index (grid.c). */
typedef struct csm_key_index {
    int64_t key;
    int32_t index;
} csm_key_index;
void csm_key_index_sort(csm_key_index *a, int32_t n);

/* Uniform grid over points for radius queries (cell size = radius). */
typedef struct csm_grid {
    double cell;
    int32_t n;
    int64_t *key;     /* [n] sorted cell keys */
    int32_t *index;   /* [n] point index, in key order */
} csm_grid;

int csm_grid_build(csm_grid *g, const double *points, int32_t n, double cell);
void csm_grid_free(csm_grid *g);
/* Calls fn(j, user) for every point j within `radius` (<= cell) of q; returns the count. */
int32_t csm_grid_query(const csm_grid *g, const double *points, const double q[3], double radius,
                       void (*fn)(int32_t j, void *user), void *user);

#endif
