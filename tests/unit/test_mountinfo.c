/* Unit tests for src/exec/mountinfo.c: lines of /proc/<pid>/mountinfo as the kernel writes
 * them (fs/proc_namespace.c, show_mountinfo), the \ooo escapes, the optional fields before
 * " - ", an empty mount source ("- tmpfs  rw": two spaces), lines cut short or otherwise not
 * mountinfo lines, very long lines, and the cgroup mounts of the hybrid and v2 layouts that
 * cgroup.c's layout detection looks for. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "exec/mountinfo.h"

/* Parses a copy of text (the entry's strings point into *buf; the caller frees it). */
static int parse(const char *text, mountinfo_entry *m, char **buf)
{
    *buf = xstrdup(text);
    memset(m, 0x5a, sizeof *m);
    errno = 0;
    return mountinfo_parse_line(*buf, m);
}

static void assert_refused(const char *text)
{
    mountinfo_entry m;
    char *buf;
    int rc = parse(text, &m, &buf);
    if (rc != -1)
        fail_msg("accepted a line that is not a mountinfo line: \"%s\"", text);
    assert_int_equal(errno, EINVAL);
    free(buf);
}

static char *unescaped(const char *s)
{
    char *c = xstrdup(s);
    mountinfo_unescape(c);
    return c;
}

#define assert_unescapes(in, out)       \
    do {                                \
        char *u_ = unescaped(in);       \
        assert_string_equal(u_, (out)); \
        free(u_);                       \
    } while (0)

/* ---- normal lines ---- */

static void test_normal_line(void **state)
{
    mountinfo_entry m;
    char *buf;
    /* the example of proc(5) */
    assert_int_equal(parse("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue", &m,
                           &buf), 0);
    assert_int_equal(m.id, 36);
    assert_int_equal(m.parent, 35);
    assert_int_equal(m.major, 98);
    assert_int_equal(m.minor, 0);
    assert_string_equal(m.root, "/mnt1");
    assert_string_equal(m.point, "/mnt2");
    assert_string_equal(m.opts, "rw,noatime");
    assert_string_equal(m.optional, "master:1");
    assert_string_equal(m.fstype, "ext3");
    assert_string_equal(m.source, "/dev/root");
    assert_string_equal(m.super, "rw,errors=continue");
    free(buf);

    /* a root file system without optional fields, large numbers, a trailing newline */
    assert_int_equal(parse("4294967296 1 254:1048575 / / rw,relatime - ext4 /dev/vda "
                           "rw,discard,resuid=65534\n", &m, &buf), 0);
    assert_int_equal(m.id, 4294967296UL);
    assert_int_equal(m.parent, 1);
    assert_int_equal(m.major, 254);
    assert_int_equal(m.minor, 1048575);
    assert_string_equal(m.point, "/");
    assert_string_equal(m.optional, "");
    assert_string_equal(m.super, "rw,discard,resuid=65534");
    free(buf);

    /* roots that are not paths (nsfs), a fuse subtype */
    assert_int_equal(parse("610 28 0:4 net:[4026532281] /run/netns/x rw shared:300 - nsfs nsfs rw", &m, &buf), 0);
    assert_string_equal(m.root, "net:[4026532281]");
    assert_string_equal(m.point, "/run/netns/x");
    free(buf);
    assert_int_equal(parse("88 27 0:50 / /home/u/remote rw,nosuid,nodev,relatime shared:60 - fuse.sshfs "
                           "u@host:/srv rw,user_id=1000,group_id=1000", &m, &buf), 0);
    assert_string_equal(m.fstype, "fuse.sshfs");
    assert_string_equal(m.source, "u@host:/srv");
    free(buf);
}

/* ---- escapes ---- */

