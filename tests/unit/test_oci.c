/* Unit tests for src/exec/oci.c: the job spec as an OCI bundle's config.json for runsc, and the
 * gvisor fields of the spec (spec.c) coming back as written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "exec/gvisor.h"
#include "exec/isolate.h"
#include "exec/oci.h"
#include "exec/spec.h"
#include "common/util.h"

static char *argv_[] = {"python3", "train.py", NULL};
static char *env_[] = {"PATH=/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=GPU-a", NULL};
static spec_mount mounts_[] = {{"/usr/lib/nvidia", "/usr/lib/nvidia", false}, {"/vol/data", "/volumes/data", true}};
static spec_op ops_[] = {
    {SPEC_DEVNODE, "/dev/nvidia3", "/dev/nvidia3", NULL, 195, 3},
    {SPEC_DEVNODE, "/dev/nvidiactl", "/dev/nvidiactl", NULL, 195, 255},
    {SPEC_TMPFS, NULL, "/proc/driver/nvidia", NULL, 0, 0},
    {SPEC_FILE, NULL, "/proc/driver/nvidia/version", "NVRM", 0, 0},
};
static cg_dev_rule devs_[] = {{'c', 195, 3, "rw"}, {'c', 195, 255, "rw"}};

static job_spec spec(bool net_host)
{
    job_spec s = {.id = "0b5f0c1e-8a4e-4f7e-9a51-3c1d2e4f5a6b", .job_dir = "/var/lib/joblet/jobs/x",
                  .work_dir = "/var/lib/joblet/jobs/x/work", .root_mount = "/var/lib/joblet/rootfs",
                  .hostname = "job-0b5f0c1e", .argv = argv_, .env = env_, .workdir = "/work/src", .uid = 100001,
                  .gid = 100001, .net_host = net_host, .tmp_size_mb = 256, .user_procs_max = 500,
                  .cgroup_root = "joblet", .mounts = mounts_, .nmounts = 2, .ops = ops_, .nops = 4,
                  .devices = devs_, .ndevices = 2};
    s.limits.mem_bytes = 64 << 20;
    s.limits.pids_max = 1000;
    s.runsc = "/usr/bin/runsc";
    s.runsc_root = "/var/lib/joblet/runsc";
    s.runsc_platform = "systrap";
    s.runsc_nvproxy = true;
    s.cdi_devices = "nvidia.com/gpu=GPU-a";
    s.runsc_sandbox_uid = 2000032768;
    return s;
}

static const char *const sys_dirs[] = {"/usr", "/etc", NULL};

static json_t *mount_at(json_t *cfg, const char *dst)
{
    json_t *m;
    size_t i;
    json_array_foreach(json_object_get(cfg, "mounts"), i, m) if (!strcmp(json_string_value(json_object_get(m, "destination")), dst)) return m;
    return NULL;
}

static bool has_opt(json_t *m, const char *opt)
{
    json_t *o;
    size_t i;
    json_array_foreach(json_object_get(m, "options"), i, o) if (!strcmp(json_string_value(o), opt)) return true;
    return false;
}

static void test_config(void **state)
{
    (void)state;
    job_spec s = spec(false);
    oci_inputs in = {"/var/lib/joblet/jobs/x/bundle/rootfs", sys_dirs, "/joblet/0b5f0c1e", "/b/hosts",
                     "/b/hostname", NULL, NULL};
    json_t *c = oci_config(&s, &in);
    json_t *p = json_object_get(c, "process");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "user"), "uid")), 100001);
    assert_string_equal(json_string_value(json_array_get(json_object_get(p, "args"), 1)), "train.py");
    assert_string_equal(json_string_value(json_object_get(p, "cwd")), "/work/src");
    assert_int_equal(json_array_size(json_object_get(p, "env")), 2);
    assert_true(json_is_true(json_object_get(p, "noNewPrivileges")));
    assert_int_equal(json_array_size(json_object_get(json_object_get(p, "capabilities"), "bounding")), 0);
    json_t *rl = json_array_get(json_object_get(p, "rlimits"), 0);
    assert_string_equal(json_string_value(json_object_get(rl, "type")), "RLIMIT_NPROC");
    assert_int_equal(json_integer_value(json_object_get(rl, "hard")), 500);
    assert_true(json_is_true(json_object_get(json_object_get(c, "root"), "readonly")));
    /* system directories read-only, /work read-write, /tmp sized, the spec's binds as given */
    assert_true(has_opt(mount_at(c, "/usr"), "ro"));
    assert_true(has_opt(mount_at(c, "/etc"), "ro"));
    assert_null(mount_at(c, "/bin"));
    /* the job's own /etc/hosts and /etc/hostname, read-only, over the tree's /etc (after it) */
    json_t *eh = mount_at(c, "/etc/hosts");
    assert_string_equal(json_string_value(json_object_get(eh, "source")), "/b/hosts");
    assert_true(has_opt(eh, "ro"));
    assert_string_equal(json_string_value(json_object_get(mount_at(c, "/etc/hostname"), "source")), "/b/hostname");
    size_t at_etc = 0, at_hosts = 0, k;
    json_t *mk;
    json_array_foreach(json_object_get(c, "mounts"), k, mk) {
        const char *dst = json_string_value(json_object_get(mk, "destination"));
        if (!strcmp(dst, "/etc"))
            at_etc = k;
        else if (!strcmp(dst, "/etc/hosts"))
            at_hosts = k;
    }
    assert_true(at_hosts > at_etc);
    json_t *w = mount_at(c, "/work");
    assert_string_equal(json_string_value(json_object_get(w, "source")), "/var/lib/joblet/jobs/x/work");
    assert_true(has_opt(w, "rw"));
    assert_true(has_opt(mount_at(c, "/tmp"), "size=256m"));
    assert_true(has_opt(mount_at(c, "/volumes/data"), "rw"));
    assert_true(has_opt(mount_at(c, "/usr/lib/nvidia"), "ro"));
    assert_non_null(mount_at(c, "/proc/driver/nvidia"));
    assert_null(mount_at(c, "/proc/driver/nvidia/version")); /* files shape the native root only */
    /* exactly the spec's device nodes, with their numbers */
    json_t *lx = json_object_get(c, "linux");
    json_t *d = json_object_get(lx, "devices");
    assert_int_equal(json_array_size(d), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(d, 0), "path")), "/dev/nvidia3");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 0), "minor")), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 1), "minor")), 255);
    /* deny all, then the spec's rules */
    json_t *rules = json_object_get(json_object_get(lx, "resources"), "devices");
    assert_int_equal(json_array_size(rules), 3);
    assert_true(json_is_false(json_object_get(json_array_get(rules, 0), "allow")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(lx, "resources"), "memory"), "limit")),
                     64 << 20);
    assert_string_equal(json_string_value(json_object_get(lx, "cgroupsPath")), "/joblet/0b5f0c1e");
    assert_int_equal(json_array_size(json_object_get(lx, "namespaces")), 5);
    assert_string_equal(json_string_value(json_object_get(json_object_get(c, "annotations"), "cdi.k8s.io/joblet")),
                        "nvidia.com/gpu=GPU-a");
    json_decref(c);
    /* network host: no network namespace */
    s = spec(true);
    s.cdi_devices = NULL;
    c = oci_config(&s, &in);
    json_t *ns;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(c, "linux"), "namespaces"), i, ns)
        assert_string_not_equal(json_string_value(json_object_get(ns, "type")), "network");
    assert_null(json_object_get(json_object_get(c, "annotations"), "cdi.k8s.io/joblet"));
    json_decref(c);
    /* none: a network namespace without a path (runsc makes an empty one), no resolv bind */
    s = spec(false);
    c = oci_config(&s, &in);
    size_t nnet = 0;
    json_array_foreach(json_object_get(json_object_get(c, "linux"), "namespaces"), i, ns)
        if (!strcmp(json_string_value(json_object_get(ns, "type")), "network")) {
            nnet++;
            assert_null(json_object_get(ns, "path"));
        }
    assert_int_equal(nnet, 1);
    assert_null(mount_at(c, "/etc/resolv.conf"));
    json_decref(c);
    /* a job on a network: the namespace the shim gave its veth, by path, and its resolvers and
     * its network's hosts file bound read-only */
    oci_inputs on = {"/b/rootfs", sys_dirs, NULL, "/state/networks/train.hosts", "/b/hostname",
                     "/state/networks/resolv.conf", "/proc/self/ns/net"};
    c = oci_config(&s, &on);
    nnet = 0;
    json_array_foreach(json_object_get(json_object_get(c, "linux"), "namespaces"), i, ns)
        if (!strcmp(json_string_value(json_object_get(ns, "type")), "network")) {
            nnet++;
            assert_string_equal(json_string_value(json_object_get(ns, "path")), "/proc/self/ns/net");
        }
    assert_int_equal(nnet, 1);
    json_t *rv = mount_at(c, "/etc/resolv.conf");
    assert_string_equal(json_string_value(json_object_get(rv, "source")), "/state/networks/resolv.conf");
    assert_true(has_opt(rv, "ro"));
    assert_string_equal(json_string_value(json_object_get(mount_at(c, "/etc/hosts"), "source")),
                        "/state/networks/train.hosts");
    json_decref(c);
}

