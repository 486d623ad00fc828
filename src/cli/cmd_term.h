/* rnx's side of a job's terminal (docs/api.md, "Interactive streams"; docs/cli.md): attaches to a
 * job run with -t or -i and relays until the job ends. With a terminal (-t) and keys (-i) on a
 * local terminal, that terminal is put in raw mode (restored on every way out: the job's end, an
 * error, a detach, SIGTERM, SIGHUP), its size is sent at the start and at every SIGWINCH, and
 * the detach keys leave the job running. Without -t, rnx's stdin goes to the job (its end closes
 * the job's stdin) and the job's stdout and stderr stay apart. */
#ifndef JOBLET_CMD_TERM_H
#define JOBLET_CMD_TERM_H

#include <stdbool.h>

#include "client.h"
#include "term_keys.h"

typedef struct term_opts {
    bool tty;                 /* the job has a terminal */
    bool stdin_open;          /* rnx's stdin goes to the job */
    term_keys keys;           /* detach keys (term_keys.h) */
    bool watch;               /* watch only: joblet is told so (?stdin=0), nothing is sent */
    const char *exec_body;    /* NULL: attach to the job's terminal; else the JSON of an exec
                               * (POST /v1/jobs/{id}/exec): a new process, whose end is rnx's */
} term_opts;

/* Attaches to job id's terminal: the job's exit code when it ends, 0 after a detach, RNX_FAIL
 * after saying why when the connection could not be made or broke. */
int cmd_term_attach(rnx_client *c, const char *id, const term_opts *o);
/* With o->exec_body: the same stream for a new process in the job (rnx job exec); no detach
 * keys (the process ends when rnx goes), its exit code is rnx's. */

#endif
