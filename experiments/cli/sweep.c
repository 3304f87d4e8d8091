/* csm sweep: the runs of a config's `sweep:` mapping (the cartesian product of its lists, first
   key slowest), one `csm run` process and one log per run. A run is named by a short hash of its
   resolved config, so rerunning a sweep skips every run whose log finished with status ok, and a
   sweep grown by one value runs only the new ones. Logs are written under .partial/ and moved
   into place when their process ends; an index (index.csv) lists every run of the sweep with its
   swept values, status, frames, wall time and log. `--shard K/N` (or a Slurm job array) runs
   every N-th run. */
#include "commands.h"
#include "error.h"
#include "sweep.h"
#include "args.h"
#include "files.h"
#include "lock.h"

#include "config.h"
#include "log.h"
#include "sim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *usage_line =
    "usage: csm sweep CONFIG [-o DIR] [--set key=value]... [--frames N] [--jobs N] [--threads N] "
    "[--shard K/N] [--list] [--max-runs N]";


static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static int parse_shard(const char *what, const char *k, const char *n, int *sk, int *sn)
{
    char *e1, *e2;
    long K = strtol(k, &e1, 10), N = strtol(n, &e2, 10);
    if (!*k || !*n || *e1 || *e2 || N < 1 || K < 0 || K >= N) {
        fprintf(stderr, "csm: %s: expected K/N with 0 <= K < N (got %s/%s)\n", what, k, n);
        return -1;
    }
    *sk = (int)K;
    *sn = (int)N;
    return 0;
}

/* A Slurm array environment variable: a whole number >= 0, or `fallback` when unset. */
static int array_var(const char *name, long fallback, long *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v) {
        *out = fallback;
        return fallback >= 0 ? 0 : -1;
    }
    errno = 0;
    *out = strtol(v, &end, 10);
    if (!*v || *end || errno || *out < 0) {
        fprintf(stderr, "csm: %s=%s: not an array index\n", name, v);
        return -1;
    }
    return 0;
}

/* The shard of a Slurm array task: its rank among the array's indices, min, min + step, ...,
   of SLURM_ARRAY_TASK_COUNT tasks (--array=0-13, 1-14, 0-26:2). A list of indices that is not
   such a progression (--array=1,3,10) cannot be ranked from the environment: refused, with the
   way out. */
static int array_shard(const char *tid, sweep_args *a)
{
    long id, count, min, step;
    if (array_var("SLURM_ARRAY_TASK_ID", -1, &id) || array_var("SLURM_ARRAY_TASK_COUNT", -1, &count) ||
        array_var("SLURM_ARRAY_TASK_MIN", 0, &min) || array_var("SLURM_ARRAY_TASK_STEP", 1, &step)) {
        if (!getenv("SLURM_ARRAY_TASK_COUNT")) fprintf(stderr, "csm: SLURM_ARRAY_TASK_ID=%s without SLURM_ARRAY_TASK_COUNT\n", tid);
        return -1;
    }
    long off = id - min;
    if (count < 1 || step < 1 || off < 0 || off % step || off / step >= count) {
        fprintf(stderr, "csm: array task %ld is not min + k step of %ld tasks (min %ld, step %ld): an array that is a "
                        "list of indices cannot be ranked; give each task --shard K/%ld\n", id, count, min, step, count);
        return -1;
    }
    char k[32], n[32];
    snprintf(k, sizeof k, "%ld", off / step);
    snprintf(n, sizeof n, "%ld", count);
    return parse_shard("the array task's rank", k, n, &a->shard_k, &a->shard_n);
}

