/* libFuzzer target: the --set parser. Each line of the input is one override (key.path=value)
   applied to a small valid config, as `csm run --set` would: the config either loads, and its
   resolved text loads again to the same text, or fails with a one-line message and exit code 2. */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base[] = "name: fuzz_set\n"
                           "time: {frames: 1}\n"
                           "objects:\n"
                           "  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n"
                           "    sampling: {spacing: 0.1}\n"
                           "solver: {integrator: strain_limited, alpha: 0.5}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    const char *sets[16];
    int nsets = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && nsets < 16; line = strtok_r(NULL, "\n", &save))
        sets[nsets++] = line;
    csm_config cfg;
    csm_error err = {{0}, 0};
    if (csm_config_load_text("fuzz.yaml", base, sets, nsets, &cfg, &err) == 0) fuzz_round_trip(&cfg);
    else fuzz_refused(&err);
    free(text);
    return 0;
}
