/* Volumes (volumes.h). */
#include "volumes.h"

int volumes_check(const job_req *req, uid_t owner, gid_t gid, jerr *e)
{
    for (size_t i = 0; i < req->nvolumes; i++) {
        char name[80];
        bool ro;
        if (jobreq_volume_parse(req->volumes[i], name, sizeof name, &ro) < 0)
            return jerr_field(e, "volumes", "volumes: '%.80s' is not a volume name", req->volumes[i]);
        return jerr_field(e, "volumes", "volumes: no volume '%s' on this machine (rnx volume list)", name);
    }
    return 0;
}
