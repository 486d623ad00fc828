/* Attached connections (attach.h). Each is a session on the loop: the client's socket (given
 * by libmicrohttpd after the 101; for TLS the TCP socket, whose TLS session joblet reads and
 * writes itself from the 101 on: tls.h, tls_upgraded_take) and the shim's (core/
 * job_term.h), both edge-triggered and non-blocking, and a bounded buffer each way. The relay
 * moves bytes as they are: the frames are the client's and the shim's business, but for the
 * two that joblet writes itself when the job ended before its terminal could be reached (a
 * line on stderr and the exit frame). */
#include "attach.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/termframe.h"
#include "../common/util.h"
#include "../core/connfds.h"
#include "../core/job_ctl.h"
#include "../core/job_exec.h"
#include "../core/job_term.h"
#include "../core/jobs.h"
#include "../core/loop.h"
#include "../core/state.h"
#include "query.h"
#include "reply.h"
#include "tls.h"
#include "wsframe.h"

#define BUF (64u << 10)       /* each way: what one session holds at most */
#define SLICE 32              /* moves per call before the rest waits for the next turn */
#define LINGER_S 5            /* after the shim's end: how long the client may take to close */

typedef struct attach {
    char id[37];
    caller who;
    http_ctx *ctx;            /* the connection's route state, until it is upgraded */
    struct MHD_UpgradeResponseHandle *urh;
    int cfd, sfd, tfd, ifd;   /* client, shim, linger timer, idle timer; -1 none */
    watch wc, ws, wt, wi;
    bool c_in, c_out, s_in, s_out; /* readiness, as edge-triggered epoll told it */
    bool c_end, s_end;        /* the client went away (or broke); the shim's side ended */
    bool lingering, done;
    bool keys_after;          /* ended as idle: what the client types until it has the note (and
                                 closes) still goes to the shim, whose side stays open meanwhile */
    bool tls;                 /* over the TLS listener: cfd is the TCP socket, read and written
                                 through tls_s (tls_upgraded_recv, _send) */
    gnutls_session_t tls_s;
    bool types;               /* it asked to type (not ?stdin=0) */
    bool attached;            /* upgraded: its attach and detach are recorded */
    bool s_shut;              /* the shim's side takes nothing more (its reading end closed) */
    bool exec;                /* an exec's stream (its helper's socket): not an attacher, and
                                 recorded as an exec (core/job_exec.c), not as an attach */
    uint64_t exec_serial;     /* the exec's number (job_exec_running) */
    unsigned fds;             /* taken from the connections' count (core/connfds.h), given back at its end */
    bool websocket, ws_closing, ws_bye; /* a WebSocket (the console's terminal, GET with Upgrade:
                              * websocket); the browser closed or broke it (our close queued,
                              * the end once it is out); the job's end said with a close */
    wsframe_reader wr;        /* the browser's frames */
    const char *why;          /* why it ends, for the job's events: NULL a detach */
    bool s_exit;              /* the shim's exit frame went by (follow_frames): the run ended */
    int64_t last_ms;          /* when a byte last moved either way (jobs.terminal_idle_timeout_s) */
    unsigned char f_hdr[TERMFRAME_HDR]; /* the shim's stream, followed to its frame boundaries: */
    size_t f_hdr_n, f_left;   /* header bytes seen, payload bytes to come (both 0: at one) */
    char up[BUF], down[BUF];  /* client → shim, shim → client */
    size_t up_len, down_len;
    job_term_waiter waiter;
    loop_task task;           /* the rest of a slice, a wake-up, or the free */
    struct attach *next;
} attach;

static attach *sessions;     /* from the 101 queued on (counted against the bounds) */
static bool stopping;        /* joblet stops: the ends are not recorded */

static void unlist(attach *a)
{
    for (attach **p = &sessions; *p; p = &(*p)->next)
        if (*p == a) {
            *p = a->next;
            return;
        }
}

