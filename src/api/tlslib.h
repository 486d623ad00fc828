/* GnuTLS made ready when joblet first needs it (the TLS listener, `joblet cert`), not when it is
 * loaded. GnuTLS comes with libmicrohttpd whether or not remote.listen is set, and both
 * libraries' constructors initialise it (gnutls_global_init: its ASN.1 trees, the random
 * generator, the algorithms' tables): about 0.7 MiB of the daemon's idle RSS for a listener most
 * machines never open (docs/performance.md, "idle RSS").
 *
 * tlslib.c defines, in the executable, the two symbols through which that happens, which the
 * dynamic linker binds ahead of the libraries' own: _gnutls_global_init_skip (GnuTLS's
 * GNUTLS_SKIP_GLOBAL_INIT: its constructor does nothing) and gnutls_global_init (libmicrohttpd's
 * constructor's call does nothing either). Until tlslib_init has run, no GnuTLS function may be
 * called: each would fail (GNUTLS_E_LIB_IN_ERROR_STATE). Only in the joblet executable. */
#ifndef JOBLET_API_TLSLIB_H
#define JOBLET_API_TLSLIB_H

#include "../common/err.h"

/* GnuTLS's own gnutls_global_init, the first time: 0, or -1 with e saying why. Later calls
 * return the first one's outcome. Main thread only. */
int tlslib_init(jerr *e);

#endif