static void test_spec_round_trip(void **state)
{
    (void)state;
    job_spec s = spec(false), back;
    jerr e = {0};
    int fd = spec_to_fd(&s, &e);
    assert_true(fd >= 0);
    assert_int_equal(spec_load_fd(&back, fd, &e), 0);
    assert_string_equal(back.runsc, "/usr/bin/runsc");
    assert_string_equal(back.runsc_root, "/var/lib/joblet/runsc");
    assert_string_equal(back.runsc_platform, "systrap");
    assert_true(back.runsc_nvproxy);
    assert_string_equal(back.cdi_devices, "nvidia.com/gpu=GPU-a");
    assert_int_equal(back.runsc_sandbox_uid, 2000032768);
    spec_free(&back);
    close(fd);
    /* native: no gvisor */
    s.runsc = NULL;
    fd = spec_to_fd(&s, &e);
    assert_int_equal(spec_load_fd(&back, fd, &e), 0);
    assert_null(back.runsc);
    spec_free(&back);
    close(fd);
}

/* runsc exits 128 + N for a container killed by signal N: a signal when joblet sent one */
static void test_command_status(void **state)
{
    (void)state;
    assert_true(WIFEXITED(gvisor_command_status(7 << 8, false)));
    assert_int_equal(WEXITSTATUS(gvisor_command_status(7 << 8, false)), 7);
    assert_int_equal(WEXITSTATUS(gvisor_command_status(137 << 8, false)), 137);
    int st = gvisor_command_status(137 << 8, true);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == 9);
    st = gvisor_command_status(143 << 8, true);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == 15);
    assert_true(WIFEXITED(gvisor_command_status(1 << 8, true)));
    assert_int_equal(gvisor_command_status(9, false), 9); /* runsc itself killed */
}

