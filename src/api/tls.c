/* The TLS listener's certificates and the check of a client's (tls.h). */
#include "tls.h"
#include "tlslib.h"

#include <ctype.h>
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../common/parse.h"
#include "../common/util.h"

#define CHAIN_MAX 8

/* One reading of the files. The previous one is kept until the next reload: a handshake that
 * began with it may still use its certificate and key. */
typedef struct tls_set {
    char *ca_pem;
    gnutls_x509_trust_list_t trust;
    gnutls_pcert_st pcert[CHAIN_MAX];
    unsigned npcert;
    gnutls_privkey_t key;
    char **revoked;               /* sorted serials, lowercase hex without leading zero bytes */
    size_t nrevoked;
} tls_set;

static tls_set *cur, *prev;
static char pki_dir[512];

static void set_free(tls_set *t)
{
    if (!t)
        return;
    free(t->ca_pem);
    if (t->trust)
        gnutls_x509_trust_list_deinit(t->trust, 1);
    for (unsigned i = 0; i < t->npcert; i++)
        gnutls_pcert_deinit(&t->pcert[i]);
    if (t->key)
        gnutls_privkey_deinit(t->key);
    for (size_t i = 0; i < t->nrevoked; i++)
        free(t->revoked[i]);
    free(t->revoked);
    free(t);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* revoked.txt: "<serial> [anything]" per line, '#' comments, blank lines; missing: none. */
static int read_revoked(tls_set *t, const char *path, jerr *e)
{
    char *text = read_file(path, NULL);
    if (!text)
        return errno == ENOENT ? 0 : jerr_sys(e, "read %s", path);
    int line = 0, rc = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        line++;
        while (*l == ' ' || *l == '\t')
            l++;
        if (!*l || *l == '#' || *l == '\r')
            continue;
        size_t n = strcspn(l, " \t\r");
        char s[64], typed[64];
        snprintf(typed, sizeof typed, "%.*s", (int)(n < 63 ? n : 63), l);
        if (n > 62 || parse_serial(typed, s, sizeof s) < 0) {
            rc = jerr_set(e, EINVAL, "%s:%d: '%.*s' is not a serial: write one hexadecimal serial per line "
                          "(joblet cert revoke writes them)", path, line, (int)(n > 60 ? 60 : n), l);
            break;
        }
        t->revoked = xrealloc(t->revoked, (t->nrevoked + 1) * sizeof *t->revoked);
        t->revoked[t->nrevoked++] = xstrdup(s);
    }
    free(text);
    if (t->nrevoked)
        qsort(t->revoked, t->nrevoked, sizeof *t->revoked, cmp_str);
    return rc;
}

static int gnutls_fail(jerr *e, const char *path, const char *what, int rc)
{
    return jerr_set(e, EINVAL, "%s: %s: %s", path, what, gnutls_strerror(rc));
}

/* The key signs and the certificate's key verifies: they belong together. */
static int key_matches(tls_set *t, const char *path, jerr *e)
{
    gnutls_pubkey_t pub = t->pcert[0].pubkey;
    int pk = gnutls_pubkey_get_pk_algorithm(pub, NULL);
    gnutls_datum_t data = {(unsigned char *)"joblet", 6}, sig = {0};
    int rc = gnutls_privkey_sign_data(t->key, GNUTLS_DIG_SHA256, 0, &data, &sig);
    if (rc >= 0)
        rc = gnutls_pubkey_verify_data2(pub, gnutls_pk_to_sign((gnutls_pk_algorithm_t)pk, GNUTLS_DIG_SHA256), 0,
                                        &data, &sig);
    gnutls_free(sig.data);
    if (rc < 0)
        return jerr_set(e, EINVAL, "%s is not the key of server.pem's certificate (%s)", path, gnutls_strerror(rc));
    return 0;
}

