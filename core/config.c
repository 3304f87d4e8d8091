#include "config.h"

#include "files.h"

#include <ctype.h>
#include <errno.h>
#include <libfyaml.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------------------------ */
/* Section tables: the only place the defaults, ranges and docs of non-plugin keys live.      */

/* The rows of the top level, time and output fill csm_config itself; name and output.path are
   read by load(), which derives their defaults. */
static const csm_param_spec time_params[] = {
    CSM_P_REAL(csm_config, dt, 1.0 / 60.0, 1e-9, 10.0, "frame length in seconds"),
    CSM_P_INT(csm_config, frames, 240, 0, 1e9, "frames to simulate after frame 0"),
    CSM_P_INT(csm_config, substeps, 1, 1, 1e5, "steps per frame (step h = dt / substeps)"),
    CSM_P_REAL(csm_config, max_speed, 0, 0, 1e300,
               "stop the run as failed when a particle moves faster than this, in m/s (0: no bound; a NaN or infinite "
               "state always stops it)"),
    CSM_PARAM_END,
};

static const csm_param_spec output_params[] = {
    CSM_P_UNBOUND("path", CSM_STRING, 0, 0, 0, "HDF5 log path (default out/<name>.h5)", NULL, "", 0),
    CSM_PARAM_FIELD("every", CSM_INT, csm_config, output_every, 1, 1, 1e9, "log every N-th frame", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_FIELD("goals", CSM_BOOL, csm_config, output_goals, 0, 0, 1, "also log /frames/goals", NULL, 0, 0, 0, NULL, 0),
    CSM_PARAM_END,
};

static const csm_param_spec top_params[] = {
    CSM_P_UNBOUND("name", CSM_STRING, 0, 0, 0, "experiment name (default: the config's file name)", NULL, "", 0),
    CSM_P_INT(csm_config, seed, 1, 0, 9007199254740992.0, "seed of every random choice"),
    CSM_PARAM_END,
};

static const csm_param_spec box_params[] = {
    CSM_P_VEC3(csm_shape_params, size, 1, 1, 1, 1e-9, 1e9, "edge lengths"),
    CSM_PARAM_END,
};
static const csm_param_spec sphere_params[] = {
    CSM_P_REAL(csm_shape_params, radius, 0.5, 1e-9, 1e9, "radius"),
    CSM_PARAM_END,
};
static const csm_param_spec cylinder_params[] = {
    CSM_P_REAL(csm_shape_params, radius, 0.5, 1e-9, 1e9, "radius"),
    CSM_P_REAL(csm_shape_params, height, 1.0, 1e-9, 1e9, "length along the axis"),
    CSM_P_ENUM(csm_shape_params, axis, 1, "x|y|z", "axis of the cylinder"),
    CSM_PARAM_END,
};
static const csm_param_spec torus_params[] = {
    CSM_P_REAL(csm_shape_params, major, 0.5, 1e-9, 1e9, "distance from the centre to the tube's centre"),
    CSM_P_REAL(csm_shape_params, minor, 0.2, 1e-9, 1e9, "tube radius"),
    CSM_P_ENUM(csm_shape_params, axis, 1, "x|y|z", "axis of symmetry"),
    CSM_PARAM_END,
};
static const csm_param_spec points_params[] = {
    CSM_P_POINTS(csm_shape_params, positions, -1e9, 1e9, "explicit particle positions"),
    CSM_PARAM_END,
};

static const csm_param_spec mesh_params[] = {
    CSM_PARAM_FIELD("path", CSM_STRING, csm_shape_params, path, 0, 0, 0,
                    "OFF or OBJ file; a relative path is tried from the current folder, then the config's folder and "
                    "those above",
                    NULL, 0, 0, 0, "", CSM_PARAM_REQUIRED),
    CSM_P_VEC3(csm_shape_params, rotate, 0, 0, 0, -1e9, 1e9, "rotation in degrees about x, then y, then z"),
    CSM_P_ENUM(csm_shape_params, fit, CSM_FIT_NONE, "none|unit_box",
               "unit_box: scale so the longest bounding-box edge is 1"),
    CSM_P_REAL(csm_shape_params, scale, 1.0, 1e-9, 1e9, "uniform scale, after fit"),
    CSM_PARAM_END,
};

static const csm_plugin_head shape_kinds[] = {
    {1, "box", "axis-aligned box centred on the object's position", box_params},
    {1, "sphere", "ball", sphere_params},
    {1, "cylinder", "solid cylinder", cylinder_params},
    {1, "torus", "solid torus", torus_params},
    {1, "points", "particles at the given positions (sampling is ignored)", points_params},
    {1, "mesh", "inside of a triangle or polygon mesh (generalized winding number), centred on its bounding box",
     mesh_params},
};

static const csm_param_spec grid_params[] = {
    CSM_P_REAL(csm_sampling_params, spacing, 0.1, 1e-6, 1e9, "distance between grid points"),
    CSM_P_INT(csm_sampling_params, particles, 0, 0, 1e8, "target particle count; picks the spacing (0: use spacing)"),
    CSM_PARAM_END,
};
static const csm_param_spec poisson_params[] = {
    CSM_P_REAL(csm_sampling_params, spacing, 0.1, 1e-6, 1e9, "minimum distance between particles (Bridson 2007)"),
    CSM_P_INT(csm_sampling_params, attempts, 30, 1, 1000, "candidates tried around each active sample"),
    CSM_P_INT(csm_sampling_params, particles, 0, 0, 1e8, "target particle count; picks the spacing (0: use spacing)"),
    CSM_PARAM_END,
};
static const csm_plugin_head sampling_kinds[] = {
    {1, "grid", "regular cubic grid inside the shape", grid_params},
    {1, "poisson", "Poisson-disk blue noise inside the shape (Bridson 2007)", poisson_params},
};

static const csm_param_spec body_params[] = {
    CSM_P_REAL(csm_body_params, mass, 1.0, 1e-300, 1e300, "total mass of the object (ignored when density is given)"),
    CSM_P_REAL(csm_body_params, density, 0, 0, 1e300, "mass per unit volume (0: use mass)"),
    CSM_P_VEC3(csm_body_params, position, 0, 0, 0, -1e9, 1e9, "where the shape's centre is placed"),
    CSM_P_MAT3(csm_body_params, deform, -1e9, 1e9, "initial deformation about the centroid; rest shape undeformed"),
    CSM_P_VEC3(csm_body_params, velocity, 0, 0, 0, -1e9, 1e9, "initial velocity"),
    CSM_P_VEC3(csm_body_params, angular_velocity, 0, 0, 0, -1e9, 1e9, "initial angular velocity about the centroid"),
    CSM_PARAM_END,
};
static const csm_param_spec pin_index_spec = CSM_P_UNBOUND("indices", CSM_INT, 0, 0, 2147483647, "particle index", NULL,
                                                           NULL, 0);
typedef struct pin_params {
    int axis;
    double value;
} pin_params;
static const csm_param_spec pin_table[] = {
    CSM_P_ENUM(pin_params, axis, 1, "x|y|z", "world axis"),
    CSM_PARAM_FIELD("value", CSM_REAL, pin_params, value, 0, -1e9, 1e9, "world coordinate at t = 0", NULL, 0, 0, 0,
                    NULL, CSM_PARAM_REQUIRED),
    CSM_PARAM_END,
};

/* `rotation` names a plugin, which load() looks up; the others fill csm_config. */
const csm_param_spec csm_solver_common_params[] = {
    CSM_P_UNBOUND("rotation", CSM_STRING, 0, 0, 0, "rotation extractor", NULL, "polar_f", 0),
    CSM_P_ENUM(csm_config, svd, CSM_SVD_FAST, "fast|lapacke", "3x3 SVD backend"),
    CSM_P_ENUM(csm_config, mode, CSM_MODE_RIGID, "rigid|linear|quadratic",
               "goal deformation (Müller 2005): rigid R, linear beta A + (1 - beta) R, quadratic 9-term fit"),
    CSM_P_REAL(csm_config, beta, 0, 0, 1, "how much of the linear / quadratic fit the goals keep (0: rigid)"),
    CSM_P_ENUM(csm_config, conserve, CSM_CONSERVE_ANGULAR, "none|linear|angular",
               "what each cluster's goal corrections keep: none (the papers' goals; the strain clamp and polar_f push "
               "the body), linear (their mass-weighted mean removed: momentum), angular (also their rigid rotation "
               "about the start of the step: angular momentum)"),
    CSM_PARAM_END,
};

static const csm_plugin_head config_sections[] = {
    {1, "(top level)", "name, seed", top_params},
    {1, "time", "time stepping", time_params},
    {1, "output", "the HDF5 log", output_params},
    {1, "objects[].(body)", "per-object placement and mass", body_params},
    {1, "objects[].pinned.below|above", "kinematic particles", pin_table},
};

const csm_plugin_head *csm_config_shape_kinds(int *count)
{
    *count = (int)(sizeof shape_kinds / sizeof shape_kinds[0]);
    return shape_kinds;
}
const csm_plugin_head *csm_config_sampling_kinds(int *count)
{
    *count = (int)(sizeof sampling_kinds / sizeof sampling_kinds[0]);
    return sampling_kinds;
}
const csm_plugin_head *csm_config_sections(int *count)
{
    *count = (int)(sizeof config_sections / sizeof config_sections[0]);
    return config_sections;
}

/* ------------------------------------------------------------------------------------------ */
/* The tree.                                                                                  */

static char *dupstr(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d) abort();
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static csm_node *node_new(csm_node_kind kind, const char *src, int line)
{
    csm_node *n = calloc(1, sizeof *n);
    if (!n) abort();
    n->kind = kind;
    n->src = src;
    n->line = line;
    return n;
}

static void node_free(csm_node *n)
{
    if (!n) return;
    for (int k = 0; k < n->nchild; k++) node_free(n->child[k]);
    free(n->child);
    free(n->key);
    free(n->text);
    free(n);
}

static void node_append(csm_node *parent, csm_node *child)
{
    if (parent->nchild == parent->cap) {
        parent->cap = parent->cap ? 2 * parent->cap : 8;
        parent->child = realloc(parent->child, (size_t)parent->cap * sizeof *parent->child);
        if (!parent->child) abort();
    }
    parent->child[parent->nchild++] = child;
}

static csm_node *map_get(const csm_node *map, const char *key)
{
    if (!map || map->kind != CSM_NODE_MAP) return NULL;
    for (int k = 0; k < map->nchild; k++)
        if (strcmp(map->child[k]->key, key) == 0) return map->child[k];
    return NULL;
}

static csm_node *scalar_new(const char *text, const char *src, int line)
{
    csm_node *n = node_new(CSM_NODE_SCALAR, src, line);
    n->text = dupstr(text, strlen(text));
    return n;
}

/* "file:line" or "--set key=value" for messages. */
/* Print a note once per process: a sweep loads its config once per run, and the same unused key
   is one note, not one per run. Remembers the last notes by a hash of their text. */
static void note_once(const char *msg)
{
    static uint64_t seen[64];
    static int nseen;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *c = msg; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    for (int k = 0; k < nseen && k < 64; k++)
        if (seen[k] == h) return;
    seen[nseen++ % 64] = h;
    fputs(msg, stderr);
}

static const char *where(const csm_node *n, char *buf, size_t size)
{
    return csm_cfg_where(n ? n->src : NULL, n ? n->line : 0, buf, (int)size);
}

#define FAIL_AT(err, node, ...)                                                                   \
    do {                                                                                          \
        char wbuf_[512], mbuf_[768];                                                              \
        snprintf(mbuf_, sizeof mbuf_, __VA_ARGS__);                                               \
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s", where(node, wbuf_, sizeof wbuf_),      \
                        mbuf_);                                                                   \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* YAML events -> tree.                                                                       */

typedef struct diag_capture {
    char msg[512];
} diag_capture;

static void diag_output(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    (void)diag;
    diag_capture *dc = user;
    if (dc->msg[0]) return; /* keep the first message */
    size_t n = len < sizeof dc->msg - 1 ? len : sizeof dc->msg - 1;
    memcpy(dc->msg, buf, n);
    dc->msg[n] = '\0';
    for (char *c = dc->msg; *c; c++)
        if (*c == '\n') *c = ' ';
}

static int mark_line(struct fy_token *t)
{
    const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
    return m ? m->line + 1 : 0;
}

/* Parse YAML text (file when `file` is set, else the string) into a tree. */
static int parse_yaml(const char *file, const char *str, const char *src, csm_node **out,
                      csm_error *err)
{
    diag_capture dc = {{0}};
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = diag_output;
    dcfg.user = &dc;
    dcfg.colorize = false;
    dcfg.show_source = false;
    dcfg.show_position = true;
    dcfg.show_type = false;
    dcfg.show_module = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    struct fy_parse_cfg pcfg = {.search_path = NULL, .flags = FYPCF_QUIET | FYPCF_JSON_AUTO, .userdata = NULL, .diag = diag};
    struct fy_parser *fyp = fy_parser_create(&pcfg);
    if (!fyp) {
        if (diag) fy_diag_unref(diag);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: cannot create a YAML parser", src);
    }
    int rc = file ? fy_parser_set_input_file(fyp, file) : fy_parser_set_string(fyp, str, strlen(str));
    if (rc != 0) {
        fy_parser_destroy(fyp);
        if (diag) fy_diag_unref(diag);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot read", src);
    }

    csm_node *stack[128];
    int depth = 0, docs = 0, status = 0;
    csm_node *root = NULL;
    char *pending_key = NULL; /* a mapping's key waiting for its value */
    int pending_key_line = 0;
    char wbuf[512];
    struct fy_event *ev;
    while ((ev = fy_parser_parse(fyp)) != NULL) {
        enum fy_event_type type = ev->type;
        csm_node *made = NULL;
        int line = mark_line(fy_event_get_token(ev));
        if (type == FYET_DOCUMENT_START) {
            if (++docs > 1) {
                status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                                  "%s:%d: more than one YAML document in a config", src, line);
            }
        } else if (type == FYET_ALIAS) {
            status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                              "%s:%d: YAML aliases are not supported in configs", src, line);
        } else if (type == FYET_SCALAR || type == FYET_MAPPING_START || type == FYET_SEQUENCE_START) {
            csm_node *parent = depth ? stack[depth - 1] : NULL;
            if (type == FYET_SCALAR) {
                size_t len = 0;
                const char *t = fy_token_get_text(ev->scalar.value, &len);
                if (parent && parent->kind == CSM_NODE_MAP && !pending_key) {
                    /* a key */
                    for (int k = 0; k < parent->nchild; k++)
                        if (strlen(parent->child[k]->key) == len &&
                            memcmp(parent->child[k]->key, t, len) == 0) {
                            snprintf(wbuf, sizeof wbuf, "%.*s", (int)len, t);
                            status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                                              "%s:%d: duplicate key '%s' (first given on line %d)",
                                              src, line, wbuf, parent->child[k]->line);
                            break;
                        }
                    pending_key = dupstr(t ? t : "", len);
                    pending_key_line = line;
                } else {
                    made = node_new(CSM_NODE_SCALAR, src, line);
                    made->text = dupstr(t ? t : "", len);
                    enum fy_scalar_style st = fy_token_scalar_style(ev->scalar.value);
                    made->quoted = st == FYSS_SINGLE_QUOTED || st == FYSS_DOUBLE_QUOTED;
                }
            } else {
                made = node_new(type == FYET_MAPPING_START ? CSM_NODE_MAP : CSM_NODE_SEQ, src, line);
                if (parent && parent->kind == CSM_NODE_MAP && !pending_key) {
                    status = csm_fail(err, CSM_EXIT_BAD_INPUT,
                                      "%s:%d: a mapping key must be a plain scalar", src, line);
                    node_free(made);
                    made = NULL;
                }
            }
            if (made) {
                if (parent && parent->kind == CSM_NODE_MAP) {
                    made->key = pending_key;
                    if (pending_key_line) made->line = made->line ? made->line : pending_key_line;
                    pending_key = NULL;
                }
                if (parent)
                    node_append(parent, made);
                else
                    root = made;
                if (made->kind != CSM_NODE_SCALAR) {
                    if (depth == (int)(sizeof stack / sizeof stack[0])) {
                        status = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: nested too deeply", src, line);
                    } else {
                        stack[depth++] = made;
                    }
                }
            }
        } else if (type == FYET_MAPPING_END || type == FYET_SEQUENCE_END) {
            if (depth > 0) depth--;
        }
        fy_parser_event_free(fyp, ev);
        if (status) break;
    }
    int stream_error = fy_parser_get_stream_error(fyp);
    fy_parser_destroy(fyp);
    if (diag) fy_diag_unref(diag);
    free(pending_key);
    if (status) {
        node_free(root);
        return status;
    }
    if (stream_error) {
        node_free(root);
        /* libfyaml's message starts with "line:column: ", after the file name when it read a
           file; prefix the source name once. */
        const char *m = dc.msg;
        size_t n = strlen(src);
        if (!strncmp(m, src, n) && m[n] == ':') m += n + 1;
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%s", src, m[0] ? m : " malformed YAML");
    }
    *out = root;
    return 0;
}

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

