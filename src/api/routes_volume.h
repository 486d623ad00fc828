/* The /v1/volumes routes (routes_volume.c; docs/api.md, "Volumes"). */
#ifndef JOBLET_ROUTES_VOLUME_H
#define JOBLET_ROUTES_VOLUME_H

#include "http.h"

/* /v1/volumes (name NULL) and /v1/volumes/NAME. */
enum MHD_Result routes_volume(request *r, const char *name);

#endif
