/* csm info: what a log holds. */
#include "commands.h"

#include "log.h"

#include <hdf5.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int64_t read_int_attr(hid_t obj, const char *name)
{
    int64_t v = -1;
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
    return v;
}

static double read_double_attr(hid_t obj, const char *name)
{
    double v = 0;
    if (H5Aexists(obj, name) <= 0) return 0;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_DOUBLE, &v);
    H5Aclose(a);
    return v;
}

/* Read a whole 1-D dataset of doubles or ints (converted); returns its length or -1. */
static herr_t print_object(hid_t obj, const char *name, const H5O_info_t *info, void *user)
{
    (void)user;
    if (info->type != H5O_TYPE_DATASET) return 0;
    hid_t ds = H5Dopen2(obj, name, H5P_DEFAULT);
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[4] = {0};
    int rank = H5Sget_simple_extent_ndims(sp);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    char shape[96] = "(";
    for (int k = 0; k < rank; k++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%llu%s", (unsigned long long)dims[k],
                 k + 1 < rank ? ", " : rank == 1 ? ",)" : ")");
    char desc[4096];
    csm_log_string_attr(ds, "description", desc, sizeof desc);
    printf("  /%-32s %-16s %s\n", name, shape, desc);
    H5Sclose(sp);
    H5Dclose(ds);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The plastic state over the run: largest cond(F^p), range of mean det F^p, most clusters that
   yielded in a frame, skipped updates. Silent for logs without plastic flow. */
static void print_plasticity(hid_t f)
{
    double *cond = NULL, *volume = NULL;
    int32_t *yielded = NULL, *skipped = NULL;
    int64_t T = csm_h5_read_all(f, "/diagnostics/max_cond_Fp", H5T_NATIVE_DOUBLE, (void **)&cond);
    int64_t Tv = csm_h5_read_all(f, "/diagnostics/volume_ratio", H5T_NATIVE_DOUBLE, (void **)&volume);
    int64_t Ty = csm_h5_read_all(f, "/diagnostics/yielded", H5T_NATIVE_INT32, (void **)&yielded);
    int64_t Ts = csm_h5_read_all(f, "/diagnostics/plastic_skipped", H5T_NATIVE_INT32, (void **)&skipped);
    if (T > 0 && Tv == T && Ty == T && Ts == T) {
        double cmax = 0, vmin = volume[0], vmax = volume[0];
        int32_t ymax = 0;
        int64_t skip = 0;
        for (int64_t t = 0; t < T; t++) {
            cmax = cond[t] > cmax ? cond[t] : cmax;
            vmin = volume[t] < vmin ? volume[t] : vmin;
            vmax = volume[t] > vmax ? volume[t] : vmax;
            ymax = yielded[t] > ymax ? yielded[t] : ymax;
            skip += skipped[t];
        }
        if (ymax > 0 || cmax > 1)
            printf("  %-14s max cond(F^p) %.4g; mean det F^p %.12f .. %.12f; up to %d clusters yielded per frame; "
                   "%lld updates skipped (degenerate F^e)\n",
                   "plastic", cmax, vmin, vmax, ymax, (long long)skip);
    }
    free(cond);
    free(volume);
    free(yielded);
    free(skipped);
}

/* Clusters turned inside out (det F < 0): how many at most, from when, and how many at the end,
   where the energy of F's rotation holds them so. Silent for logs without any. */
static void print_inverted(hid_t f)
{
    int32_t *inv = NULL;
    double *time = NULL;
    int64_t T = csm_h5_read_all(f, "/diagnostics/inverted_clusters", H5T_NATIVE_INT32, (void **)&inv);
    int64_t Tt = csm_h5_read_all(f, "/frames/time", H5T_NATIVE_DOUBLE, (void **)&time);
    int32_t most = 0;
    int64_t first = -1;
    for (int64_t t = 0; t < T && Tt == T; t++) {
        if (inv[t] > 0 && first < 0) first = t;
        most = inv[t] > most ? inv[t] : most;
    }
    if (most > 0)
        printf("  %-14s up to %d clusters per frame turned inside out (det F < 0, /diagnostics/inverted_clusters), "
               "from t = %.4g s; %d at the last frame%s\n",
               "inverted", most, time[first], inv[T - 1],
               inv[T - 1] > 0 ? ", held so by the energy: a step too long or too few iterations where they turned "
                                "(time.substeps, solver.iterations)"
                              : "");
    free(inv);
    free(time);
}

/* Where energy_error beyond 1 % of the energy given comes from, as far as the run's settings say:
   the parts of the step that are no energy's gradient and have no term of the budget. Measured on
   stretch_cube.yaml over 60 frames (alpha 1): shape_matching with conserve angular and polar_apq
   +0.5 % / -2.8 %, with the papers' conserve none and polar_f +24 %, strain_limited (defaults)
   +6.2 % / -62.5 %; spin_cube.yaml (alpha 0.5): +1.9 % with the papers' goals, +0 % without. */
static void print_energy_sources(hid_t f)
{
    char integrator[64] = "", rotation[64] = "", conserve[64] = "", text[900] = "";
    csm_log_string_attr(f, "integrator", integrator, sizeof integrator);
    csm_log_string_attr(f, "rotation", rotation, sizeof rotation);
    csm_log_string_attr(f, "solver.conserve", conserve, sizeof conserve);
    size_t n = 0;
    if (strcmp(conserve, "none") == 0 && rotation[0] && strcmp(rotation, "polar_apq") != 0)
        n += (size_t)snprintf(text + n, sizeof text - n, "%sthe papers' goals (conserve none, rotation %s) are no energy's "
                              "gradient and do work (conserve angular with polar_apq does none)", n ? "; " : "", rotation);
    if (n < sizeof text && (strcmp(integrator, "strain_limited") == 0 || strcmp(integrator, "pbd") == 0))
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s's projections are no energy's gradient and take and give "
                              "energy", n ? "; " : "", integrator);
    if (n < sizeof text && strcmp(integrator, "xpbd") == 0)
        n += (size_t)snprintf(text + n, sizeof text - n, "%sxpbd's steps are not converged implicit Euler steps: their "
                              "loss has no term (/diagnostics/iteration_residual)", n ? "; " : "");
    /* dissipated_numerical is implicit Euler's loss over a converged step; a step whose iterations
       stopped short of the tolerance differs from it by what no term holds (the spinning cube at 2
       iterations lost its 1.6 J, and the term counts 2.57: +71 % "created"; the refined torsion's
       static solve at 400: -82 % lost) */
    double *residual = NULL, worst = 0, tolerance = read_double_attr(f, "solver.tolerance");
    int64_t Tr = csm_h5_read_all(f, "/diagnostics/iteration_residual", H5T_NATIVE_DOUBLE, (void **)&residual);
    for (int64_t t = 0; t < Tr; t++) worst = fmax(worst, residual[t]);
    free(residual);
    if (n < sizeof text && strcmp(integrator, "projective_dynamics") == 0 && worst > tolerance)
        n += (size_t)snprintf(text + n, sizeof text - n, "%sprojective_dynamics' iterations stopped short of the "
                              "tolerance (/diagnostics/iteration_residual up to %.3g, solver.tolerance %.3g): "
                              "dissipated_numerical is a converged step's loss, and what unconverged steps differ by "
                              "has no term", n ? "; " : "", worst, tolerance);
    double *gain = NULL, hi = 0;
    int64_t T3 = csm_h5_read_all(f, "/diagnostics/alpha_c", H5T_NATIVE_DOUBLE, (void **)&gain);
    for (int64_t t = 1; t < T3 / 3; t++) hi = fmax(hi, gain[3 * t + 2]);
    free(gain);
    int explicit = strcmp(integrator, "shape_matching") == 0 || strcmp(integrator, "strain_limited") == 0;
    if (n < sizeof text && explicit && hi >= 0.75)
        snprintf(text + n, sizeof text - n, "%ssymplectic Euler's own error at alpha_c up to %.3g (it grows with "
                 "h^2 k_c; 1 is its stability limit)", n ? "; " : "", hi);
    if (text[0]) printf("  %-14s known sources: %s\n", "", text);
}

