/* csm list: every plugin and section with its parameters, generated from the parameter tables. */
#include "commands.h"

#include "config.h"
#include "plugin.h"

#include <stdio.h>

static const char *type_text(const csm_param_spec *s)
{
    switch (s->type) {
    case CSM_REAL: return "real";
    case CSM_INT: return "int";
    case CSM_BOOL: return "bool";
    case CSM_ENUM: return s->choices;
    case CSM_VEC3: return "vec3";
    case CSM_MAT3: return "3x3";
    case CSM_STRING: return "string";
    case CSM_POINTS: return "points";
    }
    return "?";
}

static void print_head(const char *prefix, const csm_plugin_head *h)
{
    printf("  %s%s — %s\n", prefix, h->name, h->summary);
    for (int k = 0; h->params && h->params[k].key; k++) {
        const csm_param_spec *s = &h->params[k];
        char def[128], range[96] = "";
        csm_param_default_text(s, def, sizeof def);
        if (s->type == CSM_REAL || s->type == CSM_INT) snprintf(range, sizeof range, " in [%g, %g]", s->min, s->max);
        printf("      %-18s %-20s default %s%s%s\n", s->key, type_text(s), (s->flags & CSM_PARAM_REQUIRED) ? "(required)" : def,
               range, "");
        printf("      %-18s %s\n", "", s->doc);
    }
}

int csm_cmd_list(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    static const char *const section_of[CSM_KIND_COUNT] = {
        "solver.integrator", "solver.rotation", "clustering.method", "plasticity.model",
        "recluster.method", "forces[].type", "colliders[].type",
    };
    for (int kind = 0; kind < CSM_KIND_COUNT; kind++) {
        printf("%s (%s):\n", csm_kind_name((csm_kind)kind), section_of[kind]);
        for (int k = 0; k < csm_registry_count((csm_kind)kind); k++) print_head("", csm_registry_at((csm_kind)kind, k));
        if (kind == CSM_KIND_ROTATION) {
            const csm_plugin_head common = {1, "(solver)", "keys of the solver section beside the integrator's",
                                            csm_solver_common_params};
            print_head("", &common);
        }
        printf("\n");
    }
    int n;
    const csm_plugin_head *h = csm_config_shape_kinds(&n);
    printf("shape (objects[].shape.type):\n");
    for (int k = 0; k < n; k++) print_head("", &h[k]);
    h = csm_config_sampling_kinds(&n);
    printf("\nsampling (objects[].sampling.type):\n");
    for (int k = 0; k < n; k++) print_head("", &h[k]);
    h = csm_config_sections(&n);
    printf("\nsections:\n");
    for (int k = 0; k < n; k++) print_head("", &h[k]);
    return 0;
}
