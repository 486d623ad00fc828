/* Scrubbing many secret values out of one text in one pass.
 *
 * An Aho-Corasick automaton over the needles: a trie whose nodes carry a failure link (the
 * longest proper suffix of the node's string that is also a trie node) and the length of the
 * longest needle that ends there (its own, or through the failure link). The text is read once;
 * at each byte the automaton says the longest needle ending at it. A second pass from the end
 * marks every byte some occurrence covers, and a third writes the text back with each covered run
 * as "***". Transitions live in one open-addressing hash keyed by (node, byte), seeded from the
 * kernel's random bytes so that no choice of needles makes its probes collide. */
#include "redact.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

typedef struct {
    uint32_t fail;    /* failure link */
    uint32_t out;     /* length of the longest needle ending here, 0 when none */
    uint32_t child;   /* first child (0: none; the root is never a child) */
    uint32_t sibling; /* next child of the same parent */
    uint8_t byte;     /* the byte that leads here from the parent */
} ac_node;

typedef struct {
    uint64_t key; /* (node << 8 | byte) + 1; 0 is an empty slot */
    uint32_t to;
} ac_slot;

typedef struct {
    ac_node *nodes;
    size_t nnodes, cap;
    ac_slot *slots;
    size_t mask; /* slots - 1, a power of two minus one */
    uint64_t seed;
} ac;

static size_t ac_hash(const ac *a, uint64_t key)
{
    uint64_t z = key ^ a->seed; /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (size_t)(z ^ (z >> 31)) & a->mask;
}

/* The child of node by byte, or 0. */
static uint32_t ac_next(const ac *a, uint32_t node, uint8_t byte)
{
    uint64_t key = ((uint64_t)node << 8 | byte) + 1;
    for (size_t i = ac_hash(a, key);; i = (i + 1) & a->mask) {
        if (a->slots[i].key == key)
            return a->slots[i].to;
        if (!a->slots[i].key)
            return 0;
    }
}

static uint32_t ac_add(ac *a, uint32_t node, uint8_t byte)
{
    uint32_t got = ac_next(a, node, byte);
    if (got)
        return got;
    uint32_t id = (uint32_t)a->nnodes++;
    a->nodes[id] = (ac_node){.byte = byte, .sibling = a->nodes[node].child};
    a->nodes[node].child = id;
    uint64_t key = ((uint64_t)node << 8 | byte) + 1;
    size_t i = ac_hash(a, key);
    while (a->slots[i].key)
        i = (i + 1) & a->mask;
    a->slots[i] = (ac_slot){.key = key, .to = id};
    return id;
}

bool redact_all(char *text, const char *const *needles, size_t n)
{
    size_t total = 1, tlen = strlen(text);
    for (size_t k = 0; k < n; k++)
        total += strlen(needles[k]);
    if (!tlen || total == 1)
        return false;
    ac a = {.nodes = xcalloc(total, sizeof(ac_node)), .nnodes = 1, .cap = total};
    size_t slots = 16;
    while (slots < 2 * total)
        slots <<= 1;
    a.slots = xcalloc(slots, sizeof(ac_slot));
    a.mask = slots - 1;
    if (getrandom(&a.seed, sizeof a.seed, 0) != (ssize_t)sizeof a.seed)
        a.seed = (uint64_t)(uintptr_t)&a ^ 0x9e3779b97f4a7c15ull; /* never: the kernel's CSPRNG is seeded */

    /* the trie */
    for (size_t k = 0; k < n; k++) {
        uint32_t node = 0, depth = 0;
        for (const uint8_t *p = (const uint8_t *)needles[k]; *p; p++, depth++)
            node = ac_add(&a, node, *p);
        if (node)
            a.nodes[node].out = depth;
    }
    /* failure links, breadth first: a node's comes from its parent's */
    uint32_t *queue = xmalloc(a.nnodes * sizeof *queue);
    size_t qh = 0, qt = 0;
    for (uint32_t c = a.nodes[0].child; c; c = a.nodes[c].sibling) {
        a.nodes[c].fail = 0;
        queue[qt++] = c;
    }
    while (qh < qt) {
        uint32_t u = queue[qh++];
        for (uint32_t v = a.nodes[u].child; v; v = a.nodes[v].sibling) {
            uint32_t f = a.nodes[u].fail, to;
            while (!(to = ac_next(&a, f, a.nodes[v].byte)) && f)
                f = a.nodes[f].fail;
            a.nodes[v].fail = to;
            if (!a.nodes[v].out) /* its own needle is the longest; else the longest suffix's */
                a.nodes[v].out = a.nodes[to].out;
            queue[qt++] = v;
        }
    }
    free(queue);

    /* the longest needle ending at each byte */
    uint32_t *ends = xmalloc(tlen * sizeof *ends);
    uint32_t state = 0;
    bool any = false;
    for (size_t i = 0; i < tlen; i++) {
        uint8_t b = (uint8_t)text[i];
        uint32_t to;
        while (!(to = ac_next(&a, state, b)) && state)
            state = a.nodes[state].fail;
        state = to;
        ends[i] = a.nodes[state].out;
        any |= ends[i] != 0;
    }
    free(a.nodes);
    free(a.slots);
    if (!any) {
        free(ends);
        return false;
    }
    /* covered bytes, from the end: byte i is covered when an occurrence ending at or after i
     * starts at or before it (ends[] becomes 1 for covered, 0 for kept) */
    size_t from = SIZE_MAX;
    for (size_t i = tlen; i-- > 0;) {
        if (ends[i] && i + 1 - ends[i] < from)
            from = i + 1 - ends[i];
        ends[i] = from <= i;
    }
    /* write back: each covered run is "***" */
    size_t w = 0;
    for (size_t i = 0; i < tlen;) {
        if (!ends[i]) {
            text[w++] = text[i++];
            continue;
        }
        size_t run = i;
        while (i < tlen && ends[i])
            i++;
        size_t keep = i - run < 3 ? i - run : 3;
        memcpy(text + w, "***", keep);
        w += keep;
    }
    text[w] = 0;
    free(ends);
    return true;
}
