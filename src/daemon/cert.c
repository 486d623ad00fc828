/* `joblet cert` (cert.h): a CA in a directory and the certificates it signs, through GnuTLS.
 *
 * The record of what was issued is the directory itself: DIR/NAME.pem is a user's current
 * certificate, DIR/server.pem the node's, and DIR/issued/SERIAL.pem a copy of every
 * certificate ever made from DIR (kept when a user's or the server's is made again with
 * --force), which is what `list` shows and what `revoke SERIAL` finds a name in. Every file is
 * written through a new temporary file (O_CREAT|O_EXCL|O_NOFOLLOW, its mode set with fchmod,
 * fsync'd) renamed over its place, and a symbolic link at that place is refused, never
 * followed nor replaced. A command that changes DIR holds flock on DIR while it runs. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "cert.h"
#include "../api/tlslib.h"
#include "../common/parse.h"
#include "../common/util.h"

/* notBefore is set this far in the past, so that a peer whose clock is a little behind
 * accepts a certificate made a moment ago. */
#define CERT_BACKDATE_S 300
#define CERT_DAY_S 86400
/* No file of DIR that joblet cert reads is larger (a certificate is about 1 KiB). */
#define CERT_FILE_MAX (1u << 20)
#define CERT_SANS_MAX 32

/* The roles a client certificate may carry (OU=), as core/authz.c names them. */
static const char *const cert_roles[] = {"reader", "developer", "maintainer", "admin"};

/* User names taken by DIR's own files: a user "server" would overwrite server.pem, a user
 * "ca-key" the CA's key, a user "x-key" the key of user "x". */
static const char *const cert_reserved_users[] = {"ca", "server"};
#define CERT_KEY_SUFFIX "-key"

enum cert_kind { CERT_KIND_CA, CERT_KIND_SERVER, CERT_KIND_CLIENT, CERT_KIND_OTHER };
static const char *const cert_kind_names[] = {"ca", "server", "client", "other"};

/* ---- the commands and their options --------------------------------------------------- */

enum {
    CMD_INIT = 1u << 0,
    CMD_SERVER = 1u << 1,
    CMD_CLIENT = 1u << 2,
    CMD_REVOKE = 1u << 3,
    CMD_LIST = 1u << 4,
    CMD_ALL = 0x1f,
};

/* What a command line gave. */
typedef struct cert_args {
    const char *dir, *name, *user, *role, *address, *days_text, *target;
    const char *san[CERT_SANS_MAX];
    size_t nsan;
    bool force;
    unsigned days;
} cert_args;

/* The options of every command, and which commands take each. */
static const struct cert_opt {
    const char *name;   /* --name */
    int has_arg;
    int val;
    unsigned cmds;      /* CMD_* that accept it */
} cert_opts[] = {
    {"dir", required_argument, 'd', CMD_ALL},
    {"days", required_argument, 'D', CMD_INIT | CMD_SERVER | CMD_CLIENT},
    {"force", no_argument, 'f', CMD_INIT | CMD_SERVER | CMD_CLIENT},
    {"name", required_argument, 'n', CMD_SERVER},
    {"san", required_argument, 's', CMD_SERVER},
    {"user", required_argument, 'u', CMD_CLIENT},
    {"role", required_argument, 'r', CMD_CLIENT},
    {"address", required_argument, 'a', CMD_CLIENT},
    {"help", no_argument, 'h', CMD_ALL},
};

static int cert_init(const cert_args *a, jerr *e);
static int cert_server(const cert_args *a, jerr *e);
static int cert_client(const cert_args *a, jerr *e);
static int cert_revoke(const cert_args *a, jerr *e);
static int cert_list(const cert_args *a, jerr *e);

/* The commands: name, bit, what runs it, --days's range and default (0: no --days), help. */
static const struct cert_cmd {
    const char *name;
    unsigned bit;
    int (*run)(const cert_args *a, jerr *e);
    unsigned days_max, days_default;
    const char *help;
} cert_cmds[] = {
    {"init", CMD_INIT, cert_init, 36500, 3650,
     "joblet cert init - make the CA of joblet's TLS listener\n"
     "\n"
     "Usage: joblet cert init --dir DIR [--days N] [--force]\n"
     "\n"
     "Makes DIR (mode 0700) when it does not exist, and in it the CA: ca.pem, its certificate\n"
     "(subject CN=joblet CA <hostname>; basicConstraints CA:TRUE, pathlen 0, critical; keyUsage\n"
     "keyCertSign and cRLSign), and ca-key.pem, its ECDSA P-256 key (mode 0600). Refused when\n"
     "DIR already has a CA.\n"
     "\n"
     "Options:\n"
     "  --dir DIR      the CA's directory\n"
     "  --days N       how long the CA is valid: 1 to 36500 days (default 3650, ten years)\n"
     "  --force        replace the CA of DIR: no certificate the old one made is accepted once\n"
     "                 the listener has the new ca.pem\n"
     "  --help         show this help\n"},
    {"server", CMD_SERVER, cert_server, 3650, 730,
     "joblet cert server - make the certificate of this node's TLS listener\n"
     "\n"
     "Usage: joblet cert server --dir DIR --name NODE --san NAME[,ADDR...] [--days N] [--force]\n"
     "\n"
     "Signs DIR/server.pem (subject CN=NODE; extended key usage TLS server only) with the CA of\n"
     "DIR, and writes its key to DIR/server-key.pem (mode 0600). rnx checks the host of its\n"
     "address against the certificate's names: list every DNS name and IP address clients use.\n"
     "\n"
     "Options:\n"
     "  --dir DIR          the CA's directory (joblet cert init)\n"
     "  --name NODE        the node's name, a DNS name or an IP address; the certificate holds\n"
     "                     it as one of its names too\n"
     "  --san NAME[,ADDR...]\n"
     "                     the names clients reach the node by, separated by commas (the option\n"
     "                     may be repeated): an IPv4 or IPv6 address (10.0.0.5, ::1) becomes an\n"
     "                     IP address name, anything else a DNS name\n"
     "  --days N           1 to 3650 days (default 730, two years)\n"
     "  --force            replace DIR/server.pem and DIR/server-key.pem\n"
     "  --help             show this help\n"},
    {"client", CMD_CLIENT, cert_client, 3650, 365,
     "joblet cert client - make a user's certificate and rnx node file\n"
     "\n"
     "Usage: joblet cert client --dir DIR --user NAME --role ROLE --address HOST:PORT [--days N] [--force]\n"
     "\n"
     "Signs DIR/NAME.pem (subject CN=NAME, OU=ROLE; extended key usage TLS client only) with the\n"
     "CA of DIR, writes its key to DIR/NAME-key.pem, and what rnx needs to DIR/NAME.rnx.yml: the\n"
     "address, the user, the role, the CA's certificate, the user's certificate and key (both\n"
     "files mode 0600). Give NAME.rnx.yml to the user privately; they run rnx node add with it.\n"
     "\n"
     "Options:\n"
     "  --dir DIR            the CA's directory (joblet cert init)\n"
     "  --user NAME          the user: 1 to 64 letters, digits, '.', '_' or '-', not starting\n"
     "                       with '-' or '.'; not ca, server, nor a name ending in -key (names\n"
     "                       of DIR's own files)\n"
     "  --role ROLE          what the user may do: reader, developer, maintainer or admin\n"
     "  --address HOST:PORT  where rnx reaches the node's TLS listener: node1.example.com:7443,\n"
     "                       10.0.0.5:7443, [::1]:7443\n"
     "  --days N             1 to 3650 days (default 365)\n"
     "  --force              make the user's files again; the certificate they held stays\n"
     "                       accepted until it expires or is revoked by its serial\n"
     "  --help               show this help\n"},
    {"revoke", CMD_REVOKE, cert_revoke, 0, 0,
     "joblet cert revoke - stop accepting a certificate\n"
     "\n"
     "Usage: joblet cert revoke --dir DIR NAME|SERIAL\n"
     "\n"
     "Adds the certificate to DIR/revoked.txt, a line \"SERIAL NAME TIME\" each; joblet reads the\n"
     "file again on SIGHUP (systemctl reload joblet). NAME is a user\n"
     "whose certificate is DIR/NAME.pem; SERIAL is that of any certificate made from DIR, as\n"
     "joblet cert list prints it (a replaced one, the server's). Revoking one twice changes\n"
     "nothing.\n"
     "\n"
     "Options:\n"
     "  --dir DIR      the CA's directory\n"
     "  --help         show this help\n"},
    {"list", CMD_LIST, cert_list, 0, 0,
     "joblet cert list - show the certificates made from a CA's directory\n"
     "\n"
     "Usage: joblet cert list --dir DIR\n"
     "\n"
     "One line per certificate: its kind (ca, server, client), name, role, serial, the end of\n"
     "its validity (UTC) and its status: valid; valid (replaced), when its files in DIR were made\n"
     "again (it is still accepted until it expires or is revoked); expired; revoked, with when;\n"
     "made by a replaced CA (not accepted since joblet cert init --force); replaced, an old CA.\n"
     "\n"
     "Options:\n"
     "  --dir DIR      the CA's directory\n"
     "  --help         show this help\n"},
};

