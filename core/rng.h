/* Deterministic random numbers: xoshiro256** seeded through splitmix64. Every random choice in a
   run derives from the config's seed through one of these, so two runs with one seed agree bit
   for bit. */
#ifndef CSM_RNG_H
#define CSM_RNG_H

#include <stdint.h>

typedef struct csm_rng {
    uint64_t s[4];
} csm_rng;

/* Seed a generator; `stream` separates independent uses of one seed (objects, clustering, ...). */
void csm_rng_seed(csm_rng *r, uint64_t seed, uint64_t stream);
uint64_t csm_rng_next(csm_rng *r);
/* Uniform in [0, 1). */
double csm_rng_uniform(csm_rng *r);
/* Uniform integer in [0, n). */
uint32_t csm_rng_below(csm_rng *r, uint32_t n);

#endif
