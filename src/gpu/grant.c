/* Grants as JSON (grant.h): the API's "gpus" list and the database column share one form. */
#include "grant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/util.h"

json_t *grant_list_to_json(const gpu_grants *gs)
{
    json_t *a = json_array();
    for (size_t i = 0; i < gs->n; i++) {
        const gpu_grant *g = &gs->g[i];
        json_t *o = json_pack("{s:i,s:s}", "index", g->index, "uuid", g->uuid);
        if (*g->parent_uuid)
            json_object_set_new(o, "parent_uuid", json_string(g->parent_uuid));
        json_object_set_new(o, "minor", json_integer(g->minor));
        json_object_set_new(o, "bus_id", json_string(g->bus_id));
        json_object_set_new(o, "name", json_string(g->name));
        json_object_set_new(o, "memory_mb", json_integer(g->memory_mb));
        json_object_set_new(o, "simulated", json_boolean(g->simulated));
        if (g->shared_mb >= 0)
            json_object_set_new(o, "shared_mb", json_integer(g->shared_mb));
        if (g->mig)
            json_object_set_new(o, "mig", json_pack("{s:s,s:i,s:i,s:i,s:i}", "profile", g->mig_profile, "gi", g->gi,
                                                    "ci", g->ci, "gi_cap_minor", g->gi_cap_minor, "ci_cap_minor",
                                                    g->ci_cap_minor));
        json_array_append_new(a, o);
    }
    return a;
}

static void copy_str(char *out, size_t len, json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(out, len, "%s", s ? s : "");
}

void grant_list_from_json(json_t *arr, gpu_grants *gs)
{
    json_t *o;
    size_t i;
    *gs = (gpu_grants){0};
    json_array_foreach(arr, i, o) {
        if (!json_is_object(o) || !json_is_string(json_object_get(o, "uuid")))
            continue;
        gpu_grant *g = grant_list_add(gs);
        g->index = (int)json_integer_value(json_object_get(o, "index"));
        copy_str(g->uuid, sizeof g->uuid, o, "uuid");
        copy_str(g->parent_uuid, sizeof g->parent_uuid, o, "parent_uuid");
        g->minor = (int)json_integer_value(json_object_get(o, "minor"));
        copy_str(g->bus_id, sizeof g->bus_id, o, "bus_id");
        copy_str(g->name, sizeof g->name, o, "name");
        g->memory_mb = json_integer_value(json_object_get(o, "memory_mb"));
        g->simulated = json_is_true(json_object_get(o, "simulated"));
        json_t *sh = json_object_get(o, "shared_mb");
        g->shared_mb = sh ? json_integer_value(sh) : -1;
        json_t *m = json_object_get(o, "mig");
        g->mig = json_is_object(m);
        if (g->mig) {
            copy_str(g->mig_profile, sizeof g->mig_profile, m, "profile");
            g->gi = (int)json_integer_value(json_object_get(m, "gi"));
            g->ci = (int)json_integer_value(json_object_get(m, "ci"));
            g->gi_cap_minor = (int)json_integer_value(json_object_get(m, "gi_cap_minor"));
            g->ci_cap_minor = (int)json_integer_value(json_object_get(m, "ci_cap_minor"));
        }
    }
}

gpu_grant *grant_list_add(gpu_grants *gs)
{
    gs->g = xrealloc(gs->g, (gs->n + 1) * sizeof *gs->g);
    gpu_grant *g = &gs->g[gs->n++];
    *g = (gpu_grant){.shared_mb = -1};
    return g;
}

void grant_list_free(gpu_grants *gs)
{
    free(gs->g);
    *gs = (gpu_grants){0};
}

json_t *gpu_fault_to_json(const gpu_fault *f)
{
    if (!f->set)
        return NULL;
    json_t *o = json_pack("{s:i,s:s}", "gpu", f->gpu, "uuid", f->uuid);
    json_object_set_new(o, "xid", f->xid ? json_integer(f->xid) : json_null());
    json_object_set_new(o, "meaning", *f->meaning ? json_string(f->meaning) : json_null());
    json_object_set_new(o, "action", json_string(f->action));
    json_object_set_new(o, "by_uid", f->by_uid >= 0 ? json_integer(f->by_uid) : json_null());
    jx_set_time_or_null(o, "time", f->ms);
    return o;
}

void gpu_fault_from_json(json_t *o, gpu_fault *f)
{
    *f = (gpu_fault){.by_uid = -1};
    if (!json_is_object(o) || !json_is_integer(json_object_get(o, "gpu")) ||
        !json_is_string(json_object_get(o, "action")))
        return;
    f->set = true;
    f->gpu = (int)json_integer_value(json_object_get(o, "gpu"));
    copy_str(f->uuid, sizeof f->uuid, o, "uuid");
    f->xid = (int)json_integer_value(json_object_get(o, "xid"));
    copy_str(f->meaning, sizeof f->meaning, o, "meaning");
    copy_str(f->action, sizeof f->action, o, "action");
    json_t *by = json_object_get(o, "by_uid");
    f->by_uid = json_is_integer(by) ? json_integer_value(by) : -1;
    const char *t = json_string_value(json_object_get(o, "time"));
    if (!t || parse_ms(t, &f->ms) < 0)
        f->ms = 0;
}
