/* A request's query string (query.h). */
#include "query.h"

#include <string.h>

const char *query_get(request *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

bool query_has(request *r, const char *key)
{
    /* (libmicrohttpd gives a key without "=" a NULL value, as it gives a key that is absent) */
    return MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, key, strlen(key), NULL, NULL) ==
           MHD_YES;
}

bool query_true(request *r, const char *key)
{
    const char *v = query_get(r, key);
    if (!v)
        return query_has(r, key);
    return !strcmp(v, "1") || !strcmp(v, "true") || !*v;
}
