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

typedef struct unknown_seek {
    const char *const *known;
    const char *found;
} unknown_seek;

static enum MHD_Result unknown_key(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    (void)value;
    unknown_seek *s = cls;
    for (const char *const *k = s->known; *k; k++)
        if (!strcmp(*k, key))
            return MHD_YES;
    s->found = key;
    return MHD_NO;
}

const char *query_unknown(request *r, const char *const *known)
{
    unknown_seek s = {known, NULL};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, unknown_key, &s);
    return s.found;
}
