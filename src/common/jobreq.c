/* The one job request schema (jobreq.h): the table, the typed request, and its JSON. */
#include "jobreq.h"
#include "arrayspec.h"
#include "netaddr.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "jsonx.h"
#include "log.h"
#include "util.h"

#define OFF(m) offsetof(job_req, m)
#define TEN_YEARS_S (10ll * 365 * 86400)
/* max_cpu's words, in the table's sentence and in the machine's (jobreq_check_machine) alike */
#define CPU_PERCENT "a CPU percentage"
#define CPU_PERCENT_IS "a whole number, 100 = one core"

/* Every field of a job request. key: the API's name and the first word of every message
 * about it; flag: rnx job run's; yaml: the workflow file's (res: under resources:); kind and
 * unit: how its value is held and how text of it reads; min, max: what is accepted (for text,
 * max is its length); accepts: the sentence a refusal ends with, after the value quoted. */
const jobreq_field jobreq_fields[JR_N] = {
    /* key              flag             yaml             res    daemon kind      unit        min, max */
    [JR_COMMAND] = {"command", NULL, "command", false, false, JK_TEXT, JU_NONE, 1, 4096, OFF(command),
                    "must be the program to run, at most %2$lld bytes"},
    [JR_ARGS] = {"args", NULL, "args", false, false, JK_LIST, JU_NONE, 0, 128 * 1024, OFF(args),
                 "must be a list of strings of at most %2$lld bytes each"},
    [JR_NAME] = {"name", "--name", NULL, false, false, JK_TEXT, JU_NAME, 1, 128, OFF(name),
                 "must be a non-empty name of at most %2$lld bytes",
        "NAME", "a name to recognise the job by"},
    [JR_ENV] = {"env", "--env", "environment", false, false, JK_ENV, JU_NONE, 0, 128 * 1024, OFF(env),
                "must be an object of NAME: value strings",
        "K=V", "set an environment variable (repeatable; K alone: your own $K, as docker run -e K)"},
    [JR_SECRET_ENV] = {"secret_env", "--secret-env", "secret_environment", false, false, JK_ENV, JU_NONE, 0,
                       128 * 1024, OFF(secret_env), "must be an object of NAME: value strings",
        "K=V", "set a secret variable: never shown or logged (repeatable; K alone: your own $K,\n"
        "kept off the command line)"},
    /* where the command starts; /work when not given */
    [JR_WORKDIR] = {"workdir", "--workdir", "workdir", false, false, JK_TEXT, JU_PATH, 1, 1024, OFF(workdir),
                    "must be an absolute path without '..' (e.g. /work/src)",
        "DIR", "directory the command starts in"},
    [JR_NETWORK] = {"network", "--network", "network", false, false, JK_TEXT, JU_NETWORK, 1, 32, OFF(network),
                    "is not accepted; use none (loopback only), host, isolated, bridge or a network's name",
        "none|host|isolated|bridge|NAME",
        "none: loopback only; host: the host's network; isolated: its own NAT'd link; bridge or a "
        "network made with rnx network create: reaches the network's jobs by name"},
    /* percent of one core; the machine's CPUs bound it (jobreq_check_machine, in these words) */
    [JR_MAX_CPU] = {"max_cpu", "--max-cpu", "max_cpu", true, false, JK_INT, JU_PERCENT, 1, INT64_MAX >> 1,
                    OFF(max_cpu), "must be " CPU_PERCENT " from %lld up: " CPU_PERCENT_IS " (e.g. 50, 250)",
        "PERCENT", "CPU limit in percent of one core: 50, 100 (one core), 250", .limit = "max_cpu %s"},
    /* the machine's memory bounds it */
    [JR_MAX_MEMORY_MB] = {"max_memory_mb", "--max-memory", "max_memory", true, false, JK_INT, JU_MB, 4,
                          INT64_MAX >> 20, OFF(max_memory_mb),
                          "is not a size of at least %lld MB; use megabytes (4096) or a unit: 4096MB, 8GB",
        "SIZE", "memory limit: megabytes (512) or 512MB, 8GB, 1TB", .limit = "memory %s"},
    [JR_MAX_IOBPS] = {"max_iobps", "--max-iobps", "max_io_bps", true, false, JK_INT, JU_BYTES, 1, INT64_MAX >> 1,
                      OFF(max_iobps), "is not a rate of at least %lld byte per second; use 1048576, 512K, 10MB, 1G",
        "RATE", "disk I/O limit in bytes per second: 1048576, 512K, 10MB, 1G", .limit = "iobps %s/s"},
    /* a job on a network of joblet's: tc on both ends of its veth (exec/net_main.c) */
    [JR_MAX_NETBPS] = {"max_netbps", "--max-netbps", "max_net_bps", true, false, JK_INT, JU_BYTES, 1024, INT64_MAX >> 1,
                       OFF(max_netbps), "is not a rate of at least %lld bytes per second; use 1048576, 512K, 10MB, 1G",
        "RATE", "network rate limit each way in bytes per second (isolated, bridge or named networks): 10MB, 1G",
        .limit = "netbps %s/s"},
    [JR_CPU_CORES] = {"cpu_cores", "--cpu-cores", "cpu_cores", true, false, JK_TEXT, JU_CPUS, 1, 4096,
                      OFF(cpu_cores), "is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5",
        "LIST", "CPUs the job may run on: 0-3, 1,3,5, 0-1,4", .limit = "cpu_cores %s"},
    [JR_MAX_RUNTIME_S] = {"max_runtime_s", "--max-runtime", "max_runtime", true, false, JK_INT, JU_SECONDS, 1,
                          TEN_YEARS_S, OFF(max_runtime_s),
                          "must be a duration from %lld second to %lld seconds (ten years): 90, 30s, 30min, 2h30m, 1d, "
                          "or Slurm's H:MIN:SEC, D-H[:MIN[:SEC]]",
        "DURATION", "stop the job after this long: 90, 30s, 30min, 2h30m, 1d, or Slurm's\n"
                    "2:00:00, 1-12 (a bare number is seconds)", .limit = "max runtime %s"},
    [JR_SCHEDULE_AT] = {"schedule_at", "--schedule", NULL, false, false, JK_TEXT, JU_TIME, 1, 64, OFF(schedule_at),
                        "is not an RFC 3339 time (2026-11-22T15:04:05Z)",
        "WHEN", "start later: a delay (30min, 2h) or a time (2026-11-22T15:00:00Z)"},
    [JR_UPLOADS] = {"uploads", "--upload", "uploads", false, false, JK_UPLOADS, JU_NONE, 0, 100000, OFF(uploads),
                    "must be an array of {path, type, mode, content_b64}",
        "PATH", "send a file or directory (recursively) along with the job\n"
                    "(repeatable): /a/b/x.py arrives as x.py, /a/data/ as data/...;\n"
                    "streamed (progress on a terminal); modes are kept, except setuid,\n"
                    "setgid and sticky bits; symlinks must stay inside the job's /work"},
    /* 0: no GPU, as leaving it out (templates and scripts write 0) */
    [JR_GPU_COUNT] = {"gpu_count", "--gpu", "gpu_count", true, false, JK_INT, JU_GPUS, 0, 64, OFF(gpu_count),
                      "must be a number of GPUs from %lld to %lld, or all",
        "N|all", "N whole GPUs (or every GPU), granted all at once; the job waits until\n"
                    "they are free. Inside, CUDA numbers them 0..N-1"},
    [JR_GPU_MEMORY_MB] = {"gpu_memory_mb", "--gpu-memory", "gpu_memory_mb", true, false, JK_INT, JU_MB, 1, 1ll << 30,
                          OFF(gpu_memory_mb),
                          "is not a size of at least %lld MB; use megabytes (4096) or a unit: 4096MB, 8GB",
        "SIZE", "each GPU must have at least this much memory: 4096, 4096MB, 16GB"},
    [JR_GPU_ALL] = {"gpu_all", "--gpu=all", "gpu_count: all", true, false, JK_BOOL, JU_NONE, 0, 1, OFF(gpu_all),
                    "must be true or false"},
    /* indexes or UUIDs, as docker --gpus device=; the daemon stores UUIDs */
    [JR_GPU_IDS] = {"gpu_ids", "--gpu-ids", NULL, true, false, JK_LIST, JU_NONE, 1, 64, OFF(gpu_ids),
                    "must be a list of GPU indexes or UUIDs (rnx gpu list)",
        "LIST", "exactly these GPUs: indexes or UUIDs, e.g. 0,1 (as docker --gpus device=)"},
    [JR_GPU_CAPS] = {"gpu_caps", "--gpu-caps", NULL, true, false, JK_TEXT, JU_CAPS, 1, 255, OFF(gpu_caps),
                     "is not a list of driver capabilities; use compute, utility, video, graphics, display, compat32 "
                     "or all",
        "LIST", "driver capabilities: compute, utility, video, graphics, display, all\n"
                    "(default compute,utility)"},
    [JR_GPU_OPTIONAL] = {"gpu_optional", "--gpu-optional", NULL, true, false, JK_BOOL, JU_NONE, 0, 1,
                         OFF(gpu_optional), "must be true or false",
        NULL, "run without GPUs when this machine can never give them (status says so)"},
    [JR_GPU_MIG] = {"gpu_mig", "--gpu-mig", "gpu_mig", true, false, JK_TEXT, JU_NAME, 1, 64, OFF(gpu_mig),
                    "must be a MIG profile, e.g. 1g.10gb (rnx gpu show lists them)",
        "PROFILE", "one MIG device of this profile, e.g. 1g.10gb (a GPU in MIG mode is\n"
                    "handed out only as its MIG devices)"},
    [JR_PRIORITY] = {"priority", "--priority", "priority", true, false, JK_INT, JU_NONE, -1000, 1000, OFF(priority),
                     "must be a whole number from %lld to %lld (higher runs first; default 0)",
        "N", "-1000..1000, default 0: waiting jobs start highest first;\nabove 0 is an admin's"},
    [JR_GPU_TYPE] = {"gpu_type", "--gpu-type", "gpu_type", true, false, JK_TEXT, JU_NAME, 1, 128, OFF(gpu_type),
                     "must be a GPU model, e.g. H100 (rnx gpu list shows the names)",
        "MODEL", "only GPUs whose name contains MODEL, e.g. H100, A100-SXM4-80GB"},
    [JR_GPU_CC] = {"gpu_cc", "--gpu-cc", "gpu_cc", true, false, JK_TEXT, JU_CC, 1, 8, OFF(gpu_cc),
                   "is not a compute capability; give MAJOR.MINOR, e.g. 8.0 or 9.0",
        "X.Y", "only GPUs of compute capability X.Y or more, e.g. 8.0"},
    [JR_GPU_SHARE] = {"gpu_share", "--gpu-share", "gpu_share", true, false, JK_BOOL, JU_NONE, 0, 1, OFF(gpu_share),
                      "must be true or false",
        NULL, "share one GPU with other jobs through NVIDIA MPS, reserving\n"
                    "--gpu-memory of it (needs --gpu=1 and --gpu-memory)"},
    [JR_CROSS_NUMA] = {"cross_numa", "--cross-numa", "cross_numa", true, false, JK_BOOL, JU_NONE, 0, 1,
                       OFF(cross_numa), "must be yes or no (true or false)",
        "yes|no", "no: all its GPUs on one NUMA node (default yes)"},
    [JR_PREEMPTIBLE] = {"preemptible", "--preemptible", "preemptible", true, false, JK_BOOL, JU_NONE, 0, 1,
                        OFF(preemptible), "must be true or false",
        NULL, "a job of higher priority may stop it; it then waits in the\n"
                    "queue again (state PREEMPTED) and reruns from the start"},
    /* a prepared root filesystem (docs/runtimes.md); the daemon refuses one it does not have */
    [JR_RUNTIME] = {"runtime", "--runtime", "runtime", false, false, JK_TEXT, JU_NAME, 1, 64, OFF(runtime),
                    "must be a runtime's name, e.g. python-3.11-ml (rnx runtime list)",
        "NAME", "run in this runtime's root filesystem (python-3.11-ml; rnx runtime list)\n"
                    "instead of the host's system directories"},
    /* volumes mounted at /volumes/NAME (docs/volumes.md); --volume may be given again */
    [JR_VOLUMES] = {"volumes", "--volume", "volumes", false, false, JK_LIST, JU_VOLUME, 1, 32, OFF(volumes),
                    "must be a list of volume names, each NAME or NAME:ro (rnx volume list), at most %2$lld",
        "NAME[:ro]", "mount volume NAME at /volumes/NAME, read-write or :ro (repeatable;\n"
                    "rnx volume create)"},
    /* the isolation the job runs under (docs/sandbox.md): joblet's namespaces, or gVisor's runsc;
     * the machine's isolation.default when not given */
    [JR_ISOLATION] = {"isolation", "--isolation", "isolation", false, false, JK_TEXT, JU_ISOLATION, 1, 16,
                      OFF(isolation), "is not accepted; use native or gvisor",
        "native|gvisor", "native: joblet's own namespaces; gvisor: gVisor's runsc, a kernel\n"
                    "of its own between the job and the host (docs/sandbox.md);\n"
                    "default: the machine's isolation.default"},
    /* GPUs by CDI name (joblet cdi generate); --device may be given again */
    [JR_DEVICES] = {"devices", "--device", "devices", false, false, JK_LIST, JU_CDI, 1, 64, OFF(devices),
                    "must be a list of CDI device names: nvidia.com/gpu=INDEX, =UUID or =all, at most %2$lld",
        "CDI_NAME", "GPUs by CDI name, as docker --device and podman: nvidia.com/gpu=0,\n"
                    "=UUID or =all (joblet cdi generate; repeatable); not with --gpu,\n"
                    "--gpu-ids or --gpu-mig"},
    /* a terminal (docs/api.md, "Interactive streams"): made inside the job, in its own devpts;
     * the job waits for the first attach (jobs.attach_wait_s at most) before its command starts */
    [JR_TTY] = {"tty", "--tty", NULL, false, false, JK_BOOL, JU_NONE, 0, 1, OFF(tty), "must be true or false",
        NULL, "give the job a terminal (a pty made inside it): its stdin, stdout and\n"
                    "stderr are the terminal; rnx shows it here (with -i, your keys go\n"
                    "to it; ctrl-p ctrl-q detaches)", .letter = 't'},
    [JR_STDIN] = {"stdin", "--interactive", NULL, false, false, JK_BOOL, JU_NONE, 0, 1, OFF(stdin_open),
                  "must be true or false",
        NULL, "keep the job's stdin open: rnx sends its own stdin to the job (its\n"
                    "end closes the job's); without -t, stdout and stderr stay apart", .letter = 'i'},
    /* a job array (docs/batch.md): one request, its tasks made as they are scheduled */
    [JR_ARRAY] = {"array", "--array", "array", false, false, JK_TEXT, JU_ARRAY, 1, 1024, OFF(array),
                  "is not a task list; use Slurm's form: 0-99, 1,3,7, 0-15:4, and %N to run at most N at once",
        "LIST[%N]", "a job array, as sbatch --array: one task per id of LIST (0-99, 1,3,7,\n"
                    "0-15:4), at most N at once with %N; each task sees its id in\n"
                    "JOBLET_ARRAY_TASK_ID and SLURM_ARRAY_TASK_ID"},
    /* the jobs it waits for (core/depend.h): each resolved to a full id at submission */
    /* its command's warning before the limit (the shim sends it: exec/shim_main.c) */
    [JR_SIGNAL] = {"signal", "--signal", "signal", true, false, JK_TEXT, JU_SIGNAL, 1, 40, OFF(signal),
                   "is not SIG or SIG@SECONDS; give it as Slurm's --signal: USR1, USR1@90, B:USR1@90",
        "SIG[@SECS]", "send SIG (USR1, TERM...) to the command SECS seconds (default 60)\n"
                      "before --max-runtime ends it, to write a checkpoint (Slurm's --signal)",
        .limit = "signal %s"},
    [JR_AFTER] = {"after", "--after", NULL, false, false, JK_AFTER, JU_NONE, 1, JOBREQ_AFTER_MAX, OFF(after),
                  "must be a list of at most %2$lld {job, state}: a job's id, number, unique id prefix or name, and ok, "
                  "notok, any (the default), started or corr",
        "ID[:STATE]", "wait (PENDING) until job ID has gone so (repeatable, or a comma\n"
                    "list): STATE ok: it ended COMPLETED; notok: FAILED, STOPPED or\n"
                    "CANCELED; any: it ended (default); started: it started; corr\n"
                    "(an array after an array): each task once the task of the same id\n"
                    "ended COMPLETED. When it cannot any more, the job is CANCELED (end\n"
                    "reason dependency). A?B:ok waits for any one of them (Slurm's\n"
                    "'?'). Slurm's afterok:ID:ID2 reads too (and --dependency)"},
    /* one at a time among its owner's jobs of its name (core/depend.h); --after=singleton too */
    [JR_SINGLETON] = {"singleton", "--singleton", NULL, false, false, JK_BOOL, JU_NONE, 0, 1, OFF(singleton),
                      "must be true or false",
        NULL, "wait (PENDING) while another of your jobs of this --name runs,\n"
              "so they run one at a time, oldest first (Slurm's\n"
              "--dependency=singleton; --after=singleton reads too)"},
    /* after's items as "any one of" (Slurm's afterok:1?afterok:2): given in after's text by '?' */
    [JR_AFTER_ANY] = {"after_any", NULL, NULL, false, false, JK_BOOL, JU_NONE, 0, 1, OFF(after_any),
                      "must be true or false"},
    /* submitted HELD (core/submit.c), as sbatch -H */
    [JR_HOLD] = {"hold", "--hold", NULL, false, false, JK_BOOL, JU_NONE, 0, 1, OFF(hold), "must be true or false",
        NULL, "submit it held: it waits (HELD) until rnx job release ID, as\n"
              "Slurm's sbatch --hold"},
    /* what sbatch gives a job of itself, for scripts written for Slurm (exec/spec_build.c) */
    [JR_SLURM_ENV] = {"slurm_env", "--slurm-env", NULL, false, false, JK_BOOL, JU_NONE, 0, 1, OFF(slurm_env),
                      "must be true or false",
        NULL, "give the job Slurm's variables of itself, for a script written\n"
              "for sbatch: SLURM_JOB_ID (its number), SLURM_JOB_NAME,\n"
              "SLURM_CPUS_PER_TASK, SLURM_MEM_PER_NODE, SLURM_GPUS..., and an\n"
              "srun that runs a step as the job's one task (rnx job batch gives\n"
              "it)"},
    [JR_PIDS_MAX] = {"pids_max", NULL, NULL, false, true, JK_INT, JU_NONE, 0, INT64_MAX, OFF(pids_max),
                     "must be a whole number", .limit = "pids %s"},
    /* why a --gpu-optional job runs without the GPUs it asked for */
    [JR_GPU_DEGRADED] = {"gpu_degraded", NULL, NULL, false, true, JK_TEXT, JU_NONE, 0, 1024, OFF(gpu_degraded),
                         "must be a string"},
    /* each of its output streams' most bytes on disk (jobs.max_log_bytes when it was submitted) */
    [JR_MAX_LOG_BYTES] = {"max_log_bytes", NULL, NULL, false, true, JK_INT, JU_BYTES, 0, INT64_MAX, OFF(max_log_bytes),
                          "must be a whole number", .limit = "logs %s per stream"},
    /* the processes of its user's jobs together (jobs.max_pids_per_user when it was submitted) */
    [JR_USER_PIDS_MAX] = {"user_pids_max", NULL, NULL, false, true, JK_INT, JU_NONE, 0, INT64_MAX, OFF(user_pids_max),
                          "must be a whole number", .limit = "user's pids %s"},
    /* max_memory_mb came from jobs.default_memory_pct, not from the request (the request as
     * submitted, rnx job status --detail, leaves it out) */
    [JR_MEMORY_DEFAULT] = {"memory_default", NULL, NULL, false, true, JK_BOOL, JU_NONE, 0, 1, OFF(memory_default),
                           "must be true or false"},
    /* which volume each name in volumes is, pinned when the request was checked (core/volumes.h):
     * a volume removed and created again under its name is another, which the job never mounts */
    [JR_VOLUME_PINS] = {"volume_pins", NULL, NULL, false, true, JK_TEXT, JU_NONE, 0, 4096, OFF(volume_pins),
                        "must be a string"},
    /* the account that submitted it and whether its gid was one of the account's groups, pinned
     * at submission (core/submit.h): a job does not start for an account removed since (its uid
     * maybe another's now), nor with a group its owner has left */
    [JR_ACCOUNT_PIN] = {"account_pin", NULL, NULL, false, true, JK_TEXT, JU_NONE, 0, 300, OFF(account_pin),
                        "must be a string"},
};