/* Why a session whose run ended ends, for the job's events. */
static const char *run_end_why(const attach *a)
{
    /* (a run ended by rnx job requeue or a preemption: the job goes on, in the queue) */
    const job *j = jobs_by_id(a->id);
    bool requeued = j && (job_ctl_requeuing(j) || j->state == JS_PREEMPTED || j->state == JS_HELD ||
                          job_state_waiting(j->state));
    return requeued ? "its run ended: the job went back to the queue (requeued)" : "the job ended";
}

/* Everything let go; the memory at the next turn (events of this turn may still name it). */
static void end(attach *a)
{
    if (a->done)
        return;
    a->done = true;
    if (!a->why && a->s_exit && !a->exec)
        a->why = run_end_why(a); /* (the client took the exit frame and closed before the shim's end was read) */
    if (a->attached && !stopping)
        job_term_detached(a->id, &a->who, a->why ? a->why : "detached");
    job_term_unwait(&a->waiter);
    watch *ws[] = {&a->wc, &a->ws, &a->wt, &a->wi};
    for (size_t i = 0; i < ARRAY_LEN(ws); i++)
        if (ws[i]->fd >= 0)
            loop_del(ws[i]);
    if (a->sfd >= 0)
        close(a->sfd);
    if (a->tfd >= 0)
        close(a->tfd);
    if (a->ifd >= 0)
        close(a->ifd);
    a->sfd = a->tfd = a->ifd = -1;
    connfds_give(a->who.uid, a->fds);
    a->fds = 0;
    if (a->urh)
        MHD_upgrade_action(a->urh, MHD_UPGRADE_ACTION_CLOSE); /* libmicrohttpd closes the client's socket */
    a->urh = NULL;
    unlist(a);
    loop_later(&a->task);
}

/* Follows the shim's stream to its frame boundaries: joblet may put a frame of its own between
 * the shim's only there. */
static void follow_frames(attach *a, const unsigned char *p, size_t n)
{
    while (n) {
        if (a->f_left) {
            size_t k = n < a->f_left ? n : a->f_left;
            a->f_left -= k;
            p += k;
            n -= k;
            continue;
        }
        a->f_hdr[a->f_hdr_n++] = *p++;
        n--;
        if (a->f_hdr_n == TERMFRAME_HDR) {
            a->s_exit |= a->f_hdr[0] == TERMFRAME_EXIT;
            a->f_left = (size_t)a->f_hdr[1] << 24 | (size_t)a->f_hdr[2] << 16 | (size_t)a->f_hdr[3] << 8 | a->f_hdr[4];
            a->f_hdr_n = 0;
        }
    }
}

/* Over a WebSocket: the shim's bytes into down, each channel frame one binary message, sent in
 * pieces as its bytes come (a first frame, continuations, the one with fin at the frame's end).
 * The caller leaves room for 2n + 8 bytes (a piece has at least one byte, a header at most 4). */
static void ws_down(attach *a, const unsigned char *p, size_t n)
{
    while (n) {
        bool first = !a->f_hdr_n && !a->f_left, fin = false;
        size_t k = 0;
        while (k < n && !fin) {
            if (a->f_left) {
                size_t t = n - k < a->f_left ? n - k : a->f_left;
                a->f_left -= t;
                k += t;
                fin = !a->f_left;
                continue;
            }
            follow_frames(a, p + k++, 1);
            fin = !a->f_hdr_n && !a->f_left;
        }
        unsigned char *o = (unsigned char *)a->down + a->down_len;
        size_t hn = wsframe_header(o, first ? WSFRAME_BINARY : WSFRAME_CONT, fin, k);
        memcpy(o + hn, p, k);
        a->down_len += hn + k;
        p += k;
        n -= k;
    }
}

/* Over a WebSocket: what the browser sent (n bytes at raw): its messages' payloads to the shim,
 * pongs and the close (which ends the session once out) to the client. */
static void ws_up(attach *a, unsigned char *raw, size_t n)
{
    const char *why;
    if (wsframe_take(&a->wr, raw, n, a->up, &a->up_len, a->down, &a->down_len, BUF, &why))
        a->ws_closing = true;
    if (why)
        log_debug("job %s: a console terminal's WebSocket closed: %s", a->id, why);
}

