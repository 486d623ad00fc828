#include "tlslib.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>

/* (Both names are GnuTLS's, not of this file: the dynamic linker binds them by name.) */

/* GNUTLS_SKIP_GLOBAL_INIT (gnutls.h): GnuTLS's constructor leaves the library as loaded. */
int _gnutls_global_init_skip(void);
int _gnutls_global_init_skip(void) { return 1; }

static bool tlslib_wanted; /* tlslib_init has been called: calls go to GnuTLS */

/* Every caller's gnutls_global_init, libmicrohttpd's constructor's (MHD_init) and this
 * executable's: nothing until tlslib_init wants GnuTLS, GnuTLS's own after that. libmicrohttpd's
 * destructor calls gnutls_global_deinit once; with no init counted that does nothing, after
 * tlslib_init it is the only deinit, at exit. */
int gnutls_global_init(void)
{
    if (!tlslib_wanted)
        return 0;
    int (*real)(void) = (int (*)(void))dlsym(RTLD_NEXT, "gnutls_global_init");
    return real ? real() : GNUTLS_E_INTERNAL_ERROR;
}

int tlslib_init(jerr *e)
{
    static int rc = 1; /* 1: not asked yet */
    if (rc == 1) {
        tlslib_wanted = true;
        rc = gnutls_global_init();
    }
    return rc < 0 ? jerr_set(e, EIO, "GnuTLS could not be initialised: %s", gnutls_strerror(rc)) : 0;
}