static int parse_value(const csm_node *n, const char *path, const csm_param_spec *s, csm_value *v,
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
        v->str = dupstr(n->text, strlen(n->text));
        return 0;
    case CSM_POINTS:
        if (n->kind != CSM_NODE_SEQ || n->nchild == 0)
            FAIL_AT(err, n, "%s must be a non-empty list of points [[x, y, z], ...]", path);
        free(v->points);
        v->points = malloc(sizeof(double) * 3 * (size_t)n->nchild);
        if (!v->points) abort();
        v->npoints = n->nchild;
        for (int k = 0; k < n->nchild; k++) {
            const csm_node *pt = n->child[k];
            if (pt->kind != CSM_NODE_SEQ || pt->nchild != 3)
                FAIL_AT(err, pt, "%s[%d] must be a point [x, y, z]", path, k);
            for (int d = 0; d < 3; d++)
                if (parse_number(pt->child[d], path, s, &v->points[3 * k + d], err)) return -1;
        }
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
    }
}

/* A default as a tree node, so the resolved config shows every value in force. */
static csm_node *default_node(const csm_param_spec *s, const char *src)
{
    char buf[256];
    if (s->type == CSM_VEC3 || s->type == CSM_MAT3) {
        csm_node *seq = node_new(CSM_NODE_SEQ, src, 0);
        for (int r = 0; r < 3; r++) {
            if (s->type == CSM_VEC3) {
                format_number(s->def3[r], buf, sizeof buf);
                node_append(seq, scalar_new(buf, src, 0));
            } else {
                csm_node *row = node_new(CSM_NODE_SEQ, src, 0);
                for (int k = 0; k < 3; k++) node_append(row, scalar_new(r == k ? "1" : "0", src, 0));
                node_append(seq, row);
            }
        }
        return seq;
    }
    csm_param_default_text(s, buf, sizeof buf);
    csm_node *n = scalar_new(buf, src, 0);
    n->quoted = s->type == CSM_STRING;
    return n;
}

