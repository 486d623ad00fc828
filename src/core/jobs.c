#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../sched/sched.h"
#include "core.h"

core C;

static bool visible(const job *j, uid_t caller) { return caller == 0 || j->owner_uid == caller; }

job *core_find(const char *id, uid_t caller, jerr *e)
{
    size_t len = id ? strlen(id) : 0;
    if (len == 0 || len > 36 || strspn(id, "0123456789abcdef-") != len) {
        jerr_http(e, 404, "no job '%s': a job id is a UUID or a unique prefix of one (hex digits and '-')",
                  id ? id : "");
        return NULL;
    }
    job *found = NULL;
    char others[256] = "";
    size_t nmatch = 0, no = 0;
    for (size_t i = 0; i < C.njobs; i++) {
        job *j = C.jobs[i];
        if (strncmp(j->id, id, len) != 0 || !visible(j, caller))
            continue;
        if (len == 36)
            return j;
        if (nmatch++ < 4)
            no += (size_t)snprintf(others + no, sizeof others - no, "%s%s", no ? ", " : "", j->id);
        found = j;
    }
    if (nmatch == 0) {
        jerr_http(e, 404, "no job matches '%s'", id);
        return NULL;
    }
    if (nmatch > 1) {
        e->code = EEXIST;
        jerr_http(e, 409, "'%s' matches %zu jobs (%s%s); type more of the id", id, nmatch, others,
                  nmatch > 4 ? ", …" : "");
        return NULL;
    }
    return found;
}

void core_add(job *j)
{
    if (C.njobs == C.cap) {
        C.cap = C.cap ? C.cap * 2 : 256;
        C.jobs = realloc(C.jobs, C.cap * sizeof *C.jobs);
        if (!C.jobs)
            abort();
    }
    C.jobs[C.njobs++] = j;
    if (j->seq >= C.next_seq)
        C.next_seq = j->seq + 1;
}

void core_remove(job *j)
{
    for (size_t i = 0; i < C.njobs; i++)
        if (C.jobs[i] == j) {
            memmove(&C.jobs[i], &C.jobs[i + 1], (C.njobs - i - 1) * sizeof *C.jobs);
            C.njobs--;
            return;
        }
}

void job_free(job *j)
{
    if (!j)
        return;
    free(j->name);
    jobreq_free(&j->req);
    free(j->signal_name);
    free(j->end_reason);
    free(j->error);
    free(j->fail_reason);
    grant_list_free(&j->gpus);
    free(j);
}

void core_job_dir(const job *j, char *out, size_t len) { snprintf(out, len, "%s/%s", C.jobs_dir, j->id); }

void job_save(job *j)
{
    jerr e = {0};
    if (db_update_job(C.db, j, &e) < 0)
        log_err("%s", e.msg);
}

void job_requeue(job *j)
{
    if (j->holds_room && C.running > 0)
        C.running--;
    j->holds_room = false;
    core_gpu_release(j);
    grant_list_free(&j->gpus); /* it holds none while it waits; the log keeps what it had */
    j->state = JS_PREEMPTED;
    j->preempting = false;
    j->preemptions++;
    j->init_pid = 0;
    j->has_exit = false;
    j->signal = 0;
    free(j->signal_name);
    j->signal_name = NULL;
    free(j->end_reason);
    j->end_reason = xstrdup("preempted");
    j->ended_ms = 0;
    j->started_ms = 0;
    /* The next run's shim writes these afresh; /work and the logs carry on (a checkpoint the
     * job wrote to /work is there when it runs again). */
    char dir[700], path[760];
    core_job_dir(j, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/status.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/started", dir);
    unlink(path);
    job_save(j);
    log_info("job %s PREEMPTED (run %u ended); waiting in the queue again", j->id, j->preemptions);
}

void job_finish(job *j, enum job_state st, const char *reason)
{
    j->state = st;
    if (reason) {
        free(j->end_reason);
        j->end_reason = xstrdup(reason);
    }
    if (!j->ended_ms)
        j->ended_ms = now_ms();
    if (j->holds_room && C.running > 0)
        C.running--;
    j->holds_room = false;
    core_gpu_release(j);
    /* The last running job ended: a second later, if still idle, the memory of the busy
     * period goes back to the system (main.c). */
    if (C.running == 0)
        C.trim_at_ms = now_ms() + 1000;
    j->init_pid = 0;
    job_save(j);
    logstream_wake(j);
    char ec[32] = "";
    if (j->has_exit)
        snprintf(ec, sizeof ec, ", exit code %d", j->exit_code);
    log_info("job %s %s (%s%s)", j->id, job_state_name(st), reason ? reason : "", ec);
    workflow_job_changed(j);
}