/* A frame of joblet's own (header and payload, n bytes; over a WebSocket one message), when it
 * fits with room more to spare. */
static bool put_own(attach *a, const unsigned char *f, size_t n, size_t spare)
{
    unsigned char h[WSFRAME_HDR_MAX];
    size_t hn = a->websocket ? wsframe_header(h, WSFRAME_BINARY, true, n) : 0;
    if (a->ws_closing || a->down_len + hn + n + spare > BUF) /* (nothing after a close of ours) */
        return false;
    memcpy(a->down + a->down_len, h, hn);
    memcpy(a->down + a->down_len + hn, f, n);
    a->down_len += hn + n;
    return true;
}

/* A line of joblet's own on the client's stderr channel, when it fits with room more to spare. */
static bool put_line(attach *a, const char *line, size_t spare)
{
    unsigned char f[TERMFRAME_HDR + 1200];
    size_t n = strnlen(line, sizeof f - TERMFRAME_HDR);
    termframe_put(f, TERMFRAME_STDERR, (uint32_t)n);
    memcpy(f + TERMFRAME_HDR, line, n);
    return put_own(a, f, TERMFRAME_HDR + n, spare);
}

/* The job's end, said by joblet: a line on stderr, then the exit frame, as a shim would. */
static void say_end(attach *a, const char *why, int code)
{
    char line[1200];
    snprintf(line, sizeof line, "joblet: %s\r\n", why);
    unsigned char f[TERMFRAME_HDR + 4];
    termframe_exit(f, code);
    if (put_line(a, line, sizeof f + WSFRAME_HDR_MAX))
        put_own(a, f, sizeof f, 0);
    a->s_end = true;
}

/* The session ends LINGER_S from now (on_linger), unless this is asked again meanwhile. */
static void end_in_linger(attach *a)
{
    if (a->done)
        return; /* (ended meanwhile: its timer would outlive it) */
    if (a->tfd < 0) {
        a->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        a->wt.fd = a->tfd;
        if (a->tfd < 0 || loop_add(&a->wt) < 0) {
            a->wt.fd = -1;
            end(a);
            return;
        }
    }
    struct itimerspec it = {.it_value = {.tv_sec = LINGER_S}};
    if (timerfd_settime(a->tfd, 0, &it, NULL) < 0)
        end(a);
}

/* The shim's side is over and the client has what there was: no more from us (shutdown; over
 * TLS the session's close_notify, the socket left open for libmicrohttpd to close), and the
 * client, which closes on the exit frame, has LINGER_S to do so (what it sends meanwhile is read
 * and dropped: a socket closed with unread bytes resets, and its last bytes could be lost). */
static void linger(attach *a)
{
    a->lingering = true;
    if (a->tls)
        tls_upgraded_bye(a->tls_s); /* (one that does not go out now: libmicrohttpd's, at the end) */
    else
        shutdown(a->cfd, SHUT_WR);
    end_in_linger(a);
}

