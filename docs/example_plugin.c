/* A plugin built apart from csm and loaded at run time: the `anchor` force, a spring of
   stiffness k from an object's centre of mass to a fixed point. It shows the whole plugin API:
   a parameter struct filled from its table (no key is read by name), a typed registration, a
   dataset of its own in the log, and a timing of its own.

   Build it against the headers in core/ and load it with a config's `plugins:` list:

       cc -shared -fPIC -I core -o anchor.so docs/example_plugin.c
       plugins: [anchor.so]
       forces: [{type: anchor, k: 4, point: [0, 1, 0]}]

   Every particle of the object gets the same acceleration a = -k (c - point), c the object's
   centre of mass, so the spring acts on c alone: the object's momentum changes by the force's
   impulse, its shape feels nothing, and the potential energy is M k |c - point|^2 / 2. The tests
   build this file and run it (tests/test_plugin.sh). */
#include "plugin.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>

CSM_PLUGIN_EXPORT_ABI;

/* The parameters: each table row names its field; the loader fills the struct. */
typedef struct anchor_params {
    double k, point[3];
    int32_t object;
} anchor_params;

static const csm_param_spec anchor_table[] = {
    CSM_P_REAL(anchor_params, k, 1, 0, 1e9, "stiffness per unit mass (1/s^2)"),
    CSM_P_VEC3(anchor_params, point, 0, 0, 0, -1e9, 1e9, "where the spring is fixed (m)"),
    CSM_P_INT(anchor_params, object, 0, 0, 1e6, "the object it pulls"),
    CSM_PARAM_END,
};

typedef struct anchor {
    anchor_params p;
    double stretch[3]; /* c - point at the last step: what the log records */
    int timing;        /* the index of its own timing in the report */
} anchor;

static int anchor_create(const csm_plugin_cfg *cfg, const csm_world *w, void **state, csm_error *err)
{
    const anchor_params *p = csm_cfg_params(cfg);
    if (p->object >= w->nobjects)
        return csm_cfg_fail(cfg, err, "object = %d, but the config has %d object(s)", p->object, w->nobjects);
    anchor *s = calloc(1, sizeof *s);
    if (!s) return csm_fail(err, CSM_EXIT_FAILURE, "out of memory");
    s->p = *p;
    s->timing = csm_report_timing(w->report, "anchor", "the anchor force per frame");
    *state = s;
    return 0;
}

static void centre(const csm_world *w, int32_t object, double c[3], double *mass)
{
    const csm_particles *P = &w->P;
    double M = 0, s[3] = {0, 0, 0};
    for (int32_t i = w->object_first[object]; i < w->object_first[object + 1]; i++) {
        M += P->mass[i];
        for (int d = 0; d < 3; d++) s[d] += P->mass[i] * P->x[3 * i + d];
    }
    for (int d = 0; d < 3; d++) c[d] = M > 0 ? s[d] / M : 0;
    *mass = M;
}

static int anchor_apply(csm_world *w, void *state, double h, csm_error *err)
{
    (void)h;
    (void)err;
    anchor *s = state;
    double t0 = csm_now(), c[3], M;
    centre(w, s->p.object, c, &M);
    for (int d = 0; d < 3; d++) s->stretch[d] = c[d] - s->p.point[d];
    csm_particles *P = &w->P;
    for (int32_t i = w->object_first[s->p.object]; i < w->object_first[s->p.object + 1]; i++)
        for (int d = 0; d < 3; d++) P->force[3 * i + d] -= P->mass[i] * s->p.k * s->stretch[d];
    if (s->timing >= 0) w->report->timings.seconds[s->timing] += csm_now() - t0;
    return 0;
}

static double anchor_potential(const csm_world *w, const void *state)
{
    const anchor *s = state;
    double c[3], M;
    centre(w, s->p.object, c, &M);
    double r2 = 0;
    for (int d = 0; d < 3; d++) r2 += (c[d] - s->p.point[d]) * (c[d] - s->p.point[d]);
    return 0.5 * M * s->p.k * r2;
}

/* Its dataset: one row of three values per logged frame. */
static void get_stretch(const csm_world *w, const void *state, void *out)
{
    (void)w;
    memcpy(out, ((const anchor *)state)->stretch, sizeof(double) * 3);
}

static const csm_log_field anchor_fields[] = {
    {"anchor/stretch", CSM_FIELD_F64, CSM_ROWS_FRAME, 3, "m",
     "the object's centre of mass minus the anchor point at the frame's last step", get_stretch},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

static const csm_force anchor_force = {
    .version = 1,
    .name = "anchor",
    .summary = "a spring from an object's centre of mass to a fixed point (docs/example_plugin.c)",
    .params = anchor_table,
    .create = anchor_create,
    .apply = anchor_apply,
    .destroy = free,
    .potential = anchor_potential,
    .fields = anchor_fields,
};

int csm_plugin_register(const csm_registrar *r)
{
    return r->force(&anchor_force);
}
