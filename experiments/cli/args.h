/* The one argument parser of `csm run`, `csm check`, `csm sweep` and `csm bench`: each command
   declares its options as a table, and every command reads --set, counts and thread numbers
   the same way and says the same thing about a bad one. */
#ifndef CSM_ARGS_H
#define CSM_ARGS_H

typedef enum csm_arg_kind {
    CSM_ARG_FLAG,        /* int *: set to 1 */
    CSM_ARG_TEXT,        /* const char **: the next argument */
    CSM_ARG_COUNT,       /* int *: an integer of at least `min` */
    CSM_ARG_THREADS,     /* int *: an integer from 1 to csm_threads_max() */
    CSM_ARG_THREAD_LIST, /* int *: up to `min` thread counts "1,2,4" into out, their number into count */
} csm_arg_kind;

typedef struct csm_arg {
    const char *name;  /* "--frames" */
    const char *alias; /* "-o", or NULL */
    csm_arg_kind kind;
    void *out;
    int min;           /* CSM_ARG_COUNT: the least value; CSM_ARG_THREAD_LIST: room in out */
    int *count;        /* CSM_ARG_THREAD_LIST: how many were given */
} csm_arg;

/* What is not an option of the table: the --set overrides in order, and the positional
   arguments. */
typedef struct csm_args {
    const char **sets;
    int nsets;
    const char **positional;
    int npositional;
} csm_args;

/* Parse argv[1..argc) against `spec` (terminated by a NULL name). --set key=value and
   --set=key=value are always accepted; at most `max_positional` positional arguments
   (-1: any number). Returns 0, or -1 after a one-line message on stderr. The arrays of `out`
   have room for two more overrides the caller may append; csm_args_free frees them. */
int csm_args_parse(int argc, char **argv, const csm_arg *spec, int max_positional, csm_args *out);
void csm_args_free(csm_args *a);

/* The most OpenMP threads a command accepts: four per online processor, at least 64. More only
   oversubscribe, and libgomp fails on thousands (an abort, or a crash at 65536). */
int csm_threads_max(void);
/* The cores this process may run on: SLURM_CPUS_PER_TASK where set, else its CPU affinity
   (taskset, a batch system's cpuset). */
int csm_cores(void);
/* The threads a run that names none takes: its cores less those other processes' threads keep
   busy now (runnable, /proc/loadavg), at least one (results are the same bits for any count; a
   thread without a core of its own stalls every parallel loop). *cores and *busy (-1: unknown)
   are what it read. 0 when OMP_NUM_THREADS is set: OpenMP's choice. */
int csm_default_threads(int *cores, int *busy);

#endif
