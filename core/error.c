#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int csm_fail(csm_error *err, int code, const char *fmt, ...)
{
    if (!err) return -1;
    char whole[16384], raw[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(whole, sizeof whole, fmt, ap);
    va_end(ap);
    /* Too long for the message (a path of thousands of bytes): its head and its tail, joined by
       " ... ", so the reason, which comes last, is kept. */
    size_t n = len < 0 ? 0 : (size_t)len < sizeof whole ? (size_t)len : sizeof whole - 1;
    if (n < sizeof raw) {
        memcpy(raw, whole, n + 1);
    } else {
        size_t head = sizeof raw / 4, tail = sizeof raw - head - 6;
        snprintf(raw, sizeof raw, "%.*s ... %s", (int)head, whole, whole + n - tail);
    }
    /* One line, whatever a quoted value holds: control characters are written as escapes. */
    size_t o = 0, cap = sizeof err->msg;
    for (const unsigned char *s = (const unsigned char *)raw; *s && o + 1 < cap; s++) {
        char esc[8];
        int len = 0;
        if (*s == '\n') len = snprintf(esc, sizeof esc, "\\n");
        else if (*s == '\t') len = snprintf(esc, sizeof esc, "\\t");
        else if (*s < 0x20 || *s == 0x7f) len = snprintf(esc, sizeof esc, "\\x%02x", *s);
        if (len == 0) {
            err->msg[o++] = (char)*s;
        } else {
            if (o + (size_t)len + 1 > cap) break;
            for (int k = 0; k < len; k++) err->msg[o++] = esc[k];
        }
    }
    err->msg[o] = '\0';
    err->code = code;
    return -1;
}

void csm_out_of_memory(const char *where)
{
    fprintf(stderr, "csm: out of memory in %s: free memory, or ask for fewer particles, clusters or frames\n", where);
    fflush(NULL);
    exit(CSM_EXIT_FAILURE);
}
