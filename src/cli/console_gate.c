/* The checks of "rnx console" on a request head (console_gate.h).
 *
 * Why more than a cookie: browsers scope cookies by host, not port, so every listener on
 * 127.0.0.1 (another user's server) receives the console's cookie, and a page it serves is the
 * "same site" as the console (SameSite=Strict does not stop its forms). So the API also needs
 * the page's key, which no other origin can read (sessionStorage is per origin, port included)
 * and no browser sends by itself; the exact origin is checked where the browser says it
 * (Origin, Sec-Fetch-Site); and a change must be application/json, which a form cannot send
 * and a script of another origin cannot send without a preflight the console never answers. */
#include "console_gate.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <strings.h>

/* The value of header `name` in the head (first line excluded, up to end), or NULL; *len its
 * length, without trailing blanks; *count how many lines name it. */
static const char *header(const char *head, const char *end, const char *name, size_t *len, int *count)
{
    size_t nl = strlen(name);
    const char *found = NULL;
    *count = 0;
    for (const char *p = strstr(head, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (!strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            const char *e = strstr(v, "\r\n");
            size_t l = e ? (size_t)(e - v) : strlen(v);
            while (l && (v[l - 1] == ' ' || v[l - 1] == '\t'))
                l--;
            if (!found) {
                found = v;
                *len = l;
            }
            ++*count;
        }
    }
    return found;
}

long long console_gate_body_length(const char *head, const char *end)
{
    size_t len = 0;
    int count = 0;
    if (header(head, end, "Transfer-Encoding", &len, &count) || header(head, end, "Upgrade", &len, &count))
        return -1;
    const char *v = header(head, end, "Content-Length", &len, &count);
    if (!v)
        return 0;
    if (count != 1 || len == 0 || len > 18 || strspn(v, "0123456789") < len)
        return -1;
    return strtoll(v, NULL, 10);
}

/* The value of the query parameter `name` in target (tlen bytes), or NULL. */
static const char *query_param(const char *target, size_t tlen, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    const char *q = memchr(target, '?', tlen), *stop = target + tlen;
    while (q && q < stop) {
        q++;
        const char *amp = memchr(q, '&', (size_t)(stop - q));
        const char *e = amp ? amp : stop;
        if ((size_t)(e - q) > nl && !strncmp(q, name, nl) && q[nl] == '=') {
            *len = (size_t)(e - q - nl - 1);
            return q + nl + 1;
        }
        q = e;
    }
    return NULL;
}

bool console_secret_equal(const char *s, size_t len, const char *secret)
{
    unsigned char diff = len != CONSOLE_SECRET_HEX;
    for (size_t i = 0; i < CONSOLE_SECRET_HEX; i++)
        diff |= (unsigned char)((i < len ? s[i] : 0) ^ secret[i]);
    return diff == 0;
}

/* Whether the Cookie header value (len bytes) holds name=secret. */
static bool cookie_holds(const char *v, size_t len, const char *name, const char *secret)
{
    size_t nl = strlen(name);
    bool ok = false;
    while (v && len) {
        const char *semi = memchr(v, ';', len);
        size_t part = semi ? (size_t)(semi - v) : len;
        if (part > nl + 1 && !strncmp(v, name, nl) && v[nl] == '=')
            ok |= console_secret_equal(v + nl + 1, part - nl - 1, secret);
        if (!semi)
            break;
        len -= part + 1;
        v = semi + 1;
        while (len && *v == ' ')
            v++, len--;
    }
    return ok;
}

/* Whether host (len bytes) is name (case aside), with an optional :PORT. Only the console's own
 * random name: not 127.0.0.1 or localhost, whose origins another user's server may have held
 * before the console (a service worker it registered there sees the link's navigation before
 * rnx does), nor a name that a rebinding DNS points at 127.0.0.1. */
static bool own_host(const char *name, const char *v, size_t len)
{
    size_t l = strlen(name);
    if (!l || len < l)
        return false;
    /* in time that does not say how much of the name another user's guess got right (name is
     * lower case) */
    unsigned char diff = 0;
    for (size_t i = 0; i < l; i++)
        diff |= (unsigned char)((unsigned char)tolower((unsigned char)v[i]) ^ (unsigned char)name[i]);
    if (diff)
        return false;
    if (len == l)
        return true;
    if (v[l] != ':' || len == l + 1 || len > l + 6)
        return false;
    for (size_t d = l + 1; d < len; d++)
        if (v[d] < '0' || v[d] > '9')
            return false;
    return true;
}

/* The page's files: GET or HEAD of /, /index.html or /console/NAME (NAME: letters, digits, '.',
 * '_', '-', not starting with '.'). They are the same for everyone and hold nothing of the
 * user's; the browser fetches them without the key (a navigation, <script src>). */
static bool page_file(const char *method, const char *path, size_t plen)
{
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return false;
    if ((plen == 1 && path[0] == '/') || (plen == 11 && !strncmp(path, "/index.html", 11)))
        return true;
    if (plen <= 9 || strncmp(path, "/console/", 9) || path[9] == '.')
        return false;
    for (size_t i = 9; i < plen; i++) {
        char c = path[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return false;
    }
    return true;
}

/* Whether the media type of a Content-Type value (len bytes) is application/json. */
static bool json_type(const char *v, size_t len)
{
    const char *semi = memchr(v, ';', len);
    size_t l = semi ? (size_t)(semi - v) : len;
    while (l && (v[l - 1] == ' ' || v[l - 1] == '\t'))
        l--;
    return l == 16 && !strncasecmp(v, "application/json", 16);
}

__attribute__((format(printf, 3, 4))) static int refuse(console_verdict *v, const char *status, const char *fmt, ...)
{
    v->action = GATE_REFUSE;
    v->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
    return 0;
}

/* A header's value for a message: at most 200 bytes of it. */
#define SHOWN(len) (int)((len) > 200 ? 200 : (len))

static int check(console_secrets *s, const char *head, const char *end, console_verdict *v)
{
    v->cross_site = false;
    /* "METHOD /target HTTP/1.1": an origin-form target only */
    const char *sp = memchr(head, ' ', (size_t)(end - head));
    const char *target = sp ? sp + 1 : NULL;
    const char *sp2 = target ? memchr(target, ' ', (size_t)(end - target)) : NULL;
    const char *eol = strstr(head, "\r\n");
    char method[16];
    if (!sp2 || (size_t)(sp - head) >= sizeof method || *target != '/' || sp2 > eol)
        return refuse(v, "400 Bad Request", "not an HTTP request the console takes (METHOD /path HTTP/1.1)");
    memcpy(method, head, (size_t)(sp - head));
    method[sp - head] = 0;
    size_t tlen = (size_t)(sp2 - target);
    const char *qm = memchr(target, '?', tlen);
    size_t plen = qm ? (size_t)(qm - target) : tlen;
    /* a folded header line (obsolete; no browser sends one) could hide a line from the checks */
    for (const char *p = eol; p && p < end; p = strstr(p + 2, "\r\n"))
        if (p[2] == ' ' || p[2] == '\t')
            return refuse(v, "400 Bad Request", "folded header lines are not accepted");

    size_t hlen = 0, olen = 0, flen = 0, clen = 0, klen = 0, ctlen = 0;
    int hn, on, fn, cn, kn, ctn;
    const char *host = header(head, end, "Host", &hlen, &hn);
    const char *origin = header(head, end, "Origin", &olen, &on);
    const char *site = header(head, end, "Sec-Fetch-Site", &flen, &fn);
    const char *cookie = header(head, end, "Cookie", &clen, &cn);
    const char *key = header(head, end, CONSOLE_KEY_HEADER, &klen, &kn);
    const char *ctype = header(head, end, "Content-Type", &ctlen, &ctn);
    if (hn > 1 || on > 1 || fn > 1 || kn > 1 || ctn > 1)
        return refuse(v, "400 Bad Request",
                      "the request names Host, Origin, Sec-Fetch-Site, " CONSOLE_KEY_HEADER " or Content-Type twice");

    /* the exact origin: the sign-in's once there is one; before it, the Host's own */
    if (!host)
        return refuse(v, "400 Bad Request", "the request names no Host");
    if (!own_host(s->name, host, hlen))
        return refuse(v, "403 Forbidden",
                      "Host '%.*s' is not this console's name: it answers only to the host of the URL 'rnx "
                      "console' printed (a name of its own under .localhost, any port; not said here: whoever "
                      "has the link has it)", SHOWN(hlen), host);
    char own[sizeof s->origin];
    if (s->origin[0])
        snprintf(own, sizeof own, "%s", s->origin);
    else
        snprintf(own, sizeof own, "http://%.*s", (int)(hlen > 280 ? 280 : hlen), host);
    if (strlen(own) != 7 + hlen || strncasecmp(own + 7, host, hlen))
        return refuse(v, "403 Forbidden", "Host '%.*s' is not this console's origin %s (where it was signed in)",
                      SHOWN(hlen), host, own);
    if (origin && (olen != strlen(own) || strncasecmp(origin, own, olen)))
        return refuse(v, "403 Forbidden",
                      "a cross-origin request: Origin '%.*s' is not this console's origin %s; the console answers "
                      "its own page only",
                      SHOWN(olen), origin, own);
    size_t toklen, mlen = 0, dlen = 0;
    int mn, dn;
    const char *tok = query_param(target, tlen, "token", &toklen);
    const char *mode = header(head, end, "Sec-Fetch-Mode", &mlen, &mn);
    const char *dest = header(head, end, "Sec-Fetch-Dest", &dlen, &dn);
    /* The link's file (rnx console writes it so that no token goes on a command line) opens
     * the link by a navigation from file://, which the browser calls cross-site: the sign-in
     * alone takes one, as a top-level GET. It gives nothing but to the token's holder, who
     * could use it directly; a page that sends the browser to another user's console was
     * never stopped here (that user's server need not be rnx). */
    v->cross_site = tok && site && flen == 10 && !strncasecmp(site, "cross-site", 10) && !strcmp(method, "GET") &&
                    mode && mn == 1 && mlen == 8 && !strncasecmp(mode, "navigate", 8) && dest && dn == 1 &&
                    dlen == 8 && !strncasecmp(dest, "document", 8);
    if (site && !v->cross_site && !(flen == 11 && !strncasecmp(site, "same-origin", 11)) &&
        !(flen == 4 && !strncasecmp(site, "none", 4)))
        return refuse(v, "403 Forbidden",
                      "Sec-Fetch-Site '%.*s': the request comes from another page than the console's own (another "
                      "port of this host is another origin); only same-origin or none is accepted (origin %s)",
                      SHOWN(flen), site, own);

    if (tok) {
        /* the one-time token: traded for the session, once */
        if (strcmp(method, "GET") || !console_secret_equal(tok, toklen, s->token) || s->token_used)
            return refuse(v, "401 Unauthorized",
                          "this console link was used already or is wrong: run 'rnx console' again for a new "
                          "one");
        s->token_used = true;
        snprintf(s->origin, sizeof s->origin, "%s", own);
        v->action = GATE_SIGN_IN;
        return 0;
    }
    if (!cookie || !cookie_holds(cookie, clen, s->cookie, s->session))
        return refuse(v, "401 Unauthorized", "no console session: open the URL 'rnx console' printed");
    /* a terminal's WebSocket: GET .../attach with Upgrade: websocket; a browser always sends its
     * Origin there (it must be the console's: checked above), and a ticket in place of the key */
    size_t ulen = 0, tklen = 0;
    int un;
    const char *up = header(head, end, "Upgrade", &ulen, &un);
    if (up && ulen == 9 && !strncasecmp(up, "websocket", 9)) {
        static const char attach[] = "/attach";
        const char *ticket = query_param(target, tlen, CONSOLE_TICKET_QUERY, &tklen);
        if (strcmp(method, "GET") || plen < 9 + sizeof attach || strncmp(target, "/v1/jobs/", 9) ||
            memcmp(target + plen - (sizeof attach - 1), attach, sizeof attach - 1))
            return refuse(v, "400 Bad Request", "the console carries a WebSocket to GET /v1/jobs/ID/attach only");
        if (!origin)
            return refuse(v, "403 Forbidden", "a WebSocket without Origin: the console's page always sends it");
        int found = -1;
        for (int i = 0; ticket && i < CONSOLE_TICKETS; i++)
            if (s->ticket_until[i] > s->now_ms && console_secret_equal(ticket, tklen, s->ticket[i]))
                found = i;
        if (found < 0)
            return refuse(v, "401 Unauthorized",
                          "no ticket, or one used or expired: the console's page asks for one (POST "
                          CONSOLE_TICKET_PATH ") just before it opens a terminal");
        s->ticket_until[found] = 0; /* once */
        v->action = GATE_FORWARD;
        return 0;
    }
    if (!page_file(method, target, plen)) {
        size_t qlen = 0;
        const char *qkey = !strcmp(method, "GET") ? query_param(target, tlen, CONSOLE_KEY_QUERY, &qlen) : NULL;
        bool ok = (key && console_secret_equal(key, klen, s->key)) || (qkey && console_secret_equal(qkey, qlen, s->key));
        if (!ok)
            return refuse(v, "401 Unauthorized",
                          "no console key: the cookie alone is not a session; the console's page sends its key as "
                          CONSOLE_KEY_HEADER " (open the URL 'rnx console' printed, in this tab)");
        if (strcmp(method, "GET") && strcmp(method, "HEAD") && (!ctype || !json_type(ctype, ctlen)))
            return refuse(v, "415 Unsupported Media Type",
                          "Content-Type '%.*s' is not accepted for a change through the console: send "
                          "application/json", ctype ? SHOWN(ctlen) : 6, ctype ? ctype : "(none)");
    }
    v->action = !strcmp(method, "POST") && plen == strlen(CONSOLE_TICKET_PATH) &&
                        !strncmp(target, CONSOLE_TICKET_PATH, plen) ? GATE_TICKET : GATE_FORWARD;
    return 0;
}

void console_gate_ticket_add(console_secrets *s, const char *t)
{
    int at = 0;
    for (int i = 1; i < CONSOLE_TICKETS; i++)
        if (s->ticket_until[i] < s->ticket_until[at])
            at = i;
    snprintf(s->ticket[at], sizeof s->ticket[at], "%s", t);
    s->ticket_until[at] = s->now_ms + CONSOLE_TICKET_MS;
}

void console_gate_check(console_secrets *s, const char *head, const char *end, console_verdict *v)
{
    check(s, head, end, v);
}

void console_gate_sign_in(const console_secrets *s, bool redirect, char *out, size_t cap)
{
    /* Clear-Site-Data "cache": what the browser cached for this origin before the console held
     * the port (another user's server there, or a page of another port that had it load
     * /console/console.js with a long max-age: the HTTP cache is keyed by site, which ignores
     * the port) is dropped before the redirect is followed, so the page and its script come
     * from joblet, not a stale copy that would run in the console's origin with its key */
    snprintf(out, cap,
             "%s%s%sSet-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict\r\nClear-Site-Data: \"cache\"\r\n",
             redirect ? "Location: /#key=" : "", redirect ? s->key : "", redirect ? "\r\n" : "", s->cookie,
             s->session);
}

void console_gate_sign_in_page(const console_secrets *s, char *out, size_t cap)
{
    snprintf(out, cap,
             "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">"
             "<meta http-equiv=\"refresh\" content=\"0;url=/#key=%s\"><title>joblet console</title></head>"
             "<body><p>Signed in. <a href=\"/#key=%s\">Open the console</a>.</p></body></html>",
             s->key, s->key);
}

/* Appends n bytes to out (used bytes *o, cap); false when they do not fit. */
static bool put(char *out, size_t *o, size_t cap, const char *p, size_t n)
{
    if (*o + n >= cap)
        return false;
    memcpy(out + *o, p, n);
    *o += n;
    return true;
}

size_t console_gate_rewrite(const char *head, const char *end, char *out, size_t cap)
{
    size_t o = 0;
    const char *eol = strstr(head, "\r\n");
    const char *target = memchr(head, ' ', (size_t)(eol - head)) + 1;
    const char *sp2 = memchr(target, ' ', (size_t)(eol - target));
    const char *qm = memchr(target, '?', (size_t)(sp2 - target));
    /* the request line, its query without console_key */
    if (!put(out, &o, cap, head, (size_t)((qm ? qm : sp2) - head)))
        return 0;
    bool first = true;
    size_t kl = strlen(CONSOLE_KEY_QUERY);
    for (const char *q = qm; q && q < sp2;) {
        q++;
        const char *amp = memchr(q, '&', (size_t)(sp2 - q));
        const char *e = amp ? amp : sp2;
        bool drop = (size_t)(e - q) >= kl && !strncmp(q, CONSOLE_KEY_QUERY, kl) && (q + kl == e || q[kl] == '=');
        size_t tl = strlen(CONSOLE_TICKET_QUERY);
        drop |= (size_t)(e - q) >= tl && !strncmp(q, CONSOLE_TICKET_QUERY, tl) && (q + tl == e || q[tl] == '=');
        if (!drop && e > q) {
            if (!put(out, &o, cap, first ? "?" : "&", 1) || !put(out, &o, cap, q, (size_t)(e - q)))
                return 0;
            first = false;
        }
        q = e;
    }
    if (!put(out, &o, cap, sp2, (size_t)(eol + 2 - sp2)))
        return 0;
    size_t ulen = 0;
    int un;
    const char *up = header(head, end, "Upgrade", &ulen, &un);
    bool ws = up && ulen == 9 && !strncasecmp(up, "websocket", 9);
    /* Origin and Sec-Fetch-* (checked here) are taken off: joblet refuses a request that
     * carries them, a web page's (http.c) */
    static const char *const dropped[] = {"Cookie:", CONSOLE_KEY_HEADER ":", "Connection:", "Keep-Alive:", "Origin:",
                                          "Sec-Fetch-"};
    size_t ndropped = sizeof dropped / sizeof dropped[0];
    for (const char *line = eol + 2; line < end + 2;) {
        const char *le = strstr(line, "\r\n");
        bool drop = false;
        for (size_t i = 0; i < ndropped; i++)
            drop |= !strncasecmp(line, dropped[i], strlen(dropped[i]));
        if (!drop && !put(out, &o, cap, line, (size_t)(le + 2 - line)))
            return 0;
        line = le + 2;
    }
    static const char close_[] = "Connection: close\r\n\r\n", upgrade[] = "Connection: Upgrade\r\n\r\n";
    if (!put(out, &o, cap, ws ? upgrade : close_, ws ? sizeof upgrade - 1 : sizeof close_ - 1))
        return 0;
    return o;
}
