/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault injection for radiance-fuzz: the kernel's failslab, fail_usercopy
 * and fail_page_alloc, limited to stacks through radiance.ko, and each
 * thread's /proc/thread-self/fail-nth, which fails the n-th site the
 * thread reaches from then on. The fail-nth sweep (fail_nth.c) fails each
 * site of a program in turn; the fuzzing loop fails one site of a call now
 * and then, as syzkaller does, to reach the module's error paths.
 */
#ifndef RADIANCE_FUZZ_FAULT_H
#define RADIANCE_FUZZ_FAULT_H

#include "cover.h"

#define FAULT_SLAB (1u << 0)
#define FAULT_USERCOPY (1u << 1)
#define FAULT_PAGE (1u << 2)

/* Lets the fault types in `types` fail sites under radiance.ko's text, with
 * GFP_KERNEL allocations too and no stack dump per fault; the other types
 * never fail. 0, or -errno if debugfs lacks them. */
int fault_setup(const struct module_text *text, unsigned int types);
/* The calling thread's fail-nth file, or -errno. */
int fault_open(void);
/* Fails the n-th site the thread reaches next; 0 disarms. */
void fault_arm(int fd, unsigned int n);
/* After the step: 0 if its n-th site failed, else how many were left. */
int fault_left(int fd);

#endif
