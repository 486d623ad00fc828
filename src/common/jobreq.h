/* The one job request schema: every field a job request can carry, in one table (jobreq.c),
 * and the typed request it fills. rnx's flags, rnx's workflow parser and the daemon's API all
 * read their input through it, so a value is accepted or refused alike everywhere, with the
 * same sentence:
 *
 *   --gpu=65           rnx: --gpu: '65' must be a number of GPUs from 0 to 64, or all
 *   gpu_count: 65      wf.yaml:5:18: job 'a': gpu_count: '65' must be a number of GPUs ...
 *   {"gpu_count": 65}  400 {"field": "gpu_count", "message": "gpu_count: '65' must be ..."}
 *
 * The message always starts with the API field's name and ": "; each surface swaps that word
 * for its own (the flag, the YAML key) and keeps the rest. Adding a field is one row in the
 * table and one member here, plus what the daemon does with it.
 *
 * Pure: no syscalls but the clock for "in the past" (passed in), no daemon state. What depends
 * on the machine (its CPUs, memory, GPUs) is checked by the daemon with jobreq_check_machine
 * and gpu validation in core/, still in the table's words. */
#ifndef JOBLET_JOBREQ_H
#define JOBLET_JOBREQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"
#include "parse.h"

/* Every field, in the order the request's JSON lists them. */
enum jobreq_id {
    JR_COMMAND, JR_ARGS, JR_NAME, JR_ENV, JR_SECRET_ENV, JR_WORKDIR, JR_NETWORK,
    JR_MAX_CPU, JR_MAX_MEMORY_MB, JR_MAX_IOBPS, JR_CPU_CORES, JR_MAX_RUNTIME_S, JR_SCHEDULE_AT,
    JR_UPLOADS, JR_GPU_COUNT, JR_GPU_MEMORY_MB, JR_GPU_ALL, JR_GPU_IDS, JR_GPU_CAPS, JR_GPU_OPTIONAL,
    JR_GPU_MIG, JR_PRIORITY, JR_GPU_TYPE, JR_GPU_CC, JR_GPU_SHARE, JR_CROSS_NUMA, JR_PREEMPTIBLE,
    JR_RUNTIME, JR_VOLUMES, JR_ISOLATION, JR_DEVICES, JR_TTY, JR_STDIN, JR_MAX_NETBPS, JR_ARRAY,
    JR_AFTER, JR_SIGNAL, JR_SINGLETON, JR_SLURM_ENV, JR_AFTER_ANY, JR_HOLD,
    /* set by the daemon, never by a client */
    JR_PIDS_MAX, JR_GPU_DEGRADED, JR_MAX_LOG_BYTES, JR_USER_PIDS_MAX, JR_MEMORY_DEFAULT, JR_VOLUME_PINS,
    JR_ACCOUNT_PIN,
    JR_N
};

/* How a field's value is written in text (a flag, a YAML scalar) and what it holds. */
enum jobreq_kind {
    JK_TEXT,      /* a string */
    JK_INT,       /* a whole number; text may carry the unit below */
    JK_BOOL,      /* true/false (text: true, false, yes, no) */
    JK_ENV,       /* NAME: value */
    JK_LIST,      /* a list of strings (text: comma-separated) */
    JK_UPLOADS,   /* files sent along */
    JK_AFTER,     /* the jobs it waits for: [{job, state}] (text: ID[:STATE],... or Slurm's afterok:ID:ID) */
};
enum jobreq_unit {
    JU_NONE, JU_PERCENT, JU_MB, JU_BYTES, JU_SECONDS, JU_GPUS, JU_CPUS, JU_TIME, JU_CAPS, JU_CC,
    JU_NETWORK, JU_PATH, JU_NAME,
    JU_VOLUME,    /* NAME or NAME:ro, NAME of letters, digits, '.', '_', '-' */
    JU_ISOLATION, /* native or gvisor */
    JU_CDI,       /* a CDI device name: nvidia.com/gpu=INDEX, =UUID or =all */
    JU_ARRAY,     /* a job array's task list: 0-99%8, 1,3,7, 0-15:4 (common/arrayspec.h) */
    JU_SIGNAL,    /* Slurm's --signal: [B:]SIG[@SECONDS] (common/parse.h parse_signal_warning) */
};

