/* APT sources (aptsrc.h). Two formats: one-line ("deb [opts] URI SUITE COMPONENT...") and
 * deb822 stanzas ("Types: deb", "URIs: ...", "Suites: ...", "Enabled: no"). Only http(s) and
 * file URIs are taken: cdrom: and the like are no use to a build. */
#include "aptsrc.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

static bool uri_usable(const char *u)
{
    return !strncmp(u, "http://", 7) || !strncmp(u, "https://", 8) || !strncmp(u, "file:/", 6);
}

static int take(const char *uri, size_t n, char *out, size_t len)
{
    while (n && uri[n - 1] == '/')
        n--;
    if (!n || n >= len)
        return -1;
    snprintf(out, len, "%.*s", (int)n, uri);
    return 0;
}

/* Whitespace-separated word list contains w. */
static bool has_word(const char *list, const char *w)
{
    size_t wl = strlen(w);
    for (const char *p = list; *p;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == wl && !strncmp(p, w, n))
            return true;
        p += n;
    }
    return false;
}

/* One-line style. */
static int from_list(char *text, const char *suite, char *out, size_t len)
{
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line += strspn(line, " \t");
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        if (strncmp(line, "deb", 3) || (line[3] != ' ' && line[3] != '\t'))
            continue;
        char *p = line + 3;
        p += strspn(p, " \t");
        if (*p == '[') { /* options: [arch=amd64 signed-by=...] */
            char *end = strchr(p, ']');
            if (!end)
                continue;
            p = end + 1;
            p += strspn(p, " \t");
        }
        size_t un = strcspn(p, " \t");
        char *s = p + un;
        s += strspn(s, " \t");
        size_t sn = strcspn(s, " \t");
        if (sn == strlen(suite) && !strncmp(s, suite, sn) && uri_usable(p) && take(p, un, out, len) == 0)
            return 0;
    }
    return -1;
}

/* deb822 style: stanzas separated by blank lines; a line starting with a space continues
 * the field before (Signed-By's key block) and is skipped. */
static int from_sources(char *text, const char *suite, char *out, size_t len)
{
    char *types = NULL, *uris = NULL, *suites = NULL;
    bool enabled = true;
    for (char *line = text; line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *l = line + strspn(line, " \t");
        bool blank = !*l;
        if (!blank && *l != '#' && line[0] != ' ' && line[0] != '\t') {
            char *colon = strchr(l, ':');
            if (colon) {
                *colon = 0;
                char *v = colon + 1;
                v += strspn(v, " \t");
                if (!strcasecmp(l, "Types"))
                    types = v;
                else if (!strcasecmp(l, "URIs"))
                    uris = v;
                else if (!strcasecmp(l, "Suites"))
                    suites = v;
                else if (!strcasecmp(l, "Enabled"))
                    enabled = strcasecmp(v, "no") != 0 && strcasecmp(v, "false") != 0;
            }
        }
        line = nl ? nl + 1 : NULL;
        if (!blank && line)
            continue;
        /* the stanza ends */
        if (enabled && types && uris && suites && has_word(types, "deb") && has_word(suites, suite))
            for (const char *p = uris; *p;) {
                p += strspn(p, " \t");
                size_t n = strcspn(p, " \t");
                if (n && uri_usable(p) && take(p, n, out, len) == 0)
                    return 0;
                p += n;
            }
        types = uris = suites = NULL;
        enabled = true;
    }
    return -1;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int aptsrc_mirror(const char *etc_apt, const char *suite, char *out, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/sources.list", etc_apt);
    char *t = read_file(path, NULL);
    if (t) {
        int rc = from_list(t, suite, out, len);
        free(t);
        if (rc == 0)
            return 0;
    }
    snprintf(path, sizeof path, "%s/sources.list.d", etc_apt);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || !((l > 5 && !strcmp(de->d_name + l - 5, ".list")) ||
                                      (l > 8 && !strcmp(de->d_name + l - 8, ".sources"))))
            continue;
        names = xrealloc(names, (n + 1) * sizeof *names);
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/sources.list.d/%s", etc_apt, names[i]);
        if (rc < 0 && (t = read_file(path, NULL))) {
            size_t l = strlen(names[i]);
            rc = !strcmp(names[i] + l - 5, ".list") ? from_list(t, suite, out, len) : from_sources(t, suite, out, len);
            free(t);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}
