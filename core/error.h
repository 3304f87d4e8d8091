/* Errors: every call that can fail fills a csm_error with a one-line message a person can act on
   ("drop.yaml:14: solver.alpha = 1.7 is outside [0, 1]") and returns non-zero. */
#ifndef CSM_ERROR_H
#define CSM_ERROR_H

#include <stdarg.h>

typedef struct csm_error {
    char msg[1024];
    int code; /* process exit status to use: 2 bad input, 1 run-time failure */
} csm_error;

enum { CSM_EXIT_FAILURE = 1, CSM_EXIT_BAD_INPUT = 2 };

/* Fill err (if not NULL) with a formatted message and code; returns -1 for `return csm_fail(...)`.
   The message is kept to one line: a newline or other control character in it is escaped. */
int csm_fail(csm_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Out of memory where the caller has no error to return: one line on stderr, "csm: out of memory
   in WHERE", and exit status 1. exit, not abort: the HDF5 library's exit handler gets to close
   the open logs (a log left marked open is recovered as after a kill). Use CSM_OUT_OF_MEMORY(). */
_Noreturn void csm_out_of_memory(const char *where);
#define CSM_OUT_OF_MEMORY() csm_out_of_memory(__func__)

#endif
