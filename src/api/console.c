/* The web console's files (console.h), served from the table built into joblet. */
#include "console.h"

#include <string.h>

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
    struct MHD_Response *resp =
        a ? MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT)
          : MHD_create_response_from_buffer(sizeof missing - 1, (void *)missing, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(resp, "Content-Type", a ? a->ctype : "text/plain; charset=utf-8");
    MHD_add_response_header(resp, "Content-Security-Policy", CONSOLE_CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    *rc = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    counters_request(r->method, status);
    return true;
}
