/* Objects by id, id prefix and name, for the resolver (idref.h): what a reference can name is
 * found among the objects it can match, never by looking at every object kept. Jobs and arrays
 * each have one (core/jobs.c, core/arrays.c): with 100,000 ended jobs kept, `rnx job status ID`
 * used to compare ID with every one of them on the loop thread.
 *
 * Ids are UUIDs (lowercase hex, core/job.h): objects sit in buckets by the leading bits of their
 * id, as many bits as keep a bucket to about one object, so a prefix of L hex digits looks at
 * one bucket, or at 2^(bits - 4L) of them when it is shorter than the buckets' key (those are
 * the objects it matches). Names sit in buckets by a hash of the name. The tables double as
 * they fill. Pure. */
#ifndef JOBLET_IDINDEX_H
#define JOBLET_IDINDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct idindex_entry {
    void *obj;
    const char *id;   /* the object's own strings: they live as long as it is in the index */
    const char *name; /* or NULL */
    uint64_t seq;     /* the order a scan of the table would offer it in */
    uint32_t owner;   /* whose name it is (idindex_add_owned), 0 in an index without owners */
} idindex_entry;

typedef struct idindex_bucket {
    idindex_entry *v;
    uint32_t n, cap;
} idindex_bucket;

typedef struct idindex {
    idindex_bucket *by_id, *by_name;
    unsigned bits; /* both tables have 1 << bits buckets (0: none yet) */
    size_t n;
} idindex;

void idindex_add(idindex *x, void *obj, const char *id, const char *name, uint64_t seq);
/* The same in an index of names by owner: idindex_named_owned finds the objects of one owner
 * and name among its own, however many other owners have of that name. An index is one or the
 * other: its names added all with idindex_add (owner 0), or all with an owner. */
void idindex_add_owned(idindex *x, void *obj, const char *id, const char *name, uint32_t owner, uint64_t seq);
/* Room for n objects in all, made at once (a start loading its jobs): the tables are not
 * doubled again and again, each doubling moving every entry, until n are in. */
void idindex_reserve(idindex *x, size_t n);
/* obj must be in the index, with the id and name (and owner) it was added with. */
void idindex_del(idindex *x, void *obj, const char *id, const char *name);
void idindex_del_owned(idindex *x, void *obj, const char *id, const char *name, uint32_t owner);
/* The object whose id is id, or NULL. */
void *idindex_get(const idindex *x, const char *id);
/* Every object whose name is ref or whose id starts with ref, once each, in seq order: the
 * ones a scan would offer to idref_offer and it could answer to. Freed by the caller; *n 0 and
 * NULL when none. */
idindex_entry *idindex_candidates(const idindex *x, const char *ref, size_t *n);
/* Every object of owner named name (not those whose id starts so; owner 0 in an index of
 * idindex_add), in no particular order (no sort: a name may have many). Freed by the caller;
 * NULL and *n 0 when none. */
idindex_entry *idindex_named_owned(const idindex *x, const char *name, uint32_t owner, size_t *n);
void idindex_free(idindex *x);

#endif
