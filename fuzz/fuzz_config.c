/* libFuzzer target: the config loader (YAML parsing, validation against every plugin's
   parameter table, sweeps, the resolved text) on arbitrary bytes. A config either loads, and its
   resolved text loads again to the same text, or fails with a one-line message and exit code 2. */
#include "commands.h"
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int registered;
    if (!registered) {
        csm_register_builtins();
        registered = 1;
    }
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    /* a config may name plugin libraries to load: not something to fuzz */
    if (strstr(text, "plugins")) {
        free(text);
        return 0;
    }
    csm_config cfg;
    csm_error err = {{0}, 0};
    if (csm_config_load_text("fuzz.yaml", text, NULL, 0, &cfg, &err) == 0) {
        csm_config again;
        if (csm_config_load_text("fuzz.yaml", cfg.resolved, NULL, 0, &again, &err) != 0) abort();
        if (strcmp(again.resolved, cfg.resolved) != 0) abort();
        csm_config_free(&again);
        csm_config_free(&cfg);
    } else if (err.code != CSM_EXIT_BAD_INPUT || strchr(err.msg, '\n') || !err.msg[0]) {
        abort();
    }
    free(text);
    return 0;
}