static void cert_usage(FILE *f)
{
    fputs("joblet cert - make the certificates of joblet's TLS listener: a CA, the node's, users'\n"
          "\n"
          "Usage: joblet cert init --dir DIR [--days N] [--force]\n"
          "       joblet cert server --dir DIR --name NODE --san NAME[,ADDR...] [--days N] [--force]\n"
          "       joblet cert client --dir DIR --user NAME --role ROLE --address HOST:PORT [--days N] [--force]\n"
          "       joblet cert revoke --dir DIR NAME|SERIAL\n"
          "       joblet cert list --dir DIR\n"
          "       joblet cert COMMAND --help\n"
          "\n"
          "A small certificate authority kept in one directory, DIR. joblet's TLS listener asks every\n"
          "client for a certificate signed by it and takes the user and the role from its subject\n"
          "(CN=user, OU=role). Every key is ECDSA P-256 (PKCS#8 PEM, not encrypted, mode 0600),\n"
          "every signature SHA-256; a serial is 16 random bytes, written as lowercase hex. No file\n"
          "is overwritten without --force, none is written through a symbolic link, and each is\n"
          "written whole or not at all. Keep DIR where only its admins read it: whoever reads\n"
          "ca-key.pem can make certificates joblet accepts.\n"
          "\n"
          "Commands:\n"
          "  init     make the CA: ca.pem and ca-key.pem (CN=joblet CA <hostname>, ten years)\n"
          "  server   make the node's certificate: server.pem and server-key.pem (two years)\n"
          "  client   make a user's certificate with its role: NAME.pem, NAME-key.pem and\n"
          "           NAME.rnx.yml, the node file rnx reads (365 days)\n"
          "  revoke   add a certificate to revoked.txt, which joblet reads again on SIGHUP\n"
          "  list     show every certificate made from DIR: kind, name, role, serial, end, status\n"
          "\n"
          "Files in DIR:\n"
          "  ca.pem, ca-key.pem           the CA's certificate (in every node file) and its key\n"
          "  server.pem, server-key.pem   the node's certificate and key, for the listener\n"
          "  NAME.pem, NAME-key.pem       a user's certificate and key\n"
          "  NAME.rnx.yml                 both with the CA's certificate and the address, for rnx\n"
          "  issued/SERIAL.pem            a copy of every certificate made from DIR: what list reads\n"
          "  revoked.txt                  \"SERIAL NAME TIME\" per revoked certificate; '#' starts a comment\n"
          "\n"
          "Exit status: 0 when done, 1 when it failed, 2 for a bad command line.\n",
          f);
}

/* ---- the checks of the command line (pure) ------------------------------------------ */

/* s as a message shows it: printable ASCII kept, the rest as \xNN, at most about 80 bytes. */
static const char *cert_shown(const char *s, char *buf, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 5 < n; p++) {
        if (o >= 80) {
            snprintf(buf + o, n - o, "...");
            return buf;
        }
        if (*p >= 0x20 && *p < 0x7f)
            buf[o++] = (char)*p;
        else
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", *p);
    }
    buf[o] = 0;
    return buf;
}

static bool cert_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

int cert_user_check(const char *user, jerr *e)
{
    static const char accepted[] = "use 1 to 64 letters, digits, '.', '_' or '-', not starting with '-' or '.'";
    char sh[128];
    size_t n = strlen(user);
    if (n == 0)
        return jerr_field(e, "--user", "--user: empty; %s", accepted);
    if (n > 64)
        return jerr_field(e, "--user", "--user: '%s' is %zu characters long; %s", cert_shown(user, sh, sizeof sh), n,
                          accepted);
    if (user[0] == '-' || user[0] == '.')
        return jerr_field(e, "--user", "--user: '%s' starts with '%c'; %s", cert_shown(user, sh, sizeof sh), user[0],
                          accepted);
    for (const char *p = user; *p; p++)
        if (!cert_name_char(*p)) {
            char c[8];
            return jerr_field(e, "--user", "--user: '%s' has '%s', which a user name may not; %s",
                              cert_shown(user, sh, sizeof sh), cert_shown((char[]){*p, 0}, c, sizeof c), accepted);
        }
    for (size_t i = 0; i < ARRAY_LEN(cert_reserved_users); i++)
        if (!strcmp(user, cert_reserved_users[i]))
            return jerr_field(e, "--user", "--user: '%s' is taken by the directory's own %s.pem and %s-key.pem; "
                              "choose another name", user, user, user);
    size_t k = strlen(CERT_KEY_SUFFIX);
    if (n >= k && !strcmp(user + n - k, CERT_KEY_SUFFIX))
        return jerr_field(e, "--user", "--user: '%s' ends in '%s', as the directory's key files do (user '%.*s' keeps "
                          "its key in %s.pem); choose another name", user, CERT_KEY_SUFFIX, (int)(n - k), user, user);
    return 0;
}

int cert_role_check(const char *role, jerr *e)
{
    for (size_t i = 0; i < ARRAY_LEN(cert_roles); i++)
        if (!strcmp(role, cert_roles[i]))
            return 0;
    char sh[128];
    return jerr_field(e, "--role", "--role: '%s' is not a role; use reader, developer, maintainer or admin",
                      cert_shown(role, sh, sizeof sh));
}

/* A DNS name: labels of letters, digits and '-' (not at a label's ends), 1 to 63 each, at
 * most 253 in all, the last one not all digits (that would be a mistyped address). */
static const char *cert_dns_problem(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return "it is empty";
    if (n > 253)
        return "it is longer than 253 characters";
    const char *label = s;
    bool digits = true;
    for (const char *p = s;; p++) {
        if (*p == '.' || !*p) {
            size_t l = (size_t)(p - label);
            if (l == 0)
                return "it has an empty label (two dots in a row, or a dot at an end)";
            if (l > 63)
                return "a label is longer than 63 characters";
            if (label[0] == '-' || p[-1] == '-')
                return "a label starts or ends with '-'";
            if (!*p)
                break;
            label = p + 1;
            digits = true;
            continue;
        }
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return "it has a character other than letters, digits, '-' and '.'";
        if (*p < '0' || *p > '9')
            digits = false;
    }
    if (digits)
        return "its last label is all digits, and an IPv4 address has four numbers from 0 to 255";
    return NULL;
}

/* item as a name of a certificate (cert_san_parse), or why it is none. */
static const char *cert_san_classify(const char *item, cert_san *out)
{
    char buf[INET6_ADDRSTRLEN + 2];
    memset(out, 0, sizeof *out);
    size_t n = strlen(item);
    /* [::1] as in an address */
    if (n >= 2 && item[0] == '[' && item[n - 1] == ']' && n - 2 < sizeof buf) {
        memcpy(buf, item + 1, n - 2);
        buf[n - 2] = 0;
        if (inet_pton(AF_INET6, buf, out->ip) != 1)
            return "only an IPv6 address goes in brackets";
        out->kind = CERT_SAN_IP;
        out->iplen = 16;
    } else if (inet_pton(AF_INET, item, out->ip) == 1) {
        out->kind = CERT_SAN_IP;
        out->iplen = 4;
    } else if (inet_pton(AF_INET6, item, out->ip) == 1) {
        out->kind = CERT_SAN_IP;
        out->iplen = 16;
    } else {
        const char *why = cert_dns_problem(item);
        if (why)
            return why;
        out->kind = CERT_SAN_DNS;
        snprintf(out->text, sizeof out->text, "%s", item);
        return NULL;
    }
    inet_ntop(out->iplen == 4 ? AF_INET : AF_INET6, out->ip, out->text, sizeof out->text);
    return NULL;
}

int cert_san_parse(const char *field, const char *item, cert_san *out, jerr *e)
{
    char sh[128];
    const char *why = cert_san_classify(item, out);
    if (why)
        return jerr_field(e, field, "%s: '%s' is neither an IP address nor a DNS name: %s; use a DNS name "
                          "(node1.example.com), an IPv4 address (10.0.0.5) or an IPv6 address (::1)",
                          field, cert_shown(item, sh, sizeof sh), why);
    return 0;
}

