/* nvidia-smi backend, for hosts where joblet cannot load NVML itself but the tool works
 * (a container toolkit's wrapper, an unusual library path). Five commands:
 *   --query-gpu=... --format=csv,noheader,nounits   identity, memory, capability, modes
 *   topo -m                                          NVLink counts, CPU and NUMA affinity
 *   topo -mp                                         PCIe levels, which NV# cells hide in -m
 *   -q                                               minor numbers, CUDA version, MIG ids
 *   -L                                               MIG profiles and UUIDs */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "backend_smi.h"
#include "gpu.h"

extern char **environ;

#define SMI_FIELDS                                                                                       \
    "index,pci.bus_id,uuid,name,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw," \
    "compute_cap,driver_version,mig.mode.current,ecc.mode.current,vbios_version"
enum { F_INDEX, F_BUS, F_UUID, F_NAME, F_MEMTOTAL, F_MEMUSED, F_UTIL, F_TEMP, F_POWER, F_CC, F_DRIVER,
       F_MIG, F_ECC, F_VBIOS, F_COUNT };

/* Runs nvidia-smi with args and returns its stdout; a hung driver cannot hang joblet. */
static char *run_smi(const gpu_config *c, const char *const *args, jerr *e)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return jerr_sys(e, "nvidia-smi: pipe"), NULL;
    const char *argv[8] = {c->nvidia_smi};
    int a = 1;
    for (; args[a - 1] && a < 7; a++)
        argv[a] = args[a - 1];
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int err = posix_spawn(&pid, c->nvidia_smi, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (err) {
        close(p[0]);
        jerr_set(e, err, "nvidia-smi: cannot run %s: %s", c->nvidia_smi, strerror(err));
        return NULL;
    }
    size_t len = 0, cap = 8192;
    char *out = xmalloc(cap);
    int64_t deadline = mono_ns() + (int64_t)c->smi_timeout_ms * 1000000;
    int timed_out = 0;
    for (;;) {
        int64_t left = (deadline - mono_ns()) / 1000000;
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
            timed_out = 1;
            break;
        }
        if (len + 4096 > cap)
            out = xrealloc(out, cap *= 2);
        ssize_t n = read(p[0], out + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(p[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    out[len] = 0;
    if (timed_out || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char first[200];
        snprintf(first, sizeof first, "%s", out);
        first[strcspn(first, "\n")] = 0;
        if (timed_out)
            jerr_set(e, ETIMEDOUT, "nvidia-smi %s: no answer within %d ms", args[0], c->smi_timeout_ms);
        else
            jerr_set(e, EIO, "nvidia-smi %s: exit %d%s%s", args[0], WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
                     *first ? ": " : "", first);
        free(out);
        return NULL;
    }
    return out;
}

/* nvidia-smi underlines the topo header with escape sequences on some versions. */
static void strip_ansi(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '\033' && r[1] == '[') {
            r += 2;
            while (*r && !(*r >= '@' && *r <= '~'))
                r++;
            if (!*r)
                break;
            continue;
        }
        *w++ = *r;
    }
    *w = 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

static int na(const char *v)
{
    return !*v || v[0] == '[' || strcmp(v, "N/A") == 0;
}

int backend_smi_parse_query(char *csv, gpu_inventory *inv, jerr *e)
{
    for (char *save = NULL, *line = strtok_r(csv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!*trim(line))
            continue;
        if (inv->n == GPU_MAX)
            break;
        char *f[F_COUNT];
        int nf = 0;
        for (char *s2 = NULL, *v = strtok_r(line, ",", &s2); v && nf < F_COUNT; v = strtok_r(NULL, ",", &s2))
            f[nf++] = trim(v);
        if (nf != F_COUNT)
            return jerr_set(e, EIO, "nvidia-smi --query-gpu: a line has %d fields, expected %d", nf, F_COUNT);
        gpu_dev *g = &inv->gpu[inv->n];
        g->index = atoi(f[F_INDEX]);
        if (g->index != inv->n || gpu_bus_normalize(f[F_BUS], g->bus_id) < 0 || na(f[F_UUID]))
            return jerr_set(e, EIO, "nvidia-smi --query-gpu: unreadable index, bus id or UUID in line %d", inv->n + 1);
        snprintf(g->uuid, sizeof g->uuid, "%s", f[F_UUID]);
        snprintf(g->name, sizeof g->name, "%s", f[F_NAME]);
        if (!na(f[F_MEMTOTAL]))
            g->memory_total_mb = atoll(f[F_MEMTOTAL]);
        if (!na(f[F_MEMUSED]))
            g->memory_used_mb = atoll(f[F_MEMUSED]);
        if (!na(f[F_UTIL]))
            g->utilization_pct = atoi(f[F_UTIL]);
        if (!na(f[F_TEMP]))
            g->temperature_c = atoi(f[F_TEMP]);
        if (!na(f[F_POWER])) {
            /* what no GPU draws (a garbled reading, inf, nan) is unknown, and never converted:
             * a double past INT_MAX made int is undefined */
            double w = atof(f[F_POWER]);
            g->power_w = w >= 0 && w < 1e6 ? (int)(w + 0.5) : -1;
        }
        if (!na(f[F_CC]) && sscanf(f[F_CC], "%d.%d", &g->cc_major, &g->cc_minor) != 2)
            g->cc_major = g->cc_minor = -1;
        if (!na(f[F_DRIVER]))
            snprintf(inv->driver_version, sizeof inv->driver_version, "%s", f[F_DRIVER]);
        if (!na(f[F_MIG]))
            g->mig_enabled = strcmp(f[F_MIG], "Enabled") == 0;
        if (!na(f[F_ECC]))
            g->ecc = strcmp(f[F_ECC], "Enabled") == 0;
        if (!na(f[F_VBIOS]))
            snprintf(g->vbios, sizeof g->vbios, "%s", f[F_VBIOS]);
        inv->n++;
    }
    return 0;
}

/* `topo -m` / `topo -mp`: a tab-separated matrix with a header row of GPU<i> columns, then
 * "CPU Affinity", "NUMA Affinity" and, on newer drivers, NIC columns, which are skipped. */
int backend_smi_parse_topo(char *text, gpu_inventory *inv, int with_links, jerr *e)
{
    strip_ansi(text);
    int col_gpu[64], ncol = 0, col_cpu = -1, col_numa = -1, rows = 0, header = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(trim(line), "Legend", 6) == 0)
            break;
        char *cells[64];
        int nc = 0;
        for (char *p = line, *tab;; p = tab + 1) {
            tab = strchr(p, '\t');
            if (tab)
                *tab = 0;
            if (nc < 64)
                cells[nc++] = trim(p);
            if (!tab)
                break;
        }
        if (!header) {
            for (int i = 0; i < nc; i++) {
                int k;
                col_gpu[i] = sscanf(cells[i], "GPU%d", &k) == 1 ? k : -1;
                if (strcmp(cells[i], "CPU Affinity") == 0)
                    col_cpu = i;
                if (strcmp(cells[i], "NUMA Affinity") == 0)
                    col_numa = i;
            }
            ncol = nc;
            header = col_cpu > 0 || (nc > 1 && col_gpu[1] == 0);
            continue;
        }
        int r;
        if (sscanf(cells[0], "GPU%d", &r) != 1)
            continue; /* NIC rows */
        if (r < 0 || r >= inv->n)
            return jerr_set(e, EIO, "nvidia-smi topo: row GPU%d but --query-gpu listed %d GPUs", r, inv->n);
        rows++;
        for (int i = 1; i < nc && i < ncol; i++) {
            int cgpu = col_gpu[i];
            if (cgpu >= 0 && cgpu < inv->n && cgpu != r) {
                int nv;
                if (sscanf(cells[i], "NV%d", &nv) == 1) {
                    if (with_links)
                        inv->nvlink[r][cgpu] = (signed char)nv;
                } else {
                    int lvl = gpu_level_parse(cells[i]);
                    if (lvl < 0)
                        return jerr_set(e, EIO, "nvidia-smi topo: unknown cell '%s' (GPU%d, GPU%d)", cells[i], r, cgpu);
                    if (with_links)
                        inv->nvlink[r][cgpu] = 0;
                    else
                        inv->level[r][cgpu] = (signed char)lvl;
                }
            } else if (i == col_cpu && !na(cells[i])) {
                gpu_cpulist_normalize(cells[i], inv->gpu[r].local_cpus, sizeof inv->gpu[r].local_cpus);
            } else if (i == col_numa && !na(cells[i])) {
                inv->gpu[r].numa_node = atoi(cells[i]);
            }
        }
    }
    if (inv->n && rows != inv->n)
        return jerr_set(e, EIO, "nvidia-smi topo: %d GPU rows for %d GPUs", rows, inv->n);
    return 0;
}

