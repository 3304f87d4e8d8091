/* Shared test helper: a config (a file, or text) loaded with --set style overrides and its
   simulation built; a failure fails the test with the one-line message. */
#ifndef CSM_TEST_SIM_RUN_H
#define CSM_TEST_SIM_RUN_H

#include "check.h"

#include "commands.h"
#include "config.h"
#include "sim.h"

typedef struct run {
    csm_config cfg;
    csm_sim sim;
} run;

static inline void run_start(run *r, const char *path, const char *const *sets, int nsets)
{
    csm_register_builtins();
    csm_error err;
    if (csm_config_load(path, sets, nsets, &r->cfg, &err)) fail_msg("%s", err.msg);
    if (csm_sim_create(&r->cfg, &r->sim, &err)) fail_msg("%s", err.msg);
}

/* The same for a config held in memory; `name` stands for its file name in messages. */
static inline void run_start_text(run *r, const char *name, const char *text, const char *const *sets, int nsets)
{
    csm_register_builtins();
    csm_error err;
    if (csm_config_load_text(name, text, sets, nsets, &r->cfg, &err)) fail_msg("%s", err.msg);
    if (csm_sim_create(&r->cfg, &r->sim, &err)) fail_msg("%s", err.msg);
}

static inline void run_frame(run *r)
{
    csm_error err;
    if (csm_sim_frame(&r->sim, &err)) fail_msg("%s", err.msg);
}

static inline void run_stop(run *r)
{
    csm_sim_destroy(&r->sim);
    csm_config_free(&r->cfg);
}

#endif
