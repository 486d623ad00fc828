/* The web console's files (docs/console.md): GET / is the page, GET /console/NAME its scripts,
 * styles and pictures, all built into joblet. The page then speaks the JSON API and
 * GET /v1/events like any client; `rnx console` carries a browser's requests to the socket. */
#ifndef JOBLET_CONSOLE_H
#define JOBLET_CONSOLE_H

#include <stdbool.h>

#include "http.h"

/* Whether the request is for the console's files; if so, answers it. */
bool console_route(request *r, enum MHD_Result *rc);

#endif
