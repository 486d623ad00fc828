/* Objects marked since the list was last taken (marklist.h). */
#include "marklist.h"

#include <stdlib.h>

#include "util.h"

static bool *flag_of(const marklist *l, void *obj) { return (bool *)((char *)obj + l->flag_off); }

void marklist_add(marklist *l, void *obj)
{
    bool *listed = flag_of(l, obj);
    if (*listed)
        return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = obj;
    *listed = true;
}

void marklist_remove(marklist *l, void *obj)
{
    bool *listed = flag_of(l, obj);
    for (size_t i = 0; *listed && i < l->n; i++)
        if (l->v[i] == obj) {
            l->v[i] = l->v[--l->n];
            *listed = false;
        }
}

void marklist_keep(marklist *l, bool (*keep)(const void *obj))
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++)
        if (keep(l->v[i]))
            l->v[k++] = l->v[i];
    l->n = k;
}

void **marklist_take(marklist *l, size_t *n)
{
    void **v = l->v;
    *n = l->n;
    for (size_t i = 0; i < l->n; i++)
        *flag_of(l, v[i]) = false;
    l->v = NULL;
    l->n = l->cap = 0;
    return v;
}

void marklist_free(marklist *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}
