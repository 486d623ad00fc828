/* Objects by id, id prefix and name (idindex.h). */
#include "idindex.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define IDINDEX_FIRST_BITS 6
#define IDINDEX_MAX_BITS 24

/* The leading hex digits of s, at most 8, as the top bits of a 32-bit number; their count in
 * *digits. */
static uint32_t lead(const char *s, unsigned *digits)
{
    uint32_t v = 0;
    unsigned d = 0;
    for (; d < 8; d++) {
        char c = s[d];
        unsigned x = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
        if (x == 16)
            break;
        v |= (uint32_t)x << (28 - 4 * d);
    }
    *digits = d;
    return v;
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static size_t id_key(const idindex *x, const char *id)
{
    unsigned d;
    return (size_t)(lead(id, &d) >> (32 - x->bits));
}

/* A name's bucket: of its owner's objects of that name, where the index has owners
 * (idindex_add_owned), so that another owner's many of the name are not in it. */
static size_t name_key(const idindex *x, const char *name, uint32_t owner)
{
    uint32_t h = name_hash(name) ^ owner * 0x9e3779b1u;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    return (size_t)(h >> (32 - x->bits));
}

static void push(idindex_bucket *b, const idindex_entry *e)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 2;
        b->v = xrealloc(b->v, b->cap * sizeof *b->v);
    }
    b->v[b->n++] = *e;
}

static void take(idindex_bucket *b, const void *obj)
{
    for (uint32_t i = 0; i < b->n; i++)
        if (b->v[i].obj == obj) {
            b->v[i] = b->v[--b->n];
            return;
        }
}

/* Every entry into tables of 1 << bits buckets. */
static void rebucket(idindex *x, unsigned bits)
{
    idindex_bucket *old_id = x->by_id, *old_name = x->by_name;
    size_t old_n = x->bits ? (size_t)1 << x->bits : 0;
    x->bits = bits;
    x->by_id = xcalloc((size_t)1 << bits, sizeof *x->by_id);
    x->by_name = xcalloc((size_t)1 << bits, sizeof *x->by_name);
    for (size_t k = 0; k < old_n; k++) {
        for (uint32_t i = 0; i < old_id[k].n; i++) {
            const idindex_entry *e = &old_id[k].v[i];
            push(&x->by_id[id_key(x, e->id)], e);
            if (e->name)
                push(&x->by_name[name_key(x, e->name, e->owner)], e);
        }
        free(old_id[k].v);
        free(old_name[k].v);
    }
    free(old_id);
    free(old_name);
}

void idindex_add(idindex *x, void *obj, const char *id, const char *name, uint64_t seq)
{
    idindex_add_owned(x, obj, id, name, 0, seq);
}

void idindex_add_owned(idindex *x, void *obj, const char *id, const char *name, uint32_t owner, uint64_t seq)
{
    if (!x->bits)
        rebucket(x, IDINDEX_FIRST_BITS);
    else if (x->n >= (size_t)2 << x->bits && x->bits < IDINDEX_MAX_BITS)
        rebucket(x, x->bits + 1);
    idindex_entry e = {obj, id, name, seq, owner};
    push(&x->by_id[id_key(x, id)], &e);
    if (name)
        push(&x->by_name[name_key(x, name, owner)], &e);
    x->n++;
}

void idindex_reserve(idindex *x, size_t n)
{
    unsigned bits = x->bits ? x->bits : IDINDEX_FIRST_BITS;
    while (n >= (size_t)2 << bits && bits < IDINDEX_MAX_BITS) /* idindex_add_owned's bound */
        bits++;
    if (bits != x->bits)
        rebucket(x, bits);
}

void idindex_del(idindex *x, void *obj, const char *id, const char *name)
{
    idindex_del_owned(x, obj, id, name, 0);
}

void idindex_del_owned(idindex *x, void *obj, const char *id, const char *name, uint32_t owner)
{
    if (!x->bits)
        return;
    idindex_bucket *b = &x->by_id[id_key(x, id)];
    uint32_t before = b->n;
    take(b, obj);
    if (name)
        take(&x->by_name[name_key(x, name, owner)], obj);
    x->n -= before - b->n;
}

void *idindex_get(const idindex *x, const char *id)
{
    if (!x->bits)
        return NULL;
    const idindex_bucket *b = &x->by_id[id_key(x, id)];
    for (uint32_t i = 0; i < b->n; i++)
        if (!strcmp(b->v[i].id, id))
            return b->v[i].obj;
    return NULL;
}

static int by_seq(const void *a, const void *b)
{
    uint64_t x = ((const idindex_entry *)a)->seq, y = ((const idindex_entry *)b)->seq;
    return x < y ? -1 : x > y;
}

typedef struct found {
    idindex_entry *v;
    size_t n, cap;
} found;

static void found_add(found *f, const idindex_entry *e)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->v = xrealloc(f->v, f->cap * sizeof *f->v);
    }
    f->v[f->n++] = *e;
}

/* The entries named ref, unsorted, into f. */
static void add_named(const idindex *x, const char *ref, uint32_t owner, found *f)
{
    const idindex_bucket *nb = &x->by_name[name_key(x, ref, owner)];
    for (uint32_t i = 0; i < nb->n; i++)
        if (nb->v[i].owner == owner && !strcmp(nb->v[i].name, ref))
            found_add(f, &nb->v[i]);
}

idindex_entry *idindex_named_owned(const idindex *x, const char *name, uint32_t owner, size_t *n)
{
    *n = 0;
    if (!x->bits || !name[0])
        return NULL;
    found f = {0};
    add_named(x, name, owner, &f);
    *n = f.n;
    return f.v;
}

idindex_entry *idindex_candidates(const idindex *x, const char *ref, size_t *n)
{
    *n = 0;
    if (!x->bits || !ref[0])
        return NULL;
    found f = {0};
    size_t len = strlen(ref);
    add_named(x, ref, 0, &f);
    /* an id's first 8 characters are hex digits: a reference with fewer before anything else
     * is the start of no id */
    unsigned digits;
    uint32_t p = lead(ref, &digits);
    if (digits && (digits == 8 || !ref[digits])) {
        unsigned pbits = 4 * digits;
        size_t first, last;
        if (pbits >= x->bits) {
            first = last = (size_t)(p >> (32 - x->bits));
        } else {
            first = (size_t)(p >> (32 - x->bits));
            last = first + ((size_t)1 << (x->bits - pbits)) - 1;
        }
        for (size_t k = first; k <= last; k++)
            for (uint32_t i = 0; i < x->by_id[k].n; i++) {
                const idindex_entry *e = &x->by_id[k].v[i];
                /* (named ref too: taken once) */
                if (!strncmp(e->id, ref, len) && !(e->name && !strcmp(e->name, ref)))
                    found_add(&f, e);
            }
    }
    if (f.n > 1)
        qsort(f.v, f.n, sizeof *f.v, by_seq);
    *n = f.n;
    return f.v;
}

void idindex_free(idindex *x)
{
    size_t nb = x->bits ? (size_t)1 << x->bits : 0;
    for (size_t k = 0; k < nb; k++) {
        free(x->by_id[k].v);
        free(x->by_name[k].v);
    }
    free(x->by_id);
    free(x->by_name);
    *x = (idindex){0};
}
