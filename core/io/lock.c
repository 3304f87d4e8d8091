#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int take(const char *path, const char *subject, const char *what, int shared, csm_error *err)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) /* where the lock cannot go, neither can what it guards */
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: cannot create the %s's lock %s: %s (its folder must be "
                            "writable)", subject, what, path, strerror(errno));
        if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
            char pid[32] = "";
            ssize_t got = pread(fd, pid, sizeof pid - 1, 0);
            pid[got > 0 ? got : 0] = '\0';
            pid[strcspn(pid, "\n")] = '\0';
            close(fd);
            return csm_fail(err, CSM_EXIT_BAD_INPUT, "%s: another csm process (pid %s) is writing this %s, which has "
                            "one writer at a time (lock %s)", subject, pid[0] ? pid : "?", what, path);
        }
        /* the holder before us may have removed the file after we opened it: then our lock is on a
           file no one else can find, and we take the one at the path again */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
            if (shared) return fd;
            char pid[32];
            int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            int written = ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)len, 0) == len;
            (void)written; /* the pid is only a hint for the message of a process refused */
            return fd;
        }
        close(fd);
    }
    return csm_fail(err, CSM_EXIT_FAILURE, "%s: the lock keeps changing under us", path);
}

int csm_lock_take(const char *path, const char *subject, const char *what, csm_error *err)
{
    return take(path, subject, what, 0, err);
}

int csm_lock_share(const char *path, const char *subject, const char *what, csm_error *err)
{
    return take(path, subject, what, 1, err);
}

void csm_lock_drop(int fd, const char *path)
{
    if (fd < 0) return;
    if (path) unlink(path); /* while still holding it, so no one takes a file about to vanish */
    close(fd);
}
