#include "loop.h"

#include <errno.h>
#include <string.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "counters.h"

static int epfd = -1;
static volatile bool running;

int loop_init(void)
{
    epfd = epoll_create1(EPOLL_CLOEXEC);
    return epfd < 0 ? -1 : 0;
}

int loop_add(watch *w) { return loop_add_events(w, EPOLLIN); }

int loop_add_events(watch *w, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, w->fd, &ev);
}

void loop_del(watch *w)
{
    if (w->fd >= 0)
        epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

void loop_stop(void) { running = false; }

static uint64_t turn = 1; /* counts the loop's turns */
static int64_t longest_ns; /* the longest turn so far */

uint64_t loop_turns(void) { return turn - 1; }
int64_t loop_longest_turn_ns(void) { return longest_ns; }

void loop_turn_over(void) { turn++; }

uint64_t loop_budget_take(loop_budget *b, uint64_t want)
{
    if (b->turn != turn) {
        b->turn = turn;
        b->left = b->per_turn;
    }
    uint64_t n = want < b->left ? want : b->left;
    b->left -= n;
    return n;
}

void loop_budget_return(loop_budget *b, uint64_t unused)
{
    if (b->turn == turn)
        b->left += unused;
}

static loop_task *later, **later_tail = &later;
static size_t nlater;

void loop_later(loop_task *t)
{
    if (t->queued)
        return;
    t->queued = true;
    t->next = NULL;
    *later_tail = t;
    later_tail = &t->next;
    nlater++;
}

void loop_later_cancel(loop_task *t)
{
    if (!t->queued)
        return;
    for (loop_task **p = &later; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            if (later_tail == &t->next)
                later_tail = p;
            nlater--;
            break;
        }
    t->queued = false;
}

/* The tasks queued before this turn, each taken off the list before it runs (a task may cancel
 * another, or queue itself again for the next turn). */
void loop_run_later(void)
{
    for (size_t n = nlater; n-- > 0 && later;) {
        loop_task *t = later;
        later = t->next;
        if (!later)
            later_tail = &later;
        nlater--;
        t->queued = false;
        t->fn(t);
    }
}

void loop_run(int (*before_wait)(void), void (*after_wake)(void))
{
    running = true;
    int64_t woke = 0;
    while (running) {
        struct epoll_event evs[64];
        int timeout = before_wait();
        /* a turn: from the wake to the next wait, the settle step and the commit included */
        int64_t t = woke ? mono_ns() - woke : 0;
        if (t > longest_ns)
            longest_ns = t;
        if (woke)
            counters_loop_turn((double)t / 1e9);
        int n = epoll_wait(epfd, evs, 64, later ? 0 : timeout);
        woke = mono_ns();
        if (n < 0 && errno != EINTR) {
            log_err("epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            watch *w = evs[i].data.ptr;
            w->fn(w, evs[i].events);
        }
        loop_turn_over();
        loop_run_later();
        after_wake();
    }
}
