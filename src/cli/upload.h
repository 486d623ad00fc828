/* --upload paths (and a workflow's uploads:): walked into the listing of a submit request
 * (path, type, mode, size, target: no content), then their files' bytes read in pieces and
 * sent after it (PUT /v1/uploads/{id}, docs/api.md "Streamed uploads"). No file is ever held
 * whole in memory. */
#ifndef JOBLET_UPLOAD_H
#define JOBLET_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "client.h"

typedef struct upload_src {
    char *disk;           /* the entry on this machine (a file's bytes are read from it) */
    bool follow;          /* a file named on the command line through a symlink */
} upload_src;

typedef struct upload_set {
    jobreq_upload *ents;  /* the listing, directories before their contents */
    upload_src *src;      /* one per entry */
    size_t n, cap;
    uint64_t bytes;       /* total size of the files' contents */
    size_t nfiles;
    size_t stripped;      /* entries whose setuid, setgid or sticky bits are not sent */
    char *first_stripped; /* the first of them, on this machine */
    /* top-level names taken so far, to refuse two uploads landing on the same path */
    char **names;
    char **sources;
    size_t nnames;
} upload_set;

void upload_init(upload_set *u);
/* Adds a file, directory (recursively) or symlink. The job sees it under its last path
 * component: /a/b/x.py as x.py, /a/data/ as data/... A symlink named on the command line is
 * followed (the caller meant its target); symlinks found inside directories are sent as
 * symlinks. Returns -1 with e->msg set ("--upload: /nope: No such file or directory"). */
int upload_add(upload_set *u, const char *path, jerr *e);
/* Once every path is added: every symlink must stay inside the job's /work (the daemon checks
 * again), then the listing goes into req. "--upload: /data/pw: a symlink to '/etc/shadow', ..." */
int upload_finish(upload_set *u, job_req *req, jerr *e);
void upload_free(upload_set *u);

/* Reads the files of one or more sets (a workflow's jobs, in order) as one stream, exactly the
 * bytes listed: a file that changed size since it was listed stops it. Progress (bytes and %)
 * goes to stderr when stderr is a terminal and the upload takes more than a moment. */
typedef struct upload_reader {
    const upload_set *const *sets;
    size_t nsets, set, ent;
    int fd;               /* the file being read, -1 */
    uint64_t left;        /* its bytes still to read */
    uint64_t total, sent;
    int64_t start_ms, shown_ms;
    bool tty, shown;
} upload_reader;

void upload_reader_init(upload_reader *r, const upload_set *const *sets, size_t nsets);
/* Up to cap bytes into buf; 0 at the end, -1 with e set on a read error or a changed file. */
long upload_read(void *reader, char *buf, size_t cap, jerr *e);
/* Closes what is open; ends the progress line with what was sent (ok: all of it). */
void upload_reader_done(upload_reader *r, bool ok);

/* Says on stderr, once, that setuid, setgid and sticky bits were not sent (jobs never get
 * them), when some entry had them. */
void upload_note_stripped(const upload_set *const *sets, size_t n);
/* Says on stderr, once, when the command or an argument is a relative path to a regular file
 * of this machine's current directory that is not uploaded: the job's /work holds only what is
 * (a Slurm user expects the submit directory), so such a job fails however often it runs. Only
 * for jobs working in /work (no other --workdir). */
void upload_note_missing(const upload_set *u, const job_req *req);
/* The same for a workflow's job (its name, and its request as the workflow's body holds it):
 * relative paths are looked for in dir, the workflow file's directory ("" the current one),
 * where its uploads are read from; the note names the job's uploads: key. */
void upload_note_missing_wf(const upload_set *u, const char *dir, const char *job, json_t *request);
/* POST body to path (a submission: /v1/jobs, /v1/workflows); when joblet answers 202 ({"upload":
 * {"path", "bytes", ...}}), the files of sets, in order, sent with PUT. *out is the final answer
 * (the job or the workflow). A busy answer to either (nothing was made: common/err.h jerr_busy)
 * is asked again as client_request asks, the files read again. Errors as client_request. */
int upload_submit(rnx_client *c, const char *path, json_t *body, const upload_set *const *sets, size_t n,
                  json_t **out, jerr *e);

#endif
