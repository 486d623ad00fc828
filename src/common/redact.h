/* Scrubbing many secret values out of one text in one pass (Aho-Corasick). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Replaces, in place, every run of bytes of text covered by an occurrence of any of the n
 * needles by "***"; overlapping and adjacent occurrences make one run. The text never grows (a
 * run of 1 or 2 bytes becomes as many '*'). Empty needles are ignored. Time is linear in the text's length plus
 * the needles' total length, whatever the needles and the text hold: one scan, never a rescan per
 * match (a strstr+memmove per match was quadratic: 1 MiB of '*' held the loop 9 s, issue 25).
 * Returns whether anything was replaced. */
bool redact_all(char *text, const char *const *needles, size_t n);