typedef struct jobreq_field {
    const char *key;        /* the API's name, and the word every message starts with */
    const char *flag;       /* rnx job run's flag, NULL when there is none */
    const char *yaml;       /* the workflow file's key, NULL when there is none */
    bool yaml_resource;     /* the YAML key sits under resources: */
    bool daemon_only;       /* set by joblet itself; a client may not send it */
    enum jobreq_kind kind;
    enum jobreq_unit unit;
    int64_t min, max;       /* JK_INT: the accepted range; JK_TEXT: max = length in bytes */
    size_t off;             /* where the value lives in job_req */
    const char *accepts;    /* "must be ..." with the bounds as %lld, %lld (min, max) or %2$lld (max) */
    /* rnx job run --help's entry for the flag (and so rnx(1)'s and completion's, which read
     * the help): the value's placeholder (NULL for a switch; "none|host" lists the values
     * completion offers) and the description, lines separated by '\n' */
    const char *metavar, *help;
    /* set for the job's limits (the API's "limits" object, rnx job status's Limits: line):
     * how that line names it, %s the value in its unit ("max runtime %s" -> max runtime 1h30m) */
    const char *limit;
    /* rnx job run's one-letter form of the flag (-t for --tty), 0 when it has none */
    char letter;
} jobreq_field;

extern const jobreq_field jobreq_fields[JR_N];
/* The field's accepts sentence with its bounds filled in. */
void jobreq_accepts(const jobreq_field *f, char *out, size_t len);
const jobreq_field *jobreq_field_by_key(const char *key);
const jobreq_field *jobreq_field_by_yaml(const char *key, bool resource);

typedef struct jobreq_pair {
    char *name, *value;
} jobreq_pair;

typedef struct jobreq_upload {
    char *path;
    char *type;               /* file, dir, symlink */
    char *target;             /* symlinks */
    char *content_b64;        /* the JSON form: the file's bytes, until the daemon wrote them */
    uint32_t mode;
    bool has_mode;
    bool written;             /* the daemon wrote it: the listing (mode as applied, size as written) */
    int64_t size;             /* a file's size: declared (its bytes follow the request, docs/api.md
                               * "Streamed uploads") or written; -1 when not given */
} jobreq_upload;

/* after: how a job it depends on must have gone (docs/batch.md). The names are
 * rnx's and the API's; Slurm's afterok, afternotok, afterany and after read as them. */
enum jobreq_after_state {
    JA_ANY,       /* ended, in any state (afterany; the default) */
    JA_OK,        /* ended COMPLETED (afterok) */
    JA_NOTOK,     /* ended, not COMPLETED: FAILED, STOPPED or CANCELED (afternotok) */
    JA_STARTED,   /* started (or ended without starting) (Slurm's plain after) */
    JA_CORR,      /* an array after an array: each task after the other's task of the same id ended
                   * COMPLETED (aftercorr); otherwise as ok */
};
#define JOBREQ_AFTER_MAX 64
typedef struct jobreq_after {
    char *job;                /* as given; the daemon stores the full id it resolved at submission */
    uint8_t state;            /* enum jobreq_after_state */
} jobreq_after;
const char *jobreq_after_state_name(int state);
/* ok, notok, any, started, corr (and Slurm's afterok, afternotok, afterany, after, aftercorr): the
 * state, or -1. */
int jobreq_after_state_parse(const char *s);

