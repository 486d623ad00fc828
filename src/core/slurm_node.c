/* The Slurm node follows the GPUs' health (slurm_node.h). One scontrol at a time: first
 * `scontrol show node NAME` (is it drained, and by whom), then, when the node is not as
 * wanted, `scontrol update NodeName=NAME State=DRAIN Reason=...` or `State=RESUME`. Each runs
 * as gpu_scrub.c runs its helper: spawn_piped (util.h), a pidfd the loop watches, and here a timerfd
 * that kills it at slurm.timeout_s. */
#include "slurm_node.h"
#include "slurm_show.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "../common/log.h"
#include "../common/util.h"
#include "audit.h"
#include "events.h"
#include "gpu_service.h"
#include "loop.h"
#include "state.h"


#define SLURM_PREFIX "joblet:"
#define SLURM_REASON_MAX 256

enum step { STEP_NONE, STEP_SHOW, STEP_UPDATE };

static struct {
    bool active;
    char node[65];
    /* the run in flight */
    enum step step;
    pid_t pid;
    watch exit_w;          /* its pidfd */
    int out_fd;            /* its stdout and stderr */
    bool timed_out;
    watch timer_w;         /* a timerfd: the run's deadline, or the retry after a failure */
    bool retry_armed;
    /* what is wanted: drain (with reason) or not; and what the run in flight carries out */
    bool want_drain;
    char want_reason[SLURM_REASON_MAX];
    bool run_drain;
    char run_reason[SLURM_REASON_MAX];
    /* the last wanted state carried out (or found already so); "" none yet */
    char done[SLURM_REASON_MAX + 8];
    bool dirty;            /* the wanted state changed while a run was in flight */
} sn = {.out_fd = -1, .exit_w = {.fd = -1}, .timer_w = {.fd = -1}};

const char *slurm_node_name(void)
{
    if (!sn.node[0]) {
        if (core.cfg.slurm_node_name[0]) {
            snprintf(sn.node, sizeof sn.node, "%s", core.cfg.slurm_node_name);
        } else {
            struct utsname u;
            if (uname(&u) == 0)
                snprintf(sn.node, sizeof sn.node, "%.*s", (int)strcspn(u.nodename, "."), u.nodename);
        }
    }
    return sn.node;
}

bool slurm_node_active(void)
{
    return core.cfg.slurm_drain == 1 || (core.cfg.slurm_drain < 0 && core.cfg.slurm_node_name[0]);
}

/* What the GPUs want of the node: drained while any is out of service, with their reasons. */
static void wanted(bool *drain, char *reason, size_t len)
{
    size_t n = (size_t)snprintf(reason, len, "%s", SLURM_PREFIX);
    *drain = false;
    for (int i = 0; i < core.gpu.inv.n && i < GPU_MAX; i++) {
        const gpu_service *h = gpu_service_get(i);
        if (h->state != GS_DRAINING && h->state != GS_RESETTING && h->state != GS_OFFLINE && h->state != GS_DEGRADED)
            continue;
        if (n < len)
            n += (size_t)snprintf(reason + n, len - n, "%s GPU %d %s%s%s", *drain ? ";" : "", i,
                                  gpu_state_name(h->state), *h->reason ? ": " : "", h->reason);
        *drain = true;
    }
    /* one line, at most len - 1 bytes: Slurm keeps the reason as given */
    for (char *p = reason; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
}

static void record(bool ok, const char *action, const char *detail)
{
    char line[600];
    snprintf(line, sizeof line, "slurm node %s: %s", sn.node, detail);
    if (ok)
        log_info("%s", line);
    else
        log_err("%s", line);
    audit_record("slurm", -1, -1, NULL, -1, -1, line);
    json_t *ev = json_pack("{s:s,s:s,s:b,s:s}", "node", sn.node, "action", action, "ok", ok, "detail", detail);
    char *s = json_dumps(ev, JSON_COMPACT);
    if (s)
        events_publish("slurm", -1, s);
    free(s);
    json_decref(ev);
}

static void arm(int ms)
{
    struct itimerspec it = {.it_value = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L}};
    timerfd_settime(sn.timer_w.fd, 0, &it, NULL);
}

static void on_exit_fd(watch *w, uint32_t events);