static void test_escapes_in_line(void **state)
{
    mountinfo_entry m;
    char *buf;
    assert_int_equal(parse("50 27 8:1 /data/my\\040dir /mnt/a\\040b\\011c\\012d\\134e rw - ext4 "
                           "/dev/disk\\040one rw,opt=x\\054y", &m, &buf), 0);
    assert_string_equal(m.root, "/data/my dir");
    assert_string_equal(m.point, "/mnt/a b\tc\nd\\e");
    assert_string_equal(m.source, "/dev/disk one");
    /* superblock options stay as written: an escaped ',' must not split an option */
    assert_string_equal(m.super, "rw,opt=x\\054y");
    free(buf);

    /* an escaped " - " inside a path is no separator */
    assert_int_equal(parse("51 27 8:1 / /mnt/x\\040-\\040y rw shared:2 - ext4 /dev/sda1 rw", &m, &buf), 0);
    assert_string_equal(m.point, "/mnt/x - y");
    assert_string_equal(m.optional, "shared:2");
    assert_string_equal(m.fstype, "ext4");
    free(buf);

    /* a type with an escaped space (a fuse subtype may hold anything) */
    assert_int_equal(parse("52 27 0:60 / /mnt/f rw - fuse.my\\040fs src rw", &m, &buf), 0);
    assert_string_equal(m.fstype, "fuse.my fs");
    free(buf);
}

static void test_unescape(void **state)
{
    assert_unescapes("", "");
    assert_unescapes("plain/path", "plain/path");
    assert_unescapes("\\040", " ");
    assert_unescapes("a\\040b", "a b");
    assert_unescapes("\\011", "\t");
    assert_unescapes("\\012", "\n");
    assert_unescapes("\\134", "\\");
    assert_unescapes("\\134\\134", "\\\\");
    assert_unescapes("\\377", "\xff");
    assert_unescapes("\\001", "\x01");
    /* one pass: an escaped backslash followed by digits is a backslash and digits */
    assert_unescapes("\\134040", "\\040");
    assert_unescapes("x\\040\\040\\040y", "x   y");
}

static void test_malformed_escapes(void **state)
{
    /* kept as written: the kernel writes no such thing, and nothing is lost */
    assert_unescapes("\\", "\\");
    assert_unescapes("a\\", "a\\");
    assert_unescapes("\\0", "\\0");
    assert_unescapes("\\04", "\\04");
    assert_unescapes("a\\04", "a\\04");
    assert_unescapes("\\04x", "\\04x");
    assert_unescapes("\\08a", "\\08a");
    assert_unescapes("\\800", "\\800");
    assert_unescapes("\\abc", "\\abc");
    assert_unescapes("\\\\040", "\\ "); /* a lone backslash, then a real escape */
    /* \400 and up do not fit in a byte; \400 used to wrap to a NUL and cut the path short */
    assert_unescapes("/a\\400b", "/a\\400b");
    assert_unescapes("/a\\777b", "/a\\777b");
    /* \000 would cut the string short */
    assert_unescapes("/a\\000b", "/a\\000b");

    mountinfo_entry m;
    char *buf;
    assert_int_equal(parse("53 27 8:1 / /mnt/a\\400b\\04 rw - ext4 /dev/sda1 rw", &m, &buf), 0);
    assert_string_equal(m.point, "/mnt/a\\400b\\04");
    free(buf);
}

/* ---- optional fields ---- */

static void test_optional_fields(void **state)
{
    static const struct {
        const char *optional;      /* as written between the options and " - ": kept as is */
    } cases[] = {
        { "" },
        { "shared:1" },
        { "master:2" },
        { "master:2 propagate_from:3" },
        { "unbindable" },
        { "shared:7 master:8" },
        { "shared:5 master:2 propagate_from:7 unbindable" },
        /* a field a later kernel might add is carried along, not refused */
        { "shared:9 future:x" },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char line[256];
        snprintf(line, sizeof line, "60 27 0:70 / /mnt/p rw,relatime%s%s - tmpfs tmpfs rw,size=4k",
                 cases[i].optional[0] ? " " : "", cases[i].optional);
        mountinfo_entry m;
        char *buf;
        assert_int_equal(parse(line, &m, &buf), 0);
        assert_string_equal(m.opts, "rw,relatime");
        assert_string_equal(m.optional, cases[i].optional);
        assert_string_equal(m.fstype, "tmpfs");
        assert_string_equal(m.source, "tmpfs");
        assert_string_equal(m.super, "rw,size=4k");
        free(buf);
    }
}

/* ---- the separator ---- */