int cert_address_check(const char *address, cert_san *host, unsigned *port, jerr *e)
{
    static const char accepted[] = "use HOST:PORT, e.g. node1.example.com:7443, 10.0.0.5:7443 or [::1]:7443";
    char sh[128], h[256];
    const char *colon;
    if (strstr(address, "://"))
        return jerr_field(e, "--address", "--address: '%s' is a URL; %s", cert_shown(address, sh, sizeof sh),
                          accepted);
    if (address[0] == '[') {
        const char *close = strchr(address, ']');
        if (!close || close[1] != ':')
            return jerr_field(e, "--address", "--address: '%s' has no ']:PORT' after its IPv6 address; %s",
                              cert_shown(address, sh, sizeof sh), accepted);
        colon = close + 1;
        size_t l = (size_t)(close - address - 1);
        char v6[INET6_ADDRSTRLEN];
        unsigned char b[16];
        if (l >= sizeof v6 || (memcpy(v6, address + 1, l), v6[l] = 0, inet_pton(AF_INET6, v6, b) != 1))
            return jerr_field(e, "--address", "--address: '%s': only an IPv6 address goes in brackets; %s",
                              cert_shown(address, sh, sizeof sh), accepted);
        snprintf(h, sizeof h, "%s", v6);
    } else {
        colon = strrchr(address, ':');
        if (!colon)
            return jerr_field(e, "--address", "--address: '%s' has no port; %s", cert_shown(address, sh, sizeof sh),
                              accepted);
        if (memchr(address, ':', (size_t)(colon - address)))
            return jerr_field(e, "--address", "--address: '%s' looks like an IPv6 address without brackets; %s",
                              cert_shown(address, sh, sizeof sh), accepted);
        size_t l = (size_t)(colon - address);
        if (l == 0 || l >= sizeof h)
            return jerr_field(e, "--address", "--address: '%s' has no host before its port; %s",
                              cert_shown(address, sh, sizeof sh), accepted);
        memcpy(h, address, l);
        h[l] = 0;
    }
    const char *why = cert_san_classify(h, host);
    if (why)
        return jerr_field(e, "--address", "--address: the host of '%s' is neither an IP address nor a DNS name: %s; "
                          "%s", cert_shown(address, sh, sizeof sh), why, accepted);
    uint64_t p = 0;
    if (parse_u64(colon + 1, &p) < 0 || p < 1 || p > 65535)
        return jerr_field(e, "--address", "--address: '%s': the port must be a number from 1 to 65535; %s",
                          cert_shown(address, sh, sizeof sh), accepted);
    *port = (unsigned)p;
    return 0;
}

int cert_serial_parse(const char *s, char *hex, size_t hexlen, jerr *e)
{
    char sh[128];
    if (!*s)
        return jerr_field(e, "SERIAL", "an empty serial; give one as joblet cert list prints it");
    if (hexlen < 41 || parse_serial(s, hex, hexlen) < 0)
        return jerr_field(e, "SERIAL", "'%s' is not a serial: a serial is up to 20 bytes in hex (as joblet "
                          "cert list prints it, e.g. 3f9a...; ':' between bytes allowed)",
                          cert_shown(s, sh, sizeof sh));
    return 0;
}

/* ---- files --------------------------------------------------------------------------- */

/* A file of the directory dfd, read without following a symbolic link: NULL with errno
 * (ELOOP for a link, EFBIG over CERT_FILE_MAX, EINVAL for a non-regular file). */
static char *cert_read_at(int dfd, const char *name, size_t *len)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    int err = 0;
    if (fstat(fd, &st) < 0)
        err = errno;
    else if (!S_ISREG(st.st_mode))
        err = EINVAL;
    else if (st.st_size > CERT_FILE_MAX)
        err = EFBIG;
    else {
        buf = xmalloc((size_t)st.st_size + 1);
        size_t n = 0;
        while (n < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                err = errno;
            if (r <= 0)
                break;
            n += (size_t)r;
        }
        buf[n] = 0;
        *len = n;
        if (err) {
            free(buf);
            buf = NULL;
        }
    }
    close(fd);
    errno = err;
    return buf;
}

/* Whether a file may be written at DIR/name: nothing there, or (with force) a regular file.
 * A symbolic link is refused even with force. why_exists ends the refusal of an existing file. */
static int cert_out_check(int dfd, const char *dir, const char *name, bool force, const char *why_exists, jerr *e)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : jerr_sys(e, "%s/%s", dir, name);
    if (S_ISLNK(st.st_mode))
        return jerr_set(e, ELOOP, "%s/%s is a symbolic link: joblet cert writes no file through one nor replaces it "
                        "(it could point anywhere); look at it, remove it and run this again", dir, name);
    if (!S_ISREG(st.st_mode))
        return jerr_set(e, EEXIST, "%s/%s exists and is not a regular file; move it away", dir, name);
    if (!force)
        return jerr_set(e, EEXIST, "%s/%s exists: %s", dir, name, why_exists);
    return 0;
}

/* Writes DIR/name whole or not at all: a new temporary file beside it (O_EXCL|O_NOFOLLOW),
 * the mode set exactly (no umask), fsync'd, then renamed over name, unless a symbolic link
 * appeared there meanwhile. */
static int cert_write_at(int dfd, const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                         jerr *e)
{
    unsigned char r[6];
    char tmp[300];
    if (gnutls_rnd(GNUTLS_RND_NONCE, r, sizeof r) < 0)
        return jerr_set(e, EIO, "no random bytes for a temporary file's name");
    snprintf(tmp, sizeof tmp, ".%s.%02x%02x%02x%02x%02x%02x.tmp", name, r[0], r[1], r[2], r[3], r[4], r[5]);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return jerr_sys(e, "create %s/%s", dir, tmp);
    if (fchmod(fd, mode) < 0 || write_all(fd, data, len) != len || fsync(fd) < 0) {
        jerr_sys(e, "write %s/%s", dir, tmp);
        close(fd);
        unlinkat(dfd, tmp, 0);
        return -1;
    }
    if (close(fd) < 0) {
        jerr_sys(e, "write %s/%s", dir, tmp);
        unlinkat(dfd, tmp, 0);
        return -1;
    }
    if (cert_out_check(dfd, dir, name, true, "", e) < 0) {
        unlinkat(dfd, tmp, 0);
        return -1;
    }
    if (renameat(dfd, tmp, dfd, name) < 0) {
        jerr_sys(e, "rename %s/%s to %s", dir, tmp, name);
        unlinkat(dfd, tmp, 0);
        return -1;
    }
    return 0;
}

/* DIR opened (made 0700 first when make), and locked for this command. */
static int cert_dir_open(const char *dir, bool make, bool lock, jerr *e)
{
    struct stat st;
    if (make && stat(dir, &st) < 0 && errno == ENOENT && mkdir_p(dir, 0700, e) < 0)
        return -1;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT)
            return jerr_set(e, ENOENT, "%s: no such directory; make the CA first: joblet cert init --dir %s", dir, dir);
        return jerr_sys(e, "open %s", dir);
    }
    if (lock && flock(dfd, LOCK_EX) < 0) {
        jerr_sys(e, "lock %s", dir);
        close(dfd);
        return -1;
    }
    return dfd;
}

/* DIR/issued, made when missing; never a symbolic link. -1 without make when it is missing. */
static int cert_issued_open(int dfd, const char *dir, bool make, jerr *e)
{
    if (make && mkdirat(dfd, "issued", 0755) < 0 && errno != EEXIST)
        return jerr_sys(e, "create %s/issued", dir);
    int fd = openat(dfd, "issued", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && (make || errno != ENOENT))
        return jerr_sys(e, "open %s/issued (a directory; not a symbolic link)", dir);
    return fd;
}

/* ---- certificates ------------------------------------------------------------------- */

static int cert_gt(int rc, const char *what, jerr *e)
{
    return rc < 0 ? jerr_set(e, EIO, "%s: %s", what, gnutls_strerror(rc)) : 0;
}

/* What list and revoke need to know of a certificate. */
typedef struct cert_info {
    enum cert_kind kind;
    char serial[41];        /* lowercase hex */
    char cn[128], ou[64];   /* printable ASCII: anything else is '?' */
    char ski[129], aki[129];/* its key's id and its issuer's, hex ("" when it has none) */
    time_t not_before, not_after;
    bool current;           /* it is one of DIR's own *.pem (not only a copy in issued/) */
} cert_info;

static void cert_hex(const unsigned char *b, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 2 < outlen; i++)
        o += (size_t)snprintf(out + o, outlen - o, "%02x", b[i]);
    out[o] = 0;
}

/* A name of a certificate as a line of revoked.txt or of list may hold it. */
static void cert_clean(char *s)
{
    for (; *s; s++)
        if (!cert_name_char(*s) && *s != ':' && *s != '@' && *s != ' ')
            *s = '?';
}

