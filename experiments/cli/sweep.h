/* What the two files of csm sweep share: sweep.c runs a sweep, sweep_plan.c expands its runs,
   resolves their configs and names them. */
#ifndef CSM_SWEEP_H
#define CSM_SWEEP_H

#include "args.h"
#include "config.h"

#include <stdint.h>
#include <sys/types.h>

/* The most runs a sweep expands unless --max-runs says more: past it a sweep is most likely a
   mistake (a list where a range was meant), and its configs alone take minutes to resolve. */
#define CSM_SWEEP_MAX_RUNS 10000


typedef struct sweep_run {
    int *pick;      /* value index per axis */
    char id[16];    /* short hash of the resolved config */
    pid_t pid;      /* while its process runs */
    double started;
} sweep_run;

typedef struct sweep_args {
    const char *config, *dir;
    const char **sets;
    int nsets;
    int jobs, threads, list, shard_k, shard_n, max_runs;
    char frames_set[64];
    csm_args args; /* owns sets */
} sweep_args;

typedef struct sweep {
    sweep_args a;
    csm_config base;
    sweep_run *runs;
    int nruns;
    char dir[4096], self[4096];
} sweep;

/* Expand the product, resolve every run's config and name each run by its hash (runs that
   resolve to the same config run once). */
int sweep_plan(sweep *s, csm_error *err);
/* The overrides of run r: the command line's, then one per swept key (malloc'd strings). */
char **sweep_run_overrides(const sweep *s, const sweep_run *r, int *count);
void sweep_free_strings(char **s, int n);
/* "key=value key=value" of run r. */
void sweep_describe(const sweep *s, const sweep_run *r, char *buf, size_t size);

#endif
