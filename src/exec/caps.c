#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/util.h"
#include "isolate.h"

static int last = -1;

int caps_last_cap(void)
{
    if (last < 0) {
        char *s = read_file("/proc/sys/kernel/cap_last_cap", NULL);
        int n = s ? atoi(s) : 40;
        free(s);
        last = n > 0 ? n : 40;
    }
    return last;
}

int caps_drop_and_setuid(uid_t uid, gid_t gid, const gid_t *extra, size_t nextra, jerr *e)
{
    /* The bounding set must go first: dropping it needs CAP_SETPCAP, which setuid removes. */
    int last_c = caps_last_cap();
    for (int c = 0; c <= last_c; c++)
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
            return jerr_sys(e, "drop capability %d from the bounding set", c);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return jerr_sys(e, "clear ambient capabilities");
    gid_t groups[1 + SPEC_GROUPS_MAX] = {gid};
    size_t n = 1;
    for (size_t i = 0; i < nextra && n < ARRAY_LEN(groups); i++)
        if (extra[i] != gid)
            groups[n++] = extra[i];
    if (setgroups(n, groups) < 0)
        return jerr_sys(e, "setgroups %u and %zu more", (unsigned)gid, n - 1);
    if (setresgid(gid, gid, gid) < 0)
        return jerr_sys(e, "setresgid %u", (unsigned)gid);
    if (setresuid(uid, uid, uid) < 0)
        return jerr_sys(e, "setresuid %u", (unsigned)uid);
    /* uid 0 keeps its capabilities across setresuid: clear them explicitly. */
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capset, &hdr, data) < 0)
        return jerr_sys(e, "clear capabilities");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return jerr_sys(e, "set no_new_privs");
    return 0;
}
