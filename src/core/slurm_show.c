/* `scontrol show node` read (slurm_show.h). */
#include "slurm_show.h"

#include <stdio.h>
#include <string.h>

int slurm_show_parse(const char *text, bool *drained, char *reason, size_t len)
{
    *drained = false;
    reason[0] = 0;
    int found = -1;
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t ll = strcspn(line, "\n");
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, "Reason=", 7) == 0) {
            const char *v = p + 7, *end = line + ll;
            /* "Reason=why [user@time]": the bracket is Slurm's, not the reason's */
            if (end > v && end[-1] == ']') {
                for (const char *b = end - 1; b > v; b--)
                    if (*b == '[' && b[-1] == ' ') {
                        end = b - 1;
                        break;
                    }
            }
            snprintf(reason, len, "%.*s", (int)(end - v), v);
            continue;
        }
        /* State=IDLE+DRAIN as a token of its own (not NextState=, not inside a Reason) */
        for (const char *s = line; s < line + ll; s++) {
            if (strncmp(s, "State=", 6) || (s > line && s[-1] != ' ' && s[-1] != '\t'))
                continue;
            size_t vl = strcspn(s + 6, " \t\n");
            char v[128];
            snprintf(v, sizeof v, "%.*s", (int)vl, s + 6);
            *drained = strstr(v, "DRAIN") != NULL;
            found = 0;
            break;
        }
    }
    return found;
}
