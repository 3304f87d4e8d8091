/* csm bench: per-stage timings of named scenes built in code (no config files needed).

   Each scene is a config held in memory, run without a log: warm-up frames, then a fixed number
   of measured frames (fixed, so that the final state can be compared bit for bit across thread
   counts). Reported per scene: particles, clusters, memberships, ms/frame per stage of
   Falkenstein 2017 Table 1 (median, 10th-90th percentile, mean), nanoseconds per membership per
   goal pass (the cost unit that compares across scenes and libraries: the dynamics time over the
   goal passes a frame makes and the memberships each pass visits), the peak resident memory and
   a hash of the final positions and velocities. */
#include "commands.h"
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

typedef struct scene {
    const char *name;
    const char *what;
    int warmup, frames; /* frames run before measuring, frames measured */
} scene;

static const scene scenes[] = {
    {"bunny", "Bargteil-Jones 2014 bunny: 2,020 particles, 26 random-radius clusters, strain-limited, 5 iterations",
     30, 300},
    {"beam", "Falkenstein 2017 Table 1 beam without reclustering: 5,317 particles, 200 clusters, strain-limited, "
             "5 iterations, plastic (lambda 0), compressed",
     30, 150},
    {"beam_recluster", "the same beam with `embedded` reclustering (Table 1 \"our algorithm\"): the 4 s of "
                       "compression and 20 frames after (at 4.5 s lambda = 0 reclustering runs away)",
     0, 260},
    {"regions_5k", "17^3 grid, per-particle regions of radius 1.75 (Bender's region-based setting), shape matching, "
                   "one goal pass per frame, falling onto the ground",
     30, 300},
    {"scale_10k", "box of 10,648 grid particles, random-radius clusters of ~30 members, strain-limited", 10, 100},
    {"scale_100k", "box of 103,823 grid particles, random-radius clusters of ~30 members, strain-limited", 3, 20},
    {"scale_1M", "box of 1,000,000 grid particles, random-radius clusters of ~30 members, strain-limited", 1, 5},
};
enum { NSCENES = (int)(sizeof scenes / sizeof scenes[0]) };
/* run when no scene is named: everything but the minute-long scale_1M */
static const char *const default_scenes[] = {"bunny", "beam", "beam_recluster", "regions_5k", "scale_10k",
                                             "scale_100k", NULL};

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int len = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (len < 0) abort();
        if (b->s && b->n + (size_t)len < b->cap) {
            b->n += (size_t)len;
            return;
        }
        b->cap = 2 * (b->n + (size_t)len + 256);
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
}

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

/* The scene's config text into b; returns 0, or -1 for an unknown name. `note` says what stands
   in for a missing file. */