static void cert_info_of(gnutls_x509_crt_t crt, cert_info *i)
{
    memset(i, 0, sizeof *i);
    unsigned char serial[64];
    size_t n = sizeof serial;
    if (gnutls_x509_crt_get_serial(crt, serial, &n) == 0)
        parse_serial_bytes(serial, n, i->serial, sizeof i->serial);
    n = sizeof i->cn;
    if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, i->cn, &n) < 0)
        snprintf(i->cn, sizeof i->cn, "?");
    n = sizeof i->ou;
    if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME, 0, 0, i->ou, &n) < 0)
        snprintf(i->ou, sizeof i->ou, "-");
    cert_clean(i->cn);
    cert_clean(i->ou);
    unsigned char id[64];
    n = sizeof id;
    if (gnutls_x509_crt_get_subject_key_id(crt, id, &n, NULL) == 0)
        cert_hex(id, n, i->ski, sizeof i->ski);
    n = sizeof id;
    if (gnutls_x509_crt_get_authority_key_id(crt, id, &n, NULL) == 0)
        cert_hex(id, n, i->aki, sizeof i->aki);
    i->not_before = gnutls_x509_crt_get_activation_time(crt);
    i->not_after = gnutls_x509_crt_get_expiration_time(crt);
    i->kind = CERT_KIND_OTHER;
    char oid[128];
    n = sizeof oid;
    if (gnutls_x509_crt_get_ca_status(crt, NULL) > 0)
        i->kind = CERT_KIND_CA;
    else if (gnutls_x509_crt_get_key_purpose_oid(crt, 0, oid, &n, NULL) == 0)
        i->kind = !strcmp(oid, GNUTLS_KP_TLS_WWW_SERVER)   ? CERT_KIND_SERVER
                  : !strcmp(oid, GNUTLS_KP_TLS_WWW_CLIENT) ? CERT_KIND_CLIENT
                                                           : CERT_KIND_OTHER;
}

/* A certificate from DIR/name (PEM); -1 with e, errno ENOENT when there is none. */
static int cert_load_at(int dfd, const char *dir, const char *name, gnutls_x509_crt_t *crt, jerr *e)
{
    size_t len = 0;
    char *pem = cert_read_at(dfd, name, &len);
    if (!pem)
        return jerr_sys(e, "read %s/%s", dir, name);
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    int rc = gnutls_x509_crt_init(crt);
    if (rc == 0 && (rc = gnutls_x509_crt_import(*crt, &d, GNUTLS_X509_FMT_PEM)) < 0)
        gnutls_x509_crt_deinit(*crt);
    free(pem);
    if (rc < 0) {
        jerr_set(e, EINVAL, "%s/%s is not a PEM certificate: %s", dir, name, gnutls_strerror(rc));
        errno = EINVAL;
        return -1;
    }
    return 0;
}

static void cert_time(time_t t, char *out, size_t n)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The CA of DIR: its certificate and its key, checked to belong together. */
typedef struct cert_ca {
    gnutls_x509_crt_t crt;
    gnutls_x509_privkey_t key;
    gnutls_privkey_t signer;
} cert_ca;

static void cert_ca_free(cert_ca *ca)
{
    if (ca->signer)
        gnutls_privkey_deinit(ca->signer);
    if (ca->key)
        gnutls_x509_privkey_deinit(ca->key);
    if (ca->crt)
        gnutls_x509_crt_deinit(ca->crt);
    memset(ca, 0, sizeof *ca);
}

static int cert_ca_load(int dfd, const char *dir, cert_ca *ca, jerr *e)
{
    memset(ca, 0, sizeof *ca);
    if (cert_load_at(dfd, dir, "ca.pem", &ca->crt, e) < 0) {
        ca->crt = NULL;
        if (errno == ENOENT)
            jerr_set(e, ENOENT, "%s has no CA (no ca.pem); make one first: joblet cert init --dir %s", dir, dir);
        return -1;
    }
    if (gnutls_x509_crt_get_ca_status(ca->crt, NULL) <= 0) {
        jerr_set(e, EINVAL, "%s/ca.pem is not a CA's certificate (no basicConstraints CA:TRUE)", dir);
        cert_ca_free(ca);
        return -1;
    }
    size_t len = 0;
    char *pem = cert_read_at(dfd, "ca-key.pem", &len);
    if (!pem) {
        jerr_sys(e, "read %s/ca-key.pem, the CA's key", dir);
        cert_ca_free(ca);
        return -1;
    }
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    int rc = gnutls_x509_privkey_init(&ca->key);
    if (rc == 0 && (rc = gnutls_x509_privkey_import2(ca->key, &d, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN)) < 0) {
        gnutls_x509_privkey_deinit(ca->key);
        ca->key = NULL;
    }
    gnutls_memset(pem, 0, len);
    free(pem);
    if (rc < 0) {
        jerr_set(e, EINVAL, "%s/ca-key.pem is not an unencrypted PEM private key: %s", dir, gnutls_strerror(rc));
        cert_ca_free(ca);
        return -1;
    }
    unsigned char a[64], b[64];
    size_t an = sizeof a, bn = sizeof b;
    if (gnutls_x509_crt_get_key_id(ca->crt, 0, a, &an) < 0 || gnutls_x509_privkey_get_key_id(ca->key, 0, b, &bn) < 0 ||
        an != bn || memcmp(a, b, an)) {
        jerr_set(e, EINVAL, "%s/ca-key.pem is not the key of %s/ca.pem", dir, dir);
        cert_ca_free(ca);
        return -1;
    }
    if ((rc = gnutls_privkey_init(&ca->signer)) < 0 || (rc = gnutls_privkey_import_x509(ca->signer, ca->key, 0)) < 0) {
        cert_gt(rc, "the CA's key", e);
        cert_ca_free(ca);
        return -1;
    }
    return 0;
}

/* What one certificate is to be. */
typedef struct cert_req {
    enum cert_kind kind;
    const char *cn, *ou;        /* ou: clients only */
    const cert_san *sans;       /* servers only */
    size_t nsans;
    unsigned days;
} cert_req;