static void set_default(const csm_param_spec *s, csm_value *v)
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
        v->str = dupstr(s->defs ? s->defs : "", strlen(s->defs ? s->defs : ""));
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
typedef struct section_ctx {
    const char *path;                    /* "solver", "objects[0].shape", ... */
    const csm_param_spec *spec;
    const char *const *also;             /* NULL-terminated */
    const csm_plugin_head *const *others; /* NULL-terminated */
    const char *owner;                   /* name of the selected plugin for messages */
} section_ctx;

static int parse_section(csm_node *map, const section_ctx *sc, csm_value *values, csm_error *err)
{
    char path[512];
    if (map->kind != CSM_NODE_MAP) FAIL_AT(err, map, "%s must be a mapping of keys to values", sc->path);
    int nspec = 0;
    while (sc->spec && sc->spec[nspec].key) nspec++;
    if (nspec > CSM_MAX_PARAMS) FAIL_AT(err, map, "%s: too many parameters in its table", sc->path);
    for (int k = 0; k < nspec; k++) set_default(&sc->spec[k], &values[k]);

    for (int c = 0; c < map->nchild; c++) {
        csm_node *n = map->child[c];
        snprintf(path, sizeof path, "%s%s%s", sc->path, sc->path[0] ? "." : "", n->key);
        int skip = 0;
        for (int a = 0; sc->also && sc->also[a]; a++)
            if (strcmp(sc->also[a], n->key) == 0) skip = 1;
        if (skip) continue;
        int idx = spec_find(sc->spec, n->key);
        if (idx >= 0) {
            if (parse_value(n, path, &sc->spec[idx], &values[idx], err)) return -1;
            continue;
        }
        int used_by_other = 0;
        for (int o = 0; sc->others && sc->others[o]; o++) {
            int oi = spec_find(sc->others[o]->params, n->key);
            if (oi < 0) continue;
            csm_value tmp = {0};
            int rc = parse_value(n, path, &sc->others[o]->params[oi], &tmp, err);
            free(tmp.str);
            free(tmp.points);
            if (rc) return -1;
            used_by_other = 1;
            break;
        }
        if (used_by_other) {
            char wbuf[512], msg[1024];
            snprintf(msg, sizeof msg, "csm: note: %s: %s is not used by %s\n", where(n, wbuf, sizeof wbuf), path,
                     sc->owner ? sc->owner : sc->path);
            note_once(msg);
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
        csm_node *d = default_node(&sc->spec[k], map->src);
        d->key = dupstr(sc->spec[k].key, strlen(sc->spec[k].key));
        node_append(map, d);
    }
    return 0;
}

/* A section whose selector key (`type`, `method`, ...) picks a plugin of a registry kind. */
static int parse_plugin_section(csm_node *map, const char *path, csm_kind kind,
                                const char *selector, const char *def, const char *const *extra,
                                csm_plugin_cfg *out, csm_error *err)
{
    if (map->kind != CSM_NODE_MAP) FAIL_AT(err, map, "%s must be a mapping", path);
    csm_node *sel = map_get(map, selector);
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
        csm_node *d = scalar_new(name, map->src, 0);
        d->key = dupstr(selector, strlen(selector));
        node_append(map, d);
    }
    const csm_plugin_head *others[CSM_MAX_PLUGINS + 1];
    int no = 0;
    for (int k = 0; k < csm_registry_count(kind); k++)
        if (csm_registry_at(kind, k) != p) others[no++] = csm_registry_at(kind, k);
    others[no] = NULL;
    const char *also[8] = {selector, NULL};
    for (int k = 0; extra && extra[k] && k < 6; k++) also[k + 1] = extra[k];
    section_ctx sc = {path, p->params, also, others, p->name};
    out->plugin = p;
    out->src = map->src;
    out->line = map->line;
    if (parse_section(map, &sc, out->values, err)) return -1;
    csm_params_fill(p->params, out->values, out->params.bytes);
    return 0;
}

