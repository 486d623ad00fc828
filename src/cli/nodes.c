/* Node files and nodes.yml (nodes.h): libfyaml's document API reads them, every value is
 * checked here, and nodes.yml is written back by hand (every scalar double-quoted, every PEM a
 * literal block), so that what rnx writes is exactly what it reads. */
#include "nodes.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "../common/parse.h"
#include "../common/util.h"

static const char *const roles[] = {"reader", "developer", "operator", "maintainer", "admin"};

/* A value as it may be quoted in a message: at most 60 bytes, controls as '?'. */
static void shown(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 4 < cap && i < 60; i++)
        out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    if (s[i] && i + 4 < cap)
        memcpy(out + i, "...", 3), i += 3;
    out[i] = 0;
}

int nodes_name_check(const char *name, jerr *e)
{
    char v[80];
    size_t l = strlen(name);
    shown(name, v, sizeof v);
    if (l == 0 || l > NODES_NAME_MAX)
        return jerr_input(e, "name", "name: '%s' must be 1 to %d characters of A-Z a-z 0-9 . _ -", v, NODES_NAME_MAX);
    for (size_t i = 0; i < l; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
            return jerr_input(e, "name", "name: '%s' has '%c'; a node's name is 1 to %d characters of A-Z a-z 0-9 . _ -", v,
                       isprint((unsigned char)name[i]) ? name[i] : '?', NODES_NAME_MAX);
    if (!strcmp(name, NODES_LOCAL))
        return jerr_input(e, "name", "name: '%s' means the local socket (rnx node use %s); give the node another name",
                   NODES_LOCAL, NODES_LOCAL);
    return 0;
}

/* ---- address ------------------------------------------------------------------------------- */

static bool dns_name_ok(const char *h)
{
    size_t l = strlen(h), label = 0;
    if (l == 0 || l > 253)
        return false;
    for (size_t i = 0; i <= l; i++) {
        char ch = h[i];
        if (ch == '.' || ch == 0) {
            if (label == 0 || label > 63 || h[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!isalnum((unsigned char)ch) && ch != '-')
            return false;
        if (label == 0 && ch == '-')
            return false;
        label++;
    }
    return true;
}

int nodes_address_parse(const char *address, char **host, char **port, jerr *e)
{
    char v[80];
    const char *accepted = "HOST:PORT: a DNS name, an IPv4 address or an IPv6 address in brackets, and a port "
                           "from 1 to 65535 (gpu-1.example.com:7443, 10.0.0.7:7443, [fd00::7]:7443)";
    shown(address, v, sizeof v);
    *host = *port = NULL;
    char h[256];
    const char *p;
    if (address[0] == '[') {
        const char *close = strchr(address, ']');
        if (!close || close[1] != ':')
            return jerr_input(e, "address", "address: '%s' is not %s", v, accepted);
        size_t hl = (size_t)(close - address - 1);
        if (hl == 0 || hl >= sizeof h)
            return jerr_input(e, "address", "address: '%s' is not %s", v, accepted);
        memcpy(h, address + 1, hl);
        h[hl] = 0;
        struct in6_addr a6;
        if (strchr(h, '%'))
            return jerr_input(e, "address", "address: '%s' has a zone (%%...); rnx takes an IPv6 address without one", v);
        if (inet_pton(AF_INET6, h, &a6) != 1)
            return jerr_input(e, "address", "address: '%s': '%s' is not an IPv6 address", v, h);
        p = close + 2;
    } else {
        const char *colon = strrchr(address, ':');
        if (!colon)
            return jerr_input(e, "address", "address: '%s' has no port; write %s", v, accepted);
        if (memchr(address, ':', (size_t)(colon - address)))
            return jerr_input(e, "address", "address: '%s': write an IPv6 address in brackets, as [::1]:7443", v);
        size_t hl = (size_t)(colon - address);
        if (hl == 0 || hl >= sizeof h)
            return jerr_input(e, "address", "address: '%s' is not %s", v, accepted);
        memcpy(h, address, hl);
        h[hl] = 0;
        bool numeric = strspn(h, "0123456789.") == hl;
        struct in_addr a4;
        if (numeric && inet_pton(AF_INET, h, &a4) != 1)
            return jerr_input(e, "address", "address: '%s': '%s' is not an IPv4 address (four numbers 0 to 255)", v, h);
        if (!numeric && !dns_name_ok(h))
            return jerr_input(e, "address", "address: '%s': '%s' is not a DNS name (labels of letters, digits and '-', "
                                     "separated by dots); write %s", v, h, accepted);
        p = colon + 1;
    }
    size_t pl = strlen(p);
    unsigned long n = 0;
    if (pl == 0 || pl > 5 || strspn(p, "0123456789") != pl || (n = strtoul(p, NULL, 10)) < 1 || n > 65535)
        return jerr_input(e, "address", "address: '%s': the port must be a number from 1 to 65535", v);
    *host = xstrdup(h);
    *port = xstrdup(p);
    return 0;
}

/* ---- PEM ----------------------------------------------------------------------------------- */

/* Checks a PEM field: only certificates (key false), or one unencrypted private key (key
 * true), nothing but blanks between the blocks. */
static int pem_check(const char *field, const char *s, bool key, jerr *e)
{
    size_t len = strlen(s), blocks = 0;
    if (len > NODES_PEM_MAX)
        return jerr_input(e, field, "%s: longer than %u KiB; a PEM %s is a few KiB", field, NODES_PEM_MAX >> 10,
                   key ? "key" : "certificate");
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\r') || (unsigned char)s[i] >= 0x7f)
            return jerr_input(e, field, "%s: has a byte 0x%02x; PEM is ASCII text", field, (unsigned char)s[i]);
    const char *want = key ? "a PEM private key (-----BEGIN PRIVATE KEY-----)"
                           : "PEM certificates (-----BEGIN CERTIFICATE-----)";
    const char *p = s;
    for (;;) {
        p += strspn(p, " \t\r\n");
        if (!*p)
            break;
        if (strncmp(p, "-----BEGIN ", 11))
            return jerr_input(e, field, "%s: has text outside its PEM blocks; it takes %s and nothing else", field, want);
        const char *label = p + 11, *dash = strstr(label, "-----");
        if (!dash || dash - label > 40 || memchr(label, '\n', (size_t)(dash - label)))
            return jerr_input(e, field, "%s: a -----BEGIN line is cut short; it takes %s", field, want);
        char lab[48], end[80];
        snprintf(lab, sizeof lab, "%.*s", (int)(dash - label), label);
        bool is_cert = !strcmp(lab, "CERTIFICATE");
        bool is_key = !strcmp(lab, "PRIVATE KEY") || !strcmp(lab, "EC PRIVATE KEY") || !strcmp(lab, "RSA PRIVATE KEY");
        if (key && !strcmp(lab, "ENCRYPTED PRIVATE KEY"))
            return jerr_input(e, field, "%s: the key is encrypted; rnx takes an unencrypted key (%s)", field, want);
        if (!key && strstr(lab, "PRIVATE KEY"))
            return jerr_input(e, field, "%s: holds a private key; it takes %s only (the key goes in key)", field, want);
        if (key ? !is_key : !is_cert)
            return jerr_input(e, field, "%s: holds a PEM '%s' block; it takes %s", field, lab, want);
        snprintf(end, sizeof end, "-----END %s-----", lab);
        const char *body = dash + 5, *stop = strstr(body, end);
        if (!stop)
            return jerr_input(e, field, "%s: its '%s' block has no %s line", field, lab, end);
        if (memchr(body, ':', (size_t)(stop - body)))
            return jerr_input(e, field, "%s: its '%s' block has PEM headers (an encrypted key?); it takes %s", field, lab,
                       want);
        for (const char *q = body; q < stop; q++) {
            if (!isalnum((unsigned char)*q) && !strchr("+/= \t\r\n", *q))
                return jerr_input(e, field, "%s: its '%s' block is not base64 ('%c'); it takes %s", field, lab, *q, want);
        }
        blocks++;
        p = stop + strlen(end);
    }
    if (!blocks)
        return jerr_input(e, field, "%s: is empty; it takes %s", field, want);
    if (key && blocks > 1)
        return jerr_input(e, field, "%s: holds %zu keys; it takes one", field, blocks);
    return 0;
}

/* The PEM as stored: '\r' dropped, surrounding blanks trimmed, one newline at the end. */
static char *pem_tidy(const char *s)
{
    size_t l = strlen(s);
    char *out = xmalloc(l + 2), *o = out;
    s += strspn(s, " \t\r\n");
    for (; *s; s++)
        if (*s != '\r')
            *o++ = *s;
    while (o > out && strchr(" \t\n", o[-1]))
        o--;
    *o++ = '\n';
    *o = 0;
    return out;
}

static int socket_check(const char *field, const char *path, jerr *e)
{
    struct sockaddr_un sa;
    char v[80];
    shown(path, v, sizeof v);
    if (path[0] != '/')
        return jerr_input(e, field, "%s: '%s' is not an absolute path (the daemon's unix socket, e.g. /run/joblet/joblet.sock)",
                   field, v);
    if (strlen(path) >= sizeof sa.sun_path)
        return jerr_input(e, field, "%s: '%s' is too long for a unix socket path (at most %zu bytes)", field, v,
                   sizeof sa.sun_path - 1);
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return jerr_input(e, field, "%s: '%s' has a control character", field, v);
    return 0;
}

/* ---- YAML ---------------------------------------------------------------------------------- */

static void quiet_output(struct fy_diag *diag, void *user, const char *buf, size_t len) {}

/* Parses text into *doc (NULL when it holds no document: empty, or comments only); -1 with e
 * saying where it is not YAML. */
static int yaml_doc(const char *text, size_t len, struct fy_document **doc, jerr *e)
{
    *doc = NULL;
    if (!len)
        return 0;
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.output_fn = quiet_output;
    dc.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dc);
    if (!diag)
        abort();
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_JSON_NONE, .diag = diag};
    *doc = fy_document_build_from_string(&cfg, text, len);
    int rc = 0;
    void *it = NULL;
    struct fy_diag_error *de;
    while ((de = fy_diag_errors_iterate(diag, &it)))
        if (de->type >= FYET_ERROR) {
            jerr_input(e, "", "line %d, column %d: %s", de->line + 1, de->column + 1, de->msg ? de->msg : "not valid YAML");
            rc = -1;
            break;
        }
    if (rc < 0) {
        fy_document_destroy(*doc);
        *doc = NULL;
    }
    fy_diag_destroy(diag);
    return rc;
}

/* A scalar's text (allocated), NULL with e when node is no scalar. An empty value is "". */
static char *scalar(struct fy_node *n, const char *field, jerr *e)
{
    if (!n)
        return xstrdup("");
    if (!fy_node_is_scalar(n) || fy_node_is_alias(n)) {
        jerr_input(e, field, "%s: must be a string, not a %s", field,
            fy_node_is_mapping(n) ? "mapping" : fy_node_is_sequence(n) ? "list" : "reference (*alias)");
        return NULL;
    }
    size_t l = 0;
    const char *s = fy_node_get_scalar(n, &l);
    if (s && memchr(s, 0, l)) {
        jerr_input(e, field, "%s: has a NUL byte", field);
        return NULL;
    }
    return strndup(s ? s : "", l);
}

static const char *const entry_keys[] = {"address", "user", "role", "ca", "cert", "key"};

int nodes_persist_parse(const char *field, const char *text, unsigned *seconds, jerr *e)
{
    uint64_t s = 0;
    if (strcmp(text, "0") && strcmp(text, "off")) {
        jerr pe = {0};
        if (parse_duration(field, text, &s, &pe) < 0 || s > NODES_PERSIST_MAX) {
            char v[80];
            shown(text, v, sizeof v);
            return jerr_input(e, field, "%s: '%s' is not a time to keep the node's connections; want seconds or a "
                              "duration (90, 10m, 2h; at most 7d), or 0 or off for none", field, v);
        }
    }
    *seconds = (unsigned)s;
    return 0;
}

/* An entry from a mapping node; prefix ("" or "nodes.NAME.") goes before each field's name. */
static int entry_of(struct fy_node *map, const char *prefix, bool socket_ok, nodes_entry *out, jerr *e)
{
    char field[NODES_NAME_MAX + 32];
    memset(out, 0, sizeof *out);
    if (!map || !fy_node_is_mapping(map))
        return jerr_input(e, prefix, "%s%smust be a mapping of address, user, role, ca, cert, key%s", prefix,
                   *prefix ? ": " : "", socket_ok ? " (or of socket alone)" : "");
    char **slots[] = {&out->address, &out->user, &out->role, &out->ca, &out->cert, &out->key};
    void *it = NULL;
    struct fy_node_pair *pair;
    while ((pair = fy_node_mapping_iterate(map, &it))) {
        char *k = scalar(fy_node_pair_key(pair), prefix[0] ? prefix : "key", e);
        if (!k)
            goto fail;
        char **slot = NULL;
        for (size_t i = 0; i < ARRAY_LEN(entry_keys); i++)
            if (!strcmp(k, entry_keys[i]))
                slot = slots[i];
        if (socket_ok && !strcmp(k, "socket"))
            slot = &out->socket;
        snprintf(field, sizeof field, "%s%s", prefix, k);
        if (!strcmp(k, "persist")) {
            free(k);
            char *v = scalar(fy_node_pair_value(pair), field, e);
            int pr = v ? nodes_persist_parse(field, v, &out->persist_s, e) : -1;
            out->has_persist = true;
            free(v);
            if (pr < 0)
                goto fail;
            continue;
        }
        if (!slot) {
            char v[80];
            shown(k, v, sizeof v);
            jerr_input(e, field, "%s%s: unknown key; a node has address, user, role, ca, cert, key (and persist)%s",
                prefix, v, socket_ok ? " (or socket alone)" : "");
            free(k);
            goto fail;
        }
        free(k);
        if (!(*slot = scalar(fy_node_pair_value(pair), field, e)))
            goto fail;
    }
    if (out->socket) {
        snprintf(field, sizeof field, "%ssocket", prefix);
        if (out->address || out->user || out->role || out->ca || out->cert || out->key || out->has_persist) {
            jerr_input(e, field, "%s: a node that is a local socket has socket alone (no address, user, role, ca, cert, key, persist)",
                field);
            goto fail;
        }
        if (socket_check(field, out->socket, e) < 0)
            goto fail;
        return 0;
    }
    for (size_t i = 0; i < ARRAY_LEN(entry_keys); i++) {
        if (*slots[i])
            continue;
        snprintf(field, sizeof field, "%s%s", prefix, entry_keys[i]);
        jerr_input(e, field, "%s: missing; a node has address, user, role, ca, cert and key%s", field,
            socket_ok ? " (or socket alone)" : "");
        goto fail;
    }
    char v[80];
    snprintf(field, sizeof field, "%saddress", prefix);
    if (nodes_address_parse(out->address, &out->host, &out->port, e) < 0) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg + strlen("address"));
        jerr_input(e, field, "%s%s", field, why);
        goto fail;
    }
    snprintf(field, sizeof field, "%suser", prefix);
    shown(out->user, v, sizeof v);
    size_t ul = strlen(out->user);
    if (ul == 0 || ul > 64 || strspn(out->user, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@-") != ul) {
        jerr_input(e, field, "%s: '%s' must be a user name: 1 to 64 of A-Z a-z 0-9 . _ @ -", field, v);
        goto fail;
    }
    snprintf(field, sizeof field, "%srole", prefix);
    bool role_ok = false;
    for (size_t i = 0; i < ARRAY_LEN(roles); i++)
        role_ok |= !strcmp(out->role, roles[i]);
    if (!role_ok) {
        shown(out->role, v, sizeof v);
        jerr_input(e, field, "%s: '%s' is not a role; one of reader, developer, operator, maintainer, admin", field, v);
        goto fail;
    }
    const struct { char **v; const char *name; bool key; } pems[] = {
        {&out->ca, "ca", false}, {&out->cert, "cert", false}, {&out->key, "key", true}};
    for (size_t i = 0; i < ARRAY_LEN(pems); i++) {
        snprintf(field, sizeof field, "%s%s", prefix, pems[i].name);
        if (pem_check(field, *pems[i].v, pems[i].key, e) < 0)
            goto fail;
        char *t = pem_tidy(*pems[i].v);
        free(*pems[i].v);
        *pems[i].v = t;
    }
    return 0;
fail:
    nodes_entry_free(out);
    return -1;
}

