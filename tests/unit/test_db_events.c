/* Unit tests for a job's history in the database (src/store/db.c, job_events): events kept in
 * order up to the bound, the oldest dropped and counted, gone with the job; the placement and
 * spec texts written apart from the row; all of it there after the database is reopened. And
 * job control's columns (a requeue under way, the time suspended) kept over a reopen. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/db.h"

typedef struct seen {
    int n;
    char first[64], last[64];
    int64_t first_uid;
} seen;

static void count(const db_event *ev, void *arg)
{
    seen *s = arg;
    if (!s->n++) {
        snprintf(s->first, sizeof s->first, "%s %s", ev->event, ev->detail ? ev->detail : "-");
        s->first_uid = ev->uid;
    }
    snprintf(s->last, sizeof s->last, "%s %s", ev->event, ev->detail ? ev->detail : "-");
}

typedef struct usage_seen {
    int64_t uid7_ms, uid7_jobs, gpu_ms[8];
    int other;
} usage_seen;

static void usage_add_up(bool per_gpu, int64_t key, int64_t gpu_ms, int64_t jobs, void *arg)
{
    usage_seen *s = arg;
    if (per_gpu && key >= 0 && key < 8)
        s->gpu_ms[key] += gpu_ms;
    else if (!per_gpu && key == 7) {
        s->uid7_ms += gpu_ms;
        s->uid7_jobs += jobs;
    } else
        s->other++;
}

static db_job *a_job(const char *id, uint64_t seq)
{
    db_job *j = calloc(1, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    j->seq = seq;
    j->stopped_by = -1;
    jobreq_set_command(&j->req, "true", &(jerr){0});
    return j;
}

/* The database at path opened (again), or the test fails with joblet's message. */
static db *reopen(const char *path)
{
    jerr e = {0};
    db *d = db_open(path, &e);
    if (!d)
        fail_msg("%s", e.msg);
    return d;
}

/* A fresh database in a new directory under /tmp (dir: its template, filled in), or the test fails. */
static db *open_fresh(char *dir, char *path, size_t len)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/joblet.db", dir);
    return reopen(path);
}