/* A new ECDSA P-256 key. */
static int cert_keygen(gnutls_x509_privkey_t *key, jerr *e)
{
    int rc = gnutls_x509_privkey_init(key);
    if (rc < 0)
        return cert_gt(rc, "a new key", e);
    rc = gnutls_x509_privkey_generate(*key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    if (rc < 0) {
        gnutls_x509_privkey_deinit(*key);
        *key = NULL;
        return cert_gt(rc, "generating an ECDSA P-256 key", e);
    }
    return 0;
}

/* The certificate r describes, of key, signed by ca (NULL: by key itself, for the CA).
 * *clamped tells when the CA expires before the days asked for (its end is the CA's). */
static int cert_sign(const cert_req *r, gnutls_x509_privkey_t key, const cert_ca *ca, gnutls_x509_crt_t *out,
                     bool *clamped, jerr *e)
{
    gnutls_x509_crt_t crt = NULL;
    gnutls_privkey_t self = NULL;
    unsigned char serial[16], id[64];
    size_t idn = sizeof id;
    *clamped = false;
    if (cert_gt(gnutls_x509_crt_init(&crt), "a new certificate", e) < 0)
        return -1;
    /* 16 random bytes, positive (top bit clear), the first one not 0 (so the DER integer keeps
     * all 16 and its hex is the same everywhere) */
    do {
        if (cert_gt(gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial), "random bytes for a serial", e) < 0)
            goto fail;
        serial[0] &= 0x7f;
    } while (!serial[0]);
    time_t now = time(NULL);
    time_t end = now + (time_t)r->days * CERT_DAY_S;
    if (ca) {
        time_t ca_end = gnutls_x509_crt_get_expiration_time(ca->crt);
        if (ca_end != (time_t)-1 && end > ca_end) {
            end = ca_end;
            *clamped = true;
        }
    }
    if (cert_gt(gnutls_x509_crt_set_version(crt, 3), "version", e) < 0 ||
        cert_gt(gnutls_x509_crt_set_serial(crt, serial, sizeof serial), "serial", e) < 0 ||
        cert_gt(gnutls_x509_crt_set_activation_time(crt, now - CERT_BACKDATE_S), "notBefore", e) < 0 ||
        cert_gt(gnutls_x509_crt_set_expiration_time(crt, end), "notAfter", e) < 0 ||
        cert_gt(gnutls_x509_crt_set_key(crt, key), "the certificate's key", e) < 0)
        goto fail;
    /* subject: OU then CN in the encoding, "CN=alice,OU=developer" as RFC 4514 writes it */
    if (r->ou && cert_gt(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME, 0, r->ou,
                                                       (unsigned)strlen(r->ou)), "OU", e) < 0)
        goto fail;
    if (cert_gt(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, r->cn, (unsigned)strlen(r->cn)),
                "CN", e) < 0)
        goto fail;
    if (cert_gt(gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA1, id, &idn), "key id", e) < 0 ||
        cert_gt(gnutls_x509_crt_set_subject_key_id(crt, id, idn), "subjectKeyIdentifier", e) < 0)
        goto fail;
    if (r->kind == CERT_KIND_CA) {
        if (cert_gt(gnutls_x509_crt_set_basic_constraints(crt, 1, 0), "basicConstraints", e) < 0 ||
            cert_gt(gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN), "keyUsage",
                    e) < 0)
            goto fail;
    } else {
        const char *eku = r->kind == CERT_KIND_SERVER ? GNUTLS_KP_TLS_WWW_SERVER : GNUTLS_KP_TLS_WWW_CLIENT;
        if (cert_gt(gnutls_x509_crt_set_basic_constraints(crt, 0, -1), "basicConstraints", e) < 0 ||
            cert_gt(gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE), "keyUsage", e) < 0 ||
            cert_gt(gnutls_x509_crt_set_key_purpose_oid(crt, eku, 0), "extendedKeyUsage", e) < 0)
            goto fail;
        for (size_t i = 0; i < r->nsans; i++) {
            const cert_san *s = &r->sans[i];
            int rc = s->kind == CERT_SAN_IP
                         ? gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, s->ip, s->iplen,
                                                                GNUTLS_FSAN_APPEND)
                         : gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, s->text,
                                                                (unsigned)strlen(s->text), GNUTLS_FSAN_APPEND);
            if (cert_gt(rc, "subjectAltName", e) < 0)
                goto fail;
        }
        unsigned char aki[64];
        size_t akin = sizeof aki;
        unsigned crit = 0;
        if (cert_gt(gnutls_x509_crt_get_subject_key_id(ca->crt, aki, &akin, &crit), "the CA's subjectKeyIdentifier",
                    e) < 0 ||
            cert_gt(gnutls_x509_crt_set_authority_key_id(crt, aki, akin), "authorityKeyIdentifier", e) < 0)
            goto fail;
    }
    int rc;
    if (ca) {
        rc = gnutls_x509_crt_privkey_sign(crt, ca->crt, ca->signer, GNUTLS_DIG_SHA256, 0);
    } else if ((rc = gnutls_privkey_init(&self)) == 0 && (rc = gnutls_privkey_import_x509(self, key, 0)) == 0) {
        rc = gnutls_x509_crt_privkey_sign(crt, crt, self, GNUTLS_DIG_SHA256, 0);
    }
    if (self)
        gnutls_privkey_deinit(self);
    if (cert_gt(rc, "signing the certificate (SHA-256)", e) < 0)
        goto fail;
    *out = crt;
    return 0;
fail:
    gnutls_x509_crt_deinit(crt);
    return -1;
}

/* PEM text of a certificate and of a key (PKCS#8, unencrypted); free with gnutls_free. */
static int cert_pem(gnutls_x509_crt_t crt, gnutls_datum_t *pem, jerr *e)
{
    return cert_gt(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, pem), "writing the certificate as PEM", e);
}
static int cert_key_pem(gnutls_x509_privkey_t key, gnutls_datum_t *pem, jerr *e)
{
    return cert_gt(gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, pem),
                   "writing the key as PKCS#8 PEM", e);
}
static void cert_key_pem_free(gnutls_datum_t *pem)
{
    if (pem->data) {
        gnutls_memset(pem->data, 0, pem->size);
        gnutls_free(pem->data);
    }
    pem->data = NULL;
}

/* DIR/issued/SERIAL.pem: the record of a certificate made. */
static int cert_record(int dfd, const char *dir, gnutls_x509_crt_t crt, const gnutls_datum_t *pem, jerr *e)
{
    cert_info i;
    cert_info_of(crt, &i);
    char sub[4200], name[64];
    snprintf(sub, sizeof sub, "%s/issued", dir);
    snprintf(name, sizeof name, "%s.pem", i.serial);
    int ifd = cert_issued_open(dfd, dir, true, e);
    if (ifd < 0)
        return -1;
    int rc = cert_write_at(ifd, sub, name, (const char *)pem->data, pem->size, 0644, e);
    close(ifd);
    return rc;
}

/* ---- the list of certificates made, and revoked.txt --------------------------------- */

typedef struct cert_set {
    cert_info *v;
    size_t n, cap;
} cert_set;

static void cert_set_add_at(cert_set *s, int dfd, const char *dir, const char *name, bool current)
{
    gnutls_x509_crt_t crt;
    jerr e = {0};
    if (cert_load_at(dfd, dir, name, &crt, &e) < 0)
        return; /* not a certificate: not one of ours */
    cert_info i;
    cert_info_of(crt, &i);
    gnutls_x509_crt_deinit(crt);
    i.current = current;
    for (size_t k = 0; k < s->n; k++)
        if (!strcmp(s->v[k].serial, i.serial)) {
            s->v[k].current |= current;
            return;
        }
    if (s->n == s->cap)
        s->v = xrealloc(s->v, (s->cap = s->cap ? 2 * s->cap : 16) * sizeof *s->v);
    s->v[s->n++] = i;
}

static void cert_set_scan(cert_set *s, int dfd, const char *dir, bool current)
{
    int fd = dup(dfd);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.' || n < 5 || strcmp(de->d_name + n - 4, ".pem") ||
            (n >= 8 && !strcmp(de->d_name + n - 8, "-key.pem")))
            continue;
        cert_set_add_at(s, dfd, dir, de->d_name, current);
    }
    closedir(d);
}

static int cert_info_cmp(const void *a, const void *b)
{
    const cert_info *x = a, *y = b;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    int c = strcmp(x->cn, y->cn);
    if (c)
        return c;
    if (x->not_before != y->not_before)
        return x->not_before < y->not_before ? -1 : 1;
    return (int)x->current - (int)y->current; /* the one in use last */
}

/* Every certificate made from DIR: DIR's own *.pem (current) and DIR/issued's copies. */
static void cert_set_load(cert_set *s, int dfd, const char *dir)
{
    cert_set_scan(s, dfd, dir, true);
    jerr e = {0};
    int ifd = cert_issued_open(dfd, dir, false, &e);
    if (ifd >= 0) {
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/issued", dir);
        cert_set_scan(s, ifd, sub, false);
        close(ifd);
    }
    qsort(s->v, s->n, sizeof *s->v, cert_info_cmp);
}

/* revoked.txt: its text (NULL when there is none) and the line of a serial. */
typedef struct cert_revoked {
    char *text;
    size_t len;
} cert_revoked;

static int cert_revoked_load(int dfd, const char *dir, cert_revoked *r, jerr *e)
{
    r->text = cert_read_at(dfd, "revoked.txt", &r->len);
    if (!r->text && errno != ENOENT)
        return jerr_sys(e, "read %s/revoked.txt", dir);
    return 0;
}

/* When serial was revoked (the line's third word, into when), or false. */
static bool cert_revoked_find(const cert_revoked *r, const char *serial, char *when, size_t whenlen)
{
    if (!r->text)
        return false;
    for (const char *line = r->text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[512], s[128] = "", name[128] = "", t[64] = "";
        if (n < sizeof buf && line[0] != '#') {
            memcpy(buf, line, n);
            buf[n] = 0;
            if (sscanf(buf, "%127s %127s %63s", s, name, t) >= 1) {
                char norm[64];
                jerr e = {0};
                if (cert_serial_parse(s, norm, sizeof norm, &e) == 0 && !strcmp(norm, serial)) {
                    snprintf(when, whenlen, "%s", t[0] ? t : "?");
                    return true;
                }
            }
        }
        line += n + (end ? 1 : 0);
    }
    return false;
}

/* ---- the commands ------------------------------------------------------------------- */

static void cert_note_clamped(const char *cmd, const cert_ca *ca)
{
    char t[32];
    cert_time(gnutls_x509_crt_get_expiration_time(ca->crt), t, sizeof t);
    fprintf(stderr, "joblet cert %s: note: the CA expires on %s, before the days asked for: the certificate ends "
            "then too\n", cmd, t);
}

