/* TLS to a remote node (conn_tls.h), with GnuTLS opened by dlopen.
 *
 * rnx links nothing it does not need on every run: libgnutls and what it brings (nettle,
 * hogweed, gmp, p11-kit, libtasn1, libidn2, libunistring: eight shared objects) would cost
 * every local `rnx job run` their loading (docs/performance.md). It is opened when rnx talks
 * to a node over TLS (or reads a certificate for rnx node add|show); the prototypes are
 * gnutls.h's, so each call through the table is checked as a direct one would be.
 *
 * Every connection is a full TLS 1.3 handshake: rnx keeps no session tickets (one command is
 * one or a few connections, and a ticket would be a secret to store on disk). */
#include "conn_tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"

/* TLS 1.3 and nothing else; NORMAL's ciphers, groups and signatures within it. */
#define TLS_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1"

#define GNUTLS_FUNCS \
    X(gnutls_alert_get) \
    X(gnutls_alert_get_name) \
    X(gnutls_bye) \
    X(gnutls_certificate_allocate_credentials) \
    X(gnutls_certificate_free_credentials) \
    X(gnutls_certificate_get_peers) \
    X(gnutls_certificate_set_verify_function) \
    X(gnutls_certificate_set_x509_key_mem) \
    X(gnutls_certificate_set_x509_trust_mem) \
    X(gnutls_certificate_verification_status_print) \
    X(gnutls_certificate_verify_peers) \
    X(gnutls_credentials_set) \
    X(gnutls_deinit) \
    X(gnutls_error_is_fatal) \
    X(gnutls_handshake) \
    X(gnutls_handshake_set_timeout) \
    X(gnutls_init) \
    X(gnutls_priority_set_direct) \
    X(gnutls_record_check_pending) \
    X(gnutls_record_cork) \
    X(gnutls_record_recv) \
    X(gnutls_record_send) \
    X(gnutls_record_uncork) \
    X(gnutls_server_name_set) \
    X(gnutls_session_get_ptr) \
    X(gnutls_session_set_ptr) \
    X(gnutls_strerror) \
    X(gnutls_transport_set_errno) \
    X(gnutls_transport_set_ptr) \
    X(gnutls_transport_set_pull_function) \
    X(gnutls_transport_set_pull_timeout_function) \
    X(gnutls_transport_set_push_function) \
    X(gnutls_x509_crt_deinit) \
    X(gnutls_x509_crt_get_dn3) \
    X(gnutls_x509_crt_get_expiration_time) \
    X(gnutls_x509_crt_get_activation_time) \
    X(gnutls_x509_crt_get_issuer_dn3) \
    X(gnutls_x509_crt_get_serial) \
    X(gnutls_x509_crt_get_subject_alt_name) \
    X(gnutls_x509_crt_import) \
    X(gnutls_x509_crt_init) \
    X(gnutls_x509_crt_list_import2)

static struct {
#define X(f) __typeof__(&f) f;
    GNUTLS_FUNCS
#undef X
    gnutls_free_function *free_fn;   /* gnutls_free is a variable (and a macro) */
    bool loaded;
} tls;

