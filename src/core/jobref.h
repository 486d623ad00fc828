/* Which job or job array a user's reference names (jobref.c): "ID" (a full id, a number, a name,
 * a unique prefix: common/idref.h), and "ID_7" or "ID_[3-5]", tasks of the array ID names. The
 * one resolver of the routes under /v1/jobs/{ref} and of --after (core/depend.c), so that a
 * reference names the same thing wherever it is given. */
#ifndef JOBLET_JOBREF_H
#define JOBLET_JOBREF_H

#include <stdbool.h>

#include "../common/arrayspec.h"
#include "../common/err.h"
#include "../common/idref.h"
#include "arrays.h"
#include "authz.h"
#include "job.h"

/* What a reference names: a job (an array's made task too, by its own id or ID_T), or an
 * array (tasks_named: some of its tasks, ID_T of a task not made or ID_[LIST]). */
typedef struct jobref {
    job *j;
    jarray *a;
    bool tasks_named;
    arrayspec tasks;
} jobref;

/* The arrays and jobs the caller may see, as jobs_find resolves jobs (full id, number, name,
 * unique prefix); an array's tasks have no name of their own (the array's is the array's). ID_T
 * and ID_[LIST] name tasks of the array ID names. want: what the action applies to
 * (common/idref.h): IDREF_LIVE, a name among the jobs and arrays not ended (an array is ended
 * when each of its tasks is, arrays_ended); IDREF_ENDED, among the ended ones; also for the array
 * of ID_T. 0, or -1 with e set (404, 409, 400 for a bad list; a task the array does not have:
 * 404 with out->a the array). */
int jobref_find(const char *ref, const caller *who, enum idref_want want, jobref *out, jerr *e);
/* What an operation that needs one job (method action: "PUT archive") says when given array a,
 * or tasks of it (NULL: the whole array; one not started yet, or several), in e: -1. */
int jobref_not_a_job(const jarray *a, const arrayspec *tasks, const char *method, const char *action, jerr *e);

#endif
