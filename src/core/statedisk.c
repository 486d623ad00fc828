/* Room on the state filesystem (statedisk.h). */
#include "statedisk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/logwriter.h"
#include "jobs.h"
#include "state.h"

uint64_t statedisk_free(void)
{
    struct statvfs sv;
    if (statvfs(core.cfg.state_dir, &sv) < 0)
        return UINT64_MAX;
    return (uint64_t)sv.f_bfree * sv.f_frsize; /* joblet runs as root: the root-reserved blocks are its too */
}

int statedisk_room(uint64_t need, const char *what, jerr *e)
{
    uint64_t reserve = core.cfg.state_reserve, avail = statedisk_free();
    if (!reserve || avail == UINT64_MAX || (avail > reserve && avail - reserve >= need))
        return 0;
    char needs[64] = "";
    if (need)
        snprintf(needs, sizeof needs, " and this needs %llu MB", (unsigned long long)((need + (1u << 20) - 1) >> 20));
    return jerr_http(e, 507,
                     "%s refused: the state filesystem (%s) has %llu MB free%s, and joblet keeps jobs.state_reserve "
                     "(%llu MB) of it for its database; free space there (rnx job delete removes ended jobs and "
                     "their output) or ask the administrator",
                     what, core.cfg.state_dir, (unsigned long long)(avail >> 20), needs,
                     (unsigned long long)(reserve >> 20));
}

/* ---- log budgets ---- */

static void budget_file(uid_t owner, char *out, size_t len)
{
    snprintf(out, len, "%s/logbudget/%u", core.cfg.state_dir, (unsigned)owner);
}

/* The owner's budget mapped (made when missing and `make`), or NULL. */
static log_budget *budget_map(uid_t owner, bool make)
{
    char path[700];
    budget_file(owner, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (make ? O_CREAT : 0), 0600);
    if (fd < 0) {
        if (make)
            log_err("the log budget of uid %u: open %s: %s", (unsigned)owner, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    void *p = MAP_FAILED;
    /* its blocks allocated, not a sparse file: a store into a mapped hole that the full disk
     * cannot back is SIGBUS (the daemon died so with its state filesystem full) */
    int err = 0;
    if (fstat(fd, &st) == 0 && (st.st_blocks * 512 >= LOG_BUDGET_FILE_SIZE ||
                                (err = posix_fallocate(fd, 0, LOG_BUDGET_FILE_SIZE)) == 0))
        p = mmap(NULL, LOG_BUDGET_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!err)
        err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        log_err("the log budget of uid %u: %s: %s", (unsigned)owner, path, strerror(err));
        return NULL;
    }
    log_budget *b = p;
    if (b->magic != LOG_BUDGET_MAGIC) { /* new: nothing used yet */
        __atomic_store_n(&b->used, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&b->cap, core.cfg.max_log_bytes_per_user, __ATOMIC_SEQ_CST);
        __atomic_store_n(&b->magic, LOG_BUDGET_MAGIC, __ATOMIC_SEQ_CST);
    }
    return b;
}

static void budget_unmap(log_budget *b)
{
    if (b)
        munmap(b, LOG_BUDGET_FILE_SIZE);
}

/* What the job's output files hold on disk (both formats): an ended job's as kept (its shim's end
 * record said it: job.h log_bytes), else looked at in its directory,
 * opened once (at the start this runs for every job kept: six whole paths each were the start's
 * largest cost with 100,000 jobs, bench/start_bigdb.py; the lookups themselves were next). */
static uint64_t output_bytes(const job *j)
{
    if (job_state_terminal(j->state) && j->log_bytes >= 0)
        return (uint64_t)j->log_bytes;
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    uint64_t sum = log_files_bytes(dfd);
    close(dfd);
    return sum;
}

typedef struct owner_sum {
    uid_t uid;
    uint64_t bytes;
} owner_sum;

static int cmp_owner(const void *a, const void *b)
{
    uid_t x = ((const owner_sum *)a)->uid, y = ((const owner_sum *)b)->uid;
    return x < y ? -1 : x > y;
}

void statedisk_budgets_init(void)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/logbudget", core.cfg.state_dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        log_err("the log budgets: create %s: %s; jobs.max_log_bytes_per_user is not enforced", dir, strerror(errno));
        return;
    }
    /* every job's output, summed per owner (sorted, then merged) */
    owner_sum *sums = xcalloc(core.njobs ? core.njobs : 1, sizeof *sums);
    /* (an ended job without its figure, from before schema 26 or an end whose shim said none, is
     * looked at each start, not written back: a row written again for each of 100,000 such jobs
     * is a transaction as large as the table, which a nearly full disk would refuse, and every
     * commit after it with it) */
    for (size_t i = 0; i < core.njobs; i++)
        sums[i] = (owner_sum){core.jobs[i]->owner_uid, output_bytes(core.jobs[i])};
    qsort(sums, core.njobs, sizeof *sums, cmp_owner);
    size_t n = 0;
    for (size_t i = 0; i < core.njobs; i++) {
        if (n && sums[n - 1].uid == sums[i].uid)
            sums[n - 1].bytes += sums[i].bytes;
        else
            sums[n++] = sums[i];
    }
    /* owners with a budget file and no job any more: nothing used */
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        unsigned uid;
        char tail[2];
        owner_sum key = {0};
        if (sscanf(de->d_name, "%u%1s", &uid, tail) != 1)
            continue;
        key.uid = (uid_t)uid;
        if (bsearch(&key, sums, n, sizeof *sums, cmp_owner))
            continue;
        log_budget *b = budget_map((uid_t)uid, false);
        if (b) {
            __atomic_store_n(&b->cap, core.cfg.max_log_bytes_per_user, __ATOMIC_SEQ_CST);
            __atomic_store_n(&b->used, 0, __ATOMIC_SEQ_CST);
        }
        budget_unmap(b);
    }
    if (d)
        closedir(d);
    /* a running job's shim may add to `used` between the sum and the store: what it wrote in
     * that moment is not counted (bounded by what one start's scan takes) */
    for (size_t i = 0; i < n; i++) {
        log_budget *b = budget_map(sums[i].uid, true);
        if (!b)
            continue;
        __atomic_store_n(&b->cap, core.cfg.max_log_bytes_per_user, __ATOMIC_SEQ_CST);
        __atomic_store_n(&b->used, sums[i].bytes, __ATOMIC_SEQ_CST);
        budget_unmap(b);
    }
    free(sums);
}