/* Below this many joules the bodies held and were given no energy (rotation_study's control, a
   plate at rest, held 4.65e-27 J, and its round-off read "+96.7 % created"). */
#define NO_ENERGY 1e-12

/* The energy budget: the worst /diagnostics/energy_error, created (> 0) and lost without account
   (< 0), relative to the energy given (the most kinetic + elastic + lag energy held plus the most
   work done from outside), and its known sources where it exceeds 1 %. Silent for logs without it. */
static void print_energy(hid_t f)
{
    static const char *const names[] = {"/diagnostics/energy_error", "/diagnostics/kinetic_energy",
                                        "/diagnostics/elastic_energy", "/diagnostics/elastic_lag",
                                        "/diagnostics/work_external", "/diagnostics/dissipated_contact"};
    double *v[6] = {NULL};
    int64_t T = -1, ok = 1;
    for (int k = 0; k < 5; k++) {
        int64_t n = csm_h5_read_all(f, names[k], H5T_NATIVE_DOUBLE, (void **)&v[k]);
        ok &= n > 0 && (T < 0 || n == T);
        T = n;
    }
    int contact = ok && H5Lexists(f, names[5], H5P_DEFAULT) > 0 &&
                  csm_h5_read_all(f, names[5], H5T_NATIVE_DOUBLE, (void **)&v[5]) == T; /* older logs: none */
    if (ok) {
        double held = 0, work = 0, gave = 0, hi = 0, lo = 0;
        for (int64_t t = 0; t < T; t++) {
            held = fmax(held, v[1][t] + v[2][t] + v[3][t]);
            work = fmax(work, fabs(v[4][t]));
            if (contact) gave = fmax(gave, -v[5][t]);
            hi = fmax(hi, v[0][t]);
            lo = fmin(lo, v[0][t]);
        }
        double given = held + work + gave;
        /* bodies at rest all run hold round-off: a share of that is no measure of anything */
        int none = given < NO_ENERGY;
        if (none && isfinite(given))
            printf("  %-14s the bodies held and were given no energy (%.3g J); energy_error between %.3g and %.3g J\n",
                   "energy budget", given, lo, hi);
        else if (given > 0 && isfinite(given))
            printf("  %-14s energy_error at most %+.3g %% created, %+.3g %% lost without account, of %.4g J given\n",
                   "energy budget", 100 * hi / given, 100 * lo / given, given);
        if (!none && given > 0 && fmax(hi, -lo) > 0.01 * given) print_energy_sources(f);
        if (contact && v[5][T - 1] != 0)
            printf("  %-14s contact %s %.4g J %s the bodies (/diagnostics/dissipated_contact: the budget of the frames "
                   "with contact)\n", "", v[5][T - 1] > 0 ? "took" : "gave", fabs(v[5][T - 1]),
                   v[5][T - 1] > 0 ? "from" : "to");
    }
    for (int k = 0; k < 6; k++) free(v[k]);
    double *moved = NULL;
    int64_t n = csm_h5_read_all(f, "/diagnostics/recluster_energy", H5T_NATIVE_DOUBLE, (void **)&moved);
    if (n > 0 && moved[n - 1] != 0)
        printf("  %-14s reclustering's weight changes %s %.4g J of stored energy (/diagnostics/recluster_energy)\n", "",
               moved[n - 1] > 0 ? "added" : "released", fabs(moved[n - 1]));
    free(moved);
}

