/* The daemon's one state (state.h). */
#include "state.h"

#include <errno.h>
#include <sys/statvfs.h>

#include "../common/log.h"
#include "../common/util.h"
#include "job_row.h"
#include "workflow.h"

core_state core;

#define RESYNC_FIRST_MS 1000
#define RESYNC_MAX_MS 60000

/* Jobs whose rows the open transaction writes, and those a failed commit lost. */
static job **txn, **stale;
static size_t ntxn, txn_cap, nstale, stale_cap;
static bool wf_txn, wf_stale;       /* the same for workflows and arrays: all are written again */
static int64_t resync_at_ms, resync_delay_ms;
static unsigned after_commit; /* what the next commit that succeeds asks for (state_want) */

static void push(job ***list, size_t *n, size_t *cap, job *j)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *list = xrealloc(*list, *cap * sizeof **list);
    }
    (*list)[(*n)++] = j;
}

static void drop_from(job **list, size_t *n, job *j)
{
    for (size_t i = 0; i < *n; i++)
        if (list[i] == j) {
            list[i] = list[--*n];
            return;
        }
}

void state_wrote_job(job *j)
{
    if (j->db_mark & STATE_DB_TXN)
        return;
    j->db_mark |= STATE_DB_TXN;
    push(&txn, &ntxn, &txn_cap, j);
}

void state_wrote_new_job(job *j)
{
    j->db_mark |= STATE_DB_NEW;
    state_wrote_job(j);
}

void state_wrote_workflows(void) { wf_txn = true; }

void state_wrote_arrays(void) { wf_txn = true; }

void state_forget_job(job *j)
{
    if (j->db_mark & STATE_DB_TXN)
        drop_from(txn, &ntxn, j);
    if (j->db_mark & STATE_DB_STALE)
        drop_from(stale, &nstale, j);
    j->db_mark = 0;
}

bool state_job_unsaved(const job *j) { return j->db_mark & STATE_DB_STALE; }

/* Other files' rows (state.h) */
#define STATE_ROWS_MAX 8 /* (five now: gpu_service, audit, volumes, job_launch, job_events) */
static const state_rows *rows_kinds[STATE_ROWS_MAX];
static size_t nrows_kinds;

void state_rows_register(const state_rows *r)
{
    if (nrows_kinds < STATE_ROWS_MAX)
        rows_kinds[nrows_kinds++] = r;
    else
        log_err("state: more than %d kinds of rows registered; one is not written again after a failed commit",
                  STATE_ROWS_MAX);
}

static void rows_committed(bool ok)
{
    for (size_t i = 0; i < nrows_kinds; i++)
        rows_kinds[i]->committed(ok);
}

/* Rows a failed commit lost, of any kind. */
static bool unsaved(void)
{
    bool any = nstale || wf_stale;
    for (size_t i = 0; i < nrows_kinds && !any; i++)
        any = rows_kinds[i]->unsaved();
    return any;
}

/* The rows a failed commit lost, written again into the open transaction. */
/* The next resync after a wait: the first a second, then doubling up to a minute. */
static void resync_later(void)
{
    resync_delay_ms = !resync_delay_ms                      ? RESYNC_FIRST_MS
                      : resync_delay_ms * 2 > RESYNC_MAX_MS ? RESYNC_MAX_MS
                                                            : resync_delay_ms * 2;
    resync_at_ms = now_ms() + resync_delay_ms;
}

/* The open transaction holds a resync: rows still lost once it is committed were not written by
 * their statements (they fail while commits do not), and are tried again after a wait. */
static bool resync_in_txn;

