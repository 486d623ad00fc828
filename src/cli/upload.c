/* --upload paths into a request's listing, and their bytes into the streamed upload
 * (upload.h). Everything is walked here, before any request is sent, so a bad path fails the
 * command with nothing submitted. */
#include "upload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/jsonx.h"
#include "../common/util.h"
#include "client.h"
#include "print.h"

void upload_init(upload_set *u)
{
    memset(u, 0, sizeof *u);
}

void upload_free(upload_set *u)
{
    for (size_t i = 0; i < u->n; i++) {
        free(u->ents[i].path);
        free(u->ents[i].type);
        free(u->ents[i].target);
        free(u->src[i].disk);
    }
    free(u->ents);
    free(u->src);
    free(u->first_stripped);
    for (size_t i = 0; i < u->nnames; i++) {
        free(u->names[i]);
        free(u->sources[i]);
    }
    free(u->names);
    free(u->sources);
    memset(u, 0, sizeof *u);
}

/* One entry of the listing; mode without setuid, setgid and sticky bits, which jobs never get
 * (the daemon strips them too), counted so that the command can say so. */
static void push(upload_set *u, const char *disk, const char *rel, const char *type, mode_t mode, int64_t size,
                 const char *target, bool follow)
{
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 64;
        u->ents = xrealloc(u->ents, u->cap * sizeof *u->ents);
        u->src = xrealloc(u->src, u->cap * sizeof *u->src);
    }
    bool is_link = !strcmp(type, "symlink");
    if (!is_link && (mode & 07000)) {
        if (!u->stripped++)
            u->first_stripped = xstrdup(disk);
    }
    u->ents[u->n] = (jobreq_upload){.path = xstrdup(rel), .type = xstrdup(type),
                                    .target = target ? xstrdup(target) : NULL, .mode = (uint32_t)(mode & 0777),
                                    .has_mode = !is_link, .size = size};
    u->src[u->n] = (upload_src){.disk = xstrdup(disk), .follow = follow};
    u->n++;
}

static int sys_error(jerr *e, const char *path)
{
    return jerr_set(e, errno, "--upload: %s: %s", path, strerror(errno));
}

