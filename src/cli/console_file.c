/* rnx console's link file (console_file.h). Where it goes: $XDG_RUNTIME_DIR (a tmpfs of the
 * user's, /run/user/UID, emptied at logout) when it is a directory of this user's that nobody
 * else may write to; else $HOME/.local/share/joblet, made 0700 (Jupyter's runtime directory is
 * ~/.local/share/jupyter/runtime). root under sudo -E keeps the user's XDG_RUNTIME_DIR and
 * HOME: owned by another uid, both are passed over (a HOME of the caller's or root's is taken,
 * as a user's own). The directory is held open
 * and the file made and removed through it (openat, unlinkat), so nobody who can rename a
 * directory above it moves either elsewhere. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "console_file.h"

#include "../common/util.h"

#define FILE_PREFIX "joblet-console-"

size_t console_file_html(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s; s++) {
        const char *r = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;"
                      : *s == '"' ? "&quot;" : *s == '\'' ? "&#39;" : NULL;
        size_t k = r ? strlen(r) : 1;
        if (n + k >= cap)
            return 0;
        memcpy(out + n, r ? r : s, k);
        n += k;
    }
    if (n >= cap)
        return 0;
    out[n] = 0;
    return n;
}

size_t console_file_uri(const char *path, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen("file://");
    if (n >= cap)
        return 0;
    memcpy(out, "file://", n);
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                     strchr("-._~/", *p);
        if (n + (plain ? 1 : 3) >= cap)
            return 0;
        if (plain) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = 0;
    return n;
}

/* fd a directory of this user's that group and others cannot write to. */
static bool private_dir(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022);
}

/* $XDG_RUNTIME_DIR, open: the descriptor, or -1 with why. */
static int runtime_dir(char *why, size_t whylen)
{
    const char *x = getenv("XDG_RUNTIME_DIR");
    if (!x || !*x) {
        snprintf(why, whylen, "XDG_RUNTIME_DIR is not set");
        return -1;
    }
    if (x[0] != '/' || strlen(x) > PATH_MAX - 100) {
        snprintf(why, whylen, "XDG_RUNTIME_DIR is not an absolute path");
        return -1;
    }
    int fd = open(x, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "XDG_RUNTIME_DIR %s: %s", x, strerror(errno));
        return -1;
    }
    if (!private_dir(fd)) {
        close(fd);
        snprintf(why, whylen, "XDG_RUNTIME_DIR %s is not a directory of uid %u's that only it may write to", x,
                 (unsigned)geteuid());
        return -1;
    }
    return fd;
}

/* $HOME/.local/share/joblet, made where missing, 0700: the descriptor, or -1 with why. Each
 * step is opened from the one above it, never through a symbolic link (but $HOME itself). */
static int home_dir(char *path, size_t cap, char *why, size_t whylen)
{
    static const char *const steps[] = {".local", "share", "joblet"};
    const char *h = getenv("HOME");
    if (!h || !*h) {
        snprintf(why, whylen, "HOME is not set");
        return -1;
    }
    if (h[0] != '/' || strlen(h) > PATH_MAX - 200) {
        snprintf(why, whylen, "HOME is not an absolute path");
        return -1;
    }
    int fd = open(h, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "HOME %s: %s", h, strerror(errno));
        return -1;
    }
    /* root under sudo -E has the user's HOME: what it made there (~/.local, root's) would be no
     * use to the user's browser and would keep the user out of ~/.local */
    struct stat hs;
    if (fstat(fd, &hs) < 0 || (hs.st_uid != geteuid() && hs.st_uid != 0)) {
        snprintf(why, whylen, "HOME %s is uid %u's, not uid %u's (sudo -E keeps the user's HOME)", h,
                 (unsigned)hs.st_uid, (unsigned)geteuid());
        close(fd);
        return -1;
    }
    snprintf(path, cap, "%s", strcmp(h, "/") ? h : "");
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        bool last = i + 1 == sizeof steps / sizeof *steps;
        size_t at = strlen(path);
        snprintf(path + at, cap - at, "/%s", steps[i]);
        if (mkdirat(fd, steps[i], last ? 0700 : 0755) < 0 && errno != EEXIST) {
            snprintf(why, whylen, "cannot make %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        int next = openat(fd, steps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        close(fd);
        if (next < 0) {
            snprintf(why, whylen, "%s: %s", path, strerror(err));
            return -1;
        }
        fd = next;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || ((st.st_mode & 077) && fchmod(fd, 0700) < 0) ||
        !private_dir(fd)) {
        snprintf(why, whylen, "%s is not a directory of uid %u's that only it may write to", path,
                 (unsigned)geteuid());
        close(fd);
        return -1;
    }
    return fd;
}

/* Removes the files in dir that consoles left which are gone (killed, or a crash): their
 * tokens are dead, but nothing else would remove them. A PID another process took since
 * keeps its file until then. */
static void remove_stale(int dir)
{
    int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = 0, end = 0;
        char rnd[17];
        if (sscanf(e->d_name, FILE_PREFIX "%d-%16[0-9a-f].html%n", &pid, rnd, &end) != 2 || e->d_name[end] ||
            pid <= 0 || pid == getpid())
            continue;
        if (kill(pid, 0) < 0 && errno == ESRCH)
            unlinkat(dir, e->d_name, 0);
    }
    closedir(d);
}

