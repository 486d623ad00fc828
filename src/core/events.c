/* The event stream of GET /v1/events (events.h). */
#include "events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "loop.h"
#include "state.h"

typedef struct event {
    uint64_t id;
    int64_t owner;              /* uid, -1: everyone */
    bool others;                /* for those who do not see owner's events (events_publish_others) */
    char *text;                 /* "id: N\nevent: KIND\ndata: JSON\n\n" */
    size_t len;
} event;

struct events_sub {
    struct events_sub *next;
    caller who;                 /* whose stream: what it may see (authz.h) */
    uint64_t next_id;           /* the next event it has not been sent */
    bool hello, ping, closing;
    pull_notify_fn notify;      /* its reader's, called when there may be more */
    void *notify_arg;
};
typedef struct events_sub stream;

static event ring[EVENTS_RING];
/* Ids go on across restarts: the first is the daemon's start in microseconds (the first event's
 * time, less than 2^53 as JavaScript's numbers need), so a client that reconnects with a
 * Last-Event-ID of joblet's previous run gets resync, never the new run's events from that number
 * on as if they were the ones it missed. */
static uint64_t first_id, next_id; /* next_id: the id the next event gets */
static stream *streams;
static unsigned nstreams;
static int timer_fd = -1;
static watch w_timer;

static void ids_begin(void)
{
    if (first_id)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    first_id = next_id = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u + 1;
}

static const event *event_at(uint64_t id)
{
    const event *ev = &ring[id % EVENTS_RING];
    return ev->id == id && ev->text ? ev : NULL;
}

static void resume(stream *s)
{
    if (s->notify)
        s->notify(s->notify_arg);
}

/* Whether the stream's caller sees an event of owner's (-1: everyone's); others: one for those
 * who do not see owner's (events_publish_others). */
static bool sees(const stream *s, int64_t owner, bool others)
{
    return owner < 0 || authz_may_on(&s->who, AUTHZ_OTHERS_JOBS, (uid_t)owner) != others;
}

static void publish(const char *kind, int64_t owner, bool others, const char *data)
{
    size_t dl = strlen(data);
    if (dl > EVENTS_TEXT_MAX || memchr(data, '\n', dl)) {
        log_warn("events: a %s event of %zu bytes was not published (too long, or not one line)", kind, dl);
        return;
    }
    ids_begin();
    event *ev = &ring[next_id % EVENTS_RING];
    free(ev->text);
    ev->id = next_id++;
    ev->owner = owner;
    ev->others = others;
    size_t cap = dl + strlen(kind) + 64;
    ev->text = xmalloc(cap);
    ev->len = (size_t)snprintf(ev->text, cap, "id: %llu\nevent: %s\ndata: %s\n\n", (unsigned long long)ev->id, kind,
                               data);
    for (stream *s = streams; s; s = s->next) {
        if (sees(s, owner, others))
            resume(s);
        else if (s->next_id == ev->id)
            s->next_id++;   /* caught up, and not its event: it does not fall behind for it */
    }
}

void events_publish(const char *kind, int64_t owner, const char *data) { publish(kind, owner, false, data); }

void events_publish_others(const char *kind, uid_t owner, const char *data) { publish(kind, owner, true, data); }

static size_t put(char *buf, size_t used, size_t max, const char *text, size_t len)
{
    if (len > max - used)
        return used;
    memcpy(buf + used, text, len);
    return used + len;
}

size_t events_read(events_sub *s, char *buf, size_t max, enum pull_state *st)
{
    if (s->closing) {
        *st = PULL_END;
        return 0;
    }
    size_t used = 0;
    char line[128];
    if (!s->hello) {
        /* the client loads the state with the JSON API, then applies what follows */
        int n = snprintf(line, sizeof line, "retry: 2000\nevent: hello\ndata: {\"last_id\":%llu}\n\n",
                         (unsigned long long)(next_id - 1));
        used = put(buf, used, max, line, (size_t)n);
        s->hello = true;
    }
    if (next_id - s->next_id > EVENTS_BEHIND_MAX || (s->next_id < next_id && !event_at(s->next_id))) {
        /* too far behind (or from before what the ring holds): the rest is dropped */
        int n = snprintf(line, sizeof line, "event: resync\ndata: {\"last_id\":%llu}\n\n",
                         (unsigned long long)(next_id - 1));
        size_t u = put(buf, used, max, line, (size_t)n);
        if (u == used)
            return used;
        used = u;
        s->next_id = next_id;
    }
    while (s->next_id < next_id) {
        const event *ev = event_at(s->next_id);
        if (ev && sees(s, ev->owner, ev->others)) {
            size_t u = put(buf, used, max, ev->text, ev->len);
            if (u == used)
                break;   /* the rest next time */
            used = u;
        }
        s->next_id++;
    }
    if (s->ping && used == 0) {
        used = put(buf, used, max, ": ping\n\n", 8);
        s->ping = false;
    }
    *st = PULL_WAIT;
    return used;
}

static void on_timer(watch *w, uint32_t events)
{
    uint64_t n;
    if (read(timer_fd, &n, sizeof n) < 0)
        return;
    for (stream *s = streams; s; s = s->next) {
        s->ping = true;
        resume(s);
    }
}

static void arm_timer(bool on)
{
    if (timer_fd < 0) {
        timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (timer_fd < 0)
            return;
        w_timer = (watch){timer_fd, on_timer, NULL};
        loop_add(&w_timer);
    }
    struct itimerspec t = {0};
    if (on)
        t.it_interval.tv_sec = t.it_value.tv_sec = EVENTS_PING_S;
    timerfd_settime(timer_fd, 0, &t, NULL);
}

void events_unsubscribe(events_sub *s)
{
    for (stream **p = &streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            nstreams--;
            break;
        }
    if (!nstreams)
        arm_timer(false);
    free(s);
}

events_sub *events_subscribe(const caller *who, uint64_t last_id, jerr *e)
{
    unsigned mine = 0;
    for (stream *s = streams; s; s = s->next)
        mine += s->who.uid == who->uid;
    if (!authz_may(who, AUTHZ_UNLIMITED) && mine >= core.cfg.events_max_streams_per_user) {
        jerr_http(e, 429, "you have %u event streams open already (events.max_streams_per_user); close a console "
                          "first", mine);
        return NULL;
    }
    if (nstreams >= core.cfg.events_max_streams) {
        jerr_http(e, 503, "joblet has %u event streams open (events.max_streams); try again later", nstreams);
        return NULL;
    }
    ids_begin();
    stream *s = xcalloc(1, sizeof *s);
    s->who = *who;
    /* a client reconnecting goes on after the last event it had, when the ring still holds
     * the next one; else (an event dropped from the ring, or an id this run never gave: one of
     * joblet's previous run) it gets resync at once */
    s->next_id = next_id;
    if (last_id) {
        s->hello = true;
        if (last_id < next_id && (last_id + 1 == next_id || event_at(last_id + 1)))
            s->next_id = last_id + 1;
        else
            s->next_id = 0;
    }
    s->next = streams;
    streams = s;
    if (!nstreams++)
        arm_timer(true);
    return s;
}

void events_set_notify(events_sub *s, pull_notify_fn notify, void *arg)
{
    s->notify = notify;
    s->notify_arg = arg;
}

bool events_listening(void) { return streams != NULL; }
unsigned events_streams(void) { return nstreams; }
uint64_t events_published(void) { return next_id - first_id; }

void events_close_all(void)
{
    for (stream *s = streams; s; s = s->next) {
        s->closing = true;
        resume(s);
    }
}
