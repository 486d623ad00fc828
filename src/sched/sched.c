#include "sched.h"

#include <stdlib.h>

/* Strict priority, then submission order: a job never overtakes an older one of equal
 * priority, so nothing starves behind later arrivals. */
static int before(const sched_job *a, const sched_job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    return a->seq < b->seq;
}

/* Insertion into a sorted index list; queues are short and this keeps the code allocation-free. */
static size_t eligible_order(const sched_input *in, size_t *order)
{
    size_t m = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (in->jobs[i].not_before_ms > in->now_ms)
            continue;
        size_t k = m++;
        while (k > 0 && before(&in->jobs[i], &in->jobs[order[k - 1]])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    return m;
}

void sched_decide(const sched_input *in, sched_output *out)
{
    out->nstart = 0;
    out->next_wakeup_ms = 0;
    for (size_t i = 0; i < in->n; i++) {
        int64_t t = in->jobs[i].not_before_ms;
        if (t > in->now_ms && (out->next_wakeup_ms == 0 || t < out->next_wakeup_ms))
            out->next_wakeup_ms = t;
    }
    size_t m = eligible_order(in, out->start);
    size_t room = in->max_running == 0 ? m
                  : in->running >= in->max_running ? 0
                                                   : in->max_running - in->running;
    out->nstart = m < room ? m : room;
}

void sched_positions(const sched_input *in, uint32_t *positions)
{
    size_t *order = malloc((in->n ? in->n : 1) * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < in->n; i++)
        positions[i] = 0;
    size_t m = eligible_order(in, order);
    for (size_t k = 0; k < m; k++)
        positions[order[k]] = (uint32_t)(k + 1);
    free(order);
}
