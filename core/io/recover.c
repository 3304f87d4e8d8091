/* Opening the log a killed run left: the SWMR mark cleared once its writer is gone, the file
   extended to its stored end, the datasets cut back to the complete frames. */
#include "log_internal.h"

#include "lock.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
/* A log is written in HDF5's single-writer/multiple-reader mode (SWMR): the superblock marks the
   file as open for writing until the writer closes it, and ordinary readers refuse a file so
   marked. After a kill the mark stays; `h5clear -s` removes it, and so does opening the file
   with the file-access property "clear_status_flags" (what h5clear sets), which is done here
   once the process that wrote the log is known to be gone. */
enum { WRITER_GONE, WRITER_LIVE, WRITER_UNKNOWN };

static int writer_state(hid_t f, char *host, size_t size)
{
    char me[256] = "";
    hid_t a = H5Aexists(f, "writer_pid") > 0 ? H5Aopen(f, "writer_pid", H5P_DEFAULT) : -1;
    int64_t pid = 0;
    if (a >= 0) {
        H5Aread(a, H5T_NATIVE_INT64, &pid);
        H5Aclose(a);
    }
    if (csm_log_string_attr(f, "writer_host", host, size) || pid <= 0) return WRITER_UNKNOWN;
    if (gethostname(me, sizeof me) != 0 || strcmp(host, me)) return WRITER_UNKNOWN;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return WRITER_GONE;
    /* the pid is in use: by csm, or by an unrelated process that reused it */
    char proc[64], comm[64] = "";
    snprintf(proc, sizeof proc, "/proc/%lld/comm", (long long)pid);
    FILE *fp = fopen(proc, "r");
    if (!fp) return WRITER_LIVE;
    int got = fgets(comm, sizeof comm, fp) != NULL;
    fclose(fp);
    return got && strncmp(comm, "csm", 3) ? WRITER_GONE : WRITER_LIVE;
}

/* A reader in SWMR mode retries a metadata read whose checksum fails, as a writer may be between
   two writes; HDF5 tries up to 100 times, backing off, which on a corrupted log is a quarter of an
   hour at 0 % CPU. A few tries cover a live writer's window; then the open fails and says so. */
enum { SWMR_READ_ATTEMPTS = 10 };

static hid_t swmr_open(const char *path)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return -1;
    H5Pset_metadata_read_attempts(fapl, SWMR_READ_ATTEMPTS);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
    H5Pclose(fapl);
    return f;
}

/* A write that failed for want of room can leave the superblock's end-of-file address past the
   end of the file, and HDF5 then refuses the file as truncated. The bytes missing belong to the
   frame that failed, which nothing complete refers to: the file is extended with zeros to that
   address (superblock version 2 or 3, 8-byte addresses, no user block: what csm writes). */
static void extend_to_stored_eof(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return;
    unsigned char sb[48];
    size_t got = fread(sb, 1, sizeof sb, fp);
    long size = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    fclose(fp);
    static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (got < 36 || memcmp(sb, signature, 8) || (sb[8] != 2 && sb[8] != 3) || sb[9] != 8 || size < 0) return;
    uint64_t eof = 0;
    for (int b = 7; b >= 0; b--) eof = eof << 8 | sb[28 + b];
    if (eof > (uint64_t)size && eof < ((uint64_t)1 << 48)) {
        if (truncate(path, (off_t)eof) != 0) return;
    }
}

/* After a crash: clear the open-for-writing mark and cut the datasets back to the complete
   frames, so every reader sees whole frames only (a log without checkpoints is left uncut). */
static int recover_log(const char *path)
{
    extend_to_stored_eof(path);
    hid_t f = csm_log_open_clearing(path);
    if (f < 0) return -1;
    csm_log_trim_after_crash(path, f);
    return H5Fclose(f) < 0 ? -1 : 0;
}

/* A log whose open-for-writing mark is HDF5's plain one, not SWMR's: a process killed while it
   held the file open outside SWMR (a resume restoring, a run writing its final status). Its
   writer held the log's lock (csm_lock_take) all along; with the lock free the writer is gone,
   and the log is recovered as a killed SWMR writer's is. */
static hid_t open_unmarked(const char *path, int *live, char *note, int size)
{
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    csm_error err;
    int fd = access(lock, F_OK) == 0 ? csm_lock_share(lock, path, "log", &err) : -2;
    if (fd == -1) { /* held: a resume or a run of this log is under way */
        if (live) *live = 1;
        snprintf(note, (size_t)size, "a run is opening or closing this log now");
        return -1;
    }
    if (fd >= 0) csm_lock_drop(fd, NULL);
    recover_log(path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0)
        snprintf(note, (size_t)size, "the run that wrote this log stopped while it held the file open (killed?); "
                 "its open-for-writing mark is cleared and it holds every frame flushed");
    return f;
}

/* Whether the superblock (version 2 or 3) marks the file as open by a SWMR writer: its file
   consistency flags (byte 11) hold SWMR write access (0x04) beside write access (0x01). A file
   open for writing outside SWMR carries 0x01 alone. */
