/* csm bench: per-stage timings of named scenes.

   Each scene is a shipped config with overrides, run without a log: warm-up frames, then a fixed number
   of measured frames (fixed, so that the final state can be compared bit for bit across thread
   counts). Reported per scene: particles, clusters, memberships, ms/frame per stage of
   Falkenstein 2017 Table 1 (median, 10th-90th percentile, mean), nanoseconds per membership per
   goal pass (the cost unit that compares across scenes and libraries: the dynamics time over the
   goal passes a frame makes and the memberships each pass visits), the peak resident memory and
   a hash of the final positions and velocities; with contact, the median ms/frame of the contact
   stage (broad phase and projections, part of dynamics) and its nanoseconds per particle. */
#include "commands.h"
#include "error.h"
#include "args.h"
#include "config.h"
#include "csm_version.h"
#include "kernel.h"
#include "sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef CSM_SOURCE_DIR
#define CSM_SOURCE_DIR "."
#endif

/* A scene is a shipped config (experiments/configs/) and overrides: the bench measures what
   the experiments run. The scenes keep the default solver.conserve (angular), which the paper
   configs turn off. */
typedef struct scene {
    const char *name;
    const char *what;
    const char *config;      /* under experiments/configs/ */
    const char *const *sets; /* overrides, NULL-terminated */
    int warmup, frames;      /* frames run before measuring, frames measured */
} scene;

static const char *const default_conserve[] = {"solver.conserve=angular", NULL};
/* the paper configs choose Falkenstein's Jacobi sweeps for the embedding; the bench measures the default */
static const char *const local_global_sets[] = {"solver.conserve=angular", "recluster.embedding_solver=local_global",
                                                NULL};
/* The implicit integrators on the same scenes: one material (a modulus) and 5 iterations, as
   strain_limited's 5 passes; projective_dynamics runs all 5 (tolerance 0). */
static const char *const xpbd_sets[] = {"solver.conserve=angular", "solver.integrator=xpbd", "solver.modulus=1e4",
                                        "solver.iterations=5", NULL};
static const char *const pd_sets[] = {"solver.conserve=angular", "solver.integrator=projective_dynamics",
                                      "solver.modulus=1e4", "solver.iterations=5", "solver.tolerance=0", NULL};
/* the beam's config splits shape and volume goals, which projective_dynamics cannot (it projects
   no volume): the beam under it keeps the coupled goal, its default */
static const char *const pd_beam_sets[] = {"solver.conserve=angular", "solver.integrator=projective_dynamics",
                                           "solver.modulus=1e4", "solver.iterations=5", "solver.tolerance=0",
                                           "solver.volume=coupled", NULL};

/* the contact scenes under each method, against none: what contact costs */
static const char *const contact_none_sets[] = {"solver.conserve=angular", "contact.method=none", NULL};
static const char *const contact_proxies_sets[] = {"solver.conserve=angular", "contact.method=cluster_proxies", NULL};