static int scene_yaml(const char *name, buf *b, const char **note)
{
    *note = NULL;
    const char *strain_limited = "solver: {integrator: strain_limited, rotation: polar_f, alpha: 0.5, gamma: 0.5, "
                                 "iterations: 5}\n";
    put(b, "name: bench_%s\nseed: %d\n", name, strncmp(name, "beam", 4) ? 5 : 3);
    if (!strcmp(name, "bunny")) {
        /* experiments/configs/bunny.yaml */
        const char *mesh = bunny_mesh();
        put(b, "time: {dt: 0.0166667, frames: 1, substeps: 1}\nobjects:\n");
        if (mesh) {
            put(b, "  - shape: {type: mesh, path: '%s', fit: unit_box}\n", mesh);
        } else {
            put(b, "  - shape: {type: sphere, radius: 0.5}\n");
            *note = "no data/meshes/bunny00.off (data/fetch_meshes.sh): a ball of the same particle count";
        }
        put(b, "    sampling: {type: poisson, particles: 2020}\n    mass: 1.0\n    position: [0, 1.2, 0]\n"
               "    velocity: [0.5, 0, 0]\n    angular_velocity: [0, 0, 1]\n"
               "clustering: {method: random_radius, radius: 0.22}\n"
               "solver: {integrator: strain_limited, rotation: polar_f, alpha: 0.5, gamma: 0.2, iterations: 5}\n"
               "forces: [{type: gravity}]\n"
               "colliders: [{type: plane, normal: [0, 1, 0], offset: 0, restitution: 0.5, friction: 0.3}]\n");
        return 0;
    }
    if (!strcmp(name, "beam") || !strcmp(name, "beam_recluster")) {
        /* experiments/configs/beam_compress.yaml and beam_compress_embedded.yaml */
        put(b, "time: {dt: 0.0166667, frames: 1, substeps: 1}\n"
               "objects:\n  - shape: {type: box, size: [4, 1, 1]}\n    sampling: {type: poisson, particles: 5317}\n"
               "    density: 1000\n"
               "clustering: {method: fuzzy_cmeans, count: 200}\n%s"
               "plasticity: {model: jones2016, yield: 0.0, flow_rate: 1.0, hardening: 0.0}\n"
               "forces: [{type: compress, scale: 0.1, axis: x, until: 4.0}]\n",
            strain_limited);
        if (!strcmp(name, "beam_recluster"))
            put(b, "recluster: {method: embedded, cond_max: 2.0, fade_out: 30, fade_in: 10, embedding: nonlinear}\n");
        return 0;
    }
    if (!strcmp(name, "regions_5k")) {
        put(b, "time: {dt: 0.0166667, frames: 1, substeps: 1}\n"
               "objects:\n  - shape: {type: box, size: [16, 16, 16]}\n    sampling: {type: grid, spacing: 1}\n"
               "    mass: 1.0\n    position: [0, 10, 0]\n"
               "clustering: {method: per_particle, radius: 1.75}\n"
               "solver: {integrator: shape_matching, rotation: polar_apq, alpha: 0.5}\n"
               "forces: [{type: gravity}]\n"
               "colliders: [{type: plane, normal: [0, 1, 0], offset: 0, restitution: 0.0, friction: 0.3}]\n");
        return 0;
    }
    int64_t count = scale_count(name);
    if (count > 0) {
        /* a cube of side s grid points, spacing 0.1; clusters of radius 0.2 hold about 30 */
        int64_t s = (int64_t)ceil(cbrt((double)count) - 1e-9);
        int coverage = 2;
        double h = 0.1;
        put(b, "time: {dt: 0.0166667, frames: 1, substeps: 1}\n"
               "objects:\n  - shape: {type: box, size: [%.17g, %.17g, %.17g]}\n"
               "    sampling: {type: grid, spacing: %g}\n    mass: 1.0\n    position: [0, %.17g, 0]\n"
               "    angular_velocity: [0, 0, 1]\n"
               "clustering: {method: random_radius, radius: %g, coverage: %d}\n%s"
               "forces: [{type: gravity}]\n"
               "colliders: [{type: plane, normal: [0, 1, 0], offset: 0, restitution: 0.5, friction: 0.3}]\n",
            (double)(s - 1) * h, (double)(s - 1) * h, (double)(s - 1) * h, h, (double)s * h, 1.95 * h, coverage,
            strain_limited);
        return 0;
    }
    return -1;
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
    const csm_value *alpha = csm_cfg_value(&cfg->integrator, "alpha");
    const csm_value *iterations = csm_cfg_value(&cfg->integrator, "iterations");
    return (alpha && alpha->num > 0) + (iterations ? iterations->num : 0);
}

static int run_scene(const char *name, int threads, int frames_override, result *r)
{
    const scene *sc = scene_find(name);
    scene defaults = {name, "", 3, 20};
    if (!sc) sc = &defaults; /* a scale_N of another N */
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    buf text = {0};
    if (scene_yaml(name, &text, &r->note)) {
        fprintf(stderr, "csm: bench: unknown scene '%s' (bunny, beam, beam_recluster, regions_5k, scale_N)\n", name);
        return 2;
    }
    csm_set_threads(threads);
    r->threads = csm_get_threads();
    peak_reset();
    double t0 = csm_now();
    csm_config cfg;
    csm_sim sim;
    csm_error err = {{0}, 0};
    char label[96];
    snprintf(label, sizeof label, "bench:%s", name);
    if (csm_config_load_text(label, text.s, NULL, 0, &cfg, &err)) {
        free(text.s);
        fprintf(stderr, "csm: %s\n", err.msg);
        return err.code ? err.code : 1;
    }
    free(text.s);
    if (csm_sim_create(&cfg, &sim, &err)) {
        fprintf(stderr, "csm: %s\n", err.msg);
        csm_config_free(&cfg);
        return err.code ? err.code : 1;
    }
    r->setup_s = csm_now() - t0;
    r->passes = passes_per_step(&cfg) * cfg.substeps;
    int frames = frames_override > 0 ? frames_override : sc->frames;
    double *ms = malloc(sizeof(double) * STAGES * (size_t)frames);
    if (!ms) abort();
    int rc = 0;
    for (int f = 0; f < sc->warmup && !rc; f++) rc = csm_sim_frame(&sim, &err);
    double msum = 0;
    for (int f = 0; f < frames && !rc; f++) {
        rc = csm_sim_frame(&sim, &err);
        const csm_timings *t = &sim.last;
        double v[STAGES] = {t->seconds[CSM_TIMING_DYNAMICS], t->seconds[CSM_TIMING_PLASTICITY],
                            t->seconds[CSM_TIMING_RECLUSTERING], t->seconds[CSM_TIMING_EMBEDDING],
                            t->seconds[CSM_TIMING_TOTAL]};
        for (int s = 0; s < STAGES; s++) ms[s * frames + f] = 1e3 * v[s];
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
        r->hash = state_hash(&sim.w.P);
        r->peak_mib = peak_mib();
    }
    free(ms);
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
        printf(",ns_per_membership_pass,setup_s,peak_mib,hash\n");
        return;
    }
    printf("%-15s %3s %9s %8s %11s %6s %9s %9s %9s %9s %9s %17s %9s %8s %9s\n", "scene", "thr", "particles",
           "clusters", "memberships", "passes", "dynamics", "plastic", "recluster", "embed", "total", "total p10-p90",
           "mean", "ns/m/p", "peak MiB");
}

