/* What the settle step publishes on GET /v1/events (events.h), once per loop turn, after the
 * turn's state changes have settled: a job's state or queue place, a workflow's state, a GPU's
 * state or holders, a GPU's new health sample. Nothing is scanned while no stream is open; the
 * first stream starts from the state as it is (its client loads it with the JSON API). */
#ifndef JOBLET_PUBLISH_H
#define JOBLET_PUBLISH_H

void publish_changes(void);

#endif
