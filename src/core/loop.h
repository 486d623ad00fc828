/* The daemon's single event loop (redis style): every fd that can change state is watched
 * here and handled on this one thread, so state needs no locks. */
#ifndef JOBLET_LOOP_H
#define JOBLET_LOOP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct watch watch;
typedef void (*watch_fn)(watch *w, uint32_t events);
struct watch {
    int fd;
    watch_fn fn;
    void *data;
};

/* Work that goes on at the next turn: a task too long for one turn (a log's --tail search)
 * does a bounded slice, queues itself with loop_later and gives the loop back; while any is
 * queued the loop does not sleep. A task is queued at most once; its fn runs once per queuing,
 * at the start of the next turn, before the turn's requests. */
typedef struct loop_task loop_task;
struct loop_task {
    loop_task *next;
    void (*fn)(loop_task *t);
    void *data;
    bool queued;
};

/* One kind of sliced work's share of a loop turn, for all its requests together: each slice
 * takes what is left (loop_budget_take), and when nothing is left the request waits for the next
 * turn (loop_later). Without it, 64 requests each doing a bounded slice would make a turn 64
 * slices long. Refilled at every turn. */
typedef struct loop_budget {
    uint64_t per_turn;
    uint64_t left, turn;
} loop_budget;
/* Up to want of what is left of b this turn, taken; 0 when none is left. */
uint64_t loop_budget_take(loop_budget *b, uint64_t want);
/* Gives back what a slice took and did not use. */
void loop_budget_return(loop_budget *b, uint64_t unused);

int loop_init(void);
int loop_add(watch *w);
int loop_add_events(watch *w, uint32_t events);
void loop_del(watch *w);
/* Runs until loop_stop(); before_wait returns the epoll timeout in ms (-1 = none). */
void loop_run(int (*before_wait)(void), void (*after_wake)(void));
void loop_stop(void);
/* The turns the loop has made, and the longest of them (ns): from a wake to the next wait, its
 * events, timers, requests and the settle step (metrics: what a request costs everyone else). */
uint64_t loop_turns(void);
int64_t loop_longest_turn_ns(void);
void loop_later(loop_task *t);
void loop_later_cancel(loop_task *t);
/* A turn ends: the per-turn budgets (loop_budget) are whole again. loop_run ends each of its
 * turns so, and a harness that plays requests one turn each (tests/fuzz/fuzz_routes.c) its own. */
void loop_turn_over(void);
/* The tasks queued with loop_later before now, run (loop_run does it every turn; the harness
 * above too, to resume a request parked until the next turn). */
void loop_run_later(void);

#endif