static void print_result(const result *r, int csv)
{
    if (csv) {
        printf("%s,%d,%d,%d,%.1f,%g,%d", r->name, r->threads, r->particles, r->clusters, r->memberships, r->passes,
               r->frames);
        for (int s = 0; s < STAGES; s++) printf(",%.6f,%.6f,%.6f,%.6f", r->median[s], r->p10[s], r->p90[s], r->mean[s]);
        printf(",%.3f,%.3f,%.1f,%016llx\n", r->ns_per_membership, r->setup_s, r->peak_mib, (unsigned long long)r->hash);
    } else {
        char spread[32];
        snprintf(spread, sizeof spread, "%.3f-%.3f", r->p10[4], r->p90[4]);
        printf("%-15s %3d %9d %8d %11.0f %6g %9.3f %9.3f %9.3f %9.3f %9.3f %17s %9.3f %8.2f %9.1f\n", r->name,
               r->threads, r->particles, r->clusters, r->memberships, r->passes, r->median[0], r->median[1],
               r->median[2], r->median[3], r->median[4], spread, r->mean[4], r->ns_per_membership, r->peak_mib);
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
    printf("%scsm %s (%s), %s, %ld cores, %d threads by default\n", prefix, CSM_VERSION, CSM_GIT_COMMIT, model,
           sysconf(_SC_NPROCESSORS_ONLN), csm_get_threads());
}

/* "1,2" into threads[]; returns the count or -1. */
static int parse_threads(const char *s, int *threads, int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > csm_threads_max() || n == cap) return -1;
        threads[n++] = (int)v;
        if (*end == ',') end++;
        else if (*end) return -1;
        s = end;
    }
    return n ? n : -1;
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
    size_t ndefault = sizeof default_scenes / sizeof default_scenes[0];
    const char **names = calloc((size_t)argc + ndefault, sizeof *names);
    if (!names) abort();
    int nnames = 0, csv = 0, scaling = 0, frames = 0, threads[16], nthreads = 1;
    threads[0] = 0;
    for (int k = 1; k < argc; k++) {
        const char *s = argv[k], *next = k + 1 < argc ? argv[k + 1] : NULL;
        if (!strcmp(s, "--csv")) {
            csv = 1;
        } else if (!strcmp(s, "--scaling")) {
            scaling = 1;
        } else if (!strcmp(s, "--threads") && next) {
            nthreads = parse_threads(next, threads, 16);
            if (nthreads < 0) {
                fprintf(stderr, "csm: bench: --threads %s: expected integers from 1 to %d separated by commas\n", next,
                        csm_threads_max());
                free(names);
                return 2;
            }
            k++;
        } else if (!strcmp(s, "--frames") && next) {
            char *end;
            frames = (int)strtol(next, &end, 10);
            if (*end || frames < 1) {
                fprintf(stderr, "csm: bench: --frames %s: expected a positive integer\n", next);
                free(names);
                return 2;
            }
            k++;
        } else if (!strcmp(s, "--list")) {
            for (int j = 0; j < NSCENES; j++) printf("%-15s %s\n", scenes[j].name, scenes[j].what);
            printf("%-15s %s\n", "scale_N", "any particle count N (e.g. scale_3k, scale_300k), as scale_10k");
            free(names);
            return 0;
        } else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            usage(stdout);
            free(names);
            return 0;
        } else if (s[0] == '-') {
            fprintf(stderr, "csm: bench: unknown option '%s'\n", s);
            usage(stderr);
            free(names);
            return 2;
        } else {
            if (!scene_find(s) && !scale_count(s)) {
                fprintf(stderr, "csm: bench: unknown scene '%s' (csm bench --list)\n", s);
                free(names);
                return 2;
            }
            names[nnames++] = s;
        }
    }
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
