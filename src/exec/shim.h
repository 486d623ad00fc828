/* Files the shim keeps in a job's directory; the daemon reads the same names. */
#ifndef JOBLET_SHIM_H
#define JOBLET_SHIM_H

#define SHIM_STARTED  "started"      /* "<init pid> <start ms>" once the command runs */
#define SHIM_STATUS   "status.json"  /* how the job ended; written once, atomically */
/* the job's output: <stream>.data and <stream>.idx (logwriter.h); <stream>.log for jobs
 * written before that format */
#define SHIM_STDOUT_LEGACY "stdout.log"
#define SHIM_STDERR_LEGACY "stderr.log"
#define SHIM_LOG      "shim.log"     /* the shim's own diagnostics */
#define SHIM_WORK_COPIED "work-copied" /* an array task: its array's files are in /work (workcopy.h) */
#define SHIM_WARNED   "warned"       /* a line "<signal> <limit s> <ms>" each time --signal's signal
                                      * was sent, appended before the "W" line; joblet records
                                      * each in the job's history and removes the file (a joblet
                                      * down then, or restarted since, has no pipe: the file keeps
                                      * the warning for it) */
#define SHIM_ATTACH   "attach.sock"  /* a job with a terminal: where joblet attaches (shim_term.h) */
#define SHIM_NOTIFY_FD 3             /* optional pipe to the daemon: "S <pid> <ms>\n", "E\n",
                                      * "T\n" when a terminal job's SHIM_ATTACH takes clients, and
                                      * "W <signal> <limit s>\n" when --signal's signal was sent.
                                      * A socket pair (joblet's): the other way, joblet writes
                                      * SHIM_GO once the database holds the start (the commit
                                      * that names this shim); the shim runs no command before */
#define SHIM_GO 'G'
/* A gated shim whose joblet went away before its SHIM_GO (the end of the socket pair, nothing
 * read): the command never ran; status.json says this reason, and the job waits to start again
 * (the next joblet starts it; it is not an end). */
#define SHIM_NOT_RUN "not_run"
#define SHIM_DEVFILTER_FD 4          /* optional: loaded eBPF filter for the default devices */
#define SHIM_SPEC_FD  5              /* the job spec (spec.h), a memfd written by the daemon */
#define SHIM_STDIO_FD 6              /* with the spec's stdio_given: the job's stdin here, its
                                      * stdout at 7, its stderr at 8 */
/* The word joblet gives the shim for the run-time limit: the limit in seconds of run time (0
 * none) in the low 32 bits, and SHIM_LIMIT_SUSPENDED while the job is frozen: its time then
 * stands still (suspended time does not count against the limit). Each word carries the whole
 * state. joblet writes it in decimal to SHIM_LIMIT (atomically) and then sigqueues SIGUSR2 with
 * it as the 64-bit si_value; the shim takes the file's word on each SIGUSR2, since instances of
 * a signal pending at once are one (a quick suspend and resume must not lose the resume), and
 * the signal's own when there is no file. */
/* joblet's word to pass a signal on to every process of the job (rnx job kill --signal): this
 * real-time signal, queued (SI_QUEUE) with the signal's number as its si_value. Real-time
 * signals queue, so two sent at once are both passed on and none is merged with a stop or a
 * kill; shims are born with it blocked (zygote.c), so one sent while a shim starts waits for
 * it. The shim sends the signal to the job's init, which passes it on to every process. */
#define SHIM_SIGNAL_FORWARD (SIGRTMIN + 1)
/* ... with this bit in the word: to every process of the job (Slurm's scancel --full); without
 * it, to the job's command alone (docker kill --signal), so that a wrapper script that does not
 * trap the signal is not ended by it while the program it runs writes its checkpoint. */
#define SHIM_SIGNAL_ALL 0x100
/* How the shim asks the init for the command alone: the signal sigqueue'd to the init with this
 * value (a plain kill of the init, as a stop's SIGTERM, goes to every process). */
#define SHIM_SIGNAL_COMMAND 0x434d44
#define SHIM_LIMIT           "runtime_limit"
#define SHIM_LIMIT_SECONDS   0xffffffffULL
#define SHIM_LIMIT_SUSPENDED (1ULL << 32)

#endif
