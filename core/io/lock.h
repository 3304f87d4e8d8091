/* One writer per log, one sweep per folder: an advisory lock (flock) on a small file beside what
   is written, held for the writer's life. The kernel drops it when the process ends, however it
   ends, so a crash leaves no stale lock, only the small file, which the next writer reuses. */
#ifndef CSM_LOCK_H
#define CSM_LOCK_H

#include "error.h"

/* Take the lock file `path` (created if missing), writing our pid into it. Returns its file
   descriptor, or -1 with a one-line message (exit 2) naming `subject`, what it guards ("log",
   "sweep folder"), and the process that holds it. */
int csm_lock_take(const char *path, const char *subject, const char *what, csm_error *err);
/* The same lock shared: any number of shared holders, but no exclusive one beside them. The pid
   is not written. */
int csm_lock_share(const char *path, const char *subject, const char *what, csm_error *err);
/* Drop a lock taken by csm_lock_take and remove its file; with path NULL (a shared lock, which
   others may still hold) the file stays. */
void csm_lock_drop(int fd, const char *path);

#endif