/* A section of a fixed table of kinds (shapes, sampling): like a plugin section. */
static int parse_kind_section(csm_node *map, const char *path, const csm_plugin_head *kinds,
                              int nkinds, const char *def, int *which, csm_plugin_cfg *out,
                              csm_error *err)
{
    if (map->kind != CSM_NODE_MAP) FAIL_AT(err, map, "%s must be a mapping", path);
    csm_node *sel = map_get(map, "type");
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
        csm_node *d = scalar_new(name, map->src, 0);
        d->key = dupstr("type", 4);
        node_append(map, d);
    }
    const csm_plugin_head *others[16];
    int no = 0;
    for (int k = 0; k < nkinds && no < 15; k++)
        if (k != *which) others[no++] = &kinds[k];
    others[no] = NULL;
    const char *also[] = {"type", NULL};
    section_ctx sc = {path, kinds[*which].params, also, others, kinds[*which].name};
    out->plugin = &kinds[*which];
    out->src = map->src;
    out->line = map->line;
    if (parse_section(map, &sc, out->values, err)) return -1;
    csm_params_fill(kinds[*which].params, out->values, out->params.bytes);
    return 0;
}

/* Fixed section with a spec table; the map is created (empty) when absent. */
static csm_node *section_node(csm_node *root, const char *key, csm_node_kind kind)
{
    csm_node *n = map_get(root, key);
    if (!n) {
        n = node_new(kind, root->src, 0);
        n->key = dupstr(key, strlen(key));
        node_append(root, n);
    }
    return n;
}

