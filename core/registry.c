/* The plugin registry: one table per kind, filled by typed registration that checks each
   plugin's version and parameter table before it is used. */
#include "plugin.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const csm_plugin_head *registry[CSM_KIND_COUNT][CSM_MAX_PLUGINS];
static int registry_count[CSM_KIND_COUNT];

static const char *kind_names[CSM_KIND_COUNT] = {
    "integrator", "rotation", "clustering", "plasticity", "reclusterer", "force", "collider",
};

static const int kind_versions[CSM_KIND_COUNT] = {
    CSM_INTEGRATOR_VERSION, CSM_ROTATION_VERSION, CSM_CLUSTERING_VERSION, CSM_PLASTICITY_VERSION,
    CSM_RECLUSTERER_VERSION, CSM_FORCE_VERSION, CSM_COLLIDER_VERSION,
};

const char *csm_kind_name(csm_kind kind) { return kind_names[kind]; }

/* The size a parameter struct field of each type has. */
static size_t field_size(csm_type t, size_t given)
{
    switch (t) {
    case CSM_REAL: return sizeof(double);
    case CSM_INT: return given == sizeof(int64_t) ? given : sizeof(int32_t);
    case CSM_BOOL:
    case CSM_ENUM: return sizeof(int);
    case CSM_VEC3: return 3 * sizeof(double);
    case CSM_MAT3: return 9 * sizeof(double);
    case CSM_STRING: return sizeof(const char *);
    case CSM_POINTS: return sizeof(csm_points);
    case CSM_KEYFRAMES: return sizeof(csm_keyframes);
    }
    return 0;
}

static int refuse(const char *kind, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(const char *kind, const char *name, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "csm: %s plugin '%s' refused: %s\n", kind, name ? name : "(no name)", msg);
    return -1;
}

/* A parameter table the loader can fill: at most CSM_MAX_PARAMS rows, each bound field of the
   size its type needs and inside CSM_PARAMS_BYTES. */
int csm_params_check(const char *what, const char *name, const csm_param_spec *spec)
{
    int n = 0;
    for (; spec && spec[n].key; n++) {
        const csm_param_spec *s = &spec[n];
        if (n == CSM_MAX_PARAMS) return refuse(what, name, "more than %d parameters", CSM_MAX_PARAMS);
        if (s->size == 0) continue;
        if (s->size != field_size(s->type, s->size))
            return refuse(what, name, "parameter %s: its field has %zu bytes, its type needs %zu", s->key, s->size,
                          field_size(s->type, s->size));
        if (s->offset + s->size > CSM_PARAMS_BYTES)
            return refuse(what, name, "parameter %s: its struct is larger than %d bytes", s->key, CSM_PARAMS_BYTES);
    }
    return 0;
}

static int add(csm_kind kind, const csm_plugin_head *head)
{
    const char *kn = kind_names[kind];
    if (!head || !head->name || !head->name[0]) return refuse(kn, NULL, "it has no name");
    if (head->version < 1 || head->version > kind_versions[kind])
        return refuse(kn, head->name, "version %d; this csm reads %s plugins of version 1 to %d", head->version, kn,
                      kind_versions[kind]);
    if (csm_params_check(kn, head->name, head->params)) return -1;
    for (int k = 0; k < registry_count[kind]; k++)
        if (strcmp(registry[kind][k]->name, head->name) == 0) {
            registry[kind][k] = head; /* a later registration replaces an earlier one */
            return 0;
        }
    if (registry_count[kind] == CSM_MAX_PLUGINS) return refuse(kn, head->name, "%d are registered already", CSM_MAX_PLUGINS);
    registry[kind][registry_count[kind]++] = head;
    return 0;
}

/* Each kind's struct starts with the common head (CSM_PLUGIN_HEAD). */
int csm_register_integrator(const csm_integrator *p) { return add(CSM_KIND_INTEGRATOR, (const csm_plugin_head *)p); }
int csm_register_rotation(const csm_rotation *p) { return add(CSM_KIND_ROTATION, (const csm_plugin_head *)p); }
int csm_register_clustering(const csm_clustering *p) { return add(CSM_KIND_CLUSTERING, (const csm_plugin_head *)p); }
int csm_register_plasticity(const csm_plasticity *p) { return add(CSM_KIND_PLASTICITY, (const csm_plugin_head *)p); }
int csm_register_reclusterer(const csm_reclusterer *p) { return add(CSM_KIND_RECLUSTERER, (const csm_plugin_head *)p); }
int csm_register_force(const csm_force *p) { return add(CSM_KIND_FORCE, (const csm_plugin_head *)p); }
int csm_register_collider(const csm_collider *p) { return add(CSM_KIND_COLLIDER, (const csm_plugin_head *)p); }

const void *csm_registry_find(csm_kind kind, const char *name)
{
    for (int k = 0; k < registry_count[kind]; k++)
        if (strcmp(registry[kind][k]->name, name) == 0) return registry[kind][k];
    return NULL;
}

int csm_registry_count(csm_kind kind) { return registry_count[kind]; }

const csm_plugin_head *csm_registry_at(csm_kind kind, int index) { return registry[kind][index]; }

