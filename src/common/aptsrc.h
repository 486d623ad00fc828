/* The Debian mirror this machine is configured with (aptsrc.c): read from APT's own sources,
 * so a runtime is built from the mirror the machine already trusts and can reach. */
#ifndef JOBLET_APTSRC_H
#define JOBLET_APTSRC_H

#include <stddef.h>

#define APTSRC_FALLBACK "http://deb.debian.org/debian"

/* The URI of the first enabled "deb" source of `suite` (exact suite name, so bookworm finds
 * the main archive, not bookworm-security) in etc_apt/sources.list, then in
 * etc_apt/sources.list.d/ (*.list one-line style, *.sources deb822 style, files in name
 * order). Returns 0 and the URI without a trailing '/', or -1 when there is none (the caller
 * falls back to APTSRC_FALLBACK). */
int aptsrc_mirror(const char *etc_apt, const char *suite, char *out, size_t len);

#endif