/* "address: [::1]:7443" as a node file may write it is no YAML (a flow list, then ":7443"):
 * a copy of text (*len updated) with such a line's value in double quotes; NULL when there
 * is none. */
static char *quote_bracketed_address(const char *text, size_t *len)
{
    const char *line = text, *end = text + *len;
    while (line < end && strncmp(line, "address:", 8))
        line = memchr(line, '\n', (size_t)(end - line)) ? (const char *)memchr(line, '\n', (size_t)(end - line)) + 1
                                                        : end;
    if (line >= end)
        return NULL;
    const char *v = line + 8;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    if (v >= end || *v != '[')
        return NULL;
    const char *stop = v;
    while (stop < end && *stop != '\n' && *stop != '\r' && *stop != ' ' && *stop != '\t' && *stop != '"' &&
           *stop != '\\')
        stop++;
    char *out = NULL;
    size_t n = (size_t)(v - text);
    if (asprintf(&out, "%.*s\"%.*s\"%.*s", (int)n, text, (int)(stop - v), v, (int)(end - stop), stop) < 0)
        abort();
    *len += 2;
    return out;
}

int nodes_entry_parse(const char *text, size_t len, nodes_entry *out, jerr *e)
{
    memset(out, 0, sizeof *out);
    if (len > NODES_FILE_MAX)
        return jerr_input(e, "", "larger than %u MiB: not a node file", NODES_FILE_MAX >> 20);
    char *fixed = quote_bracketed_address(text, &len);
    struct fy_document *d;
    int rc = yaml_doc(fixed ? fixed : text, len, &d, e);
    if (rc == 0 && (!d || !fy_document_root(d)))
        rc = jerr_input(e, "", "empty: a node file has address, user, role, ca, cert and key");
    else if (rc == 0)
        rc = entry_of(fy_document_root(d), "", false, out, e);
    fy_document_destroy(d);
    if (fixed) {
        explicit_bzero(fixed, len);
        free(fixed);
    }
    return rc;
}

