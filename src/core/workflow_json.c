/* Workflows at the API's and the database's edge (workflow_json.h): a submitted body checked
 * and typed (names, conditions, dependency cycles), the stored document read back, and a
 * workflow as GET /v1/workflows shows it. The engine (workflow.c) sees no JSON but each
 * job's request, which it hands to the request schema. */
#include "workflow_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/netaddr.h"
#include "../common/redact.h"
#include "../common/util.h"
#include "array_json.h"
#include "arrays.h"
#include "state.h"
#include "volumes.h"


static const char *const body_keys[] = {"name", "description", "source", "yaml", "jobs", "volumes", "networks", NULL};
static const char *const volume_keys[] = {"name", "size_mb", "type", NULL};
#define WF_VOLUMES_MAX 32
static const char *const network_keys[] = {"name", "cidr", NULL};
#define WF_NETWORKS_MAX 16
static const char *const job_keys[] = {"name", "requires", "request", NULL};

static int known_keys(json_t *o, const char *const *keys, const char *where, jerr *e)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k))
            i++;
        if (!keys[i]) {
            char field[64];
            snprintf(field, sizeof field, "%s%s", where, k);
            return jerr_field(e, field, "%s: unknown field", field);
        }
    }
    return 0;
}

static bool good_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n <= 128 && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* Depth-first search for a cycle from job start; names it "a -> b -> a". Iterative: a chain
 * of 10,000 jobs went as deep on the daemon's stack, ~900 bytes a call, and ended it (SIGSEGV).
 * stack[k] is the path's k-th job and next[k] its next condition to follow. */
static int find_cycle(const wf_job *jobs, json_t *names, size_t start, uint8_t *mark, size_t *stack, size_t *next,
                      jerr *e)
{
    size_t depth = 0;
    stack[0] = start;
    next[0] = 0;
    mark[start] = 1;
    for (;;) {
        size_t at = stack[depth];
        if (next[depth] == jobs[at].nconds) {
            mark[at] = 2;
            if (depth == 0)
                return 0;
            depth--;
            continue;
        }
        size_t d = jobs[at].conds[next[depth]++].dep;
        if (mark[d] == 1) {
            char cyc[sizeof e->msg] = "";
            size_t k = depth;
            while (stack[k] != d)
                k--;
            for (size_t m = k; m <= depth; m++) {
                size_t l = strlen(cyc);
                snprintf(cyc + l, sizeof cyc - l, "%s -> ", json_string_value(json_array_get(names, stack[m])));
            }
            size_t l = strlen(cyc);
            snprintf(cyc + l, sizeof cyc - l, "%s", json_string_value(json_array_get(names, d)));
            char field[64];
            snprintf(field, sizeof field, "jobs[%zu].requires", at);
            return jerr_field(e, field, "%s: dependency cycle: %s", field, cyc);
        }
        if (!mark[d]) { /* each job is on the path once at most: depth < n */
            depth++;
            stack[depth] = d;
            next[depth] = 0;
            mark[d] = 1;
        }
    }
}

static const enum job_state end_states[] = {JS_COMPLETED, JS_FAILED, JS_STOPPED, JS_CANCELED};

