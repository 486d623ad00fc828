/* Finds the holders of a GPU's device node by its device number: see holders.h. */
#include "holders.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_rdev(const char *path, dev_t rdev)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == rdev;
}

static bool numeric(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* A descriptor of rdev in the table of `task` (/proc/PID/task/TID). */
static bool fds_hold(const char *task, dev_t rdev)
{
    char path[320];
    snprintf(path, sizeof path, "%s/fd", task);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d)))
        if (numeric(de->d_name)) {
            snprintf(path, sizeof path, "%s/fd/%s", task, de->d_name);
            found = is_rdev(path, rdev);
        }
    closedir(d);
    return found;
}

/* A mapping of rdev: each file mapped (by device and inode, as /proc/PID/maps names it) is
 * looked at once, through its map_files entry, whose stat is that of the file mapped. */
static bool maps_hold(pid_t pid, dev_t rdev)
{
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    struct seen {
        char dev[16];
        unsigned long ino;
    } seen[256];
    int nseen = 0;
    bool found = false;
    char line[4096];
    while (!found && fgets(line, sizeof line, f)) {
        char range[64], dev[16];
        unsigned long ino;
        if (sscanf(line, "%63s %*s %*s %15s %lu", range, dev, &ino) != 3 || ino == 0)
            continue;
        bool dup = false;
        for (int i = 0; i < nseen && !dup; i++)
            dup = seen[i].ino == ino && strcmp(seen[i].dev, dev) == 0;
        if (dup)
            continue;
        if (nseen < (int)(sizeof seen / sizeof *seen)) {
            snprintf(seen[nseen].dev, sizeof seen[nseen].dev, "%s", dev);
            seen[nseen++].ino = ino;
        }
        snprintf(path, sizeof path, "/proc/%d/map_files/%s", (int)pid, range);
        found = is_rdev(path, rdev);
    }
    fclose(f);
    return found;
}

static bool holds(pid_t pid, dev_t rdev)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d)))
        if (numeric(de->d_name)) {
            char task[128];
            snprintf(task, sizeof task, "/proc/%d/task/%s", (int)pid, de->d_name);
            found = fds_hold(task, rdev);
        }
    closedir(d);
    return found || maps_hold(pid, rdev);
}

static void read_line(const char *path, char *out, size_t len)
{
    *out = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = 0;
    fclose(f);
}

/* uid, euid, cgroup, comm, exe, its MPS pipe directory. */
static void describe(pid_t pid, gpu_holder *h)
{
    char path[64], line[512];
    *h = (gpu_holder){.pid = pid, .uid = (uid_t)-1, .euid = (uid_t)-1};
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (f) {
        unsigned long r, e;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
                h->uid = (uid_t)r;
                h->euid = (uid_t)e;
                break;
            }
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    read_line(path, h->comm, sizeof h->comm);
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, h->exe, sizeof h->exe - 1);
    h->exe[n > 0 ? n : 0] = 0;
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    if ((f = fopen(path, "re"))) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "0::", 3) == 0) {
                line[strcspn(line, "\n")] = 0;
                snprintf(h->cgroup, sizeof h->cgroup, "%s", line + 3);
            }
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    static char env[65536];
    ssize_t len = read(fd, env, sizeof env - 1);
    close(fd);
    if (len <= 0)
        return;
    env[len] = 0;
    static const char key[] = "CUDA_MPS_PIPE_DIRECTORY=";
    for (char *p = env; p < env + len; p += strlen(p) + 1)
        if (strncmp(p, key, sizeof key - 1) == 0)
            snprintf(h->mps_pipe, sizeof h->mps_pipe, "%s", p + sizeof key - 1);
}

int holders_find(dev_t rdev, gpu_holder *out, int max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int n = 0;
    /* this helper, and joblet, which started it: its health monitor holds every GPU's node
     * through NVML for as long as it runs */
    pid_t self = getpid(), joblet = getppid();
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!numeric(de->d_name))
            continue;
        pid_t pid = (pid_t)atoi(de->d_name);
        if (pid == self || pid == joblet || !holds(pid, rdev))
            continue;
        if (n < max)
            describe(pid, &out[n]);
        n++;
    }
    closedir(d);
    return n;
}

bool holders_find_one(pid_t pid, dev_t rdev, gpu_holder *out)
{
    if (!holds(pid, rdev))
        return false;
    describe(pid, out);
    return true;
}