static int swmr_marked(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    unsigned char sb[12];
    size_t got = fread(sb, 1, sizeof sb, fp);
    fclose(fp);
    static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    return got == sizeof sb && !memcmp(sb, signature, 8) && (sb[8] == 2 || sb[8] == 3) && (sb[11] & 0x04);
}

/* Whether a process holds the log's lock: a run writing it, or a resume or run opening or
   closing it. */
static int lock_held(const char *path)
{
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    if (access(lock, F_OK) != 0) return 0;
    csm_error err;
    int fd = csm_lock_share(lock, path, "log", &err);
    if (fd >= 0) csm_lock_drop(fd, NULL);
    return fd == -1;
}

int64_t csm_log_open_read(const char *path, int recover, int *live, char *note, int size)
{
    note[0] = '\0';
    if (live) *live = 0;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (H5Fis_hdf5(path) <= 0) return -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0) return f;
    /* marked as open for writing: a live run, or one that was killed */
    f = swmr_open(path);
    /* A reader can catch a live SWMR writer between two writes often enough to spend its few
       metadata read attempts (SWMR_READ_ATTEMPTS): while the superblock says a SWMR writer has the
       file and the writer holds the lock, it opens again every 20 ms for up to 2 s. (A file open
       for writing outside SWMR, a resume restoring or a run closing, never opens in SWMR mode:
       open_unmarked says so at once.) */
    for (int k = 0; f < 0 && k < 100 && swmr_marked(path) && lock_held(path); k++) {
        nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000}, NULL);
        f = swmr_open(path);
    }
    if (f < 0) return open_unmarked(path, live, note, size);
    char host[256] = "";
    int writer = writer_state(f, host, sizeof host);
    if (writer == WRITER_LIVE) {
        if (live) *live = 1;
        snprintf(note, (size_t)size, "a run is writing this log now (read as it stood at this moment)");
        return f;
    }
    if (writer == WRITER_UNKNOWN && !recover) {
        snprintf(note, (size_t)size, "the log is marked as being written on host %s; if that run has stopped, "
                 "csm run --resume or h5clear -s opens it to every reader", host[0] ? host : "(unknown)");
        return f;
    }
    H5Fclose(f);
    recover_log(path);
    if ((f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)) >= 0) {
        snprintf(note, (size_t)size, "the run that wrote this log stopped without closing it (killed?); its "
                 "open-for-writing mark is cleared and it holds every frame flushed");
        return f;
    }
    snprintf(note, (size_t)size, "the run that wrote this log stopped without closing it, and the mark it left "
             "cannot be cleared here (a read-only file, or no room?): HDF5 readers need SWMR mode, h5py "
             "File(path, swmr=True), until h5clear -s clears it");
    return swmr_open(path);
}

int csm_log_status(const char *path, char *status, int size, int64_t *frames)
{
    status[0] = '\0';
    *frames = -1;
    char note[512];
    hid_t f = csm_log_open_read(path, 0, NULL, note, sizeof note);
    if (f < 0) return -1;
    int rc = csm_log_string_attr(f, "status", status, (size_t)size);
    if (H5Lexists(f, "/frames/time", H5P_DEFAULT) > 0) {
        hid_t ds = H5Dopen2(f, "/frames/time", H5P_DEFAULT);
        hid_t sp = H5Dget_space(ds);
        hsize_t dim = 0;
        if (H5Sget_simple_extent_ndims(sp) == 1) H5Sget_simple_extent_dims(sp, &dim, NULL);
        *frames = (int64_t)dim;
        H5Sclose(sp);
        H5Dclose(ds);
    }
    H5Fclose(f);
    return rc;
}

hid_t csm_log_open_untouched(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (H5Fis_hdf5(path) <= 0) return -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    return f >= 0 ? f : swmr_open(path);
}

int64_t csm_log_frames_untouched(const char *path)
{
    hid_t f = csm_log_open_untouched(path);
    if (f < 0) return -1;
    int64_t frames = -1;
    hid_t ds = H5Lexists(f, "/frames/time", H5P_DEFAULT) > 0 ? H5Dopen2(f, "/frames/time", H5P_DEFAULT) : -1;
    if (ds >= 0) {
        frames = (int64_t)csm_h5_rows(ds);
        H5Dclose(ds);
    }
    H5Fclose(f);
    return frames;
}

const char *csm_bytes_text(double bytes, char *buf, size_t size)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 999.5 && u < 4) bytes /= 1000, u++;
    snprintf(buf, size, "%.*f %s", bytes < 9.95 && u ? 1 : 0, bytes, unit[u]);
    return buf;
}

/* The room a file at `where` (a file or its folder) can grow into: the file system's free space
   plus `freed` (a file it replaces), or what the file size limit leaves above `size`, whichever is
   less; *what says which. UINT64_MAX where neither is known, and for a read-only file system or
   one that is not a disk (sysfs): opening the file there says why it cannot be written. */