typedef struct job_req {
    uint64_t has;             /* bit JR_x: the field was given */
    char *command, *name, *workdir, *network, *cpu_cores, *schedule_at;
    char **args;
    size_t nargs;
    jobreq_pair *env, *secret_env;
    size_t nenv, nsecret_env;
    jobreq_upload *uploads;
    size_t nuploads;
    int64_t max_cpu, max_memory_mb, max_iobps, max_runtime_s, max_netbps;
    int64_t gpu_count, gpu_memory_mb, priority, pids_max, max_log_bytes, user_pids_max;
    bool gpu_all, gpu_optional, gpu_share, cross_numa, preemptible;
    bool tty;                 /* the job's stdin, stdout and stderr are a terminal made inside it */
    bool stdin_open;          /* its stdin comes from whoever attaches (docs/api.md, "Interactive
                               * streams"), not /dev/null */
    bool memory_default;      /* max_memory_mb is joblet's default, not the submitter's */
    char **gpu_ids;           /* as given; the daemon stores UUIDs */
    size_t ngpu_ids;
    char *runtime;            /* the runtime the job runs in (rnx runtime list); NULL: the host's */
    char **volumes;           /* "NAME" or "NAME:ro", mounted at /volumes/NAME */
    size_t nvolumes;
    char *isolation;          /* native or gvisor (docs/sandbox.md); NULL: the machine's default */
    char **devices;           /* CDI names, nvidia.com/gpu=0; the daemon maps them onto gpu_ids */
    size_t ndevices;
    char *gpu_caps, *gpu_mig, *gpu_type, *gpu_cc, *gpu_degraded;
    char *array;              /* a job array's task list, canonical ("0-99%8"); NULL: one job */
    char *volume_pins;        /* which volume each of volumes is: "NAME:OWNER_UID:ID,..." (core/volumes.h) */
    char *account_pin;        /* its owner's account at submission: "NAME", or "NAME:GID" when the job's
                               * gid was the account's group then (core/submit.h) */
    int64_t schedule_ms;      /* schedule_at as milliseconds, 0 none */
    jobreq_after *after;      /* the jobs it waits for (rnx job run --after) */
    size_t nafter;
    bool after_any;           /* any one of them as asked is enough (Slurm's '?' list); else all */
    char *signal;             /* its command's warning before the run-time limit, canonical
                               * ("SIGUSR1@90"; jobreq_signal reads it); NULL none */
    bool singleton;           /* waits (PENDING) while another of its owner's jobs of its name
                               * runs: one at a time by name (Slurm's --dependency=singleton) */
    bool hold;                /* submitted HELD: it waits for rnx job release (Slurm's sbatch -H);
                               * read at submission only */
    bool slurm_env;           /* the job sees Slurm's variables of itself (SLURM_JOB_ID...; rnx job
                               * batch asks for them: exec/spec_build.c) */
} job_req;

static inline bool jobreq_has(const job_req *r, enum jobreq_id f) { return r->has >> f & 1; }
/* The request's signal field: the signal and how many seconds before the run-time limit; 0 (no
 * signal) when it has none. */
int jobreq_signal(const job_req *r, uint32_t *secs);

/* How a request is read. */
enum {
    JOBREQ_FROM_DB = 1,       /* as the daemon stored it: its own fields and the upload listing
                               * are accepted, and a start time may lie in the past */
};

/* Reads and checks a request object (the API's POST /v1/jobs body): every field's type and
 * value, and the rules between fields (jobreq_check). On failure *r is left empty. */
int jobreq_from_json(json_t *body, job_req *r, int flags, time_t now, jerr *e);
/* Sets one field from text as a person typed it (a flag's value, a YAML scalar): units are
 * read by the field's unit ("8GB", "2h", "all"), then checked as jobreq_from_json checks it. */
int jobreq_set_text(job_req *r, const jobreq_field *f, const char *text, time_t now, jerr *e);
/* Adds NAME=value to env or secret_env; a name given twice (in either) is refused. */
int jobreq_add_env(job_req *r, bool secret, const char *name, const char *value, jerr *e);
/* Appends one argument / the command. */
void jobreq_add_arg(job_req *r, const char *arg);
int jobreq_set_command(job_req *r, const char *command, jerr *e);
/* Takes over an upload (its strings are copied). */
void jobreq_add_upload(job_req *r, const jobreq_upload *u);
/* The rules between fields that need nothing of the machine. For uploads: a path's directory
 * is listed before it, content_b64 and streamed files are not mixed, and every symlink stays
 * inside /work (jobreq_upload_links_check). */
int jobreq_check(const job_req *r, jerr *e);
/* What jobreq_from_json does once every field is read: NVIDIA_VISIBLE_DEVICES and
 * NVIDIA_DRIVER_CAPABILITIES in env read as the GPU fields they ask for (added to *r when the
 * job gives none), then jobreq_check, and the rule that holds at submission only: a signal due
 * before the job would start (its SECONDS not under max_runtime) is refused. rnx and a workflow
 * file's check call it, so a request built from flags is refused before anything is sent exactly
 * where the daemon would refuse it. */
int jobreq_check_submitted(job_req *r, jerr *e);

/* True when some file of the request has a declared size and no content_b64: its bytes follow
 * the request (PUT /v1/uploads/{id}). */
bool jobreq_uploads_streamed(const job_req *r);
/* The bytes the files of a streamed request declare. */
uint64_t jobreq_uploads_declared(const job_req *r);
/* The bytes of r's command, args, env and secret_env (names and values) and of its uploads'
 * listing (paths, link targets): what each job kept holds of its request in memory and in the
 * database (limits.max_request_bytes_per_user). */
