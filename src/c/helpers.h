/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers linked into memmon.ko, for what the Rust side cannot call directly
 * (inline functions), declared here for the C file and for the module's own
 * bindgen run (src/c/bindings.h).
 */
#ifndef MEMMON_HELPERS_H
#define MEMMON_HELPERS_H

#include <linux/types.h>

struct cgroup;
struct task_struct;

void memmon_tracepoint_synchronize_unregister(void);
bool memmon_kernel_matches(void);

struct folio;
unsigned long memmon_folio_nr_pages(const struct folio *folio);
unsigned long memmon_current_task_size(void);
unsigned long memmon_current_user_fsbase(void);
bool memmon_read_user_words(unsigned long addr, unsigned long size,
			    const u16 *offsets, u64 *words, unsigned int count);

struct ftrace_regs;
struct pt_regs;
struct pt_regs *memmon_ftrace_regs_pt_regs(struct ftrace_regs *fregs);
void memmon_ftrace_regs_set_ip(struct ftrace_regs *fregs, unsigned long ip);
unsigned long memmon_ftrace_regs_arg(struct ftrace_regs *fregs, unsigned int n);
struct pt_regs *memmon_task_pt_regs(struct task_struct *task);
bool memmon_within_this_module(unsigned long addr);
void memmon_preempt_disable(void);
void memmon_preempt_enable(void);
bool memmon_in_task(void);

int memmon_cgroup_get_dir(const char *path, struct cgroup **cgrp);
void memmon_cgroup_get(struct cgroup *cgrp);
void memmon_cgroup_put(struct cgroup *cgrp);
bool memmon_cgroup_is_dead(struct cgroup *cgrp);
bool memmon_cgroup_on_dfl(const struct cgroup *cgrp);
bool memmon_cgroup_has_process(struct cgroup *cgrp, struct task_struct *task);
size_t memmon_process_cgroup_path_tail(struct task_struct *task, char *buf,
				       size_t len, u64 *id, bool *cut);
void memmon_for_each_process(void (*fn)(void *data, struct task_struct *task),
			     void *data);

#endif /* MEMMON_HELPERS_H */
