/* The shim's side of a job's terminal (shim_term.h). One epoll of its own holds the listening
 * socket, the attached clients and the job's input; the shim's supervise loop watches that
 * epoll's fd, so nothing here blocks the shim (but shim_term_await before the command starts,
 * and shim_term_finish's bounded wait after it ended). */
#include "shim_term.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "../common/termframe.h"
#include "../common/termring.h"
#include "../common/util.h"
#include "shim.h"

#define OUT_CAP (256u << 10)   /* a client may be this far behind the job; past it, output is dropped for it */
#define IN_CAP (64u << 10)     /* the job's input not yet taken; past it the typing client waits */
#define READ_MAX (16u << 10)   /* one read of a client */
#define FIRST_FRAME_MS 2000    /* the most the command waits for a first client's first frame */
#define DRAIN_MS 1000          /* after the job's end: the most a client may take to catch up */
#define FINISH_MS 4000         /* then the most its exit frame waits for it */

typedef struct client {
    int fd;
    uint32_t events;           /* registered with the epoll */
    termframe_reader rd;
    char *out;                 /* frames to send: out[off, len); the frame being sent starts at head */
    size_t head, off, len;
    uint64_t dropped;          /* output bytes dropped for it since it last kept up */
    bool got_frame;            /* a frame of its own came (not joblet's hello) */
    bool hello_done;           /* joblet's hello frame was read (its first, always) */
    bool wants_stdin;          /* it asked to type (the hello's flag; true until the hello says) */
    char who[SHIM_TERM_WHO + 1]; /* who it is, in joblet's words ("uid 1000", "alice (TLS)") */
    size_t who_len;
    uint16_t rows, cols;       /* its window's size, applied once it types; 0 none yet */
    int64_t since_ms;
} client;

struct shim_term {
    int ep, lfd, dirfd;
    bool tty;
    int in_fd;                 /* the pty master or the stdin pipe; -1 none (or closed) */
    uint32_t in_events;
    char *in;                  /* the job's input waiting: in[0, in_len) */
    size_t in_len;
    bool in_close;             /* close in_fd once in is written (a close frame, no tty) */
    bool finishing;            /* the job ended: nobody is told they type now */
    client *c[SHIM_TERM_MAX];  /* in the order they attached */
    size_t n;
    client *typist;            /* the first of them that asked to type; NULL none */
    termring ring;             /* a tty's last output, replayed to each new client */
};

static bool is_typist(const shim_term *t, const client *cl) { return t->typist == cl; }

static void watch(shim_term *t, int fd, uint32_t *have, uint32_t want)
{
    if (*have == want)
        return;
    struct epoll_event ev = {.events = want, .data.fd = fd};
    int op = !*have ? EPOLL_CTL_ADD : !want ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    epoll_ctl(t->ep, op, fd, &ev);
    *have = want;
}

static size_t in_room(const shim_term *t) { return t->in_fd >= 0 && !t->in_close ? IN_CAP - t->in_len : 0; }

/* What a client is watched for: its frames (the typist only while the job's input has room;
 * the others always: their frames are read and dropped, their end noticed), and room for
 * what it is sent. */
static bool queue(client *cl, int ch, const char *p, size_t n, bool force);

/* Output a client could not take is dropped for it alone; once it takes again, a line on its
 * terminal says how much (the job's log has all of it). false while it is still behind (the
 * line not queued yet). */
static bool tell_dropped(shim_term *t, client *cl)
{
    if (!cl->dropped)
        return true;
    if (cl->len - cl->head > OUT_CAP / 4)
        return false; /* until it caught up for good: one line per gap, not one per piece */
    char note[200];
    int k = snprintf(note, sizeof note,
                     "%s[joblet: %llu bytes of the job's output were dropped here: this terminal did not keep up; "
                     "rnx job log has all of it]%s",
                     t->tty ? "\r\n" : "\n", (unsigned long long)cl->dropped, t->tty ? "\r\n" : "\n");
    if (!queue(cl, TERMFRAME_STDERR, note, (size_t)k, false))
        return false;
    cl->dropped = 0;
    return true;
}