/* Moves what can move, up to SLICE steps; the rest at the next turn. */
static void pump(attach *a)
{
    if (a->done)
        return;
    int steps = 0;
    for (bool moved = true; moved && steps < SLICE; steps++) {
        moved = false;
        /* (over TLS only with room for a whole record: tls.h) */
        bool keys = !a->lingering || a->keys_after; /* (else read and dropped: linger) */
        size_t c_room = keys ? BUF - a->up_len : TLS_RECORD_MAX;
        if (a->c_in && !a->c_end && !a->ws_closing && c_room >= (a->tls ? TLS_RECORD_MAX : 1)) {
            static unsigned char ws_in[BUF]; /* (one loop: one session reads at a time) */
            static char sink[TLS_RECORD_MAX];
            char *to = !keys ? sink : a->websocket ? (char *)ws_in : a->up + a->up_len;
            ssize_t n = a->tls ? tls_upgraded_recv(a->tls_s, to, c_room) : recv(a->cfd, to, c_room, 0);
            if (n > 0 && keys) {
                if (a->websocket)
                    ws_up(a, ws_in, (size_t)n);
                else
                    a->up_len += (size_t)n;
                a->last_ms = now_ms();
            }
            if (n > 0)
                moved = true;
            else if (n < 0 && errno == EAGAIN)
                a->c_in = false;
            else if (n < 0 && errno == EINTR)
                moved = true;
            else
                a->c_end = true; /* closed (detached, or done after the exit frame) or broken */
        }
        if (a->s_shut && a->up_len) {
            a->up_len = 0;   /* the shim (an exec's helper) took its last: the client's keys go nowhere */
        } else if (a->sfd >= 0 && a->s_out && a->up_len) {
            ssize_t n = send(a->sfd, a->up, a->up_len, MSG_NOSIGNAL);
            if (n > 0) {
                memmove(a->up, a->up + n, a->up_len - (size_t)n);
                a->up_len -= (size_t)n;
                moved = true;
            } else if (n < 0 && errno == EAGAIN) {
                a->s_out = false;
            } else if (!(n < 0 && errno == EINTR)) {
                /* it closed its side (an exec whose process ended before the client's first
                 * frame reached it): what it wrote before, its exit frame last, is still to be
                 * read, to its end */
                a->s_shut = true;
                a->up_len = 0;
            }
        }
        size_t ws_room = a->down_len + 12 < BUF ? (BUF - a->down_len - 12) / 2 : 0; /* (ws_down's; 4 kept for a close) */
        /* (a WebSocket whose close is queued is sent nothing after it: RFC 6455 5.5.1) */
        if (a->sfd >= 0 && a->s_in && !a->s_end && a->down_len < BUF && (!a->websocket || (ws_room && !a->ws_closing))) {
            static unsigned char ws_out[BUF / 2];
            ssize_t n = a->websocket ? recv(a->sfd, ws_out, ws_room, 0) : recv(a->sfd, a->down + a->down_len, BUF - a->down_len, 0);
            if (n > 0 && a->websocket) {
                ws_down(a, ws_out, (size_t)n);
                a->last_ms = now_ms();
                moved = true;
            } else if (n > 0) {
                follow_frames(a, (unsigned char *)a->down + a->down_len, (size_t)n);
                a->down_len += (size_t)n;
                a->last_ms = now_ms();
                moved = true;
            } else if (n < 0 && errno == EAGAIN) {
                a->s_in = false;
            } else if (!(n < 0 && errno == EINTR)) {
                a->s_end = true; /* after the exit frame, or the shim is gone */
            }
        }
        if (a->c_out && a->down_len) {
            ssize_t n = a->tls ? tls_upgraded_send(a->tls_s, a->down, a->down_len)
                               : send(a->cfd, a->down, a->down_len, MSG_NOSIGNAL);
            if (n > 0) {
                memmove(a->down, a->down + n, a->down_len - (size_t)n);
                a->down_len -= (size_t)n;
                moved = true;
                if (a->s_end && !a->lingering) {
                    end_in_linger(a); /* (the client takes what is left: it has LINGER_S more) */
                    if (a->done)
                        return;
                }
            } else if (n < 0 && errno == EAGAIN) {
                a->c_out = false;
            } else if (!(n < 0 && errno == EINTR)) {
                a->c_end = true;
            }
        }
    }
    if (a->c_end || (a->ws_closing && !a->down_len)) {
        end(a); /* the client went: the shim sees its socket close (a detach) */
        return;
    }
    if (a->s_end && !a->why)
        a->why = run_end_why(a);
    if (a->s_end && a->websocket && !a->ws_bye && !a->down_len && !a->lingering) {
        a->ws_bye = true; /* the exit frame is out: the WebSocket's close, then as below */
        a->down_len += wsframe_close((unsigned char *)a->down, WSFRAME_NORMAL);
        loop_later(&a->task);
        return;
    }
    /* the shim's side is over and the client does not take what is left: it has LINGER_S from
     * its last read to do so, then the session ends (a client that never reads held it, its
     * buffers and, an exec's, its place among the user's execs, for as long as it stayed) */
    if (a->s_end && a->down_len && !a->lingering && a->tfd < 0)
        end_in_linger(a);
    if (a->s_end && !a->down_len && !a->lingering) {
        if (a->sfd >= 0 && !a->keys_after) {
            loop_del(&a->ws);
            close(a->sfd);
            a->sfd = a->ws.fd = -1;
        }
        linger(a);
        return;
    }
    if (steps == SLICE)
        loop_later(&a->task);
}

