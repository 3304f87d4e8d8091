#define _GNU_SOURCE /* sched_getaffinity */
#include "args.h"
#include "error.h"

#include "commands.h"

#include <dirent.h>
#include <signal.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int csm_cores(void)
{
    const char *s = getenv("SLURM_CPUS_PER_TASK");
    long n = s ? strtol(s, NULL, 10) : 0;
    cpu_set_t set;
    if (n < 1 && sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

/* This process's threads that are running or runnable (an OpenMP team still spinning). */
static int own_running(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return 1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[300], state = 0;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        /* pid (comm) state ...: the state follows the last ')' */
        char line[512];
        if (fgets(line, sizeof line, f)) {
            char *p = strrchr(line, ')');
            if (p && p[1] == ' ') state = p[2];
        }
        fclose(f);
        n += state == 'R';
    }
    closedir(d);
    return n > 0 ? n : 1;
}

/* Threads of other processes that want a core now: /proc/loadavg's runnable count less this
   process's own, the least of a few samples 2 ms apart, so that a passing process does not
   count; -1 where it cannot be read. The one-minute load average would count the run that just
   ended. */
static int busy_now(void)
{
    int least = -1;
    for (int k = 0; k < 5; k++) {
        FILE *f = fopen("/proc/loadavg", "r");
        int running = 0, total = 0;
        double a, b, c;
        int got = f ? fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) : 0;
        if (f) fclose(f);
        if (got != 5) return -1;
        int others = running - own_running();
        if (others < 0) others = 0;
        if (least < 0 || others < least) least = others;
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
    }
    return least;
}

int csm_default_threads(int *cores, int *busy)
{
    *cores = csm_cores();
    *busy = -1;
    if (getenv("OMP_NUM_THREADS")) return 0;
    *busy = busy_now();
    if (*busy < 0) return *cores;
    /* a thread that waits for a core stalls every parallel loop's barrier: one per free core */
    int free = *cores - *busy;
    return free < 1 ? 1 : free > *cores ? *cores : free;
}

int csm_threads_max(void)
{
    long p = sysconf(_SC_NPROCESSORS_ONLN);
    return p > 16 ? (int)(4 * p) : 64;
}

/* "1,2,4" into out[0..room); returns how many, or -1. */
static int thread_list(const char *s, int *out, int room)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > csm_threads_max() || n == room) return -1;
        out[n++] = (int)v;
        if (*end == ',') end++;
        else if (*end) return -1;
        s = end;
    }
    return n ? n : -1;
}

static int value(const csm_arg *a, const char *text)
{
    char *end;
    long v = strtol(text, &end, 10);
    switch (a->kind) {
    case CSM_ARG_FLAG: *(int *)a->out = 1; return 0;
    case CSM_ARG_TEXT: *(const char **)a->out = text; return 0;
    case CSM_ARG_COUNT:
        if (!*text || *end || v < a->min || v > 1000000000) {
            fprintf(stderr, "csm: %s %s: expected an integer of at least %d\n", a->name, text, a->min);
            return -1;
        }
        *(int *)a->out = (int)v;
        return 0;
    case CSM_ARG_THREADS:
        if (!*text || *end || v < 1 || v > csm_threads_max()) {
            fprintf(stderr, "csm: %s %s: expected an integer from 1 to %d (four per processor, at least 64)\n", a->name,
                    text, csm_threads_max());
            return -1;
        }
        *(int *)a->out = (int)v;
        return 0;
    case CSM_ARG_THREAD_LIST: {
        int n = thread_list(text, a->out, a->min);
        if (n < 0) {
            fprintf(stderr, "csm: %s %s: expected integers from 1 to %d separated by commas (up to %d)\n", a->name,
                    text, csm_threads_max(), a->min);
            return -1;
        }
        *a->count = n;
        return 0;
    }
    }
    return -1;
}

int csm_args_parse(int argc, char **argv, const csm_arg *spec, int max_positional, csm_args *out)
{
    memset(out, 0, sizeof *out);
    out->sets = calloc((size_t)argc + 2, sizeof *out->sets);
    out->positional = calloc((size_t)argc + 1, sizeof *out->positional);
    if (!out->sets || !out->positional) CSM_OUT_OF_MEMORY();
    for (int k = 1; k < argc; k++) {
        const char *s = argv[k], *next = k + 1 < argc ? argv[k + 1] : NULL;
        if (!strcmp(s, "--set") && next) {
            out->sets[out->nsets++] = argv[++k];
            continue;
        }
        if (!strncmp(s, "--set=", 6)) {
            out->sets[out->nsets++] = s + 6;
            continue;
        }
        const csm_arg *a = NULL;
        for (const csm_arg *o = spec; o && o->name && !a; o++)
            if (!strcmp(s, o->name) || (o->alias && !strcmp(s, o->alias))) a = o;
        if (a && a->kind == CSM_ARG_FLAG) {
            *(int *)a->out = 1;
        } else if (a && next) {
            if (value(a, argv[++k])) return -1;
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "csm: unknown or incomplete option '%s'\n", s);
            return -1;
        } else if (max_positional >= 0 && out->npositional == max_positional) {
            fprintf(stderr, "csm: unexpected argument '%s'\n", s);
            return -1;
        } else {
            out->positional[out->npositional++] = s;
        }
    }
    return 0;
}

void csm_args_free(csm_args *a)
{
    free(a->sets);
    free(a->positional);
    memset(a, 0, sizeof *a);
}

static const char *guarded; /* the log csm_cli_guard names, NULL: none */

/* Async-signal-safe: write(2) and _exit(2) only. */
static void on_crash(int sig)
{
    static const char head[] = "csm: ", tail[] = ": HDF5 crashed reading this log (a segmentation or bus fault in its "
                                                 "own code): the log is corrupt\n";
    (void)sig;
    if (guarded) {
        ssize_t w = write(STDERR_FILENO, head, sizeof head - 1);
        w = write(STDERR_FILENO, guarded, strlen(guarded));
        w = write(STDERR_FILENO, tail, sizeof tail - 1);
        (void)w;
        _exit(2);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void csm_cli_guard(const char *path)
{
    guarded = path;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = path ? on_crash : SIG_DFL;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}
