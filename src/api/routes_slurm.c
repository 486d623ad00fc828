/* POST /v1/slurm/tasks: the plugin's body read into a typed request (core/slurm_task.h). */
#include "routes_slurm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"
#include "../core/job_json.h"
#include "../core/settle.h"
#include "../core/slurm_task.h"
#include "../core/state.h"
#include "body.h"
#include "park.h"
#include "reply.h"

/* Variables of Slurm's environment the job does not take: joblet numbers its GPUs itself
 * (CUDA_VISIBLE_DEVICES from 0), and NVIDIA_VISIBLE_DEVICES would read as a GPU request. */
static const char *const dropped_env[] = {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
                                          "NVIDIA_DRIVER_CAPABILITIES", "GPU_DEVICE_ORDINAL",
                                          "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"};

static bool env_name_ok(const char *s, size_t n)
{
    if (!n || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    for (size_t i = 0; i < ARRAY_LEN(dropped_env); i++)
        if (strlen(dropped_env[i]) == n && !strncmp(s, dropped_env[i], n))
            return false;
    return true;
}

/* A list of device nodes' absolute paths. */
static int nodes_from_json(json_t *a, const char *key, char ***out, size_t *n, jerr *e)
{
    size_t i;
    json_t *v;
    *out = xcalloc(json_array_size(a) + 1, sizeof **out);
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v) || json_string_value(v)[0] != '/')
            return jerr_field(e, key, "%s[%zu]: must be a device node's absolute path (\"/dev/nvidia0\")", key, i);
        (*out)[(*n)++] = xstrdup(json_string_value(v));
    }
    return 0;
}

/* {"argv": [..], "env": ["K=V", ..], "runtime": NAME, "volumes": [..], "network": "host"|"none" (default
 * host), "gpus": ["/dev/nvidia0", ..],
 * "task_gpus": [..], "slurm": {"job", "step", "task", "uid"}, "tty": true|false} into r; the job request goes
 * through the same reader as POST /v1/jobs. tty (srun --pty): the job gets a terminal of its own (POST /v1/jobs'
 * "tty" and "stdin"), which the plugin attaches to and relays Slurm's pty to, instead of the task's stdio. */
