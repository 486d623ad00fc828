/* Unit tests for a job's and a workflow's rows in the database (src/store/db.c), without the
 * daemon: every field of a row written comes back as it was after the database is reopened
 * (the secret environment sealed and opened again), a row's update replaces it, and a
 * loader may take what it keeps of a loaded row (the rest is freed by the store). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/db.h"

typedef struct loaded {
    int n;
    db_job first;          /* the first row, with what it owned taken over */
    char second_state[16];
} loaded;

static void take_job(db_job *r, void *arg)
{
    loaded *l = arg;
    if (l->n++ == 0) {
        l->first = *r;     /* takes everything: the store frees nothing of it */
        r->name = r->signal_name = r->end_reason = r->error = NULL;
        r->req = (job_req){0};
        r->gpus = (gpu_grants){0};
    } else {
        snprintf(l->second_state, sizeof l->second_state, "%s", job_state_name(r->state));
        /* takes nothing: the store frees it after the call */
    }
}

typedef struct loaded_wf {
    int n;
    char id[37], state[16], reason[64], doc_name[32];
    int64_t canceled_by, owner_uid;
} loaded_wf;

static void see_wf(db_workflow *r, void *arg)
{
    loaded_wf *l = arg;
    l->n++;
    snprintf(l->id, sizeof l->id, "%s", r->id);
    snprintf(l->state, sizeof l->state, "%s", wf_state_name(r->state));
    snprintf(l->reason, sizeof l->reason, "%s", r->reason ? r->reason : "-");
    snprintf(l->doc_name, sizeof l->doc_name, "%s", json_string_value(json_object_get(r->doc, "name")));
    l->canceled_by = r->canceled_by;
    l->owner_uid = r->owner_uid;
}

/* A new database in a new directory (dir: a mkdtemp template); path: its file. */
static db *open_in(char *dir, char *path, size_t len)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/joblet.db", dir);
    jerr e = {0};
    db *d = db_open(path, &e);
    if (!d)
        fail_msg("%s", e.msg);
    return d;
}

