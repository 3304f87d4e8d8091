/* libFuzzer target: the config loader (YAML parsing, validation against every plugin's
   parameter table, sweeps, the resolved text) on arbitrary bytes. A config either loads, and its
   resolved text loads again to the same text, or fails with a one-line message and exit code 2. */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    csm_config cfg;
    csm_error err = {{0}, 0};
    if (csm_config_load_text("fuzz.yaml", text, NULL, 0, &cfg, &err) == 0) fuzz_round_trip(&cfg);
    else fuzz_refused(&err);
    free(text);
    return 0;
}
