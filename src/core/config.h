#ifndef JOBLET_CONFIG_H
#define JOBLET_CONFIG_H

#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/log.h"
#include "../gpu/gpu.h"

typedef struct limits_config {
    uint32_t max_gpus_per_user;       /* limits.max_gpus_per_user: held at once; 0 = none */
    uint32_t max_queued_per_user;     /* limits.max_queued_per_user: waiting at once; 0 = none */
    uint32_t max_jobs_per_user;       /* limits.max_jobs_per_user: kept (any state, until deleted); 0 = none */
    uint32_t gpu_requests_per_minute; /* limits.gpu_requests_per_minute: GPU submissions; 0 = none */
    uint32_t uploads_per_user;        /* limits.uploads_per_user: streamed uploads open at once */
    uint32_t attach_per_user;         /* limits.attach_sessions_per_user: terminals one user has
                                       * attached at once, all jobs together; 0 = none */
    uint32_t exec_per_user;           /* limits.exec_sessions_per_user: execs one user runs at once,
                                       * all jobs together; 0 = none */
    uint32_t max_running_per_user;    /* limits.max_running_per_user: jobs of one user other than
                                       * root running at once (more wait QUEUED); 0 = none */
    uint64_t max_request_bytes_per_user; /* limits.max_request_bytes_per_user: the requests (command,
                                       * args, env, secret_env) of the jobs one user keeps, an array's
                                       * tasks not made yet each counted, together; 0 = none */
} limits_config;

/* remote.*: the TLS listener (docs/remote.md). */
#define REMOTE_LISTEN_MAX 4
#define REMOTE_USERS_MAX 256
typedef struct remote_config {
    char listen[REMOTE_LISTEN_MAX][64]; /* remote.listen: "ADDR:PORT" ("[::]:7443"); none: no listener */
    unsigned nlisten;
    char pki_dir[512];                  /* remote.pki_dir: ca.pem, server.pem, server-key.pem, revoked.txt */
    struct remote_user {
        char person[65];                /* a certificate's CN */
        char account[33];               /* the local account it acts as */
    } users[REMOTE_USERS_MAX];          /* remote.users; a person not listed acts as the account of their name */
    unsigned nusers;
    uint32_t handshake_timeout_s;       /* remote.handshake_timeout_s: a connection without its first
                                         * request by then is closed */
    uint32_t max_pending;               /* remote.max_pending: connections not yet past their first
                                         * request, at once; past it the oldest is closed */
    uint32_t handshakes_per_s;          /* remote.handshakes_per_s: new connections one address (an
                                         * IPv6 /64) is handed over a second, twice as many at once */
    uint32_t handshakes_total_per_s;    /* remote.handshakes_total_per_s: the same for all addresses
                                         * together */
} remote_config;

