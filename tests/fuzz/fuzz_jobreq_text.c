/* The job request schema read from text (src/common/jobreq.c, jobreq_set_text): rnx's flags
 * and the workflow file's scalars. The input is a list of fields: one byte that picks the
 * field (of those a client may set), then its text up to a NUL. Environment fields take
 * NAME=VALUE (jobreq_add_env). Text that is not UTF-8 is skipped, as rnx refuses it before it
 * reaches the schema (cmd_job.c's utf8_or_usage; a workflow file must be UTF-8 as a whole).
 *
 * Promises checked: a refusal names a field of the schema and its message starts with that
 * field's name and ": " (every surface rewords that word); and what rnx accepts, the daemon accepts: the request rnx would send
 * (jobreq_to_json) is read by the API (jobreq_from_json) without a refusal and gives the same
 * request. */
#include <string.h>
#include <time.h>

#include "common/jobreq.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "fuzz.h"

#define NOW ((time_t)1767225600) /* 2026-01-01T00:00:00Z */

static const jobreq_field *client_fields[JR_N];
static size_t nclient;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_set_level(LOG_ERR);
    for (int i = 0; i < JR_N; i++)
        if (!jobreq_fields[i].daemon_only && jobreq_fields[i].kind != JK_UPLOADS)
            client_fields[nclient++] = &jobreq_fields[i];
    return 0;
}

static void set_one(job_req *r, const jobreq_field *f, const char *text)
{
    jerr e = {0};
    int rc;
    if (!utf8_valid(text, strlen(text)))
        return;
    if (f->kind == JK_ENV) {
        const char *eq = strchr(text, '=');
        if (!eq)
            return;
        char *name = strndup(text, (size_t)(eq - text));
        rc = jobreq_add_env(r, f == &jobreq_fields[JR_SECRET_ENV], name, eq + 1, &e);
        free(name);
    } else if (f == &jobreq_fields[JR_COMMAND]) {
        rc = jobreq_set_command(r, text, &e);
    } else if (f == &jobreq_fields[JR_ARGS]) {
        jobreq_add_arg(r, text);
        rc = 0;
    } else {
        rc = jobreq_set_text(r, f, text, NOW, &e);
    }
    if (rc < 0) {
        /* the field at fault is a field of the schema (not always f: a variable given in env
         * and secret_env is secret_env's fault, whichever came second) */
        size_t kl = strlen(e.field);
        FUZZ_ASSERT(jobreq_field_by_key(e.field), "%s='%s' refused naming the field '%s'", f->key, text, e.field);
        FUZZ_ASSERT(!strncmp(e.msg, e.field, kl) && e.msg[kl] == ':', "%s='%s' refused with '%s' (field %s)",
                    f->key, text, e.msg, e.field);
        char out[1024];
        jobreq_reword(&e, f->flag ? f->flag : f->key, out, sizeof out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    job_req r = {0};
    while (size > 0) {
        const jobreq_field *f = client_fields[data[0] % nclient];
        data++, size--;
        char *text = fuzz_next(&data, &size, 0);
        set_one(&r, f, text ? text : "");
        free(text);
    }
    jerr e = {0};
    if (jobreq_has(&r, JR_COMMAND) && jobreq_check(&r, &e) == 0) {
        json_t *sent = jobreq_to_json(&r, JOBREQ_JSON_SECRETS);
        job_req got;
        jerr e2 = {0};
        char *s = json_dumps(sent, JSON_SORT_KEYS);
        FUZZ_ASSERT(jobreq_from_json(sent, &got, 0, NOW, &e2) == 0, "rnx sends %s, the API refuses it: %s", s,
                    e2.msg);
        json_t *again = jobreq_to_json(&got, JOBREQ_JSON_SECRETS);
        char *t = json_dumps(again, JSON_SORT_KEYS);
        FUZZ_ASSERT(json_equal(sent, again), "rnx sends %s, the API reads %s", s, t);
        free(s);
        free(t);
        json_decref(again);
        json_decref(sent);
        jobreq_free(&got);
    }
    jobreq_free(&r);
    return 0;
}
