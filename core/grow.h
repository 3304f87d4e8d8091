/* Growable arrays: one growth rule for every buffer that is sized at set-up or on reclustering. */
#ifndef CSM_GROW_H
#define CSM_GROW_H

#include <stddef.h>
#include <stdint.h>

/* Room for `want` elements of `size` bytes in *buf, which holds *cap: grows to want or by half
   again, whichever is more (at least 16), keeping the contents. Returns -1 when out of memory
   (*buf and *cap unchanged). */
int csm_grow(void **buf, int64_t *cap, int64_t want, size_t size);

#endif