/* Starts scontrol with args; false (recorded) when it could not start. */
static bool spawn(enum step step, char *const *args)
{
    const char *argv[8];
    int a = 0;
    argv[a++] = core.cfg.slurm_scontrol;
    for (int k = 0; args[k] && a < 7; k++)
        argv[a++] = args[k];
    argv[a] = NULL;
    pid_t pid;
    int pidfd, out;
    if (spawn_piped(core.cfg.slurm_scontrol, (char *const *)argv, &pid, &pidfd, &out) < 0)
        goto failed;
    /* the pipe is read when it exits; a full pipe ends in the timeout */
    sn.step = step;
    sn.pid = pid;
    sn.out_fd = out;
    sn.timed_out = false;
    sn.exit_w = (watch){pidfd, on_exit_fd, NULL};
    loop_add(&sn.exit_w);
    sn.retry_armed = false;
    arm((int)core.cfg.slurm_timeout_s * 1000);
    return true;
failed:;
    char why[400];
    snprintf(why, sizeof why, "%s could not start: %s; tried again in %u s", core.cfg.slurm_scontrol, strerror(errno),
             core.cfg.slurm_retry_s);
    record(false, step == STEP_SHOW ? "show" : sn.run_drain ? "drain" : "resume", why);
    sn.retry_armed = true;
    arm((int)core.cfg.slurm_retry_s * 1000);
    return false;
}

/* Carries out the wanted state, unless it already is the last one carried out. */
static void run(void)
{
    if (sn.step != STEP_NONE)
        return;
    char key[sizeof sn.done];
    snprintf(key, sizeof key, "%s%s", sn.want_drain ? "drain:" : "resume", sn.want_drain ? sn.want_reason : "");
    if (!strcmp(key, sn.done))
        return;
    sn.run_drain = sn.want_drain;
    snprintf(sn.run_reason, sizeof sn.run_reason, "%s", sn.want_reason);
    sn.dirty = false;
    char node[80];
    snprintf(node, sizeof node, "%s", sn.node);
    spawn(STEP_SHOW, (char *[]){"show", "node", node, NULL});
}

static void done(void)
{
    snprintf(sn.done, sizeof sn.done, "%s%s", sn.run_drain ? "drain:" : "resume", sn.run_drain ? sn.run_reason : "");
}

/* After `show node`: what to change, if anything. */
static void after_show(const char *out)
{
    bool drained;
    char reason[512];
    if (slurm_show_parse(out, &drained, reason, sizeof reason) < 0) {
        char why[700];
        snprintf(why, sizeof why, "scontrol show node said no State= (\"%.200s\"); tried again in %u s", out,
                 core.cfg.slurm_retry_s);
        record(false, "show", why);
        sn.retry_armed = true;
        arm((int)core.cfg.slurm_retry_s * 1000);
        return;
    }
    bool ours = strncmp(reason, SLURM_PREFIX, strlen(SLURM_PREFIX)) == 0;
    char node_arg[80], reason_arg[SLURM_REASON_MAX + 8];
    snprintf(node_arg, sizeof node_arg, "NodeName=%s", sn.node);
    if (sn.run_drain) {
        if (drained && !ours) {
            char d[700];
            snprintf(d, sizeof d, "already drained for another reason (\"%.200s\"): left as it is, not drained for %s",
                     reason, sn.run_reason);
            record(true, "none", d);
            done();
            return;
        }
        if (drained && !strcmp(reason, sn.run_reason)) {
            record(true, "none", "already drained with joblet's reason");
            done();
            return;
        }
        snprintf(reason_arg, sizeof reason_arg, "Reason=%s", sn.run_reason);
        spawn(STEP_UPDATE, (char *[]){"update", node_arg, "State=DRAIN", reason_arg, NULL});
        return;
    }
    if (drained && ours) {
        spawn(STEP_UPDATE, (char *[]){"update", node_arg, "State=RESUME", NULL});
        return;
    }
    if (drained) {
        char d[700];
        snprintf(d, sizeof d, "every GPU is in service; the node stays drained: its reason (\"%.200s\") is not joblet's",
                 reason);
        record(true, "none", d);
    }
    done();
}

