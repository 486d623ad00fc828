/* Shared by rnx.c and the command files (cmd_*.c): the invocation context, exit codes and
 * flag parsing. */
#ifndef JOBLET_CLI_H
#define JOBLET_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"

/* Exit codes: 1 for anything the server or the system refused, 2 for a bad command line. */
#define RNX_OK    0
#define RNX_FAIL  1
#define RNX_USAGE 2

#define RNX_DEFAULT_SOCKET "/run/joblet/joblet.sock"

typedef struct rnx_ctx {
    client_target target;     /* where requests go: the daemon's unix socket or a node (set by
                                 cmd_node_target from the flags below, the environment and nodes.yml) */
    const char *socket_flag;  /* --socket PATH, NULL when not given */
    const char *node_flag;    /* --node NAME, NULL when not given */
    bool json;                /* print the API's objects instead of text */
} rnx_ctx;

/* getopt_long over one command's flags, which may come before, between and after its
 * operands (GNU permutation, "--" ends them), unless shortopts starts with '+': then the
 * flags end at the first operand (a command group's word, job run's COMMAND). Call with
 * optind = 0 first. Returns the option's val, -1 when the flags end (optind then indexes the
 * first operand), or RNX_OPT_ERR after printing a usage error that names the flag and the
 * help to read, or the flag that was probably meant. `cmd` is the command as typed, e.g.
 * "rnx job run". Unique abbreviations of long flags are refused. */
#define RNX_OPT_ERR (-2)
int rnx_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char *cmd);

/* Prints "rnx: <message>" on stderr and returns RNX_USAGE / RNX_FAIL, so callers can
 * `return rnx_usage(...)`. */
/* "unknown command 'stauts' for 'rnx job'; did you mean 'status'? ..." (RNX_USAGE). */
/* -e/-s's argument K=V, or K alone: K's value in rnx's environment (docker run -e K); a usage
 * error (RNX_USAGE, said) naming flag otherwise. value points into arg or the environment. */
int rnx_env_pair(const char *flag, const char *arg, char *name, size_t namelen, const char **value);
int rnx_unknown_command(const char *word, const char *group, const char *const *cmds, size_t n);

int rnx_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int rnx_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --interval S (seconds, "0.5", "500ms") and --count N of the sampling commands (rnx job
 * metrics, rnx monitor watch); RNX_USAGE after printing the error. */
int rnx_interval(const char *flag, const char *s, double *secs);
int rnx_count(const char *flag, const char *s, uint64_t *n);

#endif