static int cert_init(const cert_args *a, jerr *e)
{
    int dfd = cert_dir_open(a->dir, true, true, e);
    if (dfd < 0)
        return -1;
    char why[512];
    snprintf(why, sizeof why, "%s already has a CA; pass --force to replace it (no certificate the old CA made is "
             "accepted then)", a->dir);
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t cpem = {0}, kpem = {0};
    int rc = -1;
    if (cert_out_check(dfd, a->dir, "ca-key.pem", a->force, why, e) < 0 ||
        cert_out_check(dfd, a->dir, "ca.pem", a->force, why, e) < 0)
        goto out;
    char host[256] = "", cn[300];
    if (gethostname(host, sizeof host - 1) < 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    snprintf(cn, sizeof cn, "joblet CA %.54s", host); /* a CN holds at most 64 characters */
    cert_req r = {.kind = CERT_KIND_CA, .cn = cn, .days = a->days};
    bool clamped;
    if (cert_keygen(&key, e) < 0 || cert_sign(&r, key, NULL, &crt, &clamped, e) < 0 || cert_pem(crt, &cpem, e) < 0 ||
        cert_key_pem(key, &kpem, e) < 0)
        goto out;
    if (cert_record(dfd, a->dir, crt, &cpem, e) < 0 ||
        cert_write_at(dfd, a->dir, "ca-key.pem", (const char *)kpem.data, kpem.size, 0600, e) < 0 ||
        cert_write_at(dfd, a->dir, "ca.pem", (const char *)cpem.data, cpem.size, 0644, e) < 0)
        goto out;
    fsync(dfd);
    unsigned char fp[32];
    size_t fpn = sizeof fp;
    char fph[100] = "", end[32];
    if (gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, fp, &fpn) == 0)
        for (size_t i = 0, o = 0; i < fpn; i++)
            o += (size_t)snprintf(fph + o, sizeof fph - o, i ? ":%02X" : "%02X", fp[i]);
    cert_time(gnutls_x509_crt_get_expiration_time(crt), end, sizeof end);
    printf("made the CA in %s: ca.pem (CN=%s, not after %s, SHA-256 fingerprint %s) and ca-key.pem (mode 0600: "
           "whoever reads it can make certificates joblet accepts)\n", a->dir, cn, end, fph);
    printf("next: joblet cert server --dir %s --name NODE --san NAME[,ADDR...]\n", a->dir);
    rc = 0;
out:
    cert_key_pem_free(&kpem);
    if (cpem.data)
        gnutls_free(cpem.data);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    close(dfd);
    return rc;
}

