/* Reads a job's output from its files (the format of logwriter.h: <stream>.data and
 * <stream>.idx, or the old <stream>.log, one record per line) as pieces in the order the shim
 * received them: both streams merged by sequence number (the old format: by time). Where a
 * replay starts: `since`, a binary search of each index, and `tail`, a walk back through both
 * streams for the last N lines, done in slices of an explicit budget so that a caller on an
 * event loop can give other work a turn in between.
 *
 * Pure: it reads only through the descriptors it is given (opening, creating and watching the
 * files is the caller's: core/job_logs.c), keeps no global, knows no job, loop nor encoding.
 * A piece is a stretch of one entry's bytes (at an offset of .data), a record of the old
 * format or the cap note (in memory); the caller copies what it can of it (logreader_read)
 * and says how much it sent (logreader_take). Following a running job is asking again once
 * the files have grown. */
#ifndef JOBLET_LOGREADER_H
#define JOBLET_LOGREADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logwriter.h"

#define LOGREADER_STDOUT 0
#define LOGREADER_STDERR 1

/* How much of .data one slice of the tail search reads (what a caller gives logreader_tail_step
 * per turn of its loop); each index entry it reads counts as LOGREADER_ENTRY_COST bytes. */
#define LOGREADER_TAIL_SLICE (4u << 20)
/* What reading one index entry costs, counted in bytes of .data read: the tail search's budget
 * and a caller's budget for pieces (logreader_entries) alike. An entry is a pread of 32 bytes
 * and, for a piece, one more of its bytes: ~2-4 us where a pread of 256 KiB took ~120 us, so
 * an entry weighs as much as ~4 KiB of data (at 512 a turn of 16,384 one-byte pieces took
 * 65 ms). */
#define LOGREADER_ENTRY_COST 4096

/* The next piece to send. */
typedef struct logreader_piece {
    int stream;           /* LOGREADER_STDOUT, LOGREADER_STDERR */
    int64_t ts_ns;        /* when the shim read it (the old format: the record's time) */
    uint64_t seq;         /* 0 for the old format */
    const char *mem;      /* its bytes in memory (an old record, the note), or NULL: at off of .data */
    uint64_t off;
    size_t len;
    bool note;            /* the cap note (log_stop_note), not the job's bytes */
} logreader_piece;

/* One stream. The fields are the module's. */
typedef struct logreader_stream {
    const char *name;     /* "stdout", "stderr" */
    bool on;              /* asked for */
    /* the format of logwriter.h */
    int data_fd, idx_fd;
    uint64_t next;        /* the entry the next byte belongs to */
    uint64_t pos;         /* offset in .data of the next byte to send */
    log_index_entry cur;
    bool have;            /* cur is entry `next` */
    bool noted;           /* the cap note was sent */
    char note[400];
    /* the old format: one record per line, read in order */
    int legacy_fd;
    char *buf;
    size_t len, cap;
    log_record rec;
    size_t rec_bytes, rec_off;
    bool rec_have;
} logreader_stream;

typedef struct logreader {
    logreader_stream s[2];
    int64_t since_ns;           /* old format: records before it are skipped */
    uint64_t cap, user_cap;     /* for the cap note: jobs.max_log_bytes (the job's), ..._per_user */
    struct logreader_tail *tail; /* the tail search, while it is not over */
    uint64_t entries;           /* index entries (old records) logreader_next has read */
} logreader;

/* An empty reader: no stream on. cap, user_cap: what the cap note names. */
void logreader_init(logreader *r, uint64_t cap, uint64_t user_cap);
/* Turns stream i on, reading it from these descriptors, which become the reader's (closed by
 * logreader_free; -1: none). Either data_fd and idx_fd (the format of logwriter.h) or
 * legacy_fd (<stream>.log); a stream with none reads as empty. */
void logreader_open(logreader *r, int i, int data_fd, int idx_fd, int legacy_fd);
/* Whether a stream that is on is in the old format (which has no tail). */
bool logreader_legacy(const logreader *r);
/* Only what was written at or after since_ns (0: all): each stream starts at its first entry
 * at or after it. Call once, after logreader_open and before anything else. */
void logreader_since(logreader *r, int64_t since_ns);

/* Only the last n lines of the streams that are on, counted from where they start now (since):
 * a line belongs where it ends, its newline or the end of its stream; walking back through
 * both streams in the shim's order, the n-th such end is the cut, and each stream then starts
 * just after its last newline before the cut. Fewer lines than n: all of them. n == 0: from
 * the streams' ends. Not for the old format. The search runs in logreader_tail_step. */
void logreader_tail(logreader *r, uint64_t n);
/* Whether a tail search is set and not over. */
bool logreader_seeking(const logreader *r);
/* One slice of the tail search, reading about *budget bytes (> 0; what is left stays in it):
 * true when it is over (or there is none), and the pieces start where it put them. The
 * answer does not depend on the budget. */
bool logreader_tail_step(logreader *r, uint64_t *budget);

/* The next piece across the streams that are on, if there is one now. The tail search must be
 * over. */
bool logreader_next(logreader *r, logreader_piece *p);
/* How many index entries (records of the old format) logreader_next has read so far: a piece
 * of one byte costs an entry as well, so a caller on a loop counts these (at
 * LOGREADER_ENTRY_COST each) with the bytes it sends, and stops for a turn when its share is
 * spent (a log of one-byte writes is one entry a byte). */
uint64_t logreader_entries(const logreader *r);
/* Copies up to n bytes of p into dst: how many (0: the file is shorter than its index says,
 * which only a torn write can cause). */
size_t logreader_read(const logreader *r, const logreader_piece *p, char *dst, size_t n);
/* n bytes of p (what logreader_next gave last for its stream) were sent. */
void logreader_take(logreader *r, const logreader_piece *p, size_t n);

/* Stream i whole (no since, no tail): its .data descriptor, now the caller's, with the
 * length the index commits (*len) and whether the stream was capped (*capped). -1 when it
 * must be read piece by piece (the old format, no file, an unreadable index). */
int logreader_whole(logreader *r, int i, uint64_t *len, bool *capped);
/* Closes the descriptors and frees the reader's memory (not r itself). */
void logreader_free(logreader *r);

#endif
