#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "isolate.h"

static int loopback_up(jerr *e)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return jerr_sys(e, "socket for loopback setup");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int rc = 0;
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
        rc = jerr_sys(e, "read flags of lo");
    } else {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
            rc = jerr_sys(e, "bring lo up");
    }
    close(fd);
    return rc;
}

int ns_setup(const job_spec *s, jerr *e)
{
    if (sethostname(s->hostname, strlen(s->hostname)) < 0)
        return jerr_sys(e, "sethostname %s", s->hostname);
    if (!s->net_host && loopback_up(e) < 0)
        return -1;
    return 0;
}
