/* A job's terminal, the daemon's side (job_term.h). */
#include "job_term.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../exec/shim.h"
#include "audit.h"
#include "job_events.h"
#include "jobs.h"
#include "state.h"

int job_term_check(const job *j, const caller *who, jerr *e)
{
    char what[96];
    snprintf(what, sizeof what, "attaching to another user's job (%.8s)", j->id);
    if (!authz_may_on(who, AUTHZ_OTHERS_TERMINALS, j->owner_uid))
        return authz_check(who, AUTHZ_OTHERS_TERMINALS, what, e);
    if (!j->req.tty && !j->req.stdin_open)
        return jerr_http(e, 409, "job %.8s has no terminal: it was run without -t and -i (\"tty\", \"stdin\"); "
                                 "rnx job log %.8s shows its output", j->id, j->id);
    if (job_state_terminal(j->state))
        return jerr_http(e, 409, "job %.8s has ended (%s); rnx job log %.8s shows its output", j->id,
                         job_state_name(j->state), j->id);
    return 0;
}

int job_term_admit(const job *j, const caller *who, size_t on_job, size_t of_user, jerr *e)
{
    if (on_job >= core.cfg.max_attachers)
        return jerr_http(e, 429, "job %.8s has %zu terminals attached; jobs.max_attachers is %llu: detach one first",
                         j->id, on_job, (unsigned long long)core.cfg.max_attachers);
    uint32_t cap = core.cfg.limits.attach_per_user;
    if (cap && of_user >= cap && !authz_may(who, AUTHZ_UNLIMITED))
        return jerr_http(e, 429, "uid %u has %zu terminals attached; limits.attach_sessions_per_user is %u: detach "
                                 "one first", (unsigned)who->uid, of_user, cap);
    return 0;
}

void job_term_who(const caller *who, char *out, size_t len)
{
    if (who->via == CALLER_TLS && who->person[0])
        snprintf(out, len, "%s (uid %u)", who->person, (unsigned)who->uid);
    else
        snprintf(out, len, "uid %u", (unsigned)who->uid);
}

/* The event, when the job is still there. */
static void term_event(const char *id, const caller *who, enum job_event ev, const char *what)
{
    jerr e = {0};
    job *j = jobs_find(id, who, &e);
    if (j)
        job_event(j, ev, who->uid == (uid_t)-1 ? -1 : (int64_t)who->uid, "%s", what);
}

void job_term_attached(const char *id, const caller *who, bool types)
{
    char name[128], what[200];
    job_term_who(who, name, sizeof name);
    snprintf(what, sizeof what, "by %s, %s", name, types ? "asking to type" : "watching only");
    term_event(id, who, JE_ATTACHED, what);
    audit_caller("attach", who, id, what);
}

void job_term_detached(const char *id, const caller *who, const char *why)
{
    char name[128], what[300];
    job_term_who(who, name, sizeof name);
    snprintf(what, sizeof what, "by %s: %s", name, why);
    term_event(id, who, JE_DETACHED, what);
    audit_caller("detach", who, id, what);
}

int job_term_connect(job *j, int *fd, jerr *e)
{
    *fd = -1;
    if (job_state_terminal(j->state))
        return jerr_http(e, 409, "job %.8s has ended (%s)", j->id, job_state_name(j->state));
    if (j->shim_pid <= 0)
        return 0; /* still waiting for its turn */
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    /* through the directory's fd: its path may be longer than sun_path holds */
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? 0 : jerr_sys(e, "job %.8s's directory", j->id);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dfd, SHIM_ATTACH);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = s < 0 ? -1 : connect(s, (struct sockaddr *)&sa, sizeof sa);
    int err = errno;
    close(dfd);
    if (rc == 0) {
        *fd = s;
        return 1;
    }
    if (s >= 0)
        close(s);
    /* not listening yet (its "T" is to come) or no more (the job is ending): its waiters hear */
    if (s >= 0 && (err == ENOENT || err == ECONNREFUSED))
        return 0;
    if (err == EAGAIN)
        return jerr_http(e, 503, "job %.8s's terminal takes no more clients now; try again in a moment", j->id);
    errno = err;
    return jerr_sys(e, "connect to job %.8s's terminal", j->id);
}

void job_term_wait(job *j, job_term_waiter *w, void (*fn)(void *arg), void *arg)
{
    job_term_unwait(w);
    w->fn = fn;
    w->arg = arg;
    w->j = j;
    w->next = j->term_waiters;
    j->term_waiters = w;
}

void job_term_unwait(job_term_waiter *w)
{
    if (!w->j)
        return;
    for (job_term_waiter **p = &w->j->term_waiters; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->j = NULL;
}

void job_term_wake(job *j)
{
    job_term_waiter *w = j->term_waiters;
    j->term_waiters = NULL; /* a waiter may wait again: on a list of its own */
    while (w) {
        job_term_waiter *next = w->next;
        w->j = NULL;
        w->fn(w->arg);
        w = next;
    }
}

int job_term_exit_code(const job *j)
{
    if (j->has_exit)
        return j->exit_code;
    if (j->signal > 0 && j->signal < 128)
        return 128 + j->signal;
    return 1;
}

void job_term_why(const job *j, char *out, size_t len)
{
    snprintf(out, len, "job %.8s ended (%s%s%s%s%s) before its terminal could be attached", j->id,
             job_state_name(j->state),
             j->end_reason ? ", " : "", j->end_reason ? j->end_reason : "", j->error ? ": " : "",
             j->error ? j->error : "");
}
