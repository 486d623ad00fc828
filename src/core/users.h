/* Who the daemon's callers are, beyond their uid (users.c). */
#ifndef JOBLET_USERS_H
#define JOBLET_USERS_H

#include <stdbool.h>
#include <sys/types.h>

/* root, or a member of admin_group (as primary group or listed member). */
bool users_is_admin(uid_t uid, gid_t gid);

#endif