static int tls_load(jerr *e)
{
    if (tls.loaded)
        return 0;
    void *h = dlopen("libgnutls.so.30", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return jerr_set(e, ENOENT, "talking to a node over TLS needs GnuTLS (Debian: libgnutls30): %s", dlerror());
#define X(f)                                                                                       \
    if (!(tls.f = (__typeof__(&f))dlsym(h, #f)))                                                   \
        return jerr_set(e, ENOSYS, "this GnuTLS has no %s (rnx needs GnuTLS 3.6.5 or newer, for TLS 1.3)", #f);
    GNUTLS_FUNCS
#undef X
    tls.free_fn = (gnutls_free_function *)dlsym(h, "gnutls_free");
    if (!tls.free_fn || !*tls.free_fn)
        return jerr_set(e, ENOSYS, "this GnuTLS has no gnutls_free");
    tls.loaded = true;
    return 0;
}

static void tls_free(void *p) { (*tls.free_fn)(p); }

static void datum_of(gnutls_datum_t *d, const char *s)
{
    d->data = (unsigned char *)s;
    d->size = (unsigned)strlen(s);
}

struct conn_tls_creds {
    gnutls_certificate_credentials_t x;
    char *node, *address, *host, *port;
    unsigned char ip[16];     /* the host as an IP address, when it is one */
    unsigned ip_len;          /* 4, 16, or 0: a DNS name */
};

/* One connection; base first, so that a conn * is a tls_conn *. */
typedef struct tls_conn {
    conn base;
    gnutls_session_t s;
    const conn_tls_creds *cr;
    int last_errno;           /* of the socket's last failed send or recv */
    bool server_ok;           /* the server's certificate passed: rnx's own goes next */
    char refusal[600];        /* why the server's certificate was refused */
} tls_conn;

/* ---- credentials ------------------------------------------------------------------------- */

static int verify_server(gnutls_session_t s);

conn_tls_creds *conn_tls_creds_new(const conn_tls_peer *p, jerr *e)
{
    if (tls_load(e) < 0)
        return NULL;
    conn_tls_creds *cr = xcalloc(1, sizeof *cr);
    cr->node = xstrdup(p->node);
    cr->address = xstrdup(p->address);
    cr->host = xstrdup(p->host);
    cr->port = xstrdup(p->port);
    if (inet_pton(AF_INET, p->host, cr->ip) == 1)
        cr->ip_len = 4;
    else if (inet_pton(AF_INET6, p->host, cr->ip) == 1)
        cr->ip_len = 16;
    int r = tls.gnutls_certificate_allocate_credentials(&cr->x);
    if (r < 0) {
        jerr_set(e, ENOMEM, "GnuTLS: %s", tls.gnutls_strerror(r));
        free(cr->node), free(cr->address), free(cr->host), free(cr->port), free(cr);
        return NULL;
    }
    gnutls_datum_t ca, cert, key;
    datum_of(&ca, p->ca);
    datum_of(&cert, p->cert);
    datum_of(&key, p->key);
    /* the node's CA only: no gnutls_certificate_set_x509_system_trust, ever */
    r = tls.gnutls_certificate_set_x509_trust_mem(cr->x, &ca, GNUTLS_X509_FMT_PEM);
    if (r <= 0) {
        if (r == 0)
            jerr_input(e, "ca", "ca: holds no certificate GnuTLS can read (want PEM: -----BEGIN CERTIFICATE-----)");
        else
            jerr_input(e, "ca", "ca: GnuTLS cannot read it: %s", tls.gnutls_strerror(r));
        conn_tls_creds_free(cr);
        return NULL;
    }
    r = tls.gnutls_certificate_set_x509_key_mem(cr->x, &cert, &key, GNUTLS_X509_FMT_PEM);
    if (r < 0) {
        if (r == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
            jerr_input(e, "key", "key: it is not the private key of the certificate in cert");
        else if (r == GNUTLS_E_BASE64_DECODING_ERROR || r == GNUTLS_E_ASN1_DER_ERROR ||
                 r == GNUTLS_E_ASN1_TAG_ERROR || r == GNUTLS_E_PK_INVALID_PRIVKEY)
            jerr_input(e, "key", "cert or key: GnuTLS cannot read them: %s", tls.gnutls_strerror(r));
        else
            jerr_input(e, "cert", "cert and key: GnuTLS cannot use them: %s", tls.gnutls_strerror(r));
        conn_tls_creds_free(cr);
        return NULL;
    }
    tls.gnutls_certificate_set_verify_function(cr->x, verify_server);
    return cr;
}

conn_tls_creds *conn_tls_creds_open(const conn_tls_peer *p, jerr *e)
{
    conn_tls_creds *cr = conn_tls_creds_new(p, e);
    if (cr)
        return cr;
    char why[sizeof e->msg];
    snprintf(why, sizeof why, "%s", e->msg);
    if (e->field[0])   /* one of the node's fields: ca, cert, key */
        snprintf(e->msg, sizeof e->msg, "node %s: %s (rnx node show %s)", p->node, why, p->node);
    else
        snprintf(e->msg, sizeof e->msg, "node %s: %s", p->node, why);
    e->http = 0;
    return NULL;
}

void conn_tls_creds_free(conn_tls_creds *cr)
{
    if (!cr)
        return;
    if (cr->x)
        tls.gnutls_certificate_free_credentials(cr->x);
    free(cr->node);
    free(cr->address);
    free(cr->host);
    free(cr->port);
    free(cr);
}

/* ---- certificates -------------------------------------------------------------------------- */

/* The DNS names and IP addresses of crt's subjectAltName, "gpu-1, 10.0.0.5" ("" when none);
 * *dns: whether one is a DNS name. */
static void san_list(gnutls_x509_crt_t crt, char *out, size_t cap, bool *dns)
{
    size_t used = 0;
    out[0] = 0;
    *dns = false;
    for (unsigned i = 0; i < 64; i++) {
        char v[256], text[INET6_ADDRSTRLEN + 2];
        size_t len = sizeof v - 1;
        unsigned critical;
        int type = tls.gnutls_x509_crt_get_subject_alt_name(crt, i, v, &len, &critical);
        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        const char *name = NULL;
        if (type == GNUTLS_SAN_DNSNAME) {
            v[len < sizeof v ? len : sizeof v - 1] = 0;
            name = v;
            *dns = true;
        } else if (type == GNUTLS_SAN_IPADDRESS && (len == 4 || len == 16)) {
            name = inet_ntop(len == 4 ? AF_INET : AF_INET6, v, text, sizeof text);
        }
        if (!name)
            continue;
        int n = snprintf(out + used, cap - used, "%s%s", used ? ", " : "", name);
        if (n < 0 || (size_t)n >= cap - used) {
            snprintf(out + (used < cap - 5 ? used : cap - 5), 5, "...");
            break;
        }
        used += (size_t)n;
    }
}

static void dn_of(gnutls_x509_crt_t crt, bool issuer, char *out, size_t cap)
{
    gnutls_datum_t d = {0};
    int r = issuer ? tls.gnutls_x509_crt_get_issuer_dn3(crt, &d, 0) : tls.gnutls_x509_crt_get_dn3(crt, &d, 0);
    if (r < 0 || !d.data) {
        snprintf(out, cap, "(none)");
        return;
    }
    snprintf(out, cap, "%.*s", (int)d.size, (const char *)d.data);
    tls_free(d.data);
}

static void utc_text(time_t t, char *out, size_t cap)
{
    struct tm tm;
    if (t == (time_t)-1 || !gmtime_r(&t, &tm))
        snprintf(out, cap, "(unknown)");
    else
        strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The verify function of every session (gnutls_certificate_set_verify_function): runs when
 * the server's certificate has arrived, before rnx sends its own. 0 lets the handshake go on;
 * -1 ends it, with t->refusal saying why. */
static int verify_server(gnutls_session_t s)
{
    tls_conn *t = tls.gnutls_session_get_ptr(s);
    const conn_tls_creds *cr = t->cr;
    gnutls_typed_vdata_st vd[2] = {
        cr->ip_len ? (gnutls_typed_vdata_st){GNUTLS_DT_IP_ADDRESS, (unsigned char *)cr->ip, cr->ip_len}
                   : (gnutls_typed_vdata_st){GNUTLS_DT_DNS_HOSTNAME, (unsigned char *)cr->host, 0},
        {GNUTLS_DT_KEY_PURPOSE_OID, (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER, 0},
    };
    unsigned status = 0;
    int r = tls.gnutls_certificate_verify_peers(s, vd, 2, &status);
    if (r < 0) {
        snprintf(t->refusal, sizeof t->refusal, "the server's certificate cannot be checked: %s",
                 tls.gnutls_strerror(r));
        return -1;
    }
    unsigned n = 0;
    const gnutls_datum_t *peers = tls.gnutls_certificate_get_peers(s, &n);
    gnutls_x509_crt_t crt = NULL;
    if (!peers || !n || tls.gnutls_x509_crt_init(&crt) < 0 ||
        tls.gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER) < 0) {
        if (crt)
            tls.gnutls_x509_crt_deinit(crt);
        snprintf(t->refusal, sizeof t->refusal, "the server sent no certificate rnx can read");
        return -1;
    }
    char names[256], dn[300];
    bool has_dns;
    san_list(crt, names, sizeof names, &has_dns);
    /* A DNS name must be one of the DNSName SANs. GnuTLS falls back to the subject's CN when a
     * certificate has none (RFC 6125's legacy rule); rnx does not. */
    bool name_ok = !(status & GNUTLS_CERT_UNEXPECTED_OWNER) && (cr->ip_len || has_dns);
    if (status == 0 && name_ok) {
        tls.gnutls_x509_crt_deinit(crt);
        t->server_ok = true;
        return 0;
    }
    size_t used = 0;
    char *w = t->refusal;
    size_t cap = sizeof t->refusal;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(w + used, cap - used, __VA_ARGS__);                                      \
        if (k_ > 0)                                                                                \
            used = used + (size_t)k_ < cap ? used + (size_t)k_ : cap - 1;                          \
    } while (0)
    if (!name_ok) {
        if (names[0])
            ADD("the server's certificate does not name %s (it names %s)", cr->host, names);
        else {
            dn_of(crt, false, dn, sizeof dn);
            ADD("the server's certificate does not name %s (it names no DNS name or IP address in its "
                "subjectAltName; its subject is %s)", cr->host, dn);
        }
    }
    if (status & (GNUTLS_CERT_SIGNER_NOT_FOUND | GNUTLS_CERT_SIGNER_NOT_CA | GNUTLS_CERT_SIGNATURE_FAILURE)) {
        dn_of(crt, true, dn, sizeof dn);
        ADD("%sthe server's certificate is not signed by node %s's CA (the ca of its entry; the certificate's "
            "issuer is %s)", used ? "; " : "", cr->node, dn);
    }
    if (status & GNUTLS_CERT_EXPIRED) {
        char when[32];
        utc_text(tls.gnutls_x509_crt_get_expiration_time(crt), when, sizeof when);
        ADD("%sthe server's certificate expired at %s", used ? "; " : "", when);
    }
    if (status & GNUTLS_CERT_NOT_ACTIVATED) {
        char when[32];
        utc_text(tls.gnutls_x509_crt_get_activation_time(crt), when, sizeof when);
        ADD("%sthe server's certificate is not valid before %s", used ? "; " : "", when);
    }
    if (status & GNUTLS_CERT_PURPOSE_MISMATCH)
        ADD("%sthe server's certificate is not for a TLS server (its extended key usage lacks serverAuth, "
            "1.3.6.1.5.5.7.3.1)", used ? "; " : "");
    tls.gnutls_x509_crt_deinit(crt);
    if (status) {
        gnutls_datum_t text = {0};
        if (tls.gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0 && text.data) {
            int tl = (int)text.size;
            while (tl > 0 && strchr(" \t\r\n", text.data[tl - 1]))
                tl--;
            ADD("%s(GnuTLS: %.*s)", used ? " " : "", tl, (const char *)text.data);
            tls_free(text.data);
        } else {
            ADD("%s(GnuTLS status 0x%x)", used ? " " : "", status);
        }
    }
#undef ADD
    return -1;
}

int conn_tls_cert_info_of(const char *pem, conn_tls_cert_info *out, jerr *e)
{
    memset(out, 0, sizeof *out);
    if (tls_load(e) < 0)
        return -1;
    gnutls_datum_t d;
    datum_of(&d, pem);
    gnutls_x509_crt_t *list = NULL;
    unsigned n = 0;
    int r = tls.gnutls_x509_crt_list_import2(&list, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    if (r < 0 || n == 0)
        return jerr_set(e, EINVAL, "no certificate GnuTLS can read: %s",
                        r < 0 ? tls.gnutls_strerror(r) : "none in the PEM");
    dn_of(list[0], false, out->subject, sizeof out->subject);
    dn_of(list[0], true, out->issuer, sizeof out->issuer);
    unsigned char serial[64];
    size_t sl = sizeof serial;
    if (tls.gnutls_x509_crt_get_serial(list[0], serial, &sl) == 0)
        for (size_t i = 0; i < sl && 2 * i + 2 < sizeof out->serial; i++)
            sprintf(out->serial + 2 * i, "%02x", serial[i]);
    out->not_before = (int64_t)tls.gnutls_x509_crt_get_activation_time(list[0]);
    out->not_after = (int64_t)tls.gnutls_x509_crt_get_expiration_time(list[0]);
    out->count = n;
    for (unsigned i = 0; i < n; i++)
        tls.gnutls_x509_crt_deinit(list[i]);
    tls_free(list);
    return 0;
}

/* ---- the socket under the session ---------------------------------------------------------- */

static ssize_t push(gnutls_transport_ptr_t p, const void *data, size_t n)
{
    tls_conn *t = p;
    ssize_t w = send(t->base.fd, data, n, MSG_NOSIGNAL);
    if (w < 0) {
        t->last_errno = errno;
        tls.gnutls_transport_set_errno(t->s, errno);
    }
    return w;
}

static ssize_t pull(gnutls_transport_ptr_t p, void *data, size_t n)
{
    tls_conn *t = p;
    ssize_t r = recv(t->base.fd, data, n, 0);
    if (r < 0) {
        t->last_errno = errno;
        tls.gnutls_transport_set_errno(t->s, errno);
    }
    return r;
}

/* GnuTLS's wait for data during the handshake (its timeout): >0 ready, 0 timed out. */
static int pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
    tls_conn *t = p;
    struct pollfd pfd = {t->base.fd, POLLIN, 0};
    int r = poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
    if (r < 0) {
        t->last_errno = errno;
        tls.gnutls_transport_set_errno(t->s, errno);
    }
    return r;
}

/* What an alert the node sent means for the user. */
static void alert_why(tls_conn *t, const char *when)
{
    gnutls_alert_description_t a = tls.gnutls_alert_get(t->s);
    const char *name = tls.gnutls_alert_get_name(a);
    const char *hint = "";
    switch (a) {
    case GNUTLS_A_BAD_CERTIFICATE:
    case GNUTLS_A_UNSUPPORTED_CERTIFICATE:
    case GNUTLS_A_CERTIFICATE_REVOKED:
    case GNUTLS_A_CERTIFICATE_EXPIRED:
    case GNUTLS_A_CERTIFICATE_UNKNOWN:
    case GNUTLS_A_UNKNOWN_CA:
    case GNUTLS_A_ACCESS_DENIED:
    case GNUTLS_A_CERTIFICATE_REQUIRED:
        hint = ": it does not take rnx's client certificate (is it signed by the node's CA, not expired, not "
               "revoked? see rnx node show)";
        break;
    case GNUTLS_A_PROTOCOL_VERSION:
    case GNUTLS_A_HANDSHAKE_FAILURE:
    case GNUTLS_A_INSUFFICIENT_SECURITY:
        hint = ": rnx speaks TLS 1.3 only; is the address a joblet TLS listener?";
        break;
    default: break;
    }
    snprintf(t->base.why, sizeof t->base.why, "the node %s with the TLS alert '%s'%s", when,
             name ? name : "unknown", hint);
}

/* A send failed (r): what the node said before it closed, when it did. A TLS 1.3 node checks
 * rnx's certificate after rnx's side of the handshake is over, so its refusal (an alert) may come
 * while rnx sends its request; read without waiting, it says why. Else GnuTLS's words. */
static void why_send_failed(tls_conn *t, int r)
{
    if (r != GNUTLS_E_FATAL_ALERT_RECEIVED) {
        int fl = fcntl(t->base.fd, F_GETFL), was = t->last_errno;
        char b[256];
        if (fl >= 0 && fcntl(t->base.fd, F_SETFL, fl | O_NONBLOCK) == 0) {
            ssize_t n = tls.gnutls_record_recv(t->s, b, sizeof b);
            fcntl(t->base.fd, F_SETFL, fl);
            if (n == GNUTLS_E_FATAL_ALERT_RECEIVED)
                r = GNUTLS_E_FATAL_ALERT_RECEIVED;
        }
        t->last_errno = was; /* (the send's, not this read's EAGAIN) */
    }
    if (r == GNUTLS_E_FATAL_ALERT_RECEIVED)
        alert_why(t, "ended the session");
    else if (r != GNUTLS_E_PUSH_ERROR || !t->last_errno)
        snprintf(t->base.why, sizeof t->base.why, "TLS: %s", tls.gnutls_strerror(r));
}

/* ---- the connection's operations ----------------------------------------------------------- */

static ssize_t tls_read(conn *c, void *buf, size_t cap)
{
    tls_conn *t = (tls_conn *)c;
    for (;;) {
        ssize_t r = tls.gnutls_record_recv(t->s, buf, cap);
        if (r >= 0)
            return r;
        if (r == GNUTLS_E_PREMATURE_TERMINATION)
            return 0;   /* closed without close_notify: HTTP's own framing says whether all came */
        if (!tls.gnutls_error_is_fatal((int)r))
            continue;   /* interrupted, again, a warning alert */
        if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
            alert_why(t, "ended the session");
            errno = ECONNRESET;
        } else if (r == GNUTLS_E_PULL_ERROR) {
            errno = t->last_errno ? t->last_errno : EIO;
        } else {
            snprintf(c->why, sizeof c->why, "TLS: %s", tls.gnutls_strerror((int)r));
            errno = EIO;
        }
        return -1;
    }
}

static ssize_t tls_write(conn *c, const void *p, size_t n)
{
    tls_conn *t = (tls_conn *)c;
    for (;;) {
        ssize_t w = tls.gnutls_record_send(t->s, p, n);
        if (w >= 0)
            return w;
        if (w == GNUTLS_E_INTERRUPTED || w == GNUTLS_E_AGAIN)
            continue;
        why_send_failed(t, (int)w);
        errno = w == GNUTLS_E_PUSH_ERROR && t->last_errno ? t->last_errno : EIO;
        return -1;
    }
}

static size_t tls_pending(conn *c) { return tls.gnutls_record_check_pending(((tls_conn *)c)->s); }

static int tls_shutdown_write(conn *c)
{
    tls_conn *t = (tls_conn *)c;
    int r;
    do
        r = tls.gnutls_bye(t->s, GNUTLS_SHUT_WR);   /* close_notify: our side is done */
    while (r == GNUTLS_E_INTERRUPTED || r == GNUTLS_E_AGAIN);
    return shutdown(c->fd, SHUT_WR);
}

static void tls_cork(conn *c) { tls.gnutls_record_cork(((tls_conn *)c)->s); }

static int tls_uncork(conn *c)
{
    tls_conn *t = (tls_conn *)c;
    for (;;) {
        int r = tls.gnutls_record_uncork(t->s, GNUTLS_RECORD_WAIT);
        if (r >= 0)
            return 0;
        if (r == GNUTLS_E_INTERRUPTED || r == GNUTLS_E_AGAIN)
            continue;
        why_send_failed(t, r);
        errno = r == GNUTLS_E_PUSH_ERROR && t->last_errno ? t->last_errno : EIO;
        return -1;
    }
}

static void tls_close(conn *c)
{
    tls_conn *t = (tls_conn *)c;
    if (t->s) {
        /* a close_notify if it goes out at once; a peer that stopped reading must not hold rnx */
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        tls.gnutls_bye(t->s, GNUTLS_SHUT_WR);
        tls.gnutls_deinit(t->s);
    }
    if (c->fd >= 0)
        close(c->fd);
    free(t);
}

static const conn_ops tls_ops = {tls_read, tls_write, tls_pending, tls_shutdown_write, tls_cork, tls_uncork, tls_close, NULL};

/* ---- dialing ------------------------------------------------------------------------------- */

/* A TCP connection to one of the host's addresses before deadline (monotonic ms); -1 with e. */
static int tcp_connect(const conn_tls_creds *cr, int64_t deadline, jerr *e)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | (cr->ip_len ? AI_NUMERICHOST : AI_ADDRCONFIG)};
    struct addrinfo *res = NULL;
    int r = getaddrinfo(cr->host, cr->port, &hints, &res);
    if (r != 0) {
        jerr_set(e, EHOSTUNREACH, "node %s (%s): cannot resolve %s: %s", cr->node, cr->address, cr->host,
                 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
        return -1;
    }
    int fd = -1, err = ETIMEDOUT;
    char tried[INET6_ADDRSTRLEN + 8] = "";
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        char ip[INET6_ADDRSTRLEN] = "?";
        const void *a = ai->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                                                 : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
        inet_ntop(ai->ai_family, a, ip, sizeof ip);
        snprintf(tried, sizeof tried, "%s", ip);
        int s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0) {
            err = errno;
            continue;
        }
        if (connect(s, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
            err = errno;
            close(s);
            continue;
        }
        struct pollfd pfd = {s, POLLOUT, 0};
        int64_t left = deadline - mono_ms();
        int pr;
        while ((pr = poll(&pfd, 1, left > 0 ? (int)left : 0)) < 0 && errno == EINTR)
            left = deadline - mono_ms();
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (pr <= 0) {
            err = pr == 0 ? ETIMEDOUT : errno;
            close(s);
            break;   /* the time is up: no other address gets any */
        }
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
            err = soerr ? soerr : errno;
            close(s);
            continue;
        }
        fd = s;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        jerr_set(e, err, "node %s (%s): cannot connect to %s port %s: %s", cr->node, cr->address,
                 tried[0] ? tried : cr->host, cr->port,
                 err == ETIMEDOUT ? "no answer within 10 s" : strerror(err));
        return -1;
    }
    int one = 1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);   /* a request's head and body go at once */
    return fd;
}

conn *conn_tls_dial(const conn_tls_creds *cr, jerr *e)
{
    e->http = 0;
    e->field[0] = 0;
    int64_t deadline = mono_ms() + CONN_TLS_TIMEOUT_MS;
    int fd = tcp_connect(cr, deadline, e);
    if (fd < 0)
        return NULL;
    tls_conn *t = xcalloc(1, sizeof *t);
    t->base.ops = &tls_ops;
    t->base.fd = fd;
    t->cr = cr;
    const char *errpos = NULL;
    /* no session tickets: nothing to resume from, nothing secret kept (see the top) */
    int r = tls.gnutls_init(&t->s, GNUTLS_CLIENT | GNUTLS_NO_TICKETS);
    if (r < 0) {
        t->s = NULL;
        jerr_set(e, EIO, "node %s (%s): GnuTLS: %s", cr->node, cr->address, tls.gnutls_strerror(r));
        tls_close(&t->base);
        return NULL;
    }
    if ((r = tls.gnutls_priority_set_direct(t->s, TLS_PRIORITY, &errpos)) < 0 ||
        (r = tls.gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, cr->x)) < 0 ||
        (!cr->ip_len && (r = tls.gnutls_server_name_set(t->s, GNUTLS_NAME_DNS, cr->host, strlen(cr->host))) < 0)) {
        jerr_set(e, EIO, "node %s (%s): GnuTLS cannot set up the session (%s): %s", cr->node, cr->address,
                 TLS_PRIORITY, tls.gnutls_strerror(r));
        tls_close(&t->base);
        return NULL;
    }
    tls.gnutls_session_set_ptr(t->s, t);
    tls.gnutls_transport_set_ptr(t->s, t);
    tls.gnutls_transport_set_push_function(t->s, push);
    tls.gnutls_transport_set_pull_function(t->s, pull);
    tls.gnutls_transport_set_pull_timeout_function(t->s, pull_timeout);
    int64_t left = deadline - mono_ms();
    tls.gnutls_handshake_set_timeout(t->s, left > 1 ? (unsigned)left : 1);
    do
        r = tls.gnutls_handshake(t->s);
    while (r < 0 && !tls.gnutls_error_is_fatal(r));
    if (r >= 0)
        return &t->base;
    if (t->refusal[0])
        jerr_set(e, EPERM, "node %s (%s): %s: refusing to talk to it", cr->node, cr->address, t->refusal);
    else if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
        alert_why(t, "refused the TLS handshake");
        jerr_set(e, ECONNREFUSED, "node %s (%s): %s", cr->node, cr->address, t->base.why);
    } else if (r == GNUTLS_E_TIMEDOUT)
        jerr_set(e, ETIMEDOUT, "node %s (%s): the TLS handshake did not finish within 10 s", cr->node, cr->address);
    else if (r == GNUTLS_E_UNSUPPORTED_VERSION_PACKET || r == GNUTLS_E_NO_PRIORITIES_WERE_SET ||
             r == GNUTLS_E_INSUFFICIENT_CREDENTIALS || r == GNUTLS_E_NO_CIPHER_SUITES)
        jerr_set(e, EPROTO, "node %s (%s): the TLS handshake failed: %s (rnx speaks TLS 1.3 only; is the address "
                 "a joblet TLS listener?)", cr->node, cr->address, tls.gnutls_strerror(r));
    else if ((r == GNUTLS_E_PULL_ERROR || r == GNUTLS_E_PUSH_ERROR) && t->last_errno && t->server_ok)
        /* the node closed it once it had rnx's certificate (its alert, if any, is lost with the
         * connection: TLS 1.3 encrypts it) */
        jerr_set(e, t->last_errno, "node %s (%s): the node closed the connection during the TLS handshake, once it "
                 "had rnx's client certificate (%s): it probably does not take rnx's client certificate (is it "
                 "signed by the node's CA, not expired, not revoked? see rnx node show)", cr->node, cr->address,
                 strerror(t->last_errno));
    else if ((r == GNUTLS_E_PULL_ERROR || r == GNUTLS_E_PUSH_ERROR) && t->last_errno)
        jerr_set(e, t->last_errno, "node %s (%s): the connection broke during the TLS handshake: %s", cr->node,
                 cr->address, strerror(t->last_errno));
    else
        jerr_set(e, EPROTO, "node %s (%s): the TLS handshake failed: %s%s", cr->node, cr->address,
                 tls.gnutls_strerror(r),
                 r == GNUTLS_E_UNEXPECTED_PACKET_LENGTH || r == GNUTLS_E_PREMATURE_TERMINATION
                     ? " (is the address a joblet TLS listener, speaking TLS 1.3?)" : "");
    tls_close(&t->base);
    return NULL;
}