int nodes_conf_parse(const char *text, size_t len, nodes_conf *out, jerr *e)
{
    memset(out, 0, sizeof *out);
    if (len > NODES_FILE_MAX)
        return jerr_input(e, "", "larger than %u MiB", NODES_FILE_MAX >> 20);
    struct fy_document *d;
    if (yaml_doc(text, len, &d, e) < 0)
        return -1;
    if (!d)
        return 0;
    struct fy_node *root = fy_document_root(d);
    int rc = -1;
    if (!root) {
        rc = 0;   /* comments only */
        goto out;
    }
    if (!fy_node_is_mapping(root)) {
        jerr_input(e, "", "must be a mapping with current and nodes");
        goto out;
    }
    void *it = NULL;
    struct fy_node_pair *pair;
    while ((pair = fy_node_mapping_iterate(root, &it))) {
        char *k = scalar(fy_node_pair_key(pair), "key", e);
        if (!k)
            goto out;
        struct fy_node *v = fy_node_pair_value(pair);
        if (!strcmp(k, "current")) {
            free(k);
            size_t l = 0;
            const char *plain = v && fy_node_is_scalar(v) && fy_node_get_style(v) == FYNS_PLAIN ? fy_node_get_scalar(v, &l) : NULL;
            if (!v || (plain && ((l == 4 && !memcmp(plain, "null", 4)) || (l == 1 && *plain == '~'))))
                continue;   /* none: the local socket */
            if (!(out->current = scalar(v, "current", e)))
                goto out;
            if (!*out->current || !strcmp(out->current, NODES_LOCAL)) {
                free(out->current);
                out->current = NULL;
            } else if (nodes_name_check(out->current, e) < 0) {
                char why[sizeof e->msg];
                snprintf(why, sizeof why, "%s", e->msg + strlen("name"));
                jerr_input(e, "current", "current%s", why);
                goto out;
            }
        } else if (!strcmp(k, "nodes")) {
            free(k);
            if (!v)
                continue;
            if (!fy_node_is_mapping(v)) {
                jerr_input(e, "nodes", "nodes: must be a mapping of names to nodes");
                goto out;
            }
            void *it2 = NULL;
            struct fy_node_pair *np;
            while ((np = fy_node_mapping_iterate(v, &it2))) {
                char *name = scalar(fy_node_pair_key(np), "nodes", e);
                if (!name)
                    goto out;
                if (nodes_name_check(name, e) < 0) {
                    char why[sizeof e->msg];
                    snprintf(why, sizeof why, "%s", e->msg + strlen("name"));
                    jerr_input(e, "nodes", "nodes: a node's name%s", why);
                    free(name);
                    goto out;
                }
                char prefix[NODES_NAME_MAX + 16];
                snprintf(prefix, sizeof prefix, "nodes.%s.", name);
                nodes_entry ent;
                if (entry_of(fy_node_pair_value(np), prefix, true, &ent, e) < 0) {
                    free(name);
                    goto out;
                }
                ent.name = name;
                nodes_conf_put(out, &ent);
            }
        } else {
            char v2[80];
            shown(k, v2, sizeof v2);
            jerr_input(e, k, "%s: unknown key; nodes.yml has current and nodes", v2);
            free(k);
            goto out;
        }
    }
    rc = 0;
out:
    fy_document_destroy(d);
    if (rc < 0)
        nodes_conf_free(out);
    return rc;
}

