/* Unit tests for src/cli/console_gate.c: what rnx console lets through to joblet (issue 25,
 * finding 5). The integration tests drive the same checks through a real console and browser
 * (tests/integration/test_hostile_console.py); here every branch, with heads built by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli/console_gate.h"

#define TOKEN "1111111111111111111111111111111111111111111111111111111111111111"
#define SESSION "2222222222222222222222222222222222222222222222222222222222222222"
#define KEY "3333333333333333333333333333333333333333333333333333333333333333"
#define JAR "Cookie: joblet_console_8080=" SESSION "\r\n"
#define NAME "44444444444444444444444444444444.localhost"
#define HOST "Host: " NAME ":8080\r\n"

static console_secrets fresh(bool signed_in)
{
    console_secrets s = {.token = TOKEN, .session = SESSION, .key = KEY, .cookie = "joblet_console_8080",
                         .name = NAME};
    if (signed_in) {
        s.token_used = true;
        snprintf(s.origin, sizeof s.origin, "http://" NAME ":8080");
    }
    return s;
}

/* The verdict on head (which ends with "\r\n\r\n"). */
static console_verdict check(console_secrets *s, const char *head)
{
    console_verdict v = {0};
    const char *end = strstr(head, "\r\n\r\n");
    assert_non_null(end);
    console_gate_check(s, head, end, &v);
    return v;
}

#define ASSERT_REFUSED(v, code, word)                                                            \
    do {                                                                                         \
        assert_int_equal((v).action, GATE_REFUSE);                                               \
        if (strncmp((v).status, code, 3) || !strstr((v).msg, word))                              \
            fail_msg("got %s: %s; wanted %s naming '%s'", (v).status, (v).msg, code, word);     \
    } while (0)

static void test_sign_in_once_and_bind_the_origin(void **state)
{
    (void)state;
    console_secrets s = fresh(false);
    /* the token at another loopback name (whose origin another user's server may have held, and
     * left a service worker for): refused, and still unused */
    const char *others[] = {"127.0.0.1:9000", "localhost:9000", "[::1]:9000", "other.localhost:9000"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        char head[256];
        snprintf(head, sizeof head, "GET /?token=" TOKEN " HTTP/1.1\r\nHost: %s\r\n\r\n", others[i]);
        console_verdict o = check(&s, head);
        ASSERT_REFUSED(o, "403", "not this console's name");
        assert_null(strstr(o.msg, NAME)); /* (the name is the link's: not told to whoever asks) */
        assert_false(s.token_used);
    }
    console_verdict v = check(&s, "GET /?token=" TOKEN " HTTP/1.1\r\nHost: " NAME ":9000\r\n\r\n");
    assert_int_equal(v.action, GATE_SIGN_IN);
    assert_true(s.token_used);
    assert_string_equal(s.origin, "http://" NAME ":9000");
    assert_false(v.cross_site);
    char extra[400];
    console_gate_sign_in(&s, true, extra, sizeof extra);
    assert_non_null(strstr(extra, "Location: /#key=" KEY "\r\n"));
    assert_non_null(strstr(extra, "Set-Cookie: joblet_console_8080=" SESSION "; Path=/; HttpOnly; SameSite=Strict"));
    assert_non_null(strstr(extra, "Clear-Site-Data: \"cache\"\r\n"));
    /* twice: refused */
    v = check(&s, "GET /?token=" TOKEN " HTTP/1.1\r\nHost: " NAME ":9000\r\n\r\n");
    ASSERT_REFUSED(v, "401", "used already");
    /* the session now answers at the sign-in's origin only */
    v = check(&s, "GET / HTTP/1.1\r\nHost: " NAME ":9001\r\nCookie: joblet_console_8080=" SESSION "\r\n\r\n");
    ASSERT_REFUSED(v, "403", "http://" NAME ":9000");
    v = check(&s, "GET / HTTP/1.1\r\nHost: 44444444444444444444444444444444.LOCALHOST:9000\r\nCookie: joblet_console_8080="
              SESSION "\r\n\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
}

/* The link opened from rnx console's link file: a navigation from file://, cross-site. */
static void test_a_cross_site_navigation_signs_in_with_a_page(void **state)
{
    (void)state;
#define NAV "Sec-Fetch-Mode: navigate\r\nSec-Fetch-Dest: document\r\n"
    /* cross-site is taken for the sign-in's top-level GET only, and for nothing else */
    const char *refused[] = {
        "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: cross-site\r\n\r\n",
        "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: navigate\r\n"
        "Sec-Fetch-Dest: iframe\r\n\r\n",
        "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: no-cors\r\n"
        "Sec-Fetch-Dest: document\r\n\r\n",
        "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: same-site\r\n" NAV "\r\n",
        "POST /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: cross-site\r\n" NAV "\r\n",
        "GET / HTTP/1.1\r\n" HOST JAR "Sec-Fetch-Site: cross-site\r\n" NAV "\r\n",
        "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: cross-site\r\n" NAV "Sec-Fetch-Mode: navigate\r\n\r\n",
    };
    console_secrets s = fresh(false);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        console_verdict r = check(&s, refused[i]);
        assert_int_equal(r.action, GATE_REFUSE);
        assert_false(s.token_used);
    }
    console_verdict v = check(&s, "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: cross-site\r\n" NAV "\r\n");
    assert_int_equal(v.action, GATE_SIGN_IN);
    assert_true(v.cross_site && s.token_used);
    char extra[400], page[800];
    console_gate_sign_in(&s, false, extra, sizeof extra);
    assert_null(strstr(extra, "Location"));
    assert_non_null(strstr(extra, "Set-Cookie: joblet_console_8080=" SESSION "; Path=/; HttpOnly; SameSite=Strict"));
    console_gate_sign_in_page(&s, page, sizeof page);
    assert_non_null(strstr(page, "<meta http-equiv=\"refresh\" content=\"0;url=/#key=" KEY "\">"));
    assert_null(strstr(page, "<script"));
    /* once */
    v = check(&s, "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: cross-site\r\n" NAV "\r\n");
    ASSERT_REFUSED(v, "401", "used already");
}