static const char *const upload_keys[] = {"path", "type", "mode", "content_b64", "size", "target", NULL};
/* the listing the daemon stores once the files are written */
static const char *const listing_keys[] = {"path", "type", "mode", "size", "target", NULL};
static const char *const cap_names[] = {"compute", "utility", "video", "graphics", "display", "compat32", "all", NULL};

/* The fields by key, sorted once: a key is found in ~6 comparisons, not up to JR_N (a start
 * reads every stored request's keys: 162,000 requests of ~10 keys each). */
static const jobreq_field *by_key[JR_N];
static pthread_once_t by_key_once = PTHREAD_ONCE_INIT;

static int cmp_field_key(const void *a, const void *b)
{
    return strcmp((*(const jobreq_field *const *)a)->key, (*(const jobreq_field *const *)b)->key);
}

static void by_key_sort(void)
{
    for (int i = 0; i < JR_N; i++)
        by_key[i] = &jobreq_fields[i];
    qsort(by_key, JR_N, sizeof *by_key, cmp_field_key);
}

static int cmp_key_field(const void *key, const void *f)
{
    return strcmp(key, (*(const jobreq_field *const *)f)->key);
}

const jobreq_field *jobreq_field_by_key(const char *key)
{
    if (!key)
        return NULL;
    pthread_once(&by_key_once, by_key_sort);
    const jobreq_field *const *f = bsearch(key, by_key, JR_N, sizeof *by_key, cmp_key_field);
    return f ? *f : NULL;
}

const jobreq_field *jobreq_field_by_yaml(const char *key, bool resource)
{
    for (int i = 0; key && i < JR_N; i++)
        if (jobreq_fields[i].yaml && jobreq_fields[i].yaml_resource == resource && !strcmp(jobreq_fields[i].yaml, key))
            return &jobreq_fields[i];
    return NULL;
}

static enum jobreq_id id_of(const jobreq_field *f) { return (enum jobreq_id)(f - jobreq_fields); }