/* Validate, then fill `out` (NULL: nothing) from the table's bound rows. */
static int parse_fixed(csm_node *map, const char *path, const csm_param_spec *spec,
                       const char *const *also, csm_value *values, void *out, csm_error *err)
{
    section_ctx sc = {path, spec, also, NULL, NULL};
    if (parse_section(map, &sc, values, err)) return -1;
    if (out) csm_params_fill(spec, values, out);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Overrides.                                                                                 */

static int apply_override(csm_node *root, const char *text, int index, csm_error *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: expected key.path=value", text);
    char keypath[512];
    snprintf(keypath, sizeof keypath, "%.*s", (int)(eq - text), text);
    csm_node *value = NULL;
    char src[600];
    snprintf(src, sizeof src, "--set %s", text);
    if (parse_yaml(NULL, eq + 1, "--set", &value, err)) {
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: the value is not valid YAML", text);
    }
    if (!value) value = scalar_new("", "--set", index);
    /* mark every node of the value as coming from this override */
    csm_node *stackn[256];
    int sp = 0;
    stackn[sp++] = value;
    while (sp) {
        csm_node *n = stackn[--sp];
        n->src = "--set";
        n->line = index;
        for (int k = 0; k < n->nchild && sp < 256; k++) stackn[sp++] = n->child[k];
    }
    csm_node *cur = root;
    char *save = NULL, *part = strtok_r(keypath, ".", &save);
    while (part) {
        char *next = strtok_r(NULL, ".", &save);
        if (cur->kind == CSM_NODE_SEQ) {
            char *end;
            long idx = strtol(part, &end, 10);
            if (*end || idx < 0 || idx >= cur->nchild) {
                node_free(value);
                return csm_fail(err, CSM_EXIT_BAD_INPUT,
                                "--set %s: '%s' is not an index of a list of %d", text, part, cur->nchild);
            }
            if (!next) {
                value->key = NULL;
                node_free(cur->child[idx]);
                cur->child[idx] = value;
                return 0;
            }
            cur = cur->child[idx];
        } else if (cur->kind == CSM_NODE_MAP) {
            csm_node *child = map_get(cur, part);
            if (!next) {
                value->key = dupstr(part, strlen(part));
                if (child) {
                    for (int k = 0; k < cur->nchild; k++)
                        if (cur->child[k] == child) cur->child[k] = value;
                    node_free(child);
                } else {
                    node_append(cur, value);
                }
                return 0;
            }
            if (!child) {
                child = node_new(CSM_NODE_MAP, "--set", index);
                child->key = dupstr(part, strlen(part));
                node_append(cur, child);
            }
            cur = child;
        } else {
            node_free(value);
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: '%s' is inside a value, not a mapping",
                            text, part);
        }
        part = next;
    }
    node_free(value);
    return csm_fail(err, CSM_EXIT_BAD_INPUT, "--set %s: empty key path", text);
}

/* ------------------------------------------------------------------------------------------ */
/* Emit the resolved tree as YAML.                                                            */

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
}

static int scalar_is_plain_safe(const csm_node *n)
{
    const char *t = n->text;
    if (!t[0]) return 0;
    if (n->quoted) {
        /* quoted strings that would read back as another type stay quoted */
        if (!strcmp(t, "true") || !strcmp(t, "false") || !strcmp(t, "null") || !strcmp(t, "~"))
            return 0;
        char *end;
        strtod(t, &end);
        if (*end == '\0') return 0;
    }
    for (const char *c = t; *c; c++)
        if (!(isalnum((unsigned char)*c) || strchr("_./+-", *c))) return 0;
    return t[0] != '-' || isdigit((unsigned char)t[1]) || t[1] == '.';
}

static void emit_scalar(strbuf *b, const csm_node *n)
{
    if (scalar_is_plain_safe(n)) {
        sb_printf(b, "%s", n->text);
        return;
    }
    sb_printf(b, "\"");
    for (const char *c = n->text; *c; c++) {
        if (*c == '"' || *c == '\\') sb_printf(b, "\\%c", *c);
        else if (*c == '\n') sb_printf(b, "\\n");
        else if ((unsigned char)*c < 0x20) sb_printf(b, "\\x%02x", (unsigned char)*c);
        else sb_printf(b, "%c", *c);
    }
    sb_printf(b, "\"");
}

/* Emitted inline: scalars, empty mappings, and sequences whose items are scalars or sequences of
   scalars (vectors, matrices, point lists). */
static int is_flat(const csm_node *n)
{
    if (n->kind == CSM_NODE_SCALAR) return 1;
    if (n->kind == CSM_NODE_MAP) return n->nchild == 0;
    for (int k = 0; k < n->nchild; k++) {
        const csm_node *c = n->child[k];
        if (c->kind == CSM_NODE_MAP) return 0;
        for (int j = 0; c->kind == CSM_NODE_SEQ && j < c->nchild; j++)
            if (c->child[j]->kind != CSM_NODE_SCALAR) return 0;
    }
    return 1;
}

static void emit_flow(strbuf *b, const csm_node *n)
{
    if (n->kind == CSM_NODE_SCALAR) {
        emit_scalar(b, n);
    } else if (n->kind == CSM_NODE_MAP) {
        sb_printf(b, "{");
        for (int k = 0; k < n->nchild; k++) {
            sb_printf(b, "%s%s: ", k ? ", " : "", n->child[k]->key);
            emit_flow(b, n->child[k]);
        }
        sb_printf(b, "}");
    } else {
        sb_printf(b, "[");
        for (int k = 0; k < n->nchild; k++) {
            if (k) sb_printf(b, ", ");
            emit_flow(b, n->child[k]);
        }
        sb_printf(b, "]");
    }
}

/* Block style; `inline_first` continues the current line ("- " of a list item) with the first
   key of a mapping. */
