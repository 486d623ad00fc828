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
#define SHIM_ATTACH   "attach.sock"  /* a job with a terminal: where joblet attaches (shim_term.h) */
#define SHIM_NOTIFY_FD 3             /* optional pipe to the daemon: "S <pid> <ms>\n", "E\n", and
                                      * "T\n" when a terminal job's SHIM_ATTACH takes clients */
#define SHIM_DEVFILTER_FD 4          /* optional: loaded eBPF filter for the default devices */
#define SHIM_SPEC_FD  5              /* the job spec (spec.h), a memfd written by the daemon */
#define SHIM_STDIO_FD 6              /* with the spec's stdio_given: the job's stdin here, its
                                      * stdout at 7, its stderr at 8 */

#endif