/* jobs[i].requires: [{job, status}] into conditions. */
static int parse_conds(json_t *reqs, size_t i, json_t *index, wf_job *wj, jerr *e)
{
    char field[64];
    snprintf(field, sizeof field, "jobs[%zu].requires", i);
    if (!reqs || json_is_null(reqs))
        return 0;
    if (!json_is_array(reqs))
        return jerr_field(e, field, "%s: must be a list of {job, status}", field);
    wj->conds = xcalloc(json_array_size(reqs) + 1, sizeof *wj->conds);
    size_t k;
    json_t *c;
    json_array_foreach(reqs, k, c)
    {
        snprintf(field, sizeof field, "jobs[%zu].requires[%zu]", i, k);
        const char *dep = json_string_value(json_object_get(c, "job"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (!json_is_object(c) || !dep || !st || json_object_size(c) != 2)
            return jerr_field(e, field, "%s: must be {\"job\": NAME, \"status\": STATE}", field);
        /* by the names' index: a walk over every name for each item held the loop for
         * seconds with a request of 100,000 items in a workflow of 10,000 jobs */
        json_t *at = json_object_get(index, dep);
        if (!at)
            return jerr_field(e, field, "%s: no job '%.64s' in this workflow", field, dep);
        size_t d = (size_t)json_integer_value(at);
        if (d == i)
            return jerr_field(e, field, "%s: a job cannot wait for itself", field);
        enum job_state s;
        bool ok = job_state_parse(st, &s) == 0 && !strcmp(st, job_state_name(s));
        for (size_t t = 0; ok && t < ARRAY_LEN(end_states); t++)
            if (end_states[t] == s)
                goto found;
        return jerr_field(e, field, "%s: '%.32s' is not a state a job ends in; use COMPLETED, FAILED, STOPPED or "
                                    "CANCELED", field, st);
    found:
        wj->conds[wj->nconds++] = (wf_cond){d, s};
    }
    return 0;
}

/* names: the jobs' names, filled here (the user's body is not written to). */
static int check_jobs_named(json_t *body, json_t *names, json_t *index, wf_job *jobs, jerr *e)
{
    json_t *arr = json_object_get(body, "jobs");
    size_t i;
    json_t *jj;
    json_array_foreach(arr, i, jj)
    {
        char field[64];
        if (!json_is_object(jj)) {
            snprintf(field, sizeof field, "jobs[%zu]", i);
            return jerr_field(e, field, "%s: must be an object", field);
        }
        snprintf(field, sizeof field, "jobs[%zu].", i);
        if (known_keys(jj, job_keys, field, e) < 0)
            return -1;
        const char *name = json_string_value(json_object_get(jj, "name"));
        snprintf(field, sizeof field, "jobs[%zu].name", i);
        if (!good_name(name))
            return jerr_field(e, field, "%s: a job needs a name of letters, digits, '.', '_' and '-' (at most 128)",
                              field);
        if (json_object_get(index, name))
            return jerr_field(e, field, "%s: two jobs are named '%s'", field, name);
        json_object_set_new(index, name, json_integer((json_int_t)i));
        json_array_append_new(names, json_string(name));
    }
    json_array_foreach(arr, i, jj)
    {
        char field[64];
        if (parse_conds(json_object_get(jj, "requires"), i, index, &jobs[i], e) < 0)
            return -1;
        json_t *req = json_object_get(jj, "request");
        snprintf(field, sizeof field, "jobs[%zu].request", i);
        if (!json_is_object(req))
            return jerr_field(e, field, "%s: must be an object: the job's request, as POST /v1/jobs takes", field);
        json_t *rn = json_object_get(req, "name");
        if (rn && (!json_is_string(rn) || strcmp(json_string_value(rn), json_string_value(json_array_get(names, i)))))
        {
            snprintf(field, sizeof field, "jobs[%zu].request.name", i);
            return jerr_field(e, field, "%s: must be the job's name or absent", field);
        }
        json_object_set_new(req, "name", json_string(json_string_value(json_array_get(names, i))));
    }
    size_t n = json_array_size(arr);
    uint8_t *mark = xcalloc(n, 1);
    size_t *stack = xcalloc(n, sizeof *stack), *next = xcalloc(n, sizeof *next);
    int rc = 0;
    for (i = 0; i < n && rc == 0; i++)
        if (!mark[i])
            rc = find_cycle(jobs, names, i, mark, stack, next, e);
    free(mark);
    free(stack);
    free(next);
    return rc;
}

/* names: the jobs' names, filled here; found by name through an index (name -> job's place). */
static int check_body(json_t *body, json_t *names, wf_job *jobs, jerr *e)
{
    json_t *index = json_object();
    int rc = check_jobs_named(body, names, index, jobs, e);
    json_decref(index);
    return rc;
}


/* Shortest secret value looked for in the stored YAML: shorter ones would blot out ordinary
 * words (rnx sends the file with every secret_environment value already "***"). */
#define SECRET_MIN_SCRUB 4
/* The distinct secret values of one workflow, in bytes, when it carries its YAML: the scrub's
 * automaton costs ~50 bytes of memory per byte of them. */
#define SECRETS_MAX_BYTES (1u << 20)

/* The workflow's YAML as kept and shown: rnx replaces secret_environment values by "***"; in
 * case a client did not, every occurrence of any job's secret value in it is replaced here,
 * so no route ever returns one. One pass over the YAML for all the values together
 * (common/redact.c): a search per value and a rescan per match was quadratic (issue 25). */
static int redact_yaml(json_t *doc, json_t *jobs, jerr *e)
{
    const char *yaml = json_string_value(json_object_get(doc, "yaml"));
    if (!yaml)
        return 0;
    json_t *seen = json_object(); /* each distinct value once */
    size_t i, n = 0, bytes = 0;
    json_t *jj;
    json_array_foreach(jobs, i, jj) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(json_object_get(jj, "request"), "secret_env"), k, v) {
            const char *val = json_string_value(v);
            if (val && strlen(val) >= SECRET_MIN_SCRUB && !json_object_get(seen, val)) {
                json_object_set_new(seen, val, json_null());
                n++, bytes += strlen(val);
            }
        }
    }
    if (bytes > SECRETS_MAX_BYTES) {
        json_decref(seen);
        return jerr_field(e, "jobs", "jobs: the workflow's distinct secret_environment values total %zu bytes, more "
                                     "than the %u that a workflow sent with its YAML may carry; share one secret "
                                     "between jobs, or send the workflow without its yaml", bytes, SECRETS_MAX_BYTES);
    }
    const char **vals = xcalloc(n ? n : 1, sizeof *vals);
    const char *k;
    json_t *v;
    n = 0;
    json_object_foreach(seen, k, v)
        vals[n++] = k;
    char *text = xstrdup(yaml);
    if (redact_all(text, vals, n))
        json_object_set_new(doc, "yaml", json_string(text));
    free(text);
    free(vals);
    json_decref(seen);
    return 0;
}

