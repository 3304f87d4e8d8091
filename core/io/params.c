/* Typed values and validated sections: a node checked against its parameter table row (type,
   range, choices), "did you mean" for unknown keys, defaults inserted into the tree, and a
   section's parameter struct filled from its values. */
#include "config_tree.h"
#include "error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Typed values.                                                                              */

static int levenshtein(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* Collects candidate names and returns the closest one within reach, for "did you mean". */
typedef struct suggest {
    const char *key;
    const char *best;
    int dist;
} suggest;

static void suggest_try(suggest *s, const char *candidate)
{
    int d = levenshtein(s->key, candidate);
    int reach = (int)strlen(candidate) / 3 + 1;
    if (reach < 2) reach = 2;
    if (d <= reach && d < s->dist) {
        s->dist = d;
        s->best = candidate;
    }
}

static int parse_real_text(const csm_node *n, double *out)
{
    if (n->kind != CSM_NODE_SCALAR || n->quoted || !n->text[0]) return -1;
    const char *t = n->text;
    /* YAML spellings of non-finite numbers */
    if (strcmp(t, ".inf") == 0 || strcmp(t, "-.inf") == 0 || strcmp(t, "+.inf") == 0 ||
        strcmp(t, ".Inf") == 0 || strcmp(t, ".INF") == 0 || strcmp(t, ".nan") == 0 ||
        strcmp(t, ".NaN") == 0 || strcmp(t, ".NAN") == 0) {
        *out = NAN;
        return 1;
    }
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    while (*end && isspace((unsigned char)*end)) end++;
    if (end == t || *end) return -1;
    if (errno == ERANGE && fabs(v) > 1.0) { /* overflow (1e400); underflow to 0 is harmless */
        *out = v;
        return 1;
    }
    if (!isfinite(v)) {
        *out = v;
        return 1;
    }
    *out = v;
    return 0;
}

static const char *type_name(csm_type t)
{
    switch (t) {
    case CSM_REAL: return "a number";
    case CSM_INT: return "an integer";
    case CSM_BOOL: return "true or false";
    case CSM_ENUM: return "one of the listed names";
    case CSM_VEC3: return "a list of three numbers [x, y, z]";
    case CSM_MAT3: return "a 3x3 matrix [[a, b, c], [d, e, f], [g, h, i]]";
    case CSM_STRING: return "a string";
    case CSM_POINTS: return "a list of points [[x, y, z], ...]";
    case CSM_KEYFRAMES: return "a list of keyframes [[t, x, y, z], ...] with t increasing, or []";
    }
    return "?";
}

static int parse_number(const csm_node *n, const char *path, const csm_param_spec *s, double *out,
                        csm_error *err)
{
    double v;
    int r = parse_real_text(n, &v);
    if (r < 0) {
        if (n->kind == CSM_NODE_SCALAR)
            FAIL_AT(err, n, "%s = '%s' is not a number", path, n->text);
        FAIL_AT(err, n, "%s must be %s", path, type_name(s->type));
    }
    if (r > 0) FAIL_AT(err, n, "%s = %s is not a finite number", path, n->text);
    if (v < s->min || v > s->max) FAIL_AT(err, n, "%s = %s is outside [%g, %g]", path, n->text, s->min, s->max);
    *out = v;
    return 0;
}

/* A list of rows of `width` numbers each (POINTS, KEYFRAMES) into v->points, v->npoints rows. */
static int parse_rows(const csm_node *n, const char *path, const csm_param_spec *s, int width, const char *what,
                      csm_value *v, csm_error *err)
{
    free(v->points);
    v->points = NULL;
    v->npoints = 0;
    if (n->nchild == 0) return 0;
    v->points = malloc(sizeof(double) * (size_t)width * (size_t)n->nchild);
    if (!v->points) CSM_OUT_OF_MEMORY();
    v->npoints = n->nchild;
    for (int k = 0; k < n->nchild; k++) {
        const csm_node *row = n->child[k];
        if (row->kind != CSM_NODE_SEQ || row->nchild != width) FAIL_AT(err, row, "%s[%d] must be %s", path, k, what);
        for (int d = 0; d < width; d++)
            if (parse_number(row->child[d], path, s, &v->points[width * k + d], err)) return -1;
    }
    return 0;
}

int csm_param_parse(const csm_node *n, const char *path, const csm_param_spec *s, csm_value *v,
                       csm_error *err)
{
    v->line = n->line;
    v->given = 1;
    switch (s->type) {
    case CSM_REAL:
        return parse_number(n, path, s, &v->num, err);
    case CSM_INT: {
        if (parse_number(n, path, s, &v->num, err)) return -1;
        if (v->num != floor(v->num) || strpbrk(n->text, ".eE"))
            FAIL_AT(err, n, "%s = %s must be an integer", path, n->text);
        /* the text's own value, not the double it rounds to: above 2^53 neighbours share one */
        errno = 0;
        char *end;
        long long exact = strtoll(n->text, &end, 10);
        if (errno == ERANGE || *end || (double)exact != v->num || exact > (1LL << 53) || exact < -(1LL << 53))
            FAIL_AT(err, n, "%s = %s is not exactly an integer csm can hold (at most 2^53 = 9007199254740992)", path,
                    n->text);
        return 0;
    }
    case CSM_BOOL:
        if (n->kind == CSM_NODE_SCALAR && !n->quoted && strcmp(n->text, "true") == 0) v->num = 1;
        else if (n->kind == CSM_NODE_SCALAR && !n->quoted && strcmp(n->text, "false") == 0) v->num = 0;
        else FAIL_AT(err, n, "%s must be true or false", path);
        return 0;
    case CSM_ENUM: {
        if (n->kind != CSM_NODE_SCALAR) FAIL_AT(err, n, "%s must be one of %s", path, s->choices);
        const char *c = s->choices;
        for (int idx = 0; c && *c; idx++) {
            const char *bar = strchr(c, '|');
            size_t len = bar ? (size_t)(bar - c) : strlen(c);
            if (strlen(n->text) == len && strncmp(n->text, c, len) == 0) {
                v->num = idx;
                return 0;
            }
            c = bar ? bar + 1 : c + len;
        }
        FAIL_AT(err, n, "%s = '%s' is not one of %s", path, n->text, s->choices);
    }
    case CSM_VEC3:
        if (n->kind != CSM_NODE_SEQ || n->nchild != 3) FAIL_AT(err, n, "%s must be %s", path, type_name(s->type));
        for (int k = 0; k < 3; k++)
            if (parse_number(n->child[k], path, s, &v->vec[k], err)) return -1;
        return 0;
    case CSM_MAT3:
        if (n->kind != CSM_NODE_SEQ || n->nchild != 3) FAIL_AT(err, n, "%s must be %s", path, type_name(s->type));
        for (int r = 0; r < 3; r++) {
            const csm_node *row = n->child[r];
            if (row->kind != CSM_NODE_SEQ || row->nchild != 3)
                FAIL_AT(err, row, "%s must be %s", path, type_name(s->type));
            for (int k = 0; k < 3; k++)
                if (parse_number(row->child[k], path, s, &v->vec[3 * r + k], err)) return -1;
        }
        return 0;
    case CSM_STRING:
        if (n->kind != CSM_NODE_SCALAR) FAIL_AT(err, n, "%s must be a string", path);
        free(v->str);
        v->str = csm_dupstr(n->text, strlen(n->text));
        return 0;
    case CSM_POINTS:
        if (n->kind != CSM_NODE_SEQ || n->nchild == 0)
            FAIL_AT(err, n, "%s must be a non-empty list of points [[x, y, z], ...]", path);
        return parse_rows(n, path, s, 3, "a point [x, y, z]", v, err);
    case CSM_KEYFRAMES:
        if (n->kind != CSM_NODE_SEQ) FAIL_AT(err, n, "%s must be %s", path, type_name(s->type));
        if (parse_rows(n, path, s, 4, "a keyframe [t, x, y, z]", v, err)) return -1;
        for (int k = 1; k < v->npoints; k++)
            if (!(v->points[4 * k] > v->points[4 * (k - 1)]))
                FAIL_AT(err, n->child[k], "%s[%d]: its time %g does not come after %g", path, k, v->points[4 * k],
                        v->points[4 * (k - 1)]);
        return 0;
    }
    return -1;
}

static void format_number(double v, char *buf, int size)
{
    /* whole numbers as integers (200, not 2e+02, which an integer key refuses) */
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, (size_t)size, "%.0f", v);
        return;
    }
    /* otherwise the shortest text that reads back to the same double */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, (size_t)size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

