#include "db.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "seal.h"

struct db {
    sqlite3 *h;
    bool in_txn;
    /* the turn's transaction was rolled back by SQLite itself, not by us: a statement failed with
     * SQLITE_FULL or an I/O error (a cache spill into a WAL that cannot grow), and SQLite went back
     * to autocommit. What the turn wrote before is gone; what it writes after must not be
     * committed statement by statement: a new transaction takes it, and db_flush rolls that back
     * and fails, as a failed COMMIT does (db.h: a commit that fails is rolled back whole). */
    bool lost;
    bool deleted;             /* this transaction deleted a job: checkpoint the WAL after it */
    bool marked;              /* a db_mark is open (db_undo, db_keep close it) */
    int64_t busy_since_ms;    /* the transaction first waited for another process's lock (on_busy) */
    bool busy_failed;         /* a wait for it gave up, and no commit went through since */
    bool gave_up;             /* such a wait gave up in this transaction: a write of it failed, even if
                               * its statement was used again (reset) once the lock went */
    bool ckpt_blocked;        /* the last WAL checkpoint gave up waiting for another process (a reader) */
    seal_key *key;            /* seals secret_env (seal.h) */
    sqlite3_stmt *ins, *upd, *del, *wf_ins, *wf_upd, *audit_ins;
    sqlite3_stmt *ev_ins, *ev_trim, *ev_del;
    sqlite3_stmt *hw_job, *hw_array; /* keep_high_water for a job, for an array */
    sqlite3_stmt *meta_add;          /* usage_add (made at first use) */
    sqlite3_stmt *extra_set[2], *extra_get[2]; /* db_job_extra_set, _get, by enum db_job_extra (made at first use) */
    bool orphans_left;        /* history events of no job were found at open and could not be deleted */
    bool was_clean;           /* the joblet before stopped clean (db_stopped_clean), as this one opened */
    bool clean_in_db;         /* ... and its row is still there: the first transaction that writes
                               * deletes it (begin), gone once that commits */
    bool clean_deleted;       /* this transaction deleted it */
};

/* Migrations, applied in order; user_version is the number applied. Never edit a shipped one. */
static const char *const migrations[] = {
    /* 1: jobs */
    "CREATE TABLE jobs ("
    "  id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, name TEXT, state TEXT NOT NULL,"
    "  owner_uid INTEGER NOT NULL, owner_gid INTEGER NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
    "  request TEXT NOT NULL, created_ms INTEGER NOT NULL, scheduled_ms INTEGER, started_ms INTEGER,"
    "  ended_ms INTEGER, exit_code INTEGER, signal INTEGER, signal_name TEXT, end_reason TEXT,"
    "  stopped_by INTEGER, error TEXT, usage TEXT, shim_pid INTEGER, shim_start INTEGER, init_pid INTEGER);"
    "CREATE INDEX jobs_state ON jobs(state);",
    /* 2: the GPUs a job holds or held (JSON list), kept after it ends for its history */
    "ALTER TABLE jobs ADD COLUMN gpus TEXT;",
    /* 3: preemption: how many times, and whether the stop under way puts it back in the queue */
    "ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN preempting INTEGER NOT NULL DEFAULT 0;",
    /* 4: workflows, and the place of a job in one */
    "CREATE TABLE workflows ("
    "  id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, owner_uid INTEGER NOT NULL, owner_gid INTEGER NOT NULL,"
    "  state TEXT NOT NULL, created_ms INTEGER NOT NULL, started_ms INTEGER, ended_ms INTEGER,"
    "  canceled_by INTEGER, reason TEXT, doc TEXT NOT NULL);"
    "ALTER TABLE jobs ADD COLUMN workflow_id TEXT;"
    "ALTER TABLE jobs ADD COLUMN workflow_index INTEGER;",
    /* 5: the audit trail, and GPU states an admin set (they outlive a restart) */
    "CREATE TABLE audit (id INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, uid INTEGER, action TEXT NOT NULL,"
    "  gpu INTEGER, gpu_uuid TEXT, job TEXT, duration_ms INTEGER, memory_mb INTEGER, detail TEXT);"
    "CREATE INDEX audit_ts ON audit(ts_ms);"
    "CREATE TABLE gpu_admin (uuid TEXT PRIMARY KEY, state TEXT NOT NULL, reason TEXT, since_ms INTEGER);",
    /* 6: volumes (docs/volumes.md): what each is; the image or tmpfs itself is on disk */
    "CREATE TABLE volumes (name TEXT PRIMARY KEY, type TEXT NOT NULL, size_mb INTEGER NOT NULL,"
    "  owner_uid INTEGER NOT NULL, owner_gid INTEGER NOT NULL, created_ms INTEGER NOT NULL);",
    /* 7: which GPU failed a job (end_reason gpu_error), how and by whom (JSON, gpu/grant.h) */
    "ALTER TABLE jobs ADD COLUMN gpu_fault TEXT;",
    /* 8: what `rnx job status --detail` shows (core/job_events.c, core/job_detail.c): each job's
     * history, numbered from 1 per job (the oldest beyond a bound are deleted, so the lowest
     * number kept says how many went), and its placement and spec summary as written when it
     * got its GPUs and when it started (JSON; written apart from the row, read only on demand) */
    "CREATE TABLE job_events (job_id TEXT NOT NULL, n INTEGER NOT NULL, ts_ms INTEGER NOT NULL,"
    "  event TEXT NOT NULL, uid INTEGER, detail TEXT, PRIMARY KEY (job_id, n)) WITHOUT ROWID;"
    "ALTER TABLE jobs ADD COLUMN placement TEXT;"
    "ALTER TABLE jobs ADD COLUMN spec TEXT;",
    /* 9: GPU samples for the console's History page (core/gpu_history.c): one row per GPU and
     * minute (span_s 60), averaged into one per hour (span_s 3600) after a day, deleted after
     * history.keep_days; values are means over the span, NULL where nothing was known */
    "CREATE TABLE gpu_samples (gpu INTEGER NOT NULL, span_s INTEGER NOT NULL, t_ms INTEGER NOT NULL,"
    "  util REAL, temp REAL, mem_mb REAL, power REAL, allocated REAL NOT NULL,"
    "  PRIMARY KEY (gpu, span_s, t_ms)) WITHOUT ROWID;"
    "CREATE INDEX gpu_samples_t ON gpu_samples(t_ms);",
    /* 10: a running gVisor job's sandbox uid (exec/oci.h), in its row: a restarted joblet keeps
     * it held, also when the commit that wrote its spec summary failed (rows are written again) */
    "ALTER TABLE jobs ADD COLUMN sandbox_uid INTEGER;",
    /* 11: who acted through the TLS listener (docs/remote.md): the person their certificate
     * names, its serial, their role and the address they came from */
    "ALTER TABLE audit ADD COLUMN person TEXT;"
    "ALTER TABLE audit ADD COLUMN serial TEXT;"
    "ALTER TABLE audit ADD COLUMN role TEXT;"
    "ALTER TABLE audit ADD COLUMN peer TEXT;",
    /* 12: a Slurm task's ids (core/slurm_task.h; common/slurmcg.h's JSON), NULL for other jobs */
    "ALTER TABLE jobs ADD COLUMN slurm TEXT;",
    /* 13: job networks (core/networks.h): the named networks, and where a job sits on one
     * ({"network", "addr", "host_if"}: common/netaddr.h), NULL for jobs on none or host */
    "CREATE TABLE networks (name TEXT PRIMARY KEY, cidr TEXT NOT NULL, owner_uid INTEGER NOT NULL,"
    "  created_ms INTEGER NOT NULL);"
    "ALTER TABLE jobs ADD COLUMN net TEXT;",
    /* 14: job arrays (core/arrays.h): one row an array however many tasks it has (the request,
     * the task list, how far its tasks were made, which of those not made were canceled); a
     * task is a job once made, with its array and task id */
    "CREATE TABLE arrays (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, name TEXT,"
    "  owner_uid INTEGER NOT NULL, owner_gid INTEGER NOT NULL, request TEXT NOT NULL, spec TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL, made INTEGER NOT NULL, skip TEXT, canceled_by INTEGER, held INTEGER NOT NULL DEFAULT 0);"
    "ALTER TABLE jobs ADD COLUMN array_id TEXT;"
    "ALTER TABLE jobs ADD COLUMN array_task INTEGER;",
    /* 15: an array may be a workflow's job (core/workflow.c): which workflow, and its place there */
    "ALTER TABLE arrays ADD COLUMN workflow_id TEXT;"
    "ALTER TABLE arrays ADD COLUMN workflow_index INTEGER;",
    /* 16: job control (core/job_ctl.c): whether the stop under way is rnx job requeue's (1) and
     * with --hold (2), and the run's time suspended (ms, ended suspensions) and since when it is
     * suspended now: a restarted joblet keeps both */
    "ALTER TABLE jobs ADD COLUMN requeue INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN suspended_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN suspended_since_ms INTEGER;",
    /* 17: an array's tasks made out of its list's order (--after=ARRAY:corr: a task whose own
     * task completed goes before those that wait), ahead of `made`, as `skip` is kept */
    "ALTER TABLE arrays ADD COLUMN ahead TEXT;",
    /* 18: the highest job or array number (seq) deleted: a number is never given twice, even
     * after the newest job is deleted and joblet restarts (SLURM_JOB_ID is the job's number) */
    "CREATE TABLE high_water (name TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    /* 19: a job's or an array's `after` held once (core/depend.c): it is not decided again (the
     * jobs it named may be deleted since). Rows from before: a job out of PENDING and HELD was
     * let go (or ended), and so was an array that made a task; a HELD job and an array with no
     * task made cannot be told from the row: the first start decides them again (as before),
     * which sets it where their dependencies still hold */
    "ALTER TABLE jobs ADD COLUMN after_met INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE arrays ADD COLUMN after_met INTEGER NOT NULL DEFAULT 0;"
    "UPDATE jobs SET after_met = 1 WHERE state NOT IN ('PENDING', 'HELD');"
    "UPDATE arrays SET after_met = 1 WHERE made > 0 OR ahead IS NOT NULL;",
    /* 20: who holds a held array (an admin's hold is released only by an admin: core/authz.h), and
     * the tasks whose jobs were deleted, by the state they ended in, with their highest exit
     * code: an array's record stays whole (core/arrays.h). Rows from before: the holder is not
     * known (NULL), and tasks deleted before are not known either (counted in none) */
    "ALTER TABLE arrays ADD COLUMN held_by INTEGER;"
    "ALTER TABLE arrays ADD COLUMN gone_stopped INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE arrays ADD COLUMN gone_completed INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE arrays ADD COLUMN gone_failed INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE arrays ADD COLUMN gone_canceled INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE arrays ADD COLUMN gone_exit INTEGER NOT NULL DEFAULT 0;",
    /* 21: why joblet canceled an array's tasks left (its dependencies can never hold, or its tasks
     * can never be made: core/arrays.h), kept over a restart. Rows from before: not known (NULL) */
    "ALTER TABLE arrays ADD COLUMN canceled_why TEXT;",
    /* 22: when a job or array last joined the queue by a release from a hold or a new --schedule:
     * its place in the queue is taken from then, not from its submission (core/queue.c). Rows
     * from before: never (0) */
    "ALTER TABLE jobs ADD COLUMN joined_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE arrays ADD COLUMN joined_ms INTEGER NOT NULL DEFAULT 0;",
    /* 23: when an array's tasks not made yet were last canceled (all of them, or some by id): the
     * end of an array whose last tasks were never made (core/arrays.h). Rows from before: not
     * known (0) */
    "ALTER TABLE arrays ADD COLUMN canceled_ms INTEGER NOT NULL DEFAULT 0;",
    /* 24: of an array held whole, its tasks released from that hold one by one (rnx job release
     * ID_[3-5]), by their places in its list ("3-5,9": at most ARRAYS_RELEASED_MAX ranges,
     * core/arrays.h). Rows from before: none */
    "ALTER TABLE arrays ADD COLUMN released TEXT;",
    /* 25: a job canceled while another uid than its owner held it (an admin's hold): its owner's
     * requeue of it is an admin's to allow, as the release it was not let do (core/job.h:
     * ended_held). Rows from before: not known (0) */
    "ALTER TABLE jobs ADD COLUMN ended_held INTEGER NOT NULL DEFAULT 0;",
    /* 26: an ended job's output files' size on disk, in bytes (core/statedisk.h: what its owner's
     * log budget counts for it), so that a start sums the budgets without looking at every ended
     * job's files. NULL: not known (rows from before, a job that has not ended): looked at, at
     * each start */
    "ALTER TABLE jobs ADD COLUMN log_bytes INTEGER;",
    /* 27: facts about the database as a whole, by name: 'stopped_clean' (db_stopped_clean), the
     * joblet that wrote last stopped with everything committed */
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    /* 28: an array's skip (its tasks canceled before they were made) may hold ranges with a step,
     * kept as ahead's are (core/arrays.h): a joblet of before merged skip as ranges of step 1 and
     * would miscount such a row, so it refuses this schema (a downgrade: refuse_newer) rather than
     * read it. Nothing to change: rows from before hold ranges of step 1, read as they are */
    "SELECT 1;",
};

