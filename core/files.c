#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int csm_read_file(const char *path, const char *what, size_t limit, char **text, size_t *len, csm_error *err)
{
    *text = NULL;
    *len = 0;
    struct stat st;
    /* stat first: opening a FIFO would wait for a writer */
    if (stat(path, &st) != 0)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot open the %s: %s", path, what, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: is %s, not a %s file", path,
                        S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a pipe" : "a device or socket", what);
    if ((size_t)st.st_size > limit)
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: %lld bytes, more than a %s may have (%zu MiB)", path,
                        (long long)st.st_size, what, limit >> 20);
    FILE *f = fopen(path, "rb");
    if (!f) return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot open the %s: %s", path, what, strerror(errno));
    /* read one byte past the limit, so a file that grew since stat is caught too */
    size_t cap = (size_t)st.st_size + 1 < limit + 1 ? (size_t)st.st_size + 1 : limit + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return csm_fail(err, CSM_EXIT_FAILURE, "%s: out of memory for the %s", path, what);
    }
    for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n < cap) continue;
        if (n > limit) break;
        char *grown = realloc(buf, 2 * cap + 1); /* it grew since stat; still bounded by the limit */
        if (!grown) break;
        buf = grown;
        cap = 2 * cap < limit + 1 ? 2 * cap : limit + 1;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad || n > limit) {
        free(buf);
        return bad ? csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot read the %s", path, what)
                   : csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: more than a %s may have (%zu MiB)", path, what, limit >> 20);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

int csm_find_beside(const char *path, const char *src, char *out, size_t size)
{
    snprintf(out, size, "%s", path);
    if (access(out, F_OK) == 0) return 0;
    if (errno != ENOENT && errno != ENOTDIR) return errno;
    if (path[0] == '/') return 0;
    char dir[4096];
    const char *slash = src ? strrchr(src, '/') : NULL;
    if (src && strcmp(src, "--set") != 0 && slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - src), src);
    else snprintf(dir, sizeof dir, ".");
    for (int up = 0; up < 16; up++) {
        int len = snprintf(out, size, "%s/%s", dir, path);
        if (len > 0 && (size_t)len < size && access(out, F_OK) == 0) return 0;
        if (len > 0 && (size_t)len < size && errno != ENOENT && errno != ENOTDIR) return errno;
        size_t dlen = strlen(dir);
        if (dlen + 4 > sizeof dir) break;
        memcpy(dir + dlen, "/..", 4);
    }
    snprintf(out, size, "%s", path);
    return -1;
}

int csm_make_dirs(const char *dir, csm_error *err)
{
    char buf[4096];
    if (strlen(dir) >= sizeof buf) /* refused before any folder is made */
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%.200s...: the path is %zu bytes long, more than %zu", dir,
                        strlen(dir), sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot create folder %s: %s", dir, buf, strerror(errno));
        *p = c;
        if (!c) break;
    }
    return 0;
}

/* The folder holding a file `path`, created when missing. */
int csm_make_parent(const char *path, csm_error *err)
{
    char buf[4096];
    if (strlen(path) >= sizeof buf) /* refused before any folder is made */
        return csm_fail(err, CSM_EXIT_BAD_INPUT, "%.200s...: the path is %zu bytes long, more than %zu", path,
                        strlen(path), sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return 0;
    *slash = '\0';
    return csm_make_dirs(buf, err);
}
