/* A box as an OFF mesh for the mesh collider's tests: its 8 corners at +-h and 12 triangles wound
   outwards, written to a new file from the template path (which ends in ".off"). The including
   file defines _DEFAULT_SOURCE first (mkstemps, fdopen). */
#ifndef CSM_TEST_BOX_MESH_H
#define CSM_TEST_BOX_MESH_H

#include "check.h"

#include <stdio.h>
#include <stdlib.h>

static inline void box_off(char *path, double hx, double hy, double hz)
{
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, "OFF\n8 12 0\n");
    for (int k = 0; k < 8; k++) /* around the face z = -h, then around z = +h */
        fprintf(f, "%.17g %.17g %.17g\n", (k % 4 == 1 || k % 4 == 2) ? hx : -hx, (k % 4 >= 2) ? hy : -hy,
                k >= 4 ? hz : -hz);
    fputs("3 0 3 2\n3 0 2 1\n3 4 5 6\n3 4 6 7\n3 0 1 5\n3 0 5 4\n3 2 3 7\n3 2 7 6\n3 1 2 6\n3 1 6 5\n"
          "3 0 4 7\n3 0 7 3\n", f);
    fclose(f);
}

#endif