uint64_t jobreq_bytes(const job_req *r);
/* Every symlink among ups must stay inside /work: a relative target that, resolved from the
 * link's directory through the links listed (as the kernel would), never climbs above /work.
 * Refused: "uploads: 'data/pw' is a symlink to '/etc/shadow', outside the uploads; ..." with
 * *bad the index of the link. Pure: the listing only, never the disk. */
int jobreq_upload_links_check(const jobreq_upload *ups, size_t n, size_t *bad, jerr *e);

/* What the daemon knows of its machine, for the limits that depend on it. */
typedef struct jobreq_machine {
    int ncpus;
    uint64_t mem_total_mb;
    const uint8_t *online_cpus;   /* CPU_MAX / 8 bytes */
} jobreq_machine;
int jobreq_check_machine(const job_req *r, const jobreq_machine *m, jerr *e);

/* The request as JSON: as stored (secrets in clear) when with_secrets, else as shown. */
enum { JOBREQ_JSON_SECRETS = 1 };
json_t *jobreq_to_json(const job_req *r, int flags);
/* The request as the flags of `rnx job run` that give it, in the table's order, each
 * "--flag=value" (a switch "--flag"): sizes, rates and durations in the largest unit that
 * writes them exactly (8GB, 2h30m), one --env / --volume / --upload per item, secret values as
 * "***", fields without a flag (command, args, the daemon's own) and a memory limit that is
 * joblet's default (memory_default) left out. Read back through
 * jobreq_set_text, each gives the same field (test_jobreq.c). */
json_t *jobreq_to_flags(const job_req *r);
void jobreq_free(job_req *r);
/* A change of a stored request (rnx job update): changes is an object of fields among ids[]
 * (nids of them) with their new values (jobreq_change_clears: null takes after, schedule_at or
 * max_runtime_s out); any other field is refused naming it and those that may change. The request with the
 * changes, read through the same schema as a submission, goes to *out; *changed gets the bits
 * (1 << JR_x) of the fields whose value differs, and of those taken out (had they a value or not). */
int jobreq_change(const job_req *cur, json_t *changes, const enum jobreq_id *ids, size_t nids, job_req *out,
                  uint64_t *changed, time_t now, jerr *e);
/* Whether a change's value v takes field id out rather than setting it: null or [] for after (no
 * dependencies any more), null for schedule_at (no start time: at once) and for max_runtime_s (no
 * time limit: Slurm's TimeLimit=UNLIMITED). Only those mean something when absent; null is
 * refused for any other field as its wrong type. */
bool jobreq_change_clears(enum jobreq_id id, const json_t *v);
/* Replaces the text of a field (normalised values, UUIDs for indexes, ...). */
/* cur with from's values of the fields (bits 1 << JR_x; a field from lacks is left out) into
 * *out, held to the rules between fields as jobreq_change holds it: an array's update (a change
 * read once) given to each of its tasks. *changed: the fields whose value differs from cur's. */
int jobreq_apply(const job_req *cur, const job_req *from, uint64_t fields, job_req *out, uint64_t *changed, jerr *e);
void jobreq_set_str(job_req *r, enum jobreq_id f, const char *s);
void jobreq_set_list(job_req *r, enum jobreq_id f, char **items, size_t n);
const char *jobreq_env_get(const job_req *r, bool secret, const char *name);
/* A volume item "NAME" or "NAME:ro" ("NAME:rw" too): its name (at most len - 1 bytes) and
 * whether it is read-only; -1 when it is not one. */
int jobreq_volume_parse(const char *item, char *name, size_t len, bool *ro);
bool jobreq_volume_name_ok(const char *s, size_t len);
/* A CDI device name of kind nvidia.com/gpu: its device part (an index, a GPU-/MIG- UUID or
 * "all") in *dev, or -1 when it is not one. */
int jobreq_cdi_parse(const char *item, const char **dev);

/* A message of the schema ("gpu_count: ...") worded for another surface: the field's name
 * replaced by `label` (a flag, a YAML key). Sub-fields ("uploads[2]") keep their text. */
void jobreq_reword(const jerr *e, const char *label, char *out, size_t len);
/* The API's field names in a message (s, a string of len bytes at most) as rnx job run's
 * flags, for a refusal of a request built from flags: "do not also give gpu_count or gpu_ids"
 * becomes "do not also give --gpu or --gpu-ids". Only names with '_' (never English words),
 * whole, and not inside a configuration key ("jobs.max_cpu"). */
void jobreq_flag_words(char *s, size_t len);

#endif
