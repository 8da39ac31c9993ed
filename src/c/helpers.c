// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers linked into memmon.ko (as Binder links its C parts into
 * rust_binder.ko), so that one source builds for a kernel whose Rust helpers
 * do not wrap these inline functions.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/rethook.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/utsname.h>

#include "helpers.h"

/* Waits until no CPU runs a tracepoint probe unregistered before the call. */
void memmon_tracepoint_synchronize_unregister(void)
{
	tracepoint_synchronize_unregister();
}

/*
 * Whether the running kernel is the build the module was made for. The release
 * is in the vermagic, which the module loader checks; with modversions off (as
 * in Debian's config) nothing tells apart two builds of one release, so a
 * module built with MEMMON_KERNEL_VERSION (scripts/stock/build-module: the
 * Debian version, e.g. "Debian 7.3.4-1~bpo13+1") also wants that string in
 * the running kernel's version (uname -v, /proc/version).
 */
bool memmon_kernel_matches(void)
{
#ifdef MEMMON_KERNEL_VERSION
	if (!strstr(init_utsname()->version, MEMMON_KERNEL_VERSION)) {
		pr_err("built for the kernel \"%s\", but this one is \"%s\" (%s): build memmon for it\n",
		       MEMMON_KERNEL_VERSION, init_utsname()->version,
		       init_utsname()->release);
		return false;
	}
#endif
	return true;
}

#ifndef CONFIG_KRETPROBE_ON_RETHOOK
#error "memmon finds a kretprobe's pending calls through rethook (CONFIG_KRETPROBE_ON_RETHOOK)"
#endif

/* Pending returns of one task followed at most, innermost first. */
#define MEMMON_RETHOOK_DEPTH 16

/*
 * The data area of the innermost pending call of @rp in the current task (one
 * whose entry handler returned 0), or NULL. The current task's list of pending
 * returns is changed only by the task itself: pushed by rethook_hook() at entry,
 * popped by the trampoline at return, both in its own context (an interrupt
 * pushes and pops its own entries before it returns).
 */
void *memmon_kretprobe_current_data(struct kretprobe *rp)
{
	struct rethook *rh = READ_ONCE(rp->rh);
	struct llist_node *node;
	int depth = 0;

	if (!in_task() || !rh)
		return NULL;
	for (node = READ_ONCE(current->rethooks.first);
	     node && depth < MEMMON_RETHOOK_DEPTH;
	     node = READ_ONCE(node->next), depth++) {
		struct rethook_node *rhn =
			container_of(node, struct rethook_node, llist);

		if (rhn->rethook == rh)
			return container_of(rhn, struct kretprobe_instance, node)->data;
	}
	return NULL;
}

/* Pages in @folio. */
unsigned long memmon_folio_nr_pages(const struct folio *folio)
{
	return folio_nr_pages(folio);
}
