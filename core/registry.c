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

const char *csm_kind_name(csm_kind kind) { return kind_names[kind]; }

int csm_registry_add(csm_kind kind, const void *plugin)
{
    const csm_plugin_head *head = plugin;
    if (kind < 0 || kind >= CSM_KIND_COUNT || !head || !head->name) return -1;
    for (int k = 0; k < registry_count[kind]; k++)
        if (strcmp(registry[kind][k]->name, head->name) == 0) {
            registry[kind][k] = head; /* a later registration replaces an earlier one */
            return 0;
        }
    if (registry_count[kind] == CSM_MAX_PLUGINS) return -1;
    registry[kind][registry_count[kind]++] = head;
    return 0;
}

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
    if (!reg) {
        dlclose(lib);
        return csm_fail(err, CSM_EXIT_BAD_INPUT,
                        "plugin %s exports no csm_plugin_register function", path);
    }
    csm_registrar r = {CSM_PLUGIN_ABI, csm_registry_add};
    int rc = reg(&r);
    if (rc != 0) {
        dlclose(lib);
        return csm_fail(err, CSM_EXIT_BAD_INPUT,
                        "plugin %s refused to register (it returned %d; host ABI is %d)", path, rc,
                        CSM_PLUGIN_ABI);
    }
    return 0; /* the library stays loaded for the life of the process */
}

static int find_param(const csm_plugin_cfg *pc, const char *key)
{
    for (int k = 0; pc->plugin->params && pc->plugin->params[k].key; k++)
        if (strcmp(pc->plugin->params[k].key, key) == 0) return k;
    return -1;
}

double csm_cfg_num(const csm_plugin_cfg *pc, const char *key)
{
    int k = find_param(pc, key);
    return k < 0 ? 0.0 : pc->values[k].num;
}

const double *csm_cfg_vec(const csm_plugin_cfg *pc, const char *key)
{
    int k = find_param(pc, key);
    return k < 0 ? NULL : pc->values[k].vec;
}

const char *csm_cfg_str(const csm_plugin_cfg *pc, const char *key)
{
    int k = find_param(pc, key);
    return k < 0 ? NULL : pc->values[k].str;
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