static void on_client(watch *w, uint32_t events)
{
    attach *a = w->data;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        a->c_in = true;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        a->c_out = true;
    pump(a);
}

static void on_shim(watch *w, uint32_t events)
{
    attach *a = w->data;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        a->s_in = true;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        a->s_out = true;
    pump(a);
}

static void on_linger(watch *w, uint32_t events) { end(w->data); }

/* jobs.terminal_idle_timeout_s: nothing moved either way for that long: the client is told (at a
 * frame boundary of the shim's stream) and the attach ends as a detach would; the job goes on. */
static void on_idle(watch *w, uint32_t events)
{
    attach *a = w->data;
    uint64_t fired;
    if (read(a->ifd, &fired, sizeof fired) < 0 && errno == EAGAIN)
        return;
    int64_t idle_ms = (int64_t)core.cfg.terminal_idle_s * 1000, left = a->last_ms + idle_ms - now_ms();
    if (left > 0 && !a->s_end) {
        struct itimerspec it = {.it_value = {.tv_sec = left / 1000, .tv_nsec = left % 1000 * 1000000}};
        timerfd_settime(a->ifd, 0, &it, NULL);
        return;
    }
    if (a->s_end || a->lingering)
        return; /* ending anyway */
    char line[300];
    if (a->exec) /* its process is killed when its stream goes (jobs_exec.c): nothing to come back to */
        snprintf(line, sizeof line, TERMFRAME_IDLE_NOTE "%llu s: the exec's process is ended "
                 "(jobs.terminal_idle_timeout_s); the job goes on]\r\n", (unsigned long long)core.cfg.terminal_idle_s);
    else
        snprintf(line, sizeof line, TERMFRAME_IDLE_NOTE "%llu s: detached (jobs.terminal_idle_timeout_s); the job "
                 "goes on: rnx job attach %.8s]\r\n", (unsigned long long)core.cfg.terminal_idle_s, a->id);
    if (!a->f_hdr_n && !a->f_left)
        put_line(a, line, 0); /* (at a frame boundary of the shim's stream only) */
    a->why = "idle (jobs.terminal_idle_timeout_s)";
    job_term_unwait(&a->waiter);
    a->s_end = true; /* nothing more of the shim's: it sees a detach once the client closed */
    /* Keys typed before the client had the note (sent, or read in this turn after the timer) are
     * the job's: they go to the shim until the client closes (or LINGER_S), not dropped as a
     * lingering client's are; what the job writes meanwhile, the next attach's replay shows
     * (a relay such as Slurm's attaches again at once: its keys were lost in that gap). An
     * exec's process is ended with its stream: no keys for it. */
    a->keys_after = !a->exec && a->sfd >= 0;
    pump(a);
}

static void start_idle_timer(attach *a)
{
    uint64_t s = core.cfg.terminal_idle_s;
    if (!s)
        return;
    a->last_ms = now_ms();
    a->ifd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    a->wi = (watch){a->ifd, on_idle, a};
    struct itimerspec it = {.it_value = {.tv_sec = (time_t)s}};
    if (a->ifd < 0 || timerfd_settime(a->ifd, 0, &it, NULL) < 0 || loop_add(&a->wi) < 0) {
        if (a->ifd >= 0)
            close(a->ifd);
        a->ifd = a->wi.fd = -1; /* (logged by nobody: the attach goes on without a timeout) */
    }
}

