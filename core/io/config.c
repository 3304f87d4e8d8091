/* A csm_config from a file or text (docs/DESIGN.md "Configs"): parse, override, take out the sweep,
   and validate every section against its table (sections.c) or its plugin's. */
#include "config_tree.h"
#include "error.h"

#include "files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* solver.young and solver.poisson, the material in the units of the field, resolved to the pair
   the solvers take: the integrator's shear modulus mu = E / (2 (1 + nu)) and the bulk modulus
   kappa = E / (3 (1 - 2 nu)) = 2 mu (1 + nu) / (3 (1 - 2 nu)). A pair given twice is refused. */
static int resolve_material(csm_config *cfg, csm_node *solver, csm_error *err)
{
    csm_node *young = csm_node_get(solver, "young"), *nu = csm_node_get(solver, "poisson");
    csm_node *bulk = csm_node_get(solver, "bulk_modulus"), *mod = csm_node_get(solver, "modulus");
    if (mod && mod->line == 0) mod = NULL; /* a default the section filled in, not the user's */
    if (bulk && bulk->line == 0) bulk = NULL;
    int has_young = cfg->young > 0, has_nu = nu && cfg->poisson != 0.0;
    if (!has_young && !has_nu) return 0;
    char wbuf[512];
    csm_plugin_cfg *in = &cfg->integrator;
    const csm_param_spec *spec = in->plugin->params;
    int at = -1;
    for (int k = 0; spec && spec[k].key; k++)
        if (!strcmp(spec[k].key, "modulus")) at = k;
    if (at < 0)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver.%s needs an integrator that takes a modulus (%s takes alpha)",
                        csm_node_where(young ? young : nu, wbuf, sizeof wbuf), has_young ? "young" : "poisson",
                        in->plugin->name);
    if (has_young && mod)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver.young and solver.modulus both give the material; keep one",
                        csm_node_where(mod, wbuf, sizeof wbuf));
    if (bulk && cfg->bulk_modulus > 0)
        return csm_fail(err, CSM_EXIT_BAD_INPUT,
                        "%s: solver.bulk_modulus and solver.%s both give the bulk stiffness; keep one",
                        csm_node_where(bulk, wbuf, sizeof wbuf), has_young ? "young" : "poisson");
    double v = cfg->poisson, mu = in->values[at].num;
    if (has_young) {
        mu = cfg->young / (2.0 * (1.0 + v));
        in->values[at].num = mu;
        csm_params_fill(spec, in->values, in->params.bytes);
    }
    if (!(mu > 0))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver.poisson needs a modulus (solver.modulus or solver.young)",
                        csm_node_where(nu, wbuf, sizeof wbuf));
    cfg->bulk_modulus = 2.0 * mu * (1.0 + v) / (3.0 * (1.0 - 2.0 * v));
    /* the resolved pair in the config's text, which the log keeps */
    const char *keys[2] = {"modulus", "bulk_modulus"};
    double vals[2] = {mu, cfg->bulk_modulus};
    for (int k = 0; k < 2; k++) {
        csm_node *n = csm_node_get(solver, keys[k]);
        if (!n || n->kind != CSM_NODE_SCALAR) continue;
        char text[64];
        snprintf(text, sizeof text, "%.17g", vals[k]);
        free(n->text);
        n->text = csm_dupstr(text, strlen(text));
    }
    return 0;
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
    csm_node *shape = csm_node_get(on, "shape");
    if (!shape) FAIL_AT(err, on, "%s.shape is required", path);
    int n;
    const csm_plugin_head *kinds = csm_config_shape_kinds(&n);
    snprintf(sub, sizeof sub, "%s.shape", path);
    if (csm_section_kind(shape, sub, kinds, n, NULL, &o->shape_type, &o->shape, err)) return -1;
    csm_node *sampling = csm_section_node(on, "sampling", CSM_NODE_MAP);
    kinds = csm_config_sampling_kinds(&n);
    snprintf(sub, sizeof sub, "%s.sampling", path);
    if (csm_section_kind(sampling, sub, kinds, n, "grid", &o->sampling_type, &o->sampling, err))
        return -1;
    csm_node *pinned = csm_node_get(on, "pinned");
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
                if (!o->pin_index) CSM_OUT_OF_MEMORY();
                for (int k = 0; k < pn->nchild; k++) {
                    csm_value v = {0};
                    if (csm_param_parse(pn->child[k], sub, &csm_pin_index_spec, &v, err)) return -1;
                    o->pin_index[o->npin_index++] = (int32_t)v.num;
                }
                continue;
            }
            int side = strcmp(pn->key, "below") == 0 ? 0 : strcmp(pn->key, "above") == 0 ? 1 : -1;
            if (side < 0) FAIL_AT(err, pn, "unknown key %s (valid keys: below, above, indices)", sub);
            csm_value v[CSM_MAX_PARAMS] = {0};
            csm_pin_params pin;
            if (csm_section_fixed(pn, sub, csm_pin_table, NULL, v, &pin, err)) return -1;
            o->pin_axis[side] = pin.axis;
            o->pin_value[side] = pin.value;
        }
    }
    const char *also[] = {"shape", "sampling", "pinned", "clustering", "plasticity", NULL};
    static const csm_plugin_head body = {1, "body", "", csm_body_table};
    o->body.plugin = &body;
    o->body.line = on->line;
    return csm_section_fixed(on, path, csm_body_table, also, o->body.values, o->body.params.bytes, err);
}