static void client_events(shim_term *t, client *cl, bool typist)
{
    /* caught up after a gap: told now, not only with the job's next output (a job gone quiet,
     * waiting for a key, left the gap unsaid), whichever path its queue drained by */
    tell_dropped(t, cl);
    uint32_t want = EPOLLRDHUP;
    if (!typist || in_room(t) || t->in_fd < 0 || t->in_close)
        want |= EPOLLIN;
    if (cl->len > cl->off)
        want |= EPOLLOUT;
    watch(t, cl->fd, &cl->events, want);
}

static void refresh(shim_term *t)
{
    for (size_t i = 0; i < t->n; i++)
        client_events(t, t->c[i], is_typist(t, t->c[i]));
    if (t->in_fd >= 0)
        watch(t, t->in_fd, &t->in_events, t->in_len ? EPOLLOUT : 0);
}

static void choose_typist(shim_term *t);

static void drop_client(shim_term *t, size_t i)
{
    client *cl = t->c[i];
    watch(t, cl->fd, &cl->events, 0);
    close(cl->fd);
    free(cl->out);
    free(cl);
    memmove(&t->c[i], &t->c[i + 1], (t->n - i - 1) * sizeof *t->c);
    t->n--;
    if (t->typist == cl)
        choose_typist(t);
}

/* The length of the frame at p, its header included. */
static size_t frame_len(const char *p)
{
    const unsigned char *h = (const unsigned char *)p;
    return TERMFRAME_HDR + ((size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4]);
}

/* The queue moved to the start of its buffer (from the frame being sent). */
static void compact(client *cl)
{
    memmove(cl->out, cl->out + cl->head, cl->len - cl->head);
    cl->off -= cl->head;
    cl->len -= cl->head;
    cl->head = 0;
}

