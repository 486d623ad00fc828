/* api/tlslib.c: linked, as in joblet, with libmicrohttpd (whose constructor calls
 * gnutls_global_init) and GnuTLS (whose constructor initialises it unless told not to): GnuTLS
 * is not initialised until tlslib_init, works after it, and a second tlslib_init changes
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "api/tlslib.h"

static void test_deferred(void **state)
{
    /* libmicrohttpd is loaded and its constructor has run (its version answers) */
    assert_non_null(MHD_get_version());
    gnutls_x509_crt_t crt = NULL;
    assert_int_equal(gnutls_x509_crt_init(&crt), GNUTLS_E_LIB_IN_ERROR_STATE);
    /* a library's call, as libmicrohttpd's constructor makes it, does not initialise it */
    assert_int_equal(gnutls_global_init(), 0);
    assert_int_equal(gnutls_x509_crt_init(&crt), GNUTLS_E_LIB_IN_ERROR_STATE);

    jerr e = {0};
    assert_int_equal(tlslib_init(&e), 0);
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    gnutls_x509_crt_deinit(crt);
    unsigned char r[16];
    assert_int_equal(gnutls_rnd(GNUTLS_RND_NONCE, r, sizeof r), 0);
    assert_int_equal(tlslib_init(&e), 0);
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    gnutls_x509_crt_deinit(crt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_deferred)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
