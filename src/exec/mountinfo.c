/* /proc/<pid>/mountinfo, one line at a time (format in mountinfo.h). */
#include "mountinfo.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

static bool is_oct(char c) { return c >= '0' && c <= '7'; }

void mountinfo_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        /* \400 and up would not fit in a byte (\400 would wrap to a NUL), and a NUL would
         * cut the string short: both stay as written */
        int v = r[0] == '\\' && is_oct(r[1]) && is_oct(r[2]) && is_oct(r[3])
                    ? ((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0')
                    : -1;
        if (v > 0 && v <= 0xff) {
            *w++ = (char)v;
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
}

/* Cuts the next field off *cur: returns its start and ends it at the next space, which may
 * follow at once (an empty field). *cur then points past that space, or is NULL when the
 * field ran to the end of the line. NULL when the line was already used up. */
static char *next_field(char **cur)
{
    char *f = *cur;
    if (!f)
        return NULL;
    char *sp = strchr(f, ' ');
    if (sp) {
        *sp = 0;
        *cur = sp + 1;
    } else {
        *cur = NULL;
    }
    return f;
}

/* Decimal digits only (no sign, no space, no "0x"), at least one, fitting an unsigned long.
 * s ends at end (exclusive). */
static int parse_ulong(const char *s, const char *end, unsigned long *out)
{
    unsigned long v = 0;
    if (s == end)
        return -1;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (ULONG_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int parse_num_field(const char *f, unsigned long *out)
{
    return f ? parse_ulong(f, f + strlen(f), out) : -1;
}

/* "major:minor" */
static int parse_dev(const char *f, unsigned *major, unsigned *minor)
{
    const char *colon = f ? strchr(f, ':') : NULL;
    unsigned long ma, mi;
    if (!colon || parse_ulong(f, colon, &ma) < 0 || parse_ulong(colon + 1, f + strlen(f), &mi) < 0 ||
        ma > UINT_MAX || mi > UINT_MAX)
        return -1;
    *major = (unsigned)ma;
    *minor = (unsigned)mi;
    return 0;
}

static bool nonempty(const char *f) { return f && *f; }

static int refuse(void)
{
    errno = EINVAL;
    return -1;
}

/* Fields (7) and (8): the optional fields up to the "-" separator. On success m->optional is
 * the optional fields with their spaces put back, "" when there are none. */
static int split_optional(char **cur, mountinfo_entry *m)
{
    char *start = *cur;
    for (;;) {
        char *f = next_field(cur);
        if (!f || !*f)
            return -1; /* no separator, or two spaces in a row where fields are tags */
        if (strcmp(f, "-"))
            continue;
        if (f == start) {
            *f = 0; /* no optional field: the separator itself becomes "" */
            m->optional = f;
            return 0;
        }
        /* next_field ended each optional field with a NUL; the one before "-" stays */
        for (char *p = start; p < f - 1; p++)
            if (!*p)
                *p = ' ';
        m->optional = start;
        return 0;
    }
}

int mountinfo_parse_line(char *line, mountinfo_entry *m)
{
    size_t len = strlen(line);
    if (len && line[len - 1] == '\n')
        line[len - 1] = 0;
    char *cur = line;
    if (parse_num_field(next_field(&cur), &m->id) < 0 || parse_num_field(next_field(&cur), &m->parent) < 0 ||
        parse_dev(next_field(&cur), &m->major, &m->minor) < 0)
        return refuse();
    m->root = next_field(&cur);
    m->point = next_field(&cur);
    m->opts = next_field(&cur);
    if (!nonempty(m->root) || !nonempty(m->point) || !nonempty(m->opts))
        return refuse();
    if (split_optional(&cur, m) < 0)
        return refuse();
    m->fstype = next_field(&cur);
    m->source = next_field(&cur); /* may be "", never missing */
    m->super = cur;               /* the rest: nothing after it is ours to split */
    /* the superblock options start with "rw" or "ro": a space there would be a second
     * empty field, which the kernel never writes */
    if (!nonempty(m->fstype) || !m->source || !nonempty(m->super) || m->super[0] == ' ')
        return refuse();
    mountinfo_unescape(m->root);
    mountinfo_unescape(m->point);
    mountinfo_unescape(m->fstype);
    mountinfo_unescape(m->source);
    return 0;
}

int mountinfo_foreach(const char *path, mountinfo_fn fn, void *arg, jerr *e)
{
    char *s = read_file(path, NULL);
    if (!s)
        return jerr_sys(e, "read %s", path);
    int rc = 0;
    for (char *line = s, *next; *line && rc == 0; line = next) {
        char *nl = strchr(line, '\n');
        next = nl ? nl + 1 : line + strlen(line);
        if (nl)
            *nl = 0;
        mountinfo_entry m;
        if (*line && mountinfo_parse_line(line, &m) == 0)
            rc = fn(&m, arg, e);
    }
    free(s);
    return rc < 0 ? -1 : rc;
}