static void on_ready(void *arg);
static void take_shim(attach *a, int fd);

/* To the job's shim, now or once it takes clients; the job's end if it ended first. */
static void connect_shim(attach *a)
{
    jerr e = {0};
    job *j = jobs_find(a->id, &a->who, &e);
    if (!j) {
        say_end(a, "the job is gone", 1);
        return;
    }
    int fd;
    int rc = job_term_connect(j, &fd, &e);
    if (rc == 0) {
        job_term_wait(j, &a->waiter, on_ready, a);
        return;
    }
    if (rc < 0) {
        char why[1024];
        if (job_state_terminal(j->state))
            job_term_why(j, why, sizeof why);
        else
            snprintf(why, sizeof why, "%s", e.msg);
        say_end(a, why, job_state_terminal(j->state) ? job_term_exit_code(j) : 1);
        return;
    }
    take_shim(a, fd);
}

/* The shim's side (or an exec helper's: jobs_exec.c) is connected: relay it. */
static void take_shim(attach *a, int fd)
{
    a->sfd = fd;
    a->ws = (watch){fd, on_shim, a};
    if (loop_add_events(&a->ws, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
        close(fd);
        a->sfd = a->ws.fd = -1;
        say_end(a, "cannot watch the job's terminal", 1);
        return;
    }
    a->s_in = a->s_out = true;
}

static void on_task(loop_task *t)
{
    attach *a = t->data;
    if (a->done) {
        free(a);
        return;
    }
    if (a->sfd < 0 && !a->s_end && !a->waiter.j)
        connect_shim(a); /* woken: the terminal takes clients, or the job ended */
    pump(a);
}

/* The job's terminal takes clients, or the job ended: at the next turn (this one may be inside
 * another request's handler). */
static void on_ready(void *arg) { loop_later(&((attach *)arg)->task); }

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra, size_t extra_n,
                       MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    attach *a = cls;
    /* the session is its own from now on: the connection's end (after our close) must not free it */
    a->ctx->p = NULL;
    a->ctx->free = NULL;
    a->ctx = NULL;
    a->urh = urh;
    a->cfd = sock;
    a->attached = !a->exec;
    if (a->attached)
        job_term_attached(a->id, &a->who, a->types);
    /* Over TLS, sock is libmicrohttpd's socket pair, whose relay moves 4 bytes a pass (tls.h):
     * the TLS session is read and written here, on the TCP socket, and the pair stays unused
     * (libmicrohttpd closes it with the connection). */
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ti = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    a->tls = ci && ci->connect_fd != sock;
    if (a->tls && !(ti && ti->tls_session)) {
        log_warn("job %s: an upgraded TLS connection without its TLS session: closed", a->id);
        end(a);
        return;
    }
    if (a->tls) {
        a->tls_s = (gnutls_session_t)ti->tls_session;
        a->cfd = ci->connect_fd;
        tls_upgraded_take(a->tls_s);
    }
    int fl = fcntl(a->cfd, F_GETFL);
    if (fl >= 0)
        fcntl(a->cfd, F_SETFL, fl | O_NONBLOCK);
    /* over TCP (TLS), keys go out one by one: libmicrohttpd turned Nagle back on at the upgrade */
    int one = 1;
    if (a->tls)
        setsockopt(a->cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (extra_n > BUF - a->up_len) { /* a client that sent this much before the 101 is not one */
        end(a);
        return;
    }
    if (a->websocket && extra_n) { /* (a browser waits for the 101; another client may not) */
        unsigned char *copy = xmalloc(extra_n);
        memcpy(copy, extra, extra_n);
        ws_up(a, copy, extra_n);
        free(copy);
    } else {
        memcpy(a->up + a->up_len, extra, extra_n); /* after joblet's hello */
        a->up_len += extra_n;
    }
    a->wc = (watch){a->cfd, on_client, a};
    if (loop_add_events(&a->wc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
        a->wc.fd = -1;
        end(a);
        return;
    }
    a->c_in = a->c_out = true;
    start_idle_timer(a);
    if (a->sfd >= 0)
        take_shim(a, a->sfd); /* an exec: its helper is there already */
    else
        connect_shim(a);
    pump(a);
}

/* The connection ended before it was upgraded (or the answer could not be sent). */
static void free_unused(void *p)
{
    attach *a = p;
    unlist(a);
    if (a->sfd >= 0)
        close(a->sfd);
    connfds_give(a->who.uid, a->fds);
    free(a);
}

/* joblet's hello to the shim, the stream's first frame (common/termframe.h): whether the client
 * types, and who it is, for the others' terminals. */
static void put_hello(attach *a)
{
    char who[128]; /* (the shim keeps its first SHIM_TERM_WHO bytes) */
    job_term_who(&a->who, who, sizeof who);
    size_t n = strlen(who);
    termframe_put((unsigned char *)a->up, TERMFRAME_HELLO, (uint32_t)(1 + n));
    a->up[TERMFRAME_HDR] = a->types ? TERMFRAME_HELLO_TYPES : 0;
    memcpy(a->up + TERMFRAME_HDR + 1, who, n);
    a->up_len = TERMFRAME_HDR + 1 + n;
}

void attach_exec_held(const job *j, uid_t uid, unsigned *on_job, unsigned *of_user)
{
    *on_job = *of_user = 0;
    for (const attach *s = sessions; s; s = s->next)
        if (s->exec && !s->done && !job_exec_running(s->exec_serial)) {
            *on_job += !strcmp(s->id, j->id);
            *of_user += s->who.uid == uid;
        }
}

/* 0 when one more attach to j by who stays within the bounds, else -1 with e (429). */
static int admit(const job *j, const caller *who, jerr *e)
{
    size_t on_job = 0, of_user = 0;
    for (const attach *s = sessions; s; s = s->next) {
        if (s->exec)
            continue;   /* counted by their own bound (core/job_exec.c) */
        on_job += !strcmp(s->id, j->id);
        of_user += s->who.uid == who->uid;
    }
    return job_term_admit(j, who, on_job, of_user, e);
}

/* "Upgrade: PROTO" and "Connection: ... upgrade ..." */
static bool asks_upgrade(struct MHD_Connection *c, const char *proto)
{
    const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
    const char *co = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION);
    return up && !strcasecmp(up, proto) && co && strcasestr(co, "upgrade");
}

bool attach_asks_upgrade(struct MHD_Connection *c) { return asks_upgrade(c, "tcp"); }

static enum MHD_Result upgrade(request *r, job *j, int sfd, uint64_t serial, const char *ws_accept, unsigned fds);

enum MHD_Result attach_route(request *r, job *j)
{
    jerr e = {0};
    /* the console's terminal: GET with Upgrade: websocket (RFC 6455), the same frames in messages */
    bool ws = !strcmp(r->method, "GET") && asks_upgrade(r->conn, "websocket");
    char accept[29];
    if (strcmp(r->method, "POST") && !ws) {
        jerr_http(&e, 405, "attach is POST /v1/jobs/{id}/attach with Connection: Upgrade and Upgrade: tcp "
                           "(or GET with Upgrade: websocket)");
        return http_reply_error(r->conn, &e);
    }
    if (job_term_check(j, &r->who, &e) < 0 || admit(j, &r->who, &e) < 0)
        return http_reply_error(r->conn, &e);
    /* typing is a change, whichever method carries it (a GET's WebSocket types as a POST does):
     * a reader's certificate may only watch (the console's GET with ?stdin=0) */
    const char *in = query_get(r, "stdin");
    bool types = !in || (strcmp(in, "0") && strcmp(in, "false"));
    if (types && authz_check(&r->who, AUTHZ_CHANGE, "typing into a job's terminal (a WebSocket GET with ?stdin=0 "
                                                     "only watches)", &e) < 0)
        return http_reply_error(r->conn, &e);
    const char *ver = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    if (ws && MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin")) {
        /* a page's WebSocket (a browser may hold a client certificate for the TLS listener):
         * only through rnx console, which checks its Origin and takes it off */
        jerr_http(&e, 403, "a browser's WebSocket reaches joblet through rnx console only (docs/console.md, "
                           "\"Terminal\")");
        return http_reply_error(r->conn, &e);
    }
    if (ws && (!ver || strcmp(ver, "13") ||
               wsframe_accept(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Sec-WebSocket-Key"), accept) < 0)) {
        jerr_http(&e, 400, "a WebSocket needs Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key of 16 bytes in base64");
        return http_reply_error(r->conn, &e);
    }
    if (!ws && !attach_asks_upgrade(r->conn)) {
        jerr_http(&e, 400, "attach switches the connection to a stream of frames: send Connection: Upgrade and "
                           "Upgrade: tcp (docs/api.md, \"Interactive streams\")");
        return http_reply_error(r->conn, &e);
    }
    /* its shim's socket and timers (and over TLS libmicrohttpd's socket pair): counted first */
    unsigned fds = CONNFDS_ATTACH + (r->who.via == CALLER_TLS ? CONNFDS_TLS_UPGRADE : 0);
    if (connfds_take(&r->who, fds, "a terminal (rnx job attach)", &e) < 0)
        return http_reply_error(r->conn, &e);
    return upgrade(r, j, -1, 0, ws ? accept : NULL, fds);
}

enum MHD_Result attach_upgrade_fd(request *r, job *j, int sfd, uint64_t serial, unsigned fds)
{
    return upgrade(r, j, sfd, serial, NULL, fds);
}

/* The 101 and the session; sfd, serial: an exec's socket and number (-1, 0: an attach);
 * ws_accept: a WebSocket's Sec-WebSocket-Accept (NULL: Upgrade: tcp); fds: what was taken from the
 * connections' count for it, the session's to give back. */
static enum MHD_Result upgrade(request *r, job *j, int sfd, uint64_t serial, const char *ws_accept, unsigned fds)
{
    jerr e = {0};
    bool ws = ws_accept != NULL;
    attach *a = xcalloc(1, sizeof *a);
    snprintf(a->id, sizeof a->id, "%s", j->id);
    a->who = r->who;
    a->cfd = a->tfd = a->ifd = -1;
    a->sfd = sfd;
    a->exec = sfd >= 0;
    a->exec_serial = serial;
    a->fds = fds;
    a->wc.fd = a->ws.fd = a->wt.fd = a->wi.fd = -1;
    a->wt = (watch){-1, on_linger, a};
    const char *in = query_get(r, "stdin");
    a->types = !in || (strcmp(in, "0") && strcmp(in, "false"));
    a->websocket = ws;
    a->wr.max = TERMFRAME_MAX + TERMFRAME_HDR;
    put_hello(a);
    a->next = sessions;
    sessions = a;
    a->task = (loop_task){.fn = on_task, .data = a};
    a->ctx = r->ctx;
    r->ctx->p = a;
    r->ctx->free = free_unused;
    struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, a);
    if (!resp) {
        jerr_http(&e, 500, "cannot answer the attach");
        return http_reply_error(r->conn, &e);
    }
    /* (libmicrohttpd's upgrade answer has its Connection: Upgrade) */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, ws ? "websocket" : "tcp");
    if (ws)
        MHD_add_response_header(resp, "Sec-WebSocket-Accept", ws_accept);
    enum MHD_Result rc = MHD_queue_response(r->conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
    MHD_destroy_response(resp);
    log_debug("job %s: attached by uid %u", j->id, (unsigned)r->who.uid);
    return rc; /* (a refused answer: free_unused unlists it) */
}

void attach_stop_all(void)
{
    stopping = true;
    while (sessions) {
        attach *a = sessions;
        if (a->ctx) { /* not upgraded: its connection's end frees it */
            unlist(a);
            continue;
        }
        end(a);
        loop_later_cancel(&a->task);
        free(a);
    }
}
