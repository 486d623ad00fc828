/* The bounds a request body is held to before jansson parses it (src/common/jsonscan.c): every
 * JSON body of the API goes through jsonscan_load. Input: three bytes of limits (depth 1-8,
 * string bytes 0-31, members and elements 0-15, values 0-255 and containers 0-63; a member
 * named "k" may hold a longer string), then the text. Checks:
 *   - whatever jansson accepts, the scan (without limits) accepts, counting exactly what
 *     jansson built: values, objects and arrays, depth, the largest object and array, the
 *     longest string and key;
 *   - where the scan finds the text is not JSON, jansson refuses it too, within the bytes the
 *     scan read (so jansson never builds what the scan did not count);
 *   - what jsonscan_load returns within the limits holds no more than they allow, and what it
 *     refuses it refuses with a status and a message. */
#include <jansson.h>

#include "common/jsonscan.h"
#include "fuzz.h"

typedef struct tally {
    size_t values, containers, members, elements, string, key;
    unsigned depth;
    bool long_over;  /* a string past string_bytes that is not the long key's */
} tally;

static void count(json_t *j, unsigned depth, const char *key, const jsonscan_limits *lim, tally *t)
{
    t->values++;
    if (json_is_string(j)) {
        size_t n = json_string_length(j);
        if (n > t->string)
            t->string = n;
        if (n > lim->string_bytes && !(key && lim->long_key && !strcmp(key, lim->long_key)))
            t->long_over = true;
        return;
    }
    if (!json_is_object(j) && !json_is_array(j))
        return;
    t->containers++;
    if (depth > t->depth)
        t->depth = depth;
    if (json_is_object(j)) {
        if (json_object_size(j) > t->members)
            t->members = json_object_size(j);
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            if (strlen(k) > t->key)
                t->key = strlen(k);
            if (strlen(k) > lim->string_bytes)
                t->long_over = true;
            count(v, depth + 1, k, lim, t);
        }
    } else {
        if (json_array_size(j) > t->elements)
            t->elements = json_array_size(j);
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            count(v, depth + 1, NULL, lim, t);
    }
}

static const jsonscan_limits wide = {
    .depth = 2048, .members = SIZE_MAX, .elements = SIZE_MAX, .string_bytes = SIZE_MAX,
    .values = SIZE_MAX, .containers = SIZE_MAX,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    jsonscan_limits lim = {
        .depth = 1u + (data[0] & 7u), .string_bytes = data[0] >> 3, .members = data[1] & 15u,
        .elements = data[1] >> 4, .values = data[2], .containers = data[2] >> 2, .long_key = "k", .fits = "fuzz",
    };
    const char *text = (const char *)data + 3;
    size_t len = size - 3;

    jsonscan_result r;
    jsonscan_over over = jsonscan(text, len, &wide, &r);
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (j) {
        tally t = {0};
        count(j, 1, NULL, &wide, &t);
        FUZZ_ASSERT(over == JSONSCAN_OK, "jansson accepts what the scan refuses (%d at %zu)", (int)over, r.at);
        FUZZ_ASSERT(!r.number_len, "jansson holds a number the scan says it cannot (at %zu)", r.number_at);
        FUZZ_ASSERT(r.values == t.values && r.containers == t.containers && r.depth == t.depth &&
                        r.max_members == t.members && r.max_elements == t.elements && r.max_string == t.string &&
                        r.max_key == t.key,
                    "the scan counts differently: values %zu/%zu containers %zu/%zu depth %u/%u members %zu/%zu "
                    "elements %zu/%zu string %zu/%zu key %zu/%zu", r.values, t.values, r.containers, t.containers,
                    r.depth, t.depth, r.max_members, t.members, r.max_elements, t.elements, r.max_string, t.string,
                    r.max_key, t.key);
        json_decref(j);
    }
    /* (jansson reads a token before it asks whether one may stand there: a number where a key
     * should be is "too big" to it, a structural error to the scan) */
    if (!j && over != JSONSCAN_SYNTAX && (!strncmp(je.text, "too big ", 8) || !strncmp(je.text, "real number overflow", 20)))
        FUZZ_ASSERT(r.number_len, "jansson cannot hold a number the scan did not find (%s)", je.text);
    if (over == JSONSCAN_SYNTAX) {
        FUZZ_ASSERT(!j, "jansson accepts a text the scan finds is not JSON (at %zu)", r.at);
        json_t *prefix = json_loadb(text, r.at < len ? r.at + 1 : len, JSON_REJECT_DUPLICATES, &je);
        FUZZ_ASSERT(!prefix, "jansson accepts the text up to where the scan stopped (%zu)", r.at);
    }

    jerr e = {0};
    json_t *got = jsonscan_load(text, len, &lim, &e);
    if (got) {
        tally t = {0};
        count(got, 1, NULL, &lim, &t);
        FUZZ_ASSERT(t.depth <= lim.depth && t.members <= lim.members && t.elements <= lim.elements &&
                        t.values <= lim.values && t.containers <= lim.containers && !t.long_over,
                    "accepted past the limits: depth %u members %zu elements %zu values %zu containers %zu, a "
                    "string too long %d", t.depth, t.members, t.elements, t.values, t.containers, t.long_over);
        FUZZ_ASSERT(!e.msg[0], "accepted with a message: %s", e.msg);
        json_decref(got);
    } else {
        FUZZ_ASSERT(e.msg[0] && (e.http == 400 || e.http == 413), "refused with %d: '%s'", e.http, e.msg);
    }
    return 0;
}
