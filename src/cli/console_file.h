/* rnx console's link file (console_file.c; docs/console.md, "Who may use the port", "The link's file"): a page, readable by
 * its user only, that sends a browser on to the console's tokened URL. Opened as a file:// path,
 * the token never goes on a command line (`chromium URL` would put it in /proc/PID/cmdline,
 * which every local user can read and redeem first), as Jupyter's jpserver-PID-open.html. */
#ifndef JOBLET_CONSOLE_FILE_H
#define JOBLET_CONSOLE_FILE_H

#include <limits.h>
#include <stddef.h>

typedef struct console_file {
    int dirfd;                 /* the private directory, held open: -1 none */
    char name[64];             /* the file's name in it: joblet-console-PID-RANDOM.html */
    char path[PATH_MAX];       /* its absolute path, as printed */
} console_file;

/* Writes the file that sends a browser to url, in $XDG_RUNTIME_DIR when it is an absolute
 * directory owned by this user and not writable by group or others, else in
 * $HOME/.local/share/joblet (made 0700; not in a HOME owned by another uid than this user's or
 * root's: root's under sudo -E). The file is new (O_CREAT|O_EXCL|O_NOFOLLOW), mode
 * 0600. Removes files that consoles which are gone left there. 0, or -1 with why (a clause:
 * "HOME is not set") and f->dirfd -1. */
int console_file_make(console_file *f, const char *url, char *why, size_t whylen);

/* Removes f's file (once; nothing where there is none). */
void console_file_remove(console_file *f);

/* "file://" and path, its bytes other than A-Z a-z 0-9 - . _ ~ / percent-encoded: the number of
 * bytes written (out is NUL-terminated), 0 where cap is too small. */
size_t console_file_uri(const char *path, char *out, size_t cap);

/* s with & < > " ' as HTML character references: the length written, 0 where cap is too small. */
size_t console_file_html(const char *s, char *out, size_t cap);

#endif