static const scene scenes[] = {
    {"bunny", "Bargteil-Jones 2014 bunny: 2,020 particles, 26 random-radius clusters, strain-limited, 5 iterations",
     "bunny.yaml", default_conserve, 30, 300},
    {"bunny_xpbd", "the bunny with xpbd: modulus 1e4 Pa, 5 iterations", "bunny.yaml", xpbd_sets, 30, 300},
    {"bunny_pd", "the bunny with projective_dynamics: modulus 1e4 Pa, 5 local/global iterations", "bunny.yaml", pd_sets,
     30, 300},
    {"beam", "Falkenstein 2017 Table 1 beam without reclustering: 5,317 particles, 200 clusters, strain-limited, "
             "5 iterations, plastic (lambda 0), compressed",
     "beam_compress.yaml", default_conserve, 30, 150},
    {"beam_xpbd", "the beam (plastic, compressed) with xpbd: modulus 1e4 Pa, 5 iterations", "beam_compress.yaml",
     xpbd_sets, 30, 150},
    {"beam_pd", "the beam (plastic, compressed) with projective_dynamics: modulus 1e4 Pa, 5 iterations",
     "beam_compress.yaml", pd_beam_sets, 30, 150},
    {"beam_recluster", "the same beam with `embedded` reclustering (Table 1 \"our algorithm\"): the 4 s of "
                       "compression and 20 frames after (at 4.5 s lambda = 0 reclustering runs away); the "
                       "embedding by the default local/global steps",
     "beam_compress_embedded.yaml", local_global_sets, 0, 260},
    {"beam_recluster_jacobi", "beam_recluster with the paper's Jacobi sweeps for the embedding (the config's choice)",
     "beam_compress_embedded.yaml", default_conserve, 0, 260},
    {"regions_5k", "17^3 grid, per-particle regions of radius 1.75 (Bender's region-based setting), shape matching, "
                   "one goal pass per frame, falling onto the ground",
     "regions.yaml", NULL, 30, 300},
    {"bunnies_10", "ten bunnies of ~500 particles falling into a box, contact between particles (3 passes), "
                   "strain-limited, 5 iterations",
     "ten_bunnies.yaml", default_conserve, 30, 120},
    {"two_bunnies", "two bunnies of ~1,000 particles dropped onto each other, contact between particles",
     "two_bunnies.yaml", default_conserve, 30, 240},
    {"two_bunnies_proxies", "two_bunnies with contact by cluster proxies", "two_bunnies.yaml", contact_proxies_sets, 30,
     240},
    {"two_bunnies_none", "two_bunnies without contact between objects (what contact costs)", "two_bunnies.yaml",
     contact_none_sets, 30, 240},
    {"stack", "a stack of five 125-particle cubes, contact between particles", "stack.yaml", default_conserve, 30, 240},
    {"stack_proxies", "the stack with contact by cluster proxies", "stack.yaml", contact_proxies_sets, 30, 240},
    {"stack_none", "the stack without contact between objects (what contact costs)", "stack.yaml", contact_none_sets,
     30, 240},
    {"scale_10k", "box of 10,648 grid particles, random-radius clusters of ~30 members, strain-limited", "scale.yaml",
     NULL, 10, 100},
    {"scale_100k", "box of 103,823 grid particles, random-radius clusters of ~30 members, strain-limited",
     "scale.yaml", NULL, 3, 20},
    {"scale_1M", "box of 1,000,000 grid particles, random-radius clusters of ~30 members, strain-limited",
     "scale.yaml", NULL, 1, 5},
};
enum { NSCENES = (int)(sizeof scenes / sizeof scenes[0]) };
/* run when no scene is named: everything but the minute-long scale_1M */
static const char *const default_scenes[] = {"bunny", "beam", "beam_recluster", "regions_5k", "scale_10k",
                                             "scale_100k", NULL};

static const char *bunny_mesh(void)
{
    static const char *const paths[] = {"data/meshes/bunny00.off", CSM_SOURCE_DIR "/data/meshes/bunny00.off"};
    for (int k = 0; k < 2; k++)
        if (access(paths[k], R_OK) == 0) return paths[k];
    return NULL;
}

/* Particle count of a `scale_N` name: N with an optional k or M ("scale_300k"); 0 if not one. */
static int64_t scale_count(const char *name)
{
    if (strncmp(name, "scale_", 6) != 0) return 0;
    char *end;
    double v = strtod(name + 6, &end);
    if (end == name + 6) return 0;
    if (*end == 'k') v *= 1e3, end++;
    else if (*end == 'M') v *= 1e6, end++;
    if (*end || !(v >= 8) || v > 5e7) return 0;
    return (int64_t)llround(v);
}

/* A shipped config: from the working folder, else from the sources csm was built from. */
static const char *config_path(const char *file, char *buf, size_t size)
{
    snprintf(buf, size, "experiments/configs/%s", file);
    if (access(buf, R_OK) == 0) return buf;
    snprintf(buf, size, "%s/experiments/configs/%s", CSM_SOURCE_DIR, file);
    return buf;
}

