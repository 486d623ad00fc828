/* The daemon's single event loop (redis style): every fd that can change state is watched
 * here and handled on this one thread, so state needs no locks. */
#ifndef JOBLET_LOOP_H
#define JOBLET_LOOP_H

#include <stdint.h>

typedef struct watch watch;
typedef void (*watch_fn)(watch *w, uint32_t events);
struct watch {
    int fd;
    watch_fn fn;
    void *data;
};

int loop_init(void);
int loop_add(watch *w);
int loop_add_events(watch *w, uint32_t events);
void loop_del(watch *w);
/* Runs until loop_stop(); before_wait returns the epoll timeout in ms (-1 = none). */
void loop_run(int (*before_wait)(void), void (*after_wake)(void));
void loop_stop(void);

#endif