/* Every key is optional; these are the embedded defaults (docs/config.md). */
typedef struct config {
    char state_dir[512];          /* state_dir */
    char socket[256];             /* server.socket */
    mode_t socket_mode;           /* server.socket_mode */
    enum log_level log_level;     /* log_level */
    uint64_t uid_range_start;     /* jobs.uid_range_start: root's jobs get a uid of their own */
    uint64_t uid_range_size;      /* jobs.uid_range_size: from this many */
    uint32_t max_running;         /* jobs.max_running, 0 = no limit */
    uint64_t max_upload_bytes;    /* jobs.max_upload_bytes */
    uint64_t upload_timeout_s;    /* jobs.upload_timeout_s: a streamed upload idle this long is dropped */
    uint64_t max_body_bytes;      /* server.max_body_bytes: a request body other than an upload's bytes */
    uint32_t max_conns;           /* server.max_connections: open at once in all (at most half the open-file limit) */
    uint32_t max_conns_per_user;  /* server.max_connections_per_user: open at once per non-root uid; 0 = none */
    uint32_t cpu_priority;        /* server.cpu_priority: the loop thread and the shim zygote at nice -N (common/cpuprio.h) */
    uint32_t idle_timeout_s;      /* server.idle_timeout_s: a connection silent this long is closed */
    uint32_t account_cache_s;     /* server.account_cache_s: an account look-up's answer is kept this long */
    uint64_t max_uploads;         /* server.max_uploads: streamed uploads open at once, all users */
    uint64_t stop_grace_s;        /* jobs.stop_grace_s */
    uint64_t keep_ended_s;        /* jobs.keep_ended_s: ended jobs deleted this long after their end (retention.c); 0 = kept */
    uint64_t attach_wait_s;       /* jobs.attach_wait_s: a terminal job (-t, -i) waits this long at most for
                                   * its first attach before its command starts */
    uint64_t max_attachers;       /* jobs.max_attachers: clients attached to one job's terminal at once */
    uint64_t terminal_idle_s;     /* jobs.terminal_idle_timeout_s: an attach with no byte either way this
                                   * long is closed; 0 = never */
    uint64_t pids_max;            /* jobs.pids_max: default pids limit of a job */
    uint64_t tmp_size_mb;         /* jobs.tmp_size_mb: size of each job's /tmp */
    uint64_t ptys_max;            /* jobs.ptys_max: terminals one job holds at once (its devpts' max=) */
    uint32_t kernel_aio;          /* jobs.kernel_aio: 1 lets jobs call io_setup (exec/seccomp.c) */
    uint64_t max_log_bytes;       /* jobs.max_log_bytes: each output stream's most bytes on disk; 0 = no cap */
    uint64_t max_pids_per_user;   /* jobs.max_pids_per_user: processes of one user's jobs together; 0 = none */
    uint64_t default_memory_pct;  /* jobs.default_memory_percent: a job's memory limit when it gives none,
                                   * in percent of the host's memory; 0 = none */
    uint64_t work_quota;          /* jobs.work_quota: the /work of one user's jobs together; 0 = no bound */
    uint64_t state_reserve;       /* jobs.state_reserve: free bytes of the state filesystem kept for the database */
    uint64_t max_log_bytes_per_user; /* jobs.max_log_bytes_per_user: the output of one user's jobs together; 0 = none */
    char shim_path[512];          /* jobs.shim_path, "" = next to joblet */
    char cgroup_root[64];         /* cgroup.root */
    uint64_t favor_dynmods;       /* cgroup.favor_dynmods: remount with favordynmods (1/0) */
    gpu_config gpu;               /* gpu.* */
    char mps_control[256];        /* gpu.mps_control: NVIDIA MPS's control program */
    limits_config limits;         /* limits.* */
    char metrics_listen[64];      /* metrics.listen: "127.0.0.1:9464" serves /metrics over TCP; "" off */
    char metrics_readers[512];    /* metrics.readers: the local users (names, uids, @groups) besides root
                                   * the listener answers; "" = every one (docs/metrics.md) */
    char admin_group[64];         /* server.admin_group: its members may drain/offline GPUs, read the audit */
    remote_config remote;         /* remote.* */
    uint32_t health_interval_ms;  /* gpu.health_interval_ms: how often GPUs are sampled; 0 = no monitor */
    uint32_t max_temperature_c;   /* gpu.max_temperature_c: hotter GPUs take no new jobs */
    char xid_policy[512];         /* gpu.xid_policy: overrides, "79=offline,13=app" (xid_policy.h) */
    char runtimes_dir[512];       /* runtimes.dir: "" = <state_dir>/runtimes (docs/runtimes.md) */
    char runtime_default[65];     /* runtimes.default: the runtime of a job that names none; "" = the host's */
    char runtimes_cache_dir[512]; /* runtimes.cache_dir: "" = <runtimes.dir>/.cache */
    uint64_t runtimes_cache_keep; /* runtimes.cache_keep: archives kept in the cache; 0 = no cache */
    char runtimes_mirror[256];    /* runtimes.mirror: "" = the machine's APT sources, else deb.debian.org */
    uint64_t runtimes_build_timeout_s;  /* runtimes.build_timeout_s: a build or import longer is killed */
    uint64_t runtimes_max_import_bytes; /* runtimes.max_import_bytes: largest archive rnx runtime import sends */
    char volumes_dir[512];        /* volumes.dir: "" = <state_dir>/volumes (docs/volumes.md) */
    uint32_t volumes_max_per_user; /* volumes.max_per_user: volumes a user other than root may own; 0 = no bound */
    uint32_t volumes_memory_pct_per_user; /* volumes.memory_percent_per_user: a user's memory volumes together,
                                   * in percent of the host's memory (root exempt); 0 = no bound */
    uint32_t volumes_disk_pct_per_user; /* volumes.disk_percent_per_user: a user's filesystem volumes together,
                                   * in percent of the disk under volumes.dir (root exempt); 0 = no bound */
    uint32_t events_max_streams_per_user; /* events.max_streams_per_user: GET /v1/events open per non-root uid */
    uint32_t events_max_streams;  /* events.max_streams: GET /v1/events open at once, all users */
    uint32_t history_keep_days;   /* history.keep_days: GPU samples kept for the console's History page */
    uint32_t audit_keep_days;     /* audit.keep_days: audit records kept (audit.h) */
    uint64_t audit_max_rows;      /* audit.max_rows: at most this many kept, the newest */
    char volumes_mke2fs[256];     /* volumes.mke2fs: "" = /usr/sbin/mke2fs or /sbin/mke2fs */
    char isolation_default[16];   /* isolation.default: native or gvisor (docs/sandbox.md) */
    char isolation_require_gvisor[512]; /* isolation.require_gvisor: users and @groups whose jobs
                                   * always run under gVisor, comma-separated; "" = none */
    char isolation_runsc[256];    /* isolation.runsc: the runsc program; "" = found on PATH's usual dirs */
    char isolation_platform[16];  /* isolation.platform: systrap, ptrace or kvm; "" = systrap when
                                   * runsc has it, else ptrace */
    /* network.*: job networks (docs/networks.md, core/networks.h) */
    char net_bridge_cidr[40];     /* network.bridge_cidr: the built-in network "bridge"'s addresses */
    char net_isolated_cidr[40];   /* network.isolated_cidr: the pool isolated jobs' /31 pairs come from */
    char net_user_pool[40];       /* network.user_pool: the addresses named networks of users who are
                                   * not admins must lie in (AUTHZ_NETWORK_ADDRESSES) */
    char net_dns[256];            /* network.dns: resolvers for jobs on networks, comma-separated
                                   * addresses; "" = the host's (those on its loopback left out) */
    char net_helper[256];         /* network.helper: the joblet-net program; "" = next to the shim */
    uint32_t net_max_per_user;    /* network.max_per_user: named networks one user may own */
    uint32_t net_max_flows_per_job; /* network.max_flows_per_job: a job's connections through the host at
                                     * once (the host's conntrack entries); 0 = no bound */
    /* slurm.*: GPU health reaches Slurm (docs/slurm.md, "GPU health drains the Slurm node") */
    char slurm_node_name[65];     /* slurm.node_name: this node's Slurm name; "" = the short host name */
    int slurm_drain;              /* slurm.drain: -1 auto (on when slurm.node_name is set), 0, 1 */
    char slurm_scontrol[256];     /* slurm.scontrol: the scontrol program */
    uint32_t slurm_timeout_s;     /* slurm.timeout_s: an scontrol running longer is killed */
    uint32_t slurm_retry_s;       /* slurm.retry_s: after a failed scontrol, tried again this much later */
} config;

void config_defaults(config *c);
/* Reads a YAML file over the defaults. Unknown keys and wrong types are errors naming the key. */
int config_load(config *c, const char *path, jerr *e);

#endif