/* The scene's overrides into sets (room for 8; made strings in text); `note` says what stands
   in for a missing file. */
static int scene_sets(const char *name, const scene *sc, const char **sets, char text[][160], const char **note)
{
    int n = 0;
    *note = NULL;
    for (const char *const *o = sc->sets; o && *o; o++) sets[n++] = *o;
    if (!strncmp(name, "bunny", 5) && !bunny_mesh()) {
        sets[n++] = "objects.0.shape={type: sphere, radius: 0.5}";
        *note = "no data/meshes/bunny00.off (data/fetch_meshes.sh): a ball of the same particle count";
    }
    int64_t count = scale_count(name);
    if (count > 0) {
        /* a cube of side s grid points, spacing 0.1, resting its height above the ground */
        int64_t side = (int64_t)ceil(cbrt((double)count) - 1e-9);
        double h = 0.1, edge = (double)(side - 1) * h;
        snprintf(text[0], 160, "objects.0.shape.size=[%.17g, %.17g, %.17g]", edge, edge, edge);
        snprintf(text[1], 160, "objects.0.position=[0, %.17g, 0]", (double)side * h);
        sets[n++] = text[0];
        sets[n++] = text[1];
    }
    return n;
}

static const scene *scene_find(const char *name)
{
    for (int k = 0; k < NSCENES; k++)
        if (!strcmp(scenes[k].name, name)) return &scenes[k];
    return NULL;
}

/* Peak resident memory: reset the kernel's high-water mark (Linux clear_refs 5), read it back. */
static void peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

static double peak_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &kib) == 1) break;
    if (f) fclose(f);
    if (kib < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kib = ru.ru_maxrss;
    }
    return (double)kib / 1024.0;
}

enum { STAGES = 5 };
static const char *const stage_names[STAGES] = {"dynamics", "plasticity", "reclustering", "embedding", "total"};

typedef struct result {
    char name[64];
    int threads, frames;
    int32_t particles, clusters;
    double memberships; /* mean over the measured frames */
    double passes;      /* goal passes per frame */
    double median[STAGES], p10[STAGES], p90[STAGES], mean[STAGES]; /* ms/frame */
    double ns_per_membership;
    double setup_s, peak_mib;
    double factor_s; /* a plugin's "factorisation" timing over the whole run, warm-up included */
    double contact_ms; /* median of the "contact" timing over the measured frames (0: no contact) */
    uint64_t hash;
    const char *note;
} result;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, int n, double q)
{
    if (n == 0) return 0;
    double r = q * (n - 1);
    int lo = (int)floor(r), hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (r - lo) * (sorted[hi] - sorted[lo]);
}

/* FNV-1a over the bytes of the final positions and velocities. */
static uint64_t state_hash(const csm_particles *P)
{
    uint64_t h = 1469598103934665603ull;
    const double *arrays[2] = {P->x, P->v};
    for (int a = 0; a < 2; a++) {
        const unsigned char *p = (const unsigned char *)arrays[a];
        for (size_t k = 0; k < sizeof(double) * 3 * (size_t)P->n; k++) h = (h ^ p[k]) * 1099511628211ull;
    }
    return h;
}

/* Goal passes one step makes: the spring pass (alpha > 0) and the projections. */
static double passes_per_step(const csm_config *cfg)
{
    csm_integrator_traits t;
    csm_integrator_describe(&cfg->integrator, &t);
    return (t.alpha > 0) + t.iterations;
}