/* Keeps the number (seq) of the job or array about to be deleted as the high water mark, in the
 * open transaction (st: d->hw_job or d->hw_array). */
#define HIGH_WATER_SQL(table)                                                                              \
    "INSERT INTO high_water (name, value) SELECT 'seq', seq FROM " table " WHERE id = ?1 "                  \
    "ON CONFLICT(name) DO UPDATE SET value = max(value, excluded.value)"
/* A failed write's errno: EBUSY for another process's lock (a moment later it may go through),
 * ENOSPC for a full disk, EIO else. */
static int write_errno(db *d)
{
    int c = sqlite3_errcode(d->h);
    return c == SQLITE_FULL ? ENOSPC : c == SQLITE_BUSY ? EBUSY : EIO;
}

int db_busy_refusal(jerr *e, const char *nothing_was)
{
    if (e->code != EBUSY)
        return -1;
    char why[sizeof e->msg];
    snprintf(why, sizeof why, "%s", e->msg);
    return jerr_busy(e, "joblet's database is locked by another process (%s); nothing was %s: try again in a moment",
                     why, nothing_was);
}

static int keep_high_water(db *d, sqlite3_stmt *st, const char *id, jerr *e)
{
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, write_errno(d), "database: %s: keeping its number: %s", id,
                                            sqlite3_errmsg(d->h));
}