static int parse_args(int argc, char **argv, sweep_args *a)
{
    memset(a, 0, sizeof *a);
    a->shard_n = 1;
    int frames = -1;
    const char *shard = NULL;
    const csm_arg options[] = {
        {"-o", "--output", CSM_ARG_TEXT, &a->dir, 0, NULL},
        {"--frames", NULL, CSM_ARG_COUNT, &frames, 0, NULL},
        {"--jobs", NULL, CSM_ARG_COUNT, &a->jobs, 1, NULL},
        {"--threads", NULL, CSM_ARG_THREADS, &a->threads, 0, NULL},
        {"--shard", NULL, CSM_ARG_TEXT, &shard, 0, NULL},
        {"--list", NULL, CSM_ARG_FLAG, &a->list, 0, NULL},
        {"--max-runs", NULL, CSM_ARG_COUNT, &a->max_runs, 1, NULL},
        {NULL, NULL, 0, NULL, 0, NULL},
    };
    a->max_runs = CSM_SWEEP_MAX_RUNS;
    int rc = csm_args_parse(argc, argv, options, 1, &a->args);
    a->sets = a->args.sets;
    a->nsets = a->args.nsets;
    a->config = a->args.npositional ? a->args.positional[0] : NULL;
    if (rc) return -1;
    if (frames >= 0) snprintf(a->frames_set, sizeof a->frames_set, "time.frames=%d", frames);
    int have_shard = shard != NULL;
    if (shard) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", shard);
        char *slash = strchr(buf, '/');
        if (!slash) {
            fprintf(stderr, "csm: --shard %s: expected K/N\n", buf);
            return -1;
        }
        *slash = '\0';
        if (parse_shard("--shard", buf, slash + 1, &a->shard_k, &a->shard_n)) return -1;
    }
    if (!a->config) {
        fprintf(stderr, "csm: missing CONFIG\n");
        return -1;
    }
    if (a->jobs > csm_threads_max()) { /* processes oversubscribe as threads do */
        fprintf(stderr, "csm: --jobs %d: at most %d runs at once on this machine\n", a->jobs, csm_threads_max());
        return -1;
    }
    if (a->frames_set[0]) a->sets[a->nsets++] = a->frames_set;
    const char *tid = getenv("SLURM_ARRAY_TASK_ID");
    if (!have_shard && tid && array_shard(tid, a)) return -1;
    int c = csm_cores();
    if (!a->jobs) a->jobs = c;
    if (!a->threads) a->threads = c / a->jobs > 1 ? c / a->jobs : 1;
    return 0;
}

static void path_of(const sweep *s, const char *id, const char *ext, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s%s", s->dir, id, ext);
}

/* The status of a run from its record (<id>.run, written when its process ended), else from
   its log; "pending" when it has neither. */
typedef struct run_state {
    char status[1100];
    long frames;
    double wall;
    int have_wall;
} run_state;

static void read_state(const sweep *s, const sweep_run *r, run_state *st)
{
    memset(st, 0, sizeof *st);
    st->frames = -1;
    char path[4200];
    path_of(s, r->id, ".run", path, sizeof path);
    FILE *f = fopen(path, "r");
    if (f) {
        char line[1200];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            if (!strncmp(line, "status=", 7)) snprintf(st->status, sizeof st->status, "%.1090s", line + 7);
            else if (!strncmp(line, "frames=", 7)) st->frames = strtol(line + 7, NULL, 10);
            else if (!strncmp(line, "wall_s=", 7)) st->wall = strtod(line + 7, NULL), st->have_wall = 1;
        }
        fclose(f);
        if (st->status[0]) return;
    }
    path_of(s, r->id, ".h5", path, sizeof path);
    int64_t frames;
    if (access(path, F_OK) == 0 && csm_log_status(path, st->status, sizeof st->status, &frames) == 0) {
        st->frames = (long)frames;
        return;
    }
    snprintf(st->status, sizeof st->status, "pending");
}

static int log_is_ok(const sweep *s, const sweep_run *r)
{
    char path[4200], status[64];
    int64_t frames;
    path_of(s, r->id, ".h5", path, sizeof path);
    return access(path, F_OK) == 0 && csm_log_status(path, status, sizeof status, &frames) == 0 &&
           !strcmp(status, "ok");
}

static void csv_field(FILE *f, const char *text, int last)
{
    if (strpbrk(text, ",\"\n\r")) {
        fputc('"', f);
        for (const char *c = text; *c; c++) {
            if (*c == '"') fputc('"', f);
            fputc(*c == '\n' || *c == '\r' ? ' ' : *c, f);
        }
        fputc('"', f);
    } else {
        fputs(text, f);
    }
    fputc(last ? '\n' : ',', f);
}

/* Rewrite index.csv from every run's state: written to a temporary file and renamed, so shards
   writing at once each leave a whole index behind. */