/* Sends what the client takes now; false when it is gone. */
static bool flush_client(client *cl)
{
    while (cl->len > cl->off) {
        ssize_t w = send(cl->fd, cl->out + cl->off, cl->len - cl->off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            break;
        if (w <= 0)
            return false;
        cl->off += (size_t)w;
    }
    while (cl->head < cl->off && cl->head + frame_len(cl->out + cl->head) <= cl->off)
        cl->head += frame_len(cl->out + cl->head);
    if (cl->off == cl->len)
        cl->head = cl->off = cl->len = 0;
    else if (cl->head > OUT_CAP / 2)
        compact(cl);
    return true;
}

/* Queues a frame (split at TERMFRAME_MAX) when it fits whole within OUT_CAP, or always when
 * force (the exit frame, a few bytes past the bound at most). */
static bool queue(client *cl, int ch, const char *p, size_t n, bool force)
{
    size_t frames = n ? (n + TERMFRAME_MAX - 1) / TERMFRAME_MAX : 1, need = n + frames * TERMFRAME_HDR;
    if (!force && cl->len - cl->head + need > OUT_CAP)
        return false;
    if (cl->len + need > OUT_CAP + 64)
        compact(cl);
    if (cl->len + need > OUT_CAP + 64) /* force only: room made */
        cl->out = xrealloc(cl->out, cl->len + need);
    do {
        size_t piece = n < TERMFRAME_MAX ? n : TERMFRAME_MAX;
        termframe_put((unsigned char *)cl->out + cl->len, ch, (uint32_t)piece);
        memcpy(cl->out + cl->len + TERMFRAME_HDR, p, piece);
        cl->len += TERMFRAME_HDR + piece;
        p += piece;
        n -= piece;
    } while (n);
    return true;
}

static void send_output(shim_term *t, client *cl, int ch, const char *p, size_t n)
{
    if (!tell_dropped(t, cl) || !queue(cl, ch, p, n, false))
        cl->dropped += n;
}

/* A line of joblet's own on a client's terminal (stderr), between the job's output. */
static void note(shim_term *t, client *cl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(shim_term *t, client *cl, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line - 2, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if (k > (int)sizeof line - 3)
        k = (int)sizeof line - 3;
    k += snprintf(line + k, 3, "%s", t->tty ? "\r\n" : "\n");
    queue(cl, TERMFRAME_STDERR, line, (size_t)k, false);
}

/* The typist: the first client, in the order they attached, that asked to type. One that
 * becomes it (the typist before it left) is told so, and its window's size applies. */
static void choose_typist(shim_term *t)
{
    client *was = t->typist;
    t->typist = NULL;
    for (size_t i = 0; i < t->n && !t->typist; i++)
        if (t->c[i]->wants_stdin)
            t->typist = t->c[i];
    client *now = t->typist;
    if (!now || now == was || t->finishing)
        return;
    if (t->tty && t->in_fd >= 0 && now->rows) {
        struct winsize ws = {.ws_row = now->rows, .ws_col = now->cols};
        ioctl(t->in_fd, TIOCSWINSZ, &ws);
    }
    if (now->hello_done)
        note(t, now, "[joblet: you type now]");
}

/* joblet's hello, the first frame of each client's connection (common/termframe.h): one byte of
 * flags, then who it is; the client is told whether it types or watches, and who types. */
static void on_hello(shim_term *t, client *cl, const termframe_out *f)
{
    for (size_t i = 0; i < f->n; i++, cl->who_len++) {
        if (!cl->who_len)
            cl->wants_stdin = f->p[i] & TERMFRAME_HELLO_TYPES;
        else if (cl->who_len <= SHIM_TERM_WHO)
            cl->who[cl->who_len - 1] = f->p[i];
    }
    if (cl->rd.left)
        return; /* more of it to come */
    client *was = t->typist;
    if (cl->wants_stdin && was && was != cl && was->hello_done && cl->who[0] && !strcmp(was->who, cl->who)) {
        /* the same person again while an earlier attach of theirs types: the newer types, in the
         * earlier one's place (tmux attach -d's habit). The earlier is most often on its way out:
         * a detach (ctrl-p ctrl-q) whose close has not reached the shim yet, through joblet and a
         * node's keeper; the first keys typed after re-attaching went nowhere then. */
        size_t i = 0, k = 0;
        while (t->c[i] != was)
            i++;
        while (t->c[k] != cl)
            k++;
        /* (k > i: the typist is the first that asks to type, cl asks; the others keep their
         * order, the earlier right after it) */
        if (k > i) {
            memmove(&t->c[i + 1], &t->c[i], (k - i) * sizeof *t->c);
            t->c[i] = cl;
        }
        choose_typist(t); /* (before its hello is done: it is not told it types, it just attached) */
        cl->hello_done = true;
        note(t, was, "[joblet: watching; a newer attach of %s types]", cl->who);
        return;
    }
    cl->hello_done = true;
    choose_typist(t);
    if (is_typist(t, cl))
        return;
    if (!cl->wants_stdin)
        note(t, cl, "[joblet: watching%s%s%s]", t->typist ? "; " : "", t->typist ? t->typist->who : "",
             t->typist ? " types" : "");
    else
        note(t, cl, "[joblet: watching; %s types; you type once they leave]",
             t->typist->who[0] ? t->typist->who : "another client");
}

void shim_term_output(shim_term *t, int ch, const char *p, size_t n)
{
    if (!t || !n)
        return;
    if (t->tty)
        termring_add(&t->ring, p, n);
    for (size_t i = 0; i < t->n;) {
        client *cl = t->c[i];
        send_output(t, cl, ch, p, n);
        if (!flush_client(cl)) {
            drop_client(t, i);
            continue;
        }
        i++;
    }
    refresh(t);
}

bool shim_term_room(const shim_term *t, size_t n)
{
    size_t need = n + (n / TERMFRAME_MAX + 1) * TERMFRAME_HDR;
    for (size_t i = 0; i < t->n; i++) {
        const client *cl = t->c[i];
        if (cl->len - cl->head + need > OUT_CAP)
            return false;
    }
    return true;
}

/* Writes what the job's input takes now. */
static void flush_in(shim_term *t)
{
    while (t->in_fd >= 0 && t->in_len) {
        ssize_t w = write(t->in_fd, t->in, t->in_len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            break;
        if (w <= 0) {
            /* the job closed its stdin (or the terminal is gone): what is typed goes nowhere */
            watch(t, t->in_fd, &t->in_events, 0);
            close(t->in_fd);
            t->in_fd = -1;
            t->in_len = 0;
            break;
        }
        memmove(t->in, t->in + w, t->in_len - (size_t)w);
        t->in_len -= (size_t)w;
    }
    if (t->in_fd >= 0 && !t->in_len && t->in_close) {
        watch(t, t->in_fd, &t->in_events, 0);
        close(t->in_fd);
        t->in_fd = -1;
    }
}

/* One frame (or a piece of one) from a client. */
static void on_frame(shim_term *t, client *cl, enum termframe_event ev, const termframe_out *f)
{
    if (!cl->hello_done && !cl->got_frame && ev == TERMFRAME_DATA && f->ch == TERMFRAME_HELLO) {
        on_hello(t, cl, f);
        return;
    }
    cl->got_frame = true;
    if (ev == TERMFRAME_SIZE) {
        cl->rows = f->rows; /* kept for when it types */
        cl->cols = f->cols;
    }
    if (!is_typist(t, cl) || t->in_fd < 0)
        return; /* a watcher's keys and sizes go nowhere; so do all once the input is closed */
    if (ev == TERMFRAME_SIZE && t->tty) {
        struct winsize ws = {.ws_row = f->rows, .ws_col = f->cols};
        ioctl(t->in_fd, TIOCSWINSZ, &ws);
    } else if (ev == TERMFRAME_DATA && f->ch == TERMFRAME_STDIN && f->n && !t->in_close) {
        size_t take = f->n < IN_CAP - t->in_len ? f->n : IN_CAP - t->in_len; /* (reads are bounded by the room) */
        memcpy(t->in + t->in_len, f->p, take);
        t->in_len += take;
    } else if (ev == TERMFRAME_DATA && f->ch == TERMFRAME_CLOSE && !t->tty) {
        t->in_close = true;
    }
}

/* Reads what client i sent; false when it is gone (or broke the framing). */
static bool read_client(shim_term *t, size_t i, uint32_t events)
{
    client *cl = t->c[i];
    bool typist = is_typist(t, cl);
    char buf[READ_MAX];
    size_t cap = sizeof buf;
    if (typist && t->in_fd >= 0 && !t->in_close) {
        cap = in_room(t) < cap ? in_room(t) : cap; /* its stdin bytes always fit */
        if (!cap) /* it waits for the job to take its input, unless it is gone */
            return !(events & (EPOLLHUP | EPOLLERR));
    }
    ssize_t r = recv(cl->fd, buf, cap, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (r <= 0)
        return false;
    const char *p = buf;
    size_t left = (size_t)r;
    termframe_out f;
    enum termframe_event ev;
    while ((ev = termframe_next(&cl->rd, &p, &left, &f)) != TERMFRAME_NEED) {
        if (ev == TERMFRAME_BAD)
            return false;
        on_frame(t, cl, ev, &f);
    }
    return true;
}

/* A connected client, taken (non-blocking from here). */
static void add_client(shim_term *t, int fd)
{
    client *cl = xcalloc(1, sizeof *cl);
    cl->fd = fd;
    cl->out = xmalloc(OUT_CAP + 64);
    cl->since_ms = now_ms();
    cl->wants_stdin = true; /* until its hello says */
    t->c[t->n++] = cl;
    if (t->tty) {
        /* the terminal's last output first (docs/interactive.md, "Re-attaching") */
        const char *p1, *p2;
        size_t n1, n2;
        termring_view(&t->ring, &p1, &n1, &p2, &n2);
        if (n1)
            queue(cl, TERMFRAME_STDOUT, p1, n1, false);
        if (n2)
            queue(cl, TERMFRAME_STDOUT, p2, n2, false);
    }
    choose_typist(t);
}

void shim_term_add(shim_term *t, int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    if (t->n < SHIM_TERM_MAX)
        add_client(t, fd);
    else
        close(fd);
    refresh(t);
}

size_t shim_term_clients(const shim_term *t) { return t->n; }

static void accept_clients(shim_term *t)
{
    for (;;) {
        int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        /* only joblet (root, as the shim): the socket's directory is root's alone already */
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid()) {
            close(fd);
            continue;
        }
        if (t->n == SHIM_TERM_MAX) {
            char msg[128];
            int k = snprintf(msg + TERMFRAME_HDR, sizeof msg - TERMFRAME_HDR,
                             "joblet: %d clients are attached to this job already\r\n", SHIM_TERM_MAX);
            termframe_put((unsigned char *)msg, TERMFRAME_STDERR, (uint32_t)k);
            ssize_t w = send(fd, msg, TERMFRAME_HDR + (size_t)k, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)w; /* told if it takes it; closed either way */
            close(fd);
            continue;
        }
        add_client(t, fd);
    }
}

static void handle(shim_term *t, int fd, uint32_t events)
{
    if (fd == t->lfd) {
        accept_clients(t);
        return;
    }
    if (fd == t->in_fd) {
        flush_in(t);
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        client *cl = t->c[i];
        if (cl->fd != fd)
            continue;
        bool ok = true;
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            ok = read_client(t, i, events);
        if (ok && (events & EPOLLOUT))
            ok = flush_client(cl);
        if (!ok) { /* (where it is now: its hello may have moved it, on_hello) */
            for (i = 0; t->c[i] != cl; i++)
                ;
            drop_client(t, i);
        }
        return;
    }
}

void shim_term_run(shim_term *t)
{
    struct epoll_event evs[16];
    int n = epoll_wait(t->ep, evs, 16, 0);
    for (int i = 0; i < n; i++)
        handle(t, evs[i].data.fd, evs[i].events);
    flush_in(t);
    refresh(t);
}

int shim_term_fd(const shim_term *t) { return t->ep; }

shim_term *shim_term_new(int dirfd, bool tty, jerr *e)
{
    if (dirfd < 0) { /* no listener: the one client comes by shim_term_add (joblet-exec) */
        shim_term *t = xcalloc(1, sizeof *t);
        t->ep = epoll_create1(EPOLL_CLOEXEC);
        if (t->ep < 0) {
            free(t);
            jerr_sys(e, "epoll");
            return NULL;
        }
        t->lfd = t->dirfd = t->in_fd = -1;
        t->tty = tty;
        t->in = xmalloc(IN_CAP);
        return t;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    /* through the directory's fd: a job directory's path may be longer than sun_path holds */
    snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dirfd, SHIM_ATTACH);
    unlinkat(dirfd, SHIM_ATTACH, 0); /* a previous run's (a preempted job) */
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (lfd < 0 || ep < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        fchmodat(dirfd, SHIM_ATTACH, 0600, 0) < 0 || listen(lfd, SHIM_TERM_MAX) < 0) {
        jerr_sys(e, "listen on the job's %s", SHIM_ATTACH);
        if (lfd >= 0)
            close(lfd);
        if (ep >= 0)
            close(ep);
        return NULL;
    }
    shim_term *t = xcalloc(1, sizeof *t);
    t->ep = ep;
    t->lfd = lfd;
    t->dirfd = dirfd;
    t->tty = tty;
    t->in_fd = -1;
    t->in = xmalloc(IN_CAP);
    uint32_t have = 0;
    watch(t, lfd, &have, EPOLLIN);
    return t;
}

void shim_term_set_input(shim_term *t, int fd)
{
    t->in_fd = fd;
    t->in_events = 0;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void shim_term_await(shim_term *t, uint64_t wait_s, int stop_fd)
{
    int64_t deadline = now_ms() + (int64_t)wait_s * 1000;
    for (;;) {
        int64_t now = now_ms(), until = deadline;
        if (t->n && (t->c[0]->got_frame || !t->tty))
            return; /* a terminal's size came (or, without one, there is nothing to wait for) */
        if (t->n && t->c[0]->since_ms + FIRST_FRAME_MS < until)
            until = t->c[0]->since_ms + FIRST_FRAME_MS;
        if (now >= until)
            return;
        struct pollfd p[2] = {{t->ep, POLLIN, 0}, {stop_fd, POLLIN, 0}};
        int r = poll(p, stop_fd >= 0 ? 2 : 1, (int)(until > now ? until - now : 0));
        if (r < 0 && errno != EINTR)
            return;
        if (r > 0 && (p[1].revents & POLLIN))
            return; /* stopped meanwhile: the command starts and is stopped at once, as any job */
        if (r > 0)
            shim_term_run(t);
    }
}

/* Sends what the clients take until none has anything left or until deadline. */
static void drain(shim_term *t, int64_t deadline)
{
    for (;;) {
        bool pending = false;
        for (size_t i = 0; i < t->n;) {
            if (!flush_client(t->c[i])) {
                drop_client(t, i);
                continue;
            }
            pending |= t->c[i]->len > t->c[i]->off;
            i++;
        }
        int64_t left = deadline - now_ms();
        if (!pending || left <= 0)
            return;
        struct pollfd p[SHIM_TERM_MAX];
        for (size_t i = 0; i < t->n; i++)
            p[i] = (struct pollfd){t->c[i]->fd, POLLOUT, 0};
        if (poll(p, t->n, (int)left) < 0 && errno != EINTR)
            return;
    }
}

/* A client still behind: what it has not begun to take is dropped (the frame being sent is
 * finished), so that its exit frame comes next. */
static void cut_behind(client *cl)
{
    size_t cut = cl->off > cl->head ? cl->head + frame_len(cl->out + cl->head) : cl->head;
    for (size_t at = cut; at < cl->len; at += frame_len(cl->out + at))
        cl->dropped += frame_len(cl->out + at) - TERMFRAME_HDR;
    if (cut < cl->len)
        cl->len = cut;
}

void shim_term_finish(shim_term *t, int code, const char *msg)
{
    if (!t)
        return;
    /* what the clients are behind on, for DRAIN_MS; then, for those still behind, the rest is
     * dropped (they are told) and the exit frame comes next, with FINISH_MS to take it: a client
     * that takes nothing at all misses it */
    t->finishing = true;
    /* clients that connected before the end but were not taken yet (an attach right before a
     * stop) are taken now, and get the exit frame too (they were closed unanswered, and their
     * attach ended saying nothing); the socket's name goes first: a later one finds none, and
     * joblet says the job's end to it itself (api/attach.c) */
    if (t->lfd >= 0) {
        unlinkat(t->dirfd, SHIM_ATTACH, 0);
        accept_clients(t);
    }
    drain(t, now_ms() + DRAIN_MS);
    unsigned char ex[TERMFRAME_HDR + 4];
    termframe_exit(ex, code);
    for (size_t i = 0; i < t->n; i++) {
        client *cl = t->c[i];
        cut_behind(cl);
        char line[1300];
        int k = 0;
        if (cl->dropped)
            k += snprintf(line, sizeof line,
                          "%s[joblet: %llu bytes of the job's output were dropped here: this terminal did not keep up; "
                          "rnx job log has all of it]%s", t->tty ? "\r\n" : "\n", (unsigned long long)cl->dropped,
                          t->tty ? "\r\n" : "\n");
        if (msg && *msg)
            k += snprintf(line + k, sizeof line - (size_t)k, "joblet: %s%s", msg, t->tty ? "\r\n" : "\n");
        if (k)
            queue(cl, TERMFRAME_STDERR, line, (size_t)(k < (int)sizeof line ? k : (int)sizeof line - 1), true);
        queue(cl, TERMFRAME_EXIT, (const char *)ex + TERMFRAME_HDR, 4, true);
    }
    drain(t, now_ms() + FINISH_MS);
    while (t->n) {
        /* what they sent meanwhile is read first: a socket closed with unread bytes is reset */
        char buf[4096];
        while (recv(t->c[0]->fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
            ;
        drop_client(t, 0);
    }
    if (t->lfd >= 0)
        close(t->lfd);
    if (t->in_fd >= 0)
        close(t->in_fd);
    close(t->ep);
    free(t->in);
    free(t);
}