static tls_set *set_read(const char *dir, jerr *e)
{
    tls_set *t = xcalloc(1, sizeof *t);
    char path[600];
    size_t len;
    int rc;
    snprintf(path, sizeof path, "%s/ca.pem", dir);
    if (!(t->ca_pem = read_file(path, &len))) {
        jerr_sys(e, "read %s (joblet cert init makes it)", path);
        goto fail;
    }
    gnutls_datum_t d = {(unsigned char *)t->ca_pem, (unsigned)len};
    if ((rc = gnutls_x509_trust_list_init(&t->trust, 0)) < 0 ||
        (rc = gnutls_x509_trust_list_add_trust_mem(t->trust, &d, NULL, GNUTLS_X509_FMT_PEM, 0, 0)) < 0) {
        gnutls_fail(e, path, "not a PEM certificate", rc);
        goto fail;
    }
    if (rc == 0) {
        jerr_set(e, EINVAL, "%s holds no certificate", path);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/server.pem", dir);
    char *pem = read_file(path, &len);
    if (!pem) {
        jerr_sys(e, "read %s (joblet cert server makes it)", path);
        goto fail;
    }
    d = (gnutls_datum_t){(unsigned char *)pem, (unsigned)len};
    t->npcert = CHAIN_MAX;
    rc = gnutls_pcert_list_import_x509_raw(t->pcert, &t->npcert, &d, GNUTLS_X509_FMT_PEM, 0);
    free(pem);
    if (rc < 0 || !t->npcert) {
        t->npcert = 0;
        gnutls_fail(e, path, "not a PEM certificate", rc < 0 ? rc : GNUTLS_E_BASE64_DECODING_ERROR);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/server-key.pem", dir);
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        log_warn("%s can be read by others than its owner (mode %04o): chmod 600 it", path, st.st_mode & 07777);
    char *key = read_file(path, &len);
    if (!key) {
        jerr_sys(e, "read %s (joblet cert server makes it)", path);
        goto fail;
    }
    d = (gnutls_datum_t){(unsigned char *)key, (unsigned)len};
    rc = gnutls_privkey_init(&t->key);
    if (rc >= 0)
        rc = gnutls_privkey_import_x509_raw(t->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    explicit_bzero(key, len);
    free(key);
    if (rc < 0) {
        gnutls_fail(e, path, "not a PEM private key", rc);
        goto fail;
    }
    if (key_matches(t, path, e) < 0)
        goto fail;
    snprintf(path, sizeof path, "%s/revoked.txt", dir);
    if (read_revoked(t, path, e) < 0)
        goto fail;
    return t;
fail:
    set_free(t);
    return NULL;
}

int tls_load(const char *dir, jerr *e)
{
    if (tlslib_init(e) < 0)
        return -1;
    snprintf(pki_dir, sizeof pki_dir, "%s", dir);
    tls_set *t = set_read(dir, e);
    if (!t)
        return -1;
    set_free(prev);
    prev = cur;
    cur = t;
    return 0;
}

int tls_reload(jerr *e)
{
    if (!cur)
        return 0;
    tls_set *t = set_read(pki_dir, e);
    if (!t)
        return -1;
    set_free(prev);
    prev = cur;
    cur = t;
    log_info("remote: certificates read again from %s (%zu revoked)", pki_dir, t->nrevoked);
    return 0;
}

void tls_free(void)
{
    set_free(prev);
    set_free(cur);
    prev = cur = NULL;
}

const char *tls_ca_pem(void) { return cur ? cur->ca_pem : NULL; }

int tls_cert_callback(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                      unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    if (!cur)
        return -1;
    *pcert = cur->pcert;
    *pcert_length = cur->npcert;
    *pkey = cur->key;
    return 0;
}

bool tls_revoked(const char *serial)
{
    if (!cur || !cur->nrevoked)
        return false;
    return bsearch(&serial, cur->revoked, cur->nrevoked, sizeof *cur->revoked, cmp_str) != NULL;
}

/* Why verification failed, in words a person acts on, then GnuTLS's own. */
static void why_refused(unsigned status, gnutls_x509_crt_t crt, char *out, size_t len)
{
    char when[64] = "";
    const char *why = "it does not verify";
    if (status & GNUTLS_CERT_EXPIRED) {
        time_t t = gnutls_x509_crt_get_expiration_time(crt);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, " on %Y-%m-%dT%H:%M:%SZ", &tm);
        why = "it expired";
    } else if (status & GNUTLS_CERT_NOT_ACTIVATED)
        why = "it is not valid yet";
    else if (status & (GNUTLS_CERT_SIGNER_NOT_FOUND | GNUTLS_CERT_SIGNER_NOT_CA))
        why = "this node's CA did not sign it (remote.pki_dir's ca.pem)";
    else if (status & GNUTLS_CERT_PURPOSE_MISMATCH)
        why = "it is not made for a client (a server's certificate cannot be used to log in)";
    else if (status & GNUTLS_CERT_SIGNATURE_FAILURE)
        why = "its signature does not verify";
    gnutls_datum_t txt = {0};
    gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &txt, 0);
    snprintf(out, len, "%s%s (%s)", why, when, txt.data ? (const char *)txt.data : "?");
    gnutls_free(txt.data);
}

/* The first value of a DN attribute; false when absent or too long. */
static bool dn_get(gnutls_x509_crt_t crt, const char *oid, char *out, size_t len)
{
    size_t n = len;
    if (gnutls_x509_crt_get_dn_by_oid(crt, oid, 0, 0, out, &n) < 0)
        return false;
    out[len - 1] = 0;
    return true;
}

/* Anyone may put anything in a certificate: what is not printable ASCII never reaches a
 * message, the audit trail or an admin's terminal as it is. */
static void printable(char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e)
            *s = '?';
}