static void test_separator(void **state)
{
    mountinfo_entry m;
    char *buf;
    /* the separator is looked for after the options only: a mount point "-" is a path */
    assert_int_equal(parse("62 27 0:70 / - rw - tmpfs tmpfs rw", &m, &buf), 0);
    assert_string_equal(m.point, "-");
    assert_string_equal(m.opts, "rw");
    assert_string_equal(m.optional, "");
    assert_string_equal(m.fstype, "tmpfs");
    free(buf);
    /* the first "-" field ends the optional fields; what follows is type, source, options */
    assert_int_equal(parse("63 27 0:70 / /m rw - - - rw", &m, &buf), 0);
    assert_string_equal(m.fstype, "-");
    assert_string_equal(m.source, "-");
    assert_string_equal(m.super, "rw");
    free(buf);

    assert_refused("64 27 0:70 / /m rw tmpfs tmpfs rw");          /* no separator */
    assert_refused("64 27 0:70 / /m rw shared:1 tmpfs tmpfs rw"); /* no separator */
    assert_refused("64 27 0:70 / /m rw -- tmpfs tmpfs rw");       /* "--" is none */
    assert_refused("64 27 0:70 / /m rw -tmpfs tmpfs rw");
    assert_refused("64 27 0:70 / /m rw shared:1  - tmpfs tmpfs rw"); /* two spaces */
}

/* ---- the empty source ---- */

static void test_empty_source(void **state)
{
    mountinfo_entry m;
    char *buf;
    /* mount -t tmpfs "" /mnt/e: the kernel writes the empty name between two spaces. The
     * old parser split on runs of spaces, took the options for the source and found no
     * options: the mount was skipped. */
    assert_int_equal(parse("70 27 0:80 / /mnt/e rw,relatime - tmpfs  rw,size=4k", &m, &buf), 0);
    assert_string_equal(m.point, "/mnt/e");
    assert_string_equal(m.fstype, "tmpfs");
    assert_string_equal(m.source, "");
    assert_string_equal(m.super, "rw,size=4k");
    free(buf);

    assert_int_equal(parse("71 27 0:81 / /mnt/e2 rw shared:4 master:1 - tmpfs  rw\n", &m, &buf), 0);
    assert_string_equal(m.optional, "shared:4 master:1");
    assert_string_equal(m.source, "");
    assert_string_equal(m.super, "rw");
    free(buf);

    /* a cgroup2 hierarchy mounted without a source name is still a cgroup2 hierarchy */
    assert_int_equal(parse("72 31 0:38 / /sys/fs/cgroup/unified rw,nosuid - cgroup2  rw,nsdelegate", &m, &buf),
                     0);
    assert_string_equal(m.fstype, "cgroup2");
    assert_string_equal(m.point, "/sys/fs/cgroup/unified");
    assert_string_equal(m.super, "rw,nsdelegate");
    free(buf);

    /* but not three spaces (an empty source and options starting with a space), nor an
     * empty source with nothing after it */
    assert_refused("73 27 0:80 / /mnt/e rw - tmpfs   rw");
    assert_refused("73 27 0:80 / /mnt/e rw - tmpfs  ");
    assert_refused("73 27 0:80 / /mnt/e rw - tmpfs ");
}

/* ---- lines that are not mountinfo lines ---- */

static void test_truncated_lines(void **state)
{
    /* every prefix that ends before the superblock options begin is refused: the line was
     * cut short (a prefix that ends inside them is a shorter, valid list of options) */
    static const char *const lines[] = {
        "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
        "36 35 98:0 /mnt1 /mnt2 rw,noatime - ext3 /dev/root rw,errors=continue",
        "36 35 98:0 /mnt1 /mnt2 rw,noatime shared:1 master:2 propagate_from:3 unbindable - tmpfs  rw",
    };
    for (size_t i = 0; i < ARRAY_LEN(lines); i++) {
        const char *sup = strrchr(lines[i], ' ') + 1;
        size_t sup_at = (size_t)(sup - lines[i]);
        for (size_t len = 0; len <= sup_at; len++) {
            char *p = strndup(lines[i], len);
            assert_non_null(p);
            assert_refused(p);
            free(p);
        }
        mountinfo_entry m;
        char *buf;
        assert_int_equal(parse(lines[i], &m, &buf), 0);
        free(buf);
    }
}