void jobreq_accepts(const jobreq_field *f, char *out, size_t len)
{
    /* the table's sentence with its bounds: the first %lld is min, the second max; %1$lld is
     * min and %2$lld max wherever they stand */
    size_t o = 0;
    int nth = 0;
    for (const char *p = f->accepts; *p && o + 1 < len; p++) {
        bool lld = !strncmp(p, "%lld", 4), pos = !strncmp(p, "%1$lld", 6) || !strncmp(p, "%2$lld", 6);
        if (lld || pos) {
            bool max = pos ? p[1] == '2' : nth++ > 0;
            o += (size_t)snprintf(out + o, len - o, "%lld", (long long)(max ? f->max : f->min));
            if (o >= len)
                o = len - 1;
            p += pos ? 5 : 3;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

/* User input may be any bytes and any length: a sane piece of it to quote in a message. */
static void quote_shown(const char *shown, char v[80])
{
    snprintf(v, 80, "%s", shown);
    if (strlen(shown) >= 80)
        snprintf(v + 80 - 4, 4, "...");
    utf8_sanitize(v);
    for (char *c = v; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';   /* no control characters in a message for a terminal */
}

/* "gpu_count: '0' must be a number of GPUs from 1 to 64, or all" */
static int refuse(jerr *e, const jobreq_field *f, const char *shown)
{
    char acc[300], v[80];
    jobreq_accepts(f, acc, sizeof acc);
    quote_shown(shown, v);
    return jerr_field(e, f->key, "%s: '%s' %s", f->key, v, acc);
}

/* A JSON value that is not a string or number, shown by its type. */
static int refuse_json(jerr *e, const jobreq_field *f, json_t *v)
{
    char buf[64];
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_string(v))
        return refuse(e, f, json_string_value(v));
    else if (json_is_real(v)) {
        /* the number itself, with its point ('1.5', '100.0' for 1e2): "'a fraction'" named
         * neither what was sent nor, for 1e2, what it is */
        snprintf(buf, sizeof buf, "%.15g", json_real_value(v));
        if (!strpbrk(buf, ".eni"))
            strcat(buf, ".0");
    } else
        snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "true" : json_is_false(v) ? "false"
                                        : json_is_array(v) ? "a list" : json_is_object(v) ? "an object" : "null");
    /* a text's field sent a number whose text it takes ({"array": 5}, {"gpu_cc": 8.0}, as "5" and
     * "8.0" are): the type is what is wrong, not the value, and "'5' is not a task list" would
     * say otherwise */
    if (f->kind == JK_TEXT && json_is_number(v)) {
        job_req scratch = {0};
        jerr te = {0};
        bool taken = jobreq_set_text(&scratch, f, buf, 0, &te) == 0;
        jobreq_free(&scratch);
        if (taken)
            return jerr_field(e, f->key, "%s: a number (%s), not a string; give it as a string: \"%s\"", f->key,
                              buf, buf);
    }
    return refuse(e, f, buf);
}

/* An empty text: "is empty; it must be ..." where the sentence says what it must be, else the
 * value quoted ("'' is not a CPU list; ..."), so every surface reads the same. */
static int empty(jerr *e, const jobreq_field *f)
{
    char acc[300];
    jobreq_accepts(f, acc, sizeof acc);
    if (strncmp(acc, "must ", 5))
        return refuse(e, f, "");
    return jerr_field(e, f->key, "%s: is empty; it %s", f->key, acc);
}

static int list_refused(jerr *e, const jobreq_field *f)
{
    char acc[300];
    jobreq_accepts(f, acc, sizeof acc);
    return jerr_field(e, f->key, "%s: %s", f->key, acc);
}

/* ---- the typed request ---------------------------------------------------------------- */

static char ***list_items(job_req *r, enum jobreq_id id, size_t **n);

/* A volume's name: letters, digits, '.', '_', '-', not starting with '.', at most 64. */
bool jobreq_volume_name_ok(const char *s, size_t len)
{
    return len > 0 && len <= 64 && s[0] != '.' &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") >= len;
}

int jobreq_volume_parse(const char *item, char *name, size_t len, bool *ro)
{
    const char *colon = strchr(item, ':');
    size_t n = colon ? (size_t)(colon - item) : strlen(item);
    if (!jobreq_volume_name_ok(item, n) || n >= len || (colon && strcmp(colon, ":ro") && strcmp(colon, ":rw")))
        return -1;
    memcpy(name, item, n);
    name[n] = 0;
    *ro = colon && !strcmp(colon, ":ro");
    return 0;
}

int jobreq_cdi_parse(const char *item, const char **dev)
{
    static const char kind[] = "nvidia.com/gpu=";
    if (strncmp(item, kind, sizeof kind - 1))
        return -1;
    const char *d = item + sizeof kind - 1;
    size_t n = strlen(d);
    bool digits = n > 0 && n <= 3 && strspn(d, "0123456789") == n;
    bool uuid = (!strncmp(d, "GPU-", 4) || !strncmp(d, "MIG-", 4)) && n <= 80 &&
                strspn(d + 4, "abcdefABCDEF0123456789-/") == n - 4 && n > 4;
    if (!digits && !uuid && strcmp(d, "all"))
        return -1;
    *dev = d;
    return 0;
}

/* A list given one item at a time (--volume a --volume b, --device x --device y). */
static bool one_per_flag(const jobreq_field *f) { return f->unit == JU_VOLUME || f->unit == JU_CDI; }

/* One more item of a list whose items have a form (volumes, CDI devices): the form, no name
 * twice, the list's bound. */
static int list_item_check(job_req *r, const jobreq_field *f, const char *item, jerr *e)
{
    char name[80], other[80];
    bool ro;
    if (f->unit == JU_CDI) {
        const char *dev;
        size_t *n;
        char **l = *list_items(r, id_of(f), &n);
        if (jobreq_cdi_parse(item, &dev) < 0 || *n >= (size_t)f->max)
            return refuse(e, f, item);
        for (size_t i = 0; i < *n; i++)
            if (!strcmp(l[i], item))
                return jerr_field(e, f->key, "%s: device '%s' is listed twice", f->key, item);
        return 0;
    }
    if (jobreq_volume_parse(item, name, sizeof name, &ro) < 0)
        return refuse(e, f, item);
    size_t *n;
    char **l = *list_items(r, id_of(f), &n);
    if (*n >= (size_t)f->max)
        return refuse(e, f, item);
    for (size_t i = 0; i < *n; i++)
        if (jobreq_volume_parse(l[i], other, sizeof other, &ro) == 0 && !strcmp(name, other))
            return jerr_field(e, f->key, "%s: volume '%s' is listed twice", f->key, name);
    return 0;
}

static char **str_at(job_req *r, const jobreq_field *f) { return (char **)((char *)r + f->off); }
static int64_t *int_at(job_req *r, const jobreq_field *f) { return (int64_t *)((char *)r + f->off); }
static bool *bool_at(job_req *r, const jobreq_field *f) { return (bool *)((char *)r + f->off); }

void jobreq_set_str(job_req *r, enum jobreq_id id, const char *s)
{
    char **p = str_at(r, &jobreq_fields[id]);
    char *copy = s ? xstrdup(s) : NULL;
    free(*p);
    *p = copy;
    if (s)
        r->has |= 1ull << id;
    else
        r->has &= ~(1ull << id);
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

/* Where a JK_LIST field's items and count live. */
static char ***list_items(job_req *r, enum jobreq_id id, size_t **n)
{
    switch (id) {
    case JR_ARGS: *n = &r->nargs; return &r->args;
    case JR_VOLUMES: *n = &r->nvolumes; return &r->volumes;
    case JR_DEVICES: *n = &r->ndevices; return &r->devices;
    default: *n = &r->ngpu_ids; return &r->gpu_ids;
    }
}

void jobreq_set_list(job_req *r, enum jobreq_id id, char **items, size_t n)
{
    size_t *nl;
    char ***l = list_items(r, id, &nl);
    char **copy = xcalloc(n + 1, sizeof *copy);
    for (size_t i = 0; i < n; i++)
        copy[i] = xstrdup(items[i]);
    free_list(*l, *nl);
    *l = copy;
    *nl = n;
    r->has |= 1ull << id;
}

static void list_push(char ***l, size_t *n, const char *s)
{
    *l = xrealloc(*l, (*n + 2) * sizeof **l);
    (*l)[(*n)++] = xstrdup(s);
    (*l)[*n] = NULL;
}

void jobreq_add_arg(job_req *r, const char *arg)
{
    list_push(&r->args, &r->nargs, arg);
    r->has |= 1ull << JR_ARGS;
}

const char *jobreq_env_get(const job_req *r, bool secret, const char *name)
{
    const jobreq_pair *p = secret ? r->secret_env : r->env;
    size_t n = secret ? r->nsecret_env : r->nenv;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].name, name))
            return p[i].value;
    return NULL;
}

/* One field taken out of the request: as if it had not been given. */
static void clear_field(job_req *r, enum jobreq_id id)
{
    const jobreq_field *f = &jobreq_fields[id];
    switch (f->kind) {
    case JK_TEXT:
        free(*str_at(r, f));
        *str_at(r, f) = NULL;
        if (id == JR_SCHEDULE_AT)
            r->schedule_ms = 0;
        break;
    case JK_INT: *int_at(r, f) = 0; break;
    case JK_BOOL: *bool_at(r, f) = false; break;
    case JK_LIST: {
        size_t *n;
        char ***l = list_items(r, id, &n);
        free_list(*l, *n);
        *l = NULL;
        *n = 0;
        break;
    }
    case JK_ENV: {
        jobreq_pair **p = id == JR_SECRET_ENV ? &r->secret_env : &r->env;
        size_t *n = id == JR_SECRET_ENV ? &r->nsecret_env : &r->nenv;
        for (size_t i = 0; i < *n; i++)
            free((*p)[i].name), free((*p)[i].value);
        free(*p);
        *p = NULL;
        *n = 0;
        break;
    }
    case JK_AFTER:
        for (size_t i = 0; i < r->nafter; i++)
            free(r->after[i].job);
        free(r->after);
        r->after = NULL;
        r->nafter = 0;
        break;
    case JK_UPLOADS:
        for (size_t i = 0; i < r->nuploads; i++) {
            jobreq_upload *u = &r->uploads[i];
            free(u->path), free(u->type), free(u->target), free(u->content_b64);
        }
        free(r->uploads);
        r->uploads = NULL;
        r->nuploads = 0;
        break;
    }
    r->has &= ~(1ull << id);
}

void jobreq_free(job_req *r)
{
    /* one that holds nothing (a loaded row's, its request taken by its job: every row of a
     * start) has nothing to free: not the 48 fields' look at each */
    static const job_req none;
    if (!memcmp(r, &none, sizeof *r))
        return;
    for (int i = 0; i < JR_N; i++)
        clear_field(r, (enum jobreq_id)i);
    *r = (job_req){0};
}

/* ---- one value -------------------------------------------------------------------------- */

static int check_int(job_req *r, const jobreq_field *f, int64_t v, const char *shown, int flags, jerr *e)
{
    if (v < f->min || v > f->max)
        return refuse(e, f, shown);
    *int_at(r, f) = v;
    r->has |= 1ull << id_of(f);
    return 0;
}

/* "compute,utility" or "all": checked and without repeats. */
/* A comma list with an empty item ("0,,1", ",0", "0,"): strtok_r would drop it, and with it
 * whatever was meant there; refused as --cpu-cores and --array refuse one. */
static bool empty_item(const char *s)
{
    size_t l = strlen(s);
    return l && (s[0] == ',' || s[l - 1] == ',' || strstr(s, ",,"));
}

static int refuse_empty_item(jerr *e, const jobreq_field *f, const char *s, const char *give)
{
    char v[80];
    quote_shown(s, v);
    return jerr_field(e, f->key, "%s: '%s' has an empty item (between two commas, or at an end); give %s", f->key, v,
                      give);
}

static int norm_caps(const jobreq_field *f, const char *s, char *out, size_t len, jerr *e)
{
    char buf[256];
    out[0] = 0;
    if (strlen(s) >= sizeof buf)
        return refuse(e, f, s);
    if (empty_item(s) && strcmp(s, ","))
        return refuse_empty_item(e, f, s, "capabilities separated by single commas: compute,utility (compute, "
                                          "utility, video, graphics, display, compat32 or all)");
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *c = strtok_r(buf, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        size_t k = 0;
        while (cap_names[k] && strcmp(c, cap_names[k]))
            k++;
        if (!cap_names[k])
            return jerr_field(e, f->key, "%s: '%.40s' is not a driver capability; use compute, utility, video, "
                                         "graphics, display, compat32 or all", f->key, c);
        size_t l = strlen(out);
        if (!strstr(out, c))
            snprintf(out + l, len - l, "%s%s", l ? "," : "", c);
    }
    if (!*out)
        return refuse(e, f, s);
    return 0;
}

/* MAJOR.MINOR; a whole number N (YAML's 8 for 8.0) is N.0. */
static int norm_cc(const char *s, char *out, size_t len)
{
    unsigned ma, mi;
    char end;
    size_t l = strlen(s);
    if (l && l <= 2 && strspn(s, "0123456789") == l && atoi(s) > 0) {
        /* as a number: "08" gives "8.0", as "08.0" does, and reads back the same */
        snprintf(out, len, "%d.0", atoi(s));
        return 0;
    }
    if (sscanf(s, "%2u.%1u%c", &ma, &mi, &end) != 2 || ma == 0 || !isdigit((unsigned char)s[0]) ||
        s[strspn(s, "0123456789")] != '.' || !isdigit((unsigned char)s[l - 1]))
        return -1;
    snprintf(out, len, "%u.%u", ma, mi);
    return 0;
}

static bool workdir_ok(const char *s)
{
    return s[0] == '/' && !strstr(s, "/..");
}

/* A string value, checked by its unit and stored (normalised where the unit says so). */
static int set_string(job_req *r, const jobreq_field *f, const char *s, size_t len, int flags, time_t now, jerr *e)
{
    if (strlen(s) != len)
        return jerr_field(e, f->key, "%s: must not contain a NUL character", f->key);
    if (len > (size_t)f->max)
        return jerr_field(e, f->key, "%s: longer than %lld bytes", f->key, (long long)f->max);
    if (len < (size_t)f->min)
        return id_of(f) == JR_COMMAND ? jerr_field(e, f->key, "command: is empty; give the program to run")
                                      : empty(e, f);
    char norm[4096];
    const char *v = s;
    switch (f->unit) {
    case JU_PATH:
        if (!workdir_ok(s))
            return refuse(e, f, s);
        break;
    case JU_NETWORK:
        if (strcmp(s, "none") && strcmp(s, "host") && !netaddr_name_ok(s))
            return refuse(e, f, s);
        break;
    case JU_ISOLATION:
        if (strcmp(s, "native") && strcmp(s, "gvisor"))
            return refuse(e, f, s);
        break;
    case JU_ARRAY: {
        /* only what a task list is written with: the list's own messages quote it */
        if (s[strspn(s, "0123456789,-:%")])
            return refuse(e, f, s);
        arrayspec *as = xmalloc(sizeof *as);
        int rc = arrayspec_parse(s, f->key, true, as, e);
        if (rc == 0)
            arrayspec_format(as, true, norm, sizeof norm);
        free(as);
        if (rc < 0)
            return -1;
        v = norm;
        break;
    }
    case JU_CPUS: {
        uint8_t mask[CPU_MAX / 8];
        if (parse_cpu_list(f->key, s, mask, e) < 0)
            return -1;
        if (format_cpu_list(mask, norm, sizeof norm) < 0)
            return jerr_field(e, f->key, "%s: '%s' names no CPU", f->key, s);
        v = norm;
        break;
    }
    case JU_CAPS:
        if (norm_caps(f, s, norm, sizeof norm, e) < 0)
            return -1;
        v = norm;
        break;
    case JU_CC:
        if (norm_cc(s, norm, sizeof norm) < 0)
            return refuse(e, f, s);
        v = norm;
        break;
    case JU_SIGNAL: {
        int sig;
        uint32_t secs;
        if (parse_signal_warning(f->key, s, &sig, &secs, norm, sizeof norm, e) < 0)
            return -1;
        v = norm;
        break;
    }
    case JU_TIME: {
        time_t t;
        int64_t ms;
        if (parse_rfc3339(s, &t) < 0)
            return refuse(e, f, s);
        if (!(flags & JOBREQ_FROM_DB) && t < now - 5)
            return jerr_field(e, f->key, "%s: '%s' is in the past", f->key, s);
        /* as for a delay: a start this far off is a typo, and the scheduler's clock arithmetic
         * stays far from overflow */
        if (!(flags & JOBREQ_FROM_DB) && t > now + TEN_YEARS_S)
            return jerr_field(e, f->key, "%s: '%.64s' is more than ten years away", f->key, s);
        r->schedule_ms = parse_ms(s, &ms) == 0 ? ms : (int64_t)t * 1000;
        break;
    }
    default: break;
    }
    jobreq_set_str(r, id_of(f), v);
    return 0;
}

/* One variable of env or secret_env, from text or from JSON alike: its name, its length, and
 * whether it is already in the same map (twice) or in the other one (both); each caller finds
 * those its own way, the sentences are these. */
