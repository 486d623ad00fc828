/* cgroup2 device filter: a BPF_PROG_TYPE_CGROUP_DEVICE program assembled by hand (no libbpf)
 * that denies every device access except those the rules allow. */
#ifndef JOBLET_BPFDEV_H
#define JOBLET_BPFDEV_H

#include <stddef.h>

#include "../common/err.h"
#include "cgroup.h"

struct bpf_insn;

/* type 'c'/'b'; major 0..4095 or -1; minor 0..1048575 or -1; access a non-empty subset of "rwm". */
int bpfdev_check_rule(const cg_dev_rule *r, jerr *e);

/* Assembles the program for rules[] into *insns (caller frees), *cnt instructions. */
int bpfdev_build(const cg_dev_rule *rules, size_t n, struct bpf_insn **insns, size_t *cnt, jerr *e);

/* Loads the program and attaches it to the cgroup2 directory dir with BPF_F_ALLOW_MULTI, so
 * programs that the job might attach below can only narrow access, never widen it. Meant for a
 * fresh cgroup: calling it again adds a second filter, and a device must then pass both. */
int bpfdev_attach(const char *dir, const cg_dev_rule *rules, size_t n, jerr *e);
/* The same in two steps, so one loaded program can serve many cgroups: the daemon loads the
 * filter for the default devices once and every job attaches it (what names the program in
 * errors). */
int bpfdev_load(const cg_dev_rule *rules, size_t n, const char *what, jerr *e);
int bpfdev_attach_prog(const char *dir, int prog, jerr *e);
/* Detaches that program from dir again (a cgroup joblet did not make: cgroup.h, delegated);
 * 0 when dir is gone. */
int bpfdev_detach_prog(const char *dir, int prog, jerr *e);

#endif
