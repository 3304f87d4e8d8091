/* The runs of a sweep: the product of its lists, each run's config resolved (a bad value stops
   the sweep before anything runs) and named by a short hash of it. */
#include "sweep.h"
#include "error.h"

#include "files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* FNV-1a, 64 bits, over a resolved config tree with every mapping's keys in sorted order, so
   that reordering or reformatting a config names its runs the same. */
static uint64_t fnv(uint64_t h, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        h ^= *c;
        h *= 1099511628211ull;
    }
    h ^= 0xff; /* a separator no text holds */
    return h * 1099511628211ull;
}

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const csm_node *const *)a)->key, (*(const csm_node *const *)b)->key);
}

/* A number's one spelling, so that 0.1, 0.10 and 1e-1 name one run: an integral value as its
   digits, another as the shortest %g that reads back to it. Text that is no number is itself. */
static const char *canonical_number(const char *text, char canon[40])
{
    char *end;
    double v = strtod(text, &end);
    if (!text[0] || end == text || *end || !isfinite(v)) return text;
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(canon, 40, "%.0f", v);
        return canon;
    }
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(canon, 40, "%.*g", digits, v);
        if (strtod(canon, NULL) == v) break;
    }
    return canon;
}

static uint64_t hash_node(uint64_t h, const csm_node *n)
{
    if (n->kind == CSM_NODE_SCALAR) {
        char canon[40];
        return fnv(fnv(h, n->quoted ? "s" : "v"), n->quoted ? n->text : canonical_number(n->text, canon));
    }
    h = fnv(h, n->kind == CSM_NODE_MAP ? "{" : "[");
    const csm_node **c = malloc((size_t)(n->nchild + 1) * sizeof *c);
    if (!c) CSM_OUT_OF_MEMORY();
    if (n->nchild > 0) memcpy(c, n->child, (size_t)n->nchild * sizeof *c);
    if (n->kind == CSM_NODE_MAP && n->nchild > 1) qsort(c, (size_t)n->nchild, sizeof *c, by_key);
    for (int k = 0; k < n->nchild; k++) {
        if (n->kind == CSM_NODE_MAP) h = fnv(h, c[k]->key);
        h = hash_node(h, c[k]);
    }
    free(c);
    return fnv(h, n->kind == CSM_NODE_MAP ? "}" : "]");
}

static void short_hash(const csm_node *root, char id[16])
{
    uint64_t h = hash_node(1469598103934665603ull, root);
    snprintf(id, 16, "%012llx", (unsigned long long)(h >> 16));
}

/* The overrides of run r: the command line's, then one per swept key. Strings are malloc'ed. */
char **sweep_run_overrides(const sweep *s, const sweep_run *r, int *count)
{
    int na = s->base.nsweep;
    char **o = calloc((size_t)(s->a.nsets + na), sizeof *o);
    if (!o) CSM_OUT_OF_MEMORY();
    for (int k = 0; k < s->a.nsets; k++) o[k] = strdup(s->a.sets[k]);
    for (int k = 0; k < na; k++) {
        const csm_sweep_axis *ax = &s->base.sweep[k];
        size_t len = strlen(ax->key) + strlen(ax->values[r->pick[k]]) + 2;
        o[s->a.nsets + k] = malloc(len);
        if (!o[s->a.nsets + k]) CSM_OUT_OF_MEMORY();
        snprintf(o[s->a.nsets + k], len, "%s=%s", ax->key, ax->values[r->pick[k]]);
    }
    *count = s->a.nsets + na;
    return o;
}

void sweep_free_strings(char **o, int n)
{
    for (int k = 0; k < n; k++) free(o[k]);
    free(o);
}

void sweep_describe(const sweep *s, const sweep_run *r, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int k = 0; k < s->base.nsweep; k++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s=%s", k ? " " : "", s->base.sweep[k].key, s->base.sweep[k].values[r->pick[k]]);
    }
}

/* Runs already planned, by id: an open-addressing table of run indices (-1: empty), so that a
   sweep of n runs finds its duplicates in O(n). */
typedef struct id_set {
    int *slot;
    size_t cap;
} id_set;

static size_t id_slot(const id_set *t, const char *id)
{
    uint64_t h = fnv(1469598103934665603ull, id);
    return (size_t)(h & (t->cap - 1));
}

/* The index of a run with this id, or -1 after adding `index` under it. */
static int id_find_or_add(id_set *t, const sweep *s, const char *id, int index)
{
    for (size_t k = id_slot(t, id);; k = (k + 1) & (t->cap - 1)) {
        if (t->slot[k] < 0) {
            t->slot[k] = index;
            return -1;
        }
        if (!strcmp(s->runs[t->slot[k]].id, id)) return t->slot[k];
    }
}

/* "3 x 4 x 2" */
static void product_text(const sweep *s, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < s->base.nsweep && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d %s", k ? " x " : "", s->base.sweep[k].nvalues,
                                 s->base.sweep[k].key);
}

/* Expand the product, resolve every run's config (a bad value stops the sweep before anything
   runs) and name each run by its hash. Runs that resolve to the same config run once. The count
   comes first: a sweep of more than --max-runs runs (default CSM_SWEEP_MAX_RUNS) is refused
   before anything is expanded. The config file is read once; each run parses it from memory. */
/* Where run i's stiffness comes from: a modulus (Pa) or a spring gain alpha; none for an
   integrator without springs (pbd). */
typedef struct material {
    int kind; /* 0 none, 1 alpha, 2 modulus */
    double value;
    char integrator[64];
    long run;
} material;