static const char *kind_name(mode_t m)
{
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

/* Job-side paths travel as JSON strings, which must be UTF-8. */
static int check_text(const char *disk, const char *s, const char *what, jerr *e)
{
    if (utf8_valid(s, strlen(s)))
        return 0;
    return jerr_set(e, EILSEQ, "--upload: %s: %s is not valid UTF-8, which the API cannot carry", disk, what);
}

static char *join(const char *dir, const char *name)
{
    size_t l = strlen(dir);
    char *out;
    if (asprintf(&out, "%s%s%s", dir, l && dir[l - 1] == '/' ? "" : "/", name) < 0)
        abort();
    return out;
}

static int add_file(upload_set *u, const char *disk, const char *rel, const struct stat *st, bool follow)
{
    push(u, disk, rel, "file", st->st_mode, (int64_t)st->st_size, NULL, follow);
    u->bytes += (uint64_t)st->st_size;
    u->nfiles++;
    return 0;
}

static int add_symlink(upload_set *u, const char *disk, const char *rel, jerr *e)
{
    char target[PATH_MAX];
    ssize_t n = readlink(disk, target, sizeof target - 1);
    if (n < 0)
        return sys_error(e, disk);
    target[n] = 0;
    if (check_text(disk, target, "the link's target", e) < 0)
        return -1;
    push(u, disk, rel, "symlink", 0777, -1, target, false);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_entry(upload_set *u, const char *disk, const char *rel, const struct stat *st, bool top, jerr *e);

/* The directory entry first, then its contents in name order (stable across runs). */
static int add_dir(upload_set *u, const char *disk, const char *rel, mode_t mode, jerr *e)
{
    push(u, disk, rel, "dir", mode, -1, NULL, false);
    DIR *d = opendir(disk);
    if (!d)
        return sys_error(e, disk);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(de->d_name);
    }
    int ret = errno ? sys_error(e, disk) : 0;
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && ret == 0; i++) {
        char *cdisk = join(disk, names[i]);
        char *crel = join(rel, names[i]);
        struct stat cst;
        if (lstat(cdisk, &cst) < 0)
            ret = sys_error(e, cdisk);
        else
            ret = add_entry(u, cdisk, crel, &cst, false, e);
        free(cdisk);
        free(crel);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ret;
}

static int add_entry(upload_set *u, const char *disk, const char *rel, const struct stat *st, bool top, jerr *e)
{
    if (check_text(disk, rel, "the name", e) < 0)
        return -1;
    if (S_ISDIR(st->st_mode))
        return add_dir(u, disk, rel, st->st_mode, e);
    if (S_ISREG(st->st_mode))
        return add_file(u, disk, rel, st, top);
    if (S_ISLNK(st->st_mode))
        return add_symlink(u, disk, rel, e);
    return jerr_set(e, EINVAL, "--upload: %s: is %s; only files, directories and symlinks can be uploaded", disk,
                    kind_name(st->st_mode));
}

/* The name the job sees: the last component of path ("/a/data/" -> "data"). "." and ".."
 * have no name of their own, so the directory's real name is used. */
static char *top_name(const char *path, jerr *e)
{
    char *copy = xstrdup(path);
    size_t l = strlen(copy);
    while (l > 1 && copy[l - 1] == '/')
        copy[--l] = 0;
    const char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    if (*base && strcmp(base, ".") != 0 && strcmp(base, "..") != 0) {
        char *out = xstrdup(base);
        free(copy);
        return out;
    }
    free(copy);
    char *real = realpath(path, NULL);
    if (!real) {
        sys_error(e, path);
        return NULL;
    }
    slash = strrchr(real, '/');
    char *out = slash && slash[1] ? xstrdup(slash + 1) : NULL;
    free(real);
    if (!out)
        jerr_set(e, EINVAL, "--upload: %s: cannot upload the root directory; name what is inside it", path);
    return out;
}

/* Refuses a second upload landing on a name already taken by an earlier --upload. */
static int claim_name(upload_set *u, const char *name, const char *path, jerr *e)
{
    for (size_t i = 0; i < u->nnames; i++)
        if (strcmp(u->names[i], name) == 0)
            return jerr_set(e, EEXIST, "--upload: %s and %s would both be '%s' in the job", u->sources[i], path,
                            name);
    u->names = xrealloc(u->names, (u->nnames + 1) * sizeof *u->names);
    u->sources = xrealloc(u->sources, (u->nnames + 1) * sizeof *u->sources);
    u->names[u->nnames] = xstrdup(name);
    u->sources[u->nnames] = xstrdup(path);
    u->nnames++;
    return 0;
}

int upload_add(upload_set *u, const char *path, jerr *e)
{
    struct stat st;
    if (!*path)
        return jerr_set(e, EINVAL, "--upload: needs a path");
    /* stat, not lstat: a symlink named on the command line stands for its target */
    if (stat(path, &st) < 0)
        return sys_error(e, path);
    char *name = top_name(path, e);
    if (!name)
        return -1;
    int ret = claim_name(u, name, path, e);
    if (ret == 0)
        ret = add_entry(u, path, name, &st, true, e);
    free(name);
    return ret;
}

int upload_finish(upload_set *u, job_req *req, jerr *e)
{
    size_t bad = 0;
    jerr le = {0};
    int64_t most = jobreq_fields[JR_UPLOADS].max;
    if (u->n + req->nuploads > (size_t)most)
        return jerr_set(e, E2BIG, "--upload: %zu files, directories and links; at most %lld per job", u->n + req->nuploads,
                        (long long)most);
    if (jobreq_upload_links_check(u->ents, u->n, &bad, &le) < 0)
        return jerr_set(e, EXDEV, "--upload: %s: a symlink to '%s', outside what is uploaded; only links that stay "
                                  "inside the job's /work are sent (upload the file itself instead)",
                        u->src[bad].disk, u->ents[bad].target);
    for (size_t i = 0; i < u->n; i++)
        jobreq_add_upload(req, &u->ents[i]);
    return 0;
}

/* ---- sending the bytes ---------------------------------------------------------------------- */


/* "512 B", "3.4 MB", "2.0 GB" (binary units, as the limits are given) */
static void human(uint64_t n, char *out, size_t len)
{
    static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
    double v = (double)n;
    int k = 0;
    while (v >= 1024 && k < 4) {
        v /= 1024;
        k++;
    }
    snprintf(out, len, k ? "%.1f %s" : "%.0f %s", v, unit[k]);
}

/* Shown only when it takes more than a moment, at most five times a second. */
#define PROGRESS_AFTER_MS 300
#define PROGRESS_EVERY_MS 200

static void progress(upload_reader *r, bool force)
{
    if (!r->tty)
        return;
    int64_t now = mono_ms();
    if (!force && (now - r->start_ms < PROGRESS_AFTER_MS || now - r->shown_ms < PROGRESS_EVERY_MS))
        return;
    char a[32], b[32];
    human(r->sent, a, sizeof a);
    human(r->total, b, sizeof b);
    fprintf(stderr, "\rrnx: uploading %s of %s (%d%%)\033[K", a, b,
            r->total ? (int)(r->sent * 100 / r->total) : 100);
    fflush(stderr);
    r->shown = true;
    r->shown_ms = now;
}

void upload_reader_init(upload_reader *r, const upload_set *const *sets, size_t nsets)
{
    *r = (upload_reader){.sets = sets, .nsets = nsets, .fd = -1, .start_ms = mono_ms(),
                         .tty = isatty(STDERR_FILENO) == 1};
    for (size_t i = 0; i < nsets; i++)
        r->total += sets[i]->bytes;
}

static int changed(jerr *e, const char *disk, const char *how)
{
    return jerr_set(e, EAGAIN, "--upload: %s: %s while it was being uploaded; nothing was submitted", disk, how);
}

/* Opens the next file with bytes to send; fd < 0 afterwards when none is left. */
static int next_file(upload_reader *r, jerr *e)
{
    for (; r->set < r->nsets; r->set++, r->ent = 0) {
        const upload_set *u = r->sets[r->set];
        for (; r->ent < u->n; r->ent++) {
            const jobreq_upload *en = &u->ents[r->ent];
            const upload_src *src = &u->src[r->ent];
            if (strcmp(en->type, "file") || en->size <= 0)
                continue;
            int fd = open(src->disk, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (src->follow ? 0 : O_NOFOLLOW));
            struct stat st;
            if (fd < 0 || fstat(fd, &st) < 0) {
                int err = errno;
                if (fd >= 0)
                    close(fd);
                return jerr_set(e, err, "--upload: %s: %s", src->disk, strerror(err));
            }
            if (!S_ISREG(st.st_mode) || st.st_size != en->size) {
                close(fd);
                return changed(e, src->disk, S_ISREG(st.st_mode) ? "its size changed" : "it stopped being a file");
            }
            r->fd = fd;
            r->left = (uint64_t)en->size;
            return 0;
        }
    }
    return 0;
}

long upload_read(void *reader, char *buf, size_t cap, jerr *e)
{
    upload_reader *r = reader;
    size_t got = 0;
    while (got < cap) {
        if (r->fd < 0) {
            if (next_file(r, e) < 0)
                return -1;
            if (r->fd < 0)
                break;
        }
        const char *disk = r->sets[r->set]->src[r->ent].disk;
        size_t want = cap - got < r->left ? cap - got : (size_t)r->left;
        ssize_t n = read(r->fd, buf + got, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return jerr_set(e, errno, "--upload: %s: %s", disk, strerror(errno));
        if (n == 0)
            return changed(e, disk, "it became shorter");
        got += (size_t)n;
        r->left -= (uint64_t)n;
        if (!r->left) {
            /* exactly what was listed, not a byte more */
            char extra;
            ssize_t more;
            do
                more = read(r->fd, &extra, 1);
            while (more < 0 && errno == EINTR);
            close(r->fd);
            r->fd = -1;
            r->ent++;
            if (more > 0)
                return changed(e, disk, "it grew");
        }
    }
    r->sent += got;
    progress(r, false);
    return (long)got;
}

void upload_reader_done(upload_reader *r, bool ok)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    if (!r->shown)
        return;
    if (ok) {
        char a[32];
        human(r->sent, a, sizeof a);
        fprintf(stderr, "\rrnx: uploaded %s in %.1f s\033[K\n", a, (double)(mono_ms() - r->start_ms) / 1000);
    } else {
        fputc('\n', stderr);
    }
    fflush(stderr);
}

/* ---- the command's side ---------------------------------------------------------------------- */

/* Says once that setuid, setgid and sticky bits are not sent (jobs never get them). */
void upload_note_stripped(const upload_set *const *sets, size_t n)
{
    size_t count = 0;
    const char *first = NULL;
    for (size_t i = 0; i < n; i++) {
        count += sets[i]->stripped;
        if (!first)
            first = sets[i]->first_stripped;
    }
    if (count)
        print_textf(stderr, "rnx: note: setuid, setgid and sticky bits are not uploaded (%zu %s, e.g. %s); the "
                            "files keep their other mode bits\n", count, count == 1 ? "entry" : "entries", first);
}

/* Whether word, a relative path in the job's /work, lands under an uploaded top-level name. */
static bool upload_covers(const upload_set *u, const char *word)
{
    while (word[0] == '.' && word[1] == '/')
        for (word += 2; *word == '/'; word++)
            ;
    size_t len = strcspn(word, "/");
    for (size_t i = 0; i < u->nnames; i++)
        if (strlen(u->names[i]) == len && strncmp(u->names[i], word, len) == 0)
            return true;
    return false;
}

/* Whether word (the command or an argument) is a relative path to a regular file under dir
 * ("" the current directory) that no upload of u covers. */
static bool upload_left_behind(const upload_set *u, const char *dir, const char *w)
{
    struct stat st;
    if (!w || !*w || *w == '/' || *w == '-' || upload_covers(u, w))
        return false;
    char *path = NULL;
    if (*dir && asprintf(&path, "%s/%s", dir, w) < 0)
        return false;
    bool left = stat(path ? path : w, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    return left;
}

static bool upload_in_work(const char *workdir)
{
    return !workdir || !strcmp(workdir, "/work") || !strcmp(workdir, "/work/");
}

/* The first of words (a command and its arguments) that is a file under dir here (relative to
 * it; "" the current directory) that u does not send, *count how many are; NULL when the job's
 * working directory is not under /work (then where its files are is its own business). */
static const char *left_behind(const upload_set *u, const char *dir, const char *workdir, const char *const *words,
                               size_t n, size_t *count)
{
    const char *first = NULL;
    *count = 0;
    for (size_t i = 0; upload_in_work(workdir) && i < n; i++) {
        if (!upload_left_behind(u, dir, words[i]))
            continue;
        if (!first)
            first = words[i];
        (*count)++;
    }
    return first;
}

void upload_note_missing(const upload_set *u, const job_req *req)
{
    const char **words = xmalloc((req->nargs + 1) * sizeof *words);
    words[0] = req->command;
    for (size_t i = 0; i < req->nargs; i++)
        words[i + 1] = req->args[i];
    size_t count;
    const char *first = left_behind(u, "", req->workdir, words, req->nargs + 1, &count);
    if (first)
        print_textf(stderr,
                    "rnx: note: '%s'%s is a file here, but the job's /work holds only what --upload sends "
                    "(add --upload %s)\n",
                    first, count > 1 ? " (and others)" : "", first);
    free(words);
}

void upload_note_missing_wf(const upload_set *u, const char *dir, const char *job, json_t *request)
{
    json_t *args = json_object_get(request, "args");
    size_t n = json_array_size(args) + 1;
    const char **words = xmalloc(n * sizeof *words);
    words[0] = json_string_value(json_object_get(request, "command"));
    for (size_t i = 1; i < n; i++)
        words[i] = json_string_value(json_array_get(args, i - 1));
    size_t count;
    const char *first =
        left_behind(u, dir, json_string_value(json_object_get(request, "workdir")), words, n, &count);
    if (first)
        print_textf(stderr,
                    "rnx: note: job '%s': '%s'%s is a file beside the workflow, but the job's /work holds only "
                    "its uploads (add it to the job's uploads: [%s])\n",
                    job ? job : "?", first, count > 1 ? " (and others)" : "", first);
    free(words);
}

static int upload_send(rnx_client *c, json_t *accepted, const upload_set *const *sets, size_t n, json_t **out,
                       jerr *e)
{
    json_t *up = json_object_get(accepted, "upload");
    const char *path = json_string_value(json_object_get(up, "path"));
    json_t *bytes = json_object_get(up, "bytes");
    upload_reader rd;
    upload_reader_init(&rd, sets, n);
    if (!path || !json_is_integer(bytes) || (uint64_t)json_integer_value(bytes) != rd.total)
        return jerr_set(e, EPROTO, "joblet's answer does not name an upload of the %llu bytes listed",
                        (unsigned long long)rd.total);
    int rc = client_upload(c, path, rd.total, upload_read, &rd, out, e);
    upload_reader_done(&rd, rc == 0);
    return rc;
}

/* The files' PUT answered busy: nothing was made. Where the upload still waits (the PUT was
 * turned away before joblet read it: an account being looked up), the PUT goes again; where
 * joblet dropped it (its commit found the database locked by another process), the answer to
 * that PUT is 404 and the submission goes again from its POST. */
int upload_submit(rnx_client *c, const char *path, json_t *body, const upload_set *const *sets, size_t n,
                  json_t **out, jerr *e)
{
    int waited = 0;
    for (;;) {
        json_t *accepted = NULL;
        if (client_request(c, "POST", path, body, &accepted, e) < 0)
            return -1;
        if (!json_object_get(accepted, "upload")) {
            *out = accepted; /* no files: the submission is made */
            return 0;
        }
        bool again_put = false;
        int rc;
        do {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            rc = upload_send(c, accepted, sets, n, out, e);
            if (rc == 0 || (again_put && e->http == 404))
                break; /* sent, or dropped after a busy answer: from the POST again */
            /* the minute counts the files' sending too, after the pause (a first attempt says
             * so: client_busy_again): a large upload is not sent 60 times */
            clock_gettime(CLOCK_MONOTONIC, &t1);
            again_put = client_busy_again(c, e, &waited);
            waited += (int)(t1.tv_sec - t0.tv_sec);
            if (again_put)
                *e = (jerr){0};
        } while (again_put);
        json_decref(accepted);
        if (rc == 0 || !again_put)
            return rc;
        *e = (jerr){0};
    }
}
