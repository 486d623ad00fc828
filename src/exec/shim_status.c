/* The shim's records of a job's run (shim_status.h): written by the shim, read by joblet. */
#include "shim_status.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../common/util.h"
#include "shim.h"

/* An end record is a JSON object; a start line begins with the init's pid. */
static bool is_kind(const char *txt, const char *name)
{
    return (txt[0] == '{') == !strcmp(name, SHIM_STATUS);
}

int shim_record_write(int dirfd, const char *dir, const char *name, const char *txt, size_t len, bool *files,
                      char *err, size_t errlen)
{
    if (!*files && fsetxattr(dirfd, SHIM_RECORD_XATTR, txt, len, 0) == 0)
        return 0;
    *files = true;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    jerr e = {0};
    if (write_file_opt(path, txt, len, 0600, WF_ATOMIC, &e) < 0) {
        snprintf(err, errlen, "%s", e.msg);
        return -1;
    }
    if (!strcmp(name, SHIM_STATUS))
        unlinkat(dirfd, SHIM_STARTED, 0); /* the end replaces the start, as the attribute's does */
    return 0;
}

char *shim_record_read(const char *dir, const char *name)
{
    char buf[4096];
    ssize_t n = getxattr(dir, SHIM_RECORD_XATTR, buf, sizeof buf - 1);
    char *txt = NULL;
    if (n >= 0) {
        txt = xmalloc((size_t)n + 1);
        memcpy(txt, buf, (size_t)n);
        txt[n] = 0;
    } else if (errno == ERANGE) { /* bigger than a page: an end record with a long error */
        n = getxattr(dir, SHIM_RECORD_XATTR, NULL, 0);
        if (n > 0) {
            txt = xmalloc((size_t)n + 1);
            n = getxattr(dir, SHIM_RECORD_XATTR, txt, (size_t)n);
            if (n < 0) {
                free(txt);
                txt = NULL;
            } else
                txt[n] = 0;
        }
    }
    if (txt && is_kind(txt, name))
        return txt;
    free(txt);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return read_file(path, NULL);
}

void shim_record_clear(const char *dir)
{
    /* the end first: a crash in between leaves a start line, which a waiting job's reader
     * never takes (only a shim's) */
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, SHIM_STATUS);
    unlink(path);
    removexattr(dir, SHIM_RECORD_XATTR);
    snprintf(path, sizeof path, "%s/%s", dir, SHIM_STARTED);
    unlink(path);
}

static void copy(char *out, size_t len, json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(out, len, "%s", s ? s : "");
}

int shim_status_read(const char *dir, shim_status *st)
{
    *st = (shim_status){0};
    char *txt = shim_record_read(dir, SHIM_STATUS);
    json_t *o = txt ? json_loads(txt, 0, NULL) : NULL;
    free(txt);
    if (!json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    json_t *ec = json_object_get(o, "exit_code");
    st->has_exit = json_is_integer(ec);
    st->exit_code = (int)json_integer_value(ec);
    st->signal = (int)json_integer_value(json_object_get(o, "signal"));
    copy(st->signal_name, sizeof st->signal_name, o, "signal_name");
    copy(st->error, sizeof st->error, o, "error");
    json_t *u = json_object_get(o, "usage");
    st->cpu_ns = (uint64_t)json_integer_value(json_object_get(u, "cpu_ns"));
    st->memory_peak_bytes = (uint64_t)json_integer_value(json_object_get(u, "memory_peak_bytes"));
    st->io_read_bytes = (uint64_t)json_integer_value(json_object_get(u, "io_read_bytes"));
    st->io_write_bytes = (uint64_t)json_integer_value(json_object_get(u, "io_write_bytes"));
    st->started_at_ms = json_integer_value(json_object_get(o, "started_at_ms"));
    st->ended_at_ms = json_integer_value(json_object_get(o, "ended_at_ms"));
    copy(st->end_reason, sizeof st->end_reason, o, "end_reason");
    json_t *lb = json_object_get(o, "log_bytes");
    st->log_bytes = json_is_integer(lb) && json_integer_value(lb) >= 0 ? json_integer_value(lb) : -1;
    json_decref(o);
    return 0;
}
