/* SQLite persistence: one row per job, written on every state change. WAL mode, so a crash
 * at any instant leaves a database that opens with every committed change. */
#ifndef JOBLET_DB_H
#define JOBLET_DB_H

#include "../common/err.h"
#include "../core/job.h"
#include "../core/workflow.h"

typedef struct db db;

db *db_open(const char *path, jerr *e);
void db_close(db *d);
int db_insert_job(db *d, const job *j, jerr *e);
int db_update_job(db *d, const job *j, jerr *e);
int db_delete_job(db *d, const char *id, jerr *e);
/* Calls fn for every job, in submission order; fn takes ownership of the job. */
int db_load_jobs(db *d, void (*fn)(job *j, void *arg), void *arg, jerr *e);
int db_insert_workflow(db *d, const workflow *wf, jerr *e);
int db_update_workflow(db *d, const workflow *wf, jerr *e);
/* Calls fn for every workflow, in submission order; fn takes ownership. */
int db_load_workflows(db *d, void (*fn)(workflow *wf, void *arg), void *arg, jerr *e);
/* Commits what this turn of the event loop wrote (see db.c). */
int db_flush(db *d, jerr *e);
int db_schema_version(db *d);

#endif
