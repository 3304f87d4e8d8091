/* csm run and csm check. */
#include "commands.h"
#include "error.h"
#include "args.h"
#include "simulation.h"

#include "config.h"
#include "clustering.h"
#include "config_tree.h"
#include "kernel.h"
#include "log.h"
#include "sim.h"
#include "sweep.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct run_args {
    const char *config;
    const char *out;
    const char **sets;
    int nsets;
    long frames; /* -1: from the config */
    csm_args args; /* owns sets */
    int threads;
    int force;
    const char *resume; /* --resume LOG.h5 */
    char frames_set[64];
} run_args;

static int parse_args(int argc, char **argv, run_args *a, int allow_run_options)
{
    memset(a, 0, sizeof *a);
    int frames = -1;
    const csm_arg options[] = {
        {"-o", "--output", CSM_ARG_TEXT, &a->out, 0, NULL},
        {"--frames", NULL, CSM_ARG_COUNT, &frames, 0, NULL},
        {"--threads", NULL, CSM_ARG_THREADS, &a->threads, 0, NULL},
        {"--force", NULL, CSM_ARG_FLAG, &a->force, 0, NULL},
        {"--resume", NULL, CSM_ARG_TEXT, &a->resume, 0, NULL},
        {NULL, NULL, 0, NULL, 0, NULL},
    };
    int rc = csm_args_parse(argc, argv, allow_run_options ? options : NULL, 1, &a->args);
    a->sets = a->args.sets;
    a->nsets = a->args.nsets;
    a->config = a->args.npositional ? a->args.positional[0] : NULL;
    a->frames = frames;
    if (rc) return -1;
    if (a->resume && (a->config || a->nsets || a->out || a->force)) {
        fprintf(stderr, "csm: --resume continues a log with its own config: it takes only --frames and --threads\n");
        return -1;
    }
    if (!a->config && !a->resume) {
        fprintf(stderr, "csm: missing CONFIG\n");
        return -1;
    }
    if (a->frames >= 0) {
        snprintf(a->frames_set, sizeof a->frames_set, "time.frames=%ld", a->frames);
        a->sets[a->nsets++] = a->frames_set;
    }
    return 0;
}

static char *out_override(const char *out)
{
    /* a YAML double-quoted scalar, so that a path is never read as a number or a mapping, with
       \ and " escaped and control characters as \xHH (a path may hold any of them) */
    size_t len = 4 * strlen(out) + 32, n = 0;
    char *s = malloc(len);
    if (!s) CSM_OUT_OF_MEMORY();
    n += (size_t)snprintf(s, len, "output.path=\"");
    for (const unsigned char *c = (const unsigned char *)out; *c; c++) {
        if (*c == '"' || *c == '\\') n += (size_t)snprintf(s + n, len - n, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f) n += (size_t)snprintf(s + n, len - n, "\\x%02x", *c);
        else s[n++] = (char)*c;
    }
    snprintf(s + n, len - n, "\"");
    return s;
}

/* The pieces of a clustering that shared no particle with the rest of their object, joined. */
static void report_joined(const csm_world *w)
{
    if (w->joined_pieces > 0)
        fprintf(stderr, "csm: note: the clustering left %d piece%s of an object sharing no particle with the rest (object "
                        "%d: %d cluster%s of %d particles); each was joined by the %d particles nearest to it\n",
                w->joined_pieces, w->joined_pieces == 1 ? "" : "s", w->joined_object, w->joined_clusters,
                w->joined_clusters == 1 ? "" : "s", w->joined_particles, CSM_JOIN);
}

/* With solver.modulus: the gains alpha_c = h^2 k_c the clusters of an explicit integrator start
   with. `always` prints them (csm check); otherwise only a step too coarse for the modulus is
   reported (csm run). */
