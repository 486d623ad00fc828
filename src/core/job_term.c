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
#include "jobs.h"

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
