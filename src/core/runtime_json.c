/* Runtimes and builds as JSON (runtime_json.h). */
#include "runtime_json.h"

#include <stdlib.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/util.h"
#include "runtime_build.h"
#include "state.h"

static json_t *strings(char *const *items, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(items[i]));
    return a;
}

static json_t *str_or_null(const char *s) { return s && *s ? json_string(s) : json_null(); }

/* What a caller is shown of a runtime's users: the ids of those it may see, a count of the rest. */
typedef struct runtime_users {
    const caller *who;
    json_t *ids;
    json_int_t others;
} runtime_users;

static void seen_user(const char *id, uid_t owner, void *arg)
{
    runtime_users *u = arg;
    if (authz_may_on(u->who, AUTHZ_OTHERS_JOBS, owner))
        json_array_append_new(u->ids, json_string(id));
    else
        u->others++;
}

json_t *runtime_json(const runtime *rt, const caller *who)
{
    const manifest *m = &rt->m;
    json_t *env = json_object(), *jobs = json_array();
    for (size_t i = 0; i < m->nenv; i++)
        json_object_set_new(env, m->env[i].name, json_string(m->env[i].value));
    runtime_users seen = {who, jobs, 0};
    runtime_build_each_user(rt->name, seen_user, &seen);
    json_t *o = json_pack("{s:s,s:o,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:o,s:I,s:o,s:s,s:b,s:o,s:I}",
                          "name", rt->name, "version", str_or_null(m->version), "description", m->description ? m->description : "",
                          "provides", strings(m->provides, m->nprovides), "architecture", str_or_null(m->architecture),
                          "suite", str_or_null(m->suite), "mirror", str_or_null(m->mirror), "builder",
                          str_or_null(m->builder), "packages", strings(m->packages, m->npackages),
                          "installed_packages", (json_int_t)m->installed_packages, "env", env, "test",
                          str_or_null(m->test), "recipe", str_or_null(m->recipe), "recipe_sha256",
                          str_or_null(m->recipe_sha256), "rootfs_sha256", str_or_null(m->rootfs_sha256), "size_bytes",
                          (json_int_t)m->size_bytes, "built_at", str_or_null(m->built_at), "path", rt->dir, "default",
                          !strcmp(core.cfg.runtime_default, rt->name), "jobs", jobs, "jobs_of_others", seen.others);
    return o;
}

json_t *runtime_json_list(const caller *who)
{
    size_t n;
    char **names = runtimes_names(&n);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const runtime *rt;
        jerr e = {0};
        if (runtimes_find(names[i], &rt, &e) == 0)
            json_array_append_new(arr, runtime_json(rt, who));
        else
            json_array_append_new(arr, json_pack("{s:s,s:s}", "name", names[i], "error", e.msg));
        free(names[i]);
    }
    free(names);
    return json_pack("{s:o,s:s,s:o}", "runtimes", arr, "dir", runtimes_dir(), "default",
                     str_or_null(core.cfg.runtime_default));
}

json_t *runtime_json_build(const rt_build *b)
{
    static const char *const states[] = {"running", "succeeded", "failed"};
    char log[64];
    snprintf(log, sizeof log, "/v1/runtime-builds/%u/log", b->id);
    json_t *o = json_pack("{s:i,s:s,s:o,s:o,s:o,s:s,s:s,s:i,s:b,s:i,s:o,s:s}", "id", (int)b->id, "kind",
                          b->import ? "import" : "build", "name", str_or_null(b->name), "recipe_sha256",
                          str_or_null(b->recipe_sha256), "source", str_or_null(b->source), "state", states[b->state],
                          "phase", b->progress.phase, "percent", b->progress.percent, "from_cache", b->from_cache,
                          "uid", (int)b->uid, "error", str_or_null(b->error), "log", log);
    jx_set_time_or_null(o, "started_at", b->started_ms);
    jx_set_time_or_null(o, "ended_at", b->ended_ms);
    json_object_set_new(o, "elapsed_ms", json_integer((b->ended_ms ? b->ended_ms : now_ms()) - b->started_ms));
    return o;
}
