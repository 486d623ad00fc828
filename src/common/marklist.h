/* The objects marked since the list was last taken, each once: what changed in a loop turn, for
 * a step that looks at those alone instead of at every object kept (core/publish.c: workflows
 * and job arrays whose status may have changed). Each object carries its own flag, a bool at
 * flag_off, so marking is O(1); removing one (an object freed while listed) is a walk of the
 * list, which is short: what changed since the last turn. Pure. */
#ifndef JOBLET_MARKLIST_H
#define JOBLET_MARKLIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct marklist {
    void **v;
    size_t n, cap;
    size_t flag_off; /* offsetof(the objects' type, their bool "listed") */
} marklist;

#define MARKLIST_INIT(type, flag) {.flag_off = offsetof(type, flag)}

/* obj into the list, unless it is there already. */
void marklist_add(marklist *l, void *obj);
/* obj out of the list, when it is there (before it is freed). */
void marklist_remove(marklist *l, void *obj);
/* Keeps only the objects keep says yes to (order kept; those left out keep their flag set:
 * they are being freed). */
void marklist_keep(marklist *l, bool (*keep)(const void *obj));
/* The objects marked (*n of them), each one's flag cleared, and an empty list; the caller frees
 * the vector (NULL when none). */
void **marklist_take(marklist *l, size_t *n);
void marklist_free(marklist *l);

#endif