/* The bundle on disk, for a runtime whose /lib is an absolute link: rootfs gets it relative (the
 * mount points made through it stay inside rootfs), mount points for the spec's binds, the
 * config, and the job directory's copy without the environment's values. */
static void test_bundle_on_disk(void **state)
{
    (void)state;
    char tmp[] = "/tmp/joblet-test-oci-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char sys[300], jobdir[300], root[300], path[600], buf[256];
    snprintf(sys, sizeof sys, "%s/sys", tmp);
    snprintf(jobdir, sizeof jobdir, "%s/job", tmp);
    snprintf(root, sizeof root, "%s/runsc", tmp);
    snprintf(path, sizeof path, "%s/usr/lib", sys);
    jerr e = {0};
    assert_int_equal(mkdir_p(path, 0755, &e), 0);
    assert_int_equal(mkdir_p(jobdir, 0700, &e), 0);
    snprintf(path, sizeof path, "%s/lib", sys);
    assert_int_equal(symlink("/usr/lib", path), 0);
    snprintf(path, sizeof path, "%s/etc", sys);
    assert_int_equal(mkdir_p(path, 0755, &e), 0);
    job_spec s = spec(false);
    s.system_root = sys;
    s.job_dir = jobdir;
    s.runsc_root = root;
    spec_mount m[] = {{sys, "/usr/lib/a", false}, {sys, "/lib/b", false}};
    s.mounts = m;
    s.nmounts = 2;
    cg_host h = {.root = "joblet"};
    cg_job cg = {.host = &h, .name = "0b5f0c1e"};
    /* a tree without /etc/hosts: none bound (runsc would make the mount point in the tree) */
    int brc = gvisor_bundle_write(&s, &cg, &e);
    if (brc < 0)
        fail_msg("%s", e.msg);
    snprintf(path, sizeof path, "%s/bundles/%s/config.json", root, s.id);
    json_t *c0 = json_load_file(path, 0, NULL);
    assert_null(mount_at(c0, "/etc/hosts"));
    json_decref(c0);
    snprintf(path, sizeof path, "%s/etc/hosts", sys);
    assert_int_equal(access(path, F_OK), -1);
    /* with one: the job's own bound over it */
    assert_int_equal(write_file_opt(path, "127.0.0.1 localhost\n", 20, 0644, 0, &e), 0);
    brc = gvisor_bundle_write(&s, &cg, &e);
    if (brc < 0)
        fail_msg("%s", e.msg);
    snprintf(path, sizeof path, "%s/bundles/%s/rootfs/lib", root, s.id);
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = 0;
    assert_string_equal(buf, "usr/lib");
    /* the mount point went through the link, inside rootfs, not into the host's /usr/lib */
    snprintf(path, sizeof path, "%s/bundles/%s/rootfs/usr/lib/b", root, s.id);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/bundles/%s/config.json", root, s.id);
    json_t *c = json_load_file(path, 0, NULL);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(c, "process"), "env"), 1)),
                        "NVIDIA_VISIBLE_DEVICES=GPU-a");
    /* the job's /etc/hosts beside the bundle: its hostname on the loopback; the tree has no
     * /etc/hostname, so none is bound; the tree's file is as it was */
    snprintf(path, sizeof path, "%s/bundles/%s/hosts", root, s.id);
    assert_string_equal(json_string_value(json_object_get(mount_at(c, "/etc/hosts"), "source")), path);
    assert_null(mount_at(c, "/etc/hostname"));
    size_t hlen = 0;
    char *hosts = read_file(path, &hlen);
    assert_non_null(hosts);
    assert_non_null(strstr(hosts, "\n127.0.0.1\tjob-0b5f0c1e\n"));
    assert_non_null(strstr(hosts, "\n127.0.0.1\tlocalhost\n"));
    assert_non_null(strstr(hosts, "\n::1\tlocalhost ip6-localhost ip6-loopback\n"));
    free(hosts);
    snprintf(path, sizeof path, "%s/etc/hosts", sys);
    hosts = read_file(path, &hlen);
    assert_string_equal(hosts, "127.0.0.1 localhost\n");
    free(hosts);
    json_decref(c);
    snprintf(path, sizeof path, "%s/bundle-config.json", jobdir);
    c = json_load_file(path, 0, NULL);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(c, "process"), "env"), 1)),
                        "NVIDIA_VISIBLE_DEVICES");
    assert_string_equal(json_string_value(json_object_get(json_object_get(c, "linux"), "cgroupsPath")),
                        "/joblet/0b5f0c1e");
    json_decref(c);
    /* a link that climbs out of the root is refused */
    snprintf(path, sizeof path, "%s/sbin", sys);
    assert_int_equal(symlink("../../etc", path), 0);
    assert_int_equal(gvisor_bundle_write(&s, &cg, &e), -1);
    assert_non_null(strstr(e.msg, "leaves the root"));
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    assert_int_equal(system(cmd), 0);
}