/* `-q`: "Key : value" lines, sections by indentation. Reads the CUDA version, each GPU's minor
 * number and its MIG devices' instance ids and memory. */
int backend_smi_parse_q(char *text, gpu_inventory *inv, jerr *e)
{
    gpu_dev *g = NULL;
    int mig_indent = -1, in_fb = 0;
    gpu_mig *m = NULL;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int indent = (int)strspn(line, " ");
        char *body = trim(line);
        if (!*body)
            continue;
        if (indent == 0 && strncmp(body, "GPU ", 4) == 0) {
            char bus[16];
            g = NULL;
            mig_indent = -1;
            if (gpu_bus_normalize(body + 4, bus) == 0)
                for (int i = 0; i < inv->n; i++)
                    if (strcmp(inv->gpu[i].bus_id, bus) == 0)
                        g = &inv->gpu[i];
            if (!g)
                return jerr_set(e, EIO, "nvidia-smi -q: section '%s' matches no GPU of --query-gpu", body);
            continue;
        }
        char *colon = strchr(body, ':');
        char *val = NULL;
        if (colon) {
            *colon = 0;
            val = trim(colon + 1);
            body = trim(body);
        }
        if (!g) {
            if (val && strcmp(body, "CUDA Version") == 0) {
                int ma, mi;
                if (sscanf(val, "%d.%d", &ma, &mi) == 2)
                    inv->cuda_driver_version = ma * 1000 + mi * 10;
            }
            continue;
        }
        if (mig_indent >= 0 && indent <= mig_indent)
            mig_indent = -1, m = NULL;
        if (!val && strcmp(body, "MIG Devices") == 0) {
            mig_indent = indent;
            continue;
        }
        if (mig_indent >= 0) {
            if (!val && strcmp(body, "MIG Device") == 0) {
                m = g->nmig < GPU_MIG_MAX ? &g->mig[g->nmig++] : NULL;
                in_fb = 0;
            } else if (!val) {
                in_fb = strcmp(body, "FB Memory Usage") == 0;
            } else if (m && strcmp(body, "GPU Instance ID") == 0) {
                m->gi = atoi(val);
            } else if (m && strcmp(body, "Compute Instance ID") == 0) {
                m->ci = atoi(val);
            } else if (m && in_fb && strcmp(body, "Total") == 0) {
                m->memory_mb = atoll(val);
            }
            continue;
        }
        if (val && strcmp(body, "Minor Number") == 0 && !na(val))
            g->minor = atoi(val);
    }
    return 0;
}

