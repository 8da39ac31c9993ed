// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers linked into memmon.ko (as Binder links its C parts into
 * rust_binder.ko), so that one source builds for a kernel whose Rust helpers
 * do not wrap these inline functions.
 */

#include <linux/tracepoint.h>

#include "helpers.h"

/* Waits until no CPU runs a tracepoint probe unregistered before the call. */
void memmon_tracepoint_synchronize_unregister(void)
{
	tracepoint_synchronize_unregister();
}