/* The owners' budgets mapped last, kept mapped: a job's start and end each needed the file
 * opened, mapped and unmapped (~40 us per job of the daemon's ~1 ms). An entry is used while
 * the path still names its file, whole (one stat, against open + fstat + mmap + close + munmap);
 * else the file is mapped again, as before. Evicted round-robin beyond BUDGET_CACHE owners. */
#define BUDGET_CACHE 32
static struct budget_cached {
    log_budget *b; /* NULL: a free entry */
    uid_t uid;
    dev_t dev;
    ino_t ino;
} budget_cache[BUDGET_CACHE];
static size_t budget_cache_next;

static log_budget *budget_get(uid_t owner, bool make)
{
    char path[700];
    budget_file(owner, path, sizeof path);
    struct stat st;
    bool whole = lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_blocks * 512 >= LOG_BUDGET_FILE_SIZE;
    struct budget_cached *c = NULL;
    for (size_t i = 0; i < BUDGET_CACHE && !c; i++)
        if (budget_cache[i].b && budget_cache[i].uid == owner)
            c = &budget_cache[i];
    if (c && whole && c->dev == st.st_dev && c->ino == st.st_ino)
        return c->b;
    if (!c) {
        c = &budget_cache[budget_cache_next];
        budget_cache_next = (budget_cache_next + 1) % BUDGET_CACHE;
    }
    budget_unmap(c->b);
    c->b = NULL;
    log_budget *b = budget_map(owner, make);
    if (!b || lstat(path, &st) < 0) {
        budget_unmap(b);
        return NULL;
    }
    *c = (struct budget_cached){b, owner, st.st_dev, st.st_ino};
    return b;
}

int statedisk_budget_path(uid_t owner, char *out, size_t len)
{
    if (!core.cfg.max_log_bytes_per_user)
        return -1;
    if (!budget_get(owner, true))
        return -1;
    budget_file(owner, out, len);
    return 0;
}

void statedisk_budget_release(const job *j)
{
    log_budget *b = budget_get(j->owner_uid, false);
    if (!b)
        return;
    uint64_t bytes = output_bytes(j), used = __atomic_load_n(&b->used, __ATOMIC_SEQ_CST);
    /* never below 0: a count made at start may have missed what a shim wrote meanwhile */
    while (!__atomic_compare_exchange_n(&b->used, &used, used > bytes ? used - bytes : 0, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}