static material material_of(const csm_config *cfg, long run)
{
    csm_integrator_traits t;
    csm_integrator_describe(&cfg->integrator, &t);
    material m = {t.modulus > 0 ? 2 : t.alpha > 0 ? 1 : 0, t.modulus > 0 ? t.modulus : t.alpha, "", run};
    snprintf(m.integrator, sizeof m.integrator, "%s", cfg->integrator.plugin->name);
    return m;
}

/* A sweep over integrators whose runs take their stiffness from different keys compares
   different materials (the explicit integrators' alpha 0.5 against the implicit ones' 10 kPa):
   refused, naming both. */
static int same_material(const sweep *s, material *first, const material *m, csm_error *err)
{
    int line = 0;
    for (int k = 0; k < s->base.nsweep; k++)
        if (!strcmp(s->base.sweep[k].key, "solver.integrator")) line = s->base.sweep[k].line;
    if (!line || m->kind == 0) return 0;
    if (first->kind == 0) {
        *first = *m;
        return 0;
    }
    if (first->kind == m->kind) return 0;
    const material *a = first->kind == 1 ? first : m, *b = first->kind == 1 ? m : first;
    return csm_fail(err, CSM_EXIT_BAD_INPUT,
                    "%s:%d: sweep solver.integrator compares different materials: %s (run %ld) takes its stiffness "
                    "from solver.alpha = %g, %s (run %ld) from solver.modulus = %g Pa; set solver.modulus (or "
                    "solver.young) so that every run has the same material, or sweep the integrators apart",
                    s->a.config, line, a->integrator, a->run, a->value, b->integrator, b->run, b->value);
}

int sweep_plan(sweep *s, csm_error *err)
{
    int na = s->base.nsweep;
    double total_d = 1;
    for (int k = 0; k < na; k++) total_d *= s->base.sweep[k].nvalues;
    char product[1024];
    product_text(s, product, sizeof product);
    if (total_d > s->a.max_runs)
        return csm_fail(err, CSM_EXIT_BAD_INPUT,
                        "%s: the sweep has %.0f runs (%s), over the limit of %d; sweep fewer values, or give "
                        "--max-runs %.0f to run them all", s->a.config, total_d, product, s->a.max_runs, total_d);
    long total = (long)total_d;
    int tty = isatty(STDERR_FILENO);
    if (total >= 1000) fprintf(stderr, "csm: sweep %s: %ld runs (%s); resolving their configs\n", s->base.name, total, product);
    char *text;
    size_t len;
    if (csm_read_file(s->a.config, "config", CSM_CONFIG_MAX_BYTES, &text, &len, err)) return -1;
    id_set ids = {NULL, 1};
    while (ids.cap < 2 * (size_t)total + 2) ids.cap *= 2;
    ids.slot = malloc(ids.cap * sizeof *ids.slot);
    s->runs = calloc((size_t)total, sizeof *s->runs);
    if (!s->runs || !ids.slot) CSM_OUT_OF_MEMORY();
    memset(ids.slot, 0xff, ids.cap * sizeof *ids.slot);
    int rc_plan = 0;
    material first = {0};
    for (long i = 0; i < total && !rc_plan; i++) {
        if (tty && total >= 1000 && i % 1000 == 0)
            fprintf(stderr, "\rcsm: resolved %ld of %ld runs", i, total);
        sweep_run *r = &s->runs[s->nruns];
        r->pick = calloc((size_t)na + 1, sizeof *r->pick);
        if (!r->pick) CSM_OUT_OF_MEMORY();
        long rem = i;
        for (int k = na - 1; k >= 0; k--) {
            r->pick[k] = (int)(rem % s->base.sweep[k].nvalues);
            rem /= s->base.sweep[k].nvalues;
        }
        int no;
        char **o = sweep_run_overrides(s, r, &no);
        /* the log's path is no part of a run's identity: it is hashed as the default */
        o = realloc(o, (size_t)(no + 1) * sizeof *o);
        if (!o) CSM_OUT_OF_MEMORY();
        o[no++] = strdup("output.path=\"\"");
        csm_config cfg;
        csm_error e = {{0}, 0};
        int rc = csm_config_load_text(s->a.config, text, (const char *const *)o, no, &cfg, &e);
        sweep_free_strings(o, no);
        if (rc) {
            /* an error in a swept value names the sweep's key and line, not the override */
            int which = 0, skip = 0;
            if (sscanf(e.msg, "--set #%d: %n", &which, &skip) == 1 && skip > 0 && which > s->a.nsets) {
                const csm_sweep_axis *ax = &s->base.sweep[which - s->a.nsets - 1];
                csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: sweep %s = %s: %s", s->a.config, ax->line, ax->key,
                         ax->values[r->pick[which - s->a.nsets - 1]], e.msg + skip);
            } else {
                char what[1024];
                sweep_describe(s, r, what, sizeof what);
                csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep run %ld (%s): %s", s->a.config, i, what, e.msg);
            }
            free(r->pick);
            rc_plan = -1;
            break;
        }
        short_hash(cfg.root, r->id);
        material m = material_of(&cfg, i);
        csm_config_free(&cfg);
        if (same_material(s, &first, &m, err)) {
            free(r->pick);
            rc_plan = -1;
            break;
        }
        if (id_find_or_add(&ids, s, r->id, s->nruns) >= 0) {
            fprintf(stderr, "csm: note: sweep run %ld resolves to the same config as run %s; it runs once\n", i, r->id);
            free(r->pick);
            continue;
        }
        s->nruns++;
    }
    if (tty && total >= 1000) fprintf(stderr, "\r\033[K");
    free(ids.slot);
    free(text);
    return rc_plan;
}