static int env_refused(const jobreq_field *f, const char *name, size_t len, bool twice, bool both, jerr *e)
{
    if (!env_key_valid(name))
        return jerr_field(e, f->key, "%s: '%.64s' is not a valid variable name; use letters, digits and '_', not "
                                     "starting with a digit", f->key, name);
    if (len > (size_t)f->max)
        return jerr_field(e, f->key, "%s: %s: longer than %lld bytes", f->key, name, (long long)f->max);
    if (twice)
        return jerr_field(e, f->key, "%s: '%s' is given twice", f->key, name);
    if (both)
        return jerr_field(e, "secret_env", "secret_env: '%s' is also set as a plain variable; give each variable "
                                           "once", name);
    return 0;
}

static void env_push(job_req *r, const jobreq_field *f, const char *name, const char *value)
{
    bool secret = id_of(f) == JR_SECRET_ENV;
    jobreq_pair **p = secret ? &r->secret_env : &r->env;
    size_t *n = secret ? &r->nsecret_env : &r->nenv;
    *p = xrealloc(*p, (*n + 1) * sizeof **p);
    (*p)[(*n)++] = (jobreq_pair){xstrdup(name), xstrdup(value)};
    r->has |= 1ull << id_of(f);
}

int jobreq_add_env(job_req *r, bool secret, const char *name, const char *value, jerr *e)
{
    const jobreq_field *f = &jobreq_fields[secret ? JR_SECRET_ENV : JR_ENV];
    if (env_refused(f, name, strlen(value), jobreq_env_get(r, secret, name) != NULL,
                    jobreq_env_get(r, !secret, name) != NULL, e) < 0)
        return -1;
    env_push(r, f, name, value);
    return 0;
}

int jobreq_set_command(job_req *r, const char *command, jerr *e)
{
    return set_string(r, &jobreq_fields[JR_COMMAND], command, strlen(command), 0, 0, e);
}

void jobreq_add_upload(job_req *r, const jobreq_upload *u)
{
    /* room doubles at each power of two (at least 8): a listing of 100,000 entries is not
     * copied 100,000 times (realloc copies every time under AddressSanitizer) */
    size_t n = r->nuploads;
    if (n < 8 ? n == 0 : !(n & (n - 1)))
        r->uploads = xrealloc(r->uploads, (n < 8 ? 8 : 2 * n) * sizeof *r->uploads);
    r->uploads[r->nuploads++] = (jobreq_upload){
        .path = xstrdup(u->path),
        .type = xstrdup(u->type ? u->type : "file"),
        .target = u->target ? xstrdup(u->target) : NULL,
        .content_b64 = u->content_b64 ? xstrdup(u->content_b64) : NULL,
        .mode = u->mode,
        .has_mode = u->has_mode,
        .written = u->written,
        .size = u->size,
    };
    r->has |= 1ull << JR_UPLOADS;
}

/* ---- from text (flags, YAML) -------------------------------------------------------------- */

/* A plain whole number, as the API would carry it: checked against the table alone, so
 * "--priority=5000", "priority: 5000" and {"priority": 5000} read the same. */
static bool plain_int(const char *s, int64_t *v)
{
    char *end;
    if (!*s || isspace((unsigned char)*s))
        return false;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

/* "2026-11-22T15:04:05Z" rather than a delay: the shape parse_schedule tells them apart by. */
static bool looks_like_time(const char *s)
{
    return isdigit((unsigned char)s[0]) && strlen(s) >= 19 && s[4] == '-';
}

/* --schedule: a time, checked exactly as the API checks schedule_at, or a delay from now
 * ("30min"); kept to the millisecond, so "2s" means two seconds from now, not from the start
 * of this second. */
static int schedule_text(job_req *r, const jobreq_field *f, const char *text, time_t now, jerr *e)
{
    char when[64];
    if (looks_like_time(text)) {
        if (set_string(r, f, text, strlen(text), 0, now, e) < 0)
            return -1;
        format_ms(r->schedule_ms, when, sizeof when);
        jobreq_set_str(r, id_of(f), when);
        return 0;
    }
    uint64_t secs;
    jerr tmp = {0};
    if (!*text)
        return empty(e, f);
    if (parse_duration(f->key, text, &secs, &tmp) < 0)
        return jerr_field(e, f->key, "%s: '%.64s' is neither a delay (30s, 30min, 2h30m) nor an RFC 3339 time "
                                     "(2026-11-22T15:04:05Z)", f->key, text);
    if (secs > (uint64_t)TEN_YEARS_S)
        return jerr_field(e, f->key, "%s: '%.64s' is more than ten years away", f->key, text);
    /* the clock's milliseconds when now is this second; now itself when the caller chose it */
    int64_t base = now_ms();
    if (base / 1000 != (int64_t)now)
        base = (int64_t)now * 1000;
    format_ms(base + (int64_t)secs * 1000, when, sizeof when);
    return set_string(r, f, when, strlen(when), JOBREQ_FROM_DB, now, e);
}

/* ---- after: the jobs it waits for -------------------------------------------------------- */

static const char *const after_names[] = {"any", "ok", "notok", "started", "corr"};
static const char *const after_slurm[] = {"afterany", "afterok", "afternotok", "after", "aftercorr"};

const char *jobreq_after_state_name(int state)
{
    return state >= 0 && state < (int)ARRAY_LEN(after_names) ? after_names[state] : "?";
}

int jobreq_after_state_parse(const char *s)
{
    for (int i = 0; i < (int)ARRAY_LEN(after_names); i++)
        if (!strcmp(s, after_names[i]) || !strcmp(s, after_slurm[i]))
            return i;
    return -1;
}

/* A job's reference as jobs_find reads it (an id, a unique prefix, a name): 1 to 128 bytes, no
 * ':', ',' or '?' (the list's own characters), no space or control character. */
static bool after_ref_ok(const char *s, size_t n)
{
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c == 0x7f || c == ':' || c == ',' || c == '?')
            return false;
    }
    return true;
}

static int after_add(job_req *r, const char *ref, size_t n, int state, jerr *e)
{
    if (r->nafter >= JOBREQ_AFTER_MAX)
        return jerr_field(e, "after", "after: more than %d jobs to wait for; at most %d", JOBREQ_AFTER_MAX,
                          JOBREQ_AFTER_MAX);
    char *job = xmalloc(n + 1);
    memcpy(job, ref, n);
    job[n] = 0;
    r->after = xrealloc(r->after, (r->nafter + 1) * sizeof *r->after);
    r->after[r->nafter++] = (jobreq_after){.job = job, .state = (uint8_t)state};
    r->has |= 1ull << JR_AFTER;
    return 0;
}

/* A refusal of --after's text, in its own words (the table's sentence is the API's). */
static int after_refuse_text(jerr *e, const char *shown)
{
    char v[80];
    quote_shown(shown, v);
    return jerr_field(e, "after", "after: '%s' is not ID[:STATE] (STATE ok, notok, any, started or corr; ID a job's "
                                  "id, number, unique id prefix or name) nor Slurm's afterok:ID[:ID...] (afternotok, "
                                  "afterany, after, aftercorr) nor singleton", v);
}

/* One item of --after's comma list: ID, ID:STATE, or Slurm's STATE:ID[:ID...] (afterok:12:13). */
static int after_text_item(job_req *r, const jobreq_field *f, const char *item, jerr *e)
{
    if (!strcmp(item, "singleton")) { /* Slurm's word; a job named so is singleton:any */
        r->singleton = true;
        r->has |= 1ull << JR_SINGLETON;
        return 0;
    }
    const char *colon = strchr(item, ':');
    size_t hl = colon ? (size_t)(colon - item) : strlen(item);
    char head[24] = "";
    if (colon && hl < sizeof head) {
        memcpy(head, item, hl);
        head[hl] = 0;
    }
    int slurm = -1;
    /* ID:STATE first: a job named afterok is "afterok:any" (as jobreq_to_flags writes it) */
    bool id_state = colon && !strchr(colon + 1, ':');
    bool plain = false;
    for (int i = 0; id_state && i < (int)ARRAY_LEN(after_names); i++)
        plain |= !strcmp(colon + 1, after_names[i]);
    for (int i = 0; colon && !plain && i < (int)ARRAY_LEN(after_slurm); i++)
        if (!strcmp(head, after_slurm[i]))
            slurm = i;
    if (!plain && !strcmp(head, "afterburstbuffer")) /* Slurm's, after the job ended and its burst buffer was staged out */
        return jerr_field(e, f->key, "after: '%.64s': Slurm's afterburstbuffer is not supported (joblet has no "
                                     "burst buffers); afterany:ID waits for the job to end", item);
    if (slurm >= 0) {
        for (const char *p = colon + 1; p;) {
            const char *q = strchr(p, ':');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            /* Slurm's ID+MINUTES (start that long after the dependency holds) */
            const char *plus = memchr(p, '+', n);
            if (plus && plus > p && plus + 1 < p + n && strspn(plus + 1, "0123456789") == (size_t)(p + n - plus - 1))
                return jerr_field(e, f->key, "after: '%.64s': Slurm's +MINUTES (a delay after the dependency holds) "
                                             "is not supported; give the job --schedule, or wait for it with "
                                             "--after alone", item);
            if (!after_ref_ok(p, n))
                return after_refuse_text(e, item);
            if (after_add(r, p, n, slurm, e) < 0)
                return -1;
            p = q ? q + 1 : NULL;
        }
        return 0;
    }
    int state = JA_ANY;
    if (colon) {
        state = -1;
        for (int i = 0; i < (int)ARRAY_LEN(after_names); i++)
            if (!strcmp(colon + 1, after_names[i]))
                state = i;
        if (state < 0)
            return after_refuse_text(e, item);
    }
    if (!after_ref_ok(item, hl))
        return after_refuse_text(e, item);
    return after_add(r, item, hl, state, e);
}

/* after's text: items separated by ',' (all of them) or by '?' (any one of them, Slurm's
 * afterok:1?afterok:2), never both; a '?' list is the job's only one (a second --after would
 * mix the two), and holds neither singleton nor corr (task by task is for all of an array). */
static int after_text(job_req *r, const jobreq_field *f, const char *text, jerr *e)
{
    if (!*text)
        return after_refuse_text(e, text);
    bool any = strchr(text, '?') != NULL;
    if (any && strchr(text, ','))
        return jerr_field(e, f->key, "after: '%.64s': ',' (all of them) and '?' (any one of them) cannot be mixed, "
                                     "as in Slurm", text);
    if ((any && (r->nafter || r->singleton)) || (!any && r->after_any))
        return jerr_field(e, f->key, "after: a '?' list (any one of) is the job's only dependency: give it in one "
                                     "--after, without singleton");
    size_t before = r->nafter;
    char sep = any ? '?' : ',';
    for (const char *p = text; p;) {
        const char *q = strchr(p, sep);
        size_t n = q ? (size_t)(q - p) : strlen(p);
        char item[300];
        if (n == 0 || n >= sizeof item)
            return after_refuse_text(e, text);
        memcpy(item, p, n);
        item[n] = 0;
        if (after_text_item(r, f, item, e) < 0)
            return -1;
        p = q ? q + 1 : NULL;
    }
    if (any) {
        for (size_t k = before; k < r->nafter; k++)
            if (r->after[k].state == JA_CORR)
                return jerr_field(e, f->key, "after: '%.64s': task by task (corr) cannot be one of a '?' list (any "
                                             "one of): it is for all of an array's tasks", text);
        if (r->singleton)
            return jerr_field(e, f->key, "after: '%.64s': singleton cannot be one of a '?' list (any one of)", text);
        r->after_any = true;
        r->has |= 1ull << JR_AFTER_ANY;
    }
    return 0;
}

static int after_from_json(job_req *r, const jobreq_field *f, json_t *v, jerr *e)
{
    if (!json_is_array(v))
        return list_refused(e, f);
    if (json_array_size(v) > (size_t)f->max)
        return jerr_field(e, f->key, "after: %zu jobs to wait for; at most %lld", json_array_size(v),
                          (long long)f->max);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        json_t *jv = json_object_get(x, "job"), *sv = json_object_get(x, "state");
        if (!json_is_object(x) || !json_is_string(jv))
            return jerr_field(e, f->key, "after[%zu]: must be an object {\"job\": ID, \"state\": ok|notok|any|started|corr} "
                                         "(job: a job's id, number, unique id prefix or name)", i);
        const char *k;
        json_t *kv;
        json_object_foreach(x, k, kv) {
            if (strcmp(k, "job") && strcmp(k, "state"))
                return jerr_field(e, f->key, "after[%zu]: unknown field '%.40s'; accepted: job, state", i, k);
        }
        const char *ref = json_string_value(jv);
        size_t n = json_string_length(jv);
        if (strlen(ref) != n || !after_ref_ok(ref, n)) {
            char shown[80];
            snprintf(shown, sizeof shown, "%.60s", ref);
            utf8_sanitize(shown);
            for (char *c = shown; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                    *c = '?';
            return jerr_field(e, f->key, "after[%zu].job: '%s' is not a job's id, id prefix or name (1 to 128 "
                                         "bytes, no ':', ',', '?', space or control character)", i, shown);
        }
        int state = JA_ANY;
        if (sv && (!json_is_string(sv) || (state = jobreq_after_state_parse(json_string_value(sv))) < 0))
            return jerr_field(e, f->key, "after[%zu].state: must be ok, notok, any, started or corr", i);
        if (after_add(r, ref, n, state, e) < 0)
            return -1;
    }
    r->has |= 1ull << JR_AFTER;
    return 0;
}

