/* Input files read whole, bounded: a config or a mesh must be a regular file of at most a given
   size, so /dev/zero, a FIFO or a folder is refused with one line instead of read until memory
   runs out or waited on forever. */
#ifndef CSM_FILES_H
#define CSM_FILES_H

#include <stddef.h>

#include "error.h"

/* The largest config and mesh files read (bytes). */
#define CSM_CONFIG_MAX_BYTES ((size_t)16 << 20)
#define CSM_MESH_MAX_BYTES ((size_t)1 << 30)

/* Read the regular file `path` whole into *text (NUL-terminated, the caller frees) and its size
   into *len. `what` names the file in messages ("config", "mesh"). Fails with CSM_EXIT_BAD_INPUT
   on a missing, unreadable or non-regular file or one over `limit` bytes. */
int csm_read_file(const char *path, const char *what, size_t limit, char **text, size_t *len, csm_error *err);

/* Where a file a config names is: an absolute path as it is; a relative one tried from the
   current folder, then from the folder of `src` (the config, or "--set": none) and each folder
   above it, so that a config in experiments/configs/ finds data/meshes/ from anywhere. Writes
   the path found (or `path` itself) to out; returns 0 when found, -1 when not, and errno where a
   candidate is there but cannot be reached (a loop of symbolic links, a folder without access:
   out names it). */
int csm_find_beside(const char *path, const char *src, char *out, size_t size);

/* mkdir -p: dir and every missing folder above it. */
int csm_make_dirs(const char *dir, csm_error *err);
/* The folder holding a file `path`, created when missing. */
int csm_make_parent(const char *path, csm_error *err);

#endif
