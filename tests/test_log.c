/* A log's memory stays bounded as its frames are appended. Every frame is flushed, and HDF5's
   default chunk cache (1 MiB and 521 chunks a dataset) kept each chunk a run had written until it
   filled: this box's heap grew by 550 bytes a frame, and would have for its first hundred thousand
   frames. The datasets now keep two chunks each (core/io/log.c csm_log_start_swmr). */
#include "check.h"

#include "csm.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *BOX = "name: box\n"
                         "seed: 1\n"
                         "time: {dt: 0.0166667, frames: 100000, substeps: 1}\n"
                         "objects:\n"
                         "  - shape: {type: box, size: [0.2, 0.2, 0.2]}\n"
                         "    sampling: {type: grid, spacing: 0.1}\n"
                         "    mass: 1.0\n"
                         "    angular_velocity: [0, 0, 1]\n"
                         "clustering: {method: random_radius, radius: 0.35}\n"
                         "solver: {integrator: shape_matching, alpha: 0.5}\n";

static void test_the_heap_stops_growing_with_the_frames(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* AddressSanitizer's allocator is not glibc's: mallinfo2 does not see it */
#endif
    char dir[] = "/tmp/csm_log_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/box.h5", dir);
    csm_options opt = {.size = sizeof opt, .log = path, .force = 1, .threads = 1};
    csm_simulation *s;
    char error[1024];
    if (csm_simulation_create("box.yaml", BOX, NULL, 0, &opt, &s, error, sizeof error)) fail_msg("%s", error);
    /* the first frames fill the caches HDF5 keeps bounded (its metadata cache) */
    assert_int_equal(csm_simulation_frames(s, 2000), 0);
    size_t before = mallinfo2().uordblks;
    const int frames = 6000;
    assert_int_equal(csm_simulation_frames(s, frames), 0);
    double per_frame = ((double)mallinfo2().uordblks - (double)before) / frames;
    printf("heap in use grew %.1f bytes a frame over %d logged frames\n", per_frame, frames);
    /* what is left is HDF5's metadata cache taking in the chunk index, up to its own maximum */
    assert_true(per_frame < 120);
    assert_int_equal(csm_simulation_destroy(s), 0);
    unlink(path);
    char side[80];
    snprintf(side, sizeof side, "%s/box.xmf", dir);
    unlink(side);
    snprintf(side, sizeof side, "%s/box.view.hdf5", dir);
    unlink(side);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_heap_stops_growing_with_the_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
