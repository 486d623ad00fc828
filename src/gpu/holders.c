/* Finds the holders of a GPU's device node by its device number: see holders.h. */
#include "holders.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The distinct tables of one process remembered for kcmp; past them, every further table that
 * differs from all of these is read (correct, only slower). */
#define TABLES_MAX 64

static unsigned long tables_read;
static int kcmp_state; /* 0 not tried yet, 1 usable, -1 not (no kcmp, or /proc not ours) */

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

/* A descriptor of rdev in the table of `task` (/proc/PID/task/TID): 1 found, 0 not, -1 the
 * table could not be read (the thread is gone). */
static int fds_hold(const char *task, dev_t rdev)
{
    char path[320];
    snprintf(path, sizeof path, "%s/fd", task);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    tables_read++;
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

/* Whether kcmp may tell two threads' tables apart: /proc is of this process's pid namespace (so a
 * TID read there names the thread kcmp would) and the kernel has kcmp (CONFIG_KCMP; found out by
 * the first call, same_table). */
static bool kcmp_usable(void)
{
    if (!kcmp_state) {
        char self[32];
        ssize_t n = readlink("/proc/self", self, sizeof self - 1);
        if (n > 0)
            self[n] = 0;
        kcmp_state = n > 0 && numeric(self) && atoi(self) == (int)getpid() ? 1 : -1;
    }
    return kcmp_state > 0;
}

/* Threads a and b share one descriptor table (CLONE_FILES). Not known (a thread gone, access
 * refused) is "no": that table is read. */
static bool same_table(pid_t a, pid_t b)
{
    long r = syscall(SYS_kcmp, a, b, KCMP_FILES, 0, 0);
    if (r < 0 && errno == ENOSYS)
        kcmp_state = -1;
    return r == 0;
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

/* Each distinct descriptor table of pid once: threads normally share their process's
 * (CLONE_FILES), and a table of 1,000 descriptors read again for each of 1,000 threads is a
 * million stat()s. A thread whose table kcmp finds to be one already read is skipped; without
 * kcmp every thread's table is read. */
static bool holds(pid_t pid, dev_t rdev)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    pid_t read_by[TABLES_MAX]; /* a thread of each distinct table read */
    int nread = 0;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d)))
        if (numeric(de->d_name)) {
            pid_t tid = (pid_t)atoi(de->d_name);
            bool seen = false;
            for (int i = 0; i < nread && !seen && kcmp_usable(); i++)
                seen = same_table(read_by[i], tid);
            if (seen)
                continue;
            char task[128];
            snprintf(task, sizeof task, "/proc/%d/task/%s", (int)pid, de->d_name);
            int r = fds_hold(task, rdev);
            found = r > 0;
            if (r == 0 && nread < TABLES_MAX)
                read_by[nread++] = tid;
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

unsigned long holders_tables_read(void)
{
    return tables_read;
}