static csm_node *node_copy(const csm_node *n)
{
    csm_node *c = csm_node_new(n->kind, n->src, n->line);
    if (n->key) c->key = csm_dupstr(n->key, strlen(n->key));
    if (n->text) c->text = csm_dupstr(n->text, strlen(n->text));
    c->quoted = n->quoted;
    for (int k = 0; k < n->nchild; k++) csm_node_append(c, node_copy(n->child[k]));
    return c;
}

/* objects[index].<key>, the object's own section of a plugin kind: unless its selector names
   another plugin than the top-level section's, it takes that section's values for the keys it
   does not set (`clustering: {radius: 0.1}` changes the radius alone), so the resolved config
   shows every value in force. */
static int object_section(csm_node *on, int index, const char *key, const csm_node *top, csm_kind kind,
                          const char *selector, int *own, csm_plugin_cfg *out, csm_error *err)
{
    csm_node *mine = csm_node_get(on, key);
    if (!mine) return 0;
    char path[160];
    snprintf(path, sizeof path, "objects[%d].%s", index, key);
    if (mine->kind != CSM_NODE_MAP) FAIL_AT(err, mine, "%s must be a mapping {%s: ..., ...}", path, selector);
    const csm_node *sel = csm_node_get(mine, selector), *top_sel = csm_node_get(top, selector);
    int same = !sel || (top_sel && sel->kind == CSM_NODE_SCALAR && top_sel->kind == CSM_NODE_SCALAR &&
                        strcmp(sel->text, top_sel->text) == 0);
    for (int k = 0; same && k < top->nchild; k++)
        if (!csm_node_get(mine, top->child[k]->key)) csm_node_append(mine, node_copy(top->child[k]));
    *own = 1;
    return csm_section_plugin(mine, path, kind, selector, NULL, NULL, out, err);
}

static int parse_plugin_list(csm_node *root, const char *key, csm_kind kind, csm_plugin_cfg **out,
                             int *count, csm_error *err)
{
    csm_node *list = csm_section_node(root, key, CSM_NODE_SEQ);
    if (list->kind != CSM_NODE_SEQ) FAIL_AT(err, list, "%s must be a list of {type: ..., ...}", key);
    *count = list->nchild;
    *out = calloc((size_t)list->nchild + 1, sizeof **out);
    if (!*out) CSM_OUT_OF_MEMORY();
    for (int k = 0; k < list->nchild; k++) {
        char path[64];
        snprintf(path, sizeof path, "%s[%d]", key, k);
        if (csm_section_plugin(list->child[k], path, kind, "type", NULL, NULL, &(*out)[k], err)) return -1;
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
        free_values(&cfg->objects[k].clustering);
        free_values(&cfg->objects[k].plasticity);
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
    csm_sweep_free(cfg);
    csm_node_free(cfg->root);
    memset(cfg, 0, sizeof *cfg);
}

static int load_plugins(csm_node *root, const char *config_path, csm_error *err)
{
    csm_node *list = csm_node_get(root, "plugins");
    if (!list) return 0;
    if (list->kind != CSM_NODE_SEQ) FAIL_AT(err, list, "plugins must be a list of shared-object paths");
    for (int k = 0; k < list->nchild; k++) {
        csm_node *n = list->child[k];
        if (n->kind != CSM_NODE_SCALAR) FAIL_AT(err, n, "plugins[%d] must be a path", k);
        char path[4096];
        const char *slash = strrchr(config_path, '/');
        if (n->text[0] == '/')
            snprintf(path, sizeof path, "%s", n->text);
        else if (!slash) /* beside a config in the working folder: dlopen takes a bare name from the
                            library path, not from here */
            snprintf(path, sizeof path, "./%s", n->text);
        else
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - config_path), config_path, n->text);
        csm_error e;
        if (csm_registry_load(path, &e)) {
            char wbuf[512];
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s", csm_node_where(n, wbuf, sizeof wbuf), e.msg);
        }
    }
    return 0;
}