int jobreq_set_text(job_req *r, const jobreq_field *f, const char *text, time_t now, jerr *e)
{
    int64_t v;
    uint64_t u;
    jerr tmp = {0};
    switch (f->kind) {
    case JK_BOOL:
        if (!strcasecmp(text, "true") || !strcasecmp(text, "yes"))
            *bool_at(r, f) = true;
        else if (!strcasecmp(text, "false") || !strcasecmp(text, "no"))
            *bool_at(r, f) = false;
        else
            return refuse(e, f, text);
        r->has |= 1ull << id_of(f);
        return 0;
    case JK_INT:
        if (f->unit == JU_GPUS && !strcasecmp(text, "all")) {
            r->gpu_all = true;
            r->has |= 1ull << JR_GPU_ALL;
            return 0;
        }
        if (plain_int(text, &v))
            return check_int(r, f, v, text, 0, e);
        if (f->unit == JU_PERCENT) {
            /* "50%" */
            char num[32];
            size_t l = strlen(text);
            if (l > 1 && l < sizeof num && text[l - 1] == '%') {
                memcpy(num, text, l - 1);
                num[l - 1] = 0;
                if (plain_int(num, &v))
                    return check_int(r, f, v, text, 0, e);
            }
            return refuse(e, f, text);
        }
        /* a unit: whatever is wrong with it, the table's sentence says what is accepted, as it
         * does for the same text sent to the API */
        if ((f->unit == JU_MB && parse_size_mb(f->key, text, &u, &tmp) < 0) ||
            (f->unit == JU_BYTES && parse_bytes(f->key, text, &u, &tmp) < 0) ||
            (f->unit == JU_SECONDS && parse_time_limit(f->key, text, &u, &tmp) < 0) ||
            (f->unit != JU_MB && f->unit != JU_BYTES && f->unit != JU_SECONDS) || u > INT64_MAX)
            return refuse(e, f, text);
        /* checked in the API's unit, but refused in the words the person typed */
        if ((int64_t)u < f->min || (int64_t)u > f->max)
            return refuse(e, f, text);
        return check_int(r, f, (int64_t)u, text, 0, e);
    case JK_TEXT:
        if (f->unit == JU_TIME)
            return schedule_text(r, f, text, now, e);
        return set_string(r, f, text, strlen(text), 0, now, e);
    case JK_LIST: {
        if (one_per_flag(f)) {
            /* one item each time: --volume=a --volume=b:ro, or a YAML list's items */
            if (list_item_check(r, f, text, e) < 0)
                return -1;
            size_t *n;
            char ***l = list_items(r, id_of(f), &n);
            list_push(l, n, text);
            r->has |= 1ull << id_of(f);
            return 0;
        }
        /* comma-separated: --gpu-ids=0,1 */
        if (empty_item(text) && strcmp(text, ","))
            return refuse_empty_item(e, f, text, "GPU indexes or UUIDs separated by single commas: 0,1 (rnx gpu list)");
        char **items = NULL;
        size_t n = 0;
        char *buf = xstrdup(text);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            list_push(&items, &n, t);
        free(buf);
        if ((int64_t)n < f->min) {
            free_list(items, n);
            return refuse(e, f, text);
        }
        jobreq_set_list(r, id_of(f), items, n);
        free_list(items, n);
        return 0;
    }
    case JK_AFTER: return after_text(r, f, text, e);
    default: return jerr_field(e, f->key, "%s: cannot be given as text", f->key);
    }
}

/* ---- from JSON (the API, the database) ---------------------------------------------------- */

/* JSON keys are unique already and the other map is looked up by its hash: no per-variable
 * scan of the request (a body of 100,000 variables stays linear). */
static int env_from_json(job_req *r, const jobreq_field *f, json_t *obj, json_t *other, jerr *e)
{
    const char *k;
    json_t *v;
    if (!json_is_object(obj))
        return jerr_field(e, f->key, "%s: must be an object of NAME: value strings", f->key);
    json_object_foreach(obj, k, v) {
        if (!json_is_string(v)) {
            /* the variable's place, as the bounds of a request body name it ("env.BIG") */
            char where[160];
            snprintf(where, sizeof where, "%s.%.100s", f->key, k);
            const char *what = json_is_number(v) ? "a number" : json_is_boolean(v) ? "true or false"
                             : json_is_null(v) ? "null" : json_is_array(v) ? "a list" : "an object";
            return jerr_field(e, where, "%s: %s, not a string; every value of %s is a string (\"%.100s\": \"1\", "
                                        "not 1)", where, what, f->key, k);
        }
        if (strlen(json_string_value(v)) != json_string_length(v))
            return jerr_field(e, f->key, "%s: must not contain a NUL character", f->key);
        /* (env is read first: secret_env's variables are the ones found in both) */
        bool both = id_of(f) == JR_SECRET_ENV && json_object_get(other, k);
        if (env_refused(f, k, json_string_length(v), false, both, e) < 0)
            return -1;
        env_push(r, f, k, json_string_value(v));
    }
    /* an empty object gives no variable: the field is not given, as with no -e or environment: {} */
    return 0;
}

static int list_from_json(job_req *r, const jobreq_field *f, json_t *arr, jerr *e)
{
    json_t *a;
    size_t i;
    if (!json_is_array(arr) || json_array_size(arr) < (size_t)f->min)
        return list_refused(e, f);
    size_t *n;
    char ***l = list_items(r, id_of(f), &n);
    json_array_foreach(arr, i, a) {
        if (!json_is_string(a))
            return list_refused(e, f);
        if (strlen(json_string_value(a)) != json_string_length(a))
            return jerr_field(e, f->key, "%s: must not contain a NUL character", f->key);
        if (id_of(f) == JR_ARGS && json_string_length(a) > (size_t)f->max)
            return jerr_field(e, f->key, "%s: longer than %lld bytes", f->key, (long long)f->max);
        if (one_per_flag(f) && list_item_check(r, f, json_string_value(a), e) < 0)
            return -1;
        list_push(l, n, json_string_value(a));
    }
    r->has |= 1ull << id_of(f);
    return 0;
}

static int upload_path_ok(const char *p, jerr *e)
{
    if (!*p || p[0] == '/' || strlen(p) > 1024)
        return jerr_field(e, "uploads", "uploads: '%.200s' must be a relative path inside /work", p);
    const char *s = p;
    while (*s) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return jerr_field(e, "uploads", "uploads: '%.200s' must not contain empty, '.' or '..' parts", p);
        if (n > 255) /* NAME_MAX: refused here, not by mkdir once the upload is under way */
            return jerr_field(e, "uploads", "uploads: '%.200s...' has a name longer than 255 bytes", p);
        s += n + (slash ? 1 : 0);
    }
    return 0;
}

/* A refusal of one member of an upload ("mode: ...") named by its place in the request
 * ("uploads[2].mode: ..."), as every other refusal names a field of the request. */
static int in_upload(jerr *e, size_t i)
{
    char field[sizeof e->field], msg[sizeof e->msg];
    snprintf(field, sizeof field, "uploads[%zu].%s", i, e->field);
    snprintf(msg, sizeof msg, "uploads[%zu].%s", i, e->msg);
    return jerr_field(e, field, "%s", msg);
}

static int upload_from_json(job_req *r, json_t *u, size_t i, int flags, json_t *seen, jerr *e)
{
    if (!json_is_object(u))
        return jerr_field(e, "uploads", "uploads[%zu]: must be an object", i);
    if (jx_only_keys(u, flags & JOBREQ_FROM_DB ? listing_keys : upload_keys, "an upload", e) < 0)
        return in_upload(e, i);
    const char *path = NULL, *type = NULL, *content = NULL, *target = NULL;
    uint64_t mode = 0644, size = 0;
    bool has_mode = json_object_get(u, "mode") != NULL;
    json_t *js = json_object_get(u, "size");
    bool has_size = js && !json_is_null(js);
    if (jx_str(u, "path", &path, e) < 0 || jx_str(u, "type", &type, e) < 0 ||
        jx_str(u, "target", &target, e) < 0)
        return in_upload(e, i);
    if (flags & JOBREQ_FROM_DB) {
        /* the listing: mode as "0644", the size written */
        const char *m = json_string_value(json_object_get(u, "mode"));
        mode = m ? strtoul(m, NULL, 8) : 0644;
        size = (uint64_t)json_integer_value(json_object_get(u, "size"));
    } else if (jx_str(u, "content_b64", &content, e) < 0 || jx_u64(u, "mode", 0, 07777, &mode, e) < 0 ||
               jx_u64(u, "size", 0, (uint64_t)INT64_MAX, &size, e) < 0) {
        return in_upload(e, i);
    }
    if (!path)
        return jerr_field(e, "uploads", "uploads[%zu]: path is required", i);
    if (upload_path_ok(path, e) < 0)
        return -1;
    type = type ? type : "file";
    if (strcmp(type, "file") && strcmp(type, "dir") && strcmp(type, "symlink"))
        return jerr_field(e, "uploads", "uploads: '%.200s': type '%.20s' is not one of file, dir, symlink", path, type);
    if (!(flags & JOBREQ_FROM_DB) && !strcmp(type, "symlink") && (!target || !*target))
        return jerr_field(e, "uploads", "uploads: '%.200s': a symlink needs a target", path);
    if (target && strlen(target) > 4095)
        return jerr_field(e, "uploads", "uploads: '%.200s': the link's target is longer than 4095 bytes", path);
    if (!(flags & JOBREQ_FROM_DB) && has_size && strcmp(type, "file"))
        return jerr_field(e, "uploads", "uploads: '%.200s': only a file has a size", path);
    if (json_object_get(seen, path))
        return jerr_field(e, "uploads", "uploads: '%.200s' is listed twice", path);
    json_object_set_new(seen, path, json_true());
    jobreq_upload x = {.path = (char *)path, .type = (char *)type, .target = (char *)target,
                       .content_b64 = (char *)content, .mode = (uint32_t)mode, .has_mode = has_mode,
                       .written = flags & JOBREQ_FROM_DB, .size = has_size ? (int64_t)size : -1};
    jobreq_add_upload(r, &x);
    return 0;
}

static int uploads_from_json(job_req *r, const jobreq_field *f, json_t *ups, int flags, jerr *e)
{
    json_t *u;
    size_t i;
    if (!json_is_array(ups))
        return list_refused(e, f);
    if (json_array_size(ups) > (size_t)f->max)
        return jerr_field(e, f->key, "uploads: %zu entries; at most %lld files, directories and links per job",
                          json_array_size(ups), (long long)f->max);
    json_t *seen = json_object(); /* paths so far: a hash, so the check stays linear */
    int rc = 0;
    json_array_foreach(ups, i, u) {
        if ((rc = upload_from_json(r, u, i, flags, seen, e)) < 0)
            break;
    }
    json_decref(seen);
    r->has |= 1ull << JR_UPLOADS;
    return rc;
}

static int field_from_json(job_req *r, const jobreq_field *f, json_t *v, json_t *other_env, int flags, time_t now,
                           jerr *e)
{
    switch (f->kind) {
    case JK_TEXT:
        if (!json_is_string(v))
            return id_of(f) == JR_COMMAND || f->unit == JU_NONE || f->unit == JU_NAME ? jerr_field(e, f->key, "%s: must be a string", f->key)
                                                                                     : refuse_json(e, f, v);
        return set_string(r, f, json_string_value(v), json_string_length(v), flags, now, e);
    case JK_INT:
        /* a text takes rnx's and workflow files' forms ("8GB", "2:00:00", "50%"): the refusals'
         * one sentence names them on every surface, the API's too */
        if (json_is_string(v))
            return jobreq_set_text(r, f, json_string_value(v), now, e);
        if (!json_is_integer(v))
            return refuse_json(e, f, v);
        {
            char shown[32];
            snprintf(shown, sizeof shown, "%lld", (long long)json_integer_value(v));
            return check_int(r, f, json_integer_value(v), shown, flags, e);
        }
    case JK_BOOL:
        if (!json_is_boolean(v))
            return refuse_json(e, f, v);
        *bool_at(r, f) = json_is_true(v);
        r->has |= 1ull << id_of(f);
        return 0;
    case JK_ENV: return env_from_json(r, f, v, other_env, e);
    case JK_LIST: return list_from_json(r, f, v, e);
    case JK_UPLOADS: return uploads_from_json(r, f, v, flags, e);
    case JK_AFTER: return after_from_json(r, f, v, e);
    }
    return 0;
}