void csm_param_default_text(const csm_param_spec *s, char *buf, int size)
{
    char a[40], b[40], c[40];
    switch (s->type) {
    case CSM_REAL:
    case CSM_INT: format_number(s->def, buf, size); break;
    case CSM_BOOL: snprintf(buf, (size_t)size, "%s", s->def != 0 ? "true" : "false"); break;
    case CSM_ENUM: {
        const char *c0 = s->choices;
        for (int idx = 0; idx < (int)s->def && c0; idx++) {
            c0 = strchr(c0, '|');
            if (c0) c0++;
        }
        size_t len = c0 ? (strchr(c0, '|') ? (size_t)(strchr(c0, '|') - c0) : strlen(c0)) : 0;
        snprintf(buf, (size_t)size, "%.*s", (int)len, c0 ? c0 : "");
        break;
    }
    case CSM_VEC3:
        format_number(s->def3[0], a, sizeof a);
        format_number(s->def3[1], b, sizeof b);
        format_number(s->def3[2], c, sizeof c);
        snprintf(buf, (size_t)size, "[%s, %s, %s]", a, b, c);
        break;
    case CSM_MAT3: snprintf(buf, (size_t)size, "[[1, 0, 0], [0, 1, 0], [0, 0, 1]]"); break;
    case CSM_STRING: snprintf(buf, (size_t)size, "%s", s->defs ? s->defs : ""); break;
    case CSM_POINTS: snprintf(buf, (size_t)size, "(required)"); break;
    case CSM_KEYFRAMES: snprintf(buf, (size_t)size, "[]"); break;
    }
}

