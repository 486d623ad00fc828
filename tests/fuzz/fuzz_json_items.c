/* rnx's check of a listing's items (src/cli/json_items.c) against jansson, differentially: rnx
 * job list --json prints each item as the server sent it, without building it, and must print
 * only what jansson (rnx's parse of a whole answer, flags 0) would take. Input: one byte, the
 * level the item is printed at (0-3: the depth it is nested in), then the text. Checks:
 *   - json_items_valid_at(text, level) is true exactly when jansson parses the text as one value,
 *     and that value nested in `level` arrays (what rnx prints: the item inside the listing),
 *     but for a NUL byte outside a string, which it refuses where jansson may skip it;
 *   - what it takes, json_items_indent_to lays out as text jansson parses back to the same value
 *     (json_equal). */
#include <jansson.h>

#include "cli/json_items.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int level = data[0] & 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    /* the text nested in `level` arrays, as the listing holds it */
    char *wrapped = malloc(len + 2 * (size_t)level + 1);
    if (!wrapped)
        abort();
    memset(wrapped, '[', (size_t)level);
    memcpy(wrapped + level, text, len);
    memset(wrapped + level + len, ']', (size_t)level);
    json_t *whole = json_loadb(wrapped, len + 2 * (size_t)level, JSON_DECODE_ANY, NULL);
    free(wrapped);
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, NULL);
    bool ok = json_items_valid_at(text, len, level);
    /* (one value: v; nested at its level within jansson's depth: whole) */
    bool jansson = v && whole;
    /* (a NUL byte outside a string is no JSON (RFC 8259): jansson's reader skips one after a
     * number or a literal in some places ("[1\0]", "true\0": taken; "[true\0,false]": not);
     * json_items_valid_at refuses each) */
    bool nul = memchr(text, 0, len) != NULL;
    FUZZ_ASSERT(ok == jansson || (!ok && nul), "json_items_valid_at %s at level %d what jansson %s",
                ok ? "takes" : "refuses", level, jansson ? "takes" : "refuses");
    if (ok && v) {
        char *out = NULL;
        size_t olen = 0, cap = 0;
        json_items_indent_to(text, len, level, &out, &olen, &cap, SIZE_MAX, NULL, NULL);
        json_t *back = json_loadb(out ? out : "", olen, JSON_DECODE_ANY, NULL);
        FUZZ_ASSERT(back && json_equal(back, v), "the layout is not the same value: %.*s", (int)(olen < 200 ? olen : 200),
                    out ? out : "");
        json_decref(back);
        free(out);
    }
    json_decref(v);
    json_decref(whole);
    return 0;
}