int jobreq_from_json(json_t *body, job_req *r, int flags, time_t now, jerr *e)
{
    *r = (job_req){0};
    if (!json_is_object(body))
        return jerr_field(e, NULL, "the request body must be a JSON object");
    /* each field's value, found in the one pass over the body's keys (a look-up per field of
     * the table instead, 48 hash look-ups a request, was a third of a start's reading of every
     * stored request) */
    json_t *at[JR_N] = {0};
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        const jobreq_field *f = jobreq_field_by_key(k);
        if (f)
            at[id_of(f)] = v;
        if (!f || (f->daemon_only && !(flags & JOBREQ_FROM_DB))) {
            char list[600] = "";
            size_t n = 0;
            for (int i = 0; i < JR_N && n < sizeof list - 64; i++)
                if (!jobreq_fields[i].daemon_only)
                    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", jobreq_fields[i].key);
            jerr_field(e, k, "%s: unknown field in a job request; accepted fields: %s", k, list);
            goto fail;
        }
    }
    /* in the table's order, whatever order the body has, so the first refusal is always the same */
    for (int i = 0; i < JR_N; i++) {
        json_t *x = at[i];
        if (!x || (json_is_null(x) && i != JR_COMMAND))
            continue;
        if (field_from_json(r, &jobreq_fields[i], x, at[JR_ENV], flags, now, e) < 0) {
            if (!(flags & JOBREQ_FROM_DB))
                goto fail;
            /* a stored job is never lost over one field this version reads differently; the
             * field is left out whole (not the variables, files or items before the bad one) */
            log_warn("a stored job request: %s; the field is left out", e->msg);
            clear_field(r, (enum jobreq_id)i);
            *e = (jerr){0};
        }
    }
    /* a stored request was checked when it was submitted (and its NVIDIA variables read) */
    if (!(flags & JOBREQ_FROM_DB) && jobreq_check_submitted(r, e) < 0)
        goto fail;
    return 0;
fail:
    jobreq_free(r);
    return -1;
}

/* ---- rules between fields ----------------------------------------------------------------- */

static bool env_says_no_gpu(const job_req *r)
{
    const char *v = jobreq_env_get(r, false, "NVIDIA_VISIBLE_DEVICES");
    return v && (!strcmp(v, "void") || !strcmp(v, "none"));
}

/* What the job's own GPU fields ask for, in words for a refusal: "gpu_count 2". */
static void gpu_fields_text(const job_req *r, char *out, size_t len)
{
    if (jobreq_has(r, JR_GPU_MIG))
        snprintf(out, len, "gpu_mig %s", r->gpu_mig);
    else if (r->gpu_all)
        snprintf(out, len, "gpu_all");
    else if (r->ngpu_ids) {
        size_t n = (size_t)snprintf(out, len, "gpu_ids ");
        for (size_t i = 0; i < r->ngpu_ids && n < len; i++)
            n += (size_t)snprintf(out + n, len - n, "%s%s", i ? "," : "", r->gpu_ids[i]);
    } else
        snprintf(out, len, "gpu_count %lld", (long long)r->gpu_count);
}

/* Every name of a[] is one of b[]. */
static bool names_within(char *const *a, size_t na, char *const *b, size_t nb)
{
    for (size_t i = 0; i < na; i++) {
        size_t j = 0;
        while (j < nb && strcmp(a[i], b[j]))
            j++;
        if (j == nb)
            return false;
    }
    return true;
}

/* The comma-separated list has the name as one of its items. */
static bool list_has(const char *list, const char *name)
{
    size_t l = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, l) && (p[l] == ',' || !p[l]))
            return true;
    return false;
}

/* Two capability lists (each normalized by norm_caps) name the same capabilities, in any order. */
static bool caps_same(const char *a, const char *b)
{
    for (size_t k = 0; cap_names[k]; k++)
        if (list_has(a, cap_names[k]) != list_has(b, cap_names[k]))
            return false;
    return true;
}

/* NVIDIA's container toolkit reads two variables as the container's GPU request, and so does
 * joblet when a job gives them in env (-e, or a workflow's environment):
 *   NVIDIA_VISIBLE_DEVICES      all: every GPU (gpu_all); 0,1 or GPU-/MIG- UUIDs: those (gpu_ids);
 *                               void, none or empty: no GPU (jobreq_check refuses GPU fields then)
 *   NVIDIA_DRIVER_CAPABILITIES  the driver's capabilities (gpu_caps), for a job that has GPUs
 * Given with the job's own GPU fields, they must say the same; else the request is refused with
 * both named, never one silently preferred. The job's environment then shows what it got
 * (exec/spec_gpu.c sets both from the grant, in place of what was given). */
static int nvidia_env(job_req *r, jerr *e)
{
    const char *v = jobreq_env_get(r, false, "NVIDIA_VISIBLE_DEVICES");
    bool count = jobreq_has(r, JR_GPU_COUNT) && r->gpu_count > 0, mig = jobreq_has(r, JR_GPU_MIG);
    bool fields = count || mig || r->gpu_all || r->ngpu_ids;
    char given[200];
    gpu_fields_text(r, given, sizeof given);
    if (v && *v && strcmp(v, "void") && strcmp(v, "none")) {
        if (!strcmp(v, "all")) {
            if (fields && !r->gpu_all)
                return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES=all asks for every GPU, but the job also "
                                            "asks for %s; drop one of the two", given);
            r->gpu_all = true;
            r->has |= 1ull << JR_GPU_ALL;
        } else {
            char buf[1024], *ids[64];
            size_t n = 0;
            if (strlen(v) >= sizeof buf)
                return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES is longer than %zu bytes", sizeof buf - 1);
            snprintf(buf, sizeof buf, "%s", v);
            for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                while (*t == ' ')
                    t++;
                size_t l = strlen(t);
                while (l && t[l - 1] == ' ')
                    t[--l] = 0;
                bool index = l && l <= 4 && strspn(t, "0123456789") == l;
                bool uuid = (!strncmp(t, "GPU-", 4) || !strncmp(t, "MIG-", 4)) && l > 4 && l < 128;
                if (!index && !uuid)
                    return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES=%.200s: '%.60s' is neither a GPU index "
                                                "nor a GPU or MIG UUID; give all, none, void, or indices or UUIDs "
                                                "separated by commas (0,1)", v, t);
                if (n == ARRAY_LEN(ids))
                    return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES names more than %zu GPUs",
                                      ARRAY_LEN(ids));
                ids[n++] = t;
            }
            if (!n)
                return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES=%.200s names no GPU", v);
            /* the same GPUs in any order: the job's devices are numbered by PCI bus either way */
            bool same = r->ngpu_ids == n && !count && !mig && !r->gpu_all &&
                        names_within(ids, n, r->gpu_ids, r->ngpu_ids) && names_within(r->gpu_ids, r->ngpu_ids, ids, n);
            if (fields && !same)
                return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES=%.200s asks for those GPUs, but the job "
                                            "also asks for %s; drop one of the two", v, given);
            if (!fields) {
                r->gpu_ids = xcalloc(n, sizeof *r->gpu_ids);
                for (size_t i = 0; i < n; i++)
                    r->gpu_ids[i] = xstrdup(ids[i]);
                r->ngpu_ids = n;
                r->has |= 1ull << JR_GPU_IDS;
            }
        }
    }
    const char *c = jobreq_env_get(r, false, "NVIDIA_DRIVER_CAPABILITIES");
    bool gpus = r->gpu_all || r->ngpu_ids || count || mig;
    if (c && *c && gpus) {
        char norm[256];
        jerr ce = {0};
        if (norm_caps(&jobreq_fields[JR_GPU_CAPS], c, norm, sizeof norm, &ce) < 0)
            return jerr_field(e, "env", "env: NVIDIA_DRIVER_CAPABILITIES=%.200s: %s", c,
                              ce.msg + strlen("gpu_caps: "));
        if (r->gpu_caps && !caps_same(r->gpu_caps, norm))
            return jerr_field(e, "env", "env: NVIDIA_DRIVER_CAPABILITIES=%.200s, but the job also asks for gpu_caps "
                                        "%s; drop one of the two", c, r->gpu_caps);
        if (!r->gpu_caps) {
            r->gpu_caps = xstrdup(norm);
            r->has |= 1ull << JR_GPU_CAPS;
        }
    }
    return 0;
}

/* ---- uploads ---------------------------------------------------------------------------- */

bool jobreq_uploads_streamed(const job_req *r)
{
    for (size_t i = 0; i < r->nuploads; i++)
        if (!r->uploads[i].content_b64 && r->uploads[i].size > 0 && !r->uploads[i].written)
            return true;
    return false;
}

uint64_t jobreq_bytes(const job_req *r)
{
    uint64_t n = r->command ? strlen(r->command) : 0;
    for (size_t i = 0; i < r->nargs; i++)
        n += strlen(r->args[i]) + 1;
    for (size_t i = 0; i < r->nenv; i++)
        n += strlen(r->env[i].name) + strlen(r->env[i].value) + 2;
    for (size_t i = 0; i < r->nsecret_env; i++)
        n += strlen(r->secret_env[i].name) + strlen(r->secret_env[i].value) + 2;
    /* the uploads' listing, kept with the job once the files are written (100,000 entries of
     * paths up to 1 KiB: up to the body's 16 MiB, as env is); a content_b64 is dropped once
     * written, so not counted: what is counted never changes while the job is kept */
    for (size_t i = 0; i < r->nuploads; i++)
        n += strlen(r->uploads[i].path) + (r->uploads[i].target ? strlen(r->uploads[i].target) : 0) + 2;
    return n;
}

uint64_t jobreq_uploads_declared(const job_req *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->nuploads; i++)
        if (!r->uploads[i].content_b64 && r->uploads[i].size > 0)
            n += (uint64_t)r->uploads[i].size;
    return n;
}

/* Links are resolved through at most this many others in all, as the kernel's ELOOP (MAXSYMLINKS:
 * a count of every link followed for one lookup, not a depth). */
#define LINK_MAX_FOLLOWED 40
#define RESOLVED_MAX 8192

/* The check walks every link's target once, over an interned tree of the paths it meets: a node
 * is one path under /work, found by (parent, name) in one hash, so ".." is its parent, a listed
 * link is a mark on its node, and a link already resolved is its result node, never walked
 * again. The work is linear in the listing's bytes however the links name each other: resolving
 * each use of a link afresh doubled per link (26 links, 12 s; issue 25). */
typedef struct {
    size_t parent; /* the node of the directory it is in; the root's is itself */
    size_t len;    /* the length of its path under /work ("a/b": 3) */
    long link;     /* the index of the listed link at this path, or -1 */
} lnode;

enum { LINK_UNSEEN, LINK_BUSY, LINK_DONE };

typedef struct {
    const jobreq_upload *ups;
    json_t *index; /* "parent/name" -> node */
    lnode *nodes;
    size_t nnodes, cap;
    uint8_t *state;  /* per upload: LINK_* */
    size_t *result;  /* per link: the node its target resolves to */
    uint8_t *cost;   /* per link: the links followed to resolve it, itself included */
} links_ctx;

/* The node of name (n bytes) in directory node dir; made when new. -2 when the path grows past
 * RESOLVED_MAX. */
static long links_child(links_ctx *c, size_t dir, const char *name, size_t n)
{
    size_t len = c->nodes[dir].len + (dir ? 1 : 0) + n;
    if (len >= RESOLVED_MAX)
        return -2;
    char key[RESOLVED_MAX + 32];
    int k = snprintf(key, sizeof key, "%zu/%.*s", dir, (int)n, name);
    json_t *v = json_object_getn(c->index, key, (size_t)k);
    if (v)
        return (long)json_integer_value(v);
    if (c->nnodes == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->nodes = xrealloc(c->nodes, c->cap * sizeof *c->nodes);
    }
    c->nodes[c->nnodes] = (lnode){.parent = dir, .len = len, .link = -1};
    json_object_setn_new_nocheck(c->index, key, (size_t)k, json_integer((json_int_t)c->nnodes));
    return (long)c->nnodes++;
}

/* The node of a listed path ("a/b/c"), made when new; -2 when too long. */
static long links_path(links_ctx *c, const char *path, size_t plen)
{
    long node = 0;
    for (size_t i = 0; i < plen && node >= 0;) {
        size_t n = 0;
        while (i + n < plen && path[i + n] != '/')
            n++;
        if (n)
            node = links_child(c, (size_t)node, path + i, n);
        i += n + 1;
    }
    return node;
}

/* Resolves listed link i (its target, read in its own directory) into c->result[i]. 0 when it
 * stays inside /work; -1 when it leaves /work; -2 when it goes through a loop, more than
 * LINK_MAX_FOLLOWED links in all, or grows too long. The recursion is as deep as links lead into
 * links, at most LINK_MAX_FOLLOWED + 1. */
static int links_resolve(links_ctx *c, size_t i, int depth)
{
    if (c->state[i] == LINK_DONE)
        return 0;
    if (c->state[i] == LINK_BUSY || depth > LINK_MAX_FOLLOWED)
        return -2;
    const char *target = c->ups[i].target;
    if (target[0] == '/')
        return -1;
    c->state[i] = LINK_BUSY;
    const char *slash = strrchr(c->ups[i].path, '/');
    long node = slash ? links_path(c, c->ups[i].path, (size_t)(slash - c->ups[i].path)) : 0;
    unsigned cost = 1;
    for (const char *s = target; *s && node >= 0;) {
        const char *end = strchr(s, '/');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        const char *next = s + n + (end ? 1 : 0);
        if (n == 0 || (n == 1 && s[0] == '.')) {
            s = next;
            continue;
        }
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (node == 0)
                node = -1; /* above /work */
            else
                node = (long)c->nodes[node].parent;
            s = next;
            continue;
        }
        node = links_child(c, (size_t)node, s, n);
        s = next;
        if (node < 0 || c->nodes[node].link < 0)
            continue;
        /* a listed link: the path goes on from where it points */
        size_t j = (size_t)c->nodes[node].link;
        int rc = links_resolve(c, j, depth + 1);
        if (rc < 0)
            node = rc;
        else if ((cost += c->cost[j]) > LINK_MAX_FOLLOWED)
            node = -2;
        else
            node = (long)c->result[j];
    }
    if (node < 0) {
        c->state[i] = LINK_UNSEEN; /* any failure ends the whole check */
        return (int)node;
    }
    c->state[i] = LINK_DONE;
    c->result[i] = (size_t)node;
    c->cost[i] = (uint8_t)cost;
    return 0;
}