static void test_wrong_tokens(void **state)
{
    (void)state;
    console_secrets s = fresh(false);
    console_verdict v = check(&s, "GET /?token=" SESSION " HTTP/1.1\r\n" HOST "\r\n");
    ASSERT_REFUSED(v, "401", "rnx console");
    v = check(&s, "GET /?token=111 HTTP/1.1\r\n" HOST "\r\n");
    ASSERT_REFUSED(v, "401", "rnx console");
    v = check(&s, "POST /?token=" TOKEN " HTTP/1.1\r\n" HOST "\r\n");      /* GET only */
    ASSERT_REFUSED(v, "401", "rnx console");
    assert_false(s.token_used);
    /* before a sign-in nothing else passes */
    v = check(&s, "GET / HTTP/1.1\r\n" HOST JAR "\r\n");
    assert_int_equal(v.action, GATE_FORWARD);      /* (a session cookie, were there one) */
    v = check(&s, "GET / HTTP/1.1\r\n" HOST "\r\n");
    ASSERT_REFUSED(v, "401", "no console session");
}

static void test_the_cookie_opens_the_files_only(void **state)
{
    (void)state;
    console_secrets s = fresh(true);
    const char *files[] = {"/", "/index.html", "/console/console.js", "/console/favicon.svg", "/console/console.css?v=1"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char head[512];
        snprintf(head, sizeof head, "GET %s HTTP/1.1\r\n" HOST JAR "\r\n", files[i]);
        console_verdict v = check(&s, head);
        if (v.action != GATE_FORWARD)
            fail_msg("%s: %s", files[i], v.msg);
    }
    const char *api[] = {"/v1/jobs", "/v1/events", "/console/../v1/jobs", "/console/.hidden", "/console/",
                         "/console/a%2f..%2fv1", "/index.htmlx", "//v1/jobs"};
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
        char head[512];
        snprintf(head, sizeof head, "GET %s HTTP/1.1\r\n" HOST JAR "\r\n", api[i]);
        console_verdict v = check(&s, head);
        ASSERT_REFUSED(v, "401", "X-Console-Key");
    }
    console_verdict v = check(&s, "POST / HTTP/1.1\r\n" HOST JAR "\r\n");  /* not a file's GET */
    ASSERT_REFUSED(v, "401", "no console key");
}