/* runsc's own failure: exit 128 and an error line in <job_dir>/runsc.log */
static void test_failure(void **state)
{
    (void)state;
    char tmp[] = "/tmp/joblet-test-oci-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    job_spec s = spec(false);
    s.job_dir = tmp;
    char msg[256], path[300];
    assert_false(gvisor_failure(&s, 128 << 8, msg, sizeof msg)); /* no log */
    snprintf(path, sizeof path, "%s/runsc.log", tmp);
    FILE *f = fopen(path, "w");
    fputs("{\"msg\":\"something\",\"level\":\"warning\"}\n"
          "{\"msg\":\"running container: failed to load /no/such: no such file\",\"level\":\"error\"}", f);
    fclose(f);
    assert_true(gvisor_failure(&s, 128 << 8, msg, sizeof msg));
    assert_string_equal(msg, "running container: failed to load /no/such: no such file");
    assert_false(gvisor_failure(&s, 137 << 8, msg, sizeof msg)); /* a signal */
    assert_false(gvisor_failure(&s, 9, msg, sizeof msg));       /* runsc killed */
    unlink(path);
    rmdir(tmp);
}

/* The sandbox's user namespace: every id is itself but nobody and the sandbox id, which swap */
static void test_id_map(void **state)
{
    (void)state;
    char m[256];
    assert_true(oci_id_map(OCI_NOBODY, 2000032768, m, sizeof m) > 0);
    assert_string_equal(m, "0 0 65534\n65534 2000032768 1\n65535 65535 1999967233\n2000032768 65534 1\n"
                           "2000032769 2000032769 2294934526\n");
    /* a sandbox id below nobody's: the same swap, the ranges the other way round */
    assert_true(oci_id_map(OCI_NOBODY, 1000, m, sizeof m) > 0);
    assert_string_equal(m, "0 0 1000\n1000 65534 1\n1001 1001 64533\n65534 1000 1\n65535 65535 4294901760\n");
    /* every id but 4294967295 once: the counts add up */
    unsigned long long total = 0, a, b, n;
    for (char *p = m; sscanf(p, "%llu %llu %llu", &a, &b, &n) == 3; p = strchr(p, '\n') + 1)
        total += n;
    assert_int_equal(total, 4294967295ull);
    /* nobody, no id, and one that is not an id: refused (never a sandbox as nobody) */
    assert_int_equal(oci_id_map(OCI_NOBODY, 65534, m, sizeof m), -1);
    assert_int_equal(oci_id_map(OCI_NOBODY, 0, m, sizeof m), -1);
    assert_int_equal(oci_id_map(OCI_NOBODY, 4294967295u, m, sizeof m), -1);
    assert_int_equal(oci_id_map(OCI_NOBODY, 2000032768, m, 20), -1);
    assert_int_equal(oci_inside_id(1001, OCI_NOBODY, 2000032768), 1001);
    assert_int_equal(oci_inside_id(65534, OCI_NOBODY, 2000032768), 2000032768);
    assert_int_equal(oci_inside_id(2000032768, OCI_NOBODY, 2000032768), 65534);
    /* the config's user: a job of nobody's own is the sandbox id inside, nobody outside */
    job_spec s = spec(false);
    s.uid = s.gid = 65534;
    oci_inputs in = {"/b/rootfs", NULL, NULL, NULL, NULL, NULL, NULL};
    json_t *o = oci_config(&s, &in);
    assert_null(mount_at(o, "/etc/hosts")); /* none given, none bound */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(o, "process"), "user"), "uid")),
                     2000032768);
    json_decref(o);
    /* the host's network: runsc keeps the sandbox in the namespace as root, so root and the
     * sandbox id swap; nobody is itself */
    s.net_host = true;
    assert_int_equal(oci_sandbox_runs_as(&s), 0);
    assert_true(oci_id_map(0, 2000032768, m, sizeof m) > 0);
    assert_string_equal(m, "0 2000032768 1\n1 1 2000032767\n2000032768 0 1\n2000032769 2000032769 2294934526\n");
    total = 0;
    for (char *p = m; sscanf(p, "%llu %llu %llu", &a, &b, &n) == 3; p = strchr(p, '\n') + 1)
        total += n;
    assert_int_equal(total, 4294967295ull);
    assert_int_equal(oci_id_map(0, 0, m, sizeof m), -1);
    assert_int_equal(oci_id_map(0, 65534, m, sizeof m), -1);
    assert_int_equal(oci_id_map(1000, 2000032768, m, sizeof m), -1); /* neither root nor nobody */
    assert_int_equal(oci_inside_id(0, 0, 2000032768), 2000032768);
    assert_int_equal(oci_inside_id(2000032768, 0, 2000032768), 0);
    assert_int_equal(oci_inside_id(65534, 0, 2000032768), 65534);
    /* a job of nobody's is nobody inside there; one of root's is the sandbox id, root outside */
    o = oci_config(&s, &in);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(o, "process"), "user"), "uid")),
                     65534);
    json_decref(o);
    s.uid = s.gid = 0;
    o = oci_config(&s, &in);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(o, "process"), "user"), "uid")),
                     2000032768);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(o, "process"), "user"), "gid")),
                     2000032768);
    json_decref(o);
}

