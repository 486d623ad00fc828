/* A request's query string (query.c): one reading of ?key=value for every route. */
#ifndef JOBLET_API_QUERY_H
#define JOBLET_API_QUERY_H

#include <stdbool.h>

#include "http.h"

/* The value of key, NULL when the query has none. */
const char *query_get(request *r, const char *key);
/* key is in the query, with a value or without ("?signal" as much as "?signal=USR1"). */
bool query_has(request *r, const char *key);
/* key is given as a switch: "1", "true" or no value ("?follow"). */
bool query_true(request *r, const char *key);
/* The first key of the query that is not one of known (NULL-terminated), or NULL when every
 * key is: a route that reads a fixed set refuses a key it would silently not read. */
const char *query_unknown(request *r, const char *const *known);

#endif
