/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers linked into memmon.ko, for what the Rust side cannot call directly
 * (inline functions), declared here for the C file and for the module's own
 * bindgen run (src/c/bindings.h).
 */
#ifndef MEMMON_HELPERS_H
#define MEMMON_HELPERS_H

#include <linux/types.h>

void memmon_tracepoint_synchronize_unregister(void);
bool memmon_kernel_matches(void);

struct folio;
struct kretprobe;
void *memmon_kretprobe_current_data(struct kretprobe *rp);
unsigned long memmon_folio_nr_pages(const struct folio *folio);

#endif /* MEMMON_HELPERS_H */
