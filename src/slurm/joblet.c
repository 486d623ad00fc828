/* joblet's SPANK plugin (docs/slurm.md, "The SPANK plugin"): each task of a step that asks
 * (srun --joblet, or plugstack.conf's default=on) runs as a joblet job on its node, isolated
 * as joblet isolates, in Slurm's own cgroups, with the GPUs Slurm gave it.
 *
 * In slurmstepd's task process:
 *   slurm_spank_task_init_privileged  (root) opens joblet's unix socket: the daemon sees root
 *                                     and this pid as the peer (SO_PEERCRED at connect), which
 *                                     is what lets it believe the GPUs sent on it;
 *   slurm_spank_task_init             (the user, stdio and cgroups in place) sends one request,
 *                                     POST /v1/slurm/tasks (argv, environment, ids, GPUs, runtime,
 *                                     volumes), then follows the job's end on the same
 *                                     connection and ends this process the way the job ended:
 *                                     _exit with its code or the same signal. It never returns
 *                                     to Slurm: nothing else is exec'd.
 * The daemon takes the task's fds 0-2 from this process (pidfd_getfd), so the job's output
 * goes where Slurm sends it; when this process dies (scancel), the daemon kills the job. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "../common/termframe.h"
#include "../common/termring.h"
#include "gresconf.h"

SPANK_PLUGIN(joblet, 1);

#define DEFAULT_SOCKET "/run/joblet/joblet.sock"
#define DEFAULT_GRES_CONF "/etc/slurm/gres.conf"
#define MAX_GRES_CONF (1 << 20)
#define RESTART_WAIT_S 120 /* how long the task waits for joblet to come back, when it goes */

static struct {
    bool on;                  /* this step runs its tasks through joblet */
    char socket[108];
    char gres_conf[4096];
    char runtime[128];
    char volumes[1024];       /* comma-separated */
    char network[8];          /* "host" (the default: a step's tasks talk across nodes) or "none" */
    int fd;                   /* the connection root opened; -1 none */
    char *gres_text;          /* gres.conf as root read it */
    bool step_has_gpus;       /* the step's SLURM_STEP_GPUS, as root read it before the user ran */
    char step_gpus[1024];
} cfg = {.fd = -1};

static int opt_cb(int val, const char *optarg, int remote)
{
    switch (val) {
    case 0:
        cfg.on = true;
        break;
    case 1:
        cfg.on = true;
        snprintf(cfg.runtime, sizeof cfg.runtime, "%s", optarg ? optarg : "");
        break;
    case 3:
        cfg.on = true;
        if (!optarg || (strcmp(optarg, "host") && strcmp(optarg, "none"))) {
            slurm_error("joblet: --joblet-network=%s: must be host (the node's network, as Slurm tasks have it) or "
                        "none (loopback only)", optarg ? optarg : "");
            return -1;
        }
        snprintf(cfg.network, sizeof cfg.network, "%s", optarg);
        break;
    case 2:
        /* the value replaces the last one, never adds to it: slurmstepd 22.05 calls this twice
         * for one --joblet-volume=NAME, and an appended list named NAME twice (refused, so the
         * option never worked under Slurm); srun forwards only the last of a repeated option
         * anyway. Too long is refused, not cut: a cut name may be another volume's. */
        cfg.on = true;
        if (optarg && strlen(optarg) >= sizeof cfg.volumes) {
            slurm_error("joblet: --joblet-volume: longer than %zu bytes", sizeof cfg.volumes - 1);
            return -1;
        }
        snprintf(cfg.volumes, sizeof cfg.volumes, "%s", optarg ? optarg : "");
        break;
    }
    return 0;
}

static struct spank_option options[] = {
    {"joblet", NULL, "run each task as a joblet job: its own root, /work and /tmp, joblet's seccomp and device filter",
     0, 0, opt_cb},
    {"joblet-runtime", "NAME", "run each task in joblet's runtime NAME (rnx runtime list); implies --joblet", 1, 1,
     opt_cb},
    {"joblet-volume", "NAME[,NAME]", "mount joblet's volumes at /volumes/NAME (comma-separated); implies --joblet", 1, 2,
     opt_cb},
    {"joblet-network", "host|none",
     "the tasks' network: host (default: the node's, for MPI, NCCL, torch.distributed across nodes) or none "
     "(loopback only); implies --joblet",
     1, 3, opt_cb},
    SPANK_OPTIONS_TABLE_END};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    snprintf(cfg.socket, sizeof cfg.socket, "%s", DEFAULT_SOCKET);
    snprintf(cfg.gres_conf, sizeof cfg.gres_conf, "%s", DEFAULT_GRES_CONF);
    for (int i = 0; i < ac; i++) {
        if (!strcmp(av[i], "default=on"))
            cfg.on = true;
        else if (!strcmp(av[i], "default=off"))
            cfg.on = false;
        else if (!strncmp(av[i], "socket=", 7) && av[i][7] == '/' && strlen(av[i] + 7) < sizeof cfg.socket)
            snprintf(cfg.socket, sizeof cfg.socket, "%s", av[i] + 7);
        else if (!strncmp(av[i], "gres_conf=", 10) && av[i][10] == '/')
            snprintf(cfg.gres_conf, sizeof cfg.gres_conf, "%s", av[i] + 10);
        else {
            slurm_error("joblet: plugstack.conf argument '%s' is not one of default=on|off, socket=/PATH, "
                        "gres_conf=/PATH",
                        av[i]);
            return -1;
        }
    }
    for (struct spank_option *o = options; o->name; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
            slurm_error("joblet: cannot register --%s", o->name);
            return -1;
        }
    return 0;
}

