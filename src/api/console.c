/* The web console's files (console.h), served from the table built into joblet: gzip-compressed
 * where the request's Accept-Encoding takes it (compressed at build time, scripts/embed_assets.py),
 * with an entity tag per representation so that a browser revalidates with a 304. */
#include "console.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/counters.h"
#include "console_assets.h"

/* The page loads nothing from elsewhere: scripts, styles and connections to joblet only. */
#define CONSOLE_CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " \
                    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const console_asset *find(const char *name)
{
    for (const console_asset *a = console_assets; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

/* Whether a q value (RFC 9110 §12.4.2: "0", "0.5", "1.000") is above zero. */
static bool q_above_zero(const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] >= '1' && v[i] <= '9')
            return true;
    return false;
}

/* Whether Accept-Encoding takes gzip: "gzip" (or "x-gzip") with a q above 0, or "*" with a q
 * above 0 where gzip is not named (RFC 9110 §12.5.3). Absent: identity only. */
static bool takes_gzip(const char *ae)
{
    int gz = -1, star = -1; /* -1 not named, else whether its q is above 0 */
    for (const char *p = ae; p && *p;) {
        size_t n = strcspn(p, ",");
        const char *end = p + n;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        size_t tok = strcspn(p, ",; \t");
        if (p + tok > end)
            tok = (size_t)(end - p);
        bool ok = true; /* parameters: only q counts */
        for (const char *q = p + tok; q < end;) {
            q += strspn(q, "; \t");
            size_t plen = strcspn(q, ";");
            if (q + plen > end)
                plen = (size_t)(end - q);
            if (plen >= 2 && (*q == 'q' || *q == 'Q') && q[1] == '=') {
                ok = q_above_zero(q + 2, plen - 2);
                break;
            }
            q += plen;
        }
        if ((tok == 4 && !strncasecmp(p, "gzip", 4)) || (tok == 6 && !strncasecmp(p, "x-gzip", 6)))
            gz = ok && gz != 0;
        else if (tok == 1 && *p == '*')
            star = ok;
        p = *end ? end + 1 : end;
    }
    return gz >= 0 ? gz == 1 : star == 1;
}

/* Whether If-None-Match names tag (with its quotes) or is "*". Weak comparison: W/ is ignored. */
static bool tag_matches(const char *inm, const char *tag)
{
    if (!inm)
        return false;
    if (strchr(inm, '*'))
        return true;
    return strstr(inm, tag) != NULL;
}

bool console_route(request *r, enum MHD_Result *rc)
{
    const char *p = r->path, *name;
    if (!strcmp(p, "/") || !strcmp(p, "/index.html"))
        name = "index.html";
    else if (!strncmp(p, "/console/", 9) && p[9])
        name = p + 9;
    else
        return false;
    bool get = !strcmp(r->method, "GET"), head = !strcmp(r->method, "HEAD");
    const console_asset *a = get || head ? find(name) : NULL;
    static const char missing[] = "no such file of the console\n";
    unsigned status = a ? 200 : get || head ? 404 : 405;
    bool gz = false;
    char tag[48] = "";
    struct MHD_Response *resp;
    if (a) {
        gz = takes_gzip(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
        snprintf(tag, sizeof tag, "\"%s%s\"", a->tag, gz ? "-gz" : "");
        if (tag_matches(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH), tag))
            status = 304;
    }
    if (status == 304)
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    else if (a)
        resp = MHD_create_response_from_buffer(gz ? a->gz_len : a->len, (void *)(gz ? a->gz : a->data),
                                               MHD_RESPMEM_PERSISTENT);
    else
        resp = MHD_create_response_from_buffer(sizeof missing - 1, (void *)missing, MHD_RESPMEM_PERSISTENT);
    if (status != 304)
        MHD_add_response_header(resp, "Content-Type", a ? a->ctype : "text/plain; charset=utf-8");
    if (a) {
        if (gz && status == 200)
            MHD_add_response_header(resp, "Content-Encoding", "gzip");
        /* the answer depends on Accept-Encoding: a cache keeps one per value */
        MHD_add_response_header(resp, "Vary", "Accept-Encoding");
        MHD_add_response_header(resp, "ETag", tag);
    }
    MHD_add_response_header(resp, "Content-Security-Policy", CONSOLE_CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    /* the files' names do not change with a new joblet: ask each time, a 304 when unchanged */
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    *rc = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    return true;
}