static void test_missing_or_bad_fields(void **state)
{
    assert_refused("");
    assert_refused("\n");
    assert_refused(" ");
    assert_refused("-");
    assert_refused("36 35 98:0 /mnt1 /mnt2 - ext3 /dev/root rw");    /* no options: "-" taken for them */
    assert_refused("36 35 98:0 /mnt1 - ext3 /dev/root rw");          /* no mount point */
    assert_refused("36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root");    /* no superblock options */
    assert_refused("36 35 98:0 /mnt1 /mnt2 rw - ext3");              /* no source, no options */
    assert_refused("36 35 98:0 /mnt1 /mnt2 rw -");
    assert_refused("36 35 98:0 /mnt1 /mnt2 rw - ");
    assert_refused("36 35 98:0 /mnt1 /mnt2 rw -  /dev/root rw");     /* empty type */
    assert_refused("36  35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw"); /* empty parent */
    assert_refused(" 36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw"); /* empty id */
    assert_refused("36 35 98:0  /mnt2 rw - ext3 /dev/root rw");       /* empty root */
    assert_refused("36 35 98:0 /mnt1  rw - ext3 /dev/root rw");       /* empty mount point */
    assert_refused("36 35 98:0 /mnt1 /mnt2  - ext3 /dev/root rw");    /* empty options */
    /* numbers */
    assert_refused("x 35 98:0 / /m rw - ext3 /dev/root rw");
    assert_refused("-1 35 98:0 / /m rw - ext3 /dev/root rw");
    assert_refused("+1 35 98:0 / /m rw - ext3 /dev/root rw");
    assert_refused("0x1 35 98:0 / /m rw - ext3 /dev/root rw");
    assert_refused("99999999999999999999999 35 98:0 / /m rw - ext3 /dev/root rw");
    assert_refused("36 35x 98:0 / /m rw - ext3 /dev/root rw");
    assert_refused("36 35 98 / /m rw - ext3 /dev/root rw");
    assert_refused("36 35 98: / /m rw - ext3 /dev/root rw");
    assert_refused("36 35 :0 / /m rw - ext3 /dev/root rw");
    assert_refused("36 35 98:0:1 / /m rw - ext3 /dev/root rw");
    assert_refused("36 35 4294967296:0 / /m rw - ext3 /dev/root rw");
    /* tabs are escaped by the kernel: a raw one is no separator */
    assert_refused("36\t35\t98:0\t/\t/m\trw\t-\text3\t/dev/root\trw");
}

/* ---- long lines ---- */

static void test_long_lines(void **state)
{
    /* a mount point of thousands of characters, half of them escaped spaces, with long
     * superblock options and more optional fields than the kernel writes (the old parser
     * stopped looking after 64 fields) */
    size_t n_seg = 1000;
    size_t cap = 64 * 1024;
    char *line = xmalloc(cap), *want_point = xmalloc(cap);
    size_t o = (size_t)snprintf(line, cap, "1000 27 0:99 / ");
    size_t w = 0;
    for (size_t i = 0; i < n_seg; i++) {
        o += (size_t)snprintf(line + o, cap - o, "/d%zu\\040x", i);
        w += (size_t)snprintf(want_point + w, cap - w, "/d%zu x", i);
    }
    o += (size_t)snprintf(line + o, cap - o, " rw,relatime");
    for (int i = 0; i < 200; i++)
        o += (size_t)snprintf(line + o, cap - o, " shared:%d", i + 1);
    o += (size_t)snprintf(line + o, cap - o, " - tmpfs tmpfs rw");
    for (int i = 0; i < 2000; i++)
        o += (size_t)snprintf(line + o, cap - o, ",opt%d=%d", i, i);
    assert_true(o < cap - 1);

    mountinfo_entry m;
    char *buf;
    assert_int_equal(parse(line, &m, &buf), 0);
    assert_string_equal(m.point, want_point);
    assert_true(strlen(m.point) > 6000);
    assert_string_equal(m.fstype, "tmpfs");
    assert_string_equal(m.source, "tmpfs");
    assert_true(strncmp(m.super, "rw,opt0=0,opt1=1,", 17) == 0);
    assert_true(strlen(m.super) > 20000);
    assert_int_equal(strncmp(m.optional, "shared:1 shared:2 ", 18), 0);
    free(buf);
    free(line);
    free(want_point);
}

/* ---- whole files: the cgroup layouts ---- */

/* The hybrid layout of systemd (unified_cgroup_hierarchy=0): v1 controllers under
 * /sys/fs/cgroup/<ctrl>, co-mounted ones reached through a symlink, the named systemd
 * hierarchy, and cgroup2 at /sys/fs/cgroup/unified for the eBPF device filter. Then the same
 * without optional fields, as this project's CI host shows it, plus noise. */