static uint64_t room_at(const char *where, uint64_t size, uint64_t freed, const char **what)
{
    uint64_t room = UINT64_MAX;
    *what = "free on its file system";
    struct statvfs v;
    if (statvfs(where, &v) == 0 && !(v.f_flag & ST_RDONLY) && v.f_blocks > 0)
        room = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize + freed;
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        uint64_t below = (uint64_t)rl.rlim_cur > size ? (uint64_t)rl.rlim_cur - size : 0;
        if (below < room) {
            room = below;
            *what = "left under the file size limit (ulimit -f)";
        }
    }
    return room;
}

int csm_log_check_room(const char *path, csm_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* opening it says what is wrong */
    int64_t frames = csm_log_frames_untouched(path);
    uint64_t size = (uint64_t)st.st_size, per_frame = frames > 0 ? size / (uint64_t)frames : size;
    uint64_t need = 2 * per_frame + (4ull << 20);
    const char *what;
    uint64_t room = room_at(path, size, 0, &what);
    if (room >= need) return 0;
    char have[32], want[32];
    csm_bytes_text((double)room, have, sizeof have);
    csm_bytes_text((double)need, want, sizeof want);
    return csm_fail(err, CSM_EXIT_FAILURE,
                    "%s: %s %s, and a resume needs %s (its set-up and two frames); nothing was written, the log keeps "
                    "its %lld frames: make room and resume again",
                    path, have, what, want, (long long)(frames > 0 ? frames : 0));
}

int csm_log_check_fits(const char *path, const csm_sim *sim, csm_error *err)
{
    uint64_t need = (uint64_t)csm_log_estimate(sim, NULL), replaced = 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) replaced = (uint64_t)st.st_size; /* --force frees it */
    char dir[4200];
    const char *slash = strrchr(path, '/');
    if (slash == path) snprintf(dir, sizeof dir, "/");
    else if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else snprintf(dir, sizeof dir, ".");
    const char *what;
    uint64_t room = room_at(dir, 0, replaced, &what);
    if (need <= room) return 0;
    char have[32], want[32];
    csm_bytes_text((double)room, have, sizeof have);
    csm_bytes_text((double)need, want, sizeof want);
    return csm_fail(err, CSM_EXIT_FAILURE,
                    "%s: the log needs about %s (%d frames of %d particles) and %s are %s; nothing was written: make "
                    "room, log fewer frames (--frames, output.every) or write it elsewhere (-o)",
                    path, want, sim->cfg->frames / (sim->cfg->output_every > 0 ? sim->cfg->output_every : 1) + 1,
                    sim->w.P.n, have, what);
}

/* The rows of a dataset's first dimension and its rank (-1: absent or unreadable). */
static int dims_of(hid_t f, const char *name, hsize_t dims[3])
{
    dims[0] = dims[1] = dims[2] = 0;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return -1;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    if (rank >= 1 && rank <= 3) H5Sget_simple_extent_dims(sp, dims, NULL);
    H5Sclose(sp);
    H5Dclose(d);
    return rank;
}

/* /frames/time is read first: a writer appends it last each frame (log.c), so its rows are the
   complete frames, and a writer going on between two reads of a live log can only have added rows
   to the datasets read after it. Every reader takes that many frames; the frame datasets must
   hold at least as many (more: a frame in progress, or frames written since). */
int csm_log_check_shapes(int64_t file, char *why, int size)
{
    hid_t f = (hid_t)file;
    hsize_t p[3], t[3], v[3], m[3], o[3];
    int rt = dims_of(f, "/frames/time", t);
    int rp = dims_of(f, "/frames/positions", p);
    if (rp < 0) return 0; /* not a log with frames: the callers say what they miss */
    if (rp != 3 || p[2] != 3) {
        snprintf(why, (size_t)size, "/frames/positions is not (T, n, 3)");
        return -1;
    }
    if (rt != 1 || t[0] > p[0]) {
        snprintf(why, (size_t)size, "/frames/time holds %llu rows, /frames/positions %llu frames",
                 (unsigned long long)t[0], (unsigned long long)p[0]);
        return -1;
    }
    int rv = dims_of(f, "/frames/velocities", v);
    if (rv >= 0 && (rv != 3 || v[0] < t[0] || v[1] != p[1] || v[2] != 3)) {
        snprintf(why, (size_t)size, "/frames/velocities is not the shape of /frames/positions");
        return -1;
    }
    if (dims_of(f, "/clusters/members", m) == 1 && dims_of(f, "/clusters/offsets", o) == 1 && o[0] > 0) {
        int32_t *off = malloc(sizeof *off * o[0]);
        hid_t d = H5Dopen2(f, "/clusters/offsets", H5P_DEFAULT);
        int bad = !off || d < 0 || H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, off) < 0;
        if (d >= 0) H5Dclose(d);
        for (hsize_t k = 0; k < o[0] && !bad; k++)
            if (off[k] < 0 || (hsize_t)off[k] > m[0]) {
                snprintf(why, (size_t)size, "/clusters/offsets row %llu is %d, outside the %llu rows of /clusters/members",
                         (unsigned long long)k, off[k], (unsigned long long)m[0]);
                bad = 2;
            }
        free(off);
        if (bad == 2) return -1;
        if (bad) {
            snprintf(why, (size_t)size, "/clusters/offsets cannot be read");
            return -1;
        }
    }
    return 0;
}
