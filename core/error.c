#include "error.h"

#include <stdio.h>

int csm_fail(csm_error *err, int code, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return -1;
}
