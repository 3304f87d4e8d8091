#include "grow.h"

#include <stdlib.h>

int csm_grow(void **buf, int64_t *cap, int64_t want, size_t size)
{
    if (want <= *cap) return 0;
    int64_t c = *cap + *cap / 2;
    if (c < want) c = want;
    if (c < 16) c = 16;
    void *q = realloc(*buf, (size_t)c * size);
    if (!q) return -1;
    *buf = q;
    *cap = c;
    return 0;
}