static void remove_dir(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_job_and_workflow_rows(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_db_rows.XXXXXX", path[128];
    jerr e = {0};
    db *d = open_in(dir, path, sizeof path);

    db_job a = {.id = "aaaaaaaa-0000-4000-8000-000000000001", .seq = 1, .name = "train", .state = JS_RUNNING,
                .owner_uid = 1000, .owner_gid = 1000, .uid = 1000, .gid = 1000, .sandbox_uid = 70001,
                .created_ms = 1000, .scheduled_ms = 1500, .started_ms = 2000, .stopped_by = -1,
                .cpu_ns = 7, .memory_peak_bytes = 8, .io_read_bytes = 9, .io_write_bytes = 10,
                .preemptions = 2, .preempting = true, .wf_id = "ffffffff-0000-4000-8000-000000000009", .wf_index = 3,
                .shim_pid = 4242, .shim_start = 99, .init_pid = 4243};
    assert_int_equal(jobreq_set_command(&a.req, "python3", &e), 0);
    assert_int_equal(jobreq_add_env(&a.req, false, "A", "1", &e), 0);
    assert_int_equal(jobreq_add_env(&a.req, true, "TOKEN", "s3cret", &e), 0);
    gpu_grant *g = grant_list_add(&a.gpus);
    g->index = 1;
    snprintf(g->uuid, sizeof g->uuid, "GPU-1");
    g->shared_mb = -1;
    db_job b = {.id = "bbbbbbbb-0000-4000-8000-000000000002", .seq = 2, .state = JS_QUEUED, .owner_uid = 0, .uid = 70000,
                .gid = 70000, .created_ms = 3000, .stopped_by = -1};
    assert_int_equal(jobreq_set_command(&b.req, "true", &e), 0);
    assert_int_equal(db_insert_job(d, &a, &e), 0);
    assert_int_equal(db_insert_job(d, &b, &e), 0);
    /* it ended: the update replaces the row */
    a.state = JS_FAILED;
    a.ended_ms = 5000;
    a.has_exit = true;
    a.exit_code = 3;
    a.end_reason = "gpu_error";
    a.error = "lost its GPU";
    a.stopped_by = 0;
    a.preempting = false;
    a.shim_pid = 0;
    a.gpu_fault = (gpu_fault){.set = true, .gpu = 1, .uuid = "GPU-1", .xid = 79, .action = "offline", .by_uid = -1,
                              .ms = 4900};
    assert_int_equal(db_update_job(d, &a, &e), 0);

    db_workflow w = {.id = "ffffffff-0000-4000-8000-000000000009", .seq = 1, .owner_uid = 1000, .owner_gid = 1000,
                     .state = WF_RUNNING, .created_ms = 900, .started_ms = 1000, .canceled_by = -1,
                     .doc = json_pack("{s:s,s:[]}", "name", "pipeline", "jobs")};
    assert_int_equal(db_insert_workflow(d, &w, &e), 0);
    w.state = WF_CANCELED;
    w.canceled_by = 1000;
    w.reason = "canceled by its owner";
    assert_int_equal(db_save_workflow(d, &w, &e), 0);
    assert_int_equal(db_flush(d, &e), 0);
    db_close(d);

    d = db_open(path, &e);
    assert_non_null(d);
    loaded l = {0};
    assert_int_equal(db_load_jobs(d, NULL, take_job, &l, &e), 0);
    assert_int_equal(l.n, 2);
    db_job *r = &l.first;
    assert_string_equal(r->id, a.id);
    assert_int_equal(r->seq, 1);
    assert_string_equal(r->name, "train");
    assert_int_equal(r->state, JS_FAILED);
    assert_int_equal(r->owner_uid, 1000);
    assert_int_equal(r->sandbox_uid, 70001);
    assert_int_equal(r->created_ms, 1000);
    assert_int_equal(r->scheduled_ms, 1500);
    assert_int_equal(r->started_ms, 2000);
    assert_int_equal(r->ended_ms, 5000);
    assert_true(r->has_exit);
    assert_int_equal(r->exit_code, 3);
    assert_int_equal(r->signal, 0);
    assert_null(r->signal_name);
    assert_string_equal(r->end_reason, "gpu_error");
    assert_string_equal(r->error, "lost its GPU");
    assert_int_equal(r->stopped_by, 0);
    assert_int_equal(r->cpu_ns, 7);
    assert_int_equal(r->io_write_bytes, 10);
    assert_int_equal(r->preemptions, 2);
    assert_false(r->preempting);
    assert_string_equal(r->wf_id, w.id);
    assert_int_equal(r->wf_index, 3);
    assert_int_equal(r->shim_pid, 0);
    assert_string_equal(r->req.command, "python3");
    assert_int_equal(r->req.nenv, 1);
    assert_int_equal(r->req.nsecret_env, 1);
    assert_string_equal(r->req.secret_env[0].value, "s3cret");
    assert_int_equal(r->gpus.n, 1);
    assert_string_equal(r->gpus.g[0].uuid, "GPU-1");
    assert_true(r->gpu_fault.set);
    assert_int_equal(r->gpu_fault.xid, 79);
    assert_string_equal(r->gpu_fault.action, "offline");
    assert_string_equal(l.second_state, "QUEUED");
    db_job_free(r);
    assert_null(r->name);

    loaded_wf lw = {0};
    assert_int_equal(db_load_workflows(d, see_wf, &lw, &e), 0);
    assert_int_equal(lw.n, 1);
    assert_string_equal(lw.id, w.id);
    assert_string_equal(lw.state, "CANCELED");
    assert_string_equal(lw.reason, "canceled by its owner");
    assert_string_equal(lw.doc_name, "pipeline");
    assert_int_equal(lw.canceled_by, 1000);
    assert_int_equal(lw.owner_uid, 1000);
    db_close(d);

    jobreq_free(&a.req);
    grant_list_free(&a.gpus);
    jobreq_free(&b.req);
    json_decref(w.doc);
    remove_dir(dir);
}

typedef struct seen_order {
    size_t told; /* what count said, before the first row */
    int n;
    uint64_t seq[4], cpu_ns[4], peak[4], gpu_ms[4];
} seen_order;

static void order_count(size_t n, void *arg)
{
    seen_order *o = arg;
    assert_int_equal(o->n, 0);
    o->told = n;
}

static void order_row(db_job *r, void *arg)
{
    seen_order *o = arg;
    assert_true(o->n < 4);
    o->seq[o->n] = r->seq;
    o->cpu_ns[o->n] = r->cpu_ns;
    o->peak[o->n] = r->memory_peak_bytes;
    o->gpu_ms[o->n] = r->gpu_ms_before;
    o->n++;
}

/* Rows come in seq order whether or not the table holds them so (a row written again after a
 * failed commit, or by hand, lies after later ones), the count first; usage's five figures come
 * back, and a usage or request that is not JSON gives zeros or an empty request (nothing leaked:
 * the sanitizer pass), not a start refused. */
static void test_rows_in_seq_order_with_their_usage(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_db_rows.XXXXXX", path[128];
    jerr e = {0};
    db *d = open_in(dir, path, sizeof path);
    for (int i = 1; i <= 3; i++) {
        db_job r = {.seq = (uint64_t)i, .state = JS_COMPLETED, .owner_uid = 1000, .uid = 1000, .gid = 1000,
                    .created_ms = 1000 * i, .stopped_by = -1, .cpu_ns = 10u * i, .memory_peak_bytes = 20u * i,
                    .io_read_bytes = 30, .io_write_bytes = 40, .gpu_ms_before = 50u * i};
        snprintf(r.id, sizeof r.id, "cccccccc-0000-4000-8000-00000000000%d", i);
        assert_int_equal(jobreq_set_command(&r.req, "true", &e), 0);
        assert_int_equal(db_insert_job(d, &r, &e), 0);
        jobreq_free(&r.req);
    }
    assert_int_equal(db_flush(d, &e), 0);
    db_close(d);

    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) { /* seq 1's row moved after the others in the table, seq 2's usage broken */
            sqlite3 *h;
            assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
            assert_int_equal(sqlite3_exec(h, "UPDATE jobs SET rowid = 100 WHERE seq = 1;"
                                             "UPDATE jobs SET usage = '{\"cpu_ns\":' WHERE seq = 2;"
                                             "UPDATE jobs SET request = 'not JSON' WHERE seq = 3;",
                                          NULL, NULL, NULL), SQLITE_OK);
            sqlite3_close(h);
        }
        d = db_open(path, &e);
        assert_non_null(d);
        seen_order o = {0};
        assert_int_equal(db_load_jobs(d, order_count, order_row, &o, &e), 0);
        assert_int_equal(o.told, 3);
        assert_int_equal(o.n, 3);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(o.seq[i], i + 1);
            bool broken = pass == 1 && i == 1;
            assert_int_equal(o.cpu_ns[i], broken ? 0 : 10u * (i + 1));
            assert_int_equal(o.peak[i], broken ? 0 : 20u * (i + 1));
            assert_int_equal(o.gpu_ms[i], broken ? 0 : 50u * (i + 1));
        }
        db_close(d);
    }
    remove_dir(dir);
}