static void report_gains(const csm_config *cfg, const csm_sim *sim, int always)
{
    const csm_plugin_cfg *pc = &cfg->integrator;
    csm_integrator_traits t;
    csm_integrator_describe(pc, &t);
    double mu = t.modulus, h = cfg->dt / cfg->substeps;
    int32_t k = sim->w.C.k;
    if (!(mu > 0) || k == 0) return;
    if (t.implicit) { /* xpbd, projective_dynamics: any stiffness is stable at any step, nothing is clamped */
        if (always) fprintf(stderr, "csm: solver.modulus = %g Pa, implicit in %s: no step limit\n", mu, pc->plugin->name);
        return;
    }
    double *gain = malloc(sizeof *gain * (size_t)k), kmax = 0;
    if (!gain) return;
    csm_gain_stats st;
    csm_modulus_gains(&sim->w, mu, h, gain, &st);
    double kmean = 0; /* the springs' h^2 k_c before the clamp and the continuum goals' share */
    for (int32_t c = 0; c < k; c++) {
        double kc = csm_modulus_stiffness(&sim->w, mu, c);
        kmax = fmax(kmax, kc);
        kmean += kc / k;
    }
    free(gain);
    /* alpha_c <= 1 needs h <= 1 / sqrt(k_c) */
    long substeps = (long)ceil(cfg->dt * sqrt(kmax) - 1e-9);
    if (st.clamped)
        fprintf(stderr,
                "csm: note: solver.modulus = %g Pa asks h^2 k_c up to %.3g at h = %g s: %d of %d clusters are clamped to "
                "1 and softer than the material; the step is too coarse for the modulus (time.substeps: %ld or more)\n",
                mu, h * h * kmax, h, st.clamped, k, substeps);
    else if (always)
        fprintf(stderr, "csm: solver.modulus = %g Pa: h^2 k_c up to %.3g (mean %.3g, at most 1 for a stable step) at h = %g s; "
                "alpha_c %.3g .. %.3g (mean %.3g), the share of it the goals pull with\n", mu, h * h * kmax, h * h * kmean,
                h, st.min, st.max, st.mean);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Frame times for the median, in bounded memory: every frame's until FRAME_SAMPLES are held,
   then every second one of those and of the frames after, and so on (a run of 10^9 frames
   keeps FRAME_SAMPLES evenly spread times, not 8 GB). */
enum { FRAME_SAMPLES = 1 << 16 };
typedef struct frame_times {
    double ms[FRAME_SAMPLES];
    int32_t n;
    int64_t stride, seen;
} frame_times;

static void frame_time(frame_times *t, double ms)
{
    if (t->seen++ % t->stride) return;
    if (t->n == FRAME_SAMPLES) {
        for (int32_t k = 0; k < FRAME_SAMPLES / 2; k++) t->ms[k] = t->ms[2 * k];
        t->n = FRAME_SAMPLES / 2;
        t->stride *= 2;
        if ((t->seen - 1) % t->stride) return;
    }
    t->ms[t->n++] = ms;
}

static double frame_median(frame_times *t)
{
    int32_t n = t->n;
    qsort(t->ms, (size_t)n, sizeof *t->ms, cmp_double);
    return n ? (n % 2 ? t->ms[n / 2] : 0.5 * (t->ms[n / 2 - 1] + t->ms[n / 2])) : 0.0;
}

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { stop_requested = sig; }

static void progress(const csm_sim *sim, int32_t frames, int32_t first, double started, double ms_frame)
{
    double elapsed = csm_now() - started;
    double eta = sim->frame > first ? elapsed / (sim->frame - first) * (frames - sim->frame) : 0;
    fprintf(stderr, "\rframe %d/%d  t = %.3f s  %.3f ms/frame  ETA %d:%02d   ", sim->frame, frames,
            sim->w.time, ms_frame, (int)eta / 60, (int)eta % 60);
}

int csm_cmd_run(int argc, char **argv)
{
    run_args a;
    if (parse_args(argc, argv, &a, 1)) {
        csm_args_free(&a.args);
        fprintf(stderr, "usage: csm run CONFIG [-o OUT.h5] [--set key=value]... [--frames N] [--threads N] [--force]\n"
                        "       csm run --resume LOG.h5 [--frames N] [--threads N]\n");
        return 2;
    }
    /* -o is the config's output.path; a resumed log stays where it is now, whatever path its
       config named */
    char *outset = NULL, why[128];
    if (a.out && csm_text_check((const unsigned char *)a.out, strlen(a.out), why, sizeof why)) {
        char *semi = strchr(why, ';');
        if (semi) *semi = '\0';
        fprintf(stderr, "csm: -o: the path is %s; the log stores it in its config, which is text\n", why);
        csm_args_free(&a.args);
        return CSM_EXIT_BAD_INPUT;
    }
    if (a.out || a.resume) a.sets[a.nsets++] = outset = out_override(a.resume ? a.resume : a.out);
    int cores = 0, fewer = 0, busy = -1;
    if (!a.threads) {
        a.threads = csm_default_threads(&cores, &busy);
        fewer = a.threads > 0 && a.threads < cores;
    }
    csm_options opt = {.size = sizeof opt, .log = a.resume, .log_config = 1, .force = a.force,
                       .resume = a.resume != NULL, .threads = a.threads};
    csm_simulation *s;
    char error[1300];
    if (a.resume) csm_cli_guard(a.resume); /* it reads the log back before it writes */
    int status = csm_simulation_create(a.config, NULL, a.sets, a.nsets, &opt, &s, error, sizeof error);
    csm_cli_guard(NULL);
    free(outset);
    csm_args_free(&a.args);
    if (status) {
        fprintf(stderr, "csm: %s\n", error);
        return status;
    }
    const csm_config *cfg = csm_simulation_config(s);
    const csm_sim *sim = csm_simulation_state(s);
    const char *path = csm_simulation_log_path(s);
    if (cfg->nsweep > 0 && !a.resume)
        fprintf(stderr, "csm: note: %s holds a sweep; this runs its base config (csm sweep runs every combination)\n",
                a.config);
    if (fewer) /* said once the run stands, so that an error stays one line */
        fprintf(stderr, "csm: note: other processes keep %d of the %d cores busy: %d thread%s (--threads N to choose)\n",
                busy < cores ? busy : cores - 1, cores, a.threads, a.threads == 1 ? "" : "s");
    if (!a.resume) report_joined(&sim->w);
    if (sim->w.degenerate_clusters > 0 && !a.resume)
        fprintf(stderr, "csm: note: %d of %d clusters are planar, collinear or single particles; their A_rr is "
                        "inverted with a pseudo-inverse\n", sim->w.degenerate_clusters, sim->w.C.k);
    if (!a.resume) report_gains(cfg, sim, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* past a file size limit a write fails with EFBIG and the run stops with a message, instead of
       the process dying on SIGXFSZ */
    signal(SIGXFSZ, SIG_IGN);

    int tty = isatty(STDERR_FILENO);
    double started = csm_now(), last_print = 0, total_time = 0;
    int32_t first_frame = sim->frame;
    /* the frames' times, for the median: one stall inflates a mean */
    frame_times *times = calloc(1, sizeof *times);
    if (!times) {
        csm_simulation_close(s, "failed: out of memory", NULL, 0);
        fprintf(stderr, "csm: out of memory\n");
        return 1;
    }
    times->stride = 1;
    char status_text[1400] = "ok";
    if (a.resume && sim->frame == 0)
        fprintf(stderr, "csm: %s held no complete frame: its run starts again, from the config it stores\n", path);
    else if (a.resume)
        fprintf(stderr, "csm: resuming %s at frame %d of %d (t = %g s)\n", path, sim->frame, cfg->frames, sim->w.time);
    while (!status && sim->frame < cfg->frames) {
        if (stop_requested) {
            status = 130;
            snprintf(status_text, sizeof status_text, "interrupted");
            snprintf(error, sizeof error, "interrupted by signal %d at frame %d; the log keeps every frame written "
                     "(csm run --resume %s continues it)", (int)stop_requested, sim->frame, path);
            break;
        }
        if ((status = csm_simulation_frames(s, 1))) {
            snprintf(error, sizeof error, "%s", csm_simulation_error(s));
            snprintf(status_text, sizeof status_text, "failed: %s", error);
            break;
        }
        frame_time(times, 1e3 * sim->last.seconds[CSM_TIMING_TOTAL]);
        total_time += sim->last.seconds[CSM_TIMING_TOTAL];
        if (tty && (csm_now() - last_print > 0.2 || sim->frame == cfg->frames)) {
            progress(sim, cfg->frames, first_frame, started, 1e3 * total_time / (sim->frame - first_frame));
            last_print = csm_now();
        }
    }
    if (tty) fprintf(stderr, "\n");
    char xmf[4096], logpath[4096], name[256], closing[1300] = "";
    csm_log_xdmf_path(path, xmf, sizeof xmf);
    snprintf(logpath, sizeof logpath, "%s", path);
    snprintf(name, sizeof name, "%s", cfg->name);
    int32_t ran = sim->frame - first_frame, n = sim->w.P.n, k = sim->w.C.k;
    int threads = csm_get_threads();
    char warning[1200];
    snprintf(warning, sizeof warning, "%s", csm_simulation_warning(s));
    int close_failed = csm_simulation_close(s, status_text, closing, sizeof closing) != 0;
    if (warning[0]) fprintf(stderr, "csm: warning: %s\n", warning);
    if (close_failed && !status) {
        status = 1;
        snprintf(error, sizeof error, "%s", closing);
        close_failed = 0;
    }
    if (status) {
        fprintf(stderr, "csm: %s\n", error);
        if (close_failed) fprintf(stderr, "csm: %s\n", closing);
        else /* the message is the line above: the status's first word says what the log holds */
            fprintf(stderr, "csm: log (status '%.*s'): %s\n", (int)strcspn(status_text, ":"), status_text, logpath);
    } else {
        double median = frame_median(times);
        /* the median: one stall of a shared machine inflates a mean */
        printf("%s: %d particle%s, %d cluster%s, %d frame%s, %.3f ms/frame (median, %d thread%s)\n", name, n,
               n == 1 ? "" : "s", k, k == 1 ? "" : "s", ran, ran == 1 ? "" : "s", median, threads, threads == 1 ? "" : "s");
        printf("log:     %s\nsidecar: %s\n", logpath, xmf);
    }
    free(times);
    return status;
}

/* csm check on a config with a sweep: every run's config resolved and its scene built (a sample
   of CHECK_SWEEP_MOST, evenly spaced, where there are more), each with its notes: a setting that
   only one run has (the most clusters at the fewest substeps) is checked where it is. Returns
   the exit status of the first run that fails, 0 when all hold. */
enum { CHECK_SWEEP_MOST = 64 };

/* "about X", or "X to Y" when reclustering's versions may add up to Y. */
static const char *log_size(double bytes, double most, char *buf, size_t size)
{
    char a[16], b[16];
    csm_bytes_text(bytes, a, sizeof a);
    if (most > bytes * 1.05) snprintf(buf, size, "%s to %s", a, csm_bytes_text(most, b, sizeof b));
    else snprintf(buf, size, "about %s", a);
    return buf;
}

static int check_sweep(const run_args *a, const csm_config *base, double *total)
{
    sweep s;
    memset(&s, 0, sizeof s);
    s.a.config = a->config;
    s.a.sets = (const char **)a->sets;
    s.a.nsets = a->nsets;
    s.a.max_runs = CSM_SWEEP_MAX_RUNS;
    s.base = *base;
    csm_error err = {{0}, 0};
    int rc = 0;
    if (sweep_plan(&s, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        rc = err.code ? err.code : 2;
    }
    int step = s.nruns > CHECK_SWEEP_MOST ? (s.nruns + CHECK_SWEEP_MOST - 1) / CHECK_SWEEP_MOST : 1;
    if (!rc && step > 1)
        fprintf(stderr, "csm: note: checking every %d%s of the sweep's %d runs\n", step, step == 2 ? "nd" : step == 3 ? "rd" : "th",
                s.nruns);
    for (int i = 0; i < s.nruns && !rc; i += step) {
        int no;
        char **o = sweep_run_overrides(&s, &s.runs[i], &no), what[1024];
        sweep_describe(&s, &s.runs[i], what, sizeof what);
        csm_config cfg;
        csm_sim sim;
        if (csm_config_load(a->config, (const char *const *)o, no, &cfg, &err) == 0) {
            if (csm_sim_create(&cfg, &sim, &err) == 0) {
                char size[64];
                double most, bytes = csm_log_estimate(&sim, &most);
                int runs = i + step <= s.nruns ? step : s.nruns - i; /* the runs not checked like this one */
                total[0] += bytes * runs;
                total[1] += most * runs;
                fprintf(stderr, "csm: sweep run %d (%s): %d particles, %d clusters; its log: %s\n", i, what, sim.w.P.n,
                        sim.w.C.k, log_size(bytes, most, size, sizeof size));
                report_gains(&cfg, &sim, 0);
                report_joined(&sim.w);
                csm_sim_destroy(&sim);
            } else {
                rc = err.code ? err.code : 1;
            }
            csm_config_free(&cfg);
        } else {
            rc = err.code ? err.code : 2;
        }
        if (rc) fprintf(stderr, "csm: sweep run %d (%s): %s\n", i, what, err.msg);
        sweep_free_strings(o, no);
    }
    for (int i = 0; i < s.nruns; i++) free(s.runs[i].pick);
    free(s.runs);
    return rc;
}

int csm_cmd_check(int argc, char **argv)
{
    run_args a;
    if (parse_args(argc, argv, &a, 0)) {
        csm_args_free(&a.args);
        fprintf(stderr, "usage: csm check CONFIG [--set key=value]...\n");
        return 2;
    }
    csm_error err = {{0}, 0};
    csm_config cfg;
    int rc = csm_config_load(a.config, a.sets, a.nsets, &cfg, &err);
    if (rc) {
        csm_args_free(&a.args);
        fprintf(stderr, "csm: %s\n", err.msg);
        return err.code ? err.code : 2;
    }
    /* Build the scene too: sampling and clustering can fail on valid-looking input. */
    csm_sim sim;
    if (csm_sim_create(&cfg, &sim, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        csm_config_free(&cfg);
        csm_args_free(&a.args);
        return err.code ? err.code : 1;
    }
    fputs(cfg.resolved, stdout);
    if (cfg.nsweep > 0) {
        long runs = 1;
        for (int k = 0; k < cfg.nsweep; k++) runs *= cfg.sweep[k].nvalues;
        fprintf(stderr, "csm: sweep: %ld run%s over", runs, runs == 1 ? "" : "s");
        for (int k = 0; k < cfg.nsweep; k++) fprintf(stderr, "%s %s (%d)", k ? " x" : "", cfg.sweep[k].key, cfg.sweep[k].nvalues);
        fprintf(stderr, "; the config above is the base run\n");
    }
    report_gains(&cfg, &sim, 1);
    report_joined(&sim.w);
    double total[2] = {0, 0};
    if (cfg.nsweep > 0 && (rc = check_sweep(&a, &cfg, total)) != 0) {
        csm_sim_destroy(&sim);
        csm_config_free(&cfg);
        csm_args_free(&a.args);
        return rc;
    }
    csm_args_free(&a.args);
    char size[64];
    if (cfg.nsweep == 0) total[0] = csm_log_estimate(&sim, &total[1]);
    fprintf(stderr, "csm: %s is valid: %d object%s, %d particle%s, %d cluster%s, %d membership%s; %s: %s\n",
            a.config, cfg.nobjects, cfg.nobjects == 1 ? "" : "s", sim.w.P.n, sim.w.P.n == 1 ? "" : "s", sim.w.C.k,
            sim.w.C.k == 1 ? "" : "s", sim.w.C.m, sim.w.C.m == 1 ? "" : "s", cfg.nsweep > 0 ? "the sweep's logs" : "its log",
            log_size(total[0], total[1], size, sizeof size));
    csm_sim_destroy(&sim);
    csm_config_free(&cfg);
    return 0;
}
