/* The items of a long JSON answer's array, one at a time as the answer comes, and their text laid
 * out as print_json lays out a value, without building the whole answer in memory: `rnx job list`
 * of 162,000 jobs was 142 MB of JSON, of which jansson's parse of the whole took 4 s of rnx's
 * CPU and ~1 GB of memory before the first line was printed (docs/performance.md). */
#ifndef JOBLET_JSON_ITEMS_H
#define JOBLET_JSON_ITEMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Called with each whole item's text (exactly its bytes, not 0-terminated); returns 0 to go on,
 * -1 to stop (json_items_feed then returns -1). */
typedef int (*json_items_cb)(const char *text, size_t len, void *ud);

typedef struct json_items json_items;

/* A reader of a body that is exactly {"KEY":[ITEM,...]} as joblet writes it (no space: jansson's
 * compact form), each ITEM an object or an array. An item longer than max bytes (of another
 * layout: a whole body longer than max) is refused (json_items_too_big): what is held of the
 * answer stays bounded whatever the server sends. */
json_items *json_items_new(const char *key, size_t max, json_items_cb cb, void *ud);
/* The next n bytes of the body: 0, or -1 when they are not what the body must be (the callback's
 * -1 too). Once a body went wrong every later call returns -1. */
int json_items_feed(json_items *ji, const char *buf, size_t n);
/* Whether the body fed so far is the whole of one (its closing "]}" seen, nothing but white space
 * after). */
bool json_items_done(const json_items *ji);
/* Whether the body is not of the shape streamed: its first bytes are not {"KEY":[ (an older or
 * other server's layout); the caller parses the whole instead. Known after 1 byte that differs. */
bool json_items_other(const json_items *ji);
/* Whether the body was refused for an item (or a whole body of another layout) over max. */
bool json_items_too_big(const json_items *ji);
/* That whole body (its bytes, 0-terminated), when json_items_other. */
const char *json_items_whole(const json_items *ji, size_t *len);
void json_items_free(json_items *ji);

/* The text of one JSON value (compact or not) appended to *out (*len of *cap, grown with
 * xrealloc) as json_dumpf lays it out with JSON_INDENT(2), nested depth levels in (its first line
 * not indented: the caller's place). Strings, numbers and literals are copied as they are.
 * flush(ud) (when not NULL) is called to write *out and empty it whenever *out holds flush_at bytes
 * or more: a value's layout takes up to 1 + 2 x depth bytes for each of its own (a ',' 2,000 deep
 * is a line of 4,000 spaces), so what is held of it stays bounded by flush_at, not by its size. */
void json_items_indent_to(const char *text, size_t n, int depth, char **out, size_t *len, size_t *cap, size_t flush_at,
                          void (*flush)(void *ud), void *ud);
/* Whether t[0..n) is one JSON value as jansson parses one, printed at nesting level at
 * (json_items_indent_to's depth; rnx job list's items are 1, in the listing's array): RFC 8259's
 * grammar, white space around it allowed, its strings' bytes UTF-8 (RFC 3629), its containers and
 * those it is printed in at most 2,048 deep (an item 2,048 deep made a listing 2,049 deep, which
 * jansson refused). An item printed as it came (json_items_indent_to) is not parsed: a server's
 * malformed one would otherwise be printed as if it were JSON. */
bool json_items_valid_at(const char *t, size_t n, int at);
/* n bytes of s appended to *out (0-terminated after them), grown as json_items_indent_to grows it. */
void json_items_append(char **out, size_t *len, size_t *cap, const char *s, size_t n);

#endif
