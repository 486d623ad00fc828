/* Progress of a runtime build (rtprogress.h). mmdebstrap --verbose announces its phases with
 * "I: ..." lines and passes apt's and dpkg's output through; the helper joblet-runtime-build
 * adds its own "joblet: ..." lines. Within the download and install phases the packages moved
 * the bar: fetched ("Get:N", in the download phase and when apt fetches inside the chroot),
 * unpacked ("Unpacking "), set up ("Setting up ", which counts twice: it runs the scripts). */
#include "rtprogress.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct phase_row {
    const char *prefix;       /* the line starts with this */
    const char *phase;        /* what rnx shows */
    int percent;              /* where the bar is when the phase begins */
    int to;                   /* where it is when the phase's packages are all fetched or set up;
                               * 0: the phase has no count of its own */
} phase_row;

static const phase_row phases[] = {
    /* joblet-runtime-build, before and after the tool */
    {"joblet: extracting the cached build", "extracting the cached build", 5, 0},
    {"joblet: verifying", "verifying the tree", 60, 0},
    {"joblet: building", "starting", 1, 0},
    {"joblet: customizing the tree", "customizing the tree", 91, 0},
    {"joblet: listing the installed packages", "listing packages", 92, 0},
    {"joblet: hashing the tree", "hashing the tree", 93, 0},
    {"joblet: writing the cache", "writing the cache", 95, 0},
    {"joblet: extracting the archive", "extracting the archive", 5, 0},
    {"joblet: done", "done", 100, 0},
    /* mmdebstrap */
    {"I: running apt-get update", "updating package lists", 2, 0},
    {"I: downloading packages", "downloading packages", 5, 35},
    {"I: extracting archives", "extracting archives", 35, 0},
    {"I: installing essential packages", "installing essential packages", 40, 55},
    {"I: installing remaining packages", "installing packages", 55, 90},
    {"I: cleaning package lists", "cleaning up", 90, 0},
    {"I: success in", "tree built", 91, 0},
    /* debootstrap */
    {"I: Retrieving InRelease", "updating package lists", 2, 0},
    {"I: Retrieving Release", "updating package lists", 2, 0},
    {"I: Retrieving Packages", "updating package lists", 3, 0},
    {"I: Resolving dependencies", "resolving dependencies", 4, 0},
    {"I: Found additional", "resolving dependencies", 4, 0},
    {"I: Retrieving ", "downloading packages", 5, 0},
    {"I: Validating ", "downloading packages", 5, 0},
    {"I: Extracting ", "extracting archives", 35, 0},
    {"I: Installing core packages", "installing essential packages", 40, 0},
    {"I: Unpacking required packages", "installing packages", 45, 0},
    {"I: Configuring required packages", "installing packages", 55, 0},
    {"I: Unpacking the base system", "installing packages", 60, 0},
    {"I: Configuring the base system", "installing packages", 70, 0},
    {"I: Base system installed successfully", "tree built", 91, 0},
};

void rtprogress_init(rtprogress *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->phase, sizeof p->phase, "starting");
}

static void advance(rtprogress *p, int pct)
{
    if (pct > 100)
        pct = 100;
    if (pct > p->percent)
        p->percent = pct;
}

static int starts(const char *line, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && !memcmp(line, prefix, n);
}

void rtprogress_feed(rtprogress *p, const char *line, size_t len)
{
    for (size_t i = 0; i < sizeof phases / sizeof *phases; i++)
        if (starts(line, len, phases[i].prefix)) {
            if (phases[i].percent >= p->percent || !strcmp(phases[i].phase, p->phase)) {
                snprintf(p->phase, sizeof p->phase, "%s", phases[i].phase);
                advance(p, phases[i].percent);
            }
            p->from = phases[i].percent;
            p->to = phases[i].to;
            p->got = p->unpacked = p->set_up = 0;
            return;
        }
    char buf[128];
    size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
    memcpy(buf, line, n);
    buf[n] = 0;
    int k;
    /* apt: "0 upgraded, 89 newly installed, 0 to remove and 0 not upgraded." */
    if (sscanf(buf, "%*d upgraded, %d newly installed", &k) == 1 && k > 0) {
        p->total = k;
        p->got = p->unpacked = p->set_up = 0;
        return;
    }
    if (!p->to || !p->total)
        return;
    if (sscanf(buf, "Get:%d ", &k) == 1 && k > p->got)
        p->got = k > p->total ? p->total : k;
    else if (starts(line, len, "Unpacking ") && p->unpacked < p->total)
        p->unpacked++;
    else if (starts(line, len, "Setting up ") && p->set_up < p->total)
        p->set_up++;
    else
        return;
    bool download = !strcmp(p->phase, "downloading packages");
    /* units: a fetch 1 (when this phase fetches), an unpack 1, a set-up 2 */
    long units = download ? p->total : (long)p->total * (p->got ? 4 : 3);
    long done = download ? p->got : (long)p->got + p->unpacked + 2L * p->set_up;
    advance(p, p->from + (int)((p->to - p->from) * done / units));
}
