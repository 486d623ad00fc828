/* rnx console's link file (console_file.c; docs/console.md, "Who may use the port", "The link's file"): a page, readable by
 * its user only, that sends a browser on to the console's tokened URL. Opened as a file:// path,
 * the token never goes on a command line (`chromium URL` would put it in /proc/PID/cmdline,
 * which every local user can read and redeem first), as Jupyter's jpserver-PID-open.html. */
#ifndef JOBLET_CONSOLE_FILE_H
#define JOBLET_CONSOLE_FILE_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

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

/* rnx console --open: starts the user's browser on f's file (never on the link: its arguments
 * are every local user's to read), as $BROWSER says (Python's webbrowser module's reading: its
 * first ':'-separated entry, "%s" replaced by the path or the path added last), else xdg-open;
 * stdin /dev/null, its own process group, mask as its signal mask. Its pid (the caller reaps
 * it), or -1 with why. */
pid_t console_file_open(const console_file *f, const char *browser, const sigset_t *mask, char *why, size_t whylen);

/* That command line, in argv (max entries, NULL-terminated) over buf (cap bytes): 0, or -1 with why. */
int console_file_browser_argv(const char *browser, const char *path, char **argv, size_t max, char *buf, size_t cap,
                              char *why, size_t whylen);

/* s with & < > " ' as HTML character references: the length written, 0 where cap is too small. */
size_t console_file_html(const char *s, char *out, size_t cap);

#endif