/* Reclustering events: removals, additions, and additions whose embedding stopped at its cap. */
static void print_recluster(hid_t f)
{
    if (H5Lexists(f, "/recluster/events", H5P_DEFAULT) <= 0) return;
    hid_t d = H5Dopen2(f, "/recluster/events", H5P_DEFAULT);
    if (d < 0) return;
    hid_t space = H5Dget_space(d);
    hssize_t rows = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    typedef struct { int32_t frame; char kind[8]; int32_t capped; } row;
    row *r = rows > 0 ? calloc((size_t)rows, sizeof *r) : NULL;
    hid_t kind = H5Tcopy(H5T_C_S1);
    H5Tset_size(kind, sizeof r->kind);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(row));
    H5Tinsert(t, "frame", HOFFSET(row, frame), H5T_NATIVE_INT32);
    H5Tinsert(t, "kind", HOFFSET(row, kind), kind);
    H5Tinsert(t, "embedding_capped", HOFFSET(row, capped), H5T_NATIVE_INT32);
    if (r && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) >= 0) {
        /* the rows in order while their frames are at least 1 and do not fall: a failed write leaves
           rows of zeros behind them (a resume cuts them) */
        int64_t added = 0, removed = 0, capped = 0, written = 0;
        while (written < rows && r[written].frame >= (written ? r[written - 1].frame : 1)) {
            added += strcmp(r[written].kind, "added") == 0;
            removed += strcmp(r[written].kind, "removed") == 0;
            capped += r[written].capped != 0;
            written++;
        }
        printf("  %-14s %lld clusters removed, %lld added; %lld embeddings stopped at their iteration cap\n",
               "reclustering", (long long)removed, (long long)added, (long long)capped);
        if (written < rows)
            printf("  %-14s %lld rows after them were never written (the run stopped in a failed write)\n", "",
                   (long long)(rows - written));
    }
    H5Tclose(t);
    H5Tclose(kind);
    H5Dclose(d);
    free(r);
}