static int run_scene(const char *name, int threads, int frames_override, result *r)
{
    const scene *sc = scene_find(name);
    scene defaults = {name, "", "scale.yaml", NULL, 3, 20};
    if (!sc && scale_count(name)) sc = &defaults; /* a scale_N of another N */
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    if (!sc) {
        fprintf(stderr, "csm: bench: unknown scene '%s' (csm bench --list)\n", name);
        return 2;
    }
    const char *sets[8];
    char text[2][160], path[4096];
    int nsets = scene_sets(name, sc, sets, text, &r->note);
    csm_set_threads(threads);
    r->threads = csm_get_threads();
    peak_reset();
    double t0 = csm_now();
    csm_config cfg;
    csm_sim sim;
    csm_error err = {{0}, 0};
    if (csm_config_load(config_path(sc->config, path, sizeof path), sets, nsets, &cfg, &err)) {
        fprintf(stderr, "csm: bench %s: %s\n", name, err.msg);
        return err.code ? err.code : 1;
    }
    if (csm_sim_create(&cfg, &sim, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        csm_config_free(&cfg);
        return err.code ? err.code : 1;
    }
    r->setup_s = csm_now() - t0;
    r->passes = passes_per_step(&cfg) * cfg.substeps;
    int frames = frames_override > 0 ? frames_override : sc->frames;
    double *ms = malloc(sizeof(double) * STAGES * (size_t)frames);
    if (!ms) CSM_OUT_OF_MEMORY();
    int rc = 0;
    int kf = -1, kc = -1; /* the factorisation a plugin times, apart from the steps; the contact stage */
    for (int k = 0; k < sim.report.ntimings; k++) {
        if (!strcmp(sim.report.timing_name[k], "factorisation")) kf = k;
        if (!strcmp(sim.report.timing_name[k], "contact")) kc = k;
    }
    double *contact = malloc(sizeof(double) * (size_t)frames + 1);
    if (!contact) CSM_OUT_OF_MEMORY();
    for (int f = 0; f < sc->warmup && !rc; f++) {
        rc = csm_sim_frame(&sim, &err);
        if (kf >= 0) r->factor_s += sim.last.seconds[kf];
    }
    double msum = 0;
    for (int f = 0; f < frames && !rc; f++) {
        rc = csm_sim_frame(&sim, &err);
        if (kf >= 0) r->factor_s += sim.last.seconds[kf];
        const csm_timings *t = &sim.last;
        double v[STAGES] = {t->seconds[CSM_TIMING_DYNAMICS], t->seconds[CSM_TIMING_PLASTICITY],
                            t->seconds[CSM_TIMING_RECLUSTERING], t->seconds[CSM_TIMING_EMBEDDING],
                            t->seconds[CSM_TIMING_TOTAL]};
        for (int s = 0; s < STAGES; s++) ms[s * frames + f] = 1e3 * v[s];
        contact[f] = kc >= 0 ? 1e3 * t->seconds[kc] : 0.0;
        msum += sim.w.C.m;
    }
    if (rc) {
        fprintf(stderr, "csm: bench %s: %s\n", name, err.msg);
    } else {
        r->frames = frames;
        r->particles = sim.w.P.n;
        r->clusters = sim.w.C.k;
        r->memberships = msum / frames;
        for (int s = 0; s < STAGES; s++) {
            double *col = &ms[s * frames], sum = 0;
            for (int f = 0; f < frames; f++) sum += col[f];
            qsort(col, (size_t)frames, sizeof *col, cmp_double);
            r->median[s] = percentile(col, frames, 0.5);
            r->p10[s] = percentile(col, frames, 0.1);
            r->p90[s] = percentile(col, frames, 0.9);
            r->mean[s] = sum / frames;
        }
        r->ns_per_membership = 1e6 * r->median[0] / (r->passes * r->memberships);
        qsort(contact, (size_t)frames, sizeof *contact, cmp_double);
        r->contact_ms = percentile(contact, frames, 0.5);
        r->hash = state_hash(&sim.w.P);
        r->peak_mib = peak_mib();
    }
    free(ms);
    free(contact);
    csm_sim_destroy(&sim);
    csm_config_free(&cfg);
    return rc ? (err.code ? err.code : 1) : 0;
}

static void print_header(int csv)
{
    if (csv) {
        printf("scene,threads,particles,clusters,memberships,passes_per_frame,frames");
        for (int s = 0; s < STAGES; s++)
            printf(",%s_median_ms,%s_p10_ms,%s_p90_ms,%s_mean_ms", stage_names[s], stage_names[s], stage_names[s],
                   stage_names[s]);
        printf(",ns_per_membership_pass,setup_s,peak_mib,hash,factor_s,contact_median_ms,contact_ns_per_particle\n");
        return;
    }
    printf("%-19s %3s %9s %8s %11s %6s %9s %9s %9s %9s %9s %17s %9s %8s %9s %8s %8s %10s %9s\n", "scene", "thr",
           "particles", "clusters", "memberships", "passes", "dynamics", "plastic", "recluster", "embed", "total",
           "total p10-p90", "mean", "ns/m/p", "peak MiB", "setup s", "factor s", "contact ms", "ns/p");
}

static void print_result(const result *r, int csv)
{
    if (csv) {
        printf("%s,%d,%d,%d,%.1f,%g,%d", r->name, r->threads, r->particles, r->clusters, r->memberships, r->passes,
               r->frames);
        for (int s = 0; s < STAGES; s++) printf(",%.6f,%.6f,%.6f,%.6f", r->median[s], r->p10[s], r->p90[s], r->mean[s]);
        printf(",%.3f,%.3f,%.1f,%016llx,%.4f,%.6f,%.1f\n", r->ns_per_membership, r->setup_s, r->peak_mib,
               (unsigned long long)r->hash, r->factor_s, r->contact_ms, 1e6 * r->contact_ms / r->particles);
    } else {
        char spread[32];
        snprintf(spread, sizeof spread, "%.3f-%.3f", r->p10[4], r->p90[4]);
        printf("%-19s %3d %9d %8d %11.0f %6g %9.3f %9.3f %9.3f %9.3f %9.3f %17s %9.3f %8.2f %9.1f %8.3f %8.4f %10.3f %9.1f\n",
               r->name, r->threads, r->particles, r->clusters, r->memberships, r->passes, r->median[0], r->median[1],
               r->median[2], r->median[3], r->median[4], spread, r->mean[4], r->ns_per_membership, r->peak_mib,
               r->setup_s, r->factor_s, r->contact_ms, 1e6 * r->contact_ms / r->particles);
    }
    fflush(stdout);
}

static void machine_line(const char *prefix)
{
    char model[256] = "unknown CPU", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(model, sizeof model, "%s", colon + 2);
            model[strcspn(model, "\n")] = 0;
            break;
        }
    }
    if (f) fclose(f);
    printf("%scsm %s (%s), %s, %ld cores, %d threads by default\n", prefix, CSM_VERSION, csm_git_commit, model,
           sysconf(_SC_NPROCESSORS_ONLN), csm_get_threads());
}