static bool step_wrapped(spank_t sp)
{
    uint32_t step = 0;
    if (!cfg.on || !spank_remote(sp) || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
        return false;
    /* the batch script, the extern and interactive steps stay Slurm's: the batch script starts
     * the steps (srun inside it takes --joblet from it), which run through joblet */
    return step != SLURM_BATCH_SCRIPT && step != SLURM_EXTERN_CONT && step != SLURM_INTERACTIVE_STEP;
}

/* A connection to joblet's socket; -1 with errno. */
static int dial(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", cfg.socket);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* Root: the connection, and gres.conf (which need not be readable by the user). */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    if (!step_wrapped(sp))
        return 0;
    if ((cfg.fd = dial()) < 0) {
        slurm_error("joblet: cannot reach joblet at %s: %s (is joblet running on this node?)", cfg.socket,
                    strerror(errno));
        return -1;
    }
    /* The step's GPUs, from the environment slurmstepd built (docs/slurm-facts.md): here it is
     * step-wide; slurmstepd narrows it per task (--gpus-per-task, --gpu-bind) only before
     * task_init, where it must stay within this. SLURM_JOB_GPUS is not read: in a step it is
     * whatever the user exported (only the batch step, never wrapped, has Slurm's). */
    cfg.step_has_gpus = spank_getenv(sp, "SLURM_STEP_GPUS", cfg.step_gpus, sizeof cfg.step_gpus) == ESPANK_SUCCESS;
    if (!cfg.step_has_gpus)
        cfg.step_gpus[0] = 0;
    FILE *f = fopen(cfg.gres_conf, "re");
    if (f) {
        /* one byte more than is taken: a longer file is refused, not cut (a cut File= list would
         * give the task other GPUs) */
        cfg.gres_text = calloc(1, MAX_GRES_CONF + 2);
        size_t got = cfg.gres_text ? fread(cfg.gres_text, 1, MAX_GRES_CONF + 1, f) : 0;
        bool bad = !cfg.gres_text || ferror(f) || got > MAX_GRES_CONF;
        fclose(f);
        if (bad) {
            slurm_error("joblet: cannot read %s: %s", cfg.gres_conf,
                        got > MAX_GRES_CONF ? "longer than joblet takes (MAX_GRES_CONF)" : strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Whether every comma-separated number of sub is one of set's. */
static bool csv_within(const char *sub, const char *set)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", sub);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool found = false;
        size_t n = strlen(t);
        for (const char *s = set; *s && !found; s = strchr(s, ',') ? strchr(s, ',') + 1 : s + strlen(s))
            found = !strncmp(s, t, n) && (s[n] == ',' || !s[n]);
        if (!found)
            return false;
    }
    return true;
}

/* The task's GPUs into req: "gpus", the step's, and "task_gpus", the task's own where it has
 * fewer (--gpus-per-task, --gpu-bind), each as the device nodes at those positions of the
 * node's gres.conf File= list.
 *
 * The step's are SLURM_STEP_GPUS as root read it in task_init_privileged (slurmstepd
 * overwrites it from the step's gres, or removes it when the step has none). The task's own,
 * always within the step's (a narrowing):
 *   - where Slurm's devices cgroup constrains the task (ConstrainDevices=yes), the step's less
 *     those that cgroup refuses this process (open() gives EPERM: the kernel's word; Slurm then
 *     numbers the task's SLURM_STEP_GPUS within the task's own, so that every task says "0");
 *   - else the task's SLURM_STEP_GPUS at task_init, which slurmstepd rewrote per task.
 * Constrained is told by EPERM on any of the node's GPUs. */
static int task_gpus(spank_t sp, json_t *req, char *why, size_t whylen)
{
    json_t *step = json_array();
    json_object_set_new(req, "gpus", step);
    if (!cfg.step_has_gpus || !cfg.step_gpus[0])
        return 0;
    if (!cfg.gres_text) {
        snprintf(why, whylen, "the task has GPUs (%.200s) but %.256s could not be read", cfg.step_gpus,
                 cfg.gres_conf);
        return -1;
    }
    char *files[GRESCONF_MAX];
    const char *picked[GRESCONF_MAX];
    /* the node's name: slurmstepd sets SLURMD_NODENAME (overwriting the user's) only after
     * task_init_privileged; the host's name where it has none */
    char node[256] = "";
    if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) != ESPANK_SUCCESS || !node[0])
        gethostname(node, sizeof node);
    int n = gresconf_gpu_files(cfg.gres_text, node[0] ? node : NULL, files, why, whylen);
    if (n < 0)
        return -1;
    int rc = -1, k = gresconf_pick(files, n, cfg.step_gpus, picked, why, whylen);
    if (k < 0)
        goto out;
    for (int i = 0; i < k; i++)
        json_array_append_new(step, json_string(picked[i]));
    bool denied[GRESCONF_MAX] = {0}, constrained = false;
    for (int i = 0; i < n; i++) {
        int fd = open(files[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0)
            close(fd);
        else if (errno == EPERM)
            constrained = denied[i] = true;
    }
    json_t *task = json_array();
    if (constrained) {
        for (int i = 0; i < k; i++)
            for (int f = 0; f < n; f++)
                if (!strcmp(picked[i], files[f]) && !denied[f])
                    json_array_append_new(task, json_string(picked[i]));
    } else {
        char mine[1024];
        if (spank_getenv(sp, "SLURM_STEP_GPUS", mine, sizeof mine) != ESPANK_SUCCESS || !mine[0] ||
            !strcmp(mine, cfg.step_gpus)) {
            json_decref(task);
            rc = 0;
            goto out;
        }
        if (!csv_within(mine, cfg.step_gpus)) {
            snprintf(why, whylen, "the task's SLURM_STEP_GPUS (%.200s) is not within the step's (%.200s)", mine,
                     cfg.step_gpus);
            json_decref(task);
            goto out;
        }
        int m = gresconf_pick(files, n, mine, picked, why, whylen);
        if (m < 0) {
            json_decref(task);
            goto out;
        }
        for (int i = 0; i < m; i++)
            json_array_append_new(task, json_string(picked[i]));
    }
    json_object_set_new(req, "task_gpus", task);
    rc = 0;
out:
    for (int i = 0; i < n; i++)
        free(files[i]);
    return rc;
}

static json_t *csv_array(const char *s)
{
    json_t *a = json_array();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(t));
    return a;
}

/* All of p to fd: a socket's with send (no SIGPIPE in slurmstepd's task), a terminal's with
 * write. (This plugin links none of joblet's util.c.) */
static bool put_all(int fd, const char *p, size_t n, bool sock)
{
    while (n) {
        ssize_t w = sock ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static bool send_all(int fd, const char *p, size_t n) { return put_all(fd, p, n, true); }

/* srun --pty: the task's terminal is a pty whose foreground process group is this process's
 * (slurmstepd made it the session's), not the job's, whose processes are in a session of their
 * own. Ctrl-C and Ctrl-\ would kill this process, and with it the whole step (a plain task's
 * shell gets SIGINT and goes on): while the job runs they are passed on to every process of the
 * job instead (POST /v1/jobs/ID/kill?signal=N&all=1, as the task's user), and Ctrl-Z is ignored
 * (the job's shell has no job control to stop a command with). */
static volatile sig_atomic_t pty_signal;
static char pty_job[64];
static bool pty_on;          /* SIGINT and SIGQUIT are blocked but while the reader waits */
static sigset_t pty_waiting; /* the mask while it waits (ppoll): them unblocked */

static void pty_on_signal(int sig)
{
    pty_signal = sig;
}

static void pty_forward(void)
{
    int sig = pty_signal;
    pty_signal = 0;
    if (!sig || !pty_job[0])
        return;
    int fd = dial();
    if (fd < 0)
        return;
    char req[256];
    int n = snprintf(req, sizeof req,
                     "POST /v1/jobs/%s/kill?signal=%d&all=1 HTTP/1.1\r\nHost: joblet\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n",
                     pty_job, sig);
    if (n > 0 && n < (int)sizeof req && send_all(fd, req, (size_t)n)) {
        char sink[512];
        for (ssize_t r;;) {
            r = recv(fd, sink, sizeof sink, 0);
            if (r <= 0 && !(r < 0 && errno == EINTR))
                break;
        }
    }
    close(fd);
}

/* The signals are taken only while the reader waits for the connection (getc_conn's ppoll), so
 * none is lost between a look at pty_signal and the wait, nor interrupts a forward's own calls. */
static void pty_pass_signals(const char *job)
{
    snprintf(pty_job, sizeof pty_job, "%s", job);
    struct sigaction sa = {.sa_handler = pty_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    signal(SIGTSTP, SIG_IGN);
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGQUIT);
    sigprocmask(SIG_BLOCK, &both, &pty_waiting);
    sigdelset(&pty_waiting, SIGINT);
    sigdelset(&pty_waiting, SIGQUIT);
    pty_on = true;
}

/* A buffered reader of the connection. */
static char rbuf[65536];
static size_t rlen, rpos;

static int getc_conn(int fd)
{
    if (rpos == rlen) {
        ssize_t n;
        for (;;) {
            while (pty_signal)
                pty_forward();
            struct pollfd p = {fd, POLLIN, 0};
            if (pty_on && ppoll(&p, 1, NULL, &pty_waiting) < 0 && errno == EINTR)
                continue; /* a signal to pass on */
            n = recv(fd, rbuf, sizeof rbuf, 0);
            if (n >= 0 || errno != EINTR)
                break;
        }
        if (n <= 0)
            return -1;
        rlen = (size_t)n;
        rpos = 0;
    }
    return (unsigned char)rbuf[rpos++];
}

static bool read_line(int fd, char *out, size_t len)
{
    size_t n = 0;
    for (int c; (c = getc_conn(fd)) >= 0;) {
        if (c == '\n') {
            if (n && out[n - 1] == '\r')
                n--;
            out[n] = 0;
            return true;
        }
        if (n + 1 < len)
            out[n++] = (char)c;
    }
    return false;
}

/* srun --pty with a terminal job (tty_relay, below): Slurm's pty as it was, whether it is raw
 * now, the SIGWINCH pipe. */
static struct termios tty_saved;
static bool tty_raw;
static int tty_sig[2] = {-1, -1};

/* Words to the task's stderr (srun's, or the batch output): the user sees why (a raw terminal's
 * lines end in CR LF). */
static void say(const char *a, const char *b, const char *c)
{
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "joblet: %s%s%s%s", a, b, c, tty_raw ? "\r\n" : "\n");
    if (n > 0)
        (void)!write(2, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
}

/* srun --pty with a terminal job: the job has a terminal of its own (its controlling terminal,
 * made by joblet's init in its session: job control, `tty`, Ctrl-C/Ctrl-Z by its line
 * discipline), and this process relays between it and Slurm's pty, as rnx job run -it does
 * (POST /v1/jobs/ID/attach, the frames of common/termframe.h). Slurm's pty is raw while it
 * relays (every key, Ctrl-C and Ctrl-Z included, goes to the job's terminal as bytes; no echo
 * nor line editing twice), its window size goes at the start and on each SIGWINCH (slurmstepd
 * sets the pty's size and signals this process, its foreground), and it is restored at the end. */

static void tty_on_winch(int sig)
{
    int saved_errno = errno;
    char c = (char)sig;
    if (tty_sig[1] >= 0)
        (void)!write(tty_sig[1], &c, 1); /* a full pipe has a resize to tell already */
    errno = saved_errno;
}

static void tty_restore(void)
{
    if (tty_raw)
        tcsetattr(0, TCSADRAIN, &tty_saved);
    tty_raw = false;
}

/* Raw mode on Slurm's pty, and SIGWINCH taken (the relay's pipe is made when it starts: a resize
 * before is in the size it sends first). */
static void tty_setup(void)
{
    if (tcgetattr(0, &tty_saved) < 0)
        return;
    struct termios raw = tty_saved;
    cfmakeraw(&raw);
    if (tcsetattr(0, TCSADRAIN, &raw) < 0)
        return;
    tty_raw = true;
    struct sigaction sa = {.sa_handler = tty_on_winch, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, NULL);
    /* the pty's foreground is this process: a write or tcsetattr of it never stops it */
    signal(SIGTTOU, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
}

static bool send_frame(int fd, int ch, const void *p, size_t n)
{
    unsigned char h[TERMFRAME_HDR];
    termframe_put(h, ch, (uint32_t)n);
    return send_all(fd, (const char *)h, sizeof h) && (!n || send_all(fd, (const char *)p, n));
}

static bool send_size(int fd)
{
    struct winsize ws = {0};
    if ((ioctl(0, TIOCGWINSZ, &ws) < 0 || !ws.ws_row) && ioctl(1, TIOCGWINSZ, &ws) < 0)
        ws = (struct winsize){0};
    unsigned char f[TERMFRAME_HDR + 4];
    termframe_resize(f, ws.ws_row ? ws.ws_row : 24, ws.ws_col ? ws.ws_col : 80);
    return send_all(fd, (const char *)f, sizeof f);
}

static bool write_all_fd(int fd, const char *p, size_t n) { return put_all(fd, p, n, false); }

enum tty_end { TTY_ENDED, TTY_LOST, TTY_DETACHED, TTY_REFUSED, TTY_BUSY };

/* joblet's words for the last attach it refused (its error's message), for the user; whether
 * the user was told that tty_relay waits for an attach (then told again when it goes) */
static char tty_why[512];
static bool tty_waiting;

/* joblet's words in an error answer: "error" as a string, or its "message" (NULL none). */
static const char *error_words(json_t *r)
{
    json_t *err = json_object_get(r, "error");
    return json_is_string(err) ? json_string_value(err) : json_string_value(json_object_get(err, "message"));
}

/* The message of an error answer whose head was read (error_words of its body), into tty_why;
 * empty when there is none. */
static void tty_read_why(int fd, long long clen)
{
    tty_why[0] = 0;
    if (clen <= 0 || clen > 65536)
        return;
    char *b = malloc((size_t)clen + 1);
    if (!b)
        return;
    long long n = 0;
    for (int c; n < clen && (c = getc_conn(fd)) >= 0;)
        b[n++] = (char)c;
    b[n] = 0;
    json_t *r = json_loads(b, 0, NULL);
    const char *msg = error_words(r);
    snprintf(tty_why, sizeof tty_why, "%s", msg ? msg : "");
    json_decref(r);
    free(b);
}

/* The job's terminal output as relayed, kept as the shim keeps it (common/termring.h): the shim
 * replays its ring to each new client, and an attach after the first (joblet restarted, or
 * detached an idle relay) would write again what Slurm's pty already shows. The replay is
 * compared with this ring's view and left out when it begins with all of it; what follows (the
 * output of the gap) goes on. Any other replay (the shim dropped output this process never got)
 * goes to Slurm's pty whole, as before. */
static termring *tty_ring;

/* The job's output (channel 1) of one attach: the replay's part that repeats tty_ring's view
 * skipped (skip: that view, *pos of it matched so far; NULL once decided), the rest written and
 * kept. false when Slurm's pty takes no more. */
static bool tty_output(const char *p, size_t n, char **skip, size_t skip_len, size_t *pos, bool out)
{
    bool took = true;
    if (*skip) {
        size_t k = 0;
        while (k < n && *pos + k < skip_len && p[k] == (*skip)[*pos + k])
            k++;
        if (*pos + k == skip_len) { /* all of it: a repeat */
            p += k;
            n -= k;
        } else if (k == n) {
            *pos += k;
            return true;
        } else { /* not a repeat: what was held back is the job's output after all */
            termring_add(tty_ring, *skip, *pos);
            took = !out || !*pos || write_all_fd(1, *skip, *pos);
        }
        free(*skip);
        *skip = NULL;
    }
    if (tty_ring)
        termring_add(tty_ring, p, n);
    return took && (!out || !n || write_all_fd(1, p, n));
}

/* One attach: the upgrade on a new connection (as the task's user: the job is theirs), then the
 * relay until the exit frame (TTY_ENDED), the connection's end (TTY_DETACHED: joblet restarted,
 * or detached an idle attach), or an answer other than 101 (TTY_REFUSED: the job has ended, or
 * is not there); TTY_LOST when joblet could not be reached. The end of Slurm's pty (srun gone) ends this process by SIGHUP, as it would end a
 * plain task's shell: joblet then kills the job. */
static enum tty_end tty_attach(const char *id)
{
    int fd = dial();
    if (fd < 0)
        return TTY_LOST;
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "POST /v1/jobs/%s/attach HTTP/1.1\r\nHost: joblet\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                      "Content-Length: 0\r\n\r\n",
                      id);
    rlen = rpos = 0;
    char line[1024];
    int status = 0;
    if (hl <= 0 || hl >= (int)sizeof head || !send_all(fd, head, (size_t)hl) || !read_line(fd, line, sizeof line) ||
        sscanf(line, "HTTP/1.%*d %d", &status) != 1) {
        close(fd);
        return TTY_LOST;
    }
    long long clen = -1;
    while (read_line(fd, line, sizeof line) && line[0])
        if (!strncasecmp(line, "Content-Length:", 15))
            clen = atoll(line + 15);
    if (status != 101) {
        /* 409: the job has ended (its end record says how); 429 (a bound on attaches reached:
         * limits.attach_sessions_per_user, jobs.max_attachers) and 503 pass: tty_relay tries
         * again while the job runs; anything else is said */
        tty_read_why(fd, clen);
        close(fd);
        if (status == 429 || status == 503)
            return TTY_BUSY;
        if (status != 409) {
            snprintf(line, sizeof line, " (HTTP %d%s%s): the job runs without its terminal relayed", status,
                     tty_why[0] ? ": " : "", tty_why);
            say("cannot attach to the terminal of job ", id, line);
        }
        return TTY_REFUSED;
    }
    if (tty_waiting)
        say("attached to the terminal of job ", id, "");
    tty_waiting = false;
    enum tty_end end = TTY_DETACHED;
    termframe_reader rd = {0};
    char *buf = malloc(64 << 10), *skip = NULL;
    size_t skip_len = 0, skip_pos = 0;
    bool in_open = true, idle_note = false;
    if (!tty_ring)
        tty_ring = calloc(1, sizeof *tty_ring);
    if (tty_ring) {
        const char *p1, *p2;
        size_t n1, n2;
        termring_view(tty_ring, &p1, &n1, &p2, &n2);
        if (n1 + n2 && (skip = malloc(n1 + n2))) {
            memcpy(skip, p1, n1);
            memcpy(skip + n1, p2, n2);
            skip_len = n1 + n2;
        }
    }
    if (!buf || !send_size(fd))
        goto out;
    /* what came with the answer's head */
    for (;;) {
        size_t n = 0;
        if (rpos < rlen) {
            n = rlen - rpos;
            memcpy(buf, rbuf + rpos, n);
            rpos = rlen;
        } else {
            struct pollfd p[3] = {{fd, POLLIN, 0}, {tty_sig[0], POLLIN, 0}, {0, POLLIN, 0}};
            if (poll(p, in_open ? 3 : 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                goto out;
            }
            if (p[1].revents & POLLIN) {
                char sink[16];
                if (read(tty_sig[0], sink, sizeof sink) > 0 && !send_size(fd))
                    goto out;
            }
            if (in_open && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t r = read(0, buf, 16 << 10);
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                    continue;
                if (r <= 0) {
                    /* Slurm's pty hung up: srun is gone */
                    tty_raw = false;
                    close(fd);
                    free(buf);
                    signal(SIGHUP, SIG_DFL);
                    kill(getpid(), SIGHUP);
                    _exit(129);
                }
                if (!send_frame(fd, TERMFRAME_STDIN, buf, (size_t)r))
                    goto out;
            }
            if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = recv(fd, buf, 64 << 10, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                goto out;
            n = (size_t)r;
        }
        const char *p = buf;
        termframe_out f;
        for (enum termframe_event ev; (ev = termframe_next(&rd, &p, &n, &f)) != TERMFRAME_NEED;) {
            if (ev == TERMFRAME_BAD)
                goto out;
            if (ev == TERMFRAME_CODE) {
                end = TTY_ENDED;
                goto out;
            }
            /* the job's output, and joblet's own lines (channel 2), to Slurm's pty; a pty
             * that takes no more (srun gone) stops the reading of it. joblet's line for an idle
             * attach it closes ("detached ...: rnx job attach ID") is left out: this process
             * attaches again at once, and the user has nothing to do */
            if (ev != TERMFRAME_DATA)
                continue;
            if (f.ch == TERMFRAME_STDOUT && !tty_output(f.p, f.n, &skip, skip_len, &skip_pos, in_open))
                in_open = false;
            if (f.ch != TERMFRAME_STDERR)
                continue;
            if (!idle_note && f.n >= strlen(TERMFRAME_IDLE_NOTE) &&
                !memcmp(f.p, TERMFRAME_IDLE_NOTE, strlen(TERMFRAME_IDLE_NOTE)))
                idle_note = true;
            if (idle_note)
                idle_note = rd.left > 0; /* (the rest of its frame too) */
            else if (in_open && !write_all_fd(2, f.p, f.n))
                in_open = false;
        }
    }
out:
    free(skip);
    free(buf);
    close(fd);
    return end;
}

/* The relay, attached again when joblet goes away (a restart) or detaches it (an idle
 * attach, jobs.terminal_idle_timeout_s) while the job goes on, for up to RESTART_WAIT_S
 * without an attach; returns once the job has ended (or cannot be reached). */
static void tty_relay(const char *id)
{
    if (pipe2(tty_sig, O_CLOEXEC | O_NONBLOCK) < 0)
        tty_sig[0] = tty_sig[1] = -1; /* (sizes go at each attach only) */
    /* An attach joblet refuses for now (429: the user's attaches at
     * limits.attach_sessions_per_user, or the job's at jobs.max_attachers) is tried again, from
     * 0.25 s up to every 8 s, as long as the job runs (an ended job's attach is 409): srun never
     * sits on a silent terminal. The user is told once why and once when it went; what is typed
     * meanwhile waits in Slurm's pty, and the attach's replay shows the job's last output. */
    useconds_t busy_wait = 0;
    for (time_t lost = 0;;) {
        enum tty_end end = tty_attach(id);
        if (end != TTY_BUSY)
            busy_wait = 0;
        if (end == TTY_ENDED || end == TTY_REFUSED)
            break;
        if (end == TTY_BUSY) {
            if (!busy_wait) {
                char why[sizeof tty_why + 256];
                snprintf(why, sizeof why,
                         ": %s; trying again while it runs (what is typed meanwhile reaches it then; rnx job log %s "
                         "shows its output)",
                         tty_why[0] ? tty_why : "joblet is busy", id);
                say("cannot attach to the terminal of job ", id, why);
                tty_waiting = true;
            }
            busy_wait = busy_wait ? (busy_wait < 4000000 ? busy_wait * 2 : 8000000) : 250000;
            lost = 0;
            usleep(busy_wait);
            continue;
        }
        if (end == TTY_DETACHED)
            lost = 0; /* (the wait counts from the attach that went) */
        if (!lost)
            lost = time(NULL);
        else if (time(NULL) - lost > RESTART_WAIT_S)
            break;
        usleep(200 * 1000);
    }
    tty_restore();
}

/* How long a task's start is asked again while joblet answers it busy (rnx's bound too) */
#define BUSY_RETRY_S 60

/* The last answer's Retry-After (seconds; a date: 1), -1 without one: joblet's "not now, nothing
 * was done: ask again" (a 503 of common/err.h's jerr_busy). */
static int http_retry_after = -1;

/* One request and its whole answer (Content-Length or chunked): the status, the body in *body
 * (malloc'd), -1 when the connection failed. */
static int http(int fd, const char *method, const char *path, const char *payload, char **body)
{
    http_retry_after = -1;
    char head[1024];
    size_t plen = payload ? strlen(payload) : 0;
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: joblet\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      method, path, plen);
    if (!send_all(fd, head, (size_t)hl) || (plen && !send_all(fd, payload, plen)))
        return -1;
    char line[8192];
    int status = 0;
    if (!read_line(fd, line, sizeof line) || sscanf(line, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    long long clen = -1;
    bool chunked = false;
    while (read_line(fd, line, sizeof line) && line[0]) {
        if (!strncasecmp(line, "Content-Length:", 15))
            clen = atoll(line + 15);
        else if (!strncasecmp(line, "Transfer-Encoding:", 18) && strstr(line, "chunked"))
            chunked = true;
        else if (!strncasecmp(line, "Retry-After:", 12))
            http_retry_after = atoi(line + 12) > 0 ? atoi(line + 12) : 1;
    }
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (!b)
        return -1;
    for (;;) {
        long long want = clen;
        if (chunked) {
            if (!read_line(fd, line, sizeof line))
                break;
            want = strtoll(line, NULL, 16);
            if (want <= 0) {
                read_line(fd, line, sizeof line); /* the empty line after the last chunk */
                break;
            }
        }
        if (want < 0)
            break;
        for (long long i = 0; i < want; i++) {
            int c = getc_conn(fd);
            if (c < 0)
                goto done;
            if (n + 1 >= cap) {
                char *nb = realloc(b, cap *= 2);
                if (!nb)
                    goto done;
                b = nb;
            }
            b[n++] = (char)c;
        }
        if (!chunked)
            break;
        read_line(fd, line, sizeof line); /* the chunk's CRLF */
    }
done:
    b[n] = 0;
    *body = b;
    return status;
}

/* The user: the request, the wait, the end. */
/* The connection root opened may name GPUs; from here this process runs as the task's user, who
 * must not be able to take it over with ptrace (a debugger of theirs writing other GPUs on it).
 * Slurm 22.05 leaves the task not dumpable after dropping to the user (docs/slurm-facts.md),
 * which keeps the user's tracers out; this makes sure of it whatever the release does, and then
 * that no tracer got in before: false when one is attached. */
static bool untraced(void)
{
    if (prctl(PR_SET_DUMPABLE, 0) < 0)
        return false;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return false;
    char line[256];
    long tracer = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "TracerPid:", 10))
            tracer = strtol(line + 10, NULL, 10);
    fclose(f);
    return tracer == 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    if (cfg.fd < 0)
        return 0;
    if (!untraced()) {
        slurm_error("joblet: this task's process is being traced (ptrace): it will not send the task's GPUs to "
                    "joblet on root's connection; the task is not started");
        return -1;
    }
    char **argv = NULL, **env = NULL;
    int argc = 0;
    uint32_t job = 0, step = 0, task = 0;
    uid_t uid = 0;
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
        slurm_error("joblet: cannot read the task from Slurm");
        return -1;
    }
    char why[512] = "";
    json_t *a = json_array(), *e = json_array();
    /* JSON carries UTF-8 text only (json_string is NULL for anything else): an argument that is
     * not would drop out of the command line and shift the rest (argv[0] too: another program
     * would run), so the task is refused; a variable that is not is left out, and said so */
    for (int i = 0; i < argc; i++)
        if (json_array_append_new(a, json_string(argv[i])) < 0) {
            char n[16];
            snprintf(n, sizeof n, "%d", i);
            say("the task was not started: argument ", n,
                " of its command line is not UTF-8 text, which joblet's API cannot carry");
            json_decref(a);
            json_decref(e);
            return -1;
        }
    for (char **p = env; p && *p; p++)
        if (json_array_append_new(e, json_string(*p)) < 0) {
            size_t n = strcspn(*p, "=");
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), *p);
            if (name[0] && !name[strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")])
                say("the environment variable ", name, " is left out: its value is not UTF-8 text");
        }
    char stepname[16];
    snprintf(stepname, sizeof stepname, "%u", step);
    json_t *req = json_pack("{s:o,s:o,s:{s:I,s:s,s:I,s:I}}", "argv", a, "env", e, "slurm", "job", (json_int_t)job,
                            "step", stepname, "task", (json_int_t)task, "uid", (json_int_t)uid);
    if (task_gpus(sp, req, why, sizeof why) < 0) {
        json_decref(req);
        say(why, "", "");
        return -1;
    }
    if (cfg.runtime[0])
        json_object_set_new(req, "runtime", json_string(cfg.runtime));
    if (cfg.volumes[0])
        json_object_set_new(req, "volumes", csv_array(cfg.volumes));
    json_object_set_new(req, "network", json_string(cfg.network[0] ? cfg.network : "host"));
    /* srun --pty: the task's stdin is Slurm's pty; the job gets a terminal of its own, relayed
     * (tty_relay). Where joblet refuses a terminal (400 naming tty: a joblet older than this
     * plugin, which knows no "tty"), the task goes as without one: the job takes Slurm's pty as
     * its stdio, and Ctrl-C and Ctrl-\ are passed on (pty_pass_signals). */
    bool pty = isatty(0), term = pty;
    /* raw from here: what is typed while the job starts waits in Slurm's pty as bytes for the
     * job's terminal (a Ctrl-C among them would otherwise end this process, and the step) */
    if (term)
        tty_setup();
    char *body = NULL;
    int status;
    json_t *r;
    for (int waited = 0;;) {
        if (term)
            json_object_set_new(req, "tty", json_true());
        else
            json_object_del(req, "tty");
        char *payload = json_dumps(req, JSON_COMPACT);
        status = payload ? http(cfg.fd, "POST", "/v1/slurm/tasks", payload, &body) : -1;
        free(payload);
        r = body ? json_loads(body, 0, NULL) : NULL;
        free(body);
        body = NULL;
        if (status == 503 && http_retry_after >= 0 && waited < BUSY_RETRY_S) {
            /* joblet's "not now, nothing was done" (its database locked by a backup, the user's
             * account being looked up): asked again, as srun does while step creation is
             * disabled ("Job step creation temporarily disabled, retrying") */
            int pause = http_retry_after > 10 ? 10 : http_retry_after;
            if (!waited)
                say("busy: ", error_words(r) ? error_words(r) : "?", "; asking again for up to 60 s");
            json_decref(r);
            sleep((unsigned)pause);
            waited += pause;
            continue;
        }
        const char *field = json_string_value(json_object_get(json_object_get(r, "error"), "field"));
        if (!(term && status == 400 && field && !strcmp(field, "tty")))
            break;
        json_decref(r);
        term = false;
    }
    json_decref(req);
    if (!term || status != 201)
        tty_restore();
    if (status != 201) {
        const char *msg = error_words(r);
        say("the task was not started: ", msg ? msg : status < 0 ? "the connection to joblet failed" : "?", "");
        json_decref(r);
        return -1;
    }
    /* The job has the task's stdio now. This process never execs, so what slurmstepd left open
     * here for exec to close (O_CLOEXEC: the write ends of the step's stdin pipes among them)
     * would stay open as long as the job runs, and a task would never see its stdin end: all
     * of it goes but the connection and stdout/stderr (for the words below); stdin becomes
     * /dev/null (a terminal job's stays Slurm's pty, which this process relays). */
    int null = term ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0 && null != 0) {
        dup2(null, 0);
        close(null);
    }
    if (cfg.fd > 3)
        syscall(SYS_close_range, 3u, (unsigned)cfg.fd - 1, 0u);
    syscall(SYS_close_range, (unsigned)cfg.fd + 1, ~0u, 0u);
    char id[64], path[160];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(r, "id")) ? json_string_value(json_object_get(r, "id")) : "");
    json_decref(r);
    if (pty && !term)
        pty_pass_signals(id);
    if (term) {
        /* the job's terminal, relayed until the job ends; its end record then as below (none of
         * its output, which joblet logged: tail=0) */
        tty_relay(id);
        close(cfg.fd);
        rlen = rpos = 0;
        cfg.fd = dial();
    }
    /* the end record is the last line of the log stream (there is no output: it went to the
     * task's own stdio; a terminal's is left out) */
    snprintf(path, sizeof path, "/v1/jobs/%s/logs?follow=1&format=ndjson%s", id, term ? "&tail=0" : "");
    json_t *end = NULL;
    /* A restart of joblet (an upgrade) ends the stream but not the job, which the new joblet
     * adopts, and this process with it (it watches it again): wait on a new connection, made as
     * the task's user (the job is theirs), for up to RESTART_WAIT_S without one. */
    for (time_t lost = 0;;) {
        status = cfg.fd >= 0 ? http(cfg.fd, "GET", path, NULL, &body) : -1;
        if (status == 200 && body) {
            char *last = body, *nl;
            while ((nl = strchr(last, '\n')) && nl[1])
                last = nl + 1;
            end = json_loads(last, JSON_DISABLE_EOF_CHECK, NULL);
        }
        free(body);
        body = NULL;
        if ((end && json_is_true(json_object_get(end, "end"))) || (status > 0 && status != 200))
            break;
        json_decref(end);
        end = NULL;
        if (cfg.fd >= 0)
            close(cfg.fd);
        rlen = rpos = 0;
        if (!lost)
            lost = time(NULL);
        else if (time(NULL) - lost > RESTART_WAIT_S)
            break;
        usleep(200 * 1000);
        cfg.fd = dial();
    }
    json_t *sig = json_object_get(end, "signal"), *code = json_object_get(end, "exit_code");
    const char *reason = json_string_value(json_object_get(end, "end_reason"));
    if (!end || !json_is_true(json_object_get(end, "end"))) {
        say("lost track of job ", id, " (the daemon went away?)");
        _exit(1);
    }
    if (reason && !strcmp(reason, "start_failed")) {
        snprintf(path, sizeof path, "/v1/jobs/%s", id);
        if (http(cfg.fd, "GET", path, NULL, &body) == 200 && body) {
            json_t *j = json_loads(body, 0, NULL);
            say(id, " did not start: ",
                json_string_value(json_object_get(j, "error")) ? json_string_value(json_object_get(j, "error")) : "?");
            json_decref(j);
        }
        free(body);
    }
    close(cfg.fd);
    if (json_is_integer(sig)) {
        int s = (int)json_integer_value(sig);
        signal(s, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, s);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), s);
    }
    _exit(json_is_integer(code) ? (int)json_integer_value(code) : 1);
}
