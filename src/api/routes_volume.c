/* /v1/volumes: create (POST), list (GET), show (GET /v1/volumes/NAME), remove (DELETE
 * /v1/volumes/NAME). The request body is typed and the answers are made here, at the API's
 * edge; core/volumes.c sees neither. A creation that formats an image parks the request
 * (park.h) until the volume is ready, so `rnx volume create` returns a usable volume. */
#include "routes_volume.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/util.h"
#include "../core/arrays.h"
#include "../core/volumes.h"
#include "body.h"
#include "park.h"
#include "reply.h"

/* A volume as the API shows it to who (docs/api.md): the jobs, and the arrays with tasks still to
 * make, that use it and who may see (the rest are counted in jobs_count, arrays_count). */
static json_t *volume_json(const volume *v, const caller *who)
{
    volume_usage u;
    volumes_usage(v, &u);
    const job *js[64];
    size_t n = volumes_jobs(v, js, ARRAY_LEN(js));
    json_t *jobs = json_array();
    for (size_t i = 0; i < n && i < ARRAY_LEN(js); i++)
        if (authz_may_on(who, AUTHZ_OTHERS_JOBS, js[i]->owner_uid))
            json_array_append_new(jobs, json_string(js[i]->id));
    const jarray *as[64];
    size_t na = volumes_arrays(v, false, as, ARRAY_LEN(as));
    json_t *arrays = json_array();
    for (size_t i = 0; i < na && i < ARRAY_LEN(as); i++)
        if (authz_may_on(who, AUTHZ_OTHERS_JOBS, as[i]->owner_uid))
            json_array_append_new(arrays, json_string(as[i]->id));
    char path[100];
    snprintf(path, sizeof path, "/volumes/%s", v->name);
    json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:s,s:o,s:I}", "name", v->name, "type",
                          volumes_type_name(v->type), "size_mb", (json_int_t)v->size_mb, "owner_uid",
                          (json_int_t)v->owner_uid, "owner_gid", (json_int_t)v->owner_gid, "state",
                          volumes_state_name(v->state), "lifetime", volumes_type_note(v->type), "mounted_at", path,
                          "jobs", jobs, "jobs_count", (json_int_t)n);
    json_object_set_new(o, "arrays", arrays);
    json_object_set_new(o, "arrays_count", json_integer((json_int_t)na));
    jx_set_time_or_null(o, "created_at", v->created_ms);
    json_object_set_new(o, "uploads", json_integer((json_int_t)v->uploads));
    if (v->state == VOLUME_UNAVAILABLE)
        json_object_set_new(o, "error", json_string(v->why));
    if (v->state == VOLUME_READY) {
        json_object_set_new(o, "capacity_bytes", json_integer((json_int_t)u.capacity_bytes));
        json_object_set_new(o, "used_bytes", json_integer((json_int_t)u.used_bytes));
        json_object_set_new(o, "available_bytes", json_integer((json_int_t)u.available_bytes));
    }
    if (v->type == VOLUME_FILESYSTEM) {
        json_object_set_new(o, "image_bytes", json_integer((json_int_t)u.image_bytes));
        jx_set_str_or_null(o, "device", u.device[0] ? u.device : NULL);
    }
    return o;
}

/* POST /v1/volumes {"name", "size_mb", "type"} */
static enum MHD_Result create(request *r)
{
    jerr e = {0};
    static const char *const keys[] = {"name", "size_mb", "type", NULL};
    json_t *body = body_json(r, BODY_SMALL, &e);
    if (!body || !json_is_object(body)) {
        if (body)
            jerr_field(&e, NULL, "the request body must be a JSON object {\"name\", \"size_mb\", \"type\"}");
        json_decref(body);
        return http_reply_error(r->conn, &e);
    }
    const char *name = NULL, *type = "filesystem";
    uint64_t size_mb = 0;
    volume_req rq = {0};
    int rc = -1;
    if (jx_only_keys(body, keys, "a volume", &e) < 0 || jx_str(body, "name", &name, &e) < 0 ||
        jx_str(body, "type", &type, &e) < 0)
        goto out;
    if (!name) {
        jerr_field(&e, "name", "name: a volume needs a name (letters, digits, '.', '_', '-')");
        goto out;
    }
    if (volumes_type_parse(type, &rq.type) < 0) {
        jerr_field(&e, "type", "type: '%.40s' is not a volume type; use filesystem (an ext4 image on disk, kept until "
                               "removed) or memory (a tmpfs, gone when its last job ends)", type);
        goto out;
    }
    json_t *size = json_object_get(body, "size_mb");
    if (!size || json_is_null(size)) {
        jerr_field(&e, "size_mb", "size_mb: a volume needs a size in MB, e.g. 1024 (rnx volume create --size=1GB)");
        goto out;
    }
    if (!json_is_integer(size) || json_integer_value(size) < 0) {
        /* the type's sizes, as for a number out of them: 0, -5, 1.5 and "64" alike */
        char *text = json_dumps(size, JSON_ENCODE_ANY);
        char given[80];
        snprintf(given, sizeof given, "'%.60s'", text ? text : "?");
        free(text);
        volumes_size_refused(rq.type, given, &e);
        goto out;
    }
    size_mb = (uint64_t)json_integer_value(size);
    rq.name = name;
    rq.size_mb = size_mb;
    uint64_t ticket = r->resumed ? 0 : park_ticket(r);
    if (!r->resumed && !ticket) {
        jerr_busy(&e, "too many requests are waiting for joblet already; try again in a moment");
        goto out;
    }
    rc = volumes_create(&rq, r->who.uid, r->who.gid, ticket ? park_wake_fn : NULL, (void *)(uintptr_t)ticket, &e);
    if (rc == VOLUMES_PENDING) {
        json_decref(body);
        park_wait(r);
        return MHD_YES;
    }
out:;
    const volume *v = rc >= 0 ? volumes_find(name) : NULL;
    json_t *o = v ? volume_json(v, &r->who) : NULL;
    bool made = rc == VOLUMES_CREATED || (rc == VOLUMES_EXISTED && r->resumed);
    json_decref(body);
    if (!o)
        return http_reply_error(r->conn, &e);
    json_object_set_new(o, "created", json_boolean(made));
    return http_reply_json(r->conn, made ? 201 : 200, o);
}

enum MHD_Result routes_volume(request *r, const char *name)
{
    jerr e = {0};
    bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST"), del = !strcmp(r->method, "DELETE");
    if (!name && post)
        return create(r);
    if (!name && get) {
        json_t *arr = json_array();
        for (size_t i = 0; i < volumes_count(); i++)
            if (volumes_allowed(volumes_at(i), &r->who))
                json_array_append_new(arr, volume_json(volumes_at(i), &r->who));
        return http_reply_json(r->conn, 200, json_pack("{s:o}", "volumes", arr));
    }
    if (name && (get || del)) {
        const volume *v = volumes_find(name);
        if (v && !volumes_allowed(v, &r->who) && get)
            jerr_http(&e, 403, "volume '%.80s' is another user's; only its owner, root and admins may see it", name);
        else if (!v && get)
            jerr_http(&e, 404, "no volume '%.80s' (rnx volume list shows yours)", name);
        else if (get)
            return http_reply_json(r->conn, 200, volume_json(v, &r->who));
        else if (volumes_remove(name, &r->who, &e) == 0)
            return http_reply_json(r->conn, 200, json_pack("{s:s}", "removed", name));
        return http_reply_error(r->conn, &e);
    }
    jerr_http(&e, 404, "no route %s %s; see docs/api.md", r->method, r->path);
    return http_reply_error(r->conn, &e);
}