struct tls_peer {
    unsigned n;
    gnutls_datum_t der[CHAIN_MAX];
};

tls_peer *tls_peer_keep(gnutls_session_t s)
{
    unsigned n = 0;
    const gnutls_datum_t *raw = gnutls_certificate_get_peers(s, &n);
    if (!raw || !n)
        return NULL;
    tls_peer *p = xcalloc(1, sizeof *p);
    p->n = n > CHAIN_MAX ? CHAIN_MAX : n;
    for (unsigned i = 0; i < p->n; i++) {
        p->der[i].data = xmalloc(raw[i].size ? raw[i].size : 1);
        memcpy(p->der[i].data, raw[i].data, raw[i].size);
        p->der[i].size = raw[i].size;
    }
    return p;
}

void tls_peer_free(tls_peer *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++)
        free(p->der[i].data);
    free(p);
}

static int verify_chain(const gnutls_datum_t *raw, unsigned n, caller *who, jerr *e);

int64_t tls_peer_not_after(const tls_peer *p)
{
    gnutls_x509_crt_t crt;
    if (!p || !p->n || gnutls_x509_crt_init(&crt) < 0)
        return 0;
    time_t t = gnutls_x509_crt_import(crt, &p->der[0], GNUTLS_X509_FMT_DER) < 0 ? (time_t)-1
                                                                               : gnutls_x509_crt_get_expiration_time(crt);
    gnutls_x509_crt_deinit(crt);
    return t == (time_t)-1 ? 0 : (int64_t)t;
}

int tls_peer_check(const tls_peer *p, caller *who, jerr *e) { return verify_chain(p->der, p->n, who, e); }

int tls_verify(gnutls_session_t s, caller *who, jerr *e)
{
    unsigned n = 0;
    const gnutls_datum_t *raw = gnutls_certificate_get_peers(s, &n);
    if (!raw || !n)
        return jerr_http(e, 403, "no client certificate: this port takes only clients with a certificate of "
                                 "this node's CA (joblet cert client; docs/remote.md)");
    return verify_chain(raw, n, who, e);
}

