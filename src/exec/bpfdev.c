#include "bpfdev.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/util.h"

/* Kernel dev_t layout (MINORBITS = 20): larger numbers can never name a device. */
#define DEV_MAJOR_MAX 0xfff
#define DEV_MINOR_MAX 0xfffff

/* Registers after the prologue: R2 device type, R3 requested access, R4 major, R5 minor. */
#define R_TYPE 2
#define R_ACC 3
#define R_MAJOR 4
#define R_MINOR 5
#define R_SCRATCH 1
#define PROLOGUE_LEN 6
#define RULE_MAX_LEN 8
#define EPILOGUE_LEN 2
#define ACC_ALL (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE)

/* Big enough for any verifier complaint about a program this simple. */
#define VERIFIER_LOG_SIZE (256 * 1024)
/* How much of the verifier log fits in a jerr message beside the rest of the sentence. */
#define LOG_TAIL_MAX 420

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    return (struct bpf_insn){ .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };
}

static int access_bits(const char *access)
{
    int bits = 0;
    for (const char *p = access; *p; p++) {
        int b = *p == 'r' ? BPF_DEVCG_ACC_READ : *p == 'w' ? BPF_DEVCG_ACC_WRITE
              : *p == 'm' ? BPF_DEVCG_ACC_MKNOD : 0;
        if (!b || (bits & b))
            return -1;
        bits |= b;
    }
    return bits;
}

int bpfdev_check_rule(const cg_dev_rule *r, jerr *e)
{
    if (r->type != 'c' && r->type != 'b')
        return jerr_set(e, EINVAL, "device rule type '%c' is neither 'c' nor 'b'", r->type);
    if (r->major != -1 && (r->major < 0 || r->major > DEV_MAJOR_MAX))
        return jerr_set(e, EINVAL, "device rule major %lld is not -1 or 0..%d", (long long)r->major,
                        DEV_MAJOR_MAX);
    if (r->minor != -1 && (r->minor < 0 || r->minor > DEV_MINOR_MAX))
        return jerr_set(e, EINVAL, "device rule minor %lld is not -1 or 0..%d", (long long)r->minor,
                        DEV_MINOR_MAX);
    if (!memchr(r->access, 0, sizeof r->access) || !r->access[0] || access_bits(r->access) < 0)
        return jerr_set(e, EINVAL, "device rule access \"%.*s\" is not a non-empty subset of \"rwm\"",
                        (int)sizeof r->access, r->access);
    return 0;
}

/* ctx is struct bpf_cgroup_dev_ctx: access_type = (access << 16) | type, then major, minor. */
static size_t emit_prologue(struct bpf_insn *p)
{
    size_t i = 0;
    p[i++] = insn(BPF_LDX | BPF_MEM | BPF_W, R_TYPE, 1, offsetof(struct bpf_cgroup_dev_ctx, access_type), 0);
    p[i++] = insn(BPF_ALU | BPF_MOV | BPF_X, R_ACC, R_TYPE, 0, 0);
    p[i++] = insn(BPF_ALU | BPF_RSH | BPF_K, R_ACC, 0, 0, 16);
    p[i++] = insn(BPF_ALU | BPF_AND | BPF_K, R_TYPE, 0, 0, 0xffff);
    p[i++] = insn(BPF_LDX | BPF_MEM | BPF_W, R_MAJOR, 1, offsetof(struct bpf_cgroup_dev_ctx, major), 0);
    p[i++] = insn(BPF_LDX | BPF_MEM | BPF_W, R_MINOR, 1, offsetof(struct bpf_cgroup_dev_ctx, minor), 0);
    return i;
}

static size_t rule_len(const cg_dev_rule *r, int acc)
{
    return 1 + (acc != ACC_ALL ? 3 : 0) + (r->major != -1) + (r->minor != -1) + 2;
}

/* Jump offset from the instruction at index at to the first one after a block of len. */
static int16_t to_next(size_t len, size_t at)
{
    return (int16_t)(len - at - 1);
}