int jobreq_upload_links_check(const jobreq_upload *ups, size_t n, size_t *bad, jerr *e)
{
    links_ctx c = {.ups = ups, .index = json_object(), .state = xcalloc(n ? n : 1, 1),
                   .result = xcalloc(n ? n : 1, sizeof(size_t)), .cost = xcalloc(n ? n : 1, 1)};
    c.nodes = xmalloc(64 * sizeof *c.nodes);
    c.cap = 64;
    c.nodes[c.nnodes++] = (lnode){.parent = 0, .len = 0, .link = -1}; /* /work */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) /* mark the listed links on their nodes */
        if (!strcmp(ups[i].type, "symlink") && ups[i].target) {
            long node = links_path(&c, ups[i].path, strlen(ups[i].path));
            if (node > 0)
                c.nodes[node].link = (long)i;
        }
    for (size_t i = 0; i < n && rc == 0; i++) {
        const jobreq_upload *u = &ups[i];
        if (strcmp(u->type, "symlink") || !u->target)
            continue;
        int r = links_resolve(&c, i, 0);
        if (r == -1)
            rc = jerr_field(e, "uploads", "uploads: '%.200s' is a symlink to '%.200s', outside the uploads; only links "
                                          "that stay inside /work are kept (upload the file itself instead)",
                            u->path, u->target);
        else if (r == -2)
            rc = jerr_field(e, "uploads", "uploads: '%.200s' is a symlink to '%.200s', which goes through too many "
                                          "links (more than %d) or grows too long",
                            u->path, u->target, LINK_MAX_FOLLOWED);
        if (rc < 0 && bad)
            *bad = i;
    }
    free(c.nodes);
    free(c.state);
    free(c.result);
    free(c.cost);
    json_decref(c.index);
    return rc;
}

/* The listing's own rules: each path's directory comes first, as a directory; content_b64 and
 * streamed files (a size and no content) are not mixed; links stay inside /work. */
static int check_uploads(const job_req *r, jerr *e)
{
    if (!r->nuploads)
        return 0;
    json_t *dirs = json_object();
    int rc = 0;
    bool b64 = false, streamed = false;
    for (size_t i = 0; i < r->nuploads && rc == 0; i++) {
        const jobreq_upload *u = &r->uploads[i];
        const char *slash = strrchr(u->path, '/');
        if (slash) {
            char *parent = xstrdup(u->path);
            parent[slash - u->path] = 0;
            if (!json_object_get(dirs, parent))
                rc = jerr_field(e, "uploads", "uploads: '%.200s': its directory '%.200s' must be listed before it, "
                                              "as a directory", u->path, parent);
            free(parent);
        }
        if (!strcmp(u->type, "dir"))
            json_object_set_new(dirs, u->path, json_true());
        if (!strcmp(u->type, "file")) {
            b64 |= u->content_b64 != NULL;
            streamed |= !u->content_b64 && u->size > 0;
            /* (here, not when the file is written: a workflow's jobs are made after it is
             * committed, and one refused then left the workflow made and its jobs not) */
            size_t len;
            if (u->content_b64 && b64_decoded_len(u->content_b64, strlen(u->content_b64), &len) < 0)
                rc = jerr_field(e, "uploads", "uploads: '%.200s': content_b64 is not valid base64 (the standard "
                                              "alphabet, padded with '=')", u->path);
            else if (u->content_b64 && u->size >= 0 && (uint64_t)u->size != len)
                rc = jerr_field(e, "uploads", "uploads: '%.200s': size %lld does not match its content_b64 (%zu "
                                              "bytes); give the decoded length, or no size", u->path,
                                (long long)u->size, len);
        }
    }
    json_decref(dirs);
    if (rc == 0 && b64 && streamed)
        rc = jerr_field(e, "uploads", "uploads: some files carry content_b64 and others only a size (their bytes "
                                      "to follow); send every file one way");
    return rc < 0 ? rc : jobreq_upload_links_check(r->uploads, r->nuploads, NULL, e);
}

int jobreq_check(const job_req *r, jerr *e)
{
    if (!r->command || !*r->command)
        return jerr_field(e, "command", "command: missing; give the program to run");
    if (check_uploads(r, e) < 0)
        return -1;
    if (r->array && (r->tty || r->stdin_open))
        return jerr_field(e, "array", "array: an array's tasks run unattended; drop %s",
                          r->tty ? "tty (rnx job run -t, --tty)" : "stdin (rnx job run -i, --interactive)");
    /* any one of (Slurm's '?'): of jobs to wait for, as a whole (not task by task), not singleton */
    if (r->after_any && !r->nafter)
        return jerr_field(e, "after_any", "after_any: true says any one of after's jobs is enough, and the job "
                                          "waits for none; give after");
    for (size_t k = 0; r->after_any && k < r->nafter; k++)
        if (r->after[k].state == JA_CORR)
            return jerr_field(e, "after_any", "after_any: after[%zu] is task by task (corr), which is for all of an "
                                              "array's tasks, not one of a list", k);
    if (r->after_any && r->singleton)
        return jerr_field(e, "after_any", "after_any: not with singleton (it would be one more of the list)");
    if (r->singleton && !r->name)
        return jerr_field(e, "singleton", "singleton: runs one at a time among your jobs of its name, and the job "
                                          "has none; give it a name (rnx job run --name=train --singleton)");
    if (r->singleton && r->array)
        return jerr_field(e, "singleton", "singleton: not for an array; to run its tasks one at a time give %%1 "
                                          "(--array=0-9%%1)");
    /* none (the default) and host have no link of the job's own for tc to shape: a conflict of
     * fields, found by rnx and a workflow file before anything is sent, as the daemon finds it */
    if (r->max_netbps && (!r->network || !strcmp(r->network, "none") || !strcmp(r->network, "host")))
        return jerr_field(e, "max_netbps", "max_netbps: only a job on isolated, bridge or a named network has a link "
                                           "of its own to limit; this one's network is %s",
                          r->network ? r->network : "none (the default)");
    if (r->signal && !(jobreq_has(r, JR_MAX_RUNTIME_S) && r->max_runtime_s > 0))
        return jerr_field(e, "signal", "signal: %s is sent before the run-time limit, and the job has none; give "
                                       "max_runtime too (rnx job run --max-runtime=2h --signal=%s)", r->signal, r->signal);
    bool mig = jobreq_has(r, JR_GPU_MIG), all = r->gpu_all, ids = r->ngpu_ids > 0;
    bool count = jobreq_has(r, JR_GPU_COUNT) && r->gpu_count > 0, mem = jobreq_has(r, JR_GPU_MEMORY_MB);
    if (mig) {
        if (count || all || ids || mem)
            return jerr_field(e, "gpu_mig", "gpu_mig: asks for one MIG device; do not also give gpu_count, gpu_ids, "
                                            "gpu_all or gpu_memory_mb (the profile says its memory)");
        if (env_says_no_gpu(r))
            return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES asks for no GPU, but the job also asks for a "
                                        "MIG device; drop one of the two");
        if (r->gpu_share || r->gpu_type || r->gpu_cc)
            return jerr_field(e, "gpu_mig", "gpu_mig: a MIG device is its own slice of a GPU; do not also give "
                                            "gpu_share, gpu_type or gpu_cc");
        return 0;
    }
    if (all && (count || ids))
        return jerr_field(e, "gpu_all", "gpu_all: asks for every GPU; do not also give gpu_count or gpu_ids");
    bool asked = count || all || ids || r->ndevices;
    if (!asked) {
        const char *f = r->gpu_type ? "gpu_type" : r->gpu_cc ? "gpu_cc" : r->gpu_share ? "gpu_share"
                        : jobreq_has(r, JR_CROSS_NUMA) ? "cross_numa" : mem ? "gpu_memory_mb"
                        : r->gpu_optional ? "gpu_optional" : r->gpu_caps ? "gpu_caps" : NULL;
        /* a stored --gpu-optional job that runs without keeps its qualifiers */
        if (f && !r->gpu_degraded)
            return jerr_field(e, f, "%s: qualifies a GPU request, but the job asks for no GPU; add gpu_count", f);
        return 0;
    }
    if (r->gpu_share) {
        if (r->gpu_count > 1 || r->ngpu_ids > 1)
            return jerr_field(e, "gpu_share", "gpu_share: a shared job gets one GPU (each shared GPU has its own MPS "
                                              "server, and a CUDA process talks to one); ask for gpu_count 1");
        if (!mem)
            return jerr_field(e, "gpu_share", "gpu_share: a shared GPU needs a memory reservation; add gpu_memory_mb");
        if (all)
            return jerr_field(e, "gpu_share", "gpu_share: cannot be combined with gpu_all");
    }
    if (env_says_no_gpu(r))
        return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES=%s asks for no GPU, but the job also asks for GPUs; "
                                    "drop one of the two", jobreq_env_get(r, false, "NVIDIA_VISIBLE_DEVICES"));
    return 0;
}

int jobreq_signal(const job_req *r, uint32_t *secs)
{
    int sig = 0;
    *secs = 0;
    if (r->signal && parse_signal_warning("signal", r->signal, &sig, secs, NULL, 0, NULL) < 0)
        return 0;
    return sig;
}

int jobreq_check_submitted(job_req *r, jerr *e)
{
    if (nvidia_env(r, e) < 0 || jobreq_check(r, e) < 0)
        return -1;
    /* at submission only: a limit lowered later (rnx job update) has the signal sent at once */
    uint32_t secs;
    if (jobreq_signal(r, &secs) && secs >= (uint64_t)r->max_runtime_s)
        return jerr_field(e, "signal", "signal: %s is due %u s before the run-time limit, but max_runtime is %lld s: "
                                       "it would come as the job starts; give fewer seconds", r->signal, secs,
                          (long long)r->max_runtime_s);
    return 0;
}

int jobreq_check_machine(const job_req *r, const jobreq_machine *m, jerr *e)
{
    /* the table's sentence with the machine's bound for "up" */
    const jobreq_field *cpu = &jobreq_fields[JR_MAX_CPU];
    if (jobreq_has(r, JR_MAX_CPU) && r->max_cpu > (int64_t)m->ncpus * 100)
        return jerr_field(e, cpu->key, "%s: '%lld' must be " CPU_PERCENT " from %lld to %d: " CPU_PERCENT_IS
                                       "; this machine has %d CPU%s",
                          cpu->key, (long long)r->max_cpu, (long long)cpu->min, m->ncpus * 100, m->ncpus,
                          m->ncpus == 1 ? "" : "s");
    if (jobreq_has(r, JR_MAX_MEMORY_MB) && (uint64_t)r->max_memory_mb > m->mem_total_mb)
        return jerr_field(e, "max_memory_mb", "max_memory_mb: '%lld' is more than this machine's memory, %llu MB",
                          (long long)r->max_memory_mb, (unsigned long long)m->mem_total_mb);
    if (r->cpu_cores) {
        uint8_t mask[CPU_MAX / 8];
        if (parse_cpu_list("cpu_cores", r->cpu_cores, mask, e) < 0)
            return -1;
        for (int c = 0; c < CPU_MAX; c++)
            if ((mask[c / 8] & (1u << (c % 8))) && !(m->online_cpus[c / 8] & (1u << (c % 8)))) {
                char online[256];
                format_cpu_list(m->online_cpus, online, sizeof online);
                return jerr_field(e, "cpu_cores", "cpu_cores: CPU %d is not online; this machine has CPUs %s", c,
                                  online);
            }
    }
    return 0;
}

/* ---- to JSON --------------------------------------------------------------------------------- */

static json_t *env_json(const jobreq_pair *p, size_t n, bool masked)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, p[i].name, json_string(masked ? "***" : p[i].value));
    return o;
}

static json_t *list_json(char **l, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(l[i]));
    return a;
}

static json_t *uploads_json(const job_req *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->nuploads; i++) {
        const jobreq_upload *u = &r->uploads[i];
        json_t *o;
        if (u->written) {
            /* the listing: what was written, without content */
            char mode[8];
            snprintf(mode, sizeof mode, "%04o", (unsigned)u->mode);
            o = json_pack("{s:s,s:s,s:s,s:I}", "path", u->path, "type", u->type, "mode", mode, "size",
                          (json_int_t)(u->size < 0 ? 0 : u->size));
            if (u->target)
                json_object_set_new(o, "target", json_string(u->target));
        } else {
            o = json_pack("{s:s,s:s}", "path", u->path, "type", u->type);
            if (u->has_mode)
                json_object_set_new(o, "mode", json_integer(u->mode));
            if (u->size >= 0)
                json_object_set_new(o, "size", json_integer(u->size));
            if (u->content_b64)
                json_object_set_new(o, "content_b64", json_string(u->content_b64));
            if (u->target)
                json_object_set_new(o, "target", json_string(u->target));
        }
        json_array_append_new(a, o);
    }
    return a;
}