static int write_index(const sweep *s, csm_error *err)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/index.csv", s->dir);
    snprintf(tmp, sizeof tmp, "%s/.index.csv.%ld", s->dir, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the index: %s", tmp, strerror(errno));
    csv_field(f, "run", 0);
    for (int k = 0; k < s->base.nsweep; k++) csv_field(f, s->base.sweep[k].key, 0);
    fputs("status,frames,wall_s,path\n", f);
    for (int i = 0; i < s->nruns; i++) {
        const sweep_run *r = &s->runs[i];
        run_state st;
        read_state(s, r, &st);
        csv_field(f, r->id, 0);
        for (int k = 0; k < s->base.nsweep; k++) csv_field(f, s->base.sweep[k].values[r->pick[k]], 0);
        csv_field(f, st.status, 0);
        if (st.frames >= 0) fprintf(f, "%ld,", st.frames);
        else fputc(',', f);
        if (st.have_wall) fprintf(f, "%.3f,", st.wall);
        else fputc(',', f);
        char logpath[4200];
        path_of(s, r->id, ".h5", logpath, sizeof logpath);
        fprintf(f, "%s\n", access(logpath, F_OK) == 0 ? logpath + strlen(s->dir) + 1 : "");
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot write the index: %s", path, strerror(errno));
    }
    return 0;
}

/* The pid of another process that holds run r's log (its lock, beside .partial/<id>.h5), or 0:
   an orphan of a killed sweep, or a sweep of another shard count, still writing it. */
static long held_elsewhere(const sweep *s, const sweep_run *r)
{
    char lock[4400];
    snprintf(lock, sizeof lock, "%s/.partial/%s.h5.lock", s->dir, r->id);
    if (access(lock, F_OK) != 0) return 0;
    csm_error err;
    int fd = csm_lock_share(lock, lock, "log", &err);
    if (fd >= 0) {
        csm_lock_drop(fd, NULL);
        return 0;
    }
    long pid = 0;
    FILE *f = fopen(lock, "r");
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1) pid = 0;
        fclose(f);
    }
    return pid > 0 ? pid : -1;
}

/* Where a run's output goes while it runs: .partial/<id>.<pid>.log, the sweep's own pid in the
   name. It is moved to <id>.log when the run ends (finish), and dropped when the run's log was
   another process's: a second sweep that started the same run between our check of the lock and
   our child's try for it wrote <id>.log, and our child's refusal would have truncated it. */
static void output_path(const sweep *s, const sweep_run *r, char *buf, size_t size)
{
    snprintf(buf, size, "%s/.partial/%s.%ld.log", s->dir, r->id, (long)getpid());
}

static pid_t launch(const sweep *s, sweep_run *r, csm_error *err)
{
    int no;
    char **o = sweep_run_overrides(s, r, &no);
    char partial[4300], logpath[4200], threads[32];
    snprintf(partial, sizeof partial, "%s/.partial/%s.h5", s->dir, r->id);
    output_path(s, r, logpath, sizeof logpath);
    snprintf(threads, sizeof threads, "%d", s->a.threads);
    const char **argv = calloc((size_t)(2 * no + 16), sizeof *argv);
    if (!argv) CSM_OUT_OF_MEMORY();
    int n = 0;
    argv[n++] = "csm";
    argv[n++] = "run";
    argv[n++] = s->a.config;
    for (int k = 0; k < no; k++) {
        argv[n++] = "--set";
        argv[n++] = o[k];
    }
    argv[n++] = "--set"; /* the run itself is no sweep */
    argv[n++] = "sweep={}";
    argv[n++] = "-o";
    argv[n++] = partial;
    argv[n++] = "--force";
    argv[n++] = "--threads";
    argv[n++] = threads;
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(s->self, (char *const *)argv);
        fprintf(stderr, "csm: cannot start %s: %s\n", s->self, strerror(errno));
        _exit(127);
    }
    free(argv);
    sweep_free_strings(o, no);
    if (pid < 0) return csm_fail(err, CSM_EXIT_FAILURE, "cannot start a run: %s", strerror(errno));
    r->pid = pid;
    r->started = csm_now();
    return pid;
}