static void emit_block(strbuf *b, const csm_node *n, int indent, int inline_first)
{
    for (int k = 0; k < n->nchild; k++) {
        const csm_node *c = n->child[k];
        int pad = k == 0 && inline_first ? 0 : indent;
        if (n->kind == CSM_NODE_MAP) {
            sb_printf(b, "%*s%s:", pad, "", c->key);
        } else {
            sb_printf(b, "%*s-", pad, "");
        }
        if (is_flat(c)) {
            sb_printf(b, " ");
            emit_flow(b, c);
            sb_printf(b, "\n");
        } else if (n->kind == CSM_NODE_SEQ && c->kind == CSM_NODE_MAP) {
            sb_printf(b, " ");
            emit_block(b, c, indent + 2, 1);
        } else {
            sb_printf(b, "\n");
            emit_block(b, c, indent + 2, 0);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* sweep: key paths to lists of values (DESIGN.md "Configs"); the run set is their product.   */

static void free_sweep(csm_config *cfg)
{
    for (int a = 0; a < cfg->nsweep; a++) {
        for (int k = 0; k < cfg->sweep[a].nvalues; k++) free(cfg->sweep[a].values[k]);
        free(cfg->sweep[a].values);
        free(cfg->sweep[a].key);
    }
    free(cfg->sweep);
    cfg->sweep = NULL;
    cfg->nsweep = 0;
}

/* Takes `sweep` out of root (so the run's own config never holds it) into cfg->sweep. */
static int parse_sweep(csm_node *root, csm_config *cfg, csm_error *err)
{
    csm_node *sw = map_get(root, "sweep");
    if (!sw) return 0;
    for (int k = 0; k < root->nchild; k++)
        if (root->child[k] == sw) {
            memmove(root->child + k, root->child + k + 1, (size_t)(root->nchild - k - 1) * sizeof *root->child);
            root->nchild--;
            break;
        }
    int rc = 0;
    char wbuf[512];
    if (sw->kind == CSM_NODE_SCALAR && (!strcmp(sw->text, "") || !strcmp(sw->text, "null") || !strcmp(sw->text, "~")))
        goto done; /* "sweep:" with nothing after it */
    if (sw->kind != CSM_NODE_MAP) {
        rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep must be a mapping of key paths to lists "
                      "(sweep: {solver.alpha: [0.1, 0.5]})", where(sw, wbuf, sizeof wbuf));
        goto done;
    }
    cfg->sweep = calloc((size_t)sw->nchild + 1, sizeof *cfg->sweep);
    if (!cfg->sweep) abort();
    for (int a = 0; a < sw->nchild; a++) {
        csm_node *c = sw->child[a];
        if (c->kind != CSM_NODE_SEQ) {
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep.%s must be a list of values ([a, b, ...])",
                          where(c, wbuf, sizeof wbuf), c->key);
            goto done;
        }
        if (c->nchild == 0) {
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep.%s is an empty list (a sweep needs at least one value)",
                          where(c, wbuf, sizeof wbuf), c->key);
            goto done;
        }
        if (!c->key[0] || c->key[0] == '.' || c->key[strlen(c->key) - 1] == '.' || strstr(c->key, "..")) {
            rc = csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: sweep key '%s' is not a key path (like solver.alpha)",
                          where(c, wbuf, sizeof wbuf), c->key);
            goto done;
        }
        csm_sweep_axis *ax = &cfg->sweep[cfg->nsweep++];
        ax->key = dupstr(c->key, strlen(c->key));
        ax->line = c->line;
        ax->values = calloc((size_t)c->nchild, sizeof *ax->values);
        if (!ax->values) abort();
        for (int k = 0; k < c->nchild; k++) {
            strbuf b = {0};
            emit_flow(&b, c->child[k]);
            ax->values[ax->nvalues++] = b.s ? b.s : dupstr("\"\"", 2);
        }
    }
done:
    node_free(sw);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The whole config.                                                                          */

static int parse_object(csm_node *on, int index, csm_object_cfg *o, csm_error *err)
{
    char path[128], sub[160];
    snprintf(path, sizeof path, "objects[%d]", index);
    if (on->kind != CSM_NODE_MAP) FAIL_AT(err, on, "%s must be a mapping (shape, sampling, mass, ...)", path);
    o->line = on->line;
    o->pin_axis[0] = o->pin_axis[1] = -1;
    csm_node *shape = map_get(on, "shape");
    if (!shape) FAIL_AT(err, on, "%s.shape is required", path);
    int n;
    const csm_plugin_head *kinds = csm_config_shape_kinds(&n);
    snprintf(sub, sizeof sub, "%s.shape", path);
    if (parse_kind_section(shape, sub, kinds, n, NULL, &o->shape_type, &o->shape, err)) return -1;
    csm_node *sampling = section_node(on, "sampling", CSM_NODE_MAP);
    kinds = csm_config_sampling_kinds(&n);
    snprintf(sub, sizeof sub, "%s.sampling", path);
    if (parse_kind_section(sampling, sub, kinds, n, "grid", &o->sampling_type, &o->sampling, err))
        return -1;
    csm_node *pinned = map_get(on, "pinned");
    if (pinned) {
        if (pinned->kind != CSM_NODE_MAP)
            FAIL_AT(err, pinned, "%s.pinned must be a mapping {below: ..., above: ..., indices: [...]}", path);
        for (int c = 0; c < pinned->nchild; c++) {
            csm_node *pn = pinned->child[c];
            snprintf(sub, sizeof sub, "%s.pinned.%s", path, pn->key);
            if (strcmp(pn->key, "indices") == 0) { /* particle indices within the object */
                if (pn->kind != CSM_NODE_SEQ || pn->nchild == 0)
                    FAIL_AT(err, pn, "%s must be a non-empty list of particle indices", sub);
                o->pin_index = calloc((size_t)pn->nchild, sizeof *o->pin_index);
                if (!o->pin_index) abort();
                for (int k = 0; k < pn->nchild; k++) {
                    csm_value v = {0};
                    if (parse_value(pn->child[k], sub, &pin_index_spec, &v, err)) return -1;
                    o->pin_index[o->npin_index++] = (int32_t)v.num;
                }
                continue;
            }
            int side = strcmp(pn->key, "below") == 0 ? 0 : strcmp(pn->key, "above") == 0 ? 1 : -1;
            if (side < 0) FAIL_AT(err, pn, "unknown key %s (valid keys: below, above, indices)", sub);
            csm_value v[3] = {0};
            pin_params pin;
            if (parse_fixed(pn, sub, pin_table, NULL, v, &pin, err)) return -1;
            o->pin_axis[side] = pin.axis;
            o->pin_value[side] = pin.value;
        }
    }
    const char *also[] = {"shape", "sampling", "pinned", NULL};
    static const csm_plugin_head body = {1, "body", "", body_params};
    o->body.plugin = &body;
    o->body.line = on->line;
    return parse_fixed(on, path, body_params, also, o->body.values, o->body.params.bytes, err);
}

