/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What memmon needs from the kernel's C headers beyond the kernel crate's
 * bindings (rust/bindings/bindings_helper.h): bindgen reads this file when the
 * module is built (see Kbuild) and generates only the items Kbuild allowlists;
 * every other type they name is the kernel crate's. The same source builds for
 * a kernel whose bindings have them and for one whose bindings do not
 * (Debian's stock kernel).
 */
#include <linux/binfmts.h>
#include <linux/kprobes.h>
#include <linux/proc_fs.h>
#include <linux/tracepoint.h>
#ifdef MEMMON_KERNEL_6_12
#include <linux/ftrace.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#endif
#ifdef MEMMON_MM_FAULT
#include <trace/events/mm_fault.h>
#endif

#include "helpers.h"