/* A config is UTF-8 text without control characters (csm_text_check). */
static int check_text(const unsigned char *s, size_t n, const char *path, csm_error *err)
{
    char why[128];
    int line = csm_text_check(s, n, why, sizeof why);
    return line ? csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:%d: %s", path, line, why) : 0;
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
    cfg->file = csm_dupstr(path, strlen(path));
    if (csm_yaml_parse(text ? NULL : path, text, cfg->file, &cfg->root, err)) goto fail;
    if (!cfg->root) {
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s:1: empty config (expected a mapping with at least objects:)", path);
        goto fail;
    }
    if (cfg->root->kind != CSM_NODE_MAP) {
        char wbuf[512];
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: a config must be a mapping of sections (name, time, objects, ...)",
                 csm_node_where(cfg->root, wbuf, sizeof wbuf));
        goto fail;
    }
    for (int k = 0; k < noverrides; k++)
        if (csm_override_apply(cfg->root, overrides[k], k + 1, err)) goto fail;
    if (csm_sweep_parse(cfg->root, cfg, err)) goto fail;
    if (load_plugins(cfg->root, path, err)) goto fail;

    csm_node *root = cfg->root;
    static const char *const top_sections[] = {"time", "objects", "clustering", "solver", "plasticity",
                                               "recluster", "forces", "colliders", "contact", "output", "plugins", "sweep", NULL};
    csm_value top[CSM_MAX_PARAMS] = {{0}};
    if (csm_section_fixed(root, "", csm_top_params, top_sections, top, cfg, err)) {
        free(top[0].str);
        goto fail;
    }
    if (!top[0].given || !top[0].str[0]) {
        /* the default name is the config's file name without folder and extension */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *dot = strrchr(base, '.');
        size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
        cfg->name = csm_dupstr(base, len);
        csm_node *nn = csm_node_get(root, "name");
        free(nn->text);
        nn->text = csm_dupstr(cfg->name, len);
    } else {
        /* the name becomes out/<name>.h5 and a sweep's folder: one file name, nothing that climbs
           out of a folder or breaks a line */
        const char *nm = top[0].str;
        size_t len = strlen(nm), ok = strspn(nm, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-");
        if (ok != len || nm[0] == '.' || len > 128) {
            char wbuf[512];
            csm_node *nn = csm_node_get(root, "name");
            csm_fail(err, CSM_EXIT_BAD_INPUT,
                     "%s: name = '%s': a run's name becomes a file name: up to 128 letters, digits, '.', '_', '+' "
                     "and '-', not starting with '.'", csm_node_where(nn ? nn : root, wbuf, sizeof wbuf), nm);
            free(top[0].str);
            goto fail;
        }
        cfg->name = csm_dupstr(nm, len);
    }
    free(top[0].str);

    csm_value tv[CSM_MAX_PARAMS] = {{0}};
    if (csm_section_fixed(csm_section_node(root, "time", CSM_NODE_MAP), "time", csm_time_params, NULL, tv, cfg, err))
        goto fail;

    csm_node *objects = csm_node_get(root, "objects");
    if (!objects) {
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: objects is required (a list of bodies)", path);
        goto fail;
    }
    if (objects->kind != CSM_NODE_SEQ || objects->nchild == 0) {
        char wbuf[512];
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: objects must be a non-empty list",
                 csm_node_where(objects, wbuf, sizeof wbuf));
        goto fail;
    }
    cfg->nobjects = objects->nchild;
    cfg->objects = calloc((size_t)cfg->nobjects, sizeof *cfg->objects);
    if (!cfg->objects) CSM_OUT_OF_MEMORY();
    for (int k = 0; k < cfg->nobjects; k++)
        if (parse_object(objects->child[k], k, &cfg->objects[k], err)) goto fail;

    if (csm_section_plugin(csm_section_node(root, "clustering", CSM_NODE_MAP), "clustering",
                             CSM_KIND_CLUSTERING, "method", "random_radius", NULL, &cfg->clustering, err))
        goto fail;

    /* solver: the integrator's parameters, plus rotation and svd. */
    csm_node *solver = csm_section_node(root, "solver", CSM_NODE_MAP);
    if (solver->kind != CSM_NODE_MAP) {
        char wbuf[512];
        csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver must be a mapping", csm_node_where(solver, wbuf, sizeof wbuf));
        goto fail;
    }
    {
        csm_node *rot = csm_node_get(solver, "rotation");
        static const char *const common[] = {"rotation", "svd",   "mode",  "beta",    "conserve", "volume",
                                             "bulk_modulus", "energy", "stabilization", "gradient", "material", "young", "poisson", "lanes",
                                             NULL};
        if (csm_section_plugin(solver, "solver", CSM_KIND_INTEGRATOR, "integrator", "shape_matching",
                                 common, &cfg->integrator, err))
            goto fail;
        const char *rname = rot && rot->kind == CSM_NODE_SCALAR ? rot->text : csm_solver_common_params[0].defs;
        const csm_plugin_head *rp = csm_registry_find(CSM_KIND_ROTATION, rname);
        if (!rp) {
            char names[256], wbuf[512];
            csm_registry_names(CSM_KIND_ROTATION, names, sizeof names);
            csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver.rotation = '%s' is not a known rotation (valid: %s)",
                     csm_node_where(rot ? rot : solver, wbuf, sizeof wbuf), rname, names);
            goto fail;
        }
        cfg->rotation.plugin = rp;
        if (!rot) {
            csm_node *d = csm_node_scalar(rname, solver->src, 0);
            d->key = csm_dupstr("rotation", 8);
            csm_node_append(solver, d);
        }
        /* svd, mode, beta, conserve, volume, bulk_modulus, lanes: plain values, filled in with their defaults
           when absent */
        csm_value cv[CSM_MAX_PARAMS] = {{0}};
        for (int k = 0; csm_solver_common_params[k].key; k++) {
            const csm_param_spec *spec = &csm_solver_common_params[k];
            if (spec->size == 0) continue; /* rotation, above */
            csm_node *n = csm_node_get(solver, spec->key);
            char path[64];
            snprintf(path, sizeof path, "solver.%s", spec->key);
            if (n) {
                if (csm_param_parse(n, path, spec, &cv[k], err)) goto fail;
            } else {
                csm_param_set_default(spec, &cv[k]);
                csm_node *d = csm_param_default_node(spec, solver->src);
                d->key = csm_dupstr(spec->key, strlen(spec->key));
                csm_node_append(solver, d);
            }
        }
        csm_params_fill(csm_solver_common_params, cv, cfg);
        if (resolve_material(cfg, solver, err)) goto fail;
        /* with a modulus each cluster's gain comes from it, and the integrator's alpha is not read */
        const csm_value *alpha = csm_cfg_value(&cfg->integrator, "alpha");
        const csm_value *modulus = csm_cfg_value(&cfg->integrator, "modulus");
        if (alpha && alpha->given && modulus && modulus->num > 0) {
            char at[256], msg[512];
            snprintf(msg, sizeof msg, "csm: note: %s: solver.alpha is not used when solver.modulus is set\n",
                     csm_cfg_where(cfg->integrator.src, alpha->line, at, sizeof at));
            csm_note_once(msg);
        }
        /* the material is the continuum energy's, which a modulus's clusters store (the default is
           not noted: a logged config read back lists every key) */
        if (cfg->material != CSM_MATERIAL_COROTATED && !(cfg->energy == CSM_ENERGY_CONTINUUM && modulus && modulus->num > 0)) {
            char at[512], msg[768];
            snprintf(msg, sizeof msg, "csm: note: %s: solver.material is not used %s\n",
                     csm_node_where(csm_node_get(solver, "material"), at, sizeof at),
                     cfg->energy != CSM_ENERGY_CONTINUUM ? "with solver.energy: goals" : "without a modulus (young)");
            csm_note_once(msg);
        }
        /* split goals are a similarity of the rigid fit; an integrator must project the volume */
        const csm_integrator *in = (const csm_integrator *)cfg->integrator.plugin;
        const char *why = cfg->mode != CSM_MODE_RIGID ? "needs solver.mode: rigid"
                          : in->version < 3 || !in->projects_volume ? "needs an integrator that projects volume"
                                                                     : NULL;
        if (cfg->volume == CSM_VOLUME_SPLIT && why) {
            char wbuf[512];
            csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: solver.volume: split %s (%s does not)",
                     csm_node_where(csm_node_get(solver, "volume"), wbuf, sizeof wbuf), why,
                     cfg->mode != CSM_MODE_RIGID ? "the linear and quadratic goals" : in->name);
            goto fail;
        }
    }

    if (csm_section_plugin(csm_section_node(root, "plasticity", CSM_NODE_MAP), "plasticity",
                             CSM_KIND_PLASTICITY, "model", "none", NULL, &cfg->plasticity, err))
        goto fail;
    for (int k = 0; k < cfg->nobjects; k++) {
        csm_object_cfg *o = &cfg->objects[k];
        if (object_section(objects->child[k], k, "clustering", csm_node_get(root, "clustering"), CSM_KIND_CLUSTERING,
                           "method", &o->own_clustering, &o->clustering, err) ||
            object_section(objects->child[k], k, "plasticity", csm_node_get(root, "plasticity"), CSM_KIND_PLASTICITY,
                           "model", &o->own_plasticity, &o->plasticity, err))
            goto fail;
        /* a model that acts on every cluster cannot share the scene with an object's own */
        const csm_plugin_cfg *models[2] = {&cfg->plasticity, &o->plasticity};
        for (int m = 0; m < 2 && o->own_plasticity; m++)
            if (models[m]->plugin->version < 2) {
                char wbuf[512];
                csm_fail(err, CSM_EXIT_BAD_INPUT,
                         "%s: objects[%d].plasticity: the plasticity model %s acts on every object (plugin version "
                         "1); objects with their own plasticity need models of version 2",
                         csm_node_where(csm_node_get(objects->child[k], "plasticity"), wbuf, sizeof wbuf), k,
                         models[m]->plugin->name);
                goto fail;
            }
        const csm_body_params *bp = csm_cfg_params(&o->body);
        const csm_value *mu = csm_cfg_value(&cfg->integrator, "modulus");
        if (bp->modulus > 0 && (!mu || !(mu->num > 0))) {
            char wbuf[512];
            csm_fail(err, CSM_EXIT_BAD_INPUT,
                     "%s: objects[%d].modulus needs an integrator whose stiffness comes from a modulus (%s takes alpha "
                     "unless solver.modulus is set)",
                     csm_node_where(csm_node_get(objects->child[k], "modulus"), wbuf, sizeof wbuf), k,
                     cfg->integrator.plugin->name);
            goto fail;
        }
    }
    if (csm_section_plugin(csm_section_node(root, "recluster", CSM_NODE_MAP), "recluster",
                             CSM_KIND_RECLUSTERER, "method", "none", NULL, &cfg->recluster, err))
        goto fail;
    if (parse_plugin_list(root, "forces", CSM_KIND_FORCE, &cfg->forces, &cfg->nforces, err)) goto fail;
    if (parse_plugin_list(root, "colliders", CSM_KIND_COLLIDER, &cfg->colliders, &cfg->ncolliders, err))
        goto fail;

    csm_value kv[CSM_MAX_PARAMS] = {{0}};
    if (csm_section_fixed(csm_section_node(root, "contact", CSM_NODE_MAP), "contact", csm_contact_params, NULL, kv, cfg,
                          err))
        goto fail;

    csm_value ov[CSM_MAX_PARAMS] = {{0}};
    if (csm_section_fixed(csm_section_node(root, "output", CSM_NODE_MAP), "output", csm_output_params, NULL, ov, cfg, err)) {
        free(ov[0].str);
        goto fail;
    }
    if (!ov[0].str[0]) {
        char p[4096];
        snprintf(p, sizeof p, "out/%s.h5", cfg->name);
        cfg->output_path = csm_dupstr(p, strlen(p));
        csm_node *pn = csm_node_get(csm_node_get(root, "output"), "path");
        free(pn->text);
        pn->text = csm_dupstr(p, strlen(p));
    } else {
        cfg->output_path = csm_dupstr(ov[0].str, strlen(ov[0].str));
    }
    free(ov[0].str);

    cfg->resolved = csm_yaml_emit(cfg->root);
    return 0;
fail:
    csm_config_free(cfg);
    return -1;
}