static int task_from_json(json_t *b, slurm_task_req *r, jerr *e)
{
    *r = (slurm_task_req){0};
    static const char *const known[] = {"argv", "env",       "runtime", "volumes", "network",
                                        "gpus", "task_gpus", "slurm",   "tty"};
    const char *key;
    json_t *val;
    json_object_foreach(b, key, val)
    {
        size_t k = 0;
        while (k < ARRAY_LEN(known) && strcmp(key, known[k]))
            k++;
        if (k == ARRAY_LEN(known))
            return jerr_field(e, key, "%s: not a field of a Slurm task (argv, env, runtime, volumes, network, gpus, "
                                      "task_gpus, slurm, tty)", key);
    }
    json_t *argv = json_object_get(b, "argv"), *env = json_object_get(b, "env"), *gpus = json_object_get(b, "gpus"),
           *slurm = json_object_get(b, "slurm"), *v;
    size_t i;
    if (!json_is_array(argv) || !json_array_size(argv) || !json_is_string(json_array_get(argv, 0)))
        return jerr_field(e, "argv", "argv: must be the task's command line, a non-empty list of strings");
    if (env && !json_is_array(env))
        return jerr_field(e, "env", "env: must be a list of \"NAME=value\" strings");
    if (gpus && !json_is_array(gpus))
        return jerr_field(e, "gpus", "gpus: must be a list of device nodes (\"/dev/nvidia0\")");
    json_t *task_gpus = json_object_get(b, "task_gpus");
    if (task_gpus && !json_is_array(task_gpus))
        return jerr_field(e, "task_gpus", "task_gpus: must be a list of device nodes (\"/dev/nvidia0\")");
    json_t *tty = json_object_get(b, "tty");
    if (tty && !json_is_boolean(tty))
        return jerr_field(e, "tty", "tty: must be true or false");
    if (slurm && !slurmcg_from_json(slurm, &r->claimed))
        return jerr_field(e, "slurm", "slurm: must be {\"job\": J, \"step\": \"S\", \"task\": T, \"uid\": U}");
    json_t *q = json_object();
    json_object_set(q, "command", json_array_get(argv, 0));
    json_t *args = json_array(), *ev = json_object();
    json_array_foreach(argv, i, v) if (i) json_array_append(args, v);
    json_object_set_new(q, "args", args);
    json_array_foreach(env, i, v)
    {
        const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
        if (eq && env_name_ok(kv, (size_t)(eq - kv))) {
            char name[256];
            if ((size_t)(eq - kv) < sizeof name) {
                memcpy(name, kv, (size_t)(eq - kv));
                name[eq - kv] = 0;
                json_object_set_new(ev, name, json_string(eq + 1));
            }
        }
    }
    json_object_set_new(q, "env", ev);
    const char *keys[] = {"runtime", "volumes", "network"};
    for (i = 0; i < ARRAY_LEN(keys); i++)
        if ((v = json_object_get(b, keys[i])) && !json_is_null(v))
            json_object_set(q, keys[i], v);
    /* a step's tasks talk to each other across nodes (MPI, NCCL, torch.distributed): the node's
     * network unless the step asked for none (--joblet-network=none) */
    if (!json_object_get(q, "network"))
        json_object_set_new(q, "network", json_string("host"));
    if (json_is_true(tty)) {
        json_object_set_new(q, "tty", json_true());
        json_object_set_new(q, "stdin", json_true());
    }
    if (r->claimed.set) {
        char t[64], name[80];
        slurmcg_text(&r->claimed, t, sizeof t);
        snprintf(name, sizeof name, "slurm-%s", t);
        json_object_set_new(q, "name", json_string(name));
    }
    int rc = jobreq_from_json(q, &r->req, 0, time(NULL), e);
    json_decref(q);
    if (rc < 0)
        return -1;
    if (nodes_from_json(gpus, "gpus", &r->gpus, &r->ngpus, e) < 0 ||
        (task_gpus && nodes_from_json(task_gpus, "task_gpus", &r->task_gpus, &r->ntask_gpus, e) < 0)) {
        slurm_task_req_free(r);
        return -1;
    }
    return 0;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/* The process that connected, as a pidfd (SO_PEERPIDFD: the kernel's record from connect, never
 * a process that got its pid since): the fd; -2 when the peer is gone (ESRCH, or EINVAL before
 * Linux 6.16, which hands out no pidfd of an ended process); -1 otherwise (before 6.5 the kernel
 * has no such option, or no fd was left: the task is then found by SO_PEERCRED's pid). */
static int peer_pidfd(request *r)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (r->who.via != CALLER_UNIX || !ci)
        return -1;
    int fd = -1;
    socklen_t len = sizeof fd;
    if (getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
        return fd;
    return errno == ESRCH || errno == EINVAL ? -2 : -1;
}

enum MHD_Result routes_slurm_task(request *r)
{
    jerr e = {0};
    json_t *b = body_json(r, BODY_REQUEST, &e);
    if (!b)
        return http_reply_error(r->conn, &e);
    slurm_task_req t;
    int rc = task_from_json(b, &t, &e);
    json_decref(b);
    if (rc < 0)
        return http_reply_error(r->conn, &e);
    int pidfd = peer_pidfd(r);
    if (pidfd == -2) {
        slurm_task_req_free(&t);
        jerr_http(&e, 403, "the process that connected (pid %d) is gone: a Slurm task asks from its own process, "
                           "which waits for the job", (int)r->who.pid);
        return http_reply_error(r->conn, &e);
    }
    job *j = slurm_task_start(&r->who, pidfd, &t, &e);
    if (!j && t.account_wait) {
        /* the task's uid's account, asked off the loop (core/nsscache.h): the request waits for
         * it and runs again (the task is looked at again from the start) */
        jerr pe = {0};
        if (park_for_account_known(r, t.account_uid, false, &pe) || pe.msg[0])
            return http_reply_error(r->conn, pe.msg[0] ? &pe : &e);
        return MHD_YES;
    }
    if (!j)
        return http_reply_error(r->conn, &e);
    if (r->made)
        snprintf(r->made, HTTP_MADE_LEN, "%s", j->id);
    settle();
    state_commit();
    return http_reply_json(r->conn, 201, job_json(j));
}
