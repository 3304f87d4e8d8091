/* What the config fuzz targets share: the input as text, and the two outcomes a config may have. */
#ifndef CSM_FUZZ_INPUT_H
#define CSM_FUZZ_INPUT_H

#include "commands.h"
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated text, the built-in plugins registered; NULL when it names plugin
   libraries to load (not something to fuzz) or memory runs out. The caller frees it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    static int registered;
    if (!registered) {
        csm_register_builtins();
        registered = 1;
    }
    char *text = malloc(size + 1);
    if (!text) return NULL;
    memcpy(text, data, size);
    text[size] = '\0';
    if (strstr(text, "plugins")) {
        free(text);
        return NULL;
    }
    return text;
}

/* A refused config is refused as bad input, in one line. */
static inline void fuzz_refused(const csm_error *err)
{
    if (err->code != CSM_EXIT_BAD_INPUT || strchr(err->msg, '\n') || !err->msg[0]) abort();
}

/* A config that loads resolves again to the same text; frees it. */
static inline void fuzz_round_trip(csm_config *cfg)
{
    csm_config again;
    csm_error err = {{0}, 0};
    if (csm_config_load_text("fuzz.yaml", cfg->resolved, NULL, 0, &again, &err) != 0) abort();
    if (strcmp(again.resolved, cfg->resolved) != 0) abort();
    csm_config_free(&again);
    csm_config_free(cfg);
}

#endif
