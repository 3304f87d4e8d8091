/* Shapes, sampling and neighbour queries. */
#ifndef CSM_GEOMETRY_H
#define CSM_GEOMETRY_H

#include <stdint.h>

#include "config.h"
#include "error.h"

/* Sample one object's shape in its own frame (shape centred at the origin). Returns the points
   (malloc'd, 3 * count) and the shape's volume (0 for explicit points). */
int csm_sample_object(const csm_object_cfg *o, int index, uint64_t seed, double **points,
                      int32_t *count, double *volume, csm_error *err);

/* Is p inside the shape (shape_type, its parameters)? */
int csm_shape_inside(const csm_object_cfg *o, const double p[3]);

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
