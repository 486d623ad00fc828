/* Admins: root and the members of admin_group (users.h). */
#include "users.h"

#include <grp.h>
#include <pwd.h>
#include <string.h>

#include "state.h"

bool users_is_admin(uid_t uid, gid_t gid)
{
    if (uid == 0)
        return true;
    if (!*core.cfg.admin_group)
        return false;
    struct group *g = getgrnam(core.cfg.admin_group);
    if (!g)
        return false;
    if (g->gr_gid == gid)
        return true;
    struct passwd *pw = getpwuid(uid);
    for (char **m = g->gr_mem; pw && m && *m; m++)
        if (!strcmp(*m, pw->pw_name))
            return true;
    return false;
}
