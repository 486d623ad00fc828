#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t mono_ms(void) { return mono_ns() / 1000000; }

int64_t now_ms(void) { return now_ns() / 1000000; }

int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void format_ms(int64_t ms, char *out, size_t outlen)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, outlen, "%s.%03dZ", b, (int)(ms % 1000));
}

void format_ns_us(int64_t ns, char *out, size_t outlen)
{
    time_t s = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&s, &tm);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, outlen, "%s.%06dZ", b, (int)((ns % 1000000000LL) / 1000));
}

int parse_ms(const char *s, int64_t *ms)
{
    time_t t;
    if (!s || parse_rfc3339(s, &t) < 0)
        return -1;
    int64_t frac = 0;
    const char *dot = strchr(s, '.');
    if (dot) {
        int digits = 0;
        for (const char *p = dot + 1; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                frac = frac * 10 + (*p - '0');
        for (; digits < 3; digits++)
            frac *= 10;
    }
    *ms = (int64_t)t * 1000 + frac;
    return 0;
}

int mkdir_p(const char *path, mode_t mode, jerr *e)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return jerr_set(e, ENAMETOOLONG, "path too long: %s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return jerr_sys(e, "mkdir %s", buf);
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return jerr_sys(e, "mkdir %s", buf);
    return 0;
}

char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    if (buf) {
        buf[n] = 0;
        if (len)
            *len = n;
    }
    return buf;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, jerr *e)
{
    return write_file_opt(path, data, len, mode, WF_ATOMIC | WF_DURABLE, e);
}

int write_file_opt(const char *path, const void *data, size_t len, mode_t mode, unsigned flags, jerr *e)
{
    bool durable = flags & WF_DURABLE;
    char tmp[4096];
    if (flags & WF_ATOMIC)
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
    else
        snprintf(tmp, sizeof tmp, "%s", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return jerr_sys(e, "create %s", tmp);
    if (write_all(fd, data, len) != len) {
        jerr_sys(e, "write %s", tmp);
        close(fd);
        unlink(tmp);
        return -1;
    }
    if ((durable && fsync(fd) < 0) || close(fd) < 0) {
        jerr_sys(e, "fsync %s", tmp);
        unlink(tmp);
        return -1;
    }
    if ((flags & WF_ATOMIC) && rename(tmp, path) < 0) {
        jerr_sys(e, "rename %s", tmp);
        unlink(tmp);
        return -1;
    }
    return 0;
}

int write_string(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t l = strlen(s);
    /* Again after EINTR: a cgroup v1 memory limit (memory.limit_in_bytes, memsw, kmem) fails
     * with EINTR, not a restart, whenever a signal is pending as it is written, a stop signal
     * too (kill -STOP, a debugger's or strace's attach), and nothing was set then: the shim
     * ended its job start_failed "Interrupted system call" on such a host. */
    ssize_t w;
    while ((w = write(fd, s, l)) < 0 && errno == EINTR)
        ;
    int saved = errno;
    close(fd);
    errno = saved;
    if (w < 0)
        return -1;
    if ((size_t)w != l) {
        errno = EIO;
        return -1;
    }
    return 0;
}

/* rm_rf's recursion is bounded, whoever made the tree (a user's job makes its /work): a
 * directory deeper than this is moved up into the top directory (a rename on the same
 * filesystem, by descriptors) and removed from there, so a tree of any depth costs at most
 * this many levels of stack and descriptors. */
#define RM_DEPTH_MAX 128

typedef struct rm_walk {
    dev_t dev;
    int top;                  /* the top directory, once open */
    unsigned long *moved;     /* directories moved up into it (numbers their names) */
    int64_t until;            /* mono_ns at which to stop for now; 0 never */
    unsigned long left;       /* entries still to be removed before the time counts */
} rm_walk;

/* dfd/name and what it holds: 1 when gone (or moved up into the top), 0 when the walk's time
 * ran out first (what is left, a later walk finds), -1 on an error (errno). */
static int rm_at(rm_walk *w, int dfd, const char *name, unsigned depth)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 1 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -1 : 1;
    if (st.st_dev != w->dev) {
        errno = EXDEV;
        return -1;
    }
    if (depth >= RM_DEPTH_MAX) {
        char to[40];
        for (;;) {
            snprintf(to, sizeof to, ".joblet-rm-%lu", (*w->moved)++);
            if (renameat2(dfd, name, w->top, to, RENAME_NOREPLACE) == 0)
                return 1;
            if (errno != EEXIST)
                return errno == ENOENT ? 1 : -1;
        }
    }
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 1 : -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    if (depth == 0)
        w->top = fd;
    /* an error is remembered and the rest removed all the same; running out of time stops */
    int rc = 1, err = 0;
    unsigned long before;
    do { /* the top directory again while what was moved up into it is there */
        before = *w->moved;
        rewinddir(d);
        struct dirent *de;
        while (rc != 0 && (de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            bool stop = w->until && !w->left && mono_ns() >= w->until;
            int r = stop ? 0 : rm_at(w, dirfd(d), de->d_name, depth + 1);
            if (w->left)
                w->left--;
            if (r == 0)
                rc = 0;
            else if (r < 0 && rc == 1)
                rc = -1, err = errno;
        }
    } while (depth == 0 && rc == 1 && *w->moved != before);
    closedir(d);
    if (depth == 0)
        w->top = -1;
    if (rc != 1) {
        errno = err;
        return rc;
    }
    if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return -1;
    return 1;
}

int rm_rf_some(const char *path, int64_t until_ns, unsigned long at_least, unsigned long *moved)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 1 : -1;
    rm_walk w = {.dev = st.st_dev, .top = -1, .moved = moved, .until = until_ns, .left = at_least};
    return rm_at(&w, AT_FDCWD, path, 0);
}

