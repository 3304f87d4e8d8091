/* libFuzzer target: the OFF and OBJ mesh readers on arbitrary bytes, then what a loaded mesh goes
   through on its way to particles (bounds, volume, the winding-number tree and inside test). The
   first input byte picks the format. */
#include "mesh.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *name = data[0] & 1 ? "fuzz.obj" : "fuzz.off";
    csm_mesh m;
    csm_error err = {{0}, 0};
    if (csm_mesh_parse(&m, name, (const char *)data + 1, size - 1, &err) != 0) {
        if (err.code != CSM_EXIT_BAD_INPUT || strchr(err.msg, '\n') || !err.msg[0]) abort();
        return 0;
    }
    /* a loaded mesh has finite vertices and indices in range */
    for (int32_t k = 0; k < 3 * m.nv; k++)
        if (!isfinite(m.v[k])) abort();
    for (int32_t k = 0; k < 3 * m.nt; k++)
        if (m.tri[k] < 0 || m.tri[k] >= m.nv) abort();
    double lo[3], hi[3];
    csm_mesh_bounds(&m, lo, hi);
    (void)csm_mesh_volume(&m);
    if (csm_mesh_build_tree(&m) == 0) {
        double p[3] = {0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])};
        (void)csm_mesh_inside(&m, p);
    }
    csm_mesh_free(&m);
    return 0;
}
