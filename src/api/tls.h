/* The TLS listener's certificates (docs/remote.md), read from remote.pki_dir:
 *
 *   ca.pem                the CA that signs clients (and the server)
 *   server.pem            the server's certificate (its chain after it, if any)
 *   server-key.pem        its key
 *   revoked.txt           serials no longer accepted: "<hex serial> [name] [time]" per line
 *
 * The server's certificate is handed to GnuTLS at each handshake (tls_cert_callback), so that
 * tls_reload (SIGHUP) replaces it, the CA and the revocation list without a restart: open
 * connections keep going, but one whose certificate is now revoked, or no longer signed by the
 * CA in use, is closed (http_reload_remote).
 *
 * A client's certificate is checked once per connection, at its first request (tls_verify):
 * libmicrohttpd only *requests* one (a client without one completes the handshake), and
 * GnuTLS's peer verification returns 0 for a bad certificate (the status word says why), so
 * the check is made here, in full: present, signed by ca.pem, in its validity period, made for
 * a TLS client (a server's certificate is refused), not revoked, naming a person (CN) and a
 * role (OU). */
#ifndef JOBLET_API_TLS_H
#define JOBLET_API_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>

#include "../common/err.h"
#include "../core/authz.h"

/* Reads the four files of dir. 0, or -1 with e naming the file and what is wrong with it. */
int tls_load(const char *dir, jerr *e);
/* Reads them again; on failure the ones in use stay, and e says why. */
int tls_reload(jerr *e);
void tls_free(void);
/* ca.pem's text, for libmicrohttpd (MHD_OPTION_HTTPS_MEM_TRUST: it makes it ask for a client
 * certificate and name the CA in its request). */
const char *tls_ca_pem(void);
/* The server's certificate and key at a handshake (gnutls_certificate_retrieve_function2). */
int tls_cert_callback(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                      unsigned int *pcert_length, gnutls_privkey_t *pkey);
/* The person a connection's client certificate names: person, role and serial set in *who
 * (the local account is authz_remote's), or -1 with a 403 in e saying what is wrong with it. */
int tls_verify(gnutls_session_t s, caller *who, jerr *e);
/* A connection's client certificate chain, kept to be checked again at a reload: a CA replaced
 * (its key leaked) ends the connections of the certificates it no longer signs, as a revocation
 * does (http_reload_remote). tls_peer_keep: NULL when the session has none. tls_peer_check:
 * tls_verify's checks on it against the certificates in use now. */
typedef struct tls_peer tls_peer;
tls_peer *tls_peer_keep(gnutls_session_t s);
int tls_peer_check(const tls_peer *p, caller *who, jerr *e);
void tls_peer_free(tls_peer *p);
/* When the client's certificate expires (its notAfter, seconds since the epoch); 0 when it
 * cannot be read. A connection is checked in full once, at its first request: its expiry is
 * looked at again at every request, as revocation is (http.c). */
int64_t tls_peer_not_after(const tls_peer *p);
/* Whether a serial (lowercase hex, as caller.serial) is on the revocation list in use. */
bool tls_revoked(const char *serial);
/* An upgraded connection (a terminal: attach.c) whose TLS joblet reads and writes itself, on the
 * session libmicrohttpd's handshake made, instead of through libmicrohttpd's relay. That relay
 * (before 1.0) moves 4 bytes a pass: its buffers are what the connection's memory has left after
 * the 101, and the answer's head took all of it (docs/interactive.md, "Over TLS").
 * tls_upgraded_take gates the session's reads: from then on only tls_upgraded_recv reads the
 * socket, and libmicrohttpd's relay, which still runs, finds nothing to read (it is never given
 * anything to send: nothing is written to its socket pair). Its close of the upgraded connection
 * (MHD_upgrade_action) still ends the session (close_notify) and closes the socket. */
void tls_upgraded_take(gnutls_session_t s);
/* A record's plaintext at most: tls_upgraded_recv is called with at least this much room, so that
 * no plaintext stays in GnuTLS, where libmicrohttpd's relay would find it. */
#define TLS_RECORD_MAX 16384
/* Like recv and send on the socket, for a taken session: bytes moved (send: at most one record's),
 * 0 (recv) the client ended the session, -1 with errno: EAGAIN nothing now, EINTR again, EPIPE
 * the session is broken or closed. A send that said EAGAIN is called again with the same bytes
 * first (more may follow them). */
ssize_t tls_upgraded_recv(gnutls_session_t s, void *buf, size_t n);
ssize_t tls_upgraded_send(gnutls_session_t s, const void *buf, size_t n);
/* The end of what joblet sends (close_notify), as shutdown(SHUT_WR) on a socket: 0, or -1 with
 * errno as for tls_upgraded_send. */
int tls_upgraded_bye(gnutls_session_t s);

/* The priorities of the listener: TLS 1.3 only. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1"

#endif
