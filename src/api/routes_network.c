/* /v1/networks: create (POST {"name", "cidr"}), list (GET), show (GET /v1/networks/NAME),
 * remove (DELETE /v1/networks/NAME). Typed and answered here; core/networks.c keeps them. */
#include "routes_network.h"

#include <string.h>

#include "../common/jsonx.h"
#include "../common/util.h"
#include "../core/networks.h"
#include "../core/state.h"
#include "body.h"
#include "reply.h"

/* A network as the API shows it (docs/api.md): its jobs the caller may see, with addresses. */
static json_t *network_json(const network *n, const caller *who)
{
    char cidr[40], gw[20];
    netaddr_cidr_format(&n->cidr, cidr, sizeof cidr);
    json_t *jobs = json_array();
    for (uint32_t i = 0; i < n->njobs; i++) {
        const job *j = n->members[i];
        if (!authz_may_on(who, AUTHZ_OTHERS_JOBS, j->owner_uid))
            continue;
        char a[20];
        netaddr_format(j->net.addr, a, sizeof a);
        json_t *o = json_pack("{s:s,s:s,s:s}", "id", j->id, "address", a, "host_if", j->net.host_if);
        jx_set_str_or_null(o, "name", j->name);
        json_array_append_new(jobs, o);
    }
    json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:I,s:o}", "name", n->name, "cidr", cidr, "mode",
                          n->bridge[0] ? "bridge" : "isolated", "builtin", n->builtin, "jobs_count",
                          (json_int_t)n->njobs, "jobs", jobs);
    if (n->bridge[0]) {
        netaddr_format(n->gateway, gw, sizeof gw);
        json_object_set_new(o, "bridge", json_string(n->bridge));
        json_object_set_new(o, "gateway", json_string(gw));
    }
    json_object_set_new(o, "addresses_in_use", json_integer((json_int_t)n->njobs * (n->bridge[0] ? 1 : 2)));
    json_object_set_new(o, "addresses", json_integer((json_int_t)netaddr_cidr_size(&n->cidr) - (n->bridge[0] ? 3 : 0)));
    if (!n->builtin) {
        json_object_set_new(o, "owner_uid", json_integer((json_int_t)n->owner_uid));
        jx_set_time_or_null(o, "created_at", n->created_ms);
    }
    return o;
}

static enum MHD_Result create(request *r)
{
    jerr e = {0};
    static const char *const keys[] = {"name", "cidr", NULL};
    json_t *body = body_json(r, BODY_SMALL, &e);
    const char *name = NULL, *cidr = NULL;
    if (!body || !json_is_object(body)) {
        if (body)
            jerr_field(&e, NULL, "the request body must be a JSON object {\"name\", \"cidr\"}");
        goto fail;
    }
    if (jx_only_keys(body, keys, "a network", &e) < 0 || jx_str(body, "name", &name, &e) < 0 ||
        jx_str(body, "cidr", &cidr, &e) < 0)
        goto fail;
    if (!name) {
        jerr_field(&e, "name", "name: a network needs a name (a-z, 0-9, '_', '.', '-')");
        goto fail;
    }
    if (!cidr) {
        jerr_field(&e, "cidr", "cidr: a network needs its addresses, e.g. 10.218.10.0/24 (rnx network create %s "
                               "--cidr=10.218.10.0/24)", name);
        goto fail;
    }
    if (authz_check(&r->who, AUTHZ_CHANGE, "network create", &e) < 0 || networks_create(name, cidr, &r->who, &e) < 0)
        goto fail;
    size_t n;
    const network *const *all = networks_all(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(all[i]->name, name)) {
            json_t *o = network_json(all[i], &r->who);
            json_decref(body);
            return http_reply_json(r->conn, 201, o);
        }
    jerr_http(&e, 500, "network %s was made but is not found", name);
fail:
    json_decref(body);
    return http_reply_error(r->conn, &e);
}

enum MHD_Result routes_network(request *r, const char *name)
{
    jerr e = {0};
    bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST"), del = !strcmp(r->method, "DELETE");
    if (!name && post)
        return create(r);
    size_t n;
    const network *const *all = networks_all(&n);
    if (!name && get) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            if (networks_visible(all[i], &r->who))
                json_array_append_new(arr, network_json(all[i], &r->who));
        const char *why;
        bool ok = networks_available(&why);
        json_t *o = json_pack("{s:o,s:b}", "networks", arr, "available", ok);
        if (!ok)
            json_object_set_new(o, "why", json_string(why));
        return http_reply_json(r->conn, 200, o);
    }
    if (name && get) {
        for (size_t i = 0; i < n; i++)
            if (!strcmp(all[i]->name, name) && networks_visible(all[i], &r->who))
                return http_reply_json(r->conn, 200, network_json(all[i], &r->who));
        jerr_http(&e, 404, "no network '%.80s' (rnx network list)", name);
        return http_reply_error(r->conn, &e);
    }
    if (name && del) {
        if (authz_check(&r->who, AUTHZ_CHANGE, "network remove", &e) == 0 && networks_remove(name, &r->who, &e) == 0)
            return http_reply_json(r->conn, 200, json_pack("{s:s}", "removed", name));
        return http_reply_error(r->conn, &e);
    }
    jerr_http(&e, 404, "no route %s %s; see docs/api.md", r->method, r->path);
    return http_reply_error(r->conn, &e);
}