/* e, a member's error ("name: must be a string"), said of the item of a list it is in (where:
 * "volumes[0]."), its field and its message both: -1. */
static int in_item(const char *where, jerr *e)
{
    char field[sizeof e->field], msg[sizeof e->msg];
    snprintf(field, sizeof field, "%s%s", where, e->field);
    snprintf(msg, sizeof msg, "%s%s", where, e->msg);
    snprintf(e->field, sizeof e->field, "%s", field);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    return -1;
}

/* volumes: [{name, size_mb, type}]: what the workflow creates when missing. */
static int parse_volumes(json_t *arr, wf_body *b, jerr *e)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > WF_VOLUMES_MAX)
        return jerr_field(e, "volumes", "volumes: must be a list of at most %d volumes to create, each {name, "
                                        "size_mb, type}", WF_VOLUMES_MAX);
    b->volumes = xcalloc(json_array_size(arr), sizeof *b->volumes);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        char where[64], field[80];
        snprintf(where, sizeof where, "volumes[%zu].", i);
        volume_req *rq = &b->volumes[i];
        const char *type = "filesystem";
        uint64_t mb = 0;
        snprintf(field, sizeof field, "volumes[%zu]", i);
        if (!json_is_object(v))
            return jerr_field(e, field, "%s: must be an object {name, size_mb, type}", field);
        if (known_keys(v, volume_keys, where, e) < 0) /* (its field is named whole: where's) */
            return -1;
        if (jx_str(v, "name", &rq->name, e) < 0 || jx_str(v, "type", &type, e) < 0 ||
            jx_u64(v, "size_mb", 1, UINT64_MAX >> 20, &mb, e) < 0)
            return in_item(where, e);
        snprintf(field, sizeof field, "%sname", where);
        if (!rq->name || !jobreq_volume_name_ok(rq->name, strlen(rq->name)))
            return jerr_field(e, field, "%s: must be a volume name (letters, digits, '.', '_', '-')", field);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(b->volumes[k].name, rq->name))
                return jerr_field(e, field, "%s: volume '%s' is listed twice", field, rq->name);
        snprintf(field, sizeof field, "%ssize_mb", where);
        if (!mb)
            return jerr_field(e, field, "%s: a volume to create needs a size in MB", field);
        rq->size_mb = mb;
        snprintf(field, sizeof field, "%stype", where);
        if (volumes_type_parse(type, &rq->type) < 0)
            return jerr_field(e, field, "%s: '%.40s' is not a volume type; use filesystem or memory", field, type);
        b->nvolumes = i + 1;
    }
    return 0;
}