/* ---- writing ------------------------------------------------------------------------------- */

static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_block(FILE *f, const char *key, const char *pem)
{
    fprintf(f, "    %s: |\n", key);
    for (const char *line = pem; *line;) {
        size_t l = strcspn(line, "\n");
        if (l)
            fprintf(f, "      %.*s\n", (int)l, line);
        else
            fputc('\n', f);
        line += l + (line[l] == '\n');
    }
}

char *nodes_conf_render(const nodes_conf *conf)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    fputs("# rnx's nodes (rnx node --help; docs/cli.md, \"Remote nodes\"). Written by rnx node: it holds\n"
          "# private keys, keep it mode 0600.\n", f);
    if (conf->current) {
        fputs("current: ", f);
        put_quoted(f, conf->current);
        fputc('\n', f);
    }
    fputs(conf->n ? "nodes:\n" : "nodes: {}\n", f);
    for (size_t i = 0; i < conf->n; i++) {
        const nodes_entry *n = &conf->v[i];
        fputs("  ", f);
        put_quoted(f, n->name);
        fputs(":\n", f);
        if (n->socket) {
            fputs("    socket: ", f);
            put_quoted(f, n->socket);
            fputc('\n', f);
            continue;
        }
        const char *const plain[][2] = {{"address", n->address}, {"user", n->user}, {"role", n->role}};
        for (size_t k = 0; k < ARRAY_LEN(plain); k++) {
            fprintf(f, "    %s: ", plain[k][0]);
            put_quoted(f, plain[k][1]);
            fputc('\n', f);
        }
        if (n->has_persist)
            fprintf(f, "    persist: %u\n", n->persist_s);
        put_block(f, "ca", n->ca);
        put_block(f, "cert", n->cert);
        put_block(f, "key", n->key);
    }
    if (fclose(f) != 0)
        abort();
    return text;
}