static void usage(FILE *f)
{
    fprintf(f, "usage: csm bench [SCENE...] [--threads N[,N...]] [--frames N] [--csv] [--scaling] [--list]\n");
}

/* Müller 2005's time against points: ms/frame of scale_N from 1k to 1M particles, on one thread
   and on every core, with the speed-up. */
static int scaling_report(int csv, int frames)
{
    static const char *const sizes[] = {"scale_1k", "scale_3k", "scale_10k", "scale_30k", "scale_100k",
                                        "scale_300k", "scale_1M"};
    int all = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (all < 1) all = 1;
    if (csv)
        printf("scene,particles,memberships,total_ms_1_thread,total_ms_%d_threads,speedup,ns_per_particle_frame,"
               "identical\n", all);
    else
        printf("%-11s %9s %11s %12s %12s %8s %13s %9s\n", "scene", "particles", "memberships", "1 thread ms",
               "all cores ms", "speedup", "ns/particle", "identical");
    for (int k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); k++) {
        result one, many;
        int fr = frames > 0 ? frames : k < 3 ? 50 : k < 5 ? 10 : 4;
        if (run_scene(sizes[k], 1, fr, &one)) return 1;
        if (run_scene(sizes[k], all, fr, &many)) return 1;
        double speedup = many.median[4] > 0 ? one.median[4] / many.median[4] : 0;
        const char *same = one.hash == many.hash ? "yes" : "NO";
        if (csv)
            printf("%s,%d,%.0f,%.6f,%.6f,%.3f,%.3f,%s\n", sizes[k], one.particles, one.memberships, one.median[4],
                   many.median[4], speedup, 1e6 * many.median[4] / many.particles, same);
        else
            printf("%-11s %9d %11.0f %12.3f %12.3f %8.2f %13.1f %9s\n", sizes[k], one.particles, one.memberships,
                   one.median[4], many.median[4], speedup, 1e6 * many.median[4] / many.particles, same);
        fflush(stdout);
    }
    return 0;
}