/* The checks of tls_verify on a chain of certificates (DER), the client's first. */
static int verify_chain(const gnutls_datum_t *raw, unsigned n, caller *who, jerr *e)
{
    if (!cur)
        return jerr_http(e, 403, "joblet has no certificates loaded");
    if (n > CHAIN_MAX)
        n = CHAIN_MAX;
    gnutls_x509_crt_t chain[CHAIN_MAX];
    unsigned have = 0;
    int rc = 0, ret = -1;
    for (; have < n; have++) {
        if ((rc = gnutls_x509_crt_init(&chain[have])) < 0)
            break;
        if ((rc = gnutls_x509_crt_import(chain[have], &raw[have], GNUTLS_X509_FMT_DER)) < 0) {
            gnutls_x509_crt_deinit(chain[have]);
            break;
        }
    }
    if (rc < 0 || !have) {
        jerr_http(e, 403, "the client certificate cannot be read: %s", gnutls_strerror(rc));
        goto out;
    }
    /* signed by the CA, in its validity period, for a TLS client: the status word says */
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (void *)GNUTLS_KP_TLS_WWW_CLIENT};
    unsigned status = 0;
    rc = gnutls_x509_trust_list_verify_crt2(cur->trust, chain, have, &purpose, 1, 0, &status, NULL);
    char cn[65] = "", ou[32] = "", why[400];
    dn_get(chain[0], GNUTLS_OID_X520_COMMON_NAME, cn, sizeof cn);
    printable(cn);
    if (rc < 0 || status) {
        why_refused(rc < 0 ? GNUTLS_CERT_INVALID : status, chain[0], why, sizeof why);
        jerr_http(e, 403, "the client certificate%s%s is refused: %s", cn[0] ? " of " : "", cn, why);
        goto out;
    }
    unsigned char sb[40];
    size_t sn = sizeof sb;
    if (gnutls_x509_crt_get_serial(chain[0], sb, &sn) < 0)
        sn = 0;
    parse_serial_bytes(sb, sn, who->serial, sizeof who->serial);
    if (tls_revoked(who->serial)) {
        jerr_http(e, 403, "the client certificate of %s (serial %s) is revoked", cn, who->serial);
        goto out;
    }
    if (!parse_user_name_ok(cn, sizeof who->person)) {
        jerr_http(e, 403, "the client certificate names no person joblet accepts (CN '%s': letters, digits, '.', "
                          "'_', '-')", cn);
        goto out;
    }
    int role = dn_get(chain[0], GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME, ou, sizeof ou) ? authz_role_parse(ou) : -1;
    printable(ou);
    if (role < 0) {
        jerr_http(e, 403, "the client certificate of %s names no role (OU '%s'): reader, developer, maintainer "
                          "or admin", cn, ou);
        goto out;
    }
    snprintf(who->person, sizeof who->person, "%s", cn);
    who->role = (enum authz_role)role;
    ret = 0;
out:
    for (unsigned i = 0; i < have; i++)
        gnutls_x509_crt_deinit(chain[i]);
    return ret;
}

/* Set while joblet itself reads a taken session (tls_upgraded_recv): the loop is one thread, so
 * a read that finds it clear is libmicrohttpd's relay's, and gets nothing (EAGAIN). */
static bool upgraded_reading;

static ssize_t upgraded_pull(gnutls_transport_ptr_t p, void *buf, size_t n)
{
    if (!upgraded_reading) {
        errno = EAGAIN;
        return -1;
    }
    return recv((int)(intptr_t)p, buf, n, 0);
}

static int upgraded_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
    return upgraded_reading ? 1 : 0; /* (record reads wait for nothing: never called for them) */
}

void tls_upgraded_take(gnutls_session_t s)
{
    /* (libmicrohttpd gave the session the socket with gnutls_transport_set_int: the pointer is
     * the descriptor, and the writes stay GnuTLS's own) */
    gnutls_transport_set_pull_function(s, upgraded_pull);
    gnutls_transport_set_pull_timeout_function(s, upgraded_pull_timeout);
}

/* GnuTLS's answer as recv's or send's. */
static ssize_t upgraded_result(ssize_t rc)
{
    if (rc >= 0)
        return rc;
    if (rc == GNUTLS_E_AGAIN)
        errno = EAGAIN;
    else if (rc == GNUTLS_E_INTERRUPTED || !gnutls_error_is_fatal((int)rc))
        errno = EINTR; /* a warning alert, a post-handshake message: nothing for us, read on */
    else
        errno = EPIPE;
    return -1;
}

ssize_t tls_upgraded_recv(gnutls_session_t s, void *buf, size_t n)
{
    upgraded_reading = true;
    ssize_t rc = gnutls_record_recv(s, buf, n);
    upgraded_reading = false;
    return upgraded_result(rc);
}

ssize_t tls_upgraded_send(gnutls_session_t s, const void *buf, size_t n)
{
    /* (after GNUTLS_E_AGAIN GnuTLS sends what it holds of the record it made, and counts the
     * bytes of the call that made it: the caller's buffer starts with them) */
    return upgraded_result(gnutls_record_send(s, buf, n));
}

int tls_upgraded_bye(gnutls_session_t s) { return (int)upgraded_result(gnutls_bye(s, GNUTLS_SHUT_WR)); }
