/* GET /v1/events: the console's live feed, as server-sent events (text/event-stream).
 *
 * Events are kept, already written in the wire format, in one ring of EVENTS_RING entries shared
 * by every stream; a stream holds only its place in the ring. A stream that falls further behind
 * than EVENTS_BEHIND_MAX (a client that stopped reading) loses its place and gets one `resync`
 * event instead: it reloads the state with the JSON API. So memory does not grow with the number
 * of streams or the speed of their readers. Streams are bounded per uid
 * (events.max_streams_per_user, root exempt) and in total (events.max_streams).
 *
 * A stream is a pull source (common/pull.h): with nothing to send it waits, and a
 * publication or a ping every EVENTS_PING_S seconds calls its notify (api/stream.c holds the
 * connection meanwhile, and notices a client hanging up). Who
 * sees what: an event has an owner uid (a job's, a workflow's) or none (GPUs); a stream of a
 * non-root uid gets only its own and the owner-less ones, as GET /v1/jobs shows. */
#ifndef JOBLET_EVENTS_H
#define JOBLET_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "authz.h"

#include "../common/pull.h"

#define EVENTS_RING 1024        /* events kept, for every stream together */
#define EVENTS_BEHIND_MAX 512   /* a stream this far behind is resynced */
#define EVENTS_TEXT_MAX 4096    /* the most bytes of one event's data */
#define EVENTS_PING_S 15        /* a comment line this often keeps idle streams (and proxies) open */

/* Publishes one event to every stream that may see it: kind is the SSE event name ("job",
 * "workflow", "gpu", "gpu_sample"), data one line of JSON, owner the uid it belongs to or -1. */
void events_publish(const char *kind, int64_t owner, const char *data);
/* The same event as others may see it: to every stream that does not see owner's events (one
 * that does gets events_publish's, with what only they may see: a GPU's holder's job id). */
void events_publish_others(const char *kind, uid_t owner, const char *data);
typedef struct events_sub events_sub;

/* A stream for a caller: 429 past the caller's bound, 503 past the total one. last_id: the
 * Last-Event-ID the client sent (an EventSource reconnecting), 0 for none. */
events_sub *events_subscribe(const caller *who, uint64_t last_id, jerr *e);
void events_set_notify(events_sub *s, pull_notify_fn notify, void *arg);
/* Up to max bytes of text/event-stream (whole events), or 0 with *st (common/pull.h). */
size_t events_read(events_sub *s, char *buf, size_t max, enum pull_state *st);
void events_unsubscribe(events_sub *s);
/* Whether any stream is open (publish.c skips its scans when none is). */
bool events_listening(void);
/* Streams open now (all, and of one uid) and events published so far. */
unsigned events_streams(void);
uint64_t events_published(void);
/* The daemon stops: every stream ends. */
void events_close_all(void);

#endif