/* The spring gains: the modulus and conserve setting, the range of alpha_c over the run (frame
   0 is before any step) and the most clusters clamped to 1 in a frame. */
static void print_stiffness(hid_t f)
{
    double *gain = NULL;
    int32_t *clamped = NULL;
    int64_t T3 = csm_h5_read_all(f, "/diagnostics/alpha_c", H5T_NATIVE_DOUBLE, (void **)&gain);
    int64_t T = csm_h5_read_all(f, "/diagnostics/alpha_clamped", H5T_NATIVE_INT32, (void **)&clamped);
    char conserve[64] = "";
    csm_log_string_attr(f, "solver.conserve", conserve, sizeof conserve);
    if (T > 1 && T3 == 3 * T) {
        double lo = gain[3], hi = gain[5];
        int32_t most = 0;
        for (int64_t t = 1; t < T; t++) {
            lo = gain[3 * t] < lo ? gain[3 * t] : lo;
            hi = gain[3 * t + 2] > hi ? gain[3 * t + 2] : hi;
            most = clamped[t] > most ? clamped[t] : most;
        }
        double mu = read_double_attr(f, "solver.modulus");
        if (mu > 0)
            printf("  %-14s modulus %g Pa: alpha_c %.4g .. %.4g; up to %d clusters clamped to 1 per frame%s\n",
                   "stiffness", mu, lo, hi, most, most ? " (the step is too coarse for the modulus)" : "");
        else
            printf("  %-14s alpha %.4g (solver.modulus 0: the same gain for every cluster)\n", "stiffness", hi);
    }
    if (conserve[0]) printf("  %-14s %s\n", "conserve", conserve);
    free(gain);
    free(clamped);
}

/* The next cell of a CSV line at *p (RFC 4180: a quoted cell may hold commas, and "" is a quote),
   unquoted in place; NULL at the line's end. */
static char *csv_cell(char **p)
{
    char *s = *p, *out = s, *cell = s;
    if (!s) return NULL;
    if (*s == '"') {
        for (s++;; s++) {
            if (*s == '"' && s[1] == '"') *out++ = '"', s++;
            else if (*s == '"' || !*s) break;
            else *out++ = *s;
        }
        if (*s == '"') s++;
    } else {
        while (*s && *s != ',') *out++ = *s++;
    }
    *p = *s == ',' ? s + 1 : NULL;
    *out = '\0';
    return cell;
}

/* A sweep's folder (csm sweep -o DIR): its index.csv as a summary, the runs by status and one
   line per run (its id, status, frames and swept values). Returns -1 when DIR holds no index. */