int csm_cmd_bench(int argc, char **argv)
{
    int csv = 0, scaling = 0, list = 0, frames = 0, threads[16] = {0}, nthreads = 1;
    const csm_arg options[] = {
        {"--csv", NULL, CSM_ARG_FLAG, &csv, 0, NULL},
        {"--scaling", NULL, CSM_ARG_FLAG, &scaling, 0, NULL},
        {"--list", NULL, CSM_ARG_FLAG, &list, 0, NULL},
        {"--frames", NULL, CSM_ARG_COUNT, &frames, 1, NULL},
        {"--threads", NULL, CSM_ARG_THREAD_LIST, threads, 16, &nthreads},
        {NULL, NULL, 0, NULL, 0, NULL},
    };
    csm_args args;
    if (csm_args_parse(argc, argv, options, -1, &args) || args.nsets) {
        if (args.nsets) fprintf(stderr, "csm: bench: scenes take no --set (csm run does)\n");
        usage(stderr);
        csm_args_free(&args);
        return 2;
    }
    if (list) {
        for (int j = 0; j < NSCENES; j++) printf("%-21s %s\n", scenes[j].name, scenes[j].what);
        printf("%-21s %s\n", "scale_N", "any particle count N (e.g. scale_3k, scale_300k), as scale_10k");
        csm_args_free(&args);
        return 0;
    }
    size_t ndefault = sizeof default_scenes / sizeof default_scenes[0];
    const char **names = calloc((size_t)argc + ndefault, sizeof *names);
    if (!names) CSM_OUT_OF_MEMORY();
    int nnames = 0;
    for (int k = 0; k < args.npositional; k++) {
        const char *s = args.positional[k];
        if (!scene_find(s) && !scale_count(s)) {
            fprintf(stderr, "csm: bench: unknown scene '%s' (csm bench --list)\n", s);
            free(names);
            csm_args_free(&args);
            return 2;
        }
        names[nnames++] = s;
    }
    csm_args_free(&args);
    if (!csv) machine_line("");
    if (scaling) {
        free(names);
        return scaling_report(csv, frames);
    }
    if (nnames == 0)
        for (const char *const *d = default_scenes; *d; d++) names[nnames++] = *d;
    print_header(csv);
    int status = 0;
    for (int k = 0; k < nnames; k++) {
        result first = {0};
        for (int t = 0; t < nthreads; t++) {
            result r;
            int rc = run_scene(names[k], threads[t], frames, &r);
            if (rc) {
                status = rc;
                break;
            }
            if (r.note && t == 0 && !csv) printf("  (%s: %s)\n", r.name, r.note);
            print_result(&r, csv);
            if (t == 0) {
                first = r;
            } else if (!csv) {
                printf("  %s: %.2fx the speed of %d thread(s); final state %s\n", r.name,
                       r.median[4] > 0 ? first.median[4] / r.median[4] : 0, first.threads,
                       r.hash == first.hash ? "bitwise identical" : "DIFFERS");
            }
        }
    }
    free(names);
    return status;
}