static void test_bound_drop_delete_reopen(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_db_events.XXXXXX", path[128], cmd[160];
    db *d = open_fresh(dir, path, sizeof path);
    jerr e = {0};
    assert_int_equal(db_schema_version(d), 28);
    db_job *a = a_job("aaaaaaaa-0000-4000-8000-000000000001", 1), *b = a_job("bbbbbbbb-0000-4000-8000-000000000002", 2);
    assert_int_equal(db_insert_job(d, a, &e), 0);
    assert_int_equal(db_insert_job(d, b, &e), 0);
    for (int i = 1; i <= 70; i++) {
        char det[32];
        snprintf(det, sizeof det, "#%d", i);
        db_event ev = {1000 + i, i == 1 ? "submitted" : "queued", i == 1 ? 42 : -1, det};
        assert_int_equal(db_event_add(d, a->id, &ev, 64, &e), 0);
    }
    db_event one = {5, "submitted", 7, NULL};
    assert_int_equal(db_event_add(d, b->id, &one, 64, &e), 0);
    assert_int_equal(db_job_extra_set(d, a->id, DB_JOB_PLACEMENT, "{\"score\": 1}", &e), 0);
    /* a state change rewrites the row: the extras stay */
    assert_int_equal(db_update_job(d, a, &e), 0);
    assert_int_equal(db_flush(d, &e), 0);
    db_close(d);

    d = db_open(path, &e);
    assert_non_null(d);
    seen s = {0};
    uint64_t dropped = 99;
    assert_int_equal(db_event_load(d, a->id, count, &s, &dropped, &e), 0);
    assert_int_equal(s.n, 64);
    assert_int_equal(dropped, 6);
    assert_string_equal(s.first, "queued #7");
    assert_int_equal(s.first_uid, -1);
    assert_string_equal(s.last, "queued #70");
    memset(&s, 0, sizeof s);
    assert_int_equal(db_event_load(d, b->id, count, &s, &dropped, &e), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(dropped, 0);
    assert_string_equal(s.first, "submitted -");
    assert_int_equal(s.first_uid, 7);
    char *pl = db_job_extra_get(d, a->id, DB_JOB_PLACEMENT);
    assert_string_equal(pl, "{\"score\": 1}");
    free(pl);
    assert_null(db_job_extra_get(d, a->id, DB_JOB_SPEC));
    assert_null(db_job_extra_get(d, "no-such-job", DB_JOB_SPEC));
    /* the job goes, its history with it, its usage into the deleted jobs' sums; the other's stays */
    db_usage u = {.uid = 7, .gpu_ms = 5001, .ngpus = 2, .gpu = {1, 3}, .gpu_ms_on = {1501, 1500}};
    assert_int_equal(db_delete_job(d, a->id, &u, &e), 0);
    assert_int_equal(db_flush(d, &e), 0);
    usage_seen us = {0};
    assert_int_equal(db_usage_load(d, usage_add_up, &us, &e), 0);
    assert_int_equal(us.uid7_ms, 5001);
    assert_int_equal(us.uid7_jobs, 1);
    assert_int_equal(us.gpu_ms[1], 1501);
    assert_int_equal(us.gpu_ms[3], 1500);
    assert_int_equal(us.other, 0);
    memset(&s, 0, sizeof s);
    assert_int_equal(db_event_load(d, a->id, count, &s, &dropped, &e), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(dropped, 0);
    memset(&s, 0, sizeof s);
    assert_int_equal(db_event_load(d, b->id, count, &s, &dropped, &e), 0);
    assert_int_equal(s.n, 1);
    db_close(d);
    jobreq_free(&a->req);
    jobreq_free(&b->req);
    free(a);
    free(b);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

typedef struct loaded {
    int n;
    bool asked, hold;
    int64_t suspended_ms, since_ms;
} loaded;

static void keep(db_job *r, void *arg)
{
    loaded *l = arg;
    l->n++;
    l->asked = r->requeue_asked;
    l->hold = r->requeue_hold;
    l->suspended_ms = r->suspended_ms;
    l->since_ms = r->suspended_since_ms;
}

/* Job control's columns (migration 16): a requeue --hold under way and the time suspended are
 * there after the database is reopened, as after a kill -9 of joblet. */
static void test_requeue_and_suspension_reopen(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_db_ctl.XXXXXX", path[128], cmd[160];
    db *d = open_fresh(dir, path, sizeof path);
    jerr e = {0};
    db_job *a = a_job("aaaaaaaa-0000-4000-8000-000000000003", 3);
    assert_int_equal(db_insert_job(d, a, &e), 0);
    a->requeue_asked = a->requeue_hold = true;
    a->suspended_ms = 20123;
    a->suspended_since_ms = 1700000000123;
    assert_int_equal(db_update_job(d, a, &e), 0);
    db_close(d);
    d = reopen(path);
    loaded l = {0};
    assert_int_equal(db_load_jobs(d, NULL, keep, &l, &e), 0);
    assert_int_equal(l.n, 1);
    assert_true(l.asked && l.hold);
    assert_int_equal(l.suspended_ms, 20123);
    assert_int_equal(l.since_ms, 1700000000123);
    /* a requeue without --hold, not suspended now */
    a->requeue_hold = false;
    a->suspended_since_ms = 0;
    assert_int_equal(db_update_job(d, a, &e), 0);
    db_close(d);
    d = reopen(path);
    l = (loaded){0};
    assert_int_equal(db_load_jobs(d, NULL, keep, &l, &e), 0);
    assert_true(l.asked && !l.hold);
    assert_int_equal(l.suspended_ms, 20123);
    assert_int_equal(l.since_ms, 0);
    db_close(d);
    jobreq_free(&a->req);
    free(a);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_drop_delete_reopen),
        cmocka_unit_test(test_requeue_and_suspension_reopen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
