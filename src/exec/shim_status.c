/* The shim's status record (shim_status.h), read back. */
#include "shim_status.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static void copy(char *out, size_t len, json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(out, len, "%s", s ? s : "");
}

int shim_status_read(const char *path, shim_status *st)
{
    *st = (shim_status){0};
    json_t *o = json_load_file(path, 0, NULL);
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
    json_decref(o);
    return 0;
}