/* The last "csm: " line of a run's output: why it stopped when it left no log. */
static void last_error_line(const char *logpath, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(logpath, "r");
    if (!f) return;
    char line[1200];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "csm: ", 5) && strncmp(line, "csm: log (", 10) && strncmp(line, "csm: note:", 10))
            snprintf(buf, size, "%.1090s", line + 5);
    }
    fclose(f);
}

/* The run's printed summary (its <id>.log) names where its files are now: the lines that named
   .partial/<id>.* name <id>.* (rewritten through a temporary file; left as it was on any error). */
static void repoint_log(const char *logpath, const char *partial, const char *final)
{
    char tmp[4300], line[8192];
    snprintf(tmp, sizeof tmp, "%s.tmp", logpath);
    FILE *in = fopen(logpath, "r"), *out = in ? fopen(tmp, "w") : NULL;
    if (!out) {
        if (in) fclose(in);
        return;
    }
    /* partial and final share the folder's prefix: .../.partial/<id>.h5 against .../<id>.h5 */
    size_t plen = strlen(partial) - 3, flen = strlen(final) - 3; /* without ".h5": .xmf and .view.hdf5 too */
    char stem[4300];
    snprintf(stem, sizeof stem, "%.*s", (int)plen, partial);
    int bad = 0;
    while (fgets(line, sizeof line, in)) {
        char *at = strstr(line, stem);
        if (at) bad |= fprintf(out, "%.*s%.*s%s", (int)(at - line), line, (int)flen, final, at + plen) < 0;
        else bad |= fputs(line, out) < 0;
    }
    fclose(in);
    if (fclose(out) != 0 || bad) remove(tmp);
    else rename(tmp, logpath);
}

/* A run's process ended: move its log into place, write its record. Returns 1 when it is ok. */
static int finish(const sweep *s, sweep_run *r, int wstatus, char *status, size_t size)
{
    double wall = csm_now() - r->started;
    char partial[4300], final[4200], pxmf[4300], fxmf[4200], pview[4300], fview[4200], logpath[4200];
    snprintf(partial, sizeof partial, "%s/.partial/%s.h5", s->dir, r->id);
    path_of(s, r->id, ".h5", final, sizeof final);
    csm_log_xdmf_path(partial, pxmf, sizeof pxmf);
    csm_log_xdmf_path(final, fxmf, sizeof fxmf);
    csm_log_view_path(partial, pview, sizeof pview);
    csm_log_view_path(final, fview, sizeof fview);
    path_of(s, r->id, ".log", logpath, sizeof logpath);
    char output[4300];
    output_path(s, r, output, sizeof output);
    int64_t frames = -1;
    long other = held_elsewhere(s, r);
    if (other) { /* refused by the log's lock: the log and its files are the other writer's */
        snprintf(status, size, "failed: another csm process (pid %ld) is writing this run's log", other);
        remove(output);
        r->pid = 0;
        return 0;
    }
    rename(output, logpath);
    int have_log = access(partial, F_OK) == 0;
    char logstatus[1100] = "";
    if (have_log) csm_log_status(partial, logstatus, sizeof logstatus, &frames);
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    if (code == 0 && !strcmp(logstatus, "ok")) {
        snprintf(status, size, "ok");
    } else if (logstatus[0] && strcmp(logstatus, "running") && strcmp(logstatus, "ok")) {
        snprintf(status, size, "%s", logstatus);
    } else {
        char why[1100];
        last_error_line(logpath, why, sizeof why);
        if (WIFSIGNALED(wstatus))
            snprintf(status, size, "failed: killed by signal %d%s", WTERMSIG(wstatus), have_log ? " (log kept)" : "");
        else if (why[0])
            snprintf(status, size, "failed: %s", why);
        else
            snprintf(status, size, "failed: exit status %d", code);
    }
    if (have_log) {
        rename(partial, final);
        if (access(pview, F_OK) == 0) rename(pview, fview); /* before the sidecar that reads it */
        if (access(pxmf, F_OK) == 0) rename(pxmf, fxmf);
        repoint_log(logpath, partial, final);
    }
    char rec[4200], tmp[4300];
    path_of(s, r->id, ".run", rec, sizeof rec);
    snprintf(tmp, sizeof tmp, "%s.tmp", rec);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "status=%s\nframes=%lld\nwall_s=%.3f\nexit=%d\n", status, (long long)frames, wall, code);
        if (fclose(f) == 0) rename(tmp, rec);
    }
    r->pid = 0;
    return !strcmp(status, "ok");
}

