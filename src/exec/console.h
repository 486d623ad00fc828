/* A job's terminal (docs/api.md, "Interactive streams"): a pseudo-terminal made by the job's
 * init inside the job, on the job's own devpts instance (mounts.c mounts /dev/pts with
 * newinstance, /dev/ptmx pointing into it), as crun makes a container's console. Its master
 * goes to the shim over a unix socket (SCM_RIGHTS), which relays it (shim_term.h); its slave,
 * owned by the job's uid, becomes the command's stdin, stdout, stderr and controlling terminal.
 * Nothing of the host's terminals is reachable from the job. */
#ifndef JOBLET_CONSOLE_H
#define JOBLET_CONSOLE_H

#include <sys/types.h>

#include "../common/err.h"

/* In the init, after the pivot: opens the job's /dev/ptmx, unlocks it and opens its slave
 * (TIOCGPTPEER: no path lookup), given to uid/gid with mode 0620. Both close-on-exec. */
int console_open(uid_t uid, gid_t gid, int *master, int *slave, jerr *e);
/* Sends fd over the unix socket sock (SCM_RIGHTS, one byte of data). */
int console_send(int sock, int fd, jerr *e);
/* Receives an fd sent by console_send (blocks until it comes or sock ends). */
int console_recv(int sock, int *fd, jerr *e);
/* In the command's process, before exec: a session of its own whose controlling terminal is
 * slave, which becomes fds 0, 1 and 2. Makes only syscalls (the init's vfork child). */
int console_take(int slave, jerr *e);

#endif
