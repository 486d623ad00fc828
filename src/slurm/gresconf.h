/* The GPUs of a Slurm task as device nodes (gresconf.c): SLURM_STEP_GPUS / SLURM_JOB_GPUS are
 * positions in the node's gres.conf list of Name=gpu File= entries, in the order slurmd reads
 * them (lines in order, each File= expanded: "/dev/nvidia[0-3]", "/dev/nvidia0,/dev/nvidia2").
 * Lines with a NodeName= that does not name this node are left out. Pure: no I/O. */
#ifndef JOBLET_SLURM_GRESCONF_H
#define JOBLET_SLURM_GRESCONF_H

#include <stdbool.h>
#include <stddef.h>

#define GRESCONF_MAX 64     /* GPUs of one node */

/* Expands a Slurm host or file expression ("n[1-3,7]", "/dev/nvidia[00-03]", "a,b") into at
 * most max names written to out (each malloc'd): how many, -1 when malformed or too many. */
int gresconf_expand(const char *expr, char **out, int max);
/* The node's GPU device files from gres.conf's text, in slurmd's order: how many (each
 * malloc'd in out), -1 with why (a line it cannot read; more than GRESCONF_MAX). */
int gresconf_gpu_files(const char *text, const char *node, char **out, char *why, size_t whylen);
/* The device files of a list of positions ("0,2", "1-3"): how many, -1 with why (a position
 * past the list, a malformed list). out's strings are files' (not copied). */
int gresconf_pick(char *const *files, int nfiles, const char *positions, const char **out, char *why, size_t whylen);

#endif
