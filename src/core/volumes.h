/* Volumes (docs/volumes.md): named storage that outlives jobs, mounted into a job at
 * /volumes/NAME. A filesystem volume is a sparse image file formatted ext4 and loop-mounted
 * (its size is a hard limit); a memory volume is a tmpfs. Each is mounted once, on the host,
 * under <volumes.dir>/<name>/mnt, and bound into the jobs that name it (the job's spec). What a
 * volume is (name, type, size, owner, created) is in the database; it is mounted again when
 * joblet starts. */
#ifndef JOBLET_VOLUMES_H
#define JOBLET_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../exec/spec.h"
#include "job.h"

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
    int64_t created_ms;
    enum volume_state state;
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
const char *volumes_state_name(enum volume_state s);

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
/* Removes a volume and its data. Refused while a job not yet ended names it (naming the
 * jobs), while it is being created, and for a caller who is neither its owner nor an admin. */
int volumes_remove(const char *name, uid_t uid, gid_t gid, jerr *e);

/* Every volume, by name; the one named (NULL when none). */
size_t volumes_count(void);
const volume *volumes_at(size_t i);
const volume *volumes_find(const char *name);
/* Whether the caller may see and use it: its owner, root and admins. */
bool volumes_allowed(const volume *v, uid_t uid, gid_t gid);
void volumes_usage(const volume *v, volume_usage *u);
/* The jobs not yet ended that name the volume, in submission order: how many, the first max
 * of them in out. */
size_t volumes_jobs(const char *name, const job **out, size_t max);

/* At submission: every volume the request names exists, is ready, and the caller may use it.
 * -1, refused on field "volumes", naming the volume and what would be accepted. */
int volumes_check(const job_req *req, uid_t owner, gid_t gid, jerr *e);
/* At start: the job's volumes as binds for its spec (src the host mount, dst /volumes/NAME),
 * appended to *mounts (grown with realloc; the caller frees src and dst of the new ones). */
int volumes_spec_mounts(const job *j, spec_mount **mounts, size_t *n, jerr *e);
/* A job's run is over (settle step): the memory volumes it named that no job not yet ended
 * names any more go away. */
void volumes_release(const job *j);

#endif