static int parse_plugin_list(csm_node *root, const char *key, csm_kind kind, csm_plugin_cfg **out,
                             int *count, csm_error *err)
{
    csm_node *list = section_node(root, key, CSM_NODE_SEQ);
    if (list->kind != CSM_NODE_SEQ) FAIL_AT(err, list, "%s must be a list of {type: ..., ...}", key);
    *count = list->nchild;
    *out = calloc((size_t)list->nchild + 1, sizeof **out);
    if (!*out) abort();
    for (int k = 0; k < list->nchild; k++) {
        char path[64];
        snprintf(path, sizeof path, "%s[%d]", key, k);
        if (parse_plugin_section(list->child[k], path, kind, "type", NULL, NULL, &(*out)[k], err)) return -1;
    }
    return 0;
}

static void free_values(csm_plugin_cfg *pc)
{
    for (int k = 0; k < CSM_MAX_PARAMS; k++) {
        free(pc->values[k].str);
        free(pc->values[k].points);
    }
}

void csm_config_free(csm_config *cfg)
{
    for (int k = 0; k < cfg->nobjects; k++) {
        free_values(&cfg->objects[k].shape);
        free_values(&cfg->objects[k].sampling);
        free_values(&cfg->objects[k].body);
        free(cfg->objects[k].pin_index);
    }
    free(cfg->objects);
    free_values(&cfg->clustering);
    free_values(&cfg->integrator);
    free_values(&cfg->rotation);
    free_values(&cfg->plasticity);
    free_values(&cfg->recluster);
    for (int k = 0; k < cfg->nforces; k++) free_values(&cfg->forces[k]);
    for (int k = 0; k < cfg->ncolliders; k++) free_values(&cfg->colliders[k]);
    free(cfg->forces);
    free(cfg->colliders);
    free(cfg->file);
    free(cfg->name);
    free(cfg->output_path);
    free(cfg->resolved);
    free_sweep(cfg);
    node_free(cfg->root);
    memset(cfg, 0, sizeof *cfg);
}

static int load_plugins(csm_node *root, const char *config_path, csm_error *err)
{
    csm_node *list = map_get(root, "plugins");
    if (!list) return 0;
    if (list->kind != CSM_NODE_SEQ) FAIL_AT(err, list, "plugins must be a list of shared-object paths");
    for (int k = 0; k < list->nchild; k++) {
        csm_node *n = list->child[k];
        if (n->kind != CSM_NODE_SCALAR) FAIL_AT(err, n, "plugins[%d] must be a path", k);
        char path[4096];
        const char *slash = strrchr(config_path, '/');
        if (n->text[0] == '/' || !slash)
            snprintf(path, sizeof path, "%s", n->text);
        else
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - config_path), config_path, n->text);
        csm_error e;
        if (csm_registry_load(path, &e)) {
            char wbuf[512];
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s", where(n, wbuf, sizeof wbuf), e.msg);
        }
    }
    return 0;
}

/* A config is UTF-8 text (YAML 1.2 Sec 5.1-5.2): a NUL byte, another control character or a
   malformed sequence is refused
   before parsing (libfyaml accepts NUL bytes silently in some inputs, and hangs on an invalid
   byte in a directive line). */
static int check_text(const unsigned char *s, size_t n, const char *path, csm_error *err)
{
    int line = 1;
    for (size_t k = 0; k < n; k++) {
        unsigned c = s[k];
        if (c == '\n') line++;
        if (c == 0) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: binary data (a NUL byte) in a config", path, line);
        /* YAML's printable set (Sec 5.1): of the C0 controls only tab, line feed and return */
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: a control character (byte 0x%02x) in a config", path,
                            line, c);
        if (c < 0x80) continue;
        /* the length of the sequence and the range of its second byte */
        int more = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
        unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80, hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
        int ok = more > 0 && k + (size_t)more < n;
        for (int j = 1; ok && j <= more; j++) {
            unsigned d = s[k + (size_t)j];
            ok = j == 1 ? d >= lo && d <= hi : d >= 0x80 && d <= 0xbf;
        }
        if (!ok)
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: not UTF-8 text (byte 0x%02x); a config is text", path,
                            line, c);
        k += (size_t)more;
    }
    return 0;
}

/* Parse `text` (a config in memory, named `path` in messages) or, when it is NULL, the file at
   `path`; then override and validate. */
static int load(const char *path, const char *text, const char *const *overrides, int noverrides,
                csm_config *cfg, csm_error *err);

int csm_config_load(const char *path, const char *const *overrides, int noverrides,
                    csm_config *cfg, csm_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    char *text;
    size_t len;
    if (csm_read_file(path, "config", CSM_CONFIG_MAX_BYTES, &text, &len, err)) return -1;
    const unsigned char *bytes = (const unsigned char *)text;
    int rc = check_text(bytes, len, path, err);
    free(text);
    return rc ? rc : load(path, NULL, overrides, noverrides, cfg, err);
}

int csm_config_load_text(const char *name, const char *text, const char *const *overrides, int noverrides,
                         csm_config *cfg, csm_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    if (check_text((const unsigned char *)text, strlen(text), name, err)) return -1;
    return load(name, text, overrides, noverrides, cfg, err);
}

