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

#ifdef MEMMON_KERNEL_6_12
/* What 6.12's kernel crate and bindings lack: shims with 7.x's names (src/bindings.rs). */
struct hrtimer;
struct poll_table_struct;
struct file;
struct wait_queue_head;
unsigned int memmon_raw_smp_processor_id(void);
void memmon_rcu_read_lock(void);
void memmon_rcu_read_unlock(void);
void memmon_poll_wait(struct file *filp, struct wait_queue_head *wait_address,
		      struct poll_table_struct *p);
void *rust_helper_vrealloc(const void *p, size_t size, gfp_t flags);
void memmon_hrtimer_setup(struct hrtimer *timer,
			  enum hrtimer_restart (*function)(struct hrtimer *),
			  clockid_t clock_id, enum hrtimer_mode mode);
#endif

#endif /* MEMMON_HELPERS_H */
