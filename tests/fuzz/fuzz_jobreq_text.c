/* The job request schema read from text (src/common/jobreq.c, jobreq_set_text): rnx's flags
 * and the workflow file's scalars. The input is a list of fields: one byte that picks the
 * field (of those a client may set), then its text up to a NUL. Environment fields take
 * NAME=VALUE (jobreq_add_env). Text that is not UTF-8 is skipped, as rnx refuses it before it
 * reaches the schema (cmd_job.c's utf8_or_usage; a workflow file must be UTF-8 as a whole).
 *
 * Promises checked: a refusal names a field of the schema and its message starts with that
 * field's name and ": " (every surface rewords that word); and what rnx accepts, the daemon accepts: the request rnx would send
 * (jobreq_to_json) is read by the API (jobreq_from_json) without a refusal and gives the same
 * request; and the request written back as rnx job run's flags (jobreq_to_flags, what
 * `rnx job status --detail` shows) reads back through the same table as the same request
 * (secret values masked on both sides; a switch given as false is the default, not a flag). */
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

/* Each "--flag=value" of jobreq_to_flags, read as rnx reads it. */
static void read_flags(json_t *flags, job_req *back)
{
    size_t i;
    json_t *v;
    json_array_foreach(flags, i, v) {
        const char *s = json_string_value(v), *eq = strchr(s, '=');
        char *flag = strndup(s, eq ? (size_t)(eq - s) : strlen(s));
        const jobreq_field *f = NULL; /* rnx's getopt table is made of the same rows */
        for (int k = 0; k < JR_N && !f; k++)
            if (jobreq_fields[k].flag && !strcmp(jobreq_fields[k].flag, flag))
                f = &jobreq_fields[k];
        if (!strcmp(flag, "--env"))
            f = &jobreq_fields[JR_ENV];
        else if (!strcmp(flag, "--secret-env"))
            f = &jobreq_fields[JR_SECRET_ENV];
        FUZZ_ASSERT(f, "no field has the flag %s", flag);
        jerr e = {0};
        if (f->kind == JK_ENV) {
            const char *kv = strchr(eq + 1, '=');
            char *name = strndup(eq + 1, (size_t)(kv - eq - 1));
            FUZZ_ASSERT(jobreq_add_env(back, f == &jobreq_fields[JR_SECRET_ENV], name, kv + 1, &e) == 0, "%s: %s", s,
                        e.msg);
            free(name);
        } else {
            FUZZ_ASSERT(jobreq_set_text(back, f, eq ? eq + 1 : "true", NOW, &e) == 0, "%s: %s", s, e.msg);
        }
        free(flag);
    }
}

static void flags_round_trip(const job_req *r)
{
    json_t *flags = jobreq_to_flags(r);
    job_req back = {0};
    read_flags(flags, &back);
    json_t *want = jobreq_to_json(r, 0), *got = jobreq_to_json(&back, 0);
    json_object_del(want, "command");
    json_object_del(want, "args");
    for (int i = 0; i < JR_N; i++)
        if (jobreq_fields[i].kind == JK_BOOL && i != JR_CROSS_NUMA && json_is_false(json_object_get(want, jobreq_fields[i].key)))
            json_object_del(want, jobreq_fields[i].key);
    /* (any one of a single job is that job: its flag is --after=ID:STATE alone, as Slurm's
     * --dependency has no '?' list of one; core/depend.c decides both the same) */
    if (json_array_size(json_object_get(want, "after")) == 1)
        json_object_del(want, "after_any");
    char *w = json_dumps(want, JSON_SORT_KEYS), *g = json_dumps(got, JSON_SORT_KEYS);
    FUZZ_ASSERT(json_equal(want, got), "the request %s reads back from its flags as %s", w, g);
    free(w);
    free(g);
    json_decref(want);
    json_decref(got);
    json_decref(flags);
    jobreq_free(&back);
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
    /* (what rnx checks before it sends: cmd_job.c, jobreq_check_submitted) */
    if (jobreq_has(&r, JR_COMMAND) && jobreq_check_submitted(&r, &e) == 0) {
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
        flags_round_trip(&r);
    }
    jobreq_free(&r);
    return 0;
}