int db_high_water(db *d, uint64_t *out, jerr *e)
{
    sqlite3_stmt *st;
    *out = 0;
    if (sqlite3_prepare_v2(d->h, "SELECT value FROM high_water WHERE name = 'seq'", -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: the highest number deleted: %s", sqlite3_errmsg(d->h));
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE
               ? 0
               : jerr_set(e, EIO, "database: the highest number deleted: %s", sqlite3_errmsg(d->h));
}

static int exec_sql(db *d, const char *sql, jerr *e)
{
    char *err = NULL;
    if (sqlite3_exec(d->h, sql, NULL, NULL, &err) != SQLITE_OK) {
        jerr_set(e, EIO, "database: %s", err ? err : sqlite3_errmsg(d->h));
        sqlite3_free(err);
        return -1;
    }
    return 0;
}

int db_schema_version(db *d)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(d->h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A database written by a newer joblet (a downgrade): refused before anything is written to it,
 * journal mode included, so that the newer joblet finds it as it left it. */
static int refuse_newer(db *d, const char *path, jerr *e)
{
    int have = db_schema_version(d);
    int want = (int)ARRAY_LEN(migrations);
    if (have < 0)
        return jerr_set(e, EIO, "cannot read the schema version of %s: %s", path, sqlite3_errmsg(d->h));
    if (have > want)
        return jerr_set(e, DB_NEWER_SCHEMA,
                        "%s has schema version %d, newer than joblet " JOBLET_VERSION " knows (%d): it was written "
                        "by a newer joblet. Refusing to start rather than use or change it; install that joblet "
                        "again (downgrades are not supported) or start on another --state-dir",
                        path, have, want);
    return 0;
}

static int migrate(db *d, jerr *e)
{
    int have = db_schema_version(d);
    int want = (int)ARRAY_LEN(migrations);
    for (int v = have; v < want; v++) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version=%d;", v + 1);
        if (exec_sql(d, "BEGIN IMMEDIATE;", e) < 0)
            return -1;
        if (exec_sql(d, migrations[v], e) < 0 || exec_sql(d, pragma, e) < 0) {
            exec_sql(d, "ROLLBACK;", NULL);
            return -1;
        }
        if (exec_sql(d, "COMMIT;", e) < 0)
            return -1;
        if (have) /* (each step committed, so a failure names where it stopped) */
            log_info("database migrated to schema version %d", v + 1);
    }
    if (!have)
        log_info("database made at schema version %d", want);
    return 0;
}

static const char *COLS = "id, seq, name, state, owner_uid, owner_gid, uid, gid, request, created_ms, scheduled_ms,"
                          " started_ms, ended_ms, exit_code, signal, signal_name, end_reason, stopped_by, error,"
                          " usage, shim_pid, shim_start, init_pid, gpus, preemptions, preempting, workflow_id, workflow_index,"
                          " gpu_fault, sandbox_uid, slurm, net, array_id, array_task, requeue, suspended_ms,"
                          " suspended_since_ms, after_met, joined_ms, ended_held, log_bytes";

/* A job's usage (the column, a JSON object written by db_save_job) as five numbers, read
 * after COLS; NULL where the column is NULL, not JSON, or has no such number. */
#define USAGE_FIG(k) ", CASE WHEN json_valid(usage) THEN json_extract(usage, '$." k "') END"
#define USAGE_COLS                                                                                                   \
    USAGE_FIG("cpu_ns") USAGE_FIG("memory_peak_bytes") USAGE_FIG("io_read_bytes") USAGE_FIG("io_write_bytes")         \
        USAGE_FIG("gpu_ms_before")

static int reseal(db *d, jerr *e);
static int open_key(db *d, const char *path, const char *keypath, jerr *e);

/* How long one transaction (a turn's writes) waits in all for a lock another process holds: up to
 * BUSY_FIRST_MS, and while such a wait gave up and no commit went through since, BUSY_AGAIN_MS. A
 * lock held for minutes (a sqlite3 shell left in a transaction, a backup tool) cost the loop 5 s
 * for each statement that waited, every turn: a stop waited more than a minute for its answer,
 * and every other request with it. Meanwhile the turns' rows wait in memory and are written again
 * once the database takes commits (core/state.c), and a job's command waits for its start's
 * (core/job_launch.c). */
#define BUSY_FIRST_MS 5000
#define BUSY_AGAIN_MS 50

static int on_busy(void *arg, int tries)
{
    static const int sleep_ms[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50}; /* (SQLite's own steps) */
    db *d = arg;
    int64_t now = mono_ms();
    if (!d->busy_since_ms)
        d->busy_since_ms = now;
    int64_t left = (d->busy_failed ? BUSY_AGAIN_MS : BUSY_FIRST_MS) - (now - d->busy_since_ms);
    if (left <= 0) {
        d->busy_failed = true;
        d->gave_up |= d->in_txn;
        return 0;
    }
    int ms = tries < (int)ARRAY_LEN(sleep_ms) ? sleep_ms[tries] : 100;
    usleep((useconds_t)(ms < left ? ms : left) * 1000);
    return 1;
}

static char *col_str(sqlite3_stmt *st, int i);

db *db_open(const char *path, jerr *e)
{
    db *d = xcalloc(1, sizeof *d);
    if (sqlite3_open_v2(path, &d->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        jerr_set(e, EIO, "cannot open database %s: %s", path, sqlite3_errmsg(d->h));
        goto fail;
    }
    sqlite3_busy_handler(d->h, on_busy, d);
    /* root's alone (the state directory is 0700 too): SQLite makes the -wal and -shm files with
     * the database's mode, and a database copied out or a directory made 0755 by hand would
     * otherwise show every job's row to every user */
    for (int i = 0; i < 3; i++) { /* (and those an older joblet left 0644) */
        char f[4200];
        snprintf(f, sizeof f, "%s%s", path, i == 0 ? "" : i == 1 ? "-wal" : "-shm");
        if (chmod(f, 0600) < 0 && errno != ENOENT)
            log_warn("cannot make %s 0600: %s", f, strerror(errno));
    }
    if (refuse_newer(d, path, e) < 0)
        goto fail;
    /* WAL + NORMAL: a commit survives a crash of joblet (the WAL is in the page cache);
     * only a power loss may lose the last commits, never corrupt the file. */
    /* A 1 MiB page cache: every job is also held in memory, so the database is mostly written;
     * SQLite's default (~8 MiB) would only inflate the daemon's footprint. */
    /* secure_delete: a deleted job's bytes are overwritten with zeros, not left in free pages */
    if (exec_sql(d, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
                    " PRAGMA cache_size=-1024; PRAGMA secure_delete=ON;", e) < 0 ||
        migrate(d, e) < 0)
        goto fail;
    /* History rows of no job nor array: a job's events kept while commits failed (job_events.c)
     * may be committed before its own lost row is, and joblet end between the two; nothing else
     * would ever delete them. Looked for (a read: one scan of the table, at the start only), and
     * deleted only when there are some: a start while another process holds the write lock
     * waits for no write, and one that cannot delete them now leaves them to the next start. */
    /* Only after a joblet that did not stop clean (db_stopped_clean): one that did had every
     * row and event committed, and left none such. */
    static const char orphans[] = "FROM job_events WHERE job_id NOT IN (SELECT id FROM jobs)"
                                  " AND job_id NOT IN (SELECT id FROM arrays)";
    char q[256];
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(d->h, "SELECT value FROM meta WHERE name = 'stopped_clean'", -1, &st, NULL) == SQLITE_OK) {
        d->was_clean = d->clean_in_db = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
        sqlite3_finalize(st);
    }
    snprintf(q, sizeof q, "SELECT EXISTS (SELECT 1 %s)", orphans);
    if (!d->was_clean && sqlite3_prepare_v2(d->h, q, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            found = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    if (found) {
        jerr de = {0};
        snprintf(q, sizeof q, "DELETE %s;", orphans);
        if (exec_sql(d, q, &de) < 0) {
            log_warn("database: history events of no job left for the next start: %s", de.msg);
            d->orphans_left = true;
        }
        else
            log_info("database: %d history events of no job deleted", sqlite3_changes(d->h));
    }
    char keypath[4200];
    snprintf(keypath, sizeof keypath, "%s.key", path);
    if (open_key(d, path, keypath, e) < 0 || reseal(d, e) < 0)
        goto fail;
    char sql[1024];
    snprintf(sql, sizeof sql, "INSERT INTO jobs (%s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", COLS);
    const char *upd = "UPDATE jobs SET name=?3, state=?4, owner_uid=?5, owner_gid=?6, uid=?7, gid=?8, request=?9,"
                      " created_ms=?10, scheduled_ms=?11, started_ms=?12, ended_ms=?13, exit_code=?14, signal=?15,"
                      " signal_name=?16, end_reason=?17, stopped_by=?18, error=?19, usage=?20, shim_pid=?21,"
                      " shim_start=?22, init_pid=?23, gpus=?24, preemptions=?25, preempting=?26,"
                      " workflow_id=?27, workflow_index=?28, gpu_fault=?29, sandbox_uid=?30, slurm=?31, net=?32,"
                      " array_id=?33, array_task=?34, requeue=?35, suspended_ms=?36, suspended_since_ms=?37,"
                      " after_met=?38, joined_ms=?39, ended_held=?40, log_bytes=?41 WHERE id=?1 AND seq=?2";
    if (sqlite3_prepare_v3(d->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &d->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(d->h, upd, -1, SQLITE_PREPARE_PERSISTENT, &d->upd, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(d->h, "DELETE FROM jobs WHERE id=?", -1, SQLITE_PREPARE_PERSISTENT, &d->del, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v3(d->h, "DELETE FROM job_events WHERE job_id=?", -1, SQLITE_PREPARE_PERSISTENT, &d->ev_del,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(d->h, HIGH_WATER_SQL("jobs"), -1, SQLITE_PREPARE_PERSISTENT, &d->hw_job, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v3(d->h, HIGH_WATER_SQL("arrays"), -1, SQLITE_PREPARE_PERSISTENT, &d->hw_array, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v3(d->h,
                           "INSERT INTO job_events (job_id, n, ts_ms, event, uid, detail) VALUES (?1,"
                           " (SELECT COALESCE(MAX(n), 0) + 1 FROM job_events WHERE job_id = ?1), ?2, ?3, ?4, ?5)",
                           -1, SQLITE_PREPARE_PERSISTENT, &d->ev_ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(d->h,
                           "DELETE FROM job_events WHERE job_id = ?1 AND"
                           " n <= (SELECT MAX(n) FROM job_events WHERE job_id = ?1) - ?2",
                           -1, SQLITE_PREPARE_PERSISTENT, &d->ev_trim, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(d->h,
                           "INSERT INTO workflows (id, seq, owner_uid, owner_gid, state, created_ms, started_ms,"
                           " ended_ms, canceled_by, reason, doc) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           -1, SQLITE_PREPARE_PERSISTENT, &d->wf_ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(d->h,
                           "UPDATE workflows SET owner_uid=?3, owner_gid=?4, state=?5, created_ms=?6, started_ms=?7,"
                           " ended_ms=?8, canceled_by=?9, reason=?10, doc=?11 WHERE id=?1 AND seq=?2",
                           -1, SQLITE_PREPARE_PERSISTENT, &d->wf_upd, NULL) != SQLITE_OK) {
        jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
        goto fail;
    }
    return d;
fail:
    db_close(d);
    return NULL;
}

void db_stopped_clean(db *d)
{
    if (d->orphans_left || d->in_txn)
        return;
    jerr e = {0};
    if (exec_sql(d, "INSERT OR REPLACE INTO meta (name, value) VALUES ('stopped_clean', 1);", &e) < 0)
        log_warn("%s (the next start looks through the history)", e.msg);
}

void db_close(db *d)
{
    if (!d)
        return;
    db_flush(d, NULL);
    sqlite3_finalize(d->ins);
    sqlite3_finalize(d->upd);
    sqlite3_finalize(d->del);
    sqlite3_finalize(d->wf_ins);
    sqlite3_finalize(d->wf_upd);
    sqlite3_finalize(d->audit_ins);
    sqlite3_finalize(d->ev_ins);
    sqlite3_finalize(d->ev_trim);
    sqlite3_finalize(d->ev_del);
    sqlite3_finalize(d->hw_job);
    sqlite3_finalize(d->hw_array);
    sqlite3_finalize(d->meta_add);
    for (int i = 0; i < 2; i++) {
        sqlite3_finalize(d->extra_set[i]);
        sqlite3_finalize(d->extra_get[i]);
    }
    sqlite3_close(d->h);
    seal_key_free(d->key);
    free(d);
}

static void bind_opt_i64(sqlite3_stmt *st, int i, int64_t v, bool present)
{
    if (present)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* Writes join one transaction per turn of the event loop, committed by db_flush before any
 * answer leaves the daemon: a client never sees a change the database does not hold, and a
 * burst of submissions costs one commit instead of four per job. */
static int begin(db *d)
{
    if (d->in_txn && !sqlite3_get_autocommit(d->h))
        return 0;
    if (d->in_txn) {
        d->lost = true;
        log_warn("database: the turn's transaction was rolled back by SQLite after a statement failed; what the "
                 "turn writes is not committed");
    }
    d->busy_since_ms = 0;
    d->gave_up = false;
    if (exec_sql(d, "BEGIN;", NULL) < 0)
        return -1;
    d->in_txn = true;
    /* this joblet writes: the database is no longer as a clean stop left it (a joblet killed
     * before this commits wrote nothing, and leaves it so) */
    d->clean_deleted = d->clean_in_db && exec_sql(d, "DELETE FROM meta WHERE name = 'stopped_clean';", NULL) == 0;
    return 0;
}

/* Whether the database's filesystem has less than a few pages free: why SQLite rolled back. */
static bool db_disk_full(db *d)
{
    const char *path = sqlite3_db_filename(d->h, "main");
    struct statvfs vf;
    return path && *path && statvfs(path, &vf) == 0 && (uint64_t)vf.f_bavail * vf.f_frsize < (64u << 10);
}

/* A stored request's secret_env, sealed: {"secret_env_sealed": "v1:..."} in its place. */
static void seal_request(db *d, json_t *rj)
{
    json_t *sec = json_object_get(rj, "secret_env");
    if (!sec)
        return;
    char *text = json_dumps(sec, JSON_COMPACT);
    if (!text)
        abort();
    char *sealed = seal_text(d->key, text);
    sodium_memzero(text, strlen(text));
    free(text);
    json_object_del(rj, "secret_env");
    json_object_set_new(rj, "secret_env_sealed", json_string(sealed));
    free(sealed);
}

static int unseal_request(db *d, json_t *rj, jerr *e)
{
    json_t *sealed = json_object_get(rj, "secret_env_sealed");
    if (!sealed)
        return 0;
    char *text = json_is_string(sealed) ? seal_open_text(d->key, json_string_value(sealed), e) : NULL;
    json_object_del(rj, "secret_env_sealed");
    if (!text)
        return -1;
    json_t *sec = json_loads(text, 0, NULL);
    sodium_memzero(text, strlen(text));
    free(text);
    if (!json_is_object(sec)) {
        json_decref(sec);
        return jerr_set(e, EINVAL, "the sealed secret environment is not an object");
    }
    json_object_set_new(rj, "secret_env", sec);
    return 0;
}

/* The key of the sealed secrets (d->key), read; made only while the database holds no sealed
 * value. A new key over values sealed with a lost one would load their jobs without their
 * secrets, run them so, and overwrite the sealed values at their next save: putting the key
 * back could not bring them back. So a key missing, or one that opens none of them, refuses
 * the start, while a job that has not ended (or an array) holds one. An ended job never runs
 * again: its values that do not open (a key an older joblet replaced when it was lost) are left
 * out at load, as before, and do not keep the daemon from starting. (One value that does not
 * open, the others opening, is a damaged row: db_load_jobs leaves that one's secrets out and
 * says so.) */
static int open_key(db *d, const char *path, const char *keypath, jerr *e)
{
    jerr ke = {0};
    d->key = seal_key_open(keypath, false, &ke);
    if (!d->key && ke.code != ENOENT) {
        *e = ke;
        return -1;
    }
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(d->h,
                           "SELECT request FROM jobs WHERE request LIKE '%\"secret_env_sealed\"%' AND state NOT IN"
                           " ('STOPPED', 'COMPLETED', 'FAILED', 'CANCELED') UNION ALL"
                           " SELECT request FROM arrays WHERE request LIKE '%\"secret_env_sealed\"%'",
                           -1, &q, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    long sealed = 0;
    bool opens = false;
    while (!opens && sqlite3_step(q) == SQLITE_ROW) {
        json_t *rj = json_loads((const char *)sqlite3_column_text(q, 0), 0, NULL);
        json_t *v = json_object_get(rj, "secret_env_sealed");
        if (json_is_string(v)) {
            sealed++;
            jerr oe = {0};
            char *text = d->key ? seal_open_text(d->key, json_string_value(v), &oe) : NULL;
            if (text) {
                opens = true;
                sodium_memzero(text, strlen(text));
                free(text);
            }
        }
        json_decref(rj);
    }
    sqlite3_finalize(q);
    if (opens)
        return 0;
    if (sealed)
        return jerr_set(e, EINVAL,
                        "%s holds %ld secret environment%s (of jobs not ended, or arrays) sealed with the key %s, and that key "
                        "is %s. Refusing to start rather than run those jobs without their secrets and overwrite "
                        "them: put the key file back (root-owned, mode 0600, from the backup the database came "
                        "from), or give up those jobs and their secrets by starting on another --state-dir",
                        path, sealed, sealed == 1 ? "" : "s", keypath,
                        d->key ? "not the one they were sealed with (it opens none of them)" : "missing");
    if (!d->key && !(d->key = seal_key_open(keypath, true, e)))
        return -1;
    return 0;
}

/* Rows written before secrets were sealed (or by hand): sealed now, once, at open. Not after a
 * clean stop (db_stopped_clean): that joblet sealed them as it opened, and wrote only sealed
 * rows (a joblet of before sealing refuses this schema): a look at every stored request saved
 * (0.7-1 s with 162,000 jobs). */
static int reseal(db *d, jerr *e)
{
    if (d->was_clean)
        return 0;
    sqlite3_stmt *q, *u;
    if (sqlite3_prepare_v2(d->h, "SELECT id, request FROM jobs WHERE request LIKE '%\"secret_env\"%'", -1, &q, NULL) !=
        SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    if (sqlite3_prepare_v2(d->h, "UPDATE jobs SET request=?2 WHERE id=?1", -1, &u, NULL) != SQLITE_OK) {
        sqlite3_finalize(q);
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    }
    int rc = 0, n = 0;
    while (rc == 0 && sqlite3_step(q) == SQLITE_ROW) {
        json_t *rj = json_loads((const char *)sqlite3_column_text(q, 1), 0, NULL);
        if (!json_object_get(rj, "secret_env")) {
            json_decref(rj);
            continue;
        }
        seal_request(d, rj);
        char *t = json_dumps(rj, JSON_COMPACT);
        json_decref(rj);
        if (begin(d) < 0)
            rc = jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
        sqlite3_reset(u);
        sqlite3_bind_text(u, 1, (const char *)sqlite3_column_text(q, 0), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(u, 2, t, -1, SQLITE_TRANSIENT);
        if (rc == 0 && sqlite3_step(u) != SQLITE_DONE)
            rc = jerr_set(e, EIO, "database: sealing stored secrets: %s", sqlite3_errmsg(d->h));
        free(t);
        n++;
    }
    sqlite3_finalize(q);
    sqlite3_finalize(u);
    if (n && rc == 0) {
        d->deleted = true; /* the clear values' old pages go from the WAL too */
        rc = db_flush(d, e);
        log_info("database: sealed the secret environment of %d stored job%s", n, n == 1 ? "" : "s");
    }
    return rc;
}

static int write_job(db *d, sqlite3_stmt *st, const db_job *j, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    json_t *rj = jobreq_to_json(&j->req, JOBREQ_JSON_SECRETS);
    seal_request(d, rj);
    char *req = json_dumps(rj, JSON_COMPACT);
    json_decref(rj);
    char usage[320];
    snprintf(usage, sizeof usage, "{\"cpu_ns\":%llu,\"memory_peak_bytes\":%llu,\"io_read_bytes\":%llu,\"io_write_bytes\":%llu,"
             "\"gpu_ms_before\":%llu}", (unsigned long long)j->cpu_ns, (unsigned long long)j->memory_peak_bytes,
             (unsigned long long)j->io_read_bytes, (unsigned long long)j->io_write_bytes,
             (unsigned long long)j->gpu_ms_before);
    sqlite3_reset(st);
    bind_text(st, 1, j->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)j->seq);
    bind_text(st, 3, j->name);
    bind_text(st, 4, job_state_name(j->state));
    sqlite3_bind_int64(st, 5, j->owner_uid);
    sqlite3_bind_int64(st, 6, j->owner_gid);
    sqlite3_bind_int64(st, 7, j->uid);
    sqlite3_bind_int64(st, 8, j->gid);
    bind_text(st, 9, req);
    sqlite3_bind_int64(st, 10, j->created_ms);
    bind_opt_i64(st, 11, j->scheduled_ms, j->scheduled_ms > 0);
    bind_opt_i64(st, 12, j->started_ms, j->started_ms > 0);
    bind_opt_i64(st, 13, j->ended_ms, j->ended_ms > 0);
    bind_opt_i64(st, 14, j->exit_code, j->has_exit);
    bind_opt_i64(st, 15, j->signal, j->signal > 0);
    bind_text(st, 16, j->signal_name);
    bind_text(st, 17, j->end_reason);
    bind_opt_i64(st, 18, j->stopped_by, j->stopped_by >= 0);
    bind_text(st, 19, j->error);
    bind_text(st, 20, usage);
    bind_opt_i64(st, 21, j->shim_pid, j->shim_pid > 0);
    bind_opt_i64(st, 22, (int64_t)j->shim_start, j->shim_pid > 0);
    bind_opt_i64(st, 23, j->init_pid, j->init_pid > 0);
    bind_opt_i64(st, 30, j->sandbox_uid, j->sandbox_uid > 0);
    char *gpus = NULL;
    if (j->gpus.n) {
        json_t *gj = grant_list_to_json(&j->gpus);
        gpus = json_dumps(gj, JSON_COMPACT);
        json_decref(gj);
    }
    bind_text(st, 24, gpus);
    sqlite3_bind_int64(st, 25, j->preemptions);
    sqlite3_bind_int(st, 26, j->preempting);
    bind_text(st, 27, j->wf_id[0] ? j->wf_id : NULL);
    bind_opt_i64(st, 28, j->wf_index, j->wf_id[0] != 0);
    json_t *fj = gpu_fault_to_json(&j->gpu_fault);
    char *fault = fj ? json_dumps(fj, JSON_COMPACT) : NULL;
    json_decref(fj);
    bind_text(st, 29, fault);
    json_t *sj = slurmcg_to_json(&j->slurm);
    if (sj && j->waiter_pid > 0)
        json_object_set_new(sj, "waiter", json_pack("{s:I,s:I}", "pid", (json_int_t)j->waiter_pid, "start",
                                                    (json_int_t)j->waiter_start));
    char *slurm = sj ? json_dumps(sj, JSON_COMPACT) : NULL;
    json_decref(sj);
    bind_text(st, 31, slurm);
    char *net = NULL;
    if (j->net.network[0]) {
        char addr[20];
        netaddr_format(j->net.addr, addr, sizeof addr);
        json_t *nj = json_pack("{s:s,s:s,s:s}", "network", j->net.network, "addr", addr, "host_if", j->net.host_if);
        net = nj ? json_dumps(nj, JSON_COMPACT) : NULL;
        json_decref(nj);
    }
    bind_text(st, 32, net);
    bind_text(st, 33, j->array_id[0] ? j->array_id : NULL);
    bind_opt_i64(st, 34, j->array_task, j->array_id[0] != 0);
    sqlite3_bind_int(st, 35, j->requeue_asked ? (j->requeue_hold ? 2 : 1) : 0);
    sqlite3_bind_int64(st, 36, j->suspended_ms);
    bind_opt_i64(st, 37, j->suspended_since_ms, j->suspended_since_ms > 0);
    sqlite3_bind_int(st, 38, j->after_met);
    sqlite3_bind_int64(st, 39, j->joined_ms);
    sqlite3_bind_int(st, 40, j->ended_held);
    bind_opt_i64(st, 41, j->log_bytes, j->log_bytes >= 0);
    int rc = sqlite3_step(st);
    free(net);
    free(slurm);
    free(fault);
    free(gpus);
    free(req);
    if (rc != SQLITE_DONE)
        return jerr_set(e, write_errno(d), "database: saving job %s: %s", j->id, sqlite3_errmsg(d->h));
    return 0;
}

int db_insert_job(db *d, const db_job *j, jerr *e) { return write_job(d, d->ins, j, e); }
int db_update_job(db *d, const db_job *j, jerr *e) { return write_job(d, d->upd, j, e); }

int db_save_job(db *d, const db_job *j, jerr *e)
{
    if (write_job(d, d->upd, j, e) < 0)
        return -1;
    return sqlite3_changes(d->h) ? 0 : write_job(d, d->ins, j, e);
}

/* value added to the meta table's row name (made at 0 when new), in the open transaction */
static int meta_add(db *d, const char *name, int64_t value, jerr *e)
{
    if (!d->meta_add &&
        sqlite3_prepare_v3(d->h, "INSERT INTO meta (name, value) VALUES (?, ?) "
                                 "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                           -1, SQLITE_PREPARE_PERSISTENT, &d->meta_add, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: preparing the usage sums' statement: %s", sqlite3_errmsg(d->h));
    sqlite3_reset(d->meta_add);
    sqlite3_bind_text(d->meta_add, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(d->meta_add, 2, value);
    int rc = sqlite3_step(d->meta_add) == SQLITE_DONE
                 ? 0
                 : jerr_set(e, write_errno(d), "database: adding to %s: %s", name, sqlite3_errmsg(d->h));
    sqlite3_reset(d->meta_add);
    return rc;
}

static int usage_add(db *d, const db_usage *u, jerr *e)
{
    char name[64];
    snprintf(name, sizeof name, "deleted.uid.%lld.jobs", (long long)u->uid);
    if (meta_add(d, name, 1, e) < 0)
        return -1;
    if (u->gpu_ms > 0) {
        snprintf(name, sizeof name, "deleted.uid.%lld.gpu_ms", (long long)u->uid);
        if (meta_add(d, name, u->gpu_ms, e) < 0)
            return -1;
    }
    for (int i = 0; i < u->ngpus && i < DB_USAGE_GPUS; i++) {
        snprintf(name, sizeof name, "deleted.gpu.%d.gpu_ms", u->gpu[i]);
        if (u->gpu_ms_on[i] > 0 && meta_add(d, name, u->gpu_ms_on[i], e) < 0)
            return -1;
    }
    return 0;
}

int db_usage_load(db *d, void (*fn)(bool per_gpu, int64_t key, int64_t gpu_ms, int64_t jobs, void *arg), void *arg,
                  jerr *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "SELECT name, value FROM meta WHERE name LIKE 'deleted.%'", -1, &st, NULL) !=
        SQLITE_OK)
        return jerr_set(e, EIO, "database: reading the usage sums: %s", sqlite3_errmsg(d->h));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int64_t v = sqlite3_column_int64(st, 1);
        long long key;
        char kind[8], what[8];
        if (!name || sscanf(name, "deleted.%7[a-z].%lld.%7[a-z_]", kind, &key, what) != 3)
            continue;
        bool per_gpu = !strcmp(kind, "gpu"), ms = !strcmp(what, "gpu_ms");
        if (!per_gpu && strcmp(kind, "uid"))
            continue;
        fn(per_gpu, key, ms ? v : 0, ms ? 0 : v, arg);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return jerr_set(e, EIO, "database: reading the usage sums: %s", sqlite3_errmsg(d->h));
    return 0;
}

int db_delete_job(db *d, const char *id, const db_usage *u, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    if (exec_sql(d, "SAVEPOINT joblet_delete;", e) < 0)
        return -1;
    int rc = keep_high_water(d, d->hw_job, id, e);
    sqlite3_reset(d->del);
    sqlite3_bind_text(d->del, 1, id, -1, SQLITE_TRANSIENT);
    if (rc == 0 && sqlite3_step(d->del) != SQLITE_DONE)
        rc = jerr_set(e, write_errno(d), "database: deleting job %s: %s", id, sqlite3_errmsg(d->h));
    if (rc == 0) {
        sqlite3_reset(d->ev_del);
        sqlite3_bind_text(d->ev_del, 1, id, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(d->ev_del) != SQLITE_DONE)
            rc = jerr_set(e, write_errno(d), "database: deleting the events of job %s: %s", id,
                          sqlite3_errmsg(d->h));
    }
    if (rc == 0 && u)
        rc = usage_add(d, u, e);
    sqlite3_reset(d->del);
    sqlite3_reset(d->ev_del);
    if (rc < 0) /* none: the job's row without its events or its usage (or these without it) is never committed */
        exec_sql(d, "ROLLBACK TO joblet_delete;", NULL);
    exec_sql(d, "RELEASE joblet_delete;", NULL);
    if (rc == 0)
        d->deleted = true;
    return rc;
}

int db_mark(db *d, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    if (exec_sql(d, "SAVEPOINT joblet_mark;", e) < 0)
        return -1;
    d->marked = true;
    return 0;
}

void db_undo(db *d)
{
    exec_sql(d, "ROLLBACK TO joblet_mark;", NULL);
    exec_sql(d, "RELEASE joblet_mark;", NULL);
    d->marked = false;
}

void db_keep(db *d)
{
    exec_sql(d, "RELEASE joblet_mark;", NULL);
    d->marked = false;
}

bool db_marked(const db *d) { return d->marked; }

/* ---- a job's history and detail (db.h) ---- */

int db_event_add(db *d, const char *job_id, const db_event *ev, int keep, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st = d->ev_ins;
    sqlite3_reset(st);
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, ev->ts_ms);
    bind_text(st, 3, ev->event);
    bind_opt_i64(st, 4, ev->uid, ev->uid >= 0);
    bind_text(st, 5, ev->detail);
    if (sqlite3_step(st) != SQLITE_DONE)
        return jerr_set(e, EIO, "database: job %s: event: %s", job_id, sqlite3_errmsg(d->h));
    st = d->ev_trim;
    sqlite3_reset(st);
    bind_text(st, 1, job_id);
    sqlite3_bind_int(st, 2, keep);
    if (sqlite3_step(st) != SQLITE_DONE)
        return jerr_set(e, EIO, "database: job %s: dropping old events: %s", job_id, sqlite3_errmsg(d->h));
    return 0;
}

int db_event_load(db *d, const char *job_id, void (*fn)(const db_event *ev, void *arg), void *arg,
                  uint64_t *dropped, jerr *e)
{
    sqlite3_stmt *st;
    *dropped = 0;
    if (sqlite3_prepare_v2(d->h, "SELECT n, ts_ms, event, uid, detail FROM job_events WHERE job_id = ?1 ORDER BY n",
                           -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, job_id);
    int rc;
    bool first = true;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(st, 0);
        if (first && n > 1)
            *dropped = (uint64_t)(n - 1);
        first = false;
        const char *ev = (const char *)sqlite3_column_text(st, 2);
        db_event x = {sqlite3_column_int64(st, 1), ev ? ev : "",
                      sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3),
                      (const char *)sqlite3_column_text(st, 4)};
        fn(&x, arg);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, EIO, "database: job %s: events: %s", job_id, sqlite3_errmsg(d->h));
}

static const char *const extra_cols[] = {[DB_JOB_PLACEMENT] = "placement", [DB_JOB_SPEC] = "spec"};

/* The statement that sets (`set`) or reads the column of `which`, prepared once and kept: a
 * job's spec is stored at every start (its parse was ~25 us of the daemon's ~1 ms per job). */
static sqlite3_stmt *extra_stmt(db *d, bool set, enum db_job_extra which)
{
    sqlite3_stmt **cache = set ? d->extra_set : d->extra_get;
    if (!cache[which]) {
        char sql[96];
        if (set)
            snprintf(sql, sizeof sql, "UPDATE jobs SET %s = ?2 WHERE id = ?1", extra_cols[which]);
        else
            snprintf(sql, sizeof sql, "SELECT %s FROM jobs WHERE id = ?1", extra_cols[which]);
        if (sqlite3_prepare_v3(d->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &cache[which], NULL) != SQLITE_OK)
            return NULL;
    }
    sqlite3_reset(cache[which]);
    return cache[which];
}

int db_job_extra_set(db *d, const char *job_id, enum db_job_extra which, const char *text, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st = extra_stmt(d, true, which);
    if (!st)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, job_id);
    bind_text(st, 2, text);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        jerr_set(e, EIO, "database: job %s: %s: %s", job_id, extra_cols[which], sqlite3_errmsg(d->h));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

char *db_job_extra_get(db *d, const char *job_id, enum db_job_extra which)
{
    sqlite3_stmt *st = extra_stmt(d, false, which);
    if (!st)
        return NULL;
    bind_text(st, 1, job_id);
    char *out = sqlite3_step(st) == SQLITE_ROW ? col_str(st, 0) : NULL;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

/* PRAGMA wal_checkpoint(TRUNCATE): 1 when another process held it off (its busy column), 0 when
 * the WAL was emptied, -1 on an error (e says it). */
static int checkpoint(db *d, jerr *e)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(d->h, "PRAGMA wal_checkpoint(TRUNCATE);", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        rc = sqlite3_column_int(st, 0) != 0;
    if (rc < 0)
        jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    sqlite3_finalize(st);
    return rc;
}

static int flush_txn(db *d, jerr *e)
{
    if (!d->in_txn)
        return 0;
    d->in_txn = false;
    if (d->lost || sqlite3_get_autocommit(d->h)) {
        /* rolled back under the turn (lost): nothing of it is committed, and nothing more is */
        d->lost = false;
        d->deleted = false;
        if (!sqlite3_get_autocommit(d->h))
            exec_sql(d, "ROLLBACK;", NULL);
        bool full = db_disk_full(d);
        if (e)
            jerr_set(e, full ? ENOSPC : EIO, "database: the transaction was rolled back after a statement failed%s",
                     full ? " (the state filesystem is full)" : "");
        return -1;
    }
    /* A write of the turn that failed without SQLite rolling back (busy: another process holds
     * the lock) is left active: the turn is not committed without it. It is rolled back, and the
     * error says why the write failed (a COMMIT over it would say "SQL statements in progress").
     * One that failed so and was used again after the lock went, reset by its next write, is not
     * busy any more: on_busy's give-up says it failed (a turn committed without it lost a row). */
    int failed = d->gave_up ? SQLITE_BUSY : SQLITE_OK;
    d->gave_up = false;
    for (sqlite3_stmt *st = sqlite3_next_stmt(d->h, NULL); st; st = sqlite3_next_stmt(d->h, st))
        if (sqlite3_stmt_busy(st) && !sqlite3_stmt_readonly(st)) {
            int rc = sqlite3_reset(st);
            if (failed == SQLITE_OK)
                failed = rc != SQLITE_OK ? rc : SQLITE_ERROR;
        }
    if (failed != SQLITE_OK) {
        exec_sql(d, "ROLLBACK;", NULL);
        d->deleted = false;
        bool full = (failed & 0xff) == SQLITE_FULL || db_disk_full(d);
        if (e)
            jerr_set(e, full ? ENOSPC : EIO, "database: the turn's transaction was rolled back after a write failed: %s",
                     sqlite3_errstr(failed));
        return -1;
    }
    if (exec_sql(d, "COMMIT;", e) < 0) {
        /* SQLITE_FULL and I/O errors may leave the transaction open: it is rolled back here,
         * so that the database holds exactly what the last good commit left (db.h) */
        bool full = sqlite3_extended_errcode(d->h) == SQLITE_FULL;
        if (!sqlite3_get_autocommit(d->h))
            exec_sql(d, "ROLLBACK;", NULL);
        d->deleted = false;
        if (full && e)
            e->code = ENOSPC;
        return -1;
    }
    d->busy_failed = false; /* (a commit went through) */
    if (d->clean_deleted)
        d->clean_in_db = d->clean_deleted = false;
    /* A deleted job's old pages may still sit in the WAL: write them back and empty it. The
     * commit stands whether or not this can be done now (a full disk): it is tried again after
     * the next delete. */
    if (d->deleted) {
        d->deleted = false;
        d->busy_since_ms = 0;   /* (its own wait for readers) */
        /* one that gave up waiting for a reader (a sqlite3 shell left in a transaction, a
         * backup): the next waits BUSY_AGAIN_MS, until one is done. Each waited 5 s, the loop
         * with it: every delete was answered after 5 s, and every other request with it */
        d->busy_failed = d->ckpt_blocked;
        jerr ce = {0};
        int blocked = checkpoint(d, &ce);
        if (blocked < 0)
            log_warn("%s (the WAL checkpoint after a delete; tried again after the next one)", ce.msg);
        d->ckpt_blocked = blocked > 0;
        d->busy_failed = false; /* (the commit went through) */
    }
    return 0;
}

int db_flush(db *d, jerr *e)
{
    int rc = flush_txn(d, e);
    d->busy_since_ms = 0; /* (what waits after it, a read before the next turn's writes, waits anew) */
    return rc;
}

static char *col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? xstrdup((const char *)s) : NULL;
}

void db_job_free(db_job *r)
{
    free(r->name);
    free(r->signal_name);
    free(r->end_reason);
    free(r->error);
    jobreq_free(&r->req);
    grant_list_free(&r->gpus);
    *r = (db_job){0};
}

/* Whether the jobs' rows lie in the table (rowid order) in their submission order, and how many
 * there are: one pass over the index on seq (its entries hold the rowid: the table is not
 * read). Rows are inserted as jobs are made, so they do unless one was written again after a
 * failed commit (core/state.c) or by hand. -1 on the database's error. */
static int rows_in_seq_order(db *d, size_t *n)
{
    sqlite3_stmt *st;
    *n = 0;
    if (sqlite3_prepare_v2(d->h, "SELECT rowid FROM jobs ORDER BY seq", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc, in_order = 1;
    sqlite3_int64 last = INT64_MIN;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 r = sqlite3_column_int64(st, 0);
        if (r <= last)
            in_order = 0;
        last = r;
        (*n)++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? in_order : -1;
}

#define STORED_WHY_MAX (sizeof(((jerr *)0)->msg) + 64)

/* A job's or an array's stored request (text) read into req, its secret values unsealed; why: ""
 * or why it cannot run as it was asked (its secret environment cannot be read, it is not JSON or
 * not a request), which is logged with what and id ("job", its id). */
static void stored_request(db *d, const char *text, const char *what, const char *id, job_req *req, char *why)
{
    json_t *rj = json_loads(text, 0, NULL);
    jerr re = {0};
    why[0] = 0;
    if (unseal_request(d, rj, &re) < 0)
        snprintf(why, STORED_WHY_MAX, "its secret environment cannot be read (%s)", re.msg);
    if (!rj) { /* not JSON: read as an empty request, freed with it */
        snprintf(why, STORED_WHY_MAX, "its stored request cannot be read (not JSON)");
        rj = json_object();
    }
    re = (jerr){0};
    if (jobreq_from_json(rj, req, JOBREQ_FROM_DB, 0, &re) < 0)
        snprintf(why, STORED_WHY_MAX, "its stored request cannot be read (%s)", re.msg);
    json_decref(rj);
    if (why[0])
        log_err("%s %s: %s", what, id, why);
}

/* A job whose stored request or secret environment cannot be read (a damaged row, one written by
 * hand): one that has not started yet never runs as something other than it was asked (without
 * its command, or without its secrets: it ran with an empty command, failing "exec: : No such
 * file or directory", or without the secrets a release then gave it none of). It ends FAILED
 * at load, saying why (unreadable_write); one with a process is left to it (its secrets were handed to it at its start), as is an ended one. */
static bool unreadable_end(db_job *j, const char *why)
{
    if (job_state_terminal(j->state) || j->shim_pid ||
        !(j->state == JS_PENDING || j->state == JS_HELD || job_state_waiting(j->state)))
        return false;
    log_err("job %s (%s): %s; it ends FAILED without running", j->id, job_state_name(j->state), why);
    j->state = JS_FAILED;
    j->ended_ms = now_ms();
    free(j->end_reason);
    j->end_reason = xstrdup("start_failed");
    free(j->error);
    j->error = xprintf("joblet cannot run it: %s", why);
    return true;
}

/* The rows unreadable_end ended, written so (after the walk that read them): a next start reads
 * them ended (it refused to start over a HELD job's damaged sealed value, as over a lost key).
 * Not written: said, and each start decides so again from the row. */
static void unreadable_write(db *d, db_job *ended, size_t n)
{
    sqlite3_stmt *u = NULL;
    jerr e = {0};
    if (begin(d) < 0 || sqlite3_prepare_v2(d->h, "UPDATE jobs SET state='FAILED', ended_ms=?2, end_reason=?3, "
                                                 "error=?4 WHERE id=?1", -1, &u, NULL) != SQLITE_OK)
        jerr_set(&e, EIO, "database: %s", sqlite3_errmsg(d->h));
    for (size_t i = 0; i < n && !e.msg[0]; i++) {
        sqlite3_reset(u);
        sqlite3_bind_text(u, 1, ended[i].id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(u, 2, ended[i].ended_ms);
        sqlite3_bind_text(u, 3, ended[i].end_reason, -1, SQLITE_STATIC);
        sqlite3_bind_text(u, 4, ended[i].error, -1, SQLITE_STATIC);
        if (sqlite3_step(u) != SQLITE_DONE)
            jerr_set(&e, EIO, "database: %s", sqlite3_errmsg(d->h));
    }
    sqlite3_finalize(u);
    if (!e.msg[0])
        db_flush(d, &e);
    if (e.msg[0])
        log_warn("the %zu job%s ended at load as unreadable not written so (the next start decides again): %s", n,
                 n == 1 ? "" : "s", e.msg);
}

int db_load_jobs(db *d, void (*count)(size_t n, void *arg), void (*fn)(db_job *r, void *arg), void *arg, jerr *e)
{
    /* In submission order: read in the table's own order where that is it (a walk of its
     * pages), through the index on seq only where it is not (a look-up in the table per row:
     * 0.2 s of a start with 162,000 jobs) */
    size_t n;
    int in_order = rows_in_seq_order(d, &n);
    if (in_order < 0)
        return jerr_set(e, EIO, "database: counting jobs: %s", sqlite3_errmsg(d->h));
    if (count)
        count(n, arg);
    /* usage's figures taken out by SQLite's JSON functions, after COLS (41-45): jansson's parse
     * of the object and its five numbers cost a start with 162,000 jobs 0.4 s, these 0.1 s (one
     * parse per row, cached for the row's five; a row that is not JSON gives none, as before) */
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT %s%s FROM jobs ORDER BY %s", COLS, USAGE_COLS, in_order ? "rowid" : "seq");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    int rc;
    db_job *ended = NULL; /* (of unreadable_end: id, ended_ms, end_reason and error) */
    size_t nended = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        db_job row = {0}, *j = &row;
        snprintf(j->id, sizeof j->id, "%s", (const char *)sqlite3_column_text(st, 0));
        j->seq = (uint64_t)sqlite3_column_int64(st, 1);
        j->name = col_str(st, 2);
        job_state_parse((const char *)sqlite3_column_text(st, 3), &j->state);
        j->owner_uid = sqlite3_column_int64(st, 4);
        j->owner_gid = sqlite3_column_int64(st, 5);
        j->uid = sqlite3_column_int64(st, 6);
        j->gid = sqlite3_column_int64(st, 7);
        char unreadable[STORED_WHY_MAX]; /* why the job cannot run as it was asked ("" it can) */
        stored_request(d, (const char *)sqlite3_column_text(st, 8), "job", j->id, &j->req, unreadable);
        j->created_ms = sqlite3_column_int64(st, 9);
        j->scheduled_ms = sqlite3_column_int64(st, 10);
        j->started_ms = sqlite3_column_int64(st, 11);
        j->ended_ms = sqlite3_column_int64(st, 12);
        j->has_exit = sqlite3_column_type(st, 13) != SQLITE_NULL;
        j->exit_code = sqlite3_column_int(st, 13);
        j->signal = sqlite3_column_int(st, 14);
        j->signal_name = col_str(st, 15);
        j->end_reason = col_str(st, 16);
        j->stopped_by = sqlite3_column_type(st, 17) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 17);
        j->error = col_str(st, 18);
        j->cpu_ns = (uint64_t)sqlite3_column_int64(st, 41); /* usage (USAGE_COLS) */
        j->memory_peak_bytes = (uint64_t)sqlite3_column_int64(st, 42);
        j->io_read_bytes = (uint64_t)sqlite3_column_int64(st, 43);
        j->io_write_bytes = (uint64_t)sqlite3_column_int64(st, 44);
        j->gpu_ms_before = (uint64_t)sqlite3_column_int64(st, 45); /* (0: none, or older) */
        j->shim_pid = sqlite3_column_int64(st, 20);
        j->shim_start = (uint64_t)sqlite3_column_int64(st, 21);
        j->init_pid = sqlite3_column_int64(st, 22);
        if (sqlite3_column_type(st, 23) != SQLITE_NULL) {
            json_t *gj = json_loads((const char *)sqlite3_column_text(st, 23), 0, NULL);
            grant_list_from_json(gj, &j->gpus);
            json_decref(gj);
        }
        j->preemptions = (uint32_t)sqlite3_column_int64(st, 24);
        j->preempting = sqlite3_column_int(st, 25) != 0;
        if (sqlite3_column_type(st, 26) != SQLITE_NULL)
            snprintf(j->wf_id, sizeof j->wf_id, "%s", (const char *)sqlite3_column_text(st, 26));
        j->wf_index = sqlite3_column_int(st, 27);
        j->gpu_fault = (gpu_fault){0};
        if (sqlite3_column_type(st, 28) != SQLITE_NULL) {
            json_t *fj = json_loads((const char *)sqlite3_column_text(st, 28), 0, NULL);
            gpu_fault_from_json(fj, &j->gpu_fault);
            json_decref(fj);
        }
        j->sandbox_uid = sqlite3_column_int64(st, 29);
        j->slurm = (slurm_ids){0};
        if (sqlite3_column_type(st, 30) != SQLITE_NULL) {
            json_t *sj = json_loads((const char *)sqlite3_column_text(st, 30), 0, NULL);
            slurmcg_from_json(sj, &j->slurm);
            json_t *w = json_object_get(sj, "waiter");
            j->waiter_pid = json_integer_value(json_object_get(w, "pid"));
            j->waiter_start = (uint64_t)json_integer_value(json_object_get(w, "start"));
            json_decref(sj);
        }
        j->net = (netaddr_place){0};
        if (sqlite3_column_type(st, 31) != SQLITE_NULL) {
            json_t *nj = json_loads((const char *)sqlite3_column_text(st, 31), 0, NULL);
            const char *nn = json_string_value(json_object_get(nj, "network"));
            const char *na = json_string_value(json_object_get(nj, "addr"));
            const char *ni = json_string_value(json_object_get(nj, "host_if"));
            if (nn && na && ni && netaddr_parse(na, &j->net.addr) == 0) {
                snprintf(j->net.network, sizeof j->net.network, "%s", nn);
                snprintf(j->net.host_if, sizeof j->net.host_if, "%s", ni);
            }
            json_decref(nj);
        }
        if (sqlite3_column_type(st, 32) != SQLITE_NULL) {
            snprintf(j->array_id, sizeof j->array_id, "%s", (const char *)sqlite3_column_text(st, 32));
            j->array_task = sqlite3_column_int64(st, 33);
        }
        int rq = sqlite3_column_int(st, 34);
        j->requeue_asked = rq > 0;
        j->requeue_hold = rq == 2;
        j->suspended_ms = sqlite3_column_int64(st, 35);
        j->suspended_since_ms = sqlite3_column_int64(st, 36);
        j->after_met = sqlite3_column_int(st, 37) != 0;
        j->joined_ms = sqlite3_column_int64(st, 38);
        j->ended_held = sqlite3_column_int(st, 39) != 0;
        j->log_bytes = sqlite3_column_type(st, 40) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 40);
        if (unreadable[0] && unreadable_end(j, unreadable)) {
            ended = xrealloc(ended, (nended + 1) * sizeof *ended);
            ended[nended++] = (db_job){.ended_ms = j->ended_ms, .end_reason = xstrdup(j->end_reason),
                                       .error = xstrdup(j->error)};
            snprintf(ended[nended - 1].id, sizeof ended->id, "%s", j->id);
        }
        fn(j, arg);
        db_job_free(j);
    }
    sqlite3_finalize(st);
    if (nended && rc == SQLITE_DONE)
        unreadable_write(d, ended, nended);
    for (size_t i = 0; i < nended; i++) {
        free(ended[i].end_reason);
        free(ended[i].error);
    }
    free(ended);
    if (rc != SQLITE_DONE)
        return jerr_set(e, EIO, "database: reading jobs: %s", sqlite3_errmsg(d->h));
    return 0;
}

static int write_workflow(db *d, sqlite3_stmt *st, const db_workflow *wf, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    char *doc = json_dumps(wf->doc, JSON_COMPACT);
    sqlite3_reset(st);
    bind_text(st, 1, wf->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)wf->seq);
    sqlite3_bind_int64(st, 3, wf->owner_uid);
    sqlite3_bind_int64(st, 4, wf->owner_gid);
    bind_text(st, 5, wf_state_name(wf->state));
    sqlite3_bind_int64(st, 6, wf->created_ms);
    bind_opt_i64(st, 7, wf->started_ms, wf->started_ms > 0);
    bind_opt_i64(st, 8, wf->ended_ms, wf->ended_ms > 0);
    bind_opt_i64(st, 9, wf->canceled_by, wf->canceled_by >= 0);
    bind_text(st, 10, wf->reason);
    bind_text(st, 11, doc);
    int rc = sqlite3_step(st);
    free(doc);
    if (rc != SQLITE_DONE)
        return jerr_set(e, write_errno(d), "database: saving workflow %s: %s", wf->id, sqlite3_errmsg(d->h));
    return 0;
}

int db_insert_workflow(db *d, const db_workflow *wf, jerr *e) { return write_workflow(d, d->wf_ins, wf, e); }
int db_update_workflow(db *d, const db_workflow *wf, jerr *e) { return write_workflow(d, d->wf_upd, wf, e); }

int db_save_workflow(db *d, const db_workflow *wf, jerr *e)
{
    if (write_workflow(d, d->wf_upd, wf, e) < 0)
        return -1;
    return sqlite3_changes(d->h) ? 0 : write_workflow(d, d->wf_ins, wf, e);
}

int db_delete_workflow(db *d, const char *id, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "DELETE FROM workflows WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, write_errno(d), "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, id);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    d->deleted = true; /* (its document's old pages go from the WAL too) */
    return rc == SQLITE_DONE ? 0
                             : jerr_set(e, write_errno(d), "database: deleting workflow %s: %s", id, sqlite3_errmsg(d->h));
}

void db_workflow_free(db_workflow *r)
{
    free(r->reason);
    json_decref(r->doc);
    *r = (db_workflow){0};
}

int db_load_workflows(db *d, void (*fn)(db_workflow *r, void *arg), void *arg, jerr *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h,
                           "SELECT id, seq, owner_uid, owner_gid, state, created_ms, started_ms, ended_ms, canceled_by,"
                           " reason, doc FROM workflows ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        db_workflow row = {0}, *wf = &row;
        snprintf(wf->id, sizeof wf->id, "%s", (const char *)sqlite3_column_text(st, 0));
        wf->seq = (uint64_t)sqlite3_column_int64(st, 1);
        wf->owner_uid = sqlite3_column_int64(st, 2);
        wf->owner_gid = sqlite3_column_int64(st, 3);
        wf_state_parse((const char *)sqlite3_column_text(st, 4), &wf->state);
        wf->created_ms = sqlite3_column_int64(st, 5);
        wf->started_ms = sqlite3_column_int64(st, 6);
        wf->ended_ms = sqlite3_column_int64(st, 7);
        wf->canceled_by = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 8);
        wf->reason = col_str(st, 9);
        wf->doc = json_loads((const char *)sqlite3_column_text(st, 10), 0, NULL);
        if (!wf->doc)
            wf->doc = json_pack("{s:s,s:[]}", "name", "?", "jobs");
        fn(wf, arg);
        db_workflow_free(wf);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return jerr_set(e, EIO, "database: reading workflows: %s", sqlite3_errmsg(d->h));
    return 0;
}

int db_audit(db *d, const audit_rec *a, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    if (!d->audit_ins && sqlite3_prepare_v3(d->h,
                                            "INSERT INTO audit (ts_ms, uid, action, gpu, gpu_uuid, job, duration_ms,"
                                            " memory_mb, detail, person, serial, role, peer)"
                                            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                            -1, SQLITE_PREPARE_PERSISTENT, &d->audit_ins, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st = d->audit_ins;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, a->ts_ms);
    bind_opt_i64(st, 2, a->uid, a->uid >= 0);
    bind_text(st, 3, a->action);
    bind_opt_i64(st, 4, a->gpu, a->gpu >= 0);
    bind_text(st, 5, a->gpu_uuid);
    bind_text(st, 6, a->job);
    bind_opt_i64(st, 7, a->duration_ms, a->duration_ms >= 0);
    bind_opt_i64(st, 8, a->memory_mb, a->memory_mb >= 0);
    bind_text(st, 9, a->detail);
    bind_text(st, 10, a->person);
    bind_text(st, 11, a->serial);
    bind_text(st, 12, a->role);
    bind_text(st, 13, a->peer);
    if (sqlite3_step(st) != SQLITE_DONE)
        return jerr_set(e, EIO, "database: audit: %s", sqlite3_errmsg(d->h));
    return 0;
}

/* one statement with up to two int64 parameters, stepped to its end; -1 on an error */
static int exec_i64(db *d, const char *sql, int64_t a, int64_t b)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_bind_parameter_count(st) >= 1)
        sqlite3_bind_int64(st, 1, a);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

int db_audit_prune(db *d, int64_t before_ms, int64_t max_rows, int batch, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    int gone = 0;
    /* older than kept: the oldest first, by the time index, batch at most */
    if (exec_i64(d, "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE ts_ms < ?1 ORDER BY ts_ms LIMIT ?2)",
                 before_ms, batch) < 0)
        return jerr_set(e, EIO, "database: audit: %s", sqlite3_errmsg(d->h));
    gone += sqlite3_changes(d->h);
    /* more than max_rows: ids are given in order and only the oldest are ever deleted, so the
     * span of ids is the count (an upper bound of it; both ends are the rowid's, no scan) */
    sqlite3_stmt *st;
    int64_t lo = 0, hi = 0;
    if (sqlite3_prepare_v2(d->h, "SELECT min(id), max(id) FROM audit", -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: audit: %s", sqlite3_errmsg(d->h));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        lo = sqlite3_column_int64(st, 0);
        hi = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (hi && hi - lo + 1 > max_rows && gone < batch) {
        int64_t below = hi - max_rows + 1;
        if (below > lo + (batch - gone))
            below = lo + (batch - gone);
        if (exec_i64(d, "DELETE FROM audit WHERE id < ?1", below, 0) < 0)
            return jerr_set(e, EIO, "database: audit: %s", sqlite3_errmsg(d->h));
        gone += sqlite3_changes(d->h);
    }
    return gone;
}

/* The audit query's filters, ?1 to ?5 (audit_bind). */
#define AUDIT_WHERE                                                                                     \
    " WHERE (?1 < 0 OR uid = ?1) AND (?2 < 0 OR gpu = ?2) AND ts_ms >= ?3 AND ts_ms <= ?4"             \
    " AND (?5 IS NULL OR job LIKE ?5 || '%')"

static void audit_bind(sqlite3_stmt *st, const audit_query *q)
{
    sqlite3_bind_int64(st, 1, q->uid);
    sqlite3_bind_int64(st, 2, q->gpu);
    sqlite3_bind_int64(st, 3, q->since_ms);
    sqlite3_bind_int64(st, 4, q->until_ms);
    bind_text(st, 5, q->job_id);
}

/* Whether a record matching q's filters has an id below (older) or above id: 1, 0, or -1. */
static int audit_beyond(db *d, const audit_query *q, bool older, int64_t id, jerr *e)
{
    sqlite3_stmt *st;
    const char *sql = older ? "SELECT EXISTS (SELECT 1 FROM audit" AUDIT_WHERE " AND id < ?6)"
                            : "SELECT EXISTS (SELECT 1 FROM audit" AUDIT_WHERE " AND id > ?6)";
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    audit_bind(st, q);
    sqlite3_bind_int64(st, 6, id);
    int rc = sqlite3_step(st), v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return v < 0 ? jerr_set(e, EIO, "database: audit: %s", sqlite3_errmsg(d->h)) : v;
}

json_t *db_audit_query(db *d, const audit_query *q, bool *older, bool *newer, jerr *e)
{
    sqlite3_stmt *st;
    /* one more than the page: whether there are more that way. With after: the oldest above it,
     * turned newest first below. */
    const char *sql = "SELECT ts_ms, uid, action, gpu, gpu_uuid, job, duration_ms, memory_mb, detail, id,"
                      " person, serial, role, peer FROM audit"
                      AUDIT_WHERE " AND (?6 <= 0 OR id < ?6) AND (?7 <= 0 OR id > ?7)"
                      " ORDER BY CASE WHEN ?7 > 0 THEN id END ASC, id DESC LIMIT ?8";
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK) {
        jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
        return NULL;
    }
    audit_bind(st, q);
    sqlite3_bind_int64(st, 6, q->before);
    sqlite3_bind_int64(st, 7, q->after);
    sqlite3_bind_int64(st, 8, (int64_t)q->limit + 1);
    json_t *arr = json_array();
    bool more = false;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (json_array_size(arr) == (size_t)q->limit) {
            more = true;
            break;
        }
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(sqlite3_column_int64(st, 9)));
        jx_set_time_or_null(o, "time", sqlite3_column_int64(st, 0));
        json_object_set_new(o, "uid", sqlite3_column_type(st, 1) == SQLITE_NULL ? json_null()
                                                                                  : json_integer(sqlite3_column_int64(st, 1)));
        json_object_set_new(o, "action", json_string((const char *)sqlite3_column_text(st, 2)));
        json_object_set_new(o, "gpu", sqlite3_column_type(st, 3) == SQLITE_NULL ? json_null()
                                                                                  : json_integer(sqlite3_column_int64(st, 3)));
        static const char *const texts[] = {NULL, NULL, NULL, NULL, "gpu_uuid", "job", NULL, NULL, "detail"};
        for (int c = 4; c <= 8; c++) {
            if (texts[c])
                json_object_set_new(o, texts[c], sqlite3_column_type(st, c) == SQLITE_NULL
                                                     ? json_null()
                                                     : json_string((const char *)sqlite3_column_text(st, c)));
        }
        json_object_set_new(o, "duration_ms", sqlite3_column_type(st, 6) == SQLITE_NULL ? json_null()
                                                                                          : json_integer(sqlite3_column_int64(st, 6)));
        json_object_set_new(o, "memory_mb", sqlite3_column_type(st, 7) == SQLITE_NULL ? json_null()
                                                                                        : json_integer(sqlite3_column_int64(st, 7)));
        /* who acted through the TLS listener; absent for local callers and joblet itself */
        static const char *const remote[] = {"person", "serial", "role", "peer"};
        for (int c = 10; c <= 13; c++)
            if (sqlite3_column_type(st, c) != SQLITE_NULL)
                json_object_set_new(o, remote[c - 10], json_string((const char *)sqlite3_column_text(st, c)));
        json_array_append_new(arr, o);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        json_decref(arr);
        jerr_set(e, EIO, "database: audit: %s", sqlite3_errmsg(d->h));
        return NULL;
    }
    size_t n = json_array_size(arr);
    if (q->after > 0) /* oldest first so far: newest first, as every page */
        for (size_t i = 0; i < n / 2; i++) {
            json_t *a = json_incref(json_array_get(arr, i)), *b = json_incref(json_array_get(arr, n - 1 - i));
            json_array_set_new(arr, i, b);
            json_array_set_new(arr, n - 1 - i, a);
        }
    /* the other way: beyond the page's newest (or the cursor), or its oldest */
    int64_t first = n ? json_integer_value(json_object_get(json_array_get(arr, 0), "id")) : 0;
    int64_t last = n ? json_integer_value(json_object_get(json_array_get(arr, n - 1), "id")) : 0;
    int v;
    if (q->after > 0) {
        *newer = more;
        v = audit_beyond(d, q, true, n ? last : q->after + 1, e);
        *older = v > 0;
    } else {
        *older = more;
        v = q->before > 0 || n ? audit_beyond(d, q, false, n ? first : q->before - 1, e) : 0;
        *newer = v > 0;
    }
    if (v < 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

int db_gpu_admin_set(db *d, const char *uuid, const char *state, const char *reason, int64_t since_ms, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    const char *sql = state ? "INSERT OR REPLACE INTO gpu_admin (uuid, state, reason, since_ms) VALUES (?1, ?2, ?3, ?4)"
                            : "DELETE FROM gpu_admin WHERE uuid = ?1";
    if (sqlite3_prepare_v2(d->h, sql, -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, uuid);
    if (state) {
        bind_text(st, 2, state);
        bind_text(st, 3, reason);
        sqlite3_bind_int64(st, 4, since_ms);
    }
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, EIO, "database: gpu_admin: %s", sqlite3_errmsg(d->h));
}

int db_gpu_admin_load(db *d,
                      void (*fn)(const char *uuid, const char *state, const char *reason, int64_t since_ms, void *arg),
                      void *arg)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "SELECT uuid, state, reason, since_ms FROM gpu_admin", -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW)
        fn((const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2), sqlite3_column_int64(st, 3), arg);
    sqlite3_finalize(st);
    return 0;
}

int db_volume_insert(db *d, const db_volume *v, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h,
                           "INSERT INTO volumes (name, type, size_mb, owner_uid, owner_gid, created_ms)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, write_errno(d), "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, v->name);
    bind_text(st, 2, v->type);
    sqlite3_bind_int64(st, 3, v->size_mb);
    sqlite3_bind_int64(st, 4, v->owner_uid);
    sqlite3_bind_int64(st, 5, v->owner_gid);
    sqlite3_bind_int64(st, 6, v->created_ms);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, write_errno(d), "database: volumes: %s", sqlite3_errmsg(d->h));
}

int db_volume_delete(db *d, const char *name, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "DELETE FROM volumes WHERE name = ?1", -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, write_errno(d), "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, name);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, write_errno(d), "database: volumes: %s", sqlite3_errmsg(d->h));
}

int db_volume_load(db *d, void (*fn)(const db_volume *v, void *arg), void *arg, jerr *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h,
                           "SELECT name, type, size_mb, owner_uid, owner_gid, created_ms FROM volumes ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0), *type = (const char *)sqlite3_column_text(st, 1);
        db_volume v = {name ? name : "", type ? type : "", sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                       sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5)};
        fn(&v, arg);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, EIO, "database: volumes: %s", sqlite3_errmsg(d->h));
}

int db_network_insert(db *d, const db_network *n, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "INSERT INTO networks (name, cidr, owner_uid, created_ms) VALUES (?1, ?2, ?3, ?4)",
                           -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, write_errno(d), "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, n->name);
    bind_text(st, 2, n->cidr);
    sqlite3_bind_int64(st, 3, n->owner_uid);
    sqlite3_bind_int64(st, 4, n->created_ms);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, write_errno(d), "database: networks: %s", sqlite3_errmsg(d->h));
}

int db_network_delete(db *d, const char *name, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "DELETE FROM networks WHERE name = ?1", -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, write_errno(d), "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, name);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, write_errno(d), "database: networks: %s", sqlite3_errmsg(d->h));
}

int db_network_load(db *d, void (*fn)(const db_network *n, void *arg), void *arg, jerr *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "SELECT name, cidr, owner_uid, created_ms FROM networks ORDER BY name", -1, &st,
                           NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0), *cidr = (const char *)sqlite3_column_text(st, 1);
        db_network n = {name ? name : "", cidr ? cidr : "", sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
        fn(&n, arg);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, EIO, "database: networks: %s", sqlite3_errmsg(d->h));
}

int db_sample_add(db *d, const db_sample *smp, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "INSERT OR REPLACE INTO gpu_samples (gpu, span_s, t_ms, util, temp, mem_mb, power,"
                                 " allocated) VALUES (?,60,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    sqlite3_bind_int(st, 1, smp->gpu);
    sqlite3_bind_int64(st, 2, smp->t_ms);
    const double v[] = {smp->util, smp->temp, smp->mem_mb, smp->power};
    for (int i = 0; i < 4; i++) {
        if (v[i] >= 0)
            sqlite3_bind_double(st, 3 + i, v[i]);
        else
            sqlite3_bind_null(st, 3 + i);
    }
    sqlite3_bind_double(st, 7, smp->allocated);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, EIO, "database: gpu_samples: %s", sqlite3_errmsg(d->h));
}

int db_sample_compact(db *d, int64_t hour_before_ms, int64_t drop_before_ms, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, EIO, "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    char sql[1024];
    /* minutes older than a day become their hour's mean (an hour already there is kept: the
     * minutes of a compacted hour do not come again) */
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO gpu_samples (gpu, span_s, t_ms, util, temp, mem_mb, power, allocated)"
             " SELECT gpu, 3600, (t_ms / 3600000) * 3600000, avg(util), avg(temp), avg(mem_mb), avg(power), avg(allocated)"
             " FROM gpu_samples WHERE span_s = 60 AND t_ms < %lld GROUP BY gpu, t_ms / 3600000;"
             "DELETE FROM gpu_samples WHERE span_s = 60 AND t_ms < %lld;"
             "DELETE FROM gpu_samples WHERE t_ms < %lld;",
             (long long)hour_before_ms, (long long)hour_before_ms, (long long)drop_before_ms);
    char *err = NULL;
    if (sqlite3_exec(d->h, sql, NULL, NULL, &err) != SQLITE_OK) {
        jerr_set(e, EIO, "database: gpu_samples: %s", err ? err : sqlite3_errmsg(d->h));
        sqlite3_free(err);
        return -1;
    }
    return 0;
}

json_t *db_sample_series(db *d, int64_t since_ms, int64_t bucket_ms, jerr *e)
{
    sqlite3_stmt *st;
    if (bucket_ms <= 0)
        bucket_ms = 3600000;
    if (sqlite3_prepare_v2(d->h, "SELECT (t_ms / ?2) * ?2 AS b, avg(util), avg(allocated), avg(temp), avg(power),"
                                 " count(*) FROM gpu_samples WHERE t_ms >= ?1 GROUP BY b ORDER BY b", -1, &st,
                           NULL) != SQLITE_OK) {
        jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
        return NULL;
    }
    sqlite3_bind_int64(st, 1, since_ms);
    sqlite3_bind_int64(st, 2, bucket_ms);
    json_t *arr = json_array();
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *o = json_pack("{s:I,s:f,s:I}", "t", (json_int_t)sqlite3_column_int64(st, 0), "allocated_pct",
                              100.0 * sqlite3_column_double(st, 2), "rows", (json_int_t)sqlite3_column_int64(st, 5));
        const char *keys[] = {"util_pct", NULL, "temperature_c", "power_w"};
        for (int c = 1; c <= 4; c++)
            if (keys[c - 1])
                json_object_set_new(o, keys[c - 1], sqlite3_column_type(st, c) == SQLITE_NULL
                                                        ? json_null()
                                                        : json_real(sqlite3_column_double(st, c)));
        json_array_append_new(arr, o);
    }
    sqlite3_finalize(st);
    return arr;
}

