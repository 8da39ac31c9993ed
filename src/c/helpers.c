// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers linked into memmon.ko (as Binder links its C parts into
 * rust_binder.ko), so that one source builds for a kernel whose Rust helpers
 * do not wrap these inline functions.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/namei.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/rcupdate.h>
#include <linux/rethook.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>

#if defined(CONFIG_X86_64)
#include <asm/fsgsbase.h>
#elif defined(CONFIG_ARM64)
#include <asm/sysreg.h>
#else
#error "memmon: x86_64 and arm64 only"
#endif

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

/*
 * The end of the current task's user address space, exclusive: TASK_SIZE,
 * which on x86_64 is TASK_SIZE_MAX (one page below 2^47 with 4-level page
 * tables, below 2^56 with 5-level ones) or, for a 32-bit task, the end of its
 * 4 GiB; on arm64 1 << vabits_actual (52 with LPA2 on a CPU that has it, else
 * 48 or 39).
 */
unsigned long memmon_current_task_size(void)
{
	return TASK_SIZE;
}

/*
 * The current task's user thread pointer (where glibc keeps its TLS and
 * `pthread_self()`): on x86_64 its FS base, on arm64 TPIDR_EL0. In a fault or
 * system call from user mode the CPU still holds it: the kernel runs with its
 * own GS (x86_64) or TPIDR_EL1 (arm64), and switches the user's only when it
 * switches tasks. Read from the CPU rather than from the task's thread
 * struct, which is only saved at a task switch.
 */
unsigned long memmon_current_user_fsbase(void)
{
#if defined(CONFIG_X86_64)
	return x86_fsbase_read_cpu();
#elif defined(CONFIG_ARM64)
	return read_sysreg(tpidr_el0);
#endif
}

/* The user registers saved at the top of @task's kernel stack. */
struct pt_regs *memmon_task_pt_regs(struct task_struct *task)
{
	return task_pt_regs(task);
}

/*
 * Reads @count words of the current task's user memory, the one at @addr +
 * @offsets[i] into @words[i], with page faults disabled: as
 * copy_from_user_nofault() does, but each word with one user load inside one
 * user access section instead of a copy of the whole range. Every offset must
 * be at most @size - 8; an access outside [@addr, @addr + @size) is refused.
 * Returns false, and @words unspecified, where a word is not mapped and
 * readable user memory, and in NMI context or a task without a user address
 * space. The caller must run in a user task whose mm is the one loaded (its
 * page faults and system calls): copy_from_user_nofault() checks that with
 * nmi_uaccess_okay(), which modules cannot call. Callable in atomic context.
 */
bool memmon_read_user_words(unsigned long addr, unsigned long size,
			    const u16 *offsets, u64 *words, unsigned int count)
{
	const u8 __user *base = (const u8 __user *)addr;
	unsigned int i;

	if (in_nmi() || !current->mm || (current->flags & PF_KTHREAD) ||
	    size < sizeof(u64) || !__access_ok(base, size))
		return false;
	for (i = 0; i < count; i++) {
		if (offsets[i] > size - sizeof(u64))
			return false;
	}
	pagefault_disable();
#ifdef MEMMON_KERNEL_6_12
	/* 6.12 has no scoped_user_read_access_size(): the same, unscoped. */
	if (!user_read_access_begin(base, size))
		goto fault_noend;
	for (i = 0; i < count; i++)
		unsafe_get_user(words[i], (const u64 __user *)(base + offsets[i]),
				fault);
	user_read_access_end();
	pagefault_enable();
	return true;
fault:
	user_read_access_end();
fault_noend:
	pagefault_enable();
	return false;
#else
	scoped_user_read_access_size(base, size, fault) {
		for (i = 0; i < count; i++)
			unsafe_get_user(words[i],
					(const u64 __user *)(base + offsets[i]),
					fault);
	}
	pagefault_enable();
	return true;
fault:
	pagefault_enable();
	return false;
#endif
}

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_ARGS
/*
 * Argument @n of the function an ftrace callback was called for, from the
 * registers ftrace saved (arm64's struct ftrace_regs is not a struct pt_regs).
 */
unsigned long memmon_ftrace_regs_arg(struct ftrace_regs *fregs, unsigned int n)
{
	return ftrace_regs_get_argument(fregs, n);
}

#ifdef CONFIG_X86_64
/* 6.12's x86_64 ftrace_regs holds a pt_regs too, without the Kconfig symbol. */
#if !defined(CONFIG_HAVE_FTRACE_REGS_HAVING_PT_REGS) && !defined(MEMMON_KERNEL_6_12)
#error "memmon reads an ftrace callback's registers on x86_64 as a struct pt_regs (CONFIG_HAVE_FTRACE_REGS_HAVING_PT_REGS)"
#endif

