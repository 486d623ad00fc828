/* A request's query string (query.h). */
#include "query.h"

#include <string.h>

const char *query_get(request *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

bool query_true(request *r, const char *key)
{
    const char *v = query_get(r, key);
    return v && (!strcmp(v, "1") || !strcmp(v, "true") || !*v);
}