static void resync(void)
{
    size_t n = nstale;
    resync_in_txn = true;
    /* other files' rows (a GPU's admin state, drained or offline after an XID, in gpu_admin) */
    for (size_t i = 0; i < nrows_kinds; i++)
        if (rows_kinds[i]->unsaved())
            rows_kinds[i]->resync();
    /* what offer() held back while rows waited (queue.c: state_unsaved, any kind of row, not
     * only jobs' and workflows'): array tasks to start and to make; nothing else may ask for a
     * pass once this commit succeeds (a machine otherwise idle) */
    after_commit |= WANT_SCHEDULE;
    for (size_t i = 0; i < n; i++) {
        job *j = stale[i];
        jerr e = {0};
        j->db_mark &= (uint8_t)~STATE_DB_STALE;
        db_job row;
        if (db_save_job(core.db, job_row(j, &row), &e) < 0)
            log_err("job %s: not saved again: %s", j->id, e.msg);
        state_wrote_job(j);
    }
    nstale = 0;
    if (wf_stale) {
        wf_stale = false;
        for (size_t i = 0; i < core.nworkflows; i++) {
            jerr e = {0};
            db_workflow row;
            if (db_save_workflow(core.db, workflow_row(core.workflows[i], &row), &e) < 0)
                log_err("workflow %s: not saved again: %s", core.workflows[i]->id, e.msg);
        }
        for (size_t i = 0; i < core.narrays; i++) {
            jerr e = {0};
            array_row_buf b;
            if (db_array_save(core.db, array_row(core.arrays[i], &b), &e) < 0)
                log_err("array %s: not saved again: %s", core.arrays[i]->id, e.msg);
        }
        wf_txn = true;
    }
    if (n)
        log_info("database: %zu job rows that a failed commit lost written again", n);
}

int state_commit_now(jerr *e)
{
    jerr de = {0};
    if (db_flush(core.db, &de) == 0) {
        /* (a job whose first row a failed commit lost is still new: its later saves are
         * updates of a row that is not there, until resync writes it whole) */
        for (size_t i = 0; i < ntxn; i++)
            txn[i]->db_mark &= (uint8_t)~(txn[i]->db_mark & STATE_DB_STALE ? STATE_DB_TXN
                                                                            : STATE_DB_TXN | STATE_DB_NEW);
        ntxn = 0;
        wf_txn = false;
        rows_committed(true);
        if (!unsaved()) {
            resync_delay_ms = 0;
        } else if (resync_in_txn) {
            /* written again and committed, and still lost: their own statements fail. Tried
             * again after a wait that doubles, as after a failed commit; at each turn, it made
             * the loop spin (and no array task is made while rows wait: queue.c) */
            resync_later();
        } else { /* the database takes commits again: what waits goes at the next turn */
            resync_at_ms = now_ms();
        }
        resync_in_txn = false;
        state_want(after_commit);
        after_commit = 0;
        return 0;
    }
    /* rolled back: the rows it wrote are in memory only until a later commit */
    for (size_t i = 0; i < ntxn; i++) {
        job *j = txn[i];
        j->db_mark &= (uint8_t)~STATE_DB_TXN;
        if (!(j->db_mark & STATE_DB_STALE)) {
            j->db_mark |= STATE_DB_STALE;
            push(&stale, &nstale, &stale_cap, j);
        }
    }
    ntxn = 0;
    wf_stale |= wf_txn;
    wf_txn = false;
    rows_committed(false);
    resync_in_txn = false;
    resync_later();
    struct statvfs sv;
    uint64_t avail = statvfs(core.cfg.state_dir, &sv) == 0 ? (uint64_t)sv.f_bfree * sv.f_frsize : UINT64_MAX;
    bool full = de.code == ENOSPC || avail < (1u << 20);
    log_err("%s: the commit was rolled back (%zu job rows kept in memory, written again in %lld ms)", de.msg, nstale,
            (long long)resync_delay_ms);
    if (full)
        return jerr_http(e, 507, "joblet's database could not be saved: the state filesystem (%s) is full (%llu KB "
                                 "free); free space there (rnx job delete removes ended jobs and their output)" STATE_COMMIT_AGAIN,
                         core.cfg.state_dir, (unsigned long long)(avail >> 10));
    return jerr_busy(e, "joblet's database could not be saved (%s)" STATE_COMMIT_AGAIN, de.msg);
}

bool state_unsaved(void) { return unsaved(); }

int64_t state_resync_at_ms(void) { return state_unsaved() ? resync_at_ms : 0; }

void state_want_after_commit(unsigned what) { after_commit |= what; }

void state_commit(void)
{
    if (unsaved() && now_ms() >= resync_at_ms)
        resync();
    jerr e = {0};
    state_commit_now(&e);
}

bool state_check_due(int64_t *last_ns, size_t n)
{
    if (core.cfg.log_level < LOG_DEBUG)
        return false;
    int64_t now = mono_ns();
    if (n > STATE_CHECK_EVERY_USE_MAX && *last_ns && now - *last_ns < 1000000000)
        return false;
    *last_ns = now;
    return true;
}