json_t *jobreq_to_json(const job_req *r, int flags)
{
    json_t *o = json_object();
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        if (!jobreq_has(r, (enum jobreq_id)i))
            continue;
        job_req *w = (job_req *)r; /* the accessors take no const; nothing is written */
        json_t *v = NULL;
        switch (f->kind) {
        case JK_TEXT: v = json_string(*str_at(w, f)); break;
        case JK_INT: v = json_integer(*int_at(w, f)); break;
        case JK_BOOL: v = json_boolean(*bool_at(w, f)); break;
        case JK_ENV:
            v = i == JR_ENV ? env_json(r->env, r->nenv, false)
                            : env_json(r->secret_env, r->nsecret_env, !(flags & JOBREQ_JSON_SECRETS));
            break;
        case JK_LIST: {
            size_t *n;
            char ***l = list_items((job_req *)r, (enum jobreq_id)i, &n);
            v = list_json(*l, *n);
            break;
        }
        case JK_UPLOADS: v = uploads_json(r); break;
        case JK_AFTER:
            v = json_array();
            for (size_t k = 0; k < r->nafter; k++)
                json_array_append_new(v, json_pack("{s:s,s:s}", "job", r->after[k].job, "state",
                                                   jobreq_after_state_name(r->after[k].state)));
            break;
        }
        json_object_set_new(o, f->key, v);
    }
    return o;
}

/* ---- as flags ------------------------------------------------------------------------------- */

/* A whole number in the largest unit that writes it exactly, as the field's parser reads it. */
typedef struct unit_mul {
    const char *name;
    int64_t mul;
} unit_mul;

static void int_text(const jobreq_field *f, int64_t v, char *out, size_t len)
{
    static const unit_mul mb[] = {{"TB", 1 << 20}, {"GB", 1 << 10}, {"MB", 1}},
                          bytes[] = {{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}};
    const unit_mul *u = f->unit == JU_MB ? mb : f->unit == JU_BYTES ? bytes : NULL;
    for (size_t i = 0; u && v > 0 && i < 3; i++)
        if (v % u[i].mul == 0) {
            snprintf(out, len, "%lld%s", (long long)(v / u[i].mul), u[i].name);
            return;
        }
    if (f->unit == JU_SECONDS && v > 0) {
        /* 1d2h30m, 90s: what parse_duration reads back */
        static const unit_mul t[] = {{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}};
        size_t l = 0;
        out[0] = 0;
        for (size_t i = 0; i < ARRAY_LEN(t) && l < len; i++)
            if (v / t[i].mul) {
                l += (size_t)snprintf(out + l, len - l, "%lld%s", (long long)(v / t[i].mul), t[i].name);
                v %= t[i].mul;
            }
        return;
    }
    snprintf(out, len, "%lld", (long long)v);
}

static void flag_add(json_t *a, const char *flag, const char *value)
{
    char *s = xmalloc(strlen(flag) + (value ? strlen(value) + 1 : 0) + 1);
    sprintf(s, "%s%s%s", flag, value ? "=" : "", value ? value : "");
    json_array_append_new(a, json_string(s));
    free(s);
}

json_t *jobreq_to_flags(const job_req *r)
{
    json_t *a = json_array();
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        job_req *w = (job_req *)r; /* the accessors take no const; nothing is written */
        if (!jobreq_has(r, (enum jobreq_id)i) || !f->flag || f->daemon_only ||
            (i == JR_MAX_MEMORY_MB && r->memory_default))
            continue;
        char num[64];
        switch (f->kind) {
        case JK_TEXT: flag_add(a, f->flag, *str_at(w, f)); break;
        case JK_INT:
            int_text(f, *int_at(w, f), num, sizeof num);
            flag_add(a, f->flag, num);
            break;
        case JK_BOOL:
            /* a switch says only yes; --gpu=all is its own flag; --cross-numa takes yes or no */
            if (i == JR_CROSS_NUMA)
                flag_add(a, f->flag, r->cross_numa ? "yes" : "no");
            else if (*bool_at(w, f))
                flag_add(a, f->flag, NULL);
            break;
        case JK_ENV: {
            bool secret = i == JR_SECRET_ENV;
            const jobreq_pair *p = secret ? r->secret_env : r->env;
            size_t n = secret ? r->nsecret_env : r->nenv;
            for (size_t k = 0; k < n; k++) {
                char *kv = xmalloc(strlen(p[k].name) + strlen(p[k].value) + 5);
                sprintf(kv, "%s=%s", p[k].name, secret ? "***" : p[k].value);
                flag_add(a, f->flag, kv);
                free(kv);
            }
            break;
        }
        case JK_LIST: {
            size_t *n;
            char ***l = list_items(w, (enum jobreq_id)i, &n);
            if (one_per_flag(f)) { /* --volume once per volume, --device once per device */
                for (size_t k = 0; k < *n; k++)
                    flag_add(a, f->flag, (*l)[k]);
                break;
            }
            size_t len = 1;
            for (size_t k = 0; k < *n; k++)
                len += strlen((*l)[k]) + 1;
            char *joined = xmalloc(len);
            joined[0] = 0;
            for (size_t k = 0; k < *n; k++)
                strcat(strcat(joined, k ? "," : ""), (*l)[k]);
            flag_add(a, f->flag, joined);
            free(joined);
            break;
        }
        case JK_AFTER:
            if (r->after_any) {
                /* one flag, the items separated by '?': any one of them */
                size_t len = 1;
                for (size_t k = 0; k < r->nafter; k++)
                    len += strlen(r->after[k].job) + 16;
                char *p = xmalloc(len);
                p[0] = 0;
                for (size_t k = 0; k < r->nafter; k++)
                    sprintf(p + strlen(p), "%s%s:%s", k ? "?" : "", r->after[k].job,
                            jobreq_after_state_name(r->after[k].state));
                flag_add(a, f->flag, p);
                free(p);
                break;
            }
            for (size_t k = 0; k < r->nafter; k++) {
                char *p = xmalloc(strlen(r->after[k].job) + 16);
                sprintf(p, "%s:%s", r->after[k].job, jobreq_after_state_name(r->after[k].state));
                flag_add(a, f->flag, p);
                free(p);
            }
            break;
        case JK_UPLOADS:
            /* what was sent from the top of /work: files, and directories with their contents */
            for (size_t k = 0; k < r->nuploads; k++) {
                const jobreq_upload *u = &r->uploads[k];
                if (strchr(u->path, '/'))
                    continue;
                char *p = xmalloc(strlen(u->path) + 2);
                sprintf(p, "%s%s", u->path, u->type && !strcmp(u->type, "dir") ? "/" : "");
                flag_add(a, f->flag, p);
                free(p);
            }
            break;
        }
    }
    return a;
}

/* ---- other surfaces' words ------------------------------------------------------------------ */

void jobreq_reword(const jerr *e, const char *label, char *out, size_t len)
{
    snprintf(out, len, "%s", e->msg);
    const jobreq_field *f = NULL;
    size_t kl = 0;
    for (int i = 0; i < JR_N && !f; i++) {
        kl = strlen(jobreq_fields[i].key);
        if (!strncmp(e->field, jobreq_fields[i].key, kl) &&
            (e->field[kl] == 0 || e->field[kl] == '[' || e->field[kl] == '.'))
            f = &jobreq_fields[i];
    }
    if (!f || !label)
        return;
    if (e->field[kl] == 0 && !strncmp(e->msg, f->key, kl) && e->msg[kl] == ':')
        snprintf(out, len, "%s%s", label, e->msg + kl);
    else if (e->field[kl] != 0)
        snprintf(out, len, "%s: %s", label, e->msg);
}

/* A character of a key or of a configuration key's name: "jobs.max_cpu" is not max_cpu. */
static bool key_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }
/* Where a key ends a word: not before more of a name ("gpu_counts", "max_cpu.x"), but before a
 * sentence's full stop. */
static bool key_end(const char *p) { return !key_char(*p) || (*p == '.' && !key_char(p[1])); }

void jobreq_flag_words(char *s, size_t len)
{
    char *out = xmalloc(len);
    size_t o = 0;
    for (const char *p = s; *p && o + 1 < len;) {
        const jobreq_field *f = NULL;
        size_t kl = 0;
        if (p == s || !key_char(p[-1]))
            for (int i = 0; i < JR_N && !f; i++) {
                const jobreq_field *c = &jobreq_fields[i];
                kl = strlen(c->key);
                if (c->flag && strchr(c->key, '_') && !strncmp(p, c->key, kl) && key_end(p + kl))
                    f = c;
            }
        if (f) {
            o += (size_t)snprintf(out + o, len - o, "%s", f->flag);
            if (o >= len)
                o = len - 1;
            p += kl;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = 0;
    memcpy(s, out, o + 1);
    free(out);
}

bool jobreq_change_clears(enum jobreq_id id, const json_t *v)
{
    if (id == JR_AFTER)
        return json_is_null(v) || (json_is_array(v) && !json_array_size(v));
    return (id == JR_SCHEDULE_AT || id == JR_MAX_RUNTIME_S) && json_is_null(v);
}

int jobreq_change(const job_req *cur, json_t *changes, const enum jobreq_id *ids, size_t nids, job_req *out,
                  uint64_t *changed, time_t now, jerr *e)
{
    *out = (job_req){0};
    *changed = 0;
    char may[256] = "";
    for (size_t i = 0, n = 0; i < nids; i++)
        n += (size_t)snprintf(may + n, n < sizeof may ? sizeof may - n : 0, "%s%s", i ? ", " : "",
                              jobreq_fields[ids[i]].key);
    if (!json_is_object(changes) || !json_object_size(changes))
        return jerr_field(e, "body", "body: must be an object of the fields to change: %s", may);
    json_t *o = jobreq_to_json(cur, JOBREQ_JSON_SECRETS);
    const char *key;
    json_t *v;
    json_object_foreach(changes, key, v) {
        size_t i = 0;
        while (i < nids && strcmp(key, jobreq_fields[ids[i]].key))
            i++;
        if (i == nids) {
            json_decref(o);
            return jerr_field(e, key, "%s: cannot be changed; a job's update may change %s", key, may);
        }
        /* null (and, for after, an empty list) takes out a field whose absence means something:
         * no dependencies, no start time (rnx job update --after=none, --schedule=now) */
        if (jobreq_change_clears(ids[i], v)) {
            /* changed even when it had none: the caller's rules for the field (whose job may
             * change it, in which state) hold for a removal too; it drops what stays the same */
            *changed |= 1ull << ids[i];
            json_object_del(o, key);
            if (ids[i] == JR_AFTER) /* no jobs, so no "any one of" them */
                json_object_del(o, jobreq_fields[JR_AFTER_ANY].key);
            continue;
        }
        /* the new value, held to the schema as a submission's (a stored request's other fields
         * are read as stored) */
        job_req one = {0};
        const jobreq_field *f = &jobreq_fields[ids[i]];
        int bad = field_from_json(&one, f, v, NULL, 0, now, e);
        json_t *num = NULL; /* a number's text ("8GB", "2:00:00") as the number it is */
        if (bad == 0 && f->kind == JK_INT && json_is_string(v)) {
            if (!(one.has & 1ull << ids[i])) /* "gpu_count": "all" is gpu_all, which no update changes */
                bad = jerr_field(e, key, "%s: '%.40s' sets another field than %s, which an update does not change; "
                                         "give a number", key, json_string_value(v), key);
            else
                num = json_integer(*int_at(&one, f));
        }
        jobreq_free(&one);
        if (num)
            v = num;
        if (bad < 0) {
            json_decref(o);
            if (ids[i] == JR_MAX_RUNTIME_S) /* what takes it away, where a change may */
                snprintf(e->msg + strlen(e->msg), sizeof e->msg - strlen(e->msg),
                         "; or null to take the limit away (Slurm's TimeLimit=UNLIMITED)");
            return -1;
        }
        if (!json_equal(json_object_get(o, key), v))
            *changed |= 1ull << ids[i];
        json_object_set(o, key, v);
        json_decref(num);
    }
    int rc = jobreq_from_json(o, out, JOBREQ_FROM_DB, now, e);
    json_decref(o);
    if (rc == 0 && jobreq_check(out, e) < 0) { /* the rules between fields: gpu_count with gpu_ids, ... */
        jobreq_free(out);
        rc = -1;
    }
    if (rc < 0)
        *changed = 0;
    return rc;
}

int jobreq_apply(const job_req *cur, const job_req *from, uint64_t fields, job_req *out, uint64_t *changed, jerr *e)
{
    *out = (job_req){0};
    *changed = 0;
    json_t *o = jobreq_to_json(cur, JOBREQ_JSON_SECRETS), *f = jobreq_to_json(from, JOBREQ_JSON_SECRETS);
    for (int i = 0; i < JR_N; i++) {
        if (!(fields >> i & 1))
            continue;
        const char *key = jobreq_fields[i].key;
        json_t *v = json_object_get(f, key);
        if (!json_equal(json_object_get(o, key), v))
            *changed |= 1ull << i;
        if (v)
            json_object_set(o, key, v);
        else
            json_object_del(o, key);
    }
    int rc = jobreq_from_json(o, out, JOBREQ_FROM_DB, 0, e);
    json_decref(o);
    json_decref(f);
    if (rc == 0 && jobreq_check(out, e) < 0) {
        jobreq_free(out);
        rc = -1;
    }
    if (rc < 0)
        *changed = 0;
    return rc;
}