/* `-L`: "GPU 0: <name> (UUID: GPU-...)" then "  MIG 3g.40gb     Device  0: (UUID: MIG-...)". */
void backend_smi_parse_L(char *text, gpu_inventory *inv)
{
    gpu_dev *g = NULL;
    int k = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *body = trim(line);
        int idx;
        if (sscanf(body, "GPU %d:", &idx) == 1) {
            g = idx >= 0 && idx < inv->n ? &inv->gpu[idx] : NULL;
            k = 0;
            continue;
        }
        char profile[32];
        char *uuid = strstr(body, "(UUID: ");
        if (g && sscanf(body, "MIG %31s", profile) == 1 && uuid && k < g->nmig) {
            snprintf(g->mig[k].profile, sizeof g->mig[k].profile, "%s", profile);
            uuid += 7;
            snprintf(g->mig[k].uuid, sizeof g->mig[k].uuid, "%.*s", (int)strcspn(uuid, ")"), uuid);
            k++;
        }
    }
}

int gpu_backend_smi(const gpu_config *c, gpu_inventory *inv, jerr *e)
{
    static const char *const q_query[] = {"--query-gpu=" SMI_FIELDS, "--format=csv,noheader,nounits", NULL};
    static const char *const q_topo[] = {"topo", "-m", NULL};
    static const char *const q_topo_p[] = {"topo", "-mp", NULL};
    static const char *const q_q[] = {"-q", NULL};
    static const char *const q_L[] = {"-L", NULL};
    char *out = run_smi(c, q_query, e);
    if (!out)
        return -1;
    int rc = backend_smi_parse_query(out, inv, e);
    free(out);
    if (rc < 0 || inv->n == 0)
        return rc;
    if (!(out = run_smi(c, q_q, e)))
        return -1;
    rc = backend_smi_parse_q(out, inv, e);
    free(out);
    if (rc < 0)
        return -1;
    if (!(out = run_smi(c, q_L, e)))
        return -1;
    backend_smi_parse_L(out, inv);
    free(out);
    if (!(out = run_smi(c, q_topo, e)))
        return -1;
    rc = backend_smi_parse_topo(out, inv, 1, e);
    free(out);
    if (rc < 0)
        return -1;
    if (!(out = run_smi(c, q_topo_p, e)))
        return -1;
    rc = backend_smi_parse_topo(out, inv, 0, e);
    free(out);
    if (rc < 0)
        return -1;
    if (!inv->cuda_driver_version)
        inv->cuda_driver_version = gpu_driver_cuda_version(inv->driver_version);
    for (int i = 0; i < inv->n; i++)
        gpu_mig_cap_minors(c->proc_root, &inv->gpu[i]);
    gpu_inventory_finish(inv);
    return 0;
}
