/* The console's static files, built into joblet (scripts/embed_assets.py writes the table from
 * assets/console/ at build time). */
#ifndef JOBLET_CONSOLE_ASSETS_H
#define JOBLET_CONSOLE_ASSETS_H

#include <stddef.h>

typedef struct console_asset {
    const char *name;          /* "index.html", "console.js" */
    const char *ctype;
    const unsigned char *data;
    size_t len;
    const unsigned char *gz;   /* the same, gzip-compressed at build time */
    size_t gz_len;
    const char *tag;           /* 32 hex digits of the bytes' SHA-256: the entity tag's core */
} console_asset;

/* Ends with a row whose name is NULL. */
extern const console_asset console_assets[];

#endif