int64_t db_sample_rows(db *d)
{
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(d->h, "SELECT count(*) FROM gpu_samples", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

int db_array_save(db *d, const db_array *a, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v3(d->h,
                           "INSERT OR REPLACE INTO arrays (id, seq, name, owner_uid, owner_gid, request, spec,"
                           " created_ms, made, skip, canceled_by, held, workflow_id, workflow_index, ahead, after_met,"
                           " held_by, gone_stopped, gone_completed, gone_failed, gone_canceled, gone_exit, canceled_why,"
                           " joined_ms, canceled_ms, released) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, 0, &st, NULL) != SQLITE_OK)
        return jerr_set(e, write_errno(d), "database: %s", sqlite3_errmsg(d->h));
    json_t *rj = jobreq_to_json(&a->req, JOBREQ_JSON_SECRETS);
    seal_request(d, rj);
    char *req = json_dumps(rj, JSON_COMPACT);
    json_decref(rj);
    bind_text(st, 1, a->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)a->seq);
    bind_text(st, 3, a->name);
    sqlite3_bind_int64(st, 4, a->owner_uid);
    sqlite3_bind_int64(st, 5, a->owner_gid);
    bind_text(st, 6, req);
    bind_text(st, 7, a->spec);
    sqlite3_bind_int64(st, 8, a->created_ms);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)a->made);
    bind_text(st, 10, a->skip);
    bind_opt_i64(st, 11, a->canceled_by, a->canceled_by != -1); /* -2, -3: by joblet (core/arrays.h) */
    sqlite3_bind_int(st, 12, a->held);
    bind_text(st, 13, a->wf_id[0] ? a->wf_id : NULL);
    bind_opt_i64(st, 14, a->wf_index, a->wf_id[0] != 0);
    bind_text(st, 15, a->ahead);
    sqlite3_bind_int(st, 16, a->after_met);
    bind_opt_i64(st, 17, a->held_by, a->held && a->held_by >= 0);
    for (int k = 0; k < 4; k++)
        sqlite3_bind_int64(st, 18 + k, (sqlite3_int64)a->gone[k]);
    sqlite3_bind_int(st, 22, a->gone_exit);
    bind_text(st, 23, a->canceled_why);
    sqlite3_bind_int64(st, 24, a->joined_ms);
    sqlite3_bind_int64(st, 25, a->canceled_ms);
    bind_text(st, 26, a->held ? a->released : NULL);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    free(req);
    if (rc != SQLITE_DONE)
        return jerr_set(e, write_errno(d), "database: saving array %s: %s", a->id,
                        sqlite3_errmsg(d->h));
    return 0;
}