static int load(const char *path, const char *text, const char *const *overrides, int noverrides,
                csm_config *cfg, csm_error *err)
{
    cfg->file = dupstr(path, strlen(path));
    if (parse_yaml(text ? NULL : path, text, cfg->file, &cfg->root, err)) goto fail;
    if (!cfg->root) {
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:1: empty config (expected a mapping with at least objects:)", path);
        goto fail;
    }
    if (cfg->root->kind != CSM_NODE_MAP) {
        char wbuf[512];
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: a config must be a mapping of sections (name, time, objects, ...)",
                 where(cfg->root, wbuf, sizeof wbuf));
        goto fail;
    }
    for (int k = 0; k < noverrides; k++)
        if (apply_override(cfg->root, overrides[k], k + 1, err)) goto fail;
    if (parse_sweep(cfg->root, cfg, err)) goto fail;
    if (load_plugins(cfg->root, path, err)) goto fail;

    csm_node *root = cfg->root;
    static const char *const top_sections[] = {"time", "objects", "clustering", "solver", "plasticity",
                                               "recluster", "forces", "colliders", "output", "plugins", "sweep", NULL};
    csm_value top[3] = {{0}};
    if (parse_fixed(root, "", top_params, top_sections, top, cfg, err)) {
        free(top[0].str);
        goto fail;
    }
    if (!top[0].given || !top[0].str[0]) {
        /* the default name is the config's file name without folder and extension */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *dot = strrchr(base, '.');
        size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
        cfg->name = dupstr(base, len);
        csm_node *nn = map_get(root, "name");
        free(nn->text);
        nn->text = dupstr(cfg->name, len);
    } else {
        /* the name becomes out/<name>.h5 and a sweep's folder: one file name, nothing that climbs
           out of a folder or breaks a line */
        const char *nm = top[0].str;
        size_t len = strlen(nm), ok = strspn(nm, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-");
        if (ok != len || nm[0] == '.' || len > 128) {
            char wbuf[512];
            csm_node *nn = map_get(root, "name");
            csm_fail(err, CSM_EXIT_BAD_INPUT,
                     "%s: name = '%s': a run's name becomes a file name: up to 128 letters, digits, '.', '_', '+' "
                     "and '-', not starting with '.'", where(nn ? nn : root, wbuf, sizeof wbuf), nm);
            free(top[0].str);
            goto fail;
        }
        cfg->name = dupstr(nm, len);
    }
    free(top[0].str);

    csm_value tv[4] = {{0}};
    if (parse_fixed(section_node(root, "time", CSM_NODE_MAP), "time", time_params, NULL, tv, cfg, err))
        goto fail;

    csm_node *objects = map_get(root, "objects");
    if (!objects) {
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: objects is required (a list of bodies)", path);
        goto fail;
    }
    if (objects->kind != CSM_NODE_SEQ || objects->nchild == 0) {
        char wbuf[512];
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: objects must be a non-empty list",
                 where(objects, wbuf, sizeof wbuf));
        goto fail;
    }
    cfg->nobjects = objects->nchild;
    cfg->objects = calloc((size_t)cfg->nobjects, sizeof *cfg->objects);
    if (!cfg->objects) abort();
    for (int k = 0; k < cfg->nobjects; k++)
        if (parse_object(objects->child[k], k, &cfg->objects[k], err)) goto fail;

    if (parse_plugin_section(section_node(root, "clustering", CSM_NODE_MAP), "clustering",
                             CSM_KIND_CLUSTERING, "method", "random_radius", NULL, &cfg->clustering, err))
        goto fail;

    /* solver: the integrator's parameters, plus rotation and svd. */
    csm_node *solver = section_node(root, "solver", CSM_NODE_MAP);
    if (solver->kind != CSM_NODE_MAP) {
        char wbuf[512];
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver must be a mapping", where(solver, wbuf, sizeof wbuf));
        goto fail;
    }
    {
        csm_node *rot = map_get(solver, "rotation");
        static const char *const common[] = {"rotation", "svd", "mode", "beta", "conserve", NULL};
        if (parse_plugin_section(solver, "solver", CSM_KIND_INTEGRATOR, "integrator", "shape_matching",
                                 common, &cfg->integrator, err))
            goto fail;
        const char *rname = rot && rot->kind == CSM_NODE_SCALAR ? rot->text : csm_solver_common_params[0].defs;
        const csm_plugin_head *rp = csm_registry_find(CSM_KIND_ROTATION, rname);
        if (!rp) {
            char names[256], wbuf[512];
            csm_registry_names(CSM_KIND_ROTATION, names, sizeof names);
            csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver.rotation = '%s' is not a known rotation (valid: %s)",
                     where(rot ? rot : solver, wbuf, sizeof wbuf), rname, names);
            goto fail;
        }
        cfg->rotation.plugin = rp;
        if (!rot) {
            csm_node *d = scalar_new(rname, solver->src, 0);
            d->key = dupstr("rotation", 8);
            node_append(solver, d);
        }
        /* svd, mode, beta, conserve: plain values, filled in with their defaults when absent */
        csm_value cv[CSM_MAX_PARAMS] = {{0}};
        for (int k = 0; csm_solver_common_params[k].key; k++) {
            const csm_param_spec *spec = &csm_solver_common_params[k];
            if (spec->size == 0) continue; /* rotation, above */
            csm_node *n = map_get(solver, spec->key);
            char path[64];
            snprintf(path, sizeof path, "solver.%s", spec->key);
            if (n) {
                if (parse_value(n, path, spec, &cv[k], err)) goto fail;
            } else {
                set_default(spec, &cv[k]);
                csm_node *d = default_node(spec, solver->src);
                d->key = dupstr(spec->key, strlen(spec->key));
                node_append(solver, d);
            }
        }
        csm_params_fill(csm_solver_common_params, cv, cfg);
    }

    if (parse_plugin_section(section_node(root, "plasticity", CSM_NODE_MAP), "plasticity",
                             CSM_KIND_PLASTICITY, "model", "none", NULL, &cfg->plasticity, err))
        goto fail;
    if (parse_plugin_section(section_node(root, "recluster", CSM_NODE_MAP), "recluster",
                             CSM_KIND_RECLUSTERER, "method", "none", NULL, &cfg->recluster, err))
        goto fail;
    if (parse_plugin_list(root, "forces", CSM_KIND_FORCE, &cfg->forces, &cfg->nforces, err)) goto fail;
    if (parse_plugin_list(root, "colliders", CSM_KIND_COLLIDER, &cfg->colliders, &cfg->ncolliders, err))
        goto fail;

    csm_value ov[3] = {{0}};
    if (parse_fixed(section_node(root, "output", CSM_NODE_MAP), "output", output_params, NULL, ov, cfg, err)) {
        free(ov[0].str);
        goto fail;
    }
    if (!ov[0].str[0]) {
        char p[4096];
        snprintf(p, sizeof p, "out/%s.h5", cfg->name);
        cfg->output_path = dupstr(p, strlen(p));
        csm_node *pn = map_get(map_get(root, "output"), "path");
        free(pn->text);
        pn->text = dupstr(p, strlen(p));
    } else {
        cfg->output_path = dupstr(ov[0].str, strlen(ov[0].str));
    }
    free(ov[0].str);

    strbuf b = {0};
    emit_block(&b, cfg->root, 0, 0);
    cfg->resolved = b.s ? b.s : dupstr("", 0);
    return 0;
fail:
    csm_config_free(cfg);
    return -1;
}
