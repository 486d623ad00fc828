/* Building, importing and removing runtimes (runtime_build.c; docs/runtimes.md). The work is
 * done by joblet-runtime-build, a child process in a sandbox of its own (exec/rtbuild_main.c);
 * the daemon watches its pidfd and output pipes from the event loop, so it serves everyone
 * while a build runs. One build or import at a time; the last few are remembered with their
 * logs (runtime_log.c streams them). A new tree is made beside the runtimes as
 * .build-<name>/ or .import-<id>/ and renamed into place when it is complete. */
#ifndef JOBLET_RUNTIME_BUILD_H
#define JOBLET_RUNTIME_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/rtprogress.h"
#include "loop.h"
#include "runtimes.h"

#define RT_BUILDS_KEPT 16          /* builds remembered (and their logs on disk) */
#define RT_LOG_MAX (16u << 20)     /* a build's log stops growing here (the rest is counted) */

enum rt_build_state { RTB_RUNNING, RTB_SUCCEEDED, RTB_FAILED };

struct rt_follower;

typedef struct rt_build {
    unsigned id;
    bool import;              /* from an archive, not from a recipe */
    bool replace;             /* it may replace an installed runtime of its name */
    char name[65];            /* "" for an import until its manifest has been read */
    char recipe_sha256[72];   /* "" for an import */
    char source[128];         /* the recipe's file name, as rnx gave it */
    uid_t uid;                /* who asked */
    enum rt_build_state state;
    bool from_cache;          /* the helper found the recipe's archive in the cache */
    int64_t started_ms, ended_ms;
    char error[768];          /* why it failed */
    rtprogress progress;      /* read from the log's lines as they come */
    char dir[720];            /* where the helper works: .build-<name>, .import-<id> */
    char log_path[720];       /* <runtimes.dir>/.logs/<id>.log */
    int log_fd;               /* appended to while it runs, -1 after */
    uint64_t log_bytes, log_dropped;
    char line[4096];          /* the line being assembled from the helper's output */
    size_t nline;
    char last_line[256];      /* the last whole line: a failure without a result quotes it */
    pid_t pid;
    watch w_pid, w_out, w_result, w_timer;
    char result[1024];        /* what the helper said on fd 3 */
    size_t nresult;
    struct rt_follower *followers;
} rt_build;

/* Creates the cache and log directories and removes what an earlier joblet left half done. */
int runtime_build_init(jerr *e);
/* The builds remembered, oldest first; the one running, if any. */
rt_build *const *runtime_build_list(size_t *n);
rt_build *runtime_build_find(unsigned id);
rt_build *runtime_build_running(void);

/* How a build may go: replace an installed runtime of its name built from another recipe;
 * fresh: from the mirror even when that recipe is installed or cached (newer packages). */
enum { RTB_REPLACE = 1, RTB_FRESH = 2 };
/* Starts building the recipe text (already read by the caller, who checked it is an admin).
 * 1 and *installed when a runtime of that name built from the same recipe is installed
 * already (nothing to do, unless RTB_FRESH); 0 and *out when the build started; -1 with e
 * (400 naming the recipe's field, 409 when a build is running or the name is taken or in
 * use, 503 without mmdebstrap/debootstrap). */
int runtime_build_start(const char *text, size_t len, const char *source, unsigned how, uid_t uid,
                        const runtime **installed, rt_build **out, jerr *e);
/* An open, unnamed file in the runtimes' directory for an archive being uploaded; -1 with e. */
int runtime_build_import_file(jerr *e);
/* Starts importing the archive in fd (runtime_build_import_file's, written; the caller keeps its
 * copy); -1 with e. */
rt_build *runtime_build_import(int fd, bool replace, uid_t uid, jerr *e);
/* A 409 naming who holds the build slot, when a build or import runs; 0 when none does. */
int runtime_build_busy(jerr *e);

/* Each user of runtime name, in the order kept: every job not ended that names it, then every
 * array with tasks still to make that does (its tasks are made with it), then every streamed
 * submission still waiting for its bytes that does (by its upload's id: its job is made with it,
 * unchecked, once they came): fn(id, owner, arg). */
void runtime_build_each_user(const char *name, void (*fn)(const char *id, uid_t owner, void *arg), void *arg);
/* The jobs that have not ended, the arrays with tasks not made yet and the uploads still
 * arriving that name the runtime:
 * up to 10 short ids into ids (", " separated, at most len bytes); returns how many there are. */
size_t runtime_build_users(const char *name, char *ids, size_t len);
/* Removes an installed runtime: refused (409) while jobs use it or a build of it runs, and for
 * runtimes.default. The tree is renamed away at once and deleted by a helper. */
int runtime_build_remove(const char *name, jerr *e);
/* The archive of a runtime in the cache (what rnx runtime export downloads): its path and
 * size; -1 with e (404) when the cache has none. */
int runtime_build_archive(const runtime *rt, char *path, size_t len, uint64_t *size, jerr *e);

/* The daemon stops: builds are killed (the next joblet removes their trees). */
void runtime_build_shutdown(void);

#endif