static int print_sweep(const char *dir)
{
    char path[4200], line[8192], head[8192];
    snprintf(path, sizeof path, "%s/index.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (!fgets(head, sizeof head, f)) {
        fclose(f);
        return -1;
    }
    head[strcspn(head, "\r\n")] = '\0';
    /* columns: run, the swept keys..., status, frames, wall_s, path */
    char *cols[64], *at = head;
    int ncol = 0;
    for (char *t; ncol < 64 && (t = csv_cell(&at));) cols[ncol++] = t;
    int status_at = -1;
    for (int k = 0; k < ncol; k++)
        if (!strcmp(cols[k], "status")) status_at = k;
    if (status_at < 1) {
        fclose(f);
        return -1;
    }
    long runs = 0, ok = 0;
    printf("%s: a sweep\n", dir);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *cell[64], *p = line;
        int n = 0;
        for (char *t; n < 64 && (t = csv_cell(&p));) cell[n++] = t;
        if (n <= status_at + 1) continue;
        runs++;
        ok += !strcmp(cell[status_at], "ok");
        printf("  %s  %-11s %6s frames ", cell[0], cell[status_at], cell[status_at + 1]);
        for (int k = 1; k < status_at; k++) printf(" %s=%s", cols[k], cell[k]);
        printf("\n");
    }
    fclose(f);
    printf("  %ld run%s: %ld ok, %ld not (csm info %s/RUN.h5 for one)\n", runs, runs == 1 ? "" : "s", ok, runs - ok, dir);
    return 0;
}

