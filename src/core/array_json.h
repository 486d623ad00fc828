/* A job array as the API and rnx see it (array_json.c): JSON at the API's edge. */
#ifndef JOBLET_ARRAY_JSON_H
#define JOBLET_ARRAY_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "arrays.h"

/* {"id", "kind": "array", "name", "state", "owner_uid", "created_at", "command", "args",
 *  "request", "array": {"spec", "ref", "tasks", "throttle", "min", "max", "made", "counts": {STATE: n},
 *  "deleted", "held", "canceled_by", "wait"}}: one line of rnx job list. */
json_t *array_json(const jarray *a);
/* A task not made (it waits, or was canceled before it was made): {"id": "ID_T", "kind":
 * "task", "state", "array": {"id", "task", "ref"}, "made": false}. */
json_t *array_task_json(const jarray *a, uint32_t t);
/* What GET /v1/jobs/{array}?detail=1 adds as "detail": {"request", "events", "events_dropped"},
 * its own history (job_events.h: held, released, updated, ... by whom); each task made has its
 * own. */
json_t *array_json_detail(const jarray *a);

#endif
