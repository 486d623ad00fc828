/* Volumes (docs/volumes.md): named storage that outlives jobs, mounted into a job at
 * /volumes/NAME. A filesystem volume is a sparse image file formatted ext4 and loop-mounted
 * (its size is a hard limit); a memory volume is a tmpfs. Each is mounted once, on the host,
 * under <volumes.dir>/<name>/mnt, and bound into the jobs that name it (the job's spec). What a
 * volume is (name, type, size, owner, created) is in the database; it is mounted again when
 * joblet starts.
 *
 * A name is not an identity: a volume removed (or forgotten: a memory volume after a reboot)
 * and created again under its name, by anyone, is another volume. So a job request is checked
 * against the volumes it names when it is submitted, and *pins* them there (its volume_pins:
 * each one's owner and id); the job is created (after a streamed upload's last byte) and
 * started only with the volumes it pinned, which must still be usable by its owner; a volume
 * that is gone or another ends the job at its start (start_failed, naming the volume). What
 * keeps the name from passing meanwhile: a volume is refused removal while a job not yet
 * ended, an array with tasks still to make or a streamed upload still arriving names it. */
#ifndef JOBLET_VOLUMES_H
#define JOBLET_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../exec/spec.h"
#include "authz.h"
#include "job.h"

struct jarray;

enum volume_type { VOLUME_FILESYSTEM, VOLUME_MEMORY, VOLUME_TYPE_N };
enum volume_state {
    VOLUME_CREATING,     /* its image is being formatted (a child process); not usable yet */
    VOLUME_READY,        /* mounted: jobs may use it */
    VOLUME_UNAVAILABLE,  /* known but not mounted: why says what failed (at start) */
};

typedef struct volume {
    char name[65];
    enum volume_type type;
    uint64_t size_mb;
    uid_t owner_uid;
    gid_t owner_gid;
    int64_t created_ms;       /* also its id, which jobs pin: later than any id pinned under its
                               * name by a job not yet ended, so never taken for one before */
    enum volume_state state;
    uint32_t uploads;         /* streamed uploads still arriving that name it (volumes_hold) */
    bool release_owed;        /* a memory volume whose last job ended while an upload kept it */
    bool gone_owed;           /* ... or whose removal's commit failed: its delete is written again
                                 with the rows a failed commit lost (state.c's resync) */
    bool gone_in_txn;         /* that delete is in the open transaction */
    bool gone;                /* that delete was committed: unmounted and dropped next turn */
    char why[512];            /* VOLUME_UNAVAILABLE: what failed */
    char dir[700];            /* <volumes.dir>/<name> */
    char mnt[720];            /* dir/mnt: where it is mounted on the host */
    struct volume_run *run;   /* VOLUME_CREATING: the formatting child and who waits for it */
} volume;

/* What a volume holds now (statvfs of its mount); zeros when it is not mounted. */
typedef struct volume_usage {
    uint64_t capacity_bytes;  /* what files can use: the size less the filesystem's own */
    uint64_t used_bytes;
    uint64_t available_bytes;
    uint64_t image_bytes;     /* filesystem: disk blocks the sparse image takes on the host */
    char device[32];          /* filesystem: its loop device, e.g. /dev/loop3; "" none */
} volume_usage;

/* What `rnx volume create` asks for, typed at the API's edge. */
typedef struct volume_req {
    const char *name;
    enum volume_type type;
    uint64_t size_mb;
} volume_req;

/* The words of a type ("filesystem", "memory"), and what its lifetime is, for list. */
const char *volumes_type_name(enum volume_type t);
const char *volumes_type_note(enum volume_type t);
int volumes_type_parse(const char *s, enum volume_type *t);
/* The refusal of a size a volume of type t does not take, with the sizes it takes (400, field
 * size_mb); given: the size as the request had it ("0 MB", "'1.5'"). Returns -1. */
int volumes_size_refused(enum volume_type t, const char *given, jerr *e);
const char *volumes_state_name(enum volume_state s);
/* What the filesystem volumes whose images are on the filesystem dev may still take as they
 * fill, in MB (each is promised its whole size; one still being made, whole): a new /work image
 * (workfs.h) is no larger than what that disk has left besides. */
uint64_t volumes_promised_mb(dev_t dev);

/* At start, before jobs are re-adopted: the directory, the database's volumes mounted again
 * (a filesystem volume that cannot be is UNAVAILABLE, with why; a memory volume whose tmpfs
 * is gone went with a reboot and is forgotten), and leftovers of creations a crash cut short
 * removed. */