static const char hybrid[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "25 24 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate\n"
    "27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup "
    "rw,xattr,name=systemd\n"
    "30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
    "31 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory\n"
    "32 25 0:30 / /sys/fs/cgroup/devices rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,devices\n"
    "33 25 0:31 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,pids\n"
    "34 25 0:32 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup "
    "rw,net_cls,net_prio\n"
    "\n"
    "not a mountinfo line\n"
    "40 22 0:40 / /mnt/e rw - tmpfs  rw\n"
    /* a container's view: the job's own part of a hierarchy, bind-mounted */
    "41 22 0:29 /joblet/job1 /mnt/mem rw,relatime master:14 - cgroup cgroup rw,memory\n"
    "42 31 0:37 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
    "43 31 0:38 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "44 31 0:39 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer"; /* no final newline */

typedef struct seen {
    size_t n;
    char point[32][80], fstype[32][16], source[32][16], super[32][40], root[32][24];
} seen;

static int collect(mountinfo_entry *m, void *arg, jerr *e)
{
    seen *s = arg;
    if (s->n >= ARRAY_LEN(s->point))
        return jerr_set(e, ENOSPC, "more than %zu mounts", ARRAY_LEN(s->point));
    snprintf(s->point[s->n], sizeof s->point[0], "%s", m->point);
    snprintf(s->fstype[s->n], sizeof s->fstype[0], "%s", m->fstype);
    snprintf(s->source[s->n], sizeof s->source[0], "%s", m->source);
    snprintf(s->super[s->n], sizeof s->super[0], "%s", m->super);
    snprintf(s->root[s->n], sizeof s->root[0], "%s", m->root);
    s->n++;
    return 0;
}

/* A file in TMPDIR holding text; the caller unlinks it. */
static void write_tmp(char *path, size_t len, const char *text)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, len, "%s/test_mountinfo.XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
}

static size_t find(const seen *s, const char *point)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->point[i], point))
            return i;
    fail_msg("no mount at %s", point);
    return 0;
}

static void test_hybrid_layout(void **state)
{
    char path[64];
    write_tmp(path, sizeof path, hybrid);
    seen s = { 0 };
    jerr e = { 0 };
    assert_int_equal(mountinfo_foreach(path, collect, &s, &e), 0);
    unlink(path);
    /* 17 lines: one empty and one not a mountinfo line skipped */
    assert_int_equal(s.n, 15);

    size_t i = find(&s, "/sys/fs/cgroup/unified");
    assert_string_equal(s.fstype[i], "cgroup2");
    assert_string_equal(s.source[i], "cgroup2");
    assert_string_equal(s.super[i], "rw,nsdelegate");
    assert_string_equal(s.root[i], "/");

    i = find(&s, "/sys/fs/cgroup/cpu,cpuacct");
    assert_string_equal(s.fstype[i], "cgroup");
    assert_string_equal(s.super[i], "rw,cpu,cpuacct");
    i = find(&s, "/sys/fs/cgroup/systemd");
    assert_string_equal(s.super[i], "rw,xattr,name=systemd");
    i = find(&s, "/sys/fs/cgroup/memory");
    assert_string_equal(s.super[i], "rw,memory");
    assert_string_equal(s.root[i], "/");
    i = find(&s, "/mnt/mem");
    assert_string_equal(s.super[i], "rw,memory");
    assert_string_equal(s.root[i], "/joblet/job1");
    i = find(&s, "/sys/fs/cgroup/freezer");
    assert_string_equal(s.super[i], "rw,freezer");
    i = find(&s, "/sys/fs/cgroup");
    assert_string_equal(s.fstype[i], "tmpfs");
    i = find(&s, "/mnt/e");
    assert_string_equal(s.source[i], "");

    size_t v1 = 0, v2 = 0;
    for (size_t k = 0; k < s.n; k++) {
        v1 += !strcmp(s.fstype[k], "cgroup");
        v2 += !strcmp(s.fstype[k], "cgroup2");
    }
    assert_int_equal(v1, 10);
    assert_int_equal(v2, 1);
}

static void test_v2_layout(void **state)
{
    char path[64];
    write_tmp(path, sizeof path,
              "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
              "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
              "rw,nsdelegate,memory_recursiveprot\n");
    seen s = { 0 };
    jerr e = { 0 };
    assert_int_equal(mountinfo_foreach(path, collect, &s, &e), 0);
    unlink(path);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.point[1], "/sys/fs/cgroup");
    assert_string_equal(s.fstype[1], "cgroup2");
    assert_string_equal(s.super[1], "rw,nsdelegate,memory_recursiveprot");
}

