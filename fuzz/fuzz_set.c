/* libFuzzer target: the --set parser. Each line of the input is one override (key.path=value)
   applied to a small valid config, as `csm run --set` would: the config either loads, and its
   resolved text loads again to the same text, or fails with a one-line message and exit code 2. */
#include "commands.h"
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base[] = "name: fuzz_set\n"
                           "time: {frames: 1}\n"
                           "objects:\n"
                           "  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n"
                           "    sampling: {spacing: 0.1}\n"
                           "solver: {integrator: strain_limited, alpha: 0.5}\n";

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
    /* plugin libraries to load are not something to fuzz */
    if (strstr(text, "plugins")) {
        free(text);
        return 0;
    }
    const char *sets[16];
    int nsets = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && nsets < 16; line = strtok_r(NULL, "\n", &save))
        sets[nsets++] = line;
    csm_config cfg;
    csm_error err = {{0}, 0};
    if (csm_config_load_text("fuzz.yaml", base, sets, nsets, &cfg, &err) == 0) {
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