/* One block per rule: every mismatch jumps to the next block; a full match returns 1 (allow). */
static size_t emit_rule(struct bpf_insn *p, const cg_dev_rule *r)
{
    int acc = access_bits(r->access);
    size_t len = rule_len(r, acc), i = 0;
    int type = r->type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
    p[i] = insn(BPF_JMP | BPF_JNE | BPF_K, R_TYPE, 0, to_next(len, i), type);
    i++;
    if (acc != ACC_ALL) {
        /* allowed only when the request asks for nothing outside the rule's access bits */
        p[i++] = insn(BPF_ALU | BPF_MOV | BPF_X, R_SCRATCH, R_ACC, 0, 0);
        p[i++] = insn(BPF_ALU | BPF_AND | BPF_K, R_SCRATCH, 0, 0, ACC_ALL & ~acc);
        p[i] = insn(BPF_JMP | BPF_JNE | BPF_K, R_SCRATCH, 0, to_next(len, i), 0);
        i++;
    }
    if (r->major != -1) {
        p[i] = insn(BPF_JMP | BPF_JNE | BPF_K, R_MAJOR, 0, to_next(len, i), (int32_t)r->major);
        i++;
    }
    if (r->minor != -1) {
        p[i] = insn(BPF_JMP | BPF_JNE | BPF_K, R_MINOR, 0, to_next(len, i), (int32_t)r->minor);
        i++;
    }
    p[i++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
    p[i++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    return i;
}

int bpfdev_build(const cg_dev_rule *rules, size_t n, struct bpf_insn **insns, size_t *cnt, jerr *e)
{
    for (size_t k = 0; k < n; k++)
        if (bpfdev_check_rule(&rules[k], e) < 0)
            return -1;
    struct bpf_insn *p = xcalloc(PROLOGUE_LEN + n * RULE_MAX_LEN + EPILOGUE_LEN, sizeof *p);
    size_t i = emit_prologue(p);
    for (size_t k = 0; k < n; k++)
        i += emit_rule(p + i, &rules[k]);
    p[i++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
    p[i++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    *insns = p;
    *cnt = i;
    return 0;
}

static int sys_bpf(int cmd, union bpf_attr *a)
{
    return (int)syscall(__NR_bpf, cmd, a, sizeof *a);
}

static int prog_load(const struct bpf_insn *p, size_t cnt, char *log, size_t loglen)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    a.insns = (uint64_t)(uintptr_t)p;
    a.insn_cnt = (uint32_t)cnt;
    /* the program calls no helpers, so no GPL-only symbol is needed */
    a.license = (uint64_t)(uintptr_t) "Apache-2.0";
    snprintf(a.prog_name, sizeof a.prog_name, "joblet_dev");
    if (log) {
        log[0] = 0;
        a.log_buf = (uint64_t)(uintptr_t)log;
        a.log_size = (uint32_t)loglen;
        a.log_level = 1;
    }
    return sys_bpf(BPF_PROG_LOAD, &a);
}

/* The end of the log holds the verdict; newlines would break a one-line message. */
static const char *log_tail(char *log)
{
    for (char *c = log; *c; c++)
        if (*c == '\n')
            *c = ' ';
    size_t len = strlen(log);
    while (len && log[len - 1] == ' ')
        log[--len] = 0;
    return len > LOG_TAIL_MAX ? log + len - LOG_TAIL_MAX : log;
}

/* Loads quietly first; only a refused program is loaded again to capture the verifier's reason
 * (the verifier answers EACCES or EINVAL; EPERM means the caller lacks the capability). */
static int load_or_explain(const struct bpf_insn *p, size_t cnt, const char *dir, jerr *e)
{
    int fd = prog_load(p, cnt, NULL, 0);
    if (fd >= 0)
        return fd;
    int saved = errno;
    char *log = xmalloc(VERIFIER_LOG_SIZE);
    fd = prog_load(p, cnt, log, VERIFIER_LOG_SIZE);
    if (fd >= 0) {
        free(log);
        return fd;
    }
    jerr_set(e, saved, "load BPF device filter (%zu instructions) for %s: %s%s; verifier: %s", cnt, dir,
             strerror(saved), saved == EPERM ? " (needs CAP_SYS_ADMIN or CAP_BPF)" : "",
             log[0] ? log_tail(log) : "(no log)");
    free(log);
    return -1;
}

static int prog_attach(const char *dir, int prog, jerr *e)
{
    int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0)
        return jerr_sys(e, "open cgroup directory %s", dir);
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.target_fd = (uint32_t)cg;
    a.attach_bpf_fd = (uint32_t)prog;
    a.attach_type = BPF_CGROUP_DEVICE;
    a.attach_flags = BPF_F_ALLOW_MULTI;
    int rc = sys_bpf(BPF_PROG_ATTACH, &a) < 0 ? jerr_sys(e, "attach BPF device filter to %s", dir) : 0;
    close(cg);
    return rc;
}

int bpfdev_load(const cg_dev_rule *rules, size_t n, const char *what, jerr *e)
{
    struct bpf_insn *p = NULL;
    size_t cnt = 0;
    if (bpfdev_build(rules, n, &p, &cnt, e) < 0)
        return -1;
    int prog = load_or_explain(p, cnt, what, e);
    free(p);
    return prog;
}

int bpfdev_attach_prog(const char *dir, int prog, jerr *e) { return prog_attach(dir, prog, e); }

int bpfdev_detach_prog(const char *dir, int prog, jerr *e)
{
    int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0)
        return errno == ENOENT ? 0 : jerr_sys(e, "open cgroup directory %s", dir); /* gone: so is the filter */
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.target_fd = (uint32_t)cg;
    a.attach_bpf_fd = (uint32_t)prog;
    a.attach_type = BPF_CGROUP_DEVICE;
    int rc = sys_bpf(BPF_PROG_DETACH, &a) < 0 ? jerr_sys(e, "detach BPF device filter from %s", dir) : 0;
    close(cg);
    return rc;
}

int bpfdev_attach(const char *dir, const cg_dev_rule *rules, size_t n, jerr *e)
{
    int prog = bpfdev_load(rules, n, dir, e);
    if (prog < 0)
        return -1;
    /* the cgroup keeps its own reference to an attached program, so our fd can go */
    int rc = prog_attach(dir, prog, e);
    close(prog);
    return rc;
}
