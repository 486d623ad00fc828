/* A job and a workflow as rows of the database (store/db.h): what of them outlives a restart.
 * The way back, a row into the daemon's job or workflow, is job_new (jobs.h) and workflow_new
 * (workflow.h). */
#ifndef JOBLET_JOB_ROW_H
#define JOBLET_JOB_ROW_H

#include "../store/db.h"
#include "arrays.h"
#include "job.h"
#include "workflow.h"

/* j's row in *out, which borrows j's strings, request and GPUs: valid while j is unchanged.
 * Returns out. */
const db_job *job_row(const job *j, db_job *out);
/* The same for a workflow (it borrows reason and doc). */
const db_workflow *workflow_row(const workflow *wf, db_workflow *out);
/* The same for a job array, its task lists written out into b. */
typedef struct array_row_buf {
    db_array row;
    char spec[2048], skip[6400], ahead[6400], released[1200]; /* (skip, ahead: 256 ranges with steps, 24 B each) */
} array_row_buf;
const db_array *array_row(const jarray *a, array_row_buf *b);

#endif
