/* devfilter_probe: applies a GPU job's device rules through one device-filter path to a
 * scratch cgroup, then opens nodes from a child placed in it and prints errno names.
 *   devfilter_probe v1|ebpf CGROUP_DIR MAJOR:MINOR[,...] NODE...
 * The rules are joblet's defaults plus "c MAJOR:MINOR rw" for each pair given, exactly as a
 * job's spec carries them. The caller (tests/integration/test_gpu_devfilter.py) makes and
 * removes the scratch cgroup; this only attaches and probes, so nothing outside it changes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/bpfdev.h"
#include "exec/cgroup.h"
#include "exec/cgroup_v1.h"

static const char *errname(int e)
{
    return e == 0 ? "ok" : e == EPERM ? "EPERM" : e == ENXIO ? "ENXIO" : e == ENODEV ? "ENODEV" : e == EACCES ? "EACCES"
                                                                                            : strerror(e);
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return fprintf(stderr, "usage: devfilter_probe v1|ebpf CGROUP_DIR MAJOR:MINOR[,...] NODE...\n"), 2;
    cg_dev_rule rules[64];
    size_t n = 0;
    for (; n < cg_default_devices_n; n++)
        rules[n] = cg_default_devices[n];
    char list[512];
    snprintf(list, sizeof list, "%s", argv[3]);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < 64; t = strtok_r(NULL, ",", &save)) {
        long ma, mi;
        if (sscanf(t, "%ld:%ld", &ma, &mi) != 2)
            return fprintf(stderr, "bad pair %s\n", t), 2;
        rules[n++] = (cg_dev_rule){'c', ma, mi, "rw"};
    }
    jerr e = {0};
    int rc = strcmp(argv[1], "v1") == 0 ? cgv1_set_devices(argv[2], rules, n, &e) : bpfdev_attach(argv[2], rules, n, &e);
    if (rc < 0)
        return fprintf(stderr, "devfilter_probe: %s\n", e.msg), 1;
    pid_t pid = fork();
    if (pid == 0) {
        char procs[600], self[32];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", argv[2]);
        snprintf(self, sizeof self, "%d", getpid());
        int fd = open(procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, self, strlen(self)) < 0)
            _exit(3);
        close(fd);
        for (int i = 4; i < argc; i++) {
            int d = open(argv[i], O_RDWR | O_CLOEXEC);
            printf("%s %s\n", argv[i], errname(d < 0 ? errno : 0));
            if (d >= 0)
                close(d);
        }
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
