/* rnx's side of a job's terminal (cmd_term.h). */
#include "cmd_term.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "../common/jobstate.h"
#include "../common/jsonx.h"
#include "../common/termframe.h"
#include "../common/util.h"
#include "cli.h"
#include "print.h"

/* ---- the local terminal: raw while attached, restored on every way out ---------------------- */

static struct termios saved;
static volatile sig_atomic_t saved_fd = -1; /* the terminal in raw mode, -1 none */
static int sig_pipe[2] = {-1, -1};

static void restore(void)
{
    if (saved_fd >= 0)
        tcsetattr(saved_fd, TCSADRAIN, &saved);
    saved_fd = -1;
}

/* SIGTERM, SIGHUP, SIGINT, SIGQUIT while raw: the terminal back as it was, then the signal's
 * own end (async-signal-safe: tcsetattr, signal, raise). */
static void on_fatal(int sig)
{
    if (saved_fd >= 0)
        tcsetattr(saved_fd, TCSANOW, &saved);
    saved_fd = -1;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_winch(int sig)
{
    int saved_errno = errno;
    char c = (char)sig;
    ssize_t w = write(sig_pipe[1], &c, 1);
    (void)w; /* a full pipe has a resize to tell already */
    errno = saved_errno;
}

static int make_raw(int fd)
{
    if (tcgetattr(fd, &saved) < 0)
        return -1;
    struct termios raw = saved;
    cfmakeraw(&raw); /* as docker run -it: every key to the job, ctrl-c and ctrl-z included */
    static const int fatal[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
    for (size_t i = 0; i < ARRAY_LEN(fatal); i++) {
        struct sigaction sa = {.sa_handler = on_fatal};
        sigaction(fatal[i], &sa, NULL);
    }
    saved_fd = fd;
    atexit(restore);
    if (tcsetattr(fd, TCSADRAIN, &raw) < 0) {
        saved_fd = -1;
        return -1;
    }
    return 0;
}

/* The local terminal's size: stdin's, else stdout's; 24x80 when neither is a terminal. */
static void local_size(uint16_t *rows, uint16_t *cols)
{
    struct winsize ws = {0};
    if ((ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || !ws.ws_row) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
        ws = (struct winsize){0};
    *rows = ws.ws_row ? ws.ws_row : 24;
    *cols = ws.ws_col ? ws.ws_col : 80;
}

/* ---- the stream ------------------------------------------------------------------------------ */

static int send_all(conn *k, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = conn_write(k, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int send_frame(conn *k, int ch, const char *p, size_t n)
{
    unsigned char h[TERMFRAME_HDR];
    termframe_put(h, ch, (uint32_t)n);
    conn_cork(k); /* over TLS: one record */
    int rc = send_all(k, h, sizeof h);
    if (rc == 0 && n)
        rc = send_all(k, p, n);
    return conn_uncork(k) < 0 ? -1 : rc;
}

static int send_size(conn *k)
{
    uint16_t rows, cols;
    local_size(&rows, &cols);
    unsigned char f[TERMFRAME_HDR + 4];
    termframe_resize(f, rows, cols);
    return send_all(k, f, sizeof f);
}

typedef struct session {
    conn *k;
    termframe_reader rd;
    bool ended;               /* the exit frame came */
    int code;
    int werr;                 /* writing the job's output here failed */
    bool idle;                /* joblet closed it as idle, and said so (TERMFRAME_IDLE_NOTE) */
} session;

/* The job's frames as they come: its output to our stdout and stderr, its end. */
static int take(session *s, const char *p, size_t n)
{
    termframe_out f;
    enum termframe_event ev;
    while (!s->ended && (ev = termframe_next(&s->rd, &p, &n, &f)) != TERMFRAME_NEED) {
        if (ev == TERMFRAME_BAD)
            return -1;
        if (ev == TERMFRAME_CODE) {
            s->ended = true;
            s->code = f.code;
        } else if (ev == TERMFRAME_DATA && f.ch == TERMFRAME_STDERR && f.n >= strlen(TERMFRAME_IDLE_NOTE) &&
                   !memcmp(f.p, TERMFRAME_IDLE_NOTE, strlen(TERMFRAME_IDLE_NOTE)) && !s->werr) {
            s->idle = true; /* the line says what happened; the connection's end that follows is no loss */
            if (write_all(STDERR_FILENO, f.p, f.n) != f.n)
                s->werr = errno;
        } else if (ev == TERMFRAME_DATA && (f.ch == TERMFRAME_STDOUT || f.ch == TERMFRAME_STDERR) && !s->werr &&
                   write_all(f.ch == TERMFRAME_STDOUT ? STDOUT_FILENO : STDERR_FILENO, f.p, f.n) != f.n) {
            s->werr = errno; /* (stdout closed: the job goes on; rnx stops) */
        }
    }
    return 0;
}

/* When the job ended other than by exiting (a signal, its memory, its time), one line says so;
 * why it did not start was said on its stderr already. A run ended by a requeue (or a
 * preemption): the job goes on, which the exit code alone does not say. */
static void note_end(rnx_client *c, const char *id)
{
    char *esc = client_escape(c, id), path[200], words[1024] = "";
    snprintf(path, sizeof path, "/v1/jobs/%s", esc);
    free(esc);
    json_t *job = NULL;
    jerr e = {0};
    if (client_request(c, "GET", path, NULL, &job, &e) == 0 && job) {
        const char *reason = jstr(job, "end_reason");
        const char *status = jstr(job, "status");
        enum job_state st;
        bool back = status && job_state_parse(status, &st) == 0 && !job_state_terminal(st) && st != JS_RUNNING &&
                    (st != JS_STOPPING || json_is_true(json_object_get(job, "requeuing")));
        if (back)
            snprintf(words, sizeof words, "goes back to the queue (rnx job requeue, or a preemption): its run ended, "
                                          "the job did not; rnx job attach %.8s follows its next run", id);
        else if (reason && strcmp(reason, "exit") && strcmp(reason, "start_failed") && strcmp(reason, "canceled"))
            fmt_end_reason(job, words, sizeof words);
    }
    json_decref(job);
    if (words[0])
        print_textf(stderr, "rnx: job %.8s %s\n", id, words);
}

int cmd_term_attach(rnx_client *c, const char *id, const term_opts *o)
{
    char *esc = client_escape(c, id), path[200];
    snprintf(path, sizeof path, "/v1/jobs/%s/%s%s", esc, o->exec_body ? "exec" : "attach",
             !o->exec_body && o->watch ? "?stdin=0" : "");
    free(esc);
    char *extra = NULL;
    size_t nextra = 0;
    jerr e = {0};
    conn *k = client_upgrade_with(c, path, "tcp", o->exec_body, &extra, &nextra, &e);
    if (!k)
        return rnx_fail("cannot %s job %.8s: %s", o->exec_body ? "exec in" : "attach to", id, e.msg);
    /* over TCP (a node), each key goes out at once: no wait for the previous one's ACK (Nagle) */
    int one = 1;
    setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    session s = {.k = k};
    int rc = RNX_FAIL;
    bool detached = false, broken = false, in_open = o->stdin_open;
    term_keys keys = o->keys;
    signal(SIGPIPE, SIG_IGN);
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        rc = rnx_fail("pipe: %s", strerror(errno));
        goto out;
    }
    bool raw = o->tty && o->stdin_open && isatty(STDIN_FILENO);
    if (raw && make_raw(STDIN_FILENO) < 0) {
        rc = rnx_fail("cannot put the terminal in raw mode: %s", strerror(errno));
        goto out;
    }
    if (!raw || !keys.n || o->exec_body)
        keys.n = 0; /* detach keys are typed on a terminal; piped bytes all go to the job */
    /* watching a job, its keys not sent (run -t, attach --no-stdin): ctrl-c leaves it, and says
     * that the job goes on, which a user who saw its output stop would not know otherwise */
    bool leave_on_int = !raw && !o->exec_body && !o->stdin_open && isatty(STDERR_FILENO), left = false;
    if (leave_on_int) {
        struct sigaction sa = {.sa_handler = on_winch, .sa_flags = SA_RESTART};
        sigaction(SIGINT, &sa, NULL);
    }
    if (o->tty) {
        struct sigaction sa = {.sa_handler = on_winch, .sa_flags = SA_RESTART};
        sigaction(SIGWINCH, &sa, NULL);
        if (send_size(k) < 0)
            broken = true; /* the job's size first: its command waits for it (shim_term.h) */
    }
    if (nextra && take(&s, extra, nextra) < 0)
        broken = true;
    enum { BUF = 16 << 10 };
    char *buf = xmalloc(64 << 10), *typed = xmalloc(BUF + TERM_KEYS_MAX);
    while (!broken && !s.ended && !s.werr) {
        struct pollfd p[3] = {{k->fd, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
        /* what the TLS session decrypted already: a poll on its socket would not show it */
        if (!conn_pending(k) && poll(p, in_open ? 3 : 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (conn_pending(k) || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = conn_read(k, buf, 64 << 10);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0 || take(&s, buf, (size_t)n) < 0) {
                broken = true;
                break;
            }
        }
        if (p[1].revents & POLLIN) {
            char sig[16];
            ssize_t n = read(sig_pipe[0], sig, sizeof sig);
            left = leave_on_int && n > 0 && memchr(sig, SIGINT, (size_t)n);
            if (left)
                break;
            if (n > 0 && o->tty && send_size(k) < 0)
                broken = true;
        }
        if (in_open && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(STDIN_FILENO, buf, BUF);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0) {
                /* the end of our stdin: the job's stdin ends (a close frame, not a half-closed
                 * socket, which proxies do not carry) */
                in_open = false;
                if (send_frame(k, TERMFRAME_CLOSE, NULL, 0) < 0)
                    broken = true;
                continue;
            }
            size_t out = 0;
            detached = term_keys_feed(&keys, buf, (size_t)n, typed, &out);
            if (out && send_frame(k, TERMFRAME_STDIN, typed, out) < 0)
                broken = true;
            if (detached)
                break;
        }
    }
    free(buf);
    free(typed);
    restore();
    if (detached) {
        print_textf(stderr, "\nrnx: detached from job %.8s; it goes on (rnx job log %.8s shows its output)\n", id, id);
        rc = RNX_OK;
    } else if (left) {
        print_textf(stderr, "\nrnx: left job %.8s; it goes on (rnx job attach %.8s comes back, rnx job stop %.8s ends "
                    "it)\n", id, id, id);
        rc = 128 + SIGINT;
    } else if (s.ended) {
        rc = s.code >= 0 && s.code <= 255 ? s.code : RNX_FAIL;
        if (rc && !o->exec_body)
            note_end(c, id);
    } else if (s.werr) {
        rc = s.werr == EPIPE ? RNX_FAIL : rnx_fail("writing the job's output failed: %s", strerror(s.werr));
    } else if (s.idle) {
        /* joblet's line said it (an attach: detached, as ctrl-p ctrl-q; an exec: its process ended) */
        rc = o->exec_body ? RNX_FAIL : RNX_OK;
    } else if (o->exec_body) {
        rc = rnx_fail("the connection to joblet ended before the process in job %.8s did%s%s", id,
                      k->why[0] ? ": " : "", k->why);
    } else {
        rc = rnx_fail("the connection to joblet ended before job %.8s did%s%s; the job goes on: rnx job log %.8s", id,
                      k->why[0] ? ": " : "", k->why, id);
    }
out:
    restore();
    signal(SIGWINCH, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    for (int i = 0; i < 2; i++)
        if (sig_pipe[i] >= 0)
            close(sig_pipe[i]);
    sig_pipe[0] = sig_pipe[1] = -1;
    free(extra);
    conn_close(k);
    return rc;
}
