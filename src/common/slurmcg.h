/* Slurm's ids of a task (slurmcg.c): read from where Slurm put the task, never from what the
 * task says. Slurm 22.05's cgroup/v1 plugin makes, in each controller it uses,
 *   <prepend>/uid_<U>/job_<J>/step_<S>[/task_<T>]
 * where <prepend> is CgroupPrepend ("/slurm"; "/slurm_<node>" with several slurmd on one host)
 * and <S> a number, "batch", "extern" or "interactive"; memory, cpuset and devices have a
 * task level, freezer (proctrack) does not. */
#ifndef JOBLET_SLURMCG_H
#define JOBLET_SLURMCG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct slurm_ids {
    bool set;                 /* false: not a Slurm task (every other field 0) */
    uint32_t uid;             /* uid_<U>: whose task it is */
    uint64_t job;             /* job_<J> */
    char step[16];            /* step_<S>: "0", "batch", "extern", "interactive" */
    int64_t task;             /* task_<T>; -1 when the path has no task level */
} slurm_ids;

/* Reads a cgroup path (as /proc/PID/cgroup shows it, relative to the hierarchy's mount) into
 * out: 0, or -1 when it is not a Slurm step's or task's cgroup (out then unset). */
int slurmcg_parse(const char *path, slurm_ids *out);
/* Whether a and b name the same uid, job and step (and task, where both have one). */
bool slurmcg_same(const slurm_ids *a, const slurm_ids *b);
/* "J.S.T" ("J.S" without a task): how rnx shows it. */
void slurmcg_text(const slurm_ids *s, char *out, size_t len);
/* {"job": J, "step": "S", "task": T|null, "uid": U}, NULL when unset; and back (false when
 * o is not one: s unset). For the API's and the database's edges. */
json_t *slurmcg_to_json(const slurm_ids *s);
bool slurmcg_from_json(const json_t *o, slurm_ids *s);

#endif