void csm_registry_names(csm_kind kind, char *buf, int size)
{
    int used = 0;
    buf[0] = '\0';
    for (int k = 0; k < registry_count[kind] && used < size; k++)
        used += snprintf(buf + used, (size_t)(size - used), "%s%s", k ? ", " : "",
                         registry[kind][k]->name);
}

int csm_registry_load(const char *path, csm_error *err)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return csm_fail(err, CSM_EXIT_BAD_INPUT, "cannot load plugin %s: %s", path, dlerror());
    int (*reg)(const csm_registrar *);
    *(void **)&reg = dlsym(lib, "csm_plugin_register");
    int *abi = dlsym(lib, "csm_plugin_abi");
    if (!reg) {
        dlclose(lib);
        return csm_fail(err, CSM_EXIT_BAD_INPUT,
                        "plugin %s exports no csm_plugin_register function", path);
    }
    /* the host checks the number the library was built against (CSM_PLUGIN_ABI of its header) */
    if (!abi || *abi != CSM_PLUGIN_ABI) {
        int got = abi ? *abi : -1;
        dlclose(lib);
        if (got < 0)
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "plugin %s exports no csm_plugin_abi (define it with CSM_PLUGIN_EXPORT_ABI)",
                            path);
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "plugin %s was built for plugin ABI %d; this csm has ABI %d: rebuild it",
                        path, got, CSM_PLUGIN_ABI);
    }
    csm_registrar r = {CSM_PLUGIN_ABI,         csm_register_integrator, csm_register_rotation,
                       csm_register_clustering, csm_register_plasticity, csm_register_reclusterer,
                       csm_register_force,      csm_register_collider};
    int rc = reg(&r);
    if (rc != 0) {
        dlclose(lib);
        return csm_fail(err, CSM_EXIT_BAD_INPUT,
                        "plugin %s refused to register (it returned %d; host ABI is %d)", path, rc,
                        CSM_PLUGIN_ABI);
    }
    return 0; /* the library stays loaded for the life of the process */
}

void csm_params_fill(const csm_param_spec *spec, const csm_value *values, void *out)
{
    unsigned char *base = out;
    for (int k = 0; spec && spec[k].key; k++) {
        const csm_param_spec *s = &spec[k];
        const csm_value *v = &values[k];
        void *f = base + s->offset;
        if (s->size == 0) continue;
        switch (s->type) {
        case CSM_REAL: memcpy(f, &v->num, sizeof(double)); break;
        case CSM_INT:
            if (s->size == sizeof(int64_t)) {
                int64_t i = (int64_t)v->num;
                memcpy(f, &i, sizeof i);
            } else {
                int32_t i = (int32_t)v->num;
                memcpy(f, &i, sizeof i);
            }
            break;
        case CSM_BOOL:
        case CSM_ENUM: {
            int i = (int)v->num;
            memcpy(f, &i, sizeof i);
            break;
        }
        case CSM_VEC3: memcpy(f, v->vec, 3 * sizeof(double)); break;
        case CSM_MAT3: memcpy(f, v->vec, 9 * sizeof(double)); break;
        case CSM_STRING: {
            const char *str = v->str ? v->str : "";
            memcpy(f, &str, sizeof str);
            break;
        }
        case CSM_POINTS: {
            csm_points p = {v->points, v->npoints};
            memcpy(f, &p, sizeof p);
            break;
        }
        case CSM_KEYFRAMES: {
            csm_keyframes kf = {v->points, v->npoints};
            memcpy(f, &kf, sizeof kf);
            break;
        }
        }
    }
}

const csm_value *csm_cfg_value(const csm_plugin_cfg *pc, const char *key)
{
    for (int k = 0; pc->plugin && pc->plugin->params && pc->plugin->params[k].key; k++)
        if (strcmp(pc->plugin->params[k].key, key) == 0) return &pc->values[k];
    return NULL;
}

const csm_value *csm_cfg_field(const csm_plugin_cfg *pc, size_t offset)
{
    for (int k = 0; pc->plugin && pc->plugin->params && pc->plugin->params[k].key; k++)
        if (pc->plugin->params[k].offset == offset && pc->plugin->params[k].size > 0) return &pc->values[k];
    return NULL;
}

void csm_integrator_describe(const csm_plugin_cfg *pc, csm_integrator_traits *out)
{
    memset(out, 0, sizeof *out);
    const csm_integrator *in = (const csm_integrator *)pc->plugin;
    if (in && in->version >= 4 && in->describe) in->describe(csm_cfg_params(pc), out);
}

int csm_plasticity_lagged(const csm_plugin_cfg *pc)
{
    const csm_plasticity *p = (const csm_plasticity *)pc->plugin;
    return p && p->version >= 3 && p->lagged ? p->lagged(csm_cfg_params(pc)) : 0;
}

const char *csm_cfg_where(const char *src, int line, char *buf, int size)
{
    if (src && strcmp(src, "--set") == 0) snprintf(buf, (size_t)size, "--set #%d", line);
    else snprintf(buf, (size_t)size, "%s:%d", src ? src : "(config)", line);
    return buf;
}

int csm_cfg_fail(const csm_plugin_cfg *pc, csm_error *err, const char *fmt, ...)
{
    char msg[768], at[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %s: %s", csm_cfg_where(pc->src, pc->line, at, sizeof at),
                    pc->plugin ? pc->plugin->name : "?", msg);
}
