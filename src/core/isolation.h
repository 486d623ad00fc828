/* Which isolation a job runs under (docs/sandbox.md): joblet's own namespaces ("native") or
 * gVisor's runsc ("gvisor"). What this machine offers is probed once at start (runsc's
 * version, its flags: nvproxy, systrap); each request is then decided by the machine's
 * default, isolation.require_gvisor and that probe, before the job is accepted. */
#ifndef JOBLET_ISOLATION_H
#define JOBLET_ISOLATION_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"

typedef struct isolation_caps {
    bool gvisor;              /* runsc found, answers, and its platform can run here */
    char runsc[256];          /* its path */
    char version[128];        /* what `runsc --version` says, "0.0~20221219.0" */
    bool nvproxy;             /* `runsc flags` lists --nvproxy: GPUs inside the sandbox */
    bool systrap;             /* the systrap platform exists */
    char platform[16];        /* the platform jobs get: isolation.platform, else systrap or ptrace */
    char why[300];            /* why gvisor is not available */
    char fault[300];          /* a known fault of this runsc release that jobs will meet, or "" */
} isolation_caps;

/* Checks the isolation.* keys and probes runsc. An error only for a configuration that
 * cannot be right (an unknown default or platform, a default of gvisor without runsc). */
int isolation_init(jerr *e);
const isolation_caps *isolation_caps_get(void);
/* runsc's --root, <state_dir>/runsc (a tmpfs, mounted at the first call): its state and the
 * jobs' bundles. */
const char *isolation_runsc_root(void);
/* At a clean stop: unmounts the runsc tmpfs when no gVisor job runs (has a shim); one that
 * runs keeps its sandbox's state there, for the next daemon. */
void isolation_shutdown(void);
/* The request's isolation, decided at submission: the user's own, else gvisor when
 * isolation.require_gvisor names the user (or one of their groups), else isolation.default;
 * gvisor is written into the request, native is left unwritten (NULL means native). Refused: native for such a user, gvisor where runsc is missing, a GPU
 * job under gVisor where runsc has no nvproxy (with the version found and the one needed). */
int isolation_decide(job_req *req, uid_t uid, gid_t gid, jerr *e);
/* A gVisor job's GPUs (of uid:gid's job: the advice leaves native out for a user isolation.require_gvisor
 * lists): refused (400 on field isolation) when this machine's runsc has no
 * nvproxy. At submission (isolation_decide) and for a change of a waiting job's request
 * (submit_check_change: an update gave a gVisor job the GPUs its submission was refused). */
int isolation_check_gpus(const job_req *req, uid_t uid, gid_t gid, jerr *e);
/* At a job's start, maybe long after its submission and under another configuration: a native
 * job whose owner isolation.require_gvisor names now (the account's groups as they are now, and
 * the group it was submitted with) is refused (403), as its submission would be. */
int isolation_recheck(const job_req *req, uid_t uid, gid_t gid, jerr *e);
/* True when the request runs under gVisor (as isolation_decide wrote it: NULL is native). */
bool isolation_gvisor(const job_req *req);
/* True when the request asks for any GPU (after the CDI names became gpu_ids). */
bool isolation_wants_gpus(const job_req *req);
/* {"default", "modes": [{"name", "available", "why"?, "runsc"?, "version"?, "platform"?,
 * "nvproxy"?}]} for GET /v1/version. */
json_t *isolation_json(void);

#endif
