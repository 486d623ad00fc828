/* The TLS kind of connection (conn.h): TCP to a remote node's joblet, TLS 1.3 only, rnx's
 * client certificate, the server's certificate checked against the node's own CA and the
 * address rnx dialed. GnuTLS is opened with dlopen on the first use, never linked: rnx's start
 * on the local socket does not pay for loading it. */
#ifndef JOBLET_CONN_TLS_H
#define JOBLET_CONN_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "conn.h"

/* TCP connect and TLS handshake together, from the first address tried. */
#define CONN_TLS_TIMEOUT_MS 10000

/* A node as the TLS kind needs it (strings are copied by conn_tls_creds_new). */
typedef struct conn_tls_peer {
    const char *node;      /* its name, for messages */
    const char *address;   /* HOST:PORT as written ("[::1]:7443"): messages and the Host header */
    const char *host;      /* as dialed: a DNS name or an IP literal (no brackets) */
    const char *port;      /* decimal */
    const char *ca;        /* PEM: the only trust anchor for the server's certificate */
    const char *cert;      /* PEM: rnx's client certificate (its chain may follow) */
    const char *key;       /* PEM: its private key (unencrypted) */
} conn_tls_peer;

/* A node's credentials, read once and used for each connection to it. */
typedef struct conn_tls_creds conn_tls_creds;

/* Opens GnuTLS (the first time) and reads the node's CA, certificate and key. NULL with e set
 * when GnuTLS is missing or one of them does not load: the message names the field (ca, cert,
 * key) and why ("the key is not the certificate's"). */
conn_tls_creds *conn_tls_creds_new(const conn_tls_peer *p, jerr *e);
/* The same for a command about to use the node: e's message names the node and, for a field
 * at fault, points at rnx node show ("node gpu-1: key: ... (rnx node show gpu-1)"). */
conn_tls_creds *conn_tls_creds_open(const conn_tls_peer *p, jerr *e);
void conn_tls_creds_free(conn_tls_creds *cr);

/* Resolves the node's host, connects and does the handshake, all within CONN_TLS_TIMEOUT_MS.
 * The server's certificate must chain to the node's CA (the system's store is never used),
 * name the dialed host (a DNS name among its DNSName SANs, an IP literal among its IPAddress
 * SANs; the subject's CN is not looked at) and allow TLS server use in its extended key usage.
 * NULL with e set otherwise, the message saying which node and exactly why:
 *   node gpu-2 (10.0.0.7:7443): the server's certificate does not name 10.0.0.7 (it names
 *   gpu-1, 10.0.0.5): refusing to talk to it
 * Each call is a full handshake: no session ticket is kept, in memory or on disk. */
conn *conn_tls_dial(const conn_tls_creds *cr, jerr *e);

/* What a PEM certificate (the first of a chain) says, for rnx node show. */
typedef struct conn_tls_cert_info {
    char subject[512];     /* RFC 4514: "CN=alice,OU=developer" */
    char issuer[512];
    char serial[130];      /* hex */
    int64_t not_before, not_after;   /* unix seconds */
    size_t count;          /* certificates in the PEM */
} conn_tls_cert_info;

/* Fills out from pem; -1 with e set when GnuTLS is missing or pem holds no certificate. */
int conn_tls_cert_info_of(const char *pem, conn_tls_cert_info *out, jerr *e);

#endif
