/* The /v1/networks routes (routes_network.c; docs/api.md, "Networks"). */
#ifndef JOBLET_ROUTES_NETWORK_H
#define JOBLET_ROUTES_NETWORK_H

#include "http.h"

/* /v1/networks (name NULL) and /v1/networks/NAME. */
enum MHD_Result routes_network(request *r, const char *name);

#endif