static void test_the_key_and_the_cookie_together(void **state)
{
    (void)state;
    console_secrets s = fresh(true);
    console_verdict v = check(&s, "GET /v1/jobs HTTP/1.1\r\n" HOST JAR "X-Console-Key: " KEY "\r\n\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
    v = check(&s, "GET /v1/jobs HTTP/1.1\r\n" HOST "X-Console-Key: " KEY "\r\n\r\n");
    ASSERT_REFUSED(v, "401", "no console session");
    v = check(&s, "GET /v1/jobs HTTP/1.1\r\n" HOST JAR "X-Console-Key: " SESSION "\r\n\r\n");
    ASSERT_REFUSED(v, "401", "no console key");
    v = check(&s, "GET /v1/jobs HTTP/1.1\r\n" HOST JAR "X-Console-Key: " KEY "3\r\n\r\n");
    ASSERT_REFUSED(v, "401", "no console key");
    /* the cookie of another port's console is not this one's */
    v = check(&s, "GET /v1/jobs HTTP/1.1\r\n" HOST "Cookie: joblet_console_8081=" SESSION "\r\nX-Console-Key: " KEY
                  "\r\n\r\n");
    ASSERT_REFUSED(v, "401", "no console session");
    v = check(&s, "GET /v1/jobs HTTP/1.1\r\n" HOST "Cookie: a=b; joblet_console_8080=" SESSION "; c=d\r\nX-Console-Key: " KEY
                  "\r\n\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
    /* the event stream's URL carries it, for GET only */
    v = check(&s, "GET /v1/events?console_key=" KEY " HTTP/1.1\r\n" HOST JAR "\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
    v = check(&s, "POST /v1/jobs?console_key=" KEY " HTTP/1.1\r\n" HOST JAR "Content-Type: application/json\r\n\r\n");
    ASSERT_REFUSED(v, "401", "no console key");
}

static void test_the_exact_origin(void **state)
{
    (void)state;
    console_secrets s = fresh(true);
#define OK_HEAD "GET /v1/jobs HTTP/1.1\r\n" HOST JAR "X-Console-Key: " KEY "\r\n"
    console_verdict v = check(&s, OK_HEAD "Origin: http://" NAME ":8080\r\nSec-Fetch-Site: same-origin\r\n\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
    v = check(&s, OK_HEAD "Sec-Fetch-Site: none\r\n\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
    const char *bad_origins[] = {"http://" NAME ":8081", "https://" NAME ":8080", "http://localhost:8080",
                                 "http://127.0.0.1:8080", "http://" NAME ":80800", "http://" NAME, "null", "",
                                 "http://" NAME ":8080/"};
    for (size_t i = 0; i < sizeof bad_origins / sizeof bad_origins[0]; i++) {
        char head[1024];
        snprintf(head, sizeof head, OK_HEAD "Origin: %s\r\n\r\n", bad_origins[i]);
        v = check(&s, head);
        ASSERT_REFUSED(v, "403", "Origin");
    }
    const char *bad_sites[] = {"same-site", "cross-site", "", "same-origins"};
    for (size_t i = 0; i < sizeof bad_sites / sizeof bad_sites[0]; i++) {
        char head[1024];
        snprintf(head, sizeof head, OK_HEAD "Sec-Fetch-Site: %s\r\n\r\n", bad_sites[i]);
        v = check(&s, head);
        ASSERT_REFUSED(v, "403", "Sec-Fetch-Site");
    }
    /* the origin is checked before the secrets: a cross-origin sign-in does not use the token */
    console_secrets n = fresh(false);
    v = check(&n, "GET /?token=" TOKEN " HTTP/1.1\r\n" HOST "Sec-Fetch-Site: same-site\r\n\r\n");
    ASSERT_REFUSED(v, "403", "Sec-Fetch-Site");
    assert_false(n.token_used);
    /* hosts */
    const char *bad_hosts[] = {"evil.example:8080", NAME ".evil:8080", NAME ":80a", NAME ":", "127.0.0.1:8080",
                               "localhost:8080", "[::1]:8080", "x" NAME ":8080", "4" NAME ":8080",
                               "54444444444444444444444444444444.localhost:8080", NAME ":8081", NAME};
    for (size_t i = 0; i < sizeof bad_hosts / sizeof bad_hosts[0]; i++) {
        char head[1024];
        snprintf(head, sizeof head, "GET / HTTP/1.1\r\nHost: %s\r\n" JAR "\r\n", bad_hosts[i]);
        v = check(&s, head);
        ASSERT_REFUSED(v, "403", "Host");
    }
    v = check(&s, "GET / HTTP/1.1\r\n" JAR "\r\n");
    ASSERT_REFUSED(v, "400", "no Host");
    v = check(&s, "GET / HTTP/1.1\r\n" HOST HOST JAR "\r\n");
    ASSERT_REFUSED(v, "400", "twice");
    v = check(&s, OK_HEAD "X-Console-Key: " KEY "\r\n\r\n");
    ASSERT_REFUSED(v, "400", "twice");
#undef OK_HEAD
}

static void test_changes_are_json(void **state)
{
    (void)state;
    console_secrets s = fresh(true);
#define POST_HEAD "POST /v1/jobs HTTP/1.1\r\n" HOST JAR "X-Console-Key: " KEY "\r\n"
    console_verdict v = check(&s, POST_HEAD "Content-Type: application/json\r\n\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
    v = check(&s, POST_HEAD "Content-Type: Application/JSON ; charset=utf-8\r\n\r\n");
    assert_int_equal(v.action, GATE_FORWARD);
    const char *bad[] = {"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                         "multipart/form-data; boundary=x", "application/json-seq", "application/jso"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char head[1024];
        snprintf(head, sizeof head, POST_HEAD "Content-Type: %s\r\n\r\n", bad[i]);
        v = check(&s, head);
        ASSERT_REFUSED(v, "415", "application/json");
        assert_non_null(strstr(v.msg, bad[i]));
    }
    v = check(&s, POST_HEAD "\r\n");
    ASSERT_REFUSED(v, "415", "(none)");
    v = check(&s, "DELETE /v1/jobs/x HTTP/1.1\r\n" HOST JAR "X-Console-Key: " KEY "\r\n\r\n");
    ASSERT_REFUSED(v, "415", "application/json");
#undef POST_HEAD
}

static void test_malformed_heads(void **state)
{
    (void)state;
    console_secrets s = fresh(true);
    const char *bad[] = {"GET\r\n" HOST "\r\n", "GET http://127.0.0.1:8080/v1/jobs HTTP/1.1\r\n" HOST "\r\n",
                         "GET * HTTP/1.1\r\n" HOST "\r\n", "AVERYLONGMETHODNAME / HTTP/1.1\r\n" HOST "\r\n",
                         "GET /\r\n" HOST "X: y z\r\n\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        console_verdict v = check(&s, bad[i]);
        ASSERT_REFUSED(v, "400", "");
    }
    /* a folded line could carry a header past the checks */
    console_verdict v = check(&s, "GET / HTTP/1.1\r\n" HOST JAR "X-A: b\r\n Origin: http://evil\r\n\r\n");
    ASSERT_REFUSED(v, "400", "folded");
}

static void test_rewrite(void **state)
{
    (void)state;
    char out[1024];
    const char *head = "GET /v1/events?a=1&console_key=" KEY "&b=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n" JAR
                       "X-Console-Key: " KEY "\r\nconnection: keep-alive\r\nKeep-Alive: 5\r\nAccept: */*\r\n"
                       "Origin: http://127.0.0.1:8080\r\nSec-Fetch-Site: same-origin\r\nsec-fetch-mode: cors\r\n\r\nBODY";
    size_t n = console_gate_rewrite(head, strstr(head, "\r\n\r\n"), out, sizeof out);
    assert_true(n > 0);
    out[n] = 0;
    assert_string_equal(out, "GET /v1/events?a=1&b=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n"
                             "Connection: close\r\n\r\n");
    head = "GET /v1/events?console_key=" KEY " HTTP/1.1\r\nHost: x\r\n\r\n";
    n = console_gate_rewrite(head, strstr(head, "\r\n\r\n"), out, sizeof out);
    out[n] = 0;
    assert_string_equal(out, "GET /v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    head = "GET /v1/jobs?console_keys=1&console_key HTTP/1.1\r\n\r\n";
    n = console_gate_rewrite(head, strstr(head, "\r\n\r\n"), out, sizeof out);
    out[n] = 0;
    assert_string_equal(out, "GET /v1/jobs?console_keys=1 HTTP/1.1\r\nConnection: close\r\n\r\n");
    /* too small: 0, nothing written past cap */
    assert_int_equal(console_gate_rewrite(head, strstr(head, "\r\n\r\n"), out, 20), 0);
}

/* A terminal's WebSocket: a ticket (made by POST /v1/console/ticket with the key) good once
 * and for CONSOLE_TICKET_MS, the console's Origin required, GET .../attach only; the rewrite
 * keeps the upgrade and takes the ticket off. */
static void test_tickets(void **state)
{
    (void)state;
    console_secrets s = fresh(true);
    s.now_ms = 1000;
    console_verdict v = check(&s, "POST /v1/console/ticket HTTP/1.1\r\n" HOST JAR "X-Console-Key: " KEY
                                  "\r\nContent-Type: application/json\r\n\r\n");
    assert_int_equal(v.action, GATE_TICKET);
    v = check(&s, "POST /v1/console/ticket HTTP/1.1\r\n" HOST JAR "Content-Type: application/json\r\n\r\n");
    ASSERT_REFUSED(v, "401", "key");
    console_gate_ticket_add(&s, TOKEN);
#define WS(q, more) "GET /v1/jobs/abc/attach" q " HTTP/1.1\r\n" HOST JAR "Upgrade: websocket\r\n" \
                    "Connection: Upgrade\r\n" more "\r\n"
#define ORIGIN "Origin: http://" NAME ":8080\r\n"
    v = check(&s, WS("", ORIGIN));
    ASSERT_REFUSED(v, "401", "ticket");
    v = check(&s, WS("?console_key=" KEY, ORIGIN));
    ASSERT_REFUSED(v, "401", "ticket");
    v = check(&s, WS("?ticket=" TOKEN, ""));
    ASSERT_REFUSED(v, "403", "Origin");
    v = check(&s, WS("?ticket=" TOKEN, "Origin: http://127.0.0.1:9090\r\n"));
    ASSERT_REFUSED(v, "403", "cross-origin");
    v = check(&s, "GET /v1/jobs?ticket=" TOKEN " HTTP/1.1\r\n" HOST JAR ORIGIN "Upgrade: websocket\r\n\r\n");
    ASSERT_REFUSED(v, "400", "attach only");
    s.now_ms = 1000 + CONSOLE_TICKET_MS; /* expired */
    v = check(&s, WS("?ticket=" TOKEN, ORIGIN));
    ASSERT_REFUSED(v, "401", "ticket");
    s.now_ms = 1000;
    v = check(&s, WS("?ticket=" TOKEN, ORIGIN));
    assert_int_equal(v.action, GATE_FORWARD);
    v = check(&s, WS("?ticket=" TOKEN, ORIGIN)); /* once */
    ASSERT_REFUSED(v, "401", "ticket");
    /* the oldest is replaced when all are kept */
    for (int i = 0; i < CONSOLE_TICKETS + 1; i++) {
        char t[CONSOLE_SECRET_HEX + 1];
        snprintf(t, sizeof t, "%064d", i);
        s.now_ms = 2000 + i;
        console_gate_ticket_add(&s, t);
    }
    v = check(&s, WS("?ticket=0000000000000000000000000000000000000000000000000000000000000000", ORIGIN));
    ASSERT_REFUSED(v, "401", "ticket");
    v = check(&s, WS("?ticket=0000000000000000000000000000000000000000000000000000000000000008", ORIGIN));
    assert_int_equal(v.action, GATE_FORWARD);
    char out[1024];
    const char *head = WS("?ticket=" TOKEN, ORIGIN);
    size_t n = console_gate_rewrite(head, strstr(head, "\r\n\r\n"), out, sizeof out);
    out[n] = 0;
    assert_string_equal(out, "GET /v1/jobs/abc/attach HTTP/1.1\r\n" HOST "Upgrade: websocket\r\n"
                             "Connection: Upgrade\r\n\r\n");
}

static void test_secret_equal(void **state)
{
    (void)state;
    assert_true(console_secret_equal(KEY, 64, KEY));
    assert_false(console_secret_equal(KEY, 63, KEY));
    assert_false(console_secret_equal(KEY "3", 65, KEY));
    assert_false(console_secret_equal(SESSION, 64, KEY));
    assert_false(console_secret_equal("", 0, KEY));
}

/* how much of what follows a head is its request's body (the rest is never passed on) */
static void test_body_length(void **state)
{
    (void)state;
    static const struct {
        const char *head;
        long long want;
    } cases[] = {
        {"GET /v1/jobs HTTP/1.1\r\nHost: a\r\n\r\n", 0},
        {"POST /v1/jobs HTTP/1.1\r\nContent-Length: 17\r\n\r\n", 17},
        {"POST /v1/jobs HTTP/1.1\r\ncontent-length:   0  \r\n\r\n", 0},
        {"POST /v1/jobs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", -1},
        {"POST /v1/jobs HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", -1},
        {"POST /v1/jobs HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", -1},
        {"POST /v1/jobs HTTP/1.1\r\nContent-Length: -1\r\n\r\n", -1},
        {"POST /v1/jobs HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n\r\n", -1},
        {"GET /v1/jobs/a/attach HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *h = cases[i].head, *end = strstr(h, "\r\n\r\n");
        long long got = console_gate_body_length(h, end);
        if (got != cases[i].want)
            fail_msg("%s: %lld, want %lld", h, got, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sign_in_once_and_bind_the_origin),
        cmocka_unit_test(test_a_cross_site_navigation_signs_in_with_a_page),
        cmocka_unit_test(test_wrong_tokens),
        cmocka_unit_test(test_the_cookie_opens_the_files_only),
        cmocka_unit_test(test_the_key_and_the_cookie_together),
        cmocka_unit_test(test_the_exact_origin),
        cmocka_unit_test(test_changes_are_json),
        cmocka_unit_test(test_malformed_heads),
        cmocka_unit_test(test_rewrite),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_tickets),
        cmocka_unit_test(test_body_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