static int execute(sweep *s, int *selected, int nsel)
{
    csm_error err = {{0}, 0};
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/.partial", s->dir);
    if (csm_make_dirs(sub, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: waitpid returns on a signal */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int tty = isatty(STDERR_FILENO);
    int ok = 0, failed = 0, skipped = 0, running = 0, next = 0, done = 0;
    /* runs already finished with status ok are skipped */
    int *todo = calloc((size_t)nsel + 1, sizeof *todo), ntodo = 0;
    if (!todo) CSM_OUT_OF_MEMORY();
    for (int k = 0; k < nsel; k++) {
        if (log_is_ok(s, &s->runs[selected[k]])) skipped++;
        else todo[ntodo++] = selected[k];
    }
    fprintf(stderr, "csm: sweep %s: %d run%s%s, %d to run (%d already ok), %d at a time, %d thread%s each -> %s\n",
            s->base.name, nsel, nsel == 1 ? "" : "s", s->a.shard_n > 1 ? " in this shard" : "", ntodo, skipped, s->a.jobs, s->a.threads,
            s->a.threads > 1 ? "s" : "", s->dir);
    if (write_index(s, &err)) fprintf(stderr, "csm: %s\n", err.msg);
    int forwarded = 0, unstarted = 0, elsewhere = 0;
    while ((next < ntodo && !unstarted && !stop_signal) || running > 0) {
        if (stop_signal && !forwarded) {
            for (int k = 0; k < nsel; k++)
                if (s->runs[selected[k]].pid > 0) kill(s->runs[selected[k]].pid, (int)stop_signal);
            forwarded = 1;
        }
        if (!stop_signal && !unstarted && next < ntodo && running < s->a.jobs) {
            long other = held_elsewhere(s, &s->runs[todo[next]]);
            if (other) { /* its log is another process's: not started, nothing of it touched */
                fprintf(stderr, "csm: run %s: another csm process (pid %ld) is writing its log; left alone\n",
                        s->runs[todo[next]].id, other);
                next++;
                elsewhere++;
                continue;
            }
            if (launch(s, &s->runs[todo[next]], &err) < 0) {
                /* no run more is started; those running are waited for and moved in */
                fprintf(stderr, "csm: %s\n", err.msg);
                unstarted = ntodo - next;
                continue;
            }
            next++;
            running++;
            continue;
        }
        if (running == 0) break;
        int ws;
        pid_t pid = waitpid(-1, &ws, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < nsel; k++) {
            sweep_run *r = &s->runs[selected[k]];
            if (r->pid != pid) continue;
            char status[1200], what[2048];
            int good = finish(s, r, ws, status, sizeof status);
            running--;
            done++;
            good ? ok++ : failed++;
            if (write_index(s, &err)) fprintf(stderr, "csm: %s\n", err.msg);
            if (tty) {
                sweep_describe(s, r, what, sizeof what);
                fprintf(stderr, "[%d/%d] %s %-8.60s %7.1f s  %s\n", done, ntodo, r->id, status,
                        csm_now() - r->started, what);
            }
            break;
        }
    }
    free(todo);
    char cut[128] = "";
    if (unstarted) snprintf(cut, sizeof cut, ", %d not started", unstarted);
    if (elsewhere)
        snprintf(cut + strlen(cut), sizeof cut - strlen(cut), ", %d written by another process", elsewhere);
    printf("sweep %s: %d ok, %d failed, %d skipped (already ok)%s%s; index: %s/index.csv\n", s->base.name, ok,
           failed, skipped, cut, stop_signal ? ", interrupted" : "", s->dir);
    if (stop_signal) return 130;
    return failed || unstarted || elsewhere ? 1 : 0;
}

/* The shard count of another sweep's live shard in folder `dir` other than n, or 0. */
static int live_shard_count(const char *dir, int n)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        int k, m;
        char rest;
        if (sscanf(e->d_name, ".sweep-shard-%d-of-%d.lock%c", &k, &m, &rest) != 2 || m == n) continue;
        char path[4600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        csm_error err;
        int fd = csm_lock_share(path, dir, "shard", &err);
        if (fd >= 0) csm_lock_drop(fd, NULL);
        else found = m;
    }
    closedir(d);
    return found;
}

int csm_cmd_sweep(int argc, char **argv)
{
    sweep s;
    memset(&s, 0, sizeof s);
    if (parse_args(argc, argv, &s.a)) {
        csm_args_free(&s.a.args);
        fprintf(stderr, "%s\n", usage_line);
        return 2;
    }
    csm_error err = {{0}, 0};
    int rc = 2;
    if (csm_config_load(s.a.config, s.a.sets, s.a.nsets, &s.base, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        csm_args_free(&s.a.args);
        return err.code ? err.code : 2;
    }
    if (s.a.dir) snprintf(s.dir, sizeof s.dir, "%s", s.a.dir);
    else snprintf(s.dir, sizeof s.dir, "out/%s", s.base.name);
    size_t len = strlen(s.dir);
    while (len > 1 && s.dir[len - 1] == '/') s.dir[--len] = '\0';
    ssize_t n = readlink("/proc/self/exe", s.self, sizeof s.self - 1);
    if (n > 0) s.self[n] = '\0';
    else snprintf(s.self, sizeof s.self, "%s", argv[0]);

    int *selected = NULL, nsel = 0;
    if (sweep_plan(&s, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        goto done;
    }
    selected = calloc((size_t)s.nruns + 1, sizeof *selected);
    if (!selected) CSM_OUT_OF_MEMORY();
    for (int i = 0; i < s.nruns; i++)
        if (i % s.a.shard_n == s.a.shard_k) selected[nsel++] = i;
    if (s.a.list) {
        for (int k = 0; k < nsel; k++) {
            char what[2048];
            run_state st;
            sweep_describe(&s, &s.runs[selected[k]], what, sizeof what);
            read_state(&s, &s.runs[selected[k]], &st);
            printf("%s\t%s\t%s\n", s.runs[selected[k]].id, st.status, what); /* the whole status: it was cut at 60 bytes */
        }
        rc = 0;
        goto done;
    }
    if (csm_make_dirs(s.dir, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        goto done;
    }
    /* One sweep per folder: a sweep holds the folder's lock for its life, exclusively, or shared
       with the other shards of the same sweep, each of which holds its own shard's lock. A second
       sweep into the folder is refused before it runs anything. */
    char folder_lock[4200], shard_lock[4300];
    snprintf(folder_lock, sizeof folder_lock, "%s/.sweep.lock", s.dir);
    snprintf(shard_lock, sizeof shard_lock, "%s/.sweep-shard-%d-of-%d.lock", s.dir, s.a.shard_k, s.a.shard_n);
    int sharded = s.a.shard_n > 1;
    int folder_fd = sharded ? csm_lock_share(folder_lock, s.dir, "sweep folder (another unsharded sweep)", &err)
                            : csm_lock_take(folder_lock, s.dir, "sweep folder", &err);
    int shard_fd = folder_fd >= 0 && sharded ? csm_lock_take(shard_lock, s.dir, "shard of the sweep", &err) : -1;
    if (folder_fd < 0 || (sharded && shard_fd < 0)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        csm_lock_drop(folder_fd, NULL);
        rc = 2;
        goto done;
    }
    int other_n = sharded ? live_shard_count(s.dir, s.a.shard_n) : 0;
    if (other_n) { /* shards of another count would run the same runs at once */
        fprintf(stderr, "csm: %s: shards of %d run in this folder now; these are of %d: give the same N\n", s.dir,
                other_n, s.a.shard_n);
        csm_lock_drop(shard_fd, shard_lock);
        csm_lock_drop(folder_fd, NULL);
        rc = 2;
        goto done;
    }
    rc = execute(&s, selected, nsel);
    csm_lock_drop(shard_fd, sharded ? shard_lock : NULL);
    csm_lock_drop(folder_fd, NULL);
done:
    free(selected);
    for (int i = 0; i < s.nruns; i++) free(s.runs[i].pick);
    free(s.runs);
    csm_config_free(&s.base);
    csm_args_free(&s.a.args);
    return rc;
}