/*
 * The registers an ftrace callback was given, as a struct pt_regs (x86_64's
 * ftrace_regs holds one): without FTRACE_OPS_FL_SAVE_REGS only the argument
 * registers, the return value register, the frame pointer, the stack pointer
 * and the instruction pointer are saved; the others are not the caller's.
 */
struct pt_regs *memmon_ftrace_regs_pt_regs(struct ftrace_regs *fregs)
{
	return &arch_ftrace_regs(fregs)->regs;
}
#endif /* CONFIG_X86_64 */

/*
 * Where the hooked function's entry continues once the callback returns
 * (FTRACE_OPS_FL_IPMODIFY).
 */
void memmon_ftrace_regs_set_ip(struct ftrace_regs *fregs, unsigned long ip)
{
	ftrace_regs_set_instruction_pointer(fregs, ip);
}
#else
/*
 * No ftrace callback is ever registered without dynamic ftrace
 * (src/kernel_ext/ftrace.rs), so these are never called.
 */
struct pt_regs *memmon_ftrace_regs_pt_regs(struct ftrace_regs *fregs)
{
	static struct pt_regs none;

	WARN_ON_ONCE(1);
	return &none;
}

void memmon_ftrace_regs_set_ip(struct ftrace_regs *fregs, unsigned long ip)
{
	WARN_ON_ONCE(1);
}

unsigned long memmon_ftrace_regs_arg(struct ftrace_regs *fregs, unsigned int n)
{
	WARN_ON_ONCE(1);
	return 0;
}
#endif

/* Whether @addr is in this module's code or data. */
bool memmon_within_this_module(unsigned long addr)
{
	return within_module(addr, THIS_MODULE);
}

void memmon_preempt_disable(void)
{
	preempt_disable();
}

void memmon_preempt_enable(void)
{
	preempt_enable();
}

bool memmon_in_task(void)
{
	return in_task();
}

/* Pages in @folio. */
unsigned long memmon_folio_nr_pages(const struct folio *folio)
{
	return folio_nr_pages(folio);
}

/*
 * The cgroup v2 directory at @path (absolute, symlinks followed), with a
 * reference taken (cgroup_get_from_id(): the directory's inode number is the
 * cgroup's kernfs id, and it refuses a cgroup outside the caller's cgroup
 * namespace): 0 and *@cgrp set, or -ENOENT (no such file, or a cgroup out of
 * reach), -ENOTDIR (not a directory), -EMEDIUMTYPE (not in a cgroup2 file
 * system: a cgroup v1 hierarchy included), another error of the path lookup.
 */
int memmon_cgroup_get_dir(const char *path, struct cgroup **cgrp)
{
	struct cgroup *found;
	struct path dir;
	u64 id;
	int err;

	*cgrp = NULL;
	err = kern_path(path, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, &dir);
	if (err)
		return err;
	if (dir.dentry->d_sb->s_magic != CGROUP2_SUPER_MAGIC) {
		path_put(&dir);
		return -EMEDIUMTYPE;
	}
	id = d_inode(dir.dentry)->i_ino;
	path_put(&dir);
	found = cgroup_get_from_id(id);
	if (IS_ERR(found))
		return PTR_ERR(found);
	*cgrp = found;
	return 0;
}

/* Another reference to @cgrp, which the caller holds one to. */
void memmon_cgroup_get(struct cgroup *cgrp)
{
	cgroup_get(cgrp);
}

void memmon_cgroup_put(struct cgroup *cgrp)
{
	cgroup_put(cgrp);
}

/* Whether @cgrp was removed (rmdir): it is offline, and no task can enter it. */
bool memmon_cgroup_is_dead(struct cgroup *cgrp)
{
#ifdef MEMMON_KERNEL_6_12
	/* 6.12's cgroup_is_dead() is internal to kernel/cgroup: the same test. */
	return !(cgrp->self.flags & CSS_ONLINE);
#else
	return cgroup_is_dead(cgrp);
#endif
}

/*
 * Whether @cgrp is on the default (v2) hierarchy, not a cgroup v1 one: what
 * cgroup_on_dfl() says, which is not exported.
 */
bool memmon_cgroup_on_dfl(const struct cgroup *cgrp)
{
	return cgrp->root == &cgrp_dfl_root;
}

/*
 * Whether the process of @task, that is its thread-group leader, is in @cgrp
 * or below it on the default (v2) hierarchy. @task must be valid (referenced,
 * or found under RCU). A task already released (no longer pid_alive()) is in
 * no cgroup: its leader may have been released and freed before it (an exec's
 * de_thread(), or the last thread of a process). While @task is alive under
 * RCU, its leader, replaced only by an exec, is freed after a grace period.
 */