/* A default as a tree node, so the resolved config shows every value in force. */
csm_node *csm_param_default_node(const csm_param_spec *s, const char *src)
{
    char buf[256];
    if (s->type == CSM_VEC3 || s->type == CSM_MAT3) {
        csm_node *seq = csm_node_new(CSM_NODE_SEQ, src, 0);
        for (int r = 0; r < 3; r++) {
            if (s->type == CSM_VEC3) {
                format_number(s->def3[r], buf, sizeof buf);
                csm_node_append(seq, csm_node_scalar(buf, src, 0));
            } else {
                csm_node *row = csm_node_new(CSM_NODE_SEQ, src, 0);
                for (int k = 0; k < 3; k++) csm_node_append(row, csm_node_scalar(r == k ? "1" : "0", src, 0));
                csm_node_append(seq, row);
            }
        }
        return seq;
    }
    if (s->type == CSM_KEYFRAMES) return csm_node_new(CSM_NODE_SEQ, src, 0); /* none */
    csm_param_default_text(s, buf, sizeof buf);
    csm_node *n = csm_node_scalar(buf, src, 0);
    n->quoted = s->type == CSM_STRING;
    return n;
}

void csm_param_set_default(const csm_param_spec *s, csm_value *v)
{
    v->line = 0;
    v->given = 0;
    v->num = s->def;
    if (s->type == CSM_VEC3) memcpy(v->vec, s->def3, sizeof s->def3);
    if (s->type == CSM_MAT3) {
        memset(v->vec, 0, sizeof v->vec);
        v->vec[0] = v->vec[4] = v->vec[8] = 1.0;
    }
    if (s->type == CSM_STRING) {
        free(v->str);
        v->str = csm_dupstr(s->defs ? s->defs : "", strlen(s->defs ? s->defs : ""));
    }
}

static int spec_find(const csm_param_spec *spec, const char *key)
{
    for (int k = 0; spec && spec[k].key; k++)
        if (strcmp(spec[k].key, key) == 0) return k;
    return -1;
}

/* Validate the keys of `map` against `spec` (values into `values`), insert defaults into the
   tree. Keys listed in `also` are handled by the caller; keys that are parameters of `others`
   (other plugins of the same kind) are checked against their own table and reported unused. */
typedef struct csm_section_ctx {
    const char *path;                    /* "solver", "objects[0].shape", ... */
    const csm_param_spec *spec;
    const char *const *also;             /* NULL-terminated */
    const csm_plugin_head *const *others; /* NULL-terminated */
    const char *owner;                   /* name of the selected plugin for messages */
} csm_section_ctx;