/* networks: [{name, cidr}]: what the workflow creates when missing (its jobs' network:
 * {name, cidr}). Whether the name is free or the addresses are is the daemon's to say
 * (networks_precheck); here, that they read. */
static int parse_networks(json_t *arr, wf_body *b, jerr *e)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > WF_NETWORKS_MAX)
        return jerr_field(e, "networks", "networks: must be a list of at most %d networks to create, each {name, "
                                         "cidr}", WF_NETWORKS_MAX);
    b->networks = xcalloc(json_array_size(arr), sizeof *b->networks);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        char where[64], field[80];
        wf_network *n = &b->networks[i];
        snprintf(where, sizeof where, "networks[%zu].", i);
        snprintf(field, sizeof field, "networks[%zu]", i);
        if (!json_is_object(v))
            return jerr_field(e, field, "%s: must be an object {name, cidr}", field);
        if (known_keys(v, network_keys, where, e) < 0) /* (its field is named whole: where's) */
            return -1;
        if (jx_str(v, "name", &n->name, e) < 0 || jx_str(v, "cidr", &n->cidr, e) < 0)
            return in_item(where, e);
        snprintf(field, sizeof field, "%sname", where);
        if (!n->name || !netaddr_name_ok(n->name))
            return jerr_field(e, field, "%s: must be a network name: 1 to %d of a-z 0-9 _ . - starting with a letter "
                                        "or digit", field, NETADDR_NAME_MAX);
        if (!strcmp(n->name, "none") || !strcmp(n->name, "host") || !strcmp(n->name, "isolated") ||
            !strcmp(n->name, "bridge"))
            return jerr_field(e, field, "%s: '%s' is joblet's own; a workflow creates networks of other names", field,
                              n->name);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(b->networks[k].name, n->name))
                return jerr_field(e, field, "%s: network '%s' is listed twice", field, n->name);
        snprintf(field, sizeof field, "%scidr", where);
        netaddr_cidr nc;
        if (!n->cidr)
            return jerr_field(e, field, "%s: a network to create needs its addresses, e.g. 10.218.10.0/24", field);
        if (netaddr_named_cidr_parse(field, n->cidr, &nc, e) < 0)
            return -1;
        b->nnetworks = i + 1;
    }
    return 0;
}

int workflow_json_parse(json_t *body, wf_body *b, jerr *e)
{
    *b = (wf_body){0};
    if (!json_is_object(body))
        return jerr_field(e, "", "a workflow is a JSON object: {name, description, source, yaml, jobs}");
    if (known_keys(body, body_keys, "", e) < 0)
        return -1;
    const char *name = NULL, *desc = NULL, *source = NULL, *yaml = NULL;
    if (jx_str(body, "name", &name, e) < 0 || jx_str(body, "description", &desc, e) < 0 ||
        jx_str(body, "source", &source, e) < 0 || jx_str(body, "yaml", &yaml, e) < 0)
        return -1;
    if (!name || !*name || strlen(name) > 200)
        return jerr_field(e, "name", "name: a workflow needs a name of 1 to 200 characters");
    if (yaml && strlen(yaml) > (1u << 20))
        return jerr_field(e, "yaml", "yaml: the workflow file is larger than 1 MiB");
    /* kept with the workflow as long as it is, in memory and in the database */
    if (desc && strlen(desc) > (64u << 10))
        return jerr_field(e, "description", "description: longer than 64 KiB; put long text in the workflow file");
    if (source && strlen(source) > 4096)
        return jerr_field(e, "source", "source: the workflow file's path is longer than 4096 bytes");
    json_t *arr = json_object_get(body, "jobs");
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n == 0 || n > 10000)
        return jerr_field(e, "jobs", "jobs: a workflow needs a list of 1 to 10000 jobs");
    b->n = n;
    b->jobs = xcalloc(n, sizeof *b->jobs);
    b->requests = xcalloc(n, sizeof *b->requests);
    json_t *names = json_array();
    int rc = check_body(body, names, b->jobs, e);
    if (rc == 0)
        rc = parse_volumes(json_object_get(body, "volumes"), b, e);
    if (rc == 0)
        rc = parse_networks(json_object_get(body, "networks"), b, e);
    if (rc == 0) {
        b->doc = json_pack("{s:s,s:s?,s:s?,s:s?,s:[]}", "name", name, "description", desc, "source", source, "yaml",
                           yaml, "jobs");
        json_t *docjobs = json_object_get(b->doc, "jobs");
        for (size_t i = 0; i < n; i++) {
            json_t *src = json_array_get(arr, i);
            json_t *rq = json_object_get(src, "requires");
            json_array_append_new(docjobs, json_pack("{s:O,s:o}", "name", json_array_get(names, i), "requires",
                                                     rq ? json_incref(rq) : json_array()));
            b->jobs[i].name = xstrdup(json_string_value(json_array_get(names, i)));
            b->requests[i] = json_object_get(src, "request");
        }
        b->name = json_string_value(json_object_get(b->doc, "name"));
        rc = redact_yaml(b->doc, arr, e);
    }
    json_decref(names);
    if (rc < 0)
        workflow_body_free(b);
    return rc;
}

