/* Slurm's ids of a task from its cgroup path (slurmcg.h). */
#include "slurmcg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<prefix><digits>" at s (up to the next '/' or the end): the number, -1 when not so. */
static int64_t component_num(const char *s, size_t len, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (len <= pl || strncmp(s, prefix, pl) || len - pl > 19)
        return -1;
    int64_t v = 0;
    for (size_t i = pl; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int slurmcg_parse(const char *path, slurm_ids *out)
{
    *out = (slurm_ids){0};
    const char *c[6];
    size_t l[6], n = 0;
    for (const char *p = path; *p;) {
        if (*p == '/') {
            p++;
            continue;
        }
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (n == 6)
            return -1;
        c[n] = p;
        l[n++] = len;
        p += len;
    }
    if (n != 4 && n != 5)
        return -1;
    /* CgroupPrepend's last component: slurm, or slurm_<node> */
    if (l[0] < 5 || strncmp(c[0], "slurm", 5) || (l[0] > 5 && c[0][5] != '_'))
        return -1;
    int64_t uid = component_num(c[1], l[1], "uid_"), job = component_num(c[2], l[2], "job_");
    if (uid < 0 || uid > UINT32_MAX - 1 || job < 0 || l[3] <= 5 || strncmp(c[3], "step_", 5) || l[3] - 5 >= 16)
        return -1;
    char step[16];
    memcpy(step, c[3] + 5, l[3] - 5);
    step[l[3] - 5] = 0;
    bool num = true;
    for (char *s = step; *s; s++)
        num = num && *s >= '0' && *s <= '9';
    if (!num && strcmp(step, "batch") && strcmp(step, "extern") && strcmp(step, "interactive"))
        return -1;
    int64_t task = -1;
    if (n == 5 && (task = component_num(c[4], l[4], "task_")) < 0)
        return -1;
    *out = (slurm_ids){.set = true, .uid = (uint32_t)uid, .job = (uint64_t)job, .task = task};
    memcpy(out->step, step, sizeof step);
    return 0;
}

bool slurmcg_same(const slurm_ids *a, const slurm_ids *b)
{
    return a->set && b->set && a->uid == b->uid && a->job == b->job && !strcmp(a->step, b->step) &&
           (a->task < 0 || b->task < 0 || a->task == b->task);
}

void slurmcg_text(const slurm_ids *s, char *out, size_t len)
{
    if (!s->set)
        snprintf(out, len, "%s", "");
    else if (s->task >= 0)
        snprintf(out, len, "%llu.%s.%lld", (unsigned long long)s->job, s->step, (long long)s->task);
    else
        snprintf(out, len, "%llu.%s", (unsigned long long)s->job, s->step);
}

json_t *slurmcg_to_json(const slurm_ids *s)
{
    if (!s->set)
        return NULL;
    return json_pack("{s:I,s:s,s:o,s:I}", "job", (json_int_t)s->job, "step", s->step, "task",
                     s->task >= 0 ? json_integer(s->task) : json_null(), "uid", (json_int_t)s->uid);
}

bool slurmcg_from_json(const json_t *o, slurm_ids *s)
{
    *s = (slurm_ids){0};
    json_t *job = json_object_get(o, "job"), *step = json_object_get(o, "step"), *task = json_object_get(o, "task"),
           *uid = json_object_get(o, "uid");
    if (!json_is_integer(job) || !json_is_string(step) || !json_is_integer(uid) ||
        strlen(json_string_value(step)) >= sizeof s->step)
        return false;
    s->set = true;
    s->job = (uint64_t)json_integer_value(job);
    s->uid = (uint32_t)json_integer_value(uid);
    snprintf(s->step, sizeof s->step, "%s", json_string_value(step));
    s->task = json_is_integer(task) ? json_integer_value(task) : -1;
    return true;
}
