/* GET /v1/jobs answered a slice at a time (jobs_list.c). */
#ifndef JOBLET_JOBS_LIST_H
#define JOBLET_JOBS_LIST_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "../core/job.h"
#include "../core/authz.h"

/* What the listing keeps (the route has checked it). */
typedef struct jobs_list_filter {
    caller who;           /* whose jobs it may list (core/authz.h: AUTHZ_OTHERS_JOBS) */
    bool by_user, by_state, by_gpu;
    uid_t user;
    enum job_state state;
    const char *gpu_uuid; /* a GPU's or a MIG device's UUID (copied) */
    int64_t since_ms;     /* created at or after; 0: any */
    bool expand;          /* an array's made tasks each on a line of their own, besides its own */
    uint64_t keys;        /* the keys each item has (core/job_json.h: ?fields; JOB_JSON_ALL: all) */
} jobs_list_filter;

/* Answers 200 with {"jobs": [...]} (a job array is one item, "kind": "array", its tasks left
 * out unless expand): the jobs that match are picked now (their seqs), then
 * written JOBS_LIST_SLICE per turn of the loop. */
enum MHD_Result jobs_list_reply(struct MHD_Connection *conn, const jobs_list_filter *f);
/* The server stops: listings not over end at once (their connections are resumed, then closed
 * short of their end). */
void jobs_list_stop(void);

#endif