/* the job's /etc/hosts and /etc/hostname texts, and hostnames that could add a line refused */
static void test_names_text(void **state)
{
    (void)state;
    char hosts[512], name[80];
    jerr e = {0};
    assert_int_equal(mounts_names_text("job-0b5f0c1e", hosts, sizeof hosts, name, sizeof name, &e), 0);
    assert_string_equal(name, "job-0b5f0c1e\n");
    assert_string_equal(hosts, "# this job's own (joblet): its hostname and localhost on the loopback\n"
                               "127.0.0.1\tlocalhost\n127.0.0.1\tjob-0b5f0c1e\n"
                               "::1\tlocalhost ip6-localhost ip6-loopback\n");
    const char *bad[] = {"", "a\n1.2.3.4 evil", "a b", "-x", ".x", "a\tb"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(mounts_names_text(bad[i], hosts, sizeof hosts, name, sizeof name, &e), -1);
        assert_non_null(strstr(e.msg, "is not a hostname"));
    }
    assert_int_equal(mounts_names_text("job-0b5f0c1e", hosts, 40, name, sizeof name, &e), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_spec_round_trip),
        cmocka_unit_test(test_command_status),
        cmocka_unit_test(test_bundle_on_disk),
        cmocka_unit_test(test_failure),
        cmocka_unit_test(test_id_map),
        cmocka_unit_test(test_names_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