int workflow_json_load(workflow *wf, jerr *e)
{
    json_t *index = json_object(), *arr = json_object_get(wf->doc, "jobs"), *jj;
    size_t i;
    json_array_foreach(arr, i, jj) /* (as check_body's: name -> place; the stored names are unique) */
    {
        const char *name = json_string_value(json_object_get(jj, "name"));
        if (name)
            json_object_set_new(index, name, json_integer((json_int_t)i));
    }
    wf->n = json_array_size(arr);
    wf->jobs = xcalloc(wf->n + 1, sizeof *wf->jobs);
    int rc = 0;
    json_array_foreach(arr, i, jj)
    {
        const char *name = json_string_value(json_object_get(jj, "name"));
        wf->jobs[i].name = xstrdup(name ? name : "?");
        jerr ce = {0};
        if (parse_conds(json_object_get(jj, "requires"), i, index, &wf->jobs[i], &ce) < 0) {
            *e = ce;
            rc = -1;
        }
    }
    json_decref(index);
    return rc;
}

/* A workflow's array job (its request's `array`): the array's id as job_id, its tasks' state
 * together as status, and rnx job status ARRAY's "array" object (spec, ref, counts, ...); started
 * at its first task's start, ended at its last task's end once all ended. */
static void array_entry(json_t *jo, const jarray *a, json_t *counts)
{
    json_object_set_new(jo, "kind", json_string("array"));
    if (!a) {
        json_object_set_new(jo, "job_id", json_null());
        json_object_set_new(jo, "status", json_string("DELETED"));
        json_object_set_new(counts, "DELETED", json_integer(json_integer_value(json_object_get(counts, "DELETED")) + 1));
        return;
    }
    json_t *aj = array_json(a);
    const char *st = json_string_value(json_object_get(aj, "status"));
    json_object_set_new(jo, "job_id", json_string(a->id));
    json_object_set_new(jo, "status", json_string(st));
    json_object_set_new(counts, st, json_integer(json_integer_value(json_object_get(counts, st)) + 1));
    json_object_set(jo, "exit_code", json_object_get(aj, "exit_code"));
    json_object_set_new(jo, "end_reason", a->canceled_by == ARRAYS_CANCELED_DEPENDENCY   ? json_string("dependency")
                                          : a->canceled_by == ARRAYS_CANCELED_UNMAKEABLE ? json_string("start_failed")
                                                                                         : json_null());
    jx_set_str_or_null(jo, "error", a->canceled_by < -1 ? a->canceled_why : NULL);
    json_object_set(jo, "array", json_object_get(aj, "array"));
    json_object_set_new(jo, "gpus", json_array());
    /* its run as the array's own JSON has it: its first task's start, its last task's end */
    json_object_set(jo, "started_at", json_object_get(aj, "started_at"));
    json_object_set(jo, "ended_at", json_object_get(aj, "ended_at"));
    json_decref(aj);
}

