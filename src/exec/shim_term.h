/* The shim's side of a job's terminal (docs/api.md, "Interactive streams"): it listens on
 * SHIM_ATTACH in the job's directory (root only: joblet connects there for each client that
 * attaches), and relays frames (common/termframe.h) between the attached and the job: the pty
 * master (a tty job: console.h) or the job's stdin pipe one way, the job's output the other
 * way. The job's output goes to its log as before; what an attached client cannot take as fast
 * as the job writes is dropped for that client alone (it is told, once it takes again: a line
 * on its terminal), so a slow client never slows the job nor the others.
 *
 * At most SHIM_TERM_MAX clients are attached at once (joblet bounds them lower: jobs.max_attachers).
 * Each connection begins with joblet's hello (common/termframe.h): who the client is and whether
 * it asked to type. The first, in the order they attached, that asked to type is the typist (its
 * stdin, resize and close frames reach the job); the others watch and are told who types, and
 * the oldest that asked to type types once the typist leaves (it is told so). The same person
 * (joblet's hello's words) attaching again while an earlier attach of theirs types takes its place
 * in that order, and types at once (the earlier watches, and is told so). A tty job's last
 * output (common/termring.h) is replayed to each client first. The exit frame ends every
 * client's stream. */
#ifndef JOBLET_SHIM_TERM_H
#define JOBLET_SHIM_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

#define SHIM_TERM_MAX 16 /* clients at once; joblet's bound (jobs.max_attachers) is at most this */
#define SHIM_TERM_WHO 128 /* the bytes of a client's name kept (the hello's, whole: joblet sends at most 127) */

typedef struct shim_term shim_term;

/* Listens on SHIM_ATTACH in the job's directory dirfd. tty: the job's input is a terminal
 * (resize applies; close does nothing), else a pipe (close ends it). NULL with e set. */
shim_term *shim_term_new(int dirfd, bool tty, jerr *e);
/* dirfd -1: no listener (joblet-exec: its one client is given by shim_term_add). */
/* Takes a connected client (a socket to joblet); past SHIM_TERM_MAX it is closed. */
void shim_term_add(shim_term *t, int fd);
/* How many clients are attached now. */
size_t shim_term_clients(const shim_term *t);
/* Where the job's input goes: the pty master (a dup of it) or the pipe's write end; taken. */
void shim_term_set_input(shim_term *t, int fd);
/* Before the command starts: waits until a client attached (a tty job: and its first frame came,
 * a terminal client sends its size first; or 2 s after it attached), or wait_s seconds in all,
 * or until stop_fd (a signalfd of the stop and kill signals, not read here) is ready. */
void shim_term_await(shim_term *t, uint64_t wait_s, int stop_fd);
/* The fd to watch for EPOLLIN (an epoll of its own); shim_term_run when it is ready. */
int shim_term_fd(const shim_term *t);
void shim_term_run(shim_term *t);
/* A piece of the job's output (channel 1 stdout, 2 stderr) to every client. */
void shim_term_output(shim_term *t, int ch, const char *p, size_t n);
/* Whether every client's queue takes n more bytes of output now, none dropped (joblet-exec reads
 * its process's output only then: the process waits for its client, exec_main.c). */
bool shim_term_room(const shim_term *t, size_t n);
/* The job has ended with code (msg, may be NULL: why it did not start, on stderr first): the
 * exit frame to every client, at most 2 s for them to take what is left, then every client
 * closed, the socket removed, t freed. */
void shim_term_finish(shim_term *t, int code, const char *msg);

#endif
