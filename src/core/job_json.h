/* A job as the API and rnx see it (job_json.c): JSON at the API's edge. */
#ifndef JOBLET_JOB_JSON_H
#define JOBLET_JOB_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* Its id, name, state, request (secrets masked), GPUs, placement, usage, times, and while it
 * waits its queue position and reason. */
json_t *job_json(const job *j);

/* The top-level keys of a job's object, in its order, then those only an array's line has
 * (core/array_json.h: "kind", "request"): a listing may ask for some of them (GET
 * /v1/jobs?fields=id,status), each a bit of a mask, JOB_KEY_<key>. */
#define JOB_JSON_KEYS(X)                                                                                    \
    X(id) X(number) X(name) X(status) X(owner_uid) X(uid) X(gid) X(command) X(args) X(env) X(secret_env)   \
    X(workdir) X(network) X(isolation) X(tty) X(stdin) X(slurm_env) X(runtime) X(volumes) X(hostname)      \
    X(limits) X(uploads) X(created_at) X(scheduled_at) X(started_at) X(ended_at) X(exit_code) X(signal)    \
    X(signal_name) X(end_reason) X(stopped_by) X(error) X(gpu_fault) X(pid) X(shim_pid) X(priority)       \
    X(queue_position) X(after) X(after_any) X(preemptions) X(requeuing) X(suspended_ms) X(freezing)        \
    X(slurm) X(workflow) X(array) X(preemptible) X(wait_reason) X(usage) X(work) X(gpus) X(gpu_locality)   \
    X(gpu_request) X(kind) X(request)
enum job_json_key {
#define JOB_KEY_ENUM(k) JOB_KEY_##k,
    JOB_JSON_KEYS(JOB_KEY_ENUM)
#undef JOB_KEY_ENUM
    JOB_KEY_N
};
_Static_assert(JOB_KEY_N <= 64, "a job's keys are bits of a uint64_t");
#define JOB_JSON_ALL UINT64_MAX

/* job_json with only the keys whose bits keys has (JOB_JSON_ALL: job_json): what is left out
 * is not made (a listing that prints a table asks for no /work usage: a stat and a statfs a
 * job). */
json_t *job_json_pick(const job *j, uint64_t keys);
/* The bit of a key (name: len bytes, not NUL-terminated), -1 when it is none of them. */
int job_json_key(const char *name, size_t len);
/* Every key, ", " between them, into out (truncated to outlen): what ?fields accepts. */
void job_json_key_list(char *out, size_t outlen);
/* Removes from o (a job's or an array's object) every key whose bit keys lacks. */
void job_json_keep(json_t *o, uint64_t keys);
/* What a request waits for (rnx job run --after; a job's or an array's), each with its state now
 * (null: not known, as for a job that left PENDING before joblet last started). */
json_t *job_json_after(const job_req *r, const uint64_t *after_seq);

#endif
