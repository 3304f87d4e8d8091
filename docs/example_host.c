/* A host of libcsm.so's C API (api/csm.h): a simulation of the config given, ten frames, its
   kinetic energy and centre of mass read from the diagnostics, and a push on every particle for
   ten more. docs/python.md builds and runs it:

       cc -I api -o out/host docs/example_host.c -L build -lcsm -Wl,-rpath,"$PWD/build"
       out/host experiments/configs/spring.yaml */
#include "csm.h"

#include <stdio.h>
#include <string.h>

/* The diagnostic `name`'s first value, from the values of csm_simulation_diagnostics. */
static double diagnostic(const double *values, const char *name)
{
    int at = 0, width;
    for (int k = 0; k < csm_diagnostic_count(); k++) {
        const char *n = csm_diagnostic_name(k, &width);
        if (!strcmp(n, name)) return values[at];
        at += width;
    }
    return 0.0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || csm_api_version() != CSM_API_VERSION) {
        fprintf(stderr, "usage: host CONFIG (built against csm.h version %d)\n", CSM_API_VERSION);
        return 2;
    }
    csm_options opt = {.size = sizeof opt}; /* no log */
    csm_simulation *s;
    char error[1024];
    int rc = csm_simulation_create(argv[1], NULL, NULL, 0, &opt, &s, error, sizeof error);
    if (rc) {
        fprintf(stderr, "csm: %s\n", error);
        return rc;
    }
    double values[64];
    if ((rc = csm_simulation_frames(s, 10)) || (rc = csm_simulation_diagnostics(s, values, 64))) goto failed;
    printf("%d particles at t = %g s: kinetic energy %.6g J\n", csm_simulation_particle_count(s),
           csm_simulation_time(s), diagnostic(values, "kinetic_energy"));
    double *f = csm_simulation_external_force(s);
    for (int32_t i = 0; f && i < csm_simulation_particle_count(s); i++) f[3 * i] = 0.1; /* N along x */
    if ((rc = csm_simulation_frames(s, 10)) || (rc = csm_simulation_diagnostics(s, values, 64))) goto failed;
    printf("after a push of 0.1 N each for %g s: work done %.6g J\n", 10 * csm_simulation_dt(s),
           diagnostic(values, "work_external"));
    return csm_simulation_destroy(s);
failed:
    fprintf(stderr, "csm: %s\n", csm_simulation_error(s));
    csm_simulation_destroy(s);
    return rc;
}