/* ---- mountinfo_foreach ---- */

static int stop_at_unified(mountinfo_entry *m, void *arg, jerr *e)
{
    int *calls = arg;
    ++*calls;
    return !strcmp(m->point, "/sys/fs/cgroup/unified") ? 7 : 0;
}

static int fail_at_memory(mountinfo_entry *m, void *arg, jerr *e)
{
    int *calls = arg;
    ++*calls;
    return !strcmp(m->point, "/sys/fs/cgroup/memory") ? jerr_set(e, EIO, "stop here") : 0;
}

static void test_foreach_stops(void **state)
{
    char path[64];
    write_tmp(path, sizeof path, hybrid);
    int calls = 0;
    jerr e = { 0 };
    assert_int_equal(mountinfo_foreach(path, stop_at_unified, &calls, &e), 7);
    assert_int_equal(calls, 4);
    calls = 0;
    assert_int_equal(mountinfo_foreach(path, fail_at_memory, &calls, &e), -1);
    assert_int_equal(calls, 7);
    assert_int_equal(e.code, EIO);
    assert_string_equal(e.msg, "stop here");
    unlink(path);

    memset(&e, 0, sizeof e);
    calls = 0;
    assert_int_equal(mountinfo_foreach("/nonexistent/mountinfo", stop_at_unified, &calls, &e), -1);
    assert_int_equal(calls, 0);
    assert_int_equal(e.code, ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent/mountinfo"));
}

static void test_foreach_empty_and_long(void **state)
{
    char path[64];
    write_tmp(path, sizeof path, "");
    seen s = { 0 };
    jerr e = { 0 };
    assert_int_equal(mountinfo_foreach(path, collect, &s, &e), 0);
    assert_int_equal(s.n, 0);
    unlink(path);

    /* lines far longer than one read of the file */
    size_t cap = 256 * 1024;
    char *text = xmalloc(cap);
    size_t o = 0;
    for (int l = 0; l < 8; l++) {
        o += (size_t)snprintf(text + o, cap - o, "%d 1 0:%d / /m%d rw - tmpfs tmpfs rw", 100 + l, l, l);
        for (int i = 0; i < 1000; i++)
            o += (size_t)snprintf(text + o, cap - o, ",o%d", i);
        o += (size_t)snprintf(text + o, cap - o, "\n");
    }
    assert_true(o < cap - 1);
    write_tmp(path, sizeof path, text);
    free(text);
    int calls = 0;
    assert_int_equal(mountinfo_foreach(path, stop_at_unified, &calls, &e), 0);
    assert_int_equal(calls, 8);
    unlink(path);
}

/* This process's own mount table: every line the kernel writes parses. */
static int count(mountinfo_entry *m, void *arg, jerr *e)
{
    ++*(size_t *)arg;
    return 0;
}

static void test_own_mountinfo(void **state)
{
    char *s = read_file("/proc/self/mountinfo", NULL);
    if (!s) {
        skip();
        return; /* (cmocka's skip jumps away, but does not say it never returns) */
    }
    size_t lines = 0;
    for (char *p = s; *p; p++)
        lines += *p == '\n';
    free(s);
    size_t parsed = 0;
    jerr e = { 0 };
    assert_int_equal(mountinfo_foreach("/proc/self/mountinfo", count, &parsed, &e), 0);
    /* the table may change between the two reads only if something mounts meanwhile */
    assert_int_equal(parsed, lines);
    assert_true(parsed > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normal_line),
        cmocka_unit_test(test_escapes_in_line),
        cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_malformed_escapes),
        cmocka_unit_test(test_optional_fields),
        cmocka_unit_test(test_separator),
        cmocka_unit_test(test_empty_source),
        cmocka_unit_test(test_truncated_lines),
        cmocka_unit_test(test_missing_or_bad_fields),
        cmocka_unit_test(test_long_lines),
        cmocka_unit_test(test_hybrid_layout),
        cmocka_unit_test(test_v2_layout),
        cmocka_unit_test(test_foreach_stops),
        cmocka_unit_test(test_foreach_empty_and_long),
        cmocka_unit_test(test_own_mountinfo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