int db_array_delete(db *d, const char *id, jerr *e)
{
    if (begin(d) < 0)
        return jerr_set(e, write_errno(d), "database: cannot begin a transaction: %s", sqlite3_errmsg(d->h));
    if (keep_high_water(d, d->hw_array, id, e) < 0)
        return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "DELETE FROM arrays WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, write_errno(d), "database: %s", sqlite3_errmsg(d->h));
    bind_text(st, 1, id);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    d->deleted = true;
    if (rc != SQLITE_DONE)
        return jerr_set(e, write_errno(d), "database: arrays: %s", sqlite3_errmsg(d->h));
    /* its history (core/job_events.h keeps an array's under its id), in the same transaction */
    sqlite3_reset(d->ev_del);
    sqlite3_bind_text(d->ev_del, 1, id, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(d->ev_del);
    sqlite3_reset(d->ev_del);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, write_errno(d), "database: deleting the events of array %s: %s", id,
                                            sqlite3_errmsg(d->h));
}

int db_array_load(db *d, void (*fn)(db_array *a, void *arg), void *arg, jerr *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->h, "SELECT id, seq, name, owner_uid, owner_gid, request, spec, created_ms, made, skip,"
                                  " canceled_by, held, workflow_id, workflow_index, ahead, after_met, held_by, gone_stopped,"
                                  " gone_completed, gone_failed, gone_canceled, gone_exit, canceled_why, joined_ms, canceled_ms,"
                                  " released FROM arrays ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return jerr_set(e, EIO, "database: %s", sqlite3_errmsg(d->h));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        db_array a = {0};
        snprintf(a.id, sizeof a.id, "%s", (const char *)sqlite3_column_text(st, 0));
        a.seq = (uint64_t)sqlite3_column_int64(st, 1);
        a.name = (const char *)sqlite3_column_text(st, 2);
        a.owner_uid = sqlite3_column_int64(st, 3);
        a.owner_gid = sqlite3_column_int64(st, 4);
        char unreadable[STORED_WHY_MAX]; /* why its tasks cannot be made as asked ("" they can) */
        stored_request(d, (const char *)sqlite3_column_text(st, 5), "array", a.id, &a.req, unreadable);
        a.unreadable = unreadable[0] ? unreadable : NULL;
        const char *spec = (const char *)sqlite3_column_text(st, 6);
        a.spec = spec ? spec : "";
        a.created_ms = sqlite3_column_int64(st, 7);
        a.made = (uint64_t)sqlite3_column_int64(st, 8);
        a.skip = (const char *)sqlite3_column_text(st, 9);
        a.canceled_by = sqlite3_column_type(st, 10) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 10);
        a.held = sqlite3_column_int(st, 11) != 0;
        const char *wf = (const char *)sqlite3_column_text(st, 12);
        snprintf(a.wf_id, sizeof a.wf_id, "%s", wf ? wf : "");
        a.wf_index = sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 13);
        a.ahead = (const char *)sqlite3_column_text(st, 14);
        a.after_met = sqlite3_column_int(st, 15) != 0;
        a.held_by = sqlite3_column_type(st, 16) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 16);
        for (int k = 0; k < 4; k++)
            a.gone[k] = (uint64_t)sqlite3_column_int64(st, 17 + k);
        a.gone_exit = sqlite3_column_int(st, 21);
        a.canceled_why = (const char *)sqlite3_column_text(st, 22);
        a.joined_ms = sqlite3_column_int64(st, 23);
        a.canceled_ms = sqlite3_column_int64(st, 24);
        a.released = (const char *)sqlite3_column_text(st, 25);
        fn(&a, arg);
        jobreq_free(&a.req);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : jerr_set(e, EIO, "database: arrays: %s", sqlite3_errmsg(d->h));
}
