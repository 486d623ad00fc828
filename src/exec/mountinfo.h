/* Reading /proc/<pid>/mountinfo (proc(5)), one line per mount:
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   (1)(2) (3)  (4)   (5)     (6)       (7)   (8) (9)   (10)         (11)
 *
 *   (1) mount id  (2) parent id  (3) major:minor  (4) root  (5) mount point
 *   (6) per-mount options  (7) zero or more optional fields ("shared:N", "master:N",
 *   "propagate_from:N", "unbindable")  (8) "-"  (9) filesystem type  (10) source
 *   (11) per-superblock options
 *
 * Fields are separated by exactly one space; the kernel writes space, tab, newline and
 * backslash inside root, mount point, type and source as \ooo (\040 is a space). The source
 * may be empty ("- tmpfs  rw": two spaces), so lines are split on single spaces, never on
 * runs of them.
 *
 * Used by the cgroup layout detection (cgroup.c). No global state; parsing a line allocates
 * nothing, mountinfo_foreach holds the file in one buffer while it runs. */
#ifndef JOBLET_MOUNTINFO_H
#define JOBLET_MOUNTINFO_H

#include <stdbool.h>

#include "../common/err.h"

/* One parsed line. The strings point into the line given to mountinfo_parse_line, which
 * they cut up in place: they live as long as that buffer. */
typedef struct mountinfo_entry {
    unsigned long id, parent;   /* (1), (2) */
    unsigned major, minor;      /* (3) */
    char *root;                 /* (4), unescaped: the part of the filesystem shown, "/" = all */
    char *point;                /* (5), unescaped */
    char *opts;                 /* (6), as written ("rw,nosuid,relatime") */
    char *optional;             /* (7), as written, one space between fields; "" when none */
    char *fstype;               /* (9), unescaped ("cgroup2", "fuse.sshfs") */
    char *source;               /* (10), unescaped; "" when the kernel wrote none */
    char *super;                /* (11), as written: the rest of the line. Options are not
                                 * unescaped, so that a "\054" in a value never reads as a
                                 * ',' between two options. */
} mountinfo_entry;

/* Replaces each \ooo escape in s (three octal digits, \001 to \377) with its byte, in
 * place. Anything else — a lone backslash, fewer than three digits, a non-octal digit, \000
 * (a NUL would cut the string short), a value past \377 that would not fit in a byte — is
 * kept as written: the kernel writes no such thing, and keeping it loses nothing. */
void mountinfo_unescape(char *s);

/* Splits one line (without its newline; a trailing '\n' is tolerated) into m, cutting
 * `line` up in place. Returns 0, or -1 with errno EINVAL when the line is not a mountinfo
 * line: a field missing or empty (only the source may be empty), no " - " separator, ids
 * or device numbers that are not decimal numbers, two spaces where one belongs. m is
 * unspecified then. */
int mountinfo_parse_line(char *line, mountinfo_entry *m);


/* Called for each mount by mountinfo_foreach. Returns 0 to go on, > 0 to stop early
 * (mountinfo_foreach then returns that value), < 0 for an error it has put in e. */
typedef int (*mountinfo_fn)(mountinfo_entry *m, void *arg, jerr *e);

/* Reads the mountinfo file at path (e.g. "/proc/self/mountinfo") and calls fn on each line
 * in order. Lines that are not mountinfo lines, and empty ones, are skipped: a caller looking
 * for some mounts should not fail because of one it cannot read. Returns 0 when every line
 * was seen, fn's positive value when it stopped early, or -1 with e filled (file unreadable,
 * or fn's error). */
int mountinfo_foreach(const char *path, mountinfo_fn fn, void *arg, jerr *e);

#endif
