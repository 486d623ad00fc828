/* rnx node: named joblet nodes, reached over TLS with a client certificate (or a local
 * socket), kept in nodes.yml (nodes.h); and which one a command talks to. */
#ifndef JOBLET_CMD_NODE_H
#define JOBLET_CMD_NODE_H

#include <stdbool.h>

#include "cli.h"

/* rnx node add|list|use|show|remove. */
int cmd_node(rnx_ctx *ctx, int argc, char **argv);

/* Sets ctx->target, in this order: --node NAME (with --socket: a usage error), --socket
 * PATH, $RNX_NODE, $JOBLET_SOCKET, nodes.yml's current, the default socket. The node "local"
 * is the local socket ($JOBLET_SOCKET, else the default). RNX_OK, or after saying why (nothing
 * when quiet) RNX_USAGE for a bad name or path given, RNX_FAIL for a nodes.yml that cannot be
 * used (unreadable, open to others, not valid). nodes.yml is read only when a node is named or
 * nothing else decides. The target's strings live as long as the process. */
int cmd_node_target(rnx_ctx *ctx, bool quiet);

/* Calls fn with each node's name and address ("local" included), for completion; nothing when
 * nodes.yml cannot be read. */
void cmd_node_each(void (*fn)(const char *name, const char *desc, void *ud), void *ud);

#endif
