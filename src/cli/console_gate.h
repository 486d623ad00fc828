/* What "rnx console" decides about one request head before it forks or forwards anything
 * (console_gate.c; docs/console.md, "Who may use the port"): pure functions over the bytes
 * the browser sent, tested in tests/unit/test_console_gate.c. */
#ifndef JOBLET_CONSOLE_GATE_H
#define JOBLET_CONSOLE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONSOLE_SECRET_HEX 64         /* 32 random bytes, as hex */
#define CONSOLE_NAME_HEX 32           /* the random label of the console's host name: 16 bytes */
#define CONSOLE_NAME_SUFFIX ".localhost" /* browsers resolve NAME.localhost to loopback themselves */
#define CONSOLE_KEY_HEADER "X-Console-Key"
#define CONSOLE_KEY_QUERY "console_key"   /* the same key in an EventSource's URL (GET only) */
#define CONSOLE_TICKET_PATH "/v1/console/ticket" /* POST: a ticket for one terminal's WebSocket */
#define CONSOLE_TICKET_QUERY "ticket"
#define CONSOLE_TICKETS 8                 /* unused tickets kept at once (the oldest replaced) */
#define CONSOLE_TICKET_MS 30000           /* a ticket's life */

/* A console's secrets and the origin its session was made at. */
typedef struct console_secrets {
    char token[CONSOLE_SECRET_HEX + 1];   /* the printed link's, good once */
    char session[CONSOLE_SECRET_HEX + 1]; /* the cookie's */
    char key[CONSOLE_SECRET_HEX + 1];     /* the page's own: only the redirect's fragment carries it */
    char cookie[40];                      /* the cookie's name, "joblet_console_PORT" */
    /* "LABEL.localhost", LABEL random: the one host name the console answers to. An origin
     * nobody knew before the link was printed holds nothing another user could have left in
     * the browser for it (a service worker, a cached file, a cookie) */
    char name[CONSOLE_NAME_HEX + sizeof CONSOLE_NAME_SUFFIX];
    bool token_used;
    char origin[300];                     /* "http://HOST[:PORT]" of the sign-in, "" before it */
    /* a terminal's WebSocket (a browser cannot send the key's header on one): tickets made by
     * POST CONSOLE_TICKET_PATH (with the key), each good once, for CONSOLE_TICKET_MS */
    char ticket[CONSOLE_TICKETS][CONSOLE_SECRET_HEX + 1];
    int64_t ticket_until[CONSOLE_TICKETS]; /* ms on the caller's clock; 0 unused */
    int64_t now_ms;                       /* the caller's clock, set before each check */
} console_secrets;

typedef enum {
    GATE_REFUSE,    /* answer status with msg, forward nothing */
    GATE_SIGN_IN,   /* the token was right and is now used: answer the redirect (console_gate_sign_in) */
    GATE_FORWARD,   /* carry it to joblet (console_gate_rewrite) */
    GATE_TICKET,    /* make a ticket (console_gate_ticket_add) and answer it */
} gate_action;

typedef struct console_verdict {
    gate_action action;
    const char *status;    /* GATE_REFUSE: "401 Unauthorized", ... */
    char msg[512];         /* GATE_REFUSE: the body, one line that says what would be accepted */
    /* GATE_SIGN_IN: the link came by a navigation from another site (rnx console's link file,
     * file://): answer console_gate_sign_in_page, not the redirect, whose next request would be
     * cross-site too, and carry no SameSite=Strict cookie */
    bool cross_site;
} console_verdict;

/* Decides on a request head: head is NUL-terminated and holds at least up to end, where its
 * "\r\n\r\n" starts. Every request must name s->name as its Host, with any port (after
 * sign-in: the sign-in's port), come from that origin by its Origin and Sec-Fetch-Site headers where the browser
 * sends them, and carry the cookie; the page's files pass with that, every other request
 * (the API, the event stream) needs the page's key too, and a change (not GET or HEAD) must
 * be application/json. A right, unused token signs in (GATE_SIGN_IN), marking s. */
void console_gate_check(console_secrets *s, const char *head, const char *end, console_verdict *v);

/* Keeps the ticket t (CONSOLE_SECRET_HEX characters), good once until s->now_ms + CONSOLE_TICKET_MS,
 * in the place of an expired or the oldest one. */
void console_gate_ticket_add(console_secrets *s, const char *t);

/* The extra header lines of the sign-in's answer: the cookie, with redirect (a 303)
 * "Location: /#key=KEY" (a fragment: the browser keeps it, never sends it to a server), and
 * Clear-Site-Data "cache" (no copy cached for the origin before the console held the port runs
 * in the page). */
void console_gate_sign_in(const console_secrets *s, bool redirect, char *out, size_t cap);

/* The body (text/html, no script) of a cross-site sign-in's 200 (console_verdict.cross_site):
 * it goes on to /#key=KEY itself, a navigation of the console's own origin, which carries the
 * cookie. */
void console_gate_sign_in_page(const console_secrets *s, char *out, size_t cap);

/* How many body bytes follow the head: its Content-Length, 0 when it has none; -1 when they
 * cannot be counted here (chunked, a Content-Length that is not one number, an upgrade: the
 * bytes after the head are then the new protocol's) and go on as they come. What the browser
 * sends beyond a counted body (a second request on the connection) is never passed on. */
long long console_gate_body_length(const char *head, const char *end);

/* The head joblet gets (end: where "\r\n\r\n" starts): the request line without the
 * console_key query parameter; without the Cookie, X-Console-Key, Connection, Keep-Alive,
 * Origin and Sec-Fetch-* lines (checked here; joblet refuses a request that carries Origin or
 * a Sec-Fetch-Site, a web page's); ending with "Connection: close" and the blank line (a
 * WebSocket's: the ticket taken off too, and "Connection: Upgrade"). Its length; 0 when it does
 * not fit in cap. */
size_t console_gate_rewrite(const char *head, const char *end, char *out, size_t cap);

/* Whether s (len bytes) is the secret, in time that does not depend on where they differ. */
bool console_secret_equal(const char *s, size_t len, const char *secret);

#endif