int volumes_init(jerr *e);
/* The daemon stops: formatting children are killed (the next start removes what they left). */
void volumes_shutdown(void);

/* Called with NULL once a volume being created is ready, or with why it could not be. */
typedef void (*volumes_done_fn)(void *arg, const jerr *e);
enum { VOLUMES_EXISTED = 0, VOLUMES_CREATED = 1, VOLUMES_PENDING = 2 };
/* Creates the volume for the caller, or finds it when it already exists exactly so (same
 * owner, type and size: creating is idempotent). VOLUMES_EXISTED or VOLUMES_CREATED: ready
 * now; VOLUMES_PENDING: its image is being formatted and done(arg, ...) is called when that
 * ends (done is not called otherwise); -1: refused, naming the field and what is accepted. */
int volumes_create(const volume_req *rq, uid_t uid, gid_t gid, volumes_done_fn done, void *arg, jerr *e);
/* Whether volumes_create would create the volume or find it as asked, creating nothing. */
int volumes_precheck(const volume_req *rq, uid_t uid, gid_t gid, jerr *e);
/* volumes_precheck of n volumes that one request creates, those it makes before each counted as
 * made (the user's count and shares, the machine's bounds): nothing is made unless all may be.
 * -1 with *at the one refused. */
int volumes_precheck_all(const volume_req *rqs, size_t n, uid_t uid, gid_t gid, size_t *at, jerr *e);
/* Whether creating these would wait (volumes_create's VOLUMES_PENDING): a filesystem volume
 * missing, or one being created. A request that cannot wait is told so before any is made. */
bool volumes_would_wait(const volume_req *rqs, size_t n);
/* Removes a volume and its data. Refused while a job not yet ended, an array with tasks still to
 * make or a streamed upload still arriving names it (naming the jobs, the arrays), while it is
 * being created, and for a caller who is neither its owner nor an admin. */
int volumes_remove(const char *name, const caller *who, jerr *e);

/* Every volume, by name; the one named (NULL when none). */
size_t volumes_count(void);
const volume *volumes_at(size_t i);
const volume *volumes_find(const char *name);
/* Whether the caller may see and use it: its owner, root and admins. */
bool volumes_allowed(const volume *v, const caller *who);
void volumes_usage(const volume *v, volume_usage *u);
/* The jobs not yet ended that use the volume (name it, and pinned this one), in submission
 * order: how many, the first max of them in out. */
size_t volumes_jobs(const volume *v, const job **out, size_t max);
/* The job arrays with tasks still to make (not made, not canceled) whose request uses the
 * volume, in submission order: their tasks will mount it. now_only: only those whose tasks may
 * be made now (not scheduled for later: what keeps a memory volume). How many, the first max
 * of them in out. Looks at the open arrays only (arrays_open), not every array kept. */
size_t volumes_arrays(const volume *v, bool now_only, const struct jarray **out, size_t max);

/* At submission: every volume the request names exists, is ready, and the job may use it, acting
 * as `as` (authz_as_account); each is then pinned in the request (volume_pins). -1, refused on
 * field "volumes", naming the volume and what would be accepted. */
int volumes_check(job_req *req, const caller *as, jerr *e);
/* When the job is created from a request checked before (a streamed upload's last byte, a
 * workflow's jobs): every volume it pinned is still there, the same, ready and the owner's to
 * use. -1 (409, field "volumes") naming the one that is not. */
int volumes_verify(const job_req *req, uid_t owner, gid_t gid, jerr *e);
/* A streamed upload whose request names volumes opens (hold true) or ends (false): while it is
 * open, the volumes it pinned count it as a user (not removed, a memory volume not released). */
void volumes_hold(const job_req *req, bool hold);
/* At start: the job's volumes as binds for its spec (src the host mount, dst /volumes/NAME),
 * appended to *mounts (grown with realloc; the caller frees src and dst of the new ones). Each
 * must be the one the job pinned and still usable by its owner; -1 naming the volume if not. */
int volumes_spec_mounts(const job *j, spec_mount **mounts, size_t *n, jerr *e);
/* A job's run is over (settle step): the memory volumes it used that nothing keeps any more
 * go away. What keeps one: a streamed upload still arriving, a job not yet ended that may run
 * now (running, queued, a workflow's pending job), or an array with tasks still to make that
 * may be made now (between two of its tasks no job uses it); not a job or an array scheduled
 * for later, which would hold the memory for as long as it likes (it fails at its start, naming
 * the volume). The open arrays are looked at only when a job that named a memory volume ends,
 * never at every turn of the loop. */
void volumes_release(const job *j);

#endif