int console_file_make(console_file *f, const char *url, char *why, size_t whylen)
{
    f->dirfd = -1;
    f->name[0] = 0;
    char xwhy[PATH_MAX + 100], hwhy[PATH_MAX + 100];
    int dir = runtime_dir(xwhy, sizeof xwhy);
    if (dir >= 0) {
        snprintf(f->path, sizeof f->path, "%s", getenv("XDG_RUNTIME_DIR"));
    } else if ((dir = home_dir(f->path, sizeof f->path, hwhy, sizeof hwhy)) < 0) {
        snprintf(why, whylen, "%s; %s", xwhy, hwhy);
        return -1;
    }
    remove_stale(dir);
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        snprintf(why, whylen, "getrandom: %s", strerror(errno));
        close(dir);
        return -1;
    }
    snprintf(f->name, sizeof f->name, FILE_PREFIX "%d-%02x%02x%02x%02x%02x%02x%02x%02x.html", (int)getpid(), r[0],
             r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    size_t at = strlen(f->path);
    while (at > 1 && f->path[at - 1] == '/')
        f->path[--at] = 0;
    snprintf(f->path + at, sizeof f->path - at, "/%s", f->name);
    char esc[2048], page[6144];
    int n = -1;
    if (console_file_html(url, esc, sizeof esc))
        n = snprintf(page, sizeof page,
                     "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
                     "<meta name=\"referrer\" content=\"no-referrer\">\n"
                     "<meta http-equiv=\"refresh\" content=\"0;url=%s\">\n"
                     "<title>joblet console</title></head>\n"
                     "<body><p>Opening the joblet console. If nothing happens, <a href=\"%s\">open it here</a>.</p>\n"
                     "<p>The link works once; rnx console removes this file when it ends.</p></body></html>\n",
                     esc, esc);
    if (n < 0 || (size_t)n >= sizeof page) {
        snprintf(why, whylen, "the console's URL is too long for the file");
        close(dir);
        return -1;
    }
    int fd = openat(dir, f->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, whylen, "cannot make %s: %s", f->path, strerror(errno));
        close(dir);
        return -1;
    }
    bool ok = fchmod(fd, 0600) == 0 && write_all(fd, page, (size_t)n) == (size_t)n;
    int err = errno;
    if (close(fd) < 0 || !ok) {
        snprintf(why, whylen, "cannot write %s: %s", f->path, strerror(ok ? errno : err));
        unlinkat(dir, f->name, 0);
        close(dir);
        return -1;
    }
    f->dirfd = dir;
    return 0;
}

void console_file_remove(console_file *f)
{
    if (f->dirfd < 0)
        return;
    unlinkat(f->dirfd, f->name, 0);
    close(f->dirfd);
    f->dirfd = -1;
}

/* The browser's command line, as Python's webbrowser module reads $BROWSER: its first entry (a
 * ':' separates others), words split at blanks, "%s" in a word replaced by the path, or the path
 * added as the last word where no word has it; xdg-open where BROWSER is unset or empty. 0, or -1
 * with why where it does not fit (argv holds max words, buf cap bytes). */
int console_file_browser_argv(const char *browser, const char *path, char **argv, size_t max, char *buf, size_t cap,
                              char *why, size_t whylen)
{
    if (!browser || !*browser || *browser == ':')
        browser = "xdg-open";
    size_t n = 0, used = 0;
    bool placed = false;
    const char *p = browser;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == ':')
            break;
        if (n + 3 > max) { /* the word, the path, NULL */
            snprintf(why, whylen, "BROWSER has more than %zu words", max - 2);
            return -1;
        }
        argv[n++] = buf + used;
        for (; *p && *p != ' ' && *p != '\t' && *p != ':'; p++) {
            const char *piece = p;
            size_t len = 1;
            if (p[0] == '%' && p[1] == 's') {
                piece = path, len = strlen(path), placed = true, p++;
            }
            if (used + len + 1 >= cap) {
                snprintf(why, whylen, "BROWSER and the file's path are too long together");
                return -1;
            }
            memcpy(buf + used, piece, len);
            used += len;
        }
        buf[used++] = 0;
    }
    if (!n) {
        snprintf(why, whylen, "BROWSER names no command");
        return -1;
    }
    if (!placed)
        argv[n++] = (char *)path;
    argv[n] = NULL;
    return 0;
}

pid_t console_file_open(const console_file *f, const char *browser, const sigset_t *mask, char *why, size_t whylen)
{
    char *argv[18], buf[2 * PATH_MAX + 1024];
    if (console_file_browser_argv(browser, f->path, argv, sizeof argv / sizeof *argv, buf, sizeof buf, why,
                                  whylen) < 0)
        return -1;
    posix_spawnattr_t at;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_init(&fa);
    sigset_t dfl;
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGHUP);
    sigaddset(&dfl, SIGCHLD);
    /* its own process group: Ctrl-C in the terminal ends the console, not the user's browser;
     * the console's signal mask as it was before the console blocked its signals */
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setsigmask(&at, mask);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc) {
        snprintf(why, whylen, "cannot start '%s': %s", argv[0], strerror(rc));
        return -1;
    }
    return pid;
}