static void on_exit_fd(watch *w, uint32_t events)
{
    (void)events;
    int st = 0;
    while (waitpid(sn.pid, &st, 0) < 0 && errno == EINTR)
        ;
    char out[4096];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof out - 1 && (n = read(sn.out_fd, out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    loop_del(w);
    close(w->fd);
    w->fd = -1;
    close(sn.out_fd);
    sn.out_fd = -1;
    sn.pid = 0;
    arm(0); /* its deadline is off */
    enum step step = sn.step;
    sn.step = STEP_NONE;
    bool ok = !sn.timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    const char *action = step == STEP_SHOW ? "show" : sn.run_drain ? "drain" : "resume";
    if (!ok) {
        char why[700];
        if (sn.timed_out)
            snprintf(why, sizeof why, "scontrol %s ran past slurm.timeout_s (%u s) and was killed", action,
                     core.cfg.slurm_timeout_s);
        else
            snprintf(why, sizeof why, "scontrol %s %s %d: %.300s", action,
                     WIFEXITED(st) ? "exited" : "was killed by signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
                     out);
        size_t l = strlen(why);
        while (l && (why[l - 1] == '\n' || why[l - 1] == ' '))
            why[--l] = 0;
        snprintf(why + l, sizeof why - l, "; tried again in %u s", core.cfg.slurm_retry_s);
        record(false, action, why);
        sn.retry_armed = true;
        arm((int)core.cfg.slurm_retry_s * 1000);
    } else if (step == STEP_SHOW) {
        if (!sn.dirty) {
            after_show(out);
        }
    } else {
        char d[SLURM_REASON_MAX + 64];
        if (sn.run_drain)
            snprintf(d, sizeof d, "drained: %s", sn.run_reason);
        else
            snprintf(d, sizeof d, "resumed: every GPU is back in service");
        record(true, action, d);
        done();
    }
    /* what changed meanwhile: only the latest wanted state is carried out */
    if (sn.step == STEP_NONE && !sn.retry_armed)
        run();
}

static void on_timer(watch *w, uint32_t events)
{
    (void)events;
    uint64_t ticks;
    if (read(w->fd, &ticks, sizeof ticks) < 0)
        return;
    if (sn.step != STEP_NONE) {
        sn.timed_out = true;
        kill(sn.pid, SIGKILL); /* its pidfd says when it is gone */
        return;
    }
    if (sn.retry_armed) {
        sn.retry_armed = false;
        sn.done[0] = 0; /* whatever was carried out before, look again */
        run();
    }
}

void slurm_node_sync(void)
{
    if (!sn.active)
        return;
    bool drain;
    char reason[SLURM_REASON_MAX];
    wanted(&drain, reason, sizeof reason);
    if (drain == sn.want_drain && (!drain || !strcmp(reason, sn.want_reason)))
        return;
    sn.want_drain = drain;
    snprintf(sn.want_reason, sizeof sn.want_reason, "%s", reason);
    if (sn.step != STEP_NONE) {
        sn.dirty = true;
        return;
    }
    if (sn.retry_armed) {
        sn.retry_armed = false;
        arm(0);
        sn.done[0] = 0;
    }
    run();
}

void slurm_node_start(void)
{
    slurm_node_name();
    if (!slurm_node_active())
        return;
    if (!sn.node[0]) {
        log_err("slurm: no node name (slurm.node_name is not set and the host name could not be read); joblet "
                "does not drain the node");
        return;
    }
    sn.timer_w = (watch){timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), on_timer, NULL};
    if (sn.timer_w.fd < 0 || loop_add(&sn.timer_w) < 0) {
        log_err("slurm: timerfd: %s; joblet does not drain the node", strerror(errno));
        return;
    }
    sn.active = true;
    log_info("slurm: node %s is drained while a GPU is out of service (%s)", sn.node, core.cfg.slurm_scontrol);
    /* whatever the node is now: look once, so a drain of ours whose GPUs are back is resumed */
    wanted(&sn.want_drain, sn.want_reason, sizeof sn.want_reason);
    sn.done[0] = 0;
    run();
}

void slurm_node_stop(void)
{
    if (sn.pid > 0) {
        kill(sn.pid, SIGKILL);
        while (waitpid(sn.pid, NULL, 0) < 0 && errno == EINTR)
            ;
        sn.pid = 0;
    }
    if (sn.exit_w.fd >= 0) {
        loop_del(&sn.exit_w);
        close(sn.exit_w.fd);
        sn.exit_w.fd = -1;
    }
    if (sn.out_fd >= 0)
        close(sn.out_fd);
    sn.out_fd = -1;
    if (sn.timer_w.fd >= 0) {
        loop_del(&sn.timer_w);
        close(sn.timer_w.fd);
        sn.timer_w.fd = -1;
    }
    sn.active = false;
    sn.step = STEP_NONE;
}
