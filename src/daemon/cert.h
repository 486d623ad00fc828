/* `joblet cert`: the certificates of joblet's TLS listener, made without a PKI team
 * (docs/remote.md, "Certificates: joblet cert"). A CA in a directory, the node's server
 * certificate, users' client certificates with their role, and the list of revoked ones; every
 * key ECDSA P-256, every signature SHA-256, through GnuTLS. Runs before any configuration is
 * read: nothing here knows the daemon's state. */
#ifndef JOBLET_CERT_H
#define JOBLET_CERT_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/err.h"

/* `joblet cert COMMAND ...`: argv[0] is "cert". Returns the exit status: 0, 1 when it failed,
 * 2 for a bad command line. */
int cert_main(int argc, char **argv);

/* The checks of the command line, pure (no file, no GnuTLS); each fills e with a usage error
 * (jerr_field: the option named, what it accepts) and returns -1 when refused. */

/* A user name (--user): 1 to 64 of [A-Za-z0-9._-], not starting with '-' or '.', and none of
 * the names taken by DIR's own files ("ca", "server", a name ending in "-key"). */
int cert_user_check(const char *user, jerr *e);
/* A role (--role): reader, developer, maintainer or admin. */
int cert_role_check(const char *role, jerr *e);

/* One subject alternative name (an item of --san, or --name): an IPv4 or IPv6 literal (IPv6
 * may be in brackets) is an IP address, anything else must be a DNS name (labels of letters,
 * digits and '-', at most 253 characters, its last label not all digits). */
enum cert_san_kind { CERT_SAN_DNS, CERT_SAN_IP };
typedef struct cert_san {
    enum cert_san_kind kind;
    char text[254];         /* the name, or the address as inet_ntop writes it */
    unsigned char ip[16];   /* CERT_SAN_IP: the address, 4 or 16 bytes */
    unsigned iplen;
} cert_san;
int cert_san_parse(const char *field, const char *item, cert_san *out, jerr *e);

/* --address HOST:PORT: HOST a DNS name, an IPv4 literal or an IPv6 literal in brackets
 * ([::1]:7443), PORT 1 to 65535. host gets HOST (without brackets). */
int cert_address_check(const char *address, cert_san *host, unsigned *port, jerr *e);

/* A serial as an admin types it (hex, upper or lower case, ':' between bytes allowed), in
 * the form every file and output of joblet cert uses: lowercase hex, no separators. */
int cert_serial_parse(const char *s, char *hex, size_t hexlen, jerr *e);

#endif
