/* The daemon's own counters and histograms (counters.h). Guarded by a mutex: the metrics
 * listener's thread reads them while the loop thread counts. */
#include "counters.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../common/util.h"

/* The scheduler runs in microseconds to milliseconds; a slow one is worth seeing. */
static const double sched_le[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                  0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};
/* From submission to running: a free machine starts a job in well under a second, a busy
 * one queues it for minutes or hours. */
static const double start_le[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 14400, 86400};

/* A turn of the loop is microseconds; every request waits for the turn before its own, so a
 * turn of a tenth of a second is one every user felt. */
static const double turn_le[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                 0.05,   0.1,     0.25,   0.5,   1,      2.5,   5};

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "other"};
#define NMETHODS (sizeof methods / sizeof *methods)
#define NCODES 600

static struct {
    pthread_mutex_t mu;
    bool init;
    prom_hist sched, start, turn;
    uint64_t requests[NMETHODS][NCODES]; /* [method][code]; code 0 = out of range */
} counters = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void lock_stats(void)
{
    pthread_mutex_lock(&counters.mu);
    if (!counters.init) {
        prom_hist_init(&counters.sched, sched_le, ARRAY_LEN(sched_le));
        prom_hist_init(&counters.start, start_le, ARRAY_LEN(start_le));
        prom_hist_init(&counters.turn, turn_le, ARRAY_LEN(turn_le));
        counters.init = true;
    }
}

void counters_request(const char *method, unsigned code)
{
    size_t m = NMETHODS - 1;
    for (size_t k = 0; method && k < NMETHODS - 1; k++)
        if (!strcmp(method, methods[k]))
            m = k;
    lock_stats();
    counters.requests[m][code >= 100 && code < NCODES ? code : 0]++;
    pthread_mutex_unlock(&counters.mu);
}

void counters_schedule(double seconds)
{
    lock_stats();
    prom_hist_observe(&counters.sched, seconds);
    pthread_mutex_unlock(&counters.mu);
}

void counters_start(double seconds)
{
    lock_stats();
    prom_hist_observe(&counters.start, seconds);
    pthread_mutex_unlock(&counters.mu);
}

void counters_loop_turn(double seconds)
{
    lock_stats();
    prom_hist_observe(&counters.turn, seconds);
    pthread_mutex_unlock(&counters.mu);
}

void counters_write(prom_buf *b)
{
    prom_buf l = {0};
    lock_stats();
    prom_hist_write(b, "joblet_schedule_duration_seconds", "Time one run of the scheduler took", NULL, &counters.sched);
    prom_hist_write(b, "joblet_job_start_latency_seconds",
                    "From a job's submission (or its scheduled time) until it ran", NULL, &counters.start);
    prom_hist_write(b, "joblet_loop_turn_duration_seconds",
                    "Turns of the daemon's one loop, from its wake to its next wait: every request waits for "
                    "the turn before its own", NULL, &counters.turn);
    bool shown = false;
    for (size_t m = 0; m < NMETHODS; m++)
        for (unsigned c = 0; c < NCODES; c++)
            if (counters.requests[m][c]) {
                char code[8];
                snprintf(code, sizeof code, "%u", c);
                prom_label(&l, "method", methods[m]);
                prom_label(&l, "code", code);
                if (!shown)
                    prom_family(b, "joblet_api_requests_total", "counter",
                                "API requests answered, by method and HTTP status code");
                shown = true;
                prom_sample_u(b, "joblet_api_requests_total", l.p, counters.requests[m][c]);
                prom_free(&l);
            }
    pthread_mutex_unlock(&counters.mu);
}
