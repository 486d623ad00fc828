/* Bounds on a JSON text checked before it is parsed (issue 14, "Bounded parsing"). jansson
 * allocates some 40 to 230 bytes per value, so a request body well under its byte limit made of
 * tiny values ("[{},{},…]": 232 bytes per 3-byte object) could make the daemon hold gigabytes.
 * jsonscan reads the text once, holding nothing but one small record per level of nesting, and
 * says whether it stays within the limits; only then is it handed to jansson (jsonscan_load).
 *
 * The scan follows JSON's structure exactly (brackets, keys, colons, commas) and reads its
 * tokens loosely: a string ends at its first unescaped '"', a number is a run of [0-9+-.eE] (of
 * which what jansson's lexer reads as a number is checked, whether jansson can hold it: the one
 * at the run's start, and one right after it, "1-1e999", which jansson lexes before it stops), a
 * literal a run of letters. Whatever jansson accepts, the scan counts as jansson builds it
 * (tests/fuzz/fuzz_jsonscan.c checks this); what jansson refuses (a bad escape, a control
 * character, invalid UTF-8, "nul", duplicate keys) is left for jansson to refuse, with its own
 * message. A structural error stops the scan: jansson then reads only the bytes up to it. */
#ifndef JOBLET_JSONSCAN_H
#define JOBLET_JSONSCAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

typedef struct jsonscan_limits {
    unsigned depth;           /* objects and arrays inside each other; the outermost is level 1 */
    size_t members;           /* members of one object */
    size_t elements;          /* elements of one array */
    size_t string_bytes;      /* a string's (or a key's) length, as decoded */
    const char *long_key;     /* a member of this name may hold a string of any length (an inline
                               * upload's content_b64: the body's size bounds it); NULL: none */
    size_t values;            /* values in the whole text, the outermost one included */
    size_t containers;        /* objects and arrays in the whole text */
    const char *fits;         /* what a request at these limits holds, for the refusal's last
                               * words ("an upload listing of 100,000 entries fits"); may be NULL */
} jsonscan_limits;

typedef enum jsonscan_over {
    JSONSCAN_OK = 0,
    JSONSCAN_SYNTAX,          /* a structural error at .at: the text is not JSON */
    JSONSCAN_DEPTH,
    JSONSCAN_STRING,
    JSONSCAN_MEMBERS,
    JSONSCAN_ELEMENTS,
    JSONSCAN_CONTAINERS,
    JSONSCAN_VALUES,
} jsonscan_over;

typedef struct jsonscan_result {
    /* The limit passed: depth when the text nests too deep (past that level only brackets are
     * counted), else the first passed in the text's order; JSONSCAN_SYNTAX when none was passed
     * before a structural error. */
    jsonscan_over over;
    size_t amount;            /* how much there is of it: levels, the string's bytes, the object's
                               * members, the array's elements, the text's containers or values */
    bool at_least;            /* the scan stopped (a structural error) before amount was final */
    char where[192];          /* the place: "jobs[0].request.args[3]"; "" for the whole text */
    size_t at;                /* the byte offset of the structural error (or of the place) */
    /* the first number jansson cannot hold (an integer outside 64 bits, a real past a double's
     * range), limits or not: its place and text, so that its refusal names its field; nlen 0:
     * none */
    char number_where[192];
    size_t number_at, number_len;
    /* what the scan saw, limits or not (tests, the fuzz harness) */
    unsigned depth;
    size_t values, containers, max_members, max_elements, max_string, max_key;
} jsonscan_result;

/* Whether the number text[0, n) (JSON's syntax: an integer when it has no '.', 'e' or 'E') is one
 * jansson cannot hold: an integer outside 64 bits (strtoll), a real whose magnitude is past a
 * double's (strtod; one that underflows is taken, as 0). rnx's check of a listing's items
 * (cli/json_items.c) asks it too. */
bool jsonscan_number_too_big(const char *text, size_t n);

/* How much of text[0, n) jansson's lexer reads as one number: -?(0|[1-9][0-9]*)(.[0-9]+)?
 * ([eE][+-]?[0-9]+)?, as it reads it (lex_scan_number): what follows is another token to it
 * ("7+7E2" is the number 7, then a bad token). 0 where it reads no number there ("-", "01", "1.",
 * "1e+": a bad token). rnx's check of a listing's items asks it too. */
size_t jsonscan_number_len(const char *text, size_t n);

/* Scans len bytes of text (no NUL needed). Returns res->over. */
jsonscan_over jsonscan(const char *text, size_t len, const jsonscan_limits *lim, jsonscan_result *res);

/* The one way a request body becomes JSON: scanned within lim, then parsed with
 * JSON_REJECT_DUPLICATES. NULL with e set: past a limit (413, or 400 for the depth; the message
 * names the limit, how much the text has and where, and what is taken) or not JSON (400,
 * jansson's words, after "the request body is not valid JSON: "; a number jansson cannot hold is
 * named by its place and what would be accepted). */
json_t *jsonscan_load(const char *text, size_t len, const jsonscan_limits *lim, jerr *e);

#endif
