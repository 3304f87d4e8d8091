/* libFuzzer target: the sweep expansion. The input is a config with a `sweep:` mapping; every
   run of its product (the first 64) is resolved as `csm sweep` resolves it, the base config with
   one `key=value` override per swept key, each value written back as YAML flow text. A run either
   loads or fails with a one-line message and exit code 2; a sweep that loads never holds an
   empty list of values. */
#include "fuzz_input.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    csm_config base;
    csm_error err = {{0}, 0};
    if (csm_config_load_text("fuzz.yaml", text, NULL, 0, &base, &err) != 0) {
        fuzz_refused(&err);
        free(text);
        return 0;
    }
    long total = 1;
    for (int k = 0; k < base.nsweep; k++) {
        if (base.sweep[k].nvalues < 1) abort();
        total *= base.sweep[k].nvalues;
        if (total > 64) total = 64;
    }
    char **sets = calloc((size_t)base.nsweep + 2, sizeof *sets);
    if (!sets) abort();
    for (long i = 0; i < total && base.nsweep > 0; i++) {
        long rem = i;
        for (int k = base.nsweep - 1; k >= 0; k--) {
            const csm_sweep_axis *ax = &base.sweep[k];
            const char *value = ax->values[rem % ax->nvalues];
            rem /= ax->nvalues;
            size_t len = strlen(ax->key) + strlen(value) + 2;
            sets[k] = malloc(len);
            if (!sets[k]) abort();
            snprintf(sets[k], len, "%s=%s", ax->key, value);
        }
        csm_config run;
        csm_error e = {{0}, 0};
        if (csm_config_load_text("fuzz.yaml", text, (const char *const *)sets, base.nsweep, &run, &e) == 0)
            csm_config_free(&run);
        else
            fuzz_refused(&e);
        for (int k = 0; k < base.nsweep; k++) free(sets[k]);
    }
    free(sets);
    csm_config_free(&base);
    free(text);
    return 0;
}
