/* The part `rnx job status --detail` adds after the job's status (print_detail.c), from the
 * job object's "detail" (GET /v1/jobs/{id}?detail=1, docs/api.md). */
#ifndef JOBLET_PRINT_DETAIL_H
#define JOBLET_PRINT_DETAIL_H

#include <jansson.h>
#include <stdio.h>

/* Request, Placement, Devices, Mounts, Env names, Runs as, Limits, GPU usage, Events: every
 * text that a user or joblet controls printed escaped (print_textf). Nothing when the job has
 * no "detail". */
void print_detail(json_t *job, FILE *f);

#endif