/* An empty table: count told 0, no row; rows whose table order leaves seq order only at the
 * table's end (the last two swapped) still come in seq order. */
static void test_rows_order_late_swap_and_empty(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_db_rows.XXXXXX", path[128];
    jerr e = {0};
    db *d = open_in(dir, path, sizeof path);
    seen_order o = {.told = 99};
    assert_int_equal(db_load_jobs(d, order_count, order_row, &o, &e), 0);
    assert_int_equal(o.told, 0);
    assert_int_equal(o.n, 0);
    for (int i = 1; i <= 4; i++) {
        db_job r = {.seq = (uint64_t)i, .state = JS_COMPLETED, .owner_uid = 1000, .uid = 1000, .gid = 1000,
                    .created_ms = 1000 * i, .stopped_by = -1};
        snprintf(r.id, sizeof r.id, "dddddddd-0000-4000-8000-00000000000%d", i);
        assert_int_equal(jobreq_set_command(&r.req, "true", &e), 0);
        assert_int_equal(db_insert_job(d, &r, &e), 0);
        jobreq_free(&r.req);
    }
    assert_int_equal(db_flush(d, &e), 0);
    db_close(d);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE jobs SET rowid = 50 WHERE seq = 3;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    d = db_open(path, &e);
    assert_non_null(d);
    o = (seen_order){0};
    assert_int_equal(db_load_jobs(d, order_count, order_row, &o, &e), 0);
    assert_int_equal(o.told, 4);
    assert_int_equal(o.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(o.seq[i], i + 1);
    db_close(d);
    remove_dir(dir);
}

static void test_state_names(void **state)
{
    (void)state;
    enum job_state s;
    assert_int_equal(job_state_parse("preempted", &s), 0);
    assert_int_equal(s, JS_PREEMPTED);
    assert_string_equal(job_state_name(JS_CANCELED), "CANCELED");
    assert_int_equal(job_state_parse("DELETED", &s), -1);
    assert_int_equal(job_state_parse(NULL, &s), -1);
    for (int i = 0; i < JS_COUNT; i++) {
        assert_int_equal(job_state_parse(job_state_name((enum job_state)i), &s), 0);
        assert_int_equal(s, i);
    }
    enum wf_state w;
    assert_int_equal(wf_state_parse("COMPLETED", &w), 0);
    assert_int_equal(w, WF_COMPLETED);
    assert_int_equal(wf_state_parse("completed", &w), -1); /* the database's spelling only */
    assert_string_equal(wf_state_name(WF_PENDING), "PENDING");
}

/* Another process holds the write lock: the first write of a turn waits for it and gives up; the
 * lock goes; the turn writes again with the same statement (its reset forgets it failed) and that
 * write goes through. The turn must not commit: the first row would be lost while the daemon took
 * it as saved. Rolled back whole, neither row is there, and the next turn commits. (5 s: the wait.) */
static void test_a_write_that_gave_up_on_a_lock_fails_its_turn(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_db_rows.XXXXXX", path[128];
    jerr e = {0};
    db *d = open_in(dir, path, sizeof path);
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE;", NULL, NULL, NULL), SQLITE_OK);
    db_job a = {.id = "aaaaaaaa-0000-4000-8000-00000000000a", .seq = 1, .state = JS_QUEUED, .created_ms = 1,
                .stopped_by = -1};
    db_job b = {.id = "bbbbbbbb-0000-4000-8000-00000000000b", .seq = 2, .state = JS_QUEUED, .created_ms = 2,
                .stopped_by = -1};
    assert_int_equal(jobreq_set_command(&a.req, "true", &e), 0);
    assert_int_equal(jobreq_set_command(&b.req, "true", &e), 0);
    assert_int_equal(db_insert_job(d, &a, &e), -1);            /* waited, gave up */
    assert_int_equal(sqlite3_exec(other, "ROLLBACK;", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(db_insert_job(d, &b, &e), 0);             /* the same statement, now free */
    assert_int_equal(db_flush(d, &e), -1);
    assert_non_null(strstr(e.msg, "locked"));
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(other, "SELECT count(*) FROM jobs;", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);            /* neither: the turn rolled back whole */
    sqlite3_finalize(st);
    /* the next turn writes both again and commits */
    assert_int_equal(db_insert_job(d, &a, &e), 0);
    assert_int_equal(db_insert_job(d, &b, &e), 0);
    assert_int_equal(db_flush(d, &e), 0);
    sqlite3_close(other);
    jobreq_free(&a.req);
    jobreq_free(&b.req);
    db_close(d);
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_and_workflow_rows),
        cmocka_unit_test(test_rows_in_seq_order_with_their_usage),
        cmocka_unit_test(test_rows_order_late_swap_and_empty),
        cmocka_unit_test(test_state_names),
        cmocka_unit_test(test_a_write_that_gave_up_on_a_lock_fails_its_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
