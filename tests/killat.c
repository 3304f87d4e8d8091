/* A fault injector for test_killpoints.sh, preloaded into csm (LD_PRELOAD): every call of the HDF5
   functions that create, write, grow, flush or close a file, its datasets, groups and attributes
   is a boundary, counted from 1. With CSM_KILL_AT=N the process kills itself (SIGKILL, as kill -9
   does) at boundary N, before the call; with CSM_KILL_COUNT=FILE it writes how many boundaries it
   passed to FILE as it exits. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static long passed, kill_at = -1;

static void boundary(void)
{
    if (kill_at < 0) {
        const char *s = getenv("CSM_KILL_AT");
        kill_at = s ? atol(s) : 0;
    }
    if (++passed == kill_at) raise(SIGKILL);
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("CSM_KILL_COUNT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    fprintf(f, "%ld\n", passed);
    fclose(f);
}

/* ret name(params): counts the boundary, then calls the library's own. */
#define PASS(ret, name, params, args)                                                                                  \
    ret name params                                                                                                    \
    {                                                                                                                  \
        static ret(*real) params;                                                                                      \
        if (!real) *(void **)&real = dlsym(RTLD_NEXT, #name);                                                          \
        boundary();                                                                                                    \
        return real args;                                                                                              \
    }

PASS(hid_t, H5Fcreate, (const char *name, unsigned flags, hid_t fcpl, hid_t fapl), (name, flags, fcpl, fapl))
PASS(hid_t, H5Fopen, (const char *name, unsigned flags, hid_t fapl), (name, flags, fapl))
PASS(herr_t, H5Fclose, (hid_t file), (file))
PASS(herr_t, H5Fflush, (hid_t object, H5F_scope_t scope), (object, scope))
PASS(herr_t, H5Fstart_swmr_write, (hid_t file), (file))
PASS(hid_t, H5Gcreate2, (hid_t loc, const char *name, hid_t lcpl, hid_t gcpl, hid_t gapl), (loc, name, lcpl, gcpl, gapl))
PASS(hid_t, H5Dcreate2, (hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl, hid_t dcpl, hid_t dapl),
     (loc, name, type, space, lcpl, dcpl, dapl))
PASS(herr_t, H5Dwrite, (hid_t set, hid_t mem, hid_t mspace, hid_t fspace, hid_t xfer, const void *buf),
     (set, mem, mspace, fspace, xfer, buf))
PASS(herr_t, H5Dset_extent, (hid_t set, const hsize_t size[]), (set, size))
PASS(herr_t, H5Dclose, (hid_t set), (set))
PASS(hid_t, H5Acreate2, (hid_t loc, const char *name, hid_t type, hid_t space, hid_t acpl, hid_t aapl),
     (loc, name, type, space, acpl, aapl))
PASS(herr_t, H5Awrite, (hid_t attr, hid_t type, const void *buf), (attr, type, buf))
PASS(herr_t, H5Adelete, (hid_t loc, const char *name), (loc, name))
PASS(herr_t, H5Ldelete, (hid_t loc, const char *name, hid_t lapl), (loc, name, lapl))
