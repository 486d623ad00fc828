#include "loop.h"

#include <errno.h>
#include <string.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "../common/log.h"

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

void loop_run(int (*before_wait)(void), void (*after_wake)(void))
{
    running = true;
    while (running) {
        struct epoll_event evs[64];
        int n = epoll_wait(epfd, evs, 64, before_wait());
        if (n < 0 && errno != EINTR) {
            log_err("epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            watch *w = evs[i].data.ptr;
            w->fn(w, evs[i].events);
        }
        after_wake();
    }
}
