/* An array task's /work from its array's files (workcopy.h). */
#include "workcopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct walk {
    uid_t uid;
    gid_t gid;
    const sigset_t *stop;     /* signals that end the copy when pending (workcopy.h) */
    workcopy_stats *st;
    char path[1100];          /* the entry being copied, relative to the tree: for messages */
    jerr *e;
} walk;

/* Whether a signal of w->stop is pending: the copy ends there (ECANCELED). */
static int stopped(walk *w)
{
    sigset_t p;
    if (!w->stop || sigpending(&p) < 0)
        return 0;
    for (int s = 1; s < NSIG; s++)
        if (sigismember(w->stop, s) == 1 && sigismember(&p, s) == 1)
            return jerr_set(w->e, ECANCELED, "'%s': stopped before the job started (signal %d)", w->path, s);
    return 0;
}

static int copy_file(walk *w, int sfd, int dfd, const char *name, mode_t mode)
{
    int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return jerr_sys(w->e, "'%s': open the array's copy", w->path);
    /* a new file, never one there (a run cut short, started again: removed first), so that
     * nothing put there is written through */
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
    if (out < 0 && errno == EEXIST && unlinkat(dfd, name, 0) == 0)
        out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
    if (out < 0) {
        close(in);
        return jerr_sys(w->e, "'%s': create it", w->path);
    }
    int rc = 0;
    ssize_t k = 0;
    /* a slice at a time, a stop asked for meanwhile heard between them */
    while ((rc = stopped(w)) == 0 && (k = copy_file_range(in, NULL, out, NULL, WORKCOPY_SLICE, 0)) > 0)
        w->st->bytes += (uint64_t)k;
    if (rc == 0 && k < 0)
        rc = jerr_sys(w->e, "'%s': copy", w->path);
    else if (rc == 0 && (fchown(out, w->uid, w->gid) < 0 || fchmod(out, mode & 0777) < 0))
        rc = jerr_sys(w->e, "'%s': make it the job's", w->path);
    close(in);
    if (close(out) < 0 && rc == 0)
        rc = jerr_sys(w->e, "'%s': write", w->path);
    w->st->files += rc == 0;
    return rc;
}

static int copy_link(walk *w, int sfd, int dfd, const char *name)
{
    char to[4096];
    ssize_t n = readlinkat(sfd, name, to, sizeof to - 1);
    if (n < 0)
        return jerr_sys(w->e, "'%s': read the link", w->path);
    to[n] = 0;
    if (symlinkat(to, dfd, name) < 0 && (errno != EEXIST || unlinkat(dfd, name, 0) < 0 || symlinkat(to, dfd, name) < 0))
        return jerr_sys(w->e, "'%s': make the link", w->path);
    /* by a descriptor of the link itself, not its name again */
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int rc = fd < 0 || fchownat(fd, "", w->uid, w->gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0
                 ? jerr_sys(w->e, "'%s': make it the job's", w->path)
                 : 0;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* The entries of the directory sfd (taken: closed here) into dfd; len: where this directory's
 * path ends in w->path. Two descriptors a level. */
static int copy_dir(walk *w, int sfd, int dfd, size_t len, unsigned depth)
{
    if (depth > WORKCOPY_DEPTH) {
        close(sfd);
        return jerr_set(w->e, ELOOP, "'%s': more than %d levels of directories", w->path, WORKCOPY_DEPTH);
    }
    DIR *d = fdopendir(sfd);
    if (!d) {
        close(sfd);
        return jerr_sys(w->e, "'%s': read the array's directory", len ? w->path : ".");
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (errno = 0, de = readdir(d))) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        snprintf(w->path + len, sizeof w->path - len, "%s%s", len ? "/" : "", name);
        size_t sub = strlen(w->path);
        if ((rc = stopped(w)) < 0)
            break; /* (at each entry too: a tree of many small ones) */
        struct stat st;
        if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = jerr_sys(w->e, "'%s': look at it", w->path);
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(w, sfd, dfd, name, st.st_mode);
        } else if (S_ISLNK(st.st_mode)) {
            rc = copy_link(w, sfd, dfd, name);
        } else if (S_ISDIR(st.st_mode)) {
            if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
                rc = jerr_sys(w->e, "'%s': make the directory", w->path);
                break;
            }
            int s2 = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int d2 = s2 < 0 ? -1 : openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (s2 < 0 || d2 < 0) {
                rc = jerr_sys(w->e, "'%s': open the directory", w->path);
                if (s2 >= 0)
                    close(s2);
            } else {
                rc = copy_dir(w, s2, d2, sub, depth + 1); /* (takes s2) */
            }
            if (rc == 0 && (fchown(d2, w->uid, w->gid) < 0 || fchmod(d2, st.st_mode & 0777) < 0))
                rc = jerr_sys(w->e, "'%s': make it the job's", w->path);
            if (d2 >= 0)
                close(d2);
        } /* (nothing else is written there: an upload is a file, a directory or a link) */
        w->path[len] = 0;
    }
    if (rc == 0 && errno)
        rc = jerr_sys(w->e, "'%s': read the array's directory", len ? w->path : ".");
    closedir(d); /* (sfd with it) */
    return rc;
}

int workcopy_tree(const char *from, const char *to, uid_t uid, gid_t gid, const sigset_t *stop, workcopy_stats *st,
                  jerr *e)
{
    *st = (workcopy_stats){0};
    walk w = {.uid = uid, .gid = gid, .stop = stop, .st = st, .e = e};
    int sfd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0)
        return jerr_sys(e, "the array's files at %s", from);
    int dfd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        close(sfd);
        return jerr_sys(e, "the job's /work at %s", to);
    }
    int rc = copy_dir(&w, sfd, dfd, 0, 0); /* (takes sfd) */
    close(dfd);
    return rc;
}