/* --name and --san as the certificate's names: NODE first unless --san has it, no duplicates. */
static int cert_server_sans(const cert_args *a, cert_san *sans, size_t *n, cert_san *node, jerr *e)
{
    *n = 0;
    if (cert_san_parse("--name", a->name, node, e) < 0)
        return -1;
    if (strlen(node->text) > 64)
        return jerr_field(e, "--name", "--name: longer than 64 characters, the most a certificate's CN holds; give a "
                          "shorter name and the long one in --san");
    cert_san all[CERT_SANS_MAX + 1];
    size_t k = 0;
    all[k++] = *node;
    for (size_t i = 0; i < a->nsan; i++) {
        const char *p = a->san[i];
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t l = comma ? (size_t)(comma - p) : strlen(p);
            char item[300];
            if (l == 0)
                return jerr_field(e, "--san", "--san: '%s' has an empty item; separate names with single commas, "
                                  "e.g. node1.example.com,10.0.0.5", a->san[i]);
            if (l >= sizeof item)
                return jerr_field(e, "--san", "--san: an item is longer than 253 characters");
            memcpy(item, p, l);
            item[l] = 0;
            if (k == CERT_SANS_MAX + 1)
                return jerr_field(e, "--san", "--san: more than %d names; give at most %d", CERT_SANS_MAX,
                                  CERT_SANS_MAX);
            if (cert_san_parse("--san", item, &all[k], e) < 0)
                return -1;
            k++;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    for (size_t i = 0; i < k; i++) {
        bool dup = false;
        for (size_t j = 0; j < *n && !dup; j++)
            dup = sans[j].kind == all[i].kind &&
                  (all[i].kind == CERT_SAN_IP ? sans[j].iplen == all[i].iplen && !memcmp(sans[j].ip, all[i].ip, all[i].iplen)
                                              : !strcasecmp(sans[j].text, all[i].text));
        if (!dup)
            sans[(*n)++] = all[i];
    }
    return 0;
}

static int cert_server(const cert_args *a, jerr *e)
{
    cert_san sans[CERT_SANS_MAX + 1], node;
    size_t nsans;
    if (cert_server_sans(a, sans, &nsans, &node, e) < 0)
        return -1;
    int dfd = cert_dir_open(a->dir, false, true, e);
    if (dfd < 0)
        return -1;
    cert_ca ca = {0};
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t cpem = {0}, kpem = {0};
    int rc = -1;
    char why[512];
    snprintf(why, sizeof why, "%s already has the server's certificate; pass --force to make it again", a->dir);
    if (cert_ca_load(dfd, a->dir, &ca, e) < 0 || cert_out_check(dfd, a->dir, "server-key.pem", a->force, why, e) < 0 ||
        cert_out_check(dfd, a->dir, "server.pem", a->force, why, e) < 0)
        goto out;
    cert_req r = {.kind = CERT_KIND_SERVER, .cn = node.text, .sans = sans, .nsans = nsans, .days = a->days};
    bool clamped;
    if (cert_keygen(&key, e) < 0 || cert_sign(&r, key, &ca, &crt, &clamped, e) < 0 || cert_pem(crt, &cpem, e) < 0 ||
        cert_key_pem(key, &kpem, e) < 0)
        goto out;
    if (cert_record(dfd, a->dir, crt, &cpem, e) < 0 ||
        cert_write_at(dfd, a->dir, "server-key.pem", (const char *)kpem.data, kpem.size, 0600, e) < 0 ||
        cert_write_at(dfd, a->dir, "server.pem", (const char *)cpem.data, cpem.size, 0644, e) < 0)
        goto out;
    fsync(dfd);
    if (clamped)
        cert_note_clamped("server", &ca);
    cert_info i;
    cert_info_of(crt, &i);
    char end[32];
    cert_time(i.not_after, end, sizeof end);
    printf("made %s/server.pem (CN=%s; names", a->dir, node.text);
    for (size_t k = 0; k < nsans; k++)
        printf("%s%s:%s", k ? ", " : " ", sans[k].kind == CERT_SAN_IP ? "IP" : "DNS", sans[k].text);
    printf("; serial %s; not after %s) and %s/server-key.pem (mode 0600)\n", i.serial, end, a->dir);
    rc = 0;
out:
    cert_key_pem_free(&kpem);
    if (cpem.data)
        gnutls_free(cpem.data);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    cert_ca_free(&ca);
    close(dfd);
    return rc;
}

/* The node file rnx reads (docs/remote.md): address, user, role, and three PEM blocks. */
static char *cert_node_file(const cert_args *a, const gnutls_datum_t *ca, const gnutls_datum_t *crt,
                            const gnutls_datum_t *key, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    char day[16];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(day, sizeof day, "%Y-%m-%d", &tm);
    fprintf(f, "# rnx node file for %s (%s), made by joblet cert client on %s.\n", a->user, a->role, day);
    fprintf(f, "# Use it: rnx node add NAME %s.rnx.yml   (it holds %s's private key: keep it private)\n", a->user,
            a->user);
    /* a plain YAML scalar may not start with '[' (a flow sequence): [::1]:7443 is quoted */
    fprintf(f, a->address[0] == '[' ? "address: \"%s\"\n" : "address: %s\n", a->address);
    fprintf(f, "user: %s\nrole: %s\n", a->user, a->role);
    const struct {
        const char *key;
        const gnutls_datum_t *pem;
    } blocks[] = {{"ca", ca}, {"cert", crt}, {"key", key}};
    for (size_t b = 0; b < ARRAY_LEN(blocks); b++) {
        fprintf(f, "%s: |\n", blocks[b].key);
        const char *p = (const char *)blocks[b].pem->data, *end = p + blocks[b].pem->size;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (l && p[l - 1] == '\r')
                l--;
            if (l)
                fprintf(f, "  %.*s\n", (int)l, p);
            p += (nl ? (size_t)(nl - p) + 1 : l);
        }
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A warning when DIR/server.pem does not name the host of --address: rnx would refuse it. */
static void cert_check_server_names(int dfd, const char *dir, const cert_san *host)
{
    gnutls_x509_crt_t srv;
    jerr e = {0};
    if (cert_load_at(dfd, dir, "server.pem", &srv, &e) < 0)
        return;
    unsigned ok = host->kind == CERT_SAN_IP ? gnutls_x509_crt_check_ip(srv, host->ip, host->iplen, 0)
                                            : gnutls_x509_crt_check_hostname2(srv, host->text, 0);
    gnutls_x509_crt_deinit(srv);
    if (!ok)
        fprintf(stderr, "joblet cert client: warning: %s/server.pem has no name %s: rnx will refuse the listener at "
                "that address; add it with joblet cert server --dir %s ... --san ...,%s --force\n", dir, host->text,
                dir, host->text);
}

static int cert_client(const cert_args *a, jerr *e)
{
    cert_san host;
    unsigned port;
    if (cert_user_check(a->user, e) < 0 || cert_role_check(a->role, e) < 0 ||
        cert_address_check(a->address, &host, &port, e) < 0)
        return -1;
    int dfd = cert_dir_open(a->dir, false, true, e);
    if (dfd < 0)
        return -1;
    cert_ca ca = {0};
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL, old = NULL;
    gnutls_datum_t cpem = {0}, kpem = {0}, capem = {0};
    char *yml = NULL;
    size_t ymllen = 0;
    int rc = -1;
    char pem_name[80], key_name[80], yml_name[80], why[512], old_serial[41] = "", old_end[32] = "";
    bool old_valid = false;
    snprintf(pem_name, sizeof pem_name, "%s.pem", a->user);
    snprintf(key_name, sizeof key_name, "%s-key.pem", a->user);
    snprintf(yml_name, sizeof yml_name, "%s.rnx.yml", a->user);
    jerr oe = {0};
    if (cert_load_at(dfd, a->dir, pem_name, &old, &oe) == 0) {
        cert_info i;
        cert_info_of(old, &i);
        gnutls_x509_crt_deinit(old);
        snprintf(old_serial, sizeof old_serial, "%s", i.serial);
        cert_time(i.not_after, old_end, sizeof old_end);
        old_valid = i.not_after > time(NULL);
    }
    if (old_serial[0])
        snprintf(why, sizeof why, "%s already has a certificate (serial %s, not after %s); pass --force to make "
                 "another (revoke the old one: joblet cert revoke --dir %s %s)", a->user, old_serial, old_end, a->dir,
                 old_serial);
    else
        snprintf(why, sizeof why, "pass --force to replace it");
    if (cert_ca_load(dfd, a->dir, &ca, e) < 0 || cert_out_check(dfd, a->dir, key_name, a->force, why, e) < 0 ||
        cert_out_check(dfd, a->dir, pem_name, a->force, why, e) < 0 ||
        cert_out_check(dfd, a->dir, yml_name, a->force, why, e) < 0)
        goto out;
    cert_req r = {.kind = CERT_KIND_CLIENT, .cn = a->user, .ou = a->role, .days = a->days};
    bool clamped;
    if (cert_keygen(&key, e) < 0 || cert_sign(&r, key, &ca, &crt, &clamped, e) < 0 || cert_pem(crt, &cpem, e) < 0 ||
        cert_key_pem(key, &kpem, e) < 0 || cert_pem(ca.crt, &capem, e) < 0)
        goto out;
    if (!(yml = cert_node_file(a, &capem, &cpem, &kpem, &ymllen))) {
        jerr_sys(e, "the node file");
        goto out;
    }
    if (cert_record(dfd, a->dir, crt, &cpem, e) < 0 ||
        cert_write_at(dfd, a->dir, key_name, (const char *)kpem.data, kpem.size, 0600, e) < 0 ||
        cert_write_at(dfd, a->dir, pem_name, (const char *)cpem.data, cpem.size, 0644, e) < 0 ||
        cert_write_at(dfd, a->dir, yml_name, yml, ymllen, 0600, e) < 0)
        goto out;
    fsync(dfd);
    if (clamped)
        cert_note_clamped("client", &ca);
    cert_info i;
    cert_info_of(crt, &i);
    char end[32];
    cert_time(i.not_after, end, sizeof end);
    printf("made %s/%s (CN=%s, OU=%s; serial %s; not after %s), %s/%s and %s/%s (mode 0600)\n", a->dir, pem_name,
           a->user, a->role, i.serial, end, a->dir, key_name, a->dir, yml_name);
    printf("give %s to %s privately (it holds the key); they run: rnx node add NAME %s\n", yml_name, a->user,
           yml_name);
    if (old_serial[0] && old_valid) {
        cert_revoked rv = {0};
        char when[64];
        jerr re = {0};
        if (cert_revoked_load(dfd, a->dir, &rv, &re) == 0 && !cert_revoked_find(&rv, old_serial, when, sizeof when))
            fprintf(stderr, "joblet cert client: note: %s's previous certificate (serial %s) is still accepted until "
                    "%s; revoke it: joblet cert revoke --dir %s %s\n", a->user, old_serial, old_end, a->dir,
                    old_serial);
        free(rv.text);
    }
    cert_check_server_names(dfd, a->dir, &host);
    rc = 0;
out:
    if (yml) {
        gnutls_memset(yml, 0, ymllen);
        free(yml);
    }
    cert_key_pem_free(&kpem);
    if (cpem.data)
        gnutls_free(cpem.data);
    if (capem.data)
        gnutls_free(capem.data);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    cert_ca_free(&ca);
    close(dfd);
    return rc;
}

/* The certificate `revoke` means: a user's current one by name, or any made from DIR by
 * serial. */
static int cert_revoke_target(int dfd, const cert_args *a, cert_info *out, jerr *e)
{
    char sh[128];
    const char *t = a->target;
    jerr ue = {0};
    if (cert_user_check(t, &ue) == 0) {
        char name[80];
        snprintf(name, sizeof name, "%s.pem", t);
        gnutls_x509_crt_t crt;
        jerr le = {0};
        if (cert_load_at(dfd, a->dir, name, &crt, &le) == 0) {
            cert_info_of(crt, out);
            gnutls_x509_crt_deinit(crt);
            if (out->kind != CERT_KIND_CLIENT)
                return jerr_set(e, EINVAL, "%s/%s is not a client certificate; revoke a certificate by its serial "
                                "(joblet cert list)", a->dir, name);
            return 0;
        }
        if (errno != ENOENT)
            return jerr_set(e, le.code, "%s", le.msg);
    }
    char serial[64];
    jerr se = {0};
    if (cert_serial_parse(t, serial, sizeof serial, &se) < 0) {
        if (!strcmp(t, "server") || !strcmp(t, "ca"))
            return jerr_field(e, "NAME", "'%s': revoke the server's certificate by its serial (joblet cert list); the "
                              "CA is not revoked, it is replaced (joblet cert init --force)", t);
        /* a well-formed user name without a certificate is not found (1), as an unknown serial
         * is; only a malformed one is a bad command line (2) */
        if (cert_user_check(t, &ue) == 0)
            return jerr_set(e, ENOENT, "'%s' is neither a user with a certificate in %s (%s/%s.pem) nor a serial; "
                            "joblet cert list --dir %s shows them", t, a->dir, a->dir, t, a->dir);
        return jerr_field(e, "NAME", "'%s' is neither a user with a certificate in %s nor a serial; give a user name "
                          "(its certificate is %s/NAME.pem) or a serial as joblet cert list prints it",
                          cert_shown(t, sh, sizeof sh), a->dir, a->dir);
    }
    cert_set s = {0};
    cert_set_load(&s, dfd, a->dir);
    int rc = -1;
    for (size_t i = 0; i < s.n; i++)
        if (!strcmp(s.v[i].serial, serial)) {
            *out = s.v[i];
            rc = 0;
        }
    free(s.v);
    if (rc < 0)
        return jerr_set(e, ENOENT, "'%s' is neither a user with a certificate in %s (%s/%s.pem) nor the serial of a "
                        "certificate made from it; joblet cert list --dir %s shows them",
                        cert_shown(t, sh, sizeof sh), a->dir, a->dir, cert_shown(t, sh, sizeof sh), a->dir);
    if (out->kind == CERT_KIND_CA)
        return jerr_set(e, EINVAL, "%s is the CA's serial: a CA is not revoked but replaced (joblet cert init --dir "
                        "%s --force, then every certificate made again)", serial, a->dir);
    return 0;
}

static int cert_revoke(const cert_args *a, jerr *e)
{
    int dfd = cert_dir_open(a->dir, false, true, e);
    if (dfd < 0)
        return -1;
    cert_info i;
    cert_revoked rv = {0};
    int rc = -1;
    char when[64], *text = NULL;
    if (cert_revoke_target(dfd, a, &i, e) < 0 || cert_revoked_load(dfd, a->dir, &rv, e) < 0)
        goto out;
    if (cert_revoked_find(&rv, i.serial, when, sizeof when)) {
        printf("%s (serial %s) was already revoked, at %s; %s/revoked.txt is unchanged\n", i.cn, i.serial, when,
               a->dir);
        rc = 0;
        goto out;
    }
    if (cert_out_check(dfd, a->dir, "revoked.txt", true, "", e) < 0)
        goto out;
    char now[32], name[128];
    cert_time(time(NULL), now, sizeof now);
    snprintf(name, sizeof name, "%s", i.cn);
    for (char *p = name; *p; p++)
        if (*p == ' ')
            *p = '_';
    const char *head = "# Certificates joblet's TLS listener refuses: <serial, hex> <name> <revoked at, RFC 3339>.\n"
                       "# Written by joblet cert revoke; joblet reads it again on SIGHUP.\n";
    size_t len = rv.text ? rv.len : 0;
    bool nl = len && rv.text[len - 1] != '\n';
    if (asprintf(&text, "%s%s%s %s %s\n", rv.text ? rv.text : head, nl ? "\n" : "", i.serial, name, now) < 0) {
        text = NULL;
        jerr_sys(e, "revoked.txt");
        goto out;
    }
    if (cert_write_at(dfd, a->dir, "revoked.txt", text, strlen(text), 0644, e) < 0)
        goto out;
    fsync(dfd);
    printf("revoked %s %s (serial %s): %s/revoked.txt; send joblet SIGHUP to apply it now (systemctl "
           "reload joblet)\n", cert_kind_names[i.kind], i.cn, i.serial, a->dir);
    rc = 0;
out:
    free(text);
    free(rv.text);
    close(dfd);
    return rc;
}

static int cert_list(const cert_args *a, jerr *e)
{
    int dfd = cert_dir_open(a->dir, false, false, e);
    if (dfd < 0)
        return -1;
    cert_revoked rv = {0};
    if (cert_revoked_load(dfd, a->dir, &rv, e) < 0) {
        close(dfd);
        return -1;
    }
    cert_set s = {0};
    cert_set_load(&s, dfd, a->dir);
    time_t now = time(NULL);
    const char *ca_ski = "";
    for (size_t k = 0; k < s.n; k++)
        if (s.v[k].kind == CERT_KIND_CA && s.v[k].current)
            ca_ski = s.v[k].ski;
    printf("%-7s %-24s %-11s %-32s %-20s %s\n", "KIND", "NAME", "ROLE", "SERIAL", "NOT AFTER", "STATUS");
    for (size_t k = 0; k < s.n; k++) {
        const cert_info *i = &s.v[k];
        char end[32], when[64], status[100];
        cert_time(i->not_after, end, sizeof end);
        if (cert_revoked_find(&rv, i->serial, when, sizeof when))
            snprintf(status, sizeof status, "revoked %s", when);
        else if (i->kind == CERT_KIND_CA && !i->current)
            snprintf(status, sizeof status, "replaced (not accepted)");
        else if (i->kind != CERT_KIND_CA && ca_ski[0] && strcmp(i->aki, ca_ski))
            snprintf(status, sizeof status, "made by a replaced CA (not accepted)");
        else if (i->not_after < now)
            snprintf(status, sizeof status, "expired");
        else
            snprintf(status, sizeof status, "%s", i->current ? "valid" : "valid (replaced)");
        printf("%-7s %-24s %-11s %-32s %-20s %s\n", cert_kind_names[i->kind], i->cn,
               i->kind == CERT_KIND_CLIENT ? i->ou : "-", i->serial, end, status);
    }
    free(s.v);
    free(rv.text);
    close(dfd);
    return 0;
}

/* ---- the command line --------------------------------------------------------------- */

int cert_main(int argc, char **argv)
{
    if (argc < 2) {
        cert_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        cert_usage(stdout);
        return 0;
    }
    const struct cert_cmd *cmd = NULL;
    for (size_t i = 0; i < ARRAY_LEN(cert_cmds); i++)
        if (!strcmp(argv[1], cert_cmds[i].name))
            cmd = &cert_cmds[i];
    char sh[128];
    if (!cmd) {
        fprintf(stderr, "joblet cert: '%s' is not a command; use init, server, client, revoke or list (joblet cert "
                "--help)\n", cert_shown(argv[1], sh, sizeof sh));
        return 2;
    }
    struct option longopts[ARRAY_LEN(cert_opts) + 1];
    for (size_t i = 0; i < ARRAY_LEN(cert_opts); i++)
        longopts[i] = (struct option){cert_opts[i].name, cert_opts[i].has_arg, NULL, cert_opts[i].val};
    longopts[ARRAY_LEN(cert_opts)] = (struct option){NULL, 0, NULL, 0};
    cert_args a = {0};
    int c, sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(sub_argc, sub_argv, ":", longopts, NULL)) != -1) {
        const struct cert_opt *o = NULL;
        for (size_t i = 0; i < ARRAY_LEN(cert_opts); i++)
            if (cert_opts[i].val == c)
                o = &cert_opts[i];
        if (c == ':') {
            fprintf(stderr, "joblet cert %s: %s needs a value; see joblet cert %s --help\n", cmd->name,
                    cert_shown(sub_argv[optind - 1], sh, sizeof sh), cmd->name);
            return 2;
        }
        if (!o) {
            fprintf(stderr, "joblet cert %s: unknown option '%s'; see joblet cert %s --help\n", cmd->name,
                    cert_shown(sub_argv[optind - 1], sh, sizeof sh), cmd->name);
            return 2;
        }
        if (!(o->cmds & cmd->bit)) {
            const char *for_ = "";
            for (size_t i = 0; i < ARRAY_LEN(cert_cmds); i++)
                if (o->cmds & cert_cmds[i].bit) {
                    for_ = cert_cmds[i].name;
                    break;
                }
            fprintf(stderr, "joblet cert %s: --%s is for joblet cert %s, not %s; see joblet cert %s --help\n",
                    cmd->name, o->name, for_, cmd->name, cmd->name);
            return 2;
        }
        switch (c) {
        case 'd': a.dir = optarg; break;
        case 'D': a.days_text = optarg; break;
        case 'f': a.force = true; break;
        case 'n': a.name = optarg; break;
        case 's':
            if (a.nsan == CERT_SANS_MAX) {
                fprintf(stderr, "joblet cert %s: --san: more than %d; give at most %d names\n", cmd->name,
                        CERT_SANS_MAX, CERT_SANS_MAX);
                return 2;
            }
            a.san[a.nsan++] = optarg;
            break;
        case 'u': a.user = optarg; break;
        case 'r': a.role = optarg; break;
        case 'a': a.address = optarg; break;
        case 'h': fputs(cmd->help, stdout); return 0;
        }
    }
    int npos = sub_argc - optind;
    if (cmd->bit == CMD_REVOKE && npos == 1) {
        a.target = sub_argv[optind];
    } else if (npos > 0) {
        fprintf(stderr, "joblet cert %s: unexpected argument '%s'; see joblet cert %s --help\n", cmd->name,
                cert_shown(sub_argv[optind + (cmd->bit == CMD_REVOKE)], sh, sizeof sh), cmd->name);
        return 2;
    }
    /* what each command needs */
    const char *missing = !a.dir                                  ? "--dir DIR"
                          : cmd->bit == CMD_SERVER && !a.name     ? "--name NODE"
                          : cmd->bit == CMD_SERVER && !a.nsan     ? "--san NAME[,ADDR...] (the names clients reach it by)"
                          : cmd->bit == CMD_CLIENT && !a.user     ? "--user NAME"
                          : cmd->bit == CMD_CLIENT && !a.role     ? "--role reader|developer|maintainer|admin"
                          : cmd->bit == CMD_CLIENT && !a.address  ? "--address HOST:PORT"
                          : cmd->bit == CMD_REVOKE && !a.target   ? "NAME or SERIAL (the certificate to revoke)"
                                                                  : NULL;
    if (missing) {
        fprintf(stderr, "joblet cert %s: missing %s; see joblet cert %s --help\n", cmd->name, missing, cmd->name);
        return 2;
    }
    if (!a.dir[0]) {
        fprintf(stderr, "joblet cert %s: --dir: empty; name the CA's directory\n", cmd->name);
        return 2;
    }
    a.days = cmd->days_default;
    if (a.days_text) {
        uint64_t d = 0;
        if (parse_u64(a.days_text, &d) < 0 || d < 1 || d > cmd->days_max) {
            fprintf(stderr, "joblet cert %s: --days: '%s' must be a number of days from 1 to %u\n", cmd->name,
                    cert_shown(a.days_text, sh, sizeof sh), cmd->days_max);
            return 2;
        }
        a.days = (unsigned)d;
    }
    jerr e = {0};
    if (tlslib_init(&e) < 0 || cmd->run(&a, &e) < 0) {
        fprintf(stderr, "joblet cert %s: %s\n", cmd->name, e.msg);
        return e.http == 400 ? 2 : 1;
    }
    return 0;
}