bool memmon_cgroup_has_process(struct cgroup *cgrp, struct task_struct *task)
{
	bool in = false;

	rcu_read_lock();
	if (pid_alive(task))
		in = task_under_cgroup_hierarchy(READ_ONCE(task->group_leader),
						 cgrp);
	rcu_read_unlock();
	return in;
}

/*
 * The cgroup v2 of the process of @task, that is of its thread-group leader
 * (as in memmon_cgroup_has_process()): its id in *@id (cgroup_id(), the inode
 * number of its directory), and its path from the root of the hierarchy, as
 * /proc/PID/cgroup shows it in the initial cgroup namespace ("/" for the root,
 * "/a/b" below it), written at the end of @buf: returns the number of bytes
 * written there, the path's last @len ones when it is longer (then *@cut is
 * set), or 0 for a task already released. @task must be valid (referenced, or
 * a tracepoint's argument). Takes no lock but RCU's (a kernfs node's name is
 * freed after a grace period when it changes), so it can be called from any
 * context but NMI.
 */
size_t memmon_process_cgroup_path_tail(struct task_struct *task, char *buf,
				       size_t len, u64 *id, bool *cut)
{
	struct cgroup *cgrp;
	size_t pos = len;

	*id = 0;
	*cut = false;
	if (!len)
		return 0;
	rcu_read_lock();
	if (!pid_alive(task)) {
		rcu_read_unlock();
		return 0;
	}
	cgrp = task_dfl_cgroup(READ_ONCE(task->group_leader));
	*id = cgroup_id(cgrp);
	/* From the cgroup up to the root, each "/name" before the last. */
	for (; cgroup_parent(cgrp); cgrp = cgroup_parent(cgrp)) {
		const char *name = rcu_dereference(cgrp->kn->name);
		size_t n = strlen(name);

		if (n + 1 > pos) {
			/* The last bytes of "/name" that fit: n >= pos. */
			memcpy(buf, name + n - pos, pos);
			*cut = true;
			pos = 0;
			break;
		}
		pos -= n;
		memcpy(buf + pos, name, n);
		buf[--pos] = '/';
	}
	if (pos == len)
		buf[--pos] = '/';
	rcu_read_unlock();
	return len - pos;
}

/*
 * Calls @fn with every process (thread-group leader, zombies included), under
 * the RCU read lock: @fn must not sleep.
 */
void memmon_for_each_process(void (*fn)(void *data, struct task_struct *task),
			     void *data)
{
	struct task_struct *p;

	rcu_read_lock();
	for_each_process(p)
		fn(data, p);
	rcu_read_unlock();
}

#ifdef MEMMON_KERNEL_6_12
/*
 * 6.12 (Debian stable's kernel, memmon built self-contained): what 7.x's kernel crate and
 * bindings have and 6.12's lack, with 7.x's names and signatures (src/bindings.rs aliases
 * them). src/arch/x86_64.rs reads the current task at the per-CPU symbol 7.x calls
 * current_task: 6.12's is the first field of pcpu_hot.
 */
#include <linux/hrtimer.h>
#include <linux/poll.h>
#include <linux/vmalloc.h>
static_assert(offsetof(struct pcpu_hot, current_task) == 0);

unsigned int memmon_raw_smp_processor_id(void)
{
	return raw_smp_processor_id();
}

void memmon_rcu_read_lock(void)
{
	rcu_read_lock();
}

void memmon_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

void memmon_poll_wait(struct file *filp, struct wait_queue_head *wait_address,
		      struct poll_table_struct *p)
{
	poll_wait(filp, wait_address, p);
}

/*
 * 6.12 exports no vrealloc(), which the kernel crate's Vmalloc allocator (VVec)
 * calls through this helper (the kernel's, rust/helpers/vmalloc.c, is left
 * out: scripts/selfcontained-module takes a module's own). It allocates
 * (p == NULL) and frees (size == 0), which is all memmon does with a VVec: each
 * is made with its capacity and never grows. A resize would need the area's
 * size, which 6.12 does not export: it fails, as an allocation failure, with a
 * line in dmesg (no WARN: it would taint, and panic with panic_on_warn).
 */
void *rust_helper_vrealloc(const void *p, size_t size, gfp_t flags)
{
	if (!size) {
		vfree(p);
		return NULL;
	}
	if (!p)
		return __vmalloc_noprof(size, flags);
	pr_warn_once("memmon: a vmalloc area cannot be resized on 6.12\n");
	return NULL;
}

void memmon_hrtimer_setup(struct hrtimer *timer,
			  enum hrtimer_restart (*function)(struct hrtimer *),
			  clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif
