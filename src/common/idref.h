/* Which of many objects a reference names, as docker resolves containers: 1. the full id
 * (36 characters), 2. the name, when exactly one object has it (a name shadows an id prefix of
 * its owner's objects), 3. a unique prefix of the id. Before the name comes, for jobs and
 * arrays, the object's number (Slurm's job id: `rnx job cancel 42` as `scancel 42`): digits
 * alone, no leading zero; it shadows every id prefix (a number is not chosen, so no one can
 * aim it at another's id), a number once given is never read as an id prefix, and a name equal
 * to it of another object is ambiguous (409). A name that is also a prefix of another owner's
 * object's id is ambiguous (409): one who sees both (root) would otherwise act on a user's job
 * named after the short id of another's (the 8 characters rnx job list shows). One resolver for
 * jobs and workflows (core/jobs.c, core/workflow.c): the caller offers each object, with
 * whether the asker may see it and whether it ended, and asks for the answer.
 *
 * An action that applies only to an object not ended (kill, stop, cancel, suspend, attach, ...)
 * or only to an ended one (delete) says so (idref_want): a name then resolves among the objects
 * of that name the action applies to, as Slurm's scancel --name acts only on jobs pending or
 * running, and as docker kill NAME reaches the one container of that name (a name being unique
 * among docker's containers, and not among joblet's jobs, which are kept after they end). One
 * such: it. Several: ambiguous (409, those listed). None: the one of that name it does not apply
 * to, if only one (the action then says why not: "job ... is COMPLETED; only a running job can be
 * killed"), several: refused (409) with each one's id and state ("all ended"). Such names still
 * shadow an id prefix, as any name does. A full id, a number or an id prefix is not narrowed:
 * they are what the user copied from one row of a listing, and a prefix too short for the ended
 * job meant must not reach a running one. Pure. */
#ifndef JOBLET_IDREF_H
#define JOBLET_IDREF_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Which objects an action applies to, for a name (see above). */
enum idref_want { IDREF_ANY, IDREF_LIVE, IDREF_ENDED };

typedef struct idref {
    const char *kind;         /* "job", "workflow" */
    const char *name_flag;    /* how a name is given: "--name", "name" */
    const char *ref;
    size_t len;
    bool hexish;              /* could be an id prefix */
    bool numeric;             /* could be a number (idref_number) */
    bool numbers;             /* the caller asked for it: its objects have numbers */
    bool number_given;        /* a job or an array was given that number (whoever sees it now): ref is
                               * that number, never the start of an id (idref_number_given) */
    unsigned long long number;
    void *numbered;           /* the visible object with that number (idref_offer_number) */
    char numbered_as[80];
    void *by_name, *by_prefix;
    size_t nname, nprefix;
    char names[320], prefixes[320];
    size_t un, up;
    bool others;              /* the full id is another user's */
    enum idref_want want;     /* IDREF_ANY unless idref_want said */
    /* the visible objects named ref that the action does not apply to (want) */
    void *by_unfit;
    size_t nunfit, uu;
    unsigned unfit_owner;
    char unfit[320];
    /* owners: of the one named, and of the objects matched by prefix alone (the first, and
     * whether they differ) */
    unsigned name_owner, prefix_owner;
    bool prefix_owners_differ;
    size_t nprefix_only;
} idref;

/* -1 (404 in e) for an empty reference. */
int idref_start(idref *r, const char *kind, const char *name_flag, const char *ref, jerr *e);
/* After idref_start: a name resolves among the objects the action applies to (IDREF_LIVE: those
 * not ended; IDREF_ENDED: those ended). */
void idref_want(idref *r, enum idref_want want);
/* The number ref is, when it is one (1 to 19 digits, the first not 0): the caller looks up
 * the object with that number, if any, and offers it with idref_offer_number. */
bool idref_number(idref *r, unsigned long long *number);
/* The number ref is was given to an object, kept or deleted, seen by the asker or not: ref
 * matches no id prefix then (user A's `cancel 7` never takes A's own 7f3a... because job 7 is
 * B's or gone). */
void idref_number_given(idref *r);
/* The object whose number ref is, offered before that object's own idref_offer (which then
 * passes over it): the answer, unless another object is named ref. One the asker may not see
 * matches nothing, as a name of another's does. */
void idref_offer_number(idref *r, const char *id, const char *state, bool visible, void *obj);
/* One object, of owner (a uid): true when it is the one (its full id, and visible); then it is
 * the answer. state is shown among candidates of an ambiguous reference; ended: whether the
 * object ended (for idref_want). */
bool idref_offer(idref *r, const char *id, const char *name, const char *state, bool ended, unsigned owner,
                 bool visible, void *obj);
/* After every object was offered: the one named, or NULL with e set: 409 ambiguous (code
 * EEXIST), 403 another user's (only for a full id: a name or prefix of another user's object
 * matches nothing, so guessing tells nothing), 404 none. */
void *idref_result(idref *r, jerr *e);

#endif