/* ---- the list ------------------------------------------------------------------------------ */

nodes_entry *nodes_conf_find(const nodes_conf *conf, const char *name)
{
    for (size_t i = 0; name && i < conf->n; i++)
        if (!strcmp(conf->v[i].name, name))
            return &conf->v[i];
    return NULL;
}

void nodes_conf_put(nodes_conf *conf, nodes_entry *ent)
{
    nodes_entry *old = nodes_conf_find(conf, ent->name);
    if (old) {
        nodes_entry_free(old);
        *old = *ent;
    } else {
        conf->v = xrealloc(conf->v, (conf->n + 1) * sizeof *conf->v);
        conf->v[conf->n++] = *ent;
    }
    memset(ent, 0, sizeof *ent);
}

bool nodes_conf_remove(nodes_conf *conf, const char *name)
{
    nodes_entry *ent = nodes_conf_find(conf, name);
    if (!ent)
        return false;
    nodes_entry_free(ent);
    size_t i = (size_t)(ent - conf->v);
    memmove(ent, ent + 1, (conf->n - i - 1) * sizeof *ent);
    conf->n--;
    if (conf->current && !strcmp(conf->current, name)) {
        free(conf->current);
        conf->current = NULL;
    }
    return true;
}

void nodes_entry_free(nodes_entry *ent)
{
    if (!ent)
        return;
    if (ent->key)
        explicit_bzero(ent->key, strlen(ent->key));   /* no copy of a private key left in freed memory */
    char *const fields[] = {ent->name, ent->socket, ent->address, ent->host, ent->port,
                            ent->user, ent->role,   ent->ca,      ent->cert, ent->key};
    for (size_t i = 0; i < ARRAY_LEN(fields); i++)
        free(fields[i]);
    memset(ent, 0, sizeof *ent);
}

void nodes_conf_free(nodes_conf *conf)
{
    for (size_t i = 0; i < conf->n; i++)
        nodes_entry_free(&conf->v[i]);
    free(conf->v);
    free(conf->current);
    memset(conf, 0, sizeof *conf);
}