int rm_rf(const char *path)
{
    unsigned long moved = 0;
    return rm_rf_some(path, 0, 0, &moved) < 0 ? -1 : 0;
}

void uuid_v4(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
        abort(); /* the kernel's CSPRNG never fails for 16 bytes once seeded */
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

size_t utf8_control_len(const unsigned char *p, uint32_t *cp)
{
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
        *cp = p[1];
        return 2;
    }
    if (p[0] == 0xd8 && p[1] == 0x9c) { /* U+061C ARABIC LETTER MARK */
        *cp = 0x61c;
        return 2;
    }
    if (p[0] != 0xe2 || (p[1] != 0x80 && p[1] != 0x81) || (p[2] & 0xc0) != 0x80)
        return 0;
    uint32_t c = 0x2000 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
    if (c == 0x200e || c == 0x200f || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) {
        *cp = c;
        return 3;
    }
    return 0;
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

void *xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p)
        abort();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort();
    return q;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s ? s : "");
    if (!p)
        abort();
    return p;
}

char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

bool fds_available(int n)
{
    int got[64], k = 0;
    bool ok = true;
    while (k < n && k < 64) {
        int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            ok = false;
            break;
        }
        got[k++] = fd;
    }
    while (k > 0)
        close(got[--k]);
    return ok;
}

int set_cloexec_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int64_t proc_stat_field(pid_t pid, int n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    /* read into the stack: the line is ~300 bytes (comm is at most 64, 52 numbers); read_file's
     * 4 KiB malloc, a large-bin request, consolidated the heap's fastbins at every job's start */
    char buf[2048];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == sizeof buf - 1)
            break;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    buf[len] = 0;
    /* comm may hold spaces and ')' : parse after the last ')' */
    char *p = strrchr(buf, ')');
    int64_t v = -1;
    if (p && p[1]) {
        p += 2;
        int field = 3;
        char *save = NULL;
        for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++)
            if (field == n) {
                v = (int64_t)strtoull(tok, NULL, 10);
                break;
            }
    }
    return v;
}

int64_t proc_status_uid(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *s = read_file(path, NULL);
    if (!s)
        return -1;
    char *u = strstr(s, "\nUid:");
    int64_t v = -1;
    if (u) {
        char *end;
        unsigned long long x = strtoull(u + 5, &end, 10);
        if (end != u + 5)
            v = (int64_t)x;
    }
    free(s);
    return v;
}

uint64_t proc_start_time(pid_t pid)
{
    int64_t v = proc_stat_field(pid, 22);
    return v < 0 ? 0 : (uint64_t)v;
}

size_t write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, c + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            break;
        }
        done += (size_t)w;
    }
    return done;
}

int std_fds_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        /* (the lowest fd free is this one: those below it are open) */
        int got = open("/dev/null", O_RDWR);
        if (got < 0)
            return -1;
        if (got != fd) { /* (not seen: something else opened one meanwhile) */
            close(got);
            errno = EBADF;
            return -1;
        }
    }
    return 0;
}

extern char **environ;

int spawn_fds(const char *path, char *const argv[], int out, int fd3, pid_t *pid, int *pidfd)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out, 1);
    posix_spawn_file_actions_adddup2(&fa, out, 2);
    if (fd3 >= 0)
        posix_spawn_file_actions_adddup2(&fa, fd3, 3);
    /* the daemon blocks the signals its signalfd reads and ignores SIGPIPE (main.c): the child
     * starts with none blocked and none ignored (an ignored signal stays so across exec: a tool
     * writing to a pipe closed under it got EPIPE where it dies, a shell loop never ended) */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawn(pid, path, &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    if ((*pidfd = (int)syscall(SYS_pidfd_open, *pid, 0)) < 0) {
        int err = errno;
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
        errno = err;
        return -1;
    }
    return 0;
}

int spawn_piped(const char *path, char *const argv[], pid_t *pid, int *pidfd, int *out)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    int rc = spawn_fds(path, argv, p[1], -1, pid, pidfd), err = errno;
    close(p[1]);
    if (rc < 0) {
        close(p[0]);
        errno = err;
        return -1;
    }
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    *out = p[0];
    return 0;
}

int run_input(const char *path, char *const argv[], const char *input, size_t len, int timeout_ms, char *out,
              size_t outlen)
{
    int in = memfd_create("input", MFD_CLOEXEC);
    if (in < 0)
        return -1;
    if (write_all(in, input, len) != len || lseek(in, 0, SEEK_SET) < 0) {
        int err = errno;
        close(in);
        errno = err;
        return -1;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        int err = errno;
        close(in);
        errno = err;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    pid_t pid;
    int rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    close(in);
    if (rc != 0) {
        close(p[0]);
        errno = rc;
        return -1;
    }
    size_t got = 0;
    int64_t deadline = now_ms() + timeout_ms;
    bool late = false;
    char sink[4096];
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            late = true;
            break;
        }
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        int r = poll(&pf, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            late = r == 0;
            break;
        }
        /* beyond outlen the rest is read and dropped, so the child never blocks on a full pipe */
        bool room = got + 1 < outlen;
        ssize_t n = room ? read(p[0], out + got, outlen - 1 - got) : read(p[0], sink, sizeof sink);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (room)
            got += (size_t)n;
    }
    close(p[0]);
    if (outlen)
        out[got < outlen ? got : outlen - 1] = 0;
    if (late)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (late) {
        errno = ETIMEDOUT;
        return -1;
    }
    return st;
}
