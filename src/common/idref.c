/* The id/name/prefix resolver (idref.h). */
#include "idref.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int idref_start(idref *r, const char *kind, const char *name_flag, const char *ref, jerr *e)
{
    *r = (idref){.kind = kind, .name_flag = name_flag, .ref = ref ? ref : ""};
    r->len = strlen(r->ref);
    if (!r->len)
        return jerr_http(e, 404, "no %s '': give a %s's id, a unique prefix of it, or its name", kind, kind);
    r->hexish = r->len <= 36 && strspn(r->ref, "0123456789abcdef-") == r->len;
    r->numeric = r->len <= 19 && r->ref[0] != '0' && strspn(r->ref, "0123456789") == r->len;
    if (r->numeric)
        r->number = strtoull(r->ref, NULL, 10); /* 19 digits fit */
    return 0;
}

bool idref_number(idref *r, unsigned long long *number)
{
    r->numbers = true;
    *number = r->number;
    return r->numeric;
}

/* "1a2b3c4d (RUNNING)" onto a list of candidates. */
static size_t candidate(char *out, size_t n, size_t used, const char *id, const char *state)
{
    if (used >= n)
        return used;
    int w = snprintf(out + used, n - used, "%s%.8s (%s)", used ? ", " : "", id, state);
    return w < 0 ? used : used + (size_t)w;
}

void idref_want(idref *r, enum idref_want want) { r->want = want; }

void idref_number_given(idref *r) { r->number_given = r->numeric; }

void idref_offer_number(idref *r, const char *id, const char *state, bool visible, void *obj)
{
    if (!r->numeric || !visible)
        return;
    r->numbered = obj;
    candidate(r->numbered_as, sizeof r->numbered_as, 0, id, state);
}

bool idref_offer(idref *r, const char *id, const char *name, const char *state, bool ended, unsigned owner,
                 bool visible, void *obj)
{
    if (obj && obj == r->numbered)
        return false; /* counted as the number */
    bool full = r->len == 36 && !strcmp(id, r->ref);
    if (!visible) {
        r->others |= full;
        return false;
    }
    if (full) {
        r->by_name = obj; /* the answer, whatever else matched */
        r->nname = 1;
        return true;
    }
    bool named = name && !strcmp(name, r->ref);
    bool fits = r->want == IDREF_ANY || (r->want == IDREF_ENDED) == ended;
    if (named && !fits) {
        r->by_unfit = obj;
        if (r->nunfit++ == 0)
            r->unfit_owner = owner;
        if (r->nunfit <= 5)
            r->uu = candidate(r->unfit, sizeof r->unfit, r->uu, id, state);
    } else if (named) {
        r->by_name = obj;
        r->name_owner = owner;
        if (r->nname++ < 5)
            r->un = candidate(r->names, sizeof r->names, r->un, id, state);
    }
    if (r->hexish && !r->number_given && !strncmp(id, r->ref, r->len)) {
        r->by_prefix = obj;
        if (r->nprefix++ < 5)
            r->up = candidate(r->prefixes, sizeof r->prefixes, r->up, id, state);
        if (!named) {
            if (r->nprefix_only++ == 0)
                r->prefix_owner = owner;
            else
                r->prefix_owners_differ |= owner != r->prefix_owner;
        }
    }
    return false;
}

void *idref_result(idref *r, jerr *e)
{
    const char *k = r->kind, *ref = r->ref;
    if (r->numbered && r->nname) {
        /* a job numbered 42 and another named 42: neither is the one to act on unasked */
        jerr_http(e, 409, "'%s' is the number of %s %s and the name of %s %s; give the one's full id", ref, k,
                  r->numbered_as, k, r->names);
        e->code = EEXIST;
        return NULL;
    }
    if (r->numbered)
        return r->numbered;
    if (!r->nname && r->nunfit == 1) {
        /* the one of that name, which the action does not apply to: the action says why not */
        r->by_name = r->by_unfit;
        r->nname = 1;
        r->name_owner = r->unfit_owner;
        snprintf(r->names, sizeof r->names, "%s", r->unfit);
    }
    if (!r->nname && r->nunfit > 1) {
        jerr_http(e, 409, r->want == IDREF_LIVE ? "'%s' names %zu %ss, each of which has ended: %s%s; this acts "
                                                  "only on a %s that has not ended"
                                                : "'%s' names %zu %ss, none of which has ended: %s%s; this acts only "
                                                  "on an ended %s",
                  ref, r->nunfit, k, r->unfit, r->nunfit > 5 ? ", …" : "", k);
        return NULL; /* (a conflict of their states, as the action's own refusal of one: not ambiguous) */
    }
    if (r->nname == 1 && r->nprefix_only && (r->prefix_owners_differ || r->prefix_owner != r->name_owner)) {
        /* the name of one owner's, and the start of another owner's id */
        jerr_http(e, 409, "'%s' is the name of %s %s and the start of the id of %s; give the one's full id (or more "
                          "of it)", ref, k, r->names, r->prefixes);
        e->code = EEXIST;
        return NULL;
    }
    if (r->nname == 1)
        return r->by_name;
    if (r->nname > 1) {
        /* "names 2 jobs not ended (and 1 ended)" */
        char which[64] = "", others[32] = "";
        if (r->nunfit)
            snprintf(others, sizeof others, " (and %zu %s)", r->nunfit, r->want == IDREF_LIVE ? "ended" : "not");
        if (r->want != IDREF_ANY)
            snprintf(which, sizeof which, " %s%s", r->want == IDREF_LIVE ? "not ended" : "that ended", others);
        jerr_http(e, 409, "'%s' names %zu %ss%s: %s%s; give one's id (or a unique prefix of it)", ref, r->nname, k,
                  which, r->names, r->nname > 5 ? ", …" : "");
        e->code = EEXIST;
        return NULL;
    }
    if (r->nprefix == 1)
        return r->by_prefix;
    if (r->nprefix > 1) {
        jerr_http(e, 409, "'%s' matches %zu %ss: %s%s; type more of the id", ref, r->nprefix, k, r->prefixes,
                  r->nprefix > 5 ? ", …" : "");
        e->code = EEXIST;
        return NULL;
    }
    if (r->others)
        jerr_http(e, 403, "%s %s is another user's %s: you can see and manage only your own %ss (root, maintainers and admins see every %s)",
                  k, ref, k, k, k);
    else if (r->number_given) /* (no id prefix was tried) */
        jerr_http(e, 404, "no %s matches '%s' (by number or name; for an id that starts with these digits, give "
                          "more of it)", k, ref);
    else if (r->numeric && r->numbers)
        jerr_http(e, 404, "no %s matches '%s' (by number, id prefix or name)", k, ref);
    else if (r->hexish)
        jerr_http(e, 404, "no %s matches '%s' (by id, id prefix or name)", k, ref);
    else
        jerr_http(e, 404, "no %s named '%s' (a %s is given by its id, %sa unique prefix of it, or its %s)", k, ref, k,
                  r->numbers ? "its number, " : "", r->name_flag);
    return NULL;
}