json_t *workflow_json(const workflow *wf, bool detail)
{
    json_t *o = json_object(), *jobs = json_array(), *counts = json_object();
    json_object_set_new(o, "id", json_string(wf->id));
    json_object_set(o, "name", json_object_get(wf->doc, "name"));
    json_object_set_new(o, "description", json_incref(json_object_get(wf->doc, "description")) ?: json_null());
    json_object_set_new(o, "source", json_incref(json_object_get(wf->doc, "source")) ?: json_null());
    json_object_set_new(o, "state", json_string(wf_state_name(wf->state)));
    json_object_set_new(o, "owner_uid", json_integer(wf->owner_uid));
    jx_set_time_or_null(o, "created_at", wf->created_ms);
    jx_set_time_or_null(o, "started_at", wf->started_ms);
    jx_set_time_or_null(o, "ended_at", wf->ended_ms);
    jx_set_str_or_null(o, "reason", wf->reason);
    json_object_set_new(o, "canceled_by", wf->canceled_by >= 0 ? json_integer(wf->canceled_by) : json_null());
    for (size_t i = 0; i < wf->n; i++) {
        const job *j = wf->jobs[i].j;
        json_t *jo = json_object();
        json_object_set_new(jo, "name", json_string(wf->jobs[i].name));
        json_object_set(jo, "requires", json_object_get(json_array_get(json_object_get(wf->doc, "jobs"), i), "requires"));
        if (wf->jobs[i].array_seq) {
            array_entry(jo, workflow_array(wf, i), counts);
            json_array_append_new(jobs, jo);
            continue;
        }
        json_object_set_new(jo, "job_id", j ? json_string(j->id) : json_null());
        const char *st = j ? job_state_name(j->state) : "DELETED";
        json_object_set_new(jo, "status", json_string(st));
        json_object_set_new(counts, st, json_integer(json_integer_value(json_object_get(counts, st)) + 1));
        json_object_set_new(jo, "exit_code", j && j->has_exit ? json_integer(j->exit_code) : json_null());
        jx_set_str_or_null(jo, "end_reason", j ? j->end_reason : NULL);
        jx_set_str_or_null(jo, "error", j ? j->error : NULL);
        json_t *g = json_array();
        for (size_t k = 0; j && k < j->gpus.n; k++)
            json_array_append_new(g, json_integer(j->gpus.g[k].index));
        json_object_set_new(jo, "gpus", g);
        jx_set_time_or_null(jo, "started_at", j ? j->started_ms : 0);
        jx_set_time_or_null(jo, "ended_at", j ? j->ended_ms : 0);
        json_array_append_new(jobs, jo);
    }
    json_object_set_new(o, "jobs", jobs);
    json_object_set_new(o, "counts", counts);
    if (detail)
        json_object_set_new(o, "yaml", json_incref(json_object_get(wf->doc, "yaml")) ?: json_null());
    return o;
}

json_t *workflow_json_list(const caller *who)
{
    json_t *arr = json_array();
    if (!authz_may(who, AUTHZ_OTHERS_JOBS)) {
        /* its own alone: a walk over its own list, not over every user's workflows */
        size_t n;
        workflow *const *v = workflow_of_owner(who->uid, &n);
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, workflow_json(v[i], false));
        return json_pack("{s:o}", "workflows", arr);
    }
    for (size_t i = 0; i < core.nworkflows; i++)
        if (workflow_visible(core.workflows[i], who))
            json_array_append_new(arr, workflow_json(core.workflows[i], false));
    return json_pack("{s:o}", "workflows", arr);
}

bool workflow_json_streamed(const wf_body *b)
{
    for (size_t i = 0; i < b->n; i++) {
        json_t *ups = json_object_get(b->requests[i], "uploads"), *u;
        size_t k;
        json_array_foreach(ups, k, u) {
            json_t *size = json_object_get(u, "size");
            /* (a content_b64 of null is none, as a job's request reads it: common/jobreq.c) */
            json_t *b64 = json_object_get(u, "content_b64");
            if (json_is_integer(size) && json_integer_value(size) > 0 && (!b64 || json_is_null(b64)))
                return true;
        }
    }
    return false;
}

size_t workflow_json_uploads(const wf_body *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += json_array_size(json_object_get(b->requests[i], "uploads"));
    return n;
}
