#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void csm_rng_seed(csm_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    for (int k = 0; k < 4; k++) r->s[k] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t csm_rng_next(csm_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double csm_rng_uniform(csm_rng *r) { return (double)(csm_rng_next(r) >> 11) * 0x1.0p-53; }

uint32_t csm_rng_below(csm_rng *r, uint32_t n)
{
    /* Lemire's multiply-shift; the tiny bias is irrelevant for sampling choices. */
    return (uint32_t)(((csm_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}
