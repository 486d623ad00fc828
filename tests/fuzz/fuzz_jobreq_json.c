/* The job request schema read from JSON (src/common/jobreq.c, jobreq_from_json): the body of
 * POST /v1/jobs as the route reads it (json_loadb with JSON_REJECT_DUPLICATES) and the request
 * as the daemon reads it back from its database (JOBREQ_FROM_DB). A request that is accepted
 * must also survive the database: written out with jobreq_to_json and read back it must give
 * the same JSON (uploads aside: the daemon stores their listing, not their content). */
#include <time.h>

#include "common/jobreq.h"
#include "common/log.h"
#include "fuzz.h"

/* a fixed "now", so that a crash reproduces: 2026-01-01T00:00:00Z */
#define NOW ((time_t)1767225600)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_set_level(LOG_ERR); /* a stored request's refused fields are logged as warnings */
    return 0;
}

static void check_machine(const job_req *r)
{
    uint8_t online[CPU_MAX / 8] = {0x0f}; /* CPUs 0-3 */
    jobreq_machine m = {.ncpus = 4, .mem_total_mb = 8192, .online_cpus = online};
    jerr e = {0};
    jobreq_check_machine(r, &m, &e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!body)
        return 0;
    job_req r, back;
    jerr e = {0};
    if (jobreq_from_json(body, &r, 0, NOW, &e) == 0) {
        FUZZ_ASSERT(!e.msg[0], "accepted with a message: %s", e.msg);
        check_machine(&r);
        json_t *stored = jobreq_to_json(&r, JOBREQ_JSON_SECRETS);
        jerr e2 = {0};
        FUZZ_ASSERT(jobreq_from_json(stored, &back, JOBREQ_FROM_DB, NOW, &e2) == 0, "stored: %s", e2.msg);
        json_t *again = jobreq_to_json(&back, JOBREQ_JSON_SECRETS);
        json_object_del(stored, "uploads");
        json_object_del(again, "uploads");
        if (!json_equal(stored, again)) {
            char *a = json_dumps(stored, JSON_SORT_KEYS), *b = json_dumps(again, JSON_SORT_KEYS);
            FUZZ_ASSERT(0, "the request changes when read back from the database:\n  %s\n  %s", a, b);
        }
        json_decref(again);
        json_decref(stored);
        json_t *shown = jobreq_to_json(&r, 0); /* the API's answer: secrets masked */
        json_decref(shown);
        jobreq_free(&back);
        jobreq_free(&r);
    } else {
        FUZZ_ASSERT(e.msg[0], "refused without a message");
        char out[1024];
        jobreq_reword(&e, "--flag", out, sizeof out);
    }
    /* the database's reading: never refuses a stored job over one field */
    e = (jerr){0};
    if (jobreq_from_json(body, &r, JOBREQ_FROM_DB, NOW, &e) == 0)
        jobreq_free(&r);
    json_decref(body);
    return 0;
}
