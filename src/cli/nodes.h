/* rnx's named nodes as text (docs/cli.md, "Remote nodes"): the node file `joblet cert client`
 * writes, and nodes.yml, where rnx keeps them. Pure: text in, checked structures out, and
 * back; reading and writing the files is cmd_node.c's. Tested in tests/unit/test_nodes.c.
 *
 * A node file (NAME.rnx.yml), one node:
 *   address: HOST:PORT      a DNS name, an IPv4 address or [an IPv6 address], and the port
 *   user: alice             who the certificate says rnx is
 *   role: developer         its role: reader, developer, operator, maintainer, admin
 *   ca: |                   PEM: the node's CA, the only one rnx trusts for it
 *   cert: |                 PEM: rnx's client certificate
 *   key: |                  PEM: its private key (not encrypted)
 *   persist: 10m            optional: how long rnx's keeper of connections to the node stays
 *                           after the last command (conn_agent.h); 0 or off: none; default 10m
 *
 * nodes.yml:
 *   current: gpu-1          the default node (absent: the local socket)
 *   nodes:
 *     gpu-1: {the six keys of a node file}
 *     dev: {socket: /run/joblet/joblet.sock}     a node that is a local socket */
#ifndef JOBLET_NODES_H
#define JOBLET_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/err.h"

#define NODES_NAME_MAX 64
#define NODES_PEM_MAX (64u << 10)   /* one PEM field */
#define NODES_FILE_MAX (4u << 20)   /* nodes.yml, a node file */
/* The name that means the local socket (rnx node use local, rnx --node local). */
#define NODES_LOCAL "local"

typedef struct nodes_entry {
    char *name;
    char *socket;          /* a local socket node; the fields below are then NULL */
    char *address;         /* "HOST:PORT" as written */
    char *host, *port;     /* of address: the host without brackets, the port's digits */
    char *user, *role;
    char *ca, *cert, *key; /* PEM, each ending with one newline */
    bool has_persist;      /* the entry says persist: */
    unsigned persist_s;    /* seconds (0: no keeper) */
} nodes_entry;

/* The longest persist (a week). */
#define NODES_PERSIST_MAX (7u * 86400)

/* persist's text (field names it in errors): seconds or a duration ("10m"), 0 or off for none.
 * -1 with e saying what is accepted. */
int nodes_persist_parse(const char *field, const char *text, unsigned *seconds, jerr *e);

typedef struct nodes_conf {
    char *current;         /* the default node's name, NULL for none (it may name no entry:
                              the caller says so when it is used) */
    nodes_entry *v;
    size_t n;
} nodes_conf;

/* A node's name: 1 to 64 of A-Z a-z 0-9 . _ -, not "local". -1 with e (field "name"). */
int nodes_name_check(const char *name, jerr *e);

/* "HOST:PORT" into its host (brackets of an IPv6 address removed) and port, both allocated.
 * HOST is a DNS name (labels of letters, digits and '-'), an IPv4 address or an IPv6 address
 * in brackets (no zone); PORT 1 to 65535. -1 with e (field "address") saying what is
 * accepted. */
int nodes_address_parse(const char *address, char **host, char **port, jerr *e);

/* A node file's text into out (its name left NULL). Every key checked; unknown keys refused.
 * -1 with e: e->field the key at fault, e->msg "KEY: what is wrong; what is accepted" (or
 * "line L, column C: ..." when the text is not YAML). */
int nodes_entry_parse(const char *text, size_t len, nodes_entry *out, jerr *e);

/* nodes.yml's text (empty: no nodes) into out. Errors as nodes_entry_parse, the field
 * written "nodes.NAME.KEY". */
int nodes_conf_parse(const char *text, size_t len, nodes_conf *out, jerr *e);

/* nodes.yml's text for conf (allocated). */
char *nodes_conf_render(const nodes_conf *conf);

/* The entry named name, NULL when none. */
nodes_entry *nodes_conf_find(const nodes_conf *conf, const char *name);
/* Adds ent (taken over: ent is zeroed) or replaces the entry of its name. */
void nodes_conf_put(nodes_conf *conf, nodes_entry *ent);
/* Removes the entry named name (and the default when it was it): false when there is none. */
bool nodes_conf_remove(nodes_conf *conf, const char *name);

void nodes_entry_free(nodes_entry *ent);
void nodes_conf_free(nodes_conf *conf);

#endif