int csm_section_parse(csm_node *map, const csm_section_ctx *sc, csm_value *values, csm_error *err)
{
    char path[512];
    if (map->kind != CSM_NODE_MAP) FAIL_AT(err, map, "%s must be a mapping of keys to values", sc->path);
    int nspec = 0;
    while (sc->spec && sc->spec[nspec].key) nspec++;
    if (nspec > CSM_MAX_PARAMS) FAIL_AT(err, map, "%s: too many parameters in its table", sc->path);
    for (int k = 0; k < nspec; k++) csm_param_set_default(&sc->spec[k], &values[k]);

    for (int c = 0; c < map->nchild; c++) {
        csm_node *n = map->child[c];
        snprintf(path, sizeof path, "%s%s%s", sc->path, sc->path[0] ? "." : "", n->key);
        int skip = 0;
        for (int a = 0; sc->also && sc->also[a]; a++)
            if (strcmp(sc->also[a], n->key) == 0) skip = 1;
        if (skip) continue;
        int idx = spec_find(sc->spec, n->key);
        if (idx >= 0) {
            if (csm_param_parse(n, path, &sc->spec[idx], &values[idx], err)) return -1;
            continue;
        }
        int used_by_other = 0;
        for (int o = 0; sc->others && sc->others[o]; o++) {
            int oi = spec_find(sc->others[o]->params, n->key);
            if (oi < 0) continue;
            csm_value tmp = {0};
            int rc = csm_param_parse(n, path, &sc->others[o]->params[oi], &tmp, err);
            free(tmp.str);
            free(tmp.points);
            if (rc) return -1;
            used_by_other = 1;
            break;
        }
        if (used_by_other) {
            char wbuf[512], msg[1024];
            snprintf(msg, sizeof msg, "csm: note: %s: %s is not used by %s\n", csm_node_where(n, wbuf, sizeof wbuf), path,
                     sc->owner ? sc->owner : sc->path);
            csm_note_once(msg);
            continue;
        }
        suggest sg = {n->key, NULL, 99};
        for (int k = 0; k < nspec; k++) suggest_try(&sg, sc->spec[k].key);
        for (int a = 0; sc->also && sc->also[a]; a++) suggest_try(&sg, sc->also[a]);
        for (int o = 0; sc->others && sc->others[o]; o++)
            for (int k = 0; sc->others[o]->params && sc->others[o]->params[k].key; k++)
                suggest_try(&sg, sc->others[o]->params[k].key);
        if (sg.best) FAIL_AT(err, n, "unknown key %s (did you mean '%s'?)", path, sg.best);
        char valid[512] = "";
        int used = 0;
        for (int k = 0; k < nspec && used < (int)sizeof valid; k++)
            used += snprintf(valid + used, sizeof valid - (size_t)used, "%s%s", k ? ", " : "", sc->spec[k].key);
        for (int a = 0; sc->also && sc->also[a] && used < (int)sizeof valid; a++)
            used += snprintf(valid + used, sizeof valid - (size_t)used, "%s%s", used ? ", " : "", sc->also[a]);
        FAIL_AT(err, n, "unknown key %s (valid keys: %s)", path, valid[0] ? valid : "none");
    }
    for (int k = 0; k < nspec; k++) {
        if (values[k].given) continue;
        if (sc->spec[k].flags & CSM_PARAM_REQUIRED)
            FAIL_AT(err, map, "%s%s%s is required", sc->path, sc->path[0] ? "." : "", sc->spec[k].key);
        csm_node *d = csm_param_default_node(&sc->spec[k], map->src);
        d->key = csm_dupstr(sc->spec[k].key, strlen(sc->spec[k].key));
        csm_node_append(map, d);
    }
    return 0;
}