int csm_cmd_info(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: csm info OUT.h5\n");
        return 2;
    }
    const char *path = argv[1];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && print_sweep(path) == 0) return 0;
    csm_cli_guard(path); /* for the whole command: it reads the log, whatever its bytes */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (H5Fis_hdf5(path) <= 0) {
        char why[160];
        fprintf(stderr, "csm: %s: %s\n", path, csm_log_not_a_log(path, why, sizeof why));
        return 2;
    }
    char note[512];
    int live = 0;
    hid_t f = csm_log_open_read(path, 0, &live, note, sizeof note);
    if (f < 0) {
        fprintf(stderr, "csm: %s: cannot open the log\n", path);
        return 1;
    }
    if (H5Aexists(f, "csm_version") <= 0) {
        fprintf(stderr, "csm: %s: an HDF5 file, but not a csm log (it has no csm_version attribute)\n", path);
        H5Fclose(f);
        return 2;
    }
    char s[4096];
    if (csm_log_check_shapes(f, s, sizeof s)) {
        fprintf(stderr, "csm: %s: corrupt log: %s\n", path, s);
        H5Fclose(f);
        return 2;
    }
    printf("%s\n", path);
    if (note[0]) printf("  note: %s\n", note);
    const char *attrs[] = {"name", "status", "warning", "csm_version", "git_commit", "integrator", "rotation", "svd",
                           "clustering", "plasticity", "reclusterer", "config_file"};
    for (size_t k = 0; k < sizeof attrs / sizeof attrs[0]; k++)
        if (csm_log_string_attr(f, attrs[k], s, sizeof s) == 0) printf("  %-14s %s\n", attrs[k], s);
    printf("  %-14s %lld\n", "seed", (long long)read_int_attr(f, "seed"));
    printf("  %-14s %lld\n", "threads", (long long)read_int_attr(f, "threads"));
    if (H5Aexists(f, "resumes") > 0)
        printf("  %-14s %lld time(s), the last from frame %lld\n", "resumed", (long long)read_int_attr(f, "resumes"),
               (long long)read_int_attr(f, "resumed_from_frame"));
    int64_t n = read_int_attr(f, "particles");
    double *time = NULL, *total = NULL;
    int32_t *count = NULL, *members = NULL, *offsets = NULL;
    int64_t T = csm_h5_read_all(f, "/frames/time", H5T_NATIVE_DOUBLE, (void **)&time);
    printf("  %-14s %lld\n", "particles", (long long)n);
    printf("  %-14s %lld (frame 0 is the initial state)", "frames", (long long)T);
    if (T > 0) printf(", t = %g .. %g s", time[0], time[T - 1]);
    printf("\n");
    print_stiffness(f);
    int64_t Tc = csm_h5_read_all(f, "/clusters/count", H5T_NATIVE_INT32, (void **)&count);
    if (Tc > 0) {
        int32_t k = count[Tc - 1];
        int64_t m = csm_h5_read_all(f, "/clusters/members", H5T_NATIVE_INT32, (void **)&members);
        int64_t no = csm_h5_read_all(f, "/clusters/offsets", H5T_NATIVE_INT32, (void **)&offsets);
        if (m >= 0 && no >= k + 1 && n > 0) {
            /* the last frame uses the last membership version, at the end of both arrays */
            const int32_t *off = offsets + (no - (k + 1));
            int32_t msz = off[k];
            const int32_t *mem = members + (m - msz);
            int32_t mn = INT32_MAX, mx = 0;
            for (int32_t c = 0; c < k; c++) {
                int32_t sz = off[c + 1] - off[c];
                mn = sz < mn ? sz : mn;
                mx = sz > mx ? sz : mx;
            }
            int32_t *per = calloc((size_t)n, sizeof *per);
            for (int32_t j = 0; j < msz && per; j++)
                if (mem[j] >= 0 && mem[j] < n) per[mem[j]]++;
            int32_t pmn = INT32_MAX, pmx = 0;
            for (int64_t i = 0; i < n && per; i++) {
                pmn = per[i] < pmn ? per[i] : pmn;
                pmx = per[i] > pmx ? per[i] : pmx;
            }
            printf("  %-14s %d (last frame); members per cluster %d / %.1f / %d (min/mean/max); "
                   "clusters per particle %d / %.2f / %d\n",
                   "clusters", k, k ? mn : 0, k ? (double)msz / k : 0.0, k ? mx : 0, pmn, (double)msz / n, pmx);
            free(per);
        }
        double *width = NULL;
        int64_t nw = csm_h5_read_all(f, "/clusters/width", H5T_NATIVE_DOUBLE, (void **)&width);
        if (nw >= k && k > 0) {
            const double *wl = width + (nw - k);
            double wmn = wl[0], wmx = wl[0], wsum = 0;
            for (int32_t c = 0; c < k; c++) {
                wmn = wl[c] < wmn ? wl[c] : wmn;
                wmx = wl[c] > wmx ? wl[c] : wmx;
                wsum += wl[c];
            }
            printf("  %-14s %.4g / %.4g / %.4g m (min/mean/max of w_c = max |p_ic|, last frame)\n", "cluster width",
                   wmn, wsum / k, wmx);
        }
        free(width);
    }
    print_plasticity(f);
    print_inverted(f);
    print_energy(f);
    print_recluster(f);
    int64_t Tt = csm_h5_read_all(f, "/timings/total", H5T_NATIVE_DOUBLE, (void **)&total);
    if (Tt > 1) {
        /* frame 0 is the initial state: no step was timed */
        int64_t cnt = Tt - 1;
        double sum = 0;
        for (int64_t k = 1; k < Tt; k++) sum += total[k];
        qsort(total + 1, (size_t)cnt, sizeof *total, cmp_double);
        printf("  %-14s %.4f mean, %.4f median ms/frame (/timings/total)\n", "timing", 1e3 * sum / cnt,
               1e3 * total[1 + cnt / 2]);
    }
    printf("datasets:\n");
    H5Ovisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, print_object, NULL);
    free(time);
    free(total);
    free(count);
    free(members);
    free(offsets);
    H5Fclose(f);
    /* A killed run never wrote its sidecar: write it now (a live run writes its own at the end). */
    char xmf[4096];
    csm_log_xdmf_path(path, xmf, sizeof xmf);
    FILE *probe = live ? NULL : fopen(xmf, "r");
    if (probe) {
        fclose(probe);
    } else if (!live) {
        csm_error err;
        if (csm_log_write_xdmf(path, xmf, sizeof xmf, &err) == 0) printf("sidecar written: %s\n", xmf);
    }
    return 0;
}