/* A section whose selector key (`type`, `method`, ...) picks a plugin of a registry kind. */
int csm_section_plugin(csm_node *map, const char *path, csm_kind kind,
                                const char *selector, const char *def, const char *const *extra,
                                csm_plugin_cfg *out, csm_error *err)
{
    if (map->kind != CSM_NODE_MAP) FAIL_AT(err, map, "%s must be a mapping", path);
    csm_node *sel = csm_node_get(map, selector);
    const char *name = def;
    if (sel) {
        if (sel->kind != CSM_NODE_SCALAR) FAIL_AT(err, sel, "%s.%s must be a name", path, selector);
        name = sel->text;
    } else if (!def) {
        char names[512];
        csm_registry_names(kind, names, sizeof names);
        FAIL_AT(err, map, "%s.%s is required (one of: %s)", path, selector, names);
    }
    const csm_plugin_head *p = csm_registry_find(kind, name);
    if (!p) {
        char names[512];
        csm_registry_names(kind, names, sizeof names);
        FAIL_AT(err, sel ? sel : map, "%s.%s = '%s' is not a known %s (valid: %s)", path, selector,
                name, csm_kind_name(kind), names);
    }
    if (!sel) {
        csm_node *d = csm_node_scalar(name, map->src, 0);
        d->key = csm_dupstr(selector, strlen(selector));
        csm_node_append(map, d);
    }
    const csm_plugin_head *others[CSM_MAX_PLUGINS + 1];
    int no = 0;
    for (int k = 0; k < csm_registry_count(kind); k++)
        if (csm_registry_at(kind, k) != p) others[no++] = csm_registry_at(kind, k);
    others[no] = NULL;
    const char *also[16] = {selector, NULL};
    for (int k = 0; extra && extra[k] && k < 14; k++) also[k + 1] = extra[k];
    csm_section_ctx sc = {path, p->params, also, others, p->name};
    out->plugin = p;
    out->src = map->src;
    out->line = map->line;
    if (csm_section_parse(map, &sc, out->values, err)) return -1;
    csm_params_fill(p->params, out->values, out->params.bytes);
    return 0;
}

/* A section of a fixed table of kinds (shapes, sampling): like a plugin section. */
int csm_section_kind(csm_node *map, const char *path, const csm_plugin_head *kinds,
                              int nkinds, const char *def, int *which, csm_plugin_cfg *out,
                              csm_error *err)
{
    if (map->kind != CSM_NODE_MAP) FAIL_AT(err, map, "%s must be a mapping", path);
    csm_node *sel = csm_node_get(map, "type");
    const char *name = sel && sel->kind == CSM_NODE_SCALAR ? sel->text : def;
    char names[256] = "";
    int used = 0;
    for (int k = 0; k < nkinds; k++)
        used += snprintf(names + used, sizeof names - (size_t)used, "%s%s", k ? ", " : "", kinds[k].name);
    if (!name) FAIL_AT(err, map, "%s.type is required (one of: %s)", path, names);
    *which = -1;
    for (int k = 0; k < nkinds; k++)
        if (strcmp(kinds[k].name, name) == 0) *which = k;
    if (*which < 0) FAIL_AT(err, sel ? sel : map, "%s.type = '%s' is not one of: %s", path, name, names);
    if (!sel) {
        csm_node *d = csm_node_scalar(name, map->src, 0);
        d->key = csm_dupstr("type", 4);
        csm_node_append(map, d);
    }
    const csm_plugin_head *others[16];
    int no = 0;
    for (int k = 0; k < nkinds && no < 15; k++)
        if (k != *which) others[no++] = &kinds[k];
    others[no] = NULL;
    const char *also[] = {"type", NULL};
    csm_section_ctx sc = {path, kinds[*which].params, also, others, kinds[*which].name};
    out->plugin = &kinds[*which];
    out->src = map->src;
    out->line = map->line;
    if (csm_section_parse(map, &sc, out->values, err)) return -1;
    csm_params_fill(kinds[*which].params, out->values, out->params.bytes);
    return 0;
}

/* Fixed section with a spec table; the map is created (empty) when absent. */
csm_node *csm_section_node(csm_node *root, const char *key, csm_node_kind kind)
{
    csm_node *n = csm_node_get(root, key);
    if (!n) {
        n = csm_node_new(kind, root->src, 0);
        n->key = csm_dupstr(key, strlen(key));
        csm_node_append(root, n);
    }
    return n;
}

/* Validate, then fill `out` (NULL: nothing) from the table's bound rows. */
int csm_section_fixed(csm_node *map, const char *path, const csm_param_spec *spec,
                       const char *const *also, csm_value *values, void *out, csm_error *err)
{
    csm_section_ctx sc = {path, spec, also, NULL, NULL};
    if (csm_section_parse(map, &sc, values, err)) return -1;
    if (out) csm_params_fill(spec, values, out);
    return 0;
}

