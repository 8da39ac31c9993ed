// SPDX-License-Identifier: GPL-2.0

//! The fault source of a kernel without the `mm:mm_fault` tracepoint (a distribution's
//! stock kernel), named `kprobes` (`fault_source` in `/proc/memmon/stats`, the
//! `fault_kprobes` parameter) after the kprobes it was first built on: ftrace hooks
//! ([`FunctionHooks`], two `ftrace_ops`) on the entries of `handle_mm_fault()` and of the
//! handlers it dispatches to. Only `handle_mm_fault()`'s ops modifies the instruction pointer
//! (`FTRACE_OPS_FL_IPMODIFY`, exclusive per function): the handlers' ops shares them with live
//! patches and kprobes. A process that is not watched pays one ftrace trampoline and
//! one watched-bit test per hooked function its fault runs, and no return hook.
//!
//! - `handle_mm_fault(vma, address, flags, regs)`: its hook sends a call of a watched process
//!   (not `FAULT_FLAG_REMOTE`) to [`watched_handle_mm_fault`], which has its signature: that
//!   notes the address, flags and user registers in a [`PendingFault`] on its stack, calls
//!   `handle_mm_fault()` itself (the hook lets this call through: its return address is in
//!   this module) and, once it returns, records the fault as `mm_account_fault()` counts it,
//!   which `handle_mm_fault()` calls (inlined) just before it returns: not a call that
//!   returned `VM_FAULT_RETRY` nor one that failed (`VM_FAULT_ERROR`), major if
//!   `VM_FAULT_MAJOR` or retried (`FAULT_FLAG_TRIED`). So a process's fault lines equal its
//!   rusage faults here too, `get_user_pages()` included.
//! - The handlers' hooks note in the pending fault of the current task (found in
//!   [`PendingFaults`], a table keyed by task that only watched processes' faults enter)
//!   what resolved it, as `patches/0001` notes it at the dispatch sites: `do_anonymous_page`
//!   (anon), `do_fault` (file), `do_swap_page` (swap), `do_wp_page` (write-protect; not when
//!   `do_swap_page` calls it for a write to a page it swapped in: that fault stays a swap-in),
//!   `do_huge_pmd_anonymous_page` and `do_huge_pmd_wp_page` (huge anon and write-protect;
//!   a later handler replaces them when they fall back to PTEs), `hugetlb_fault`. A fault no
//!   handler saw is spurious. `do_numa_page()` is inlined into `handle_pte_fault()`, so a
//!   NUMA hinting fault is typed spurious, and so is a userfaultfd write-protect one.
//! - Pages added to the resident set: `set_pte_range()`'s count (file faults, fault-around
//!   included, and copy-on-write of file pages), the folio size at
//!   `folio_add_new_anon_rmap()` for anonymous and swap-in faults, the count at
//!   `folio_add_anon_rmap_ptes()` for a swap-in from the swap cache, 512 at
//!   `folio_add_file_rmap_pmd()` (a file THP), and for a write-protect fault one page only
//!   when it copied the zero page (`vmf->page` is NULL there), as the patch counts them.
//!
//! The hooks are registered disarmed and armed with the syscall probes while a process is
//! watched ([`crate::probes::syscalls`]): with nothing watched, faults run unpatched. Calls
//! sent to [`watched_handle_mm_fault`] run this module's code until they return: dropping
//! the source (at `rmmod`) waits for those in flight.

use crate::bindings;
use crate::kernel_ext::atomic::read_once;
use crate::kernel_ext::errno::eopnotsupp;
use crate::kernel_ext::ftrace::{
    within_this_module, FunctionEntry, FunctionHooks, FunctionHooksHandler,
};
use crate::kernel_ext::kcrate::{
    alloc::{KVVec, KVec},
    sync::atomic::{Acquire, Atomic, Relaxed, Release},
    sync::Arc,
    task::Task,
    time::{delay::fsleep, Delta},
};
use crate::kernel_ext::kprobe::ftrace_location;
use crate::kernel_ext::mm::{fault_flag, vm_fault_reason, Folio, VmFault};
use crate::kernel_ext::preempt::{in_task, without_preemption};
use crate::kernel_ext::prelude::*;
use crate::record::event::FaultType;
use crate::state::State;
use core::{cell::UnsafeCell, ptr::NonNull};

/// Slots of [`PendingFaults`]: watched processes' faults that may be pending at once (many
/// sleep in I/O) and still be recorded; more are counted as missed in `/proc/memmon/stats`
/// (`probe_missed`). A power of two.
const PENDING_SLOTS: usize = 4096;

/// Slots a task's pending fault may take, from the one its task pointer hashes to.
const PENDING_PROBES: usize = 16;

/// Pages of a PMD mapping (`HPAGE_PMD_NR`): a page table's entries, 8 bytes each (512 with
/// 4 KiB pages, 2048 with 16 KiB ones).
// CAST: a page size divided by 8 fits in 32 bits.
const PMD_PAGES: u32 = (bindings::PAGE_SIZE / 8) as u32;

/// A pending `handle_mm_fault()` call of a watched process, as [`watched_handle_mm_fault`]
/// saw it and the handlers' hooks fill it in.
#[derive(Clone, Copy)]
pub(crate) struct PendingFault {
    /// The `vma` argument, only compared (never read: the fault may free it).
    vma: usize,
    address: u64,
    flags: u32,
    /// The `regs` argument: the user registers of a fault from user mode, else null.
    regs: *const bindings::pt_regs,
    fault_type: FaultType,
    huge: bool,
    pages: u32,
    /// `do_wp_page()` runs for this fault: its `struct vm_fault`, else null.
    wp_fault: *const bindings::vm_fault,
}

/// One slot of [`PendingFaults`]: a task, and its innermost pending fault.
struct PendingSlot {
    task: Atomic<*mut bindings::task_struct>,
    fault: Atomic<*mut PendingFault>,
}

/// The pending faults of watched processes, by task: a table of [`PENDING_SLOTS`] slots, a
/// task's in one of the [`PENDING_PROBES`] from its hash.
///
/// A slot is claimed (its task set from null) by the task it is for, which alone reads and
/// changes it until it releases it: a task looks up only its own slot.
struct PendingFaults {
    slots: KVVec<PendingSlot>,
}

/// A slot [`PendingFaults::enter`] took, to give back to [`PendingFaults::leave`].
struct EnteredSlot {
    index: usize,
    /// The task's pending fault this one is nested in, else null.
    outer: *mut PendingFault,
}

impl PendingFaults {
    fn new() -> Result<Self> {
        let mut slots = KVVec::with_capacity(PENDING_SLOTS, GFP_KERNEL)?;
        for _ in 0..PENDING_SLOTS {
            slots.push(
                PendingSlot {
                    task: Atomic::new(core::ptr::null_mut()),
                    fault: Atomic::new(core::ptr::null_mut()),
                },
                GFP_KERNEL,
            )?;
        }
        Ok(Self { slots })
    }

    /// The slots `task`'s may be in.
    fn candidates(task: *mut bindings::task_struct) -> impl Iterator<Item = usize> {
        // CAST: a pointer's bits; task_structs are at least 64-byte aligned, spread by a
        // Fibonacci hash.
        let hash = ((task as usize >> 6).wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> (64 - 12);
        (0..PENDING_PROBES).map(move |i| (hash + i) & (PENDING_SLOTS - 1))
    }

    /// The slot of the current task, if it has one.
    fn own_slot(&self, task: *mut bindings::task_struct) -> Option<&PendingSlot> {
        Self::candidates(task)
            .map(|index| &self.slots[index])
            .find(|slot| read_once(&slot.task) == task)
    }

    /// Makes `fault` the current task's innermost pending fault; `None` if no slot is free.
    fn enter(&self, fault: *mut PendingFault) -> Option<EnteredSlot> {
        let task = Task::current_raw();
        for index in Self::candidates(task) {
            let slot = &self.slots[index];
            if read_once(&slot.task) == task {
                // A fault of a fault (the current task's slot is only its own).
                let outer = slot.fault.xchg(fault, Relaxed);
                return Some(EnteredSlot { index, outer });
            }
        }
        for index in Self::candidates(task) {
            let slot = &self.slots[index];
            // Acquire: the release of the slot by its last task (its fault cleared) happens
            // before this task sets the fault.
            if slot
                .task
                .cmpxchg(core::ptr::null_mut(), task, Acquire)
                .is_ok()
            {
                slot.fault.store(fault, Relaxed);
                return Some(EnteredSlot {
                    index,
                    outer: core::ptr::null_mut(),
                });
            }
        }
        None
    }

    /// Gives back what [`PendingFaults::enter`] took, in the same task.
    fn leave(&self, entered: EnteredSlot) {
        let slot = &self.slots[entered.index];
        if entered.outer.is_null() {
            slot.fault.store(core::ptr::null_mut(), Relaxed);
            slot.task.store(core::ptr::null_mut(), Release);
        } else {
            slot.fault.store(entered.outer, Relaxed);
        }
    }

    /// The current task's innermost pending fault, else null: null in an interrupt, whose
    /// calls of the hooked functions (`folio_add_new_anon_rmap()` by a softirq, say) are not
    /// the interrupted fault's.
    fn current(&self) -> *mut PendingFault {
        if !in_task() {
            return core::ptr::null_mut();
        }
        self.own_slot(Task::current_raw())
            .map_or(core::ptr::null_mut(), |slot| read_once(&slot.fault))
    }
}

/// What [`watched_handle_mm_fault`] and the hooks share.
struct FaultContext {
    state: Arc<State>,
    pending: PendingFaults,
    /// Watched faults not recorded: no slot was free.
    missed: Atomic<i64>,
}

/// The context of the registered fault source, for [`watched_handle_mm_fault`] (a function
/// with `handle_mm_fault()`'s signature, which has no room for one); null without one.
static CONTEXT: Atomic<*mut FaultContext> = Atomic::new(core::ptr::null_mut());

/// Calls in [`watched_handle_mm_fault`]: the source is not dropped before none is left.
static IN_FLIGHT: Atomic<i64> = Atomic::new(0);

impl FaultContext {
    /// `handle_mm_fault()` for the current task, which is watched: runs it with a pending
    /// fault for the handlers' hooks to fill in, then records the fault.
    fn handle_watched(
        &self,
        vma: *mut bindings::vm_area_struct,
        address: c_ulong,
        flags: c_uint,
        regs: *mut bindings::pt_regs,
    ) -> bindings::vm_fault_t {
        let pending = UnsafeCell::new(PendingFault {
            // CAST: a pointer's bits, only compared.
            vma: vma as usize,
            // CAST: an unsigned long is 64 bits wide on both architectures.
            address: address as u64,
            flags,
            regs,
            fault_type: FaultType::Spurious,
            huge: false,
            pages: 0,
            wp_fault: core::ptr::null(),
        });
        let entered = self.pending.enter(pending.get());
        // SAFETY: The arguments are the caller's, passed on unchanged.
        let ret = unsafe { bindings::handle_mm_fault(vma, address, flags, regs) };
        let Some(entered) = entered else {
            self.missed.add(1, Relaxed);
            return ret;
        };
        self.pending.leave(entered);
        // SAFETY: The hooks reach `pending` only through the slot, given back above.
        let call = unsafe { *pending.get() };
        if ret & vm_fault_reason::RETRY != 0 || ret & vm_fault_reason::ERROR != 0 {
            return ret;
        }
        // As the tracepoint: a process unwatched while the fault was handled is not recorded.
        if !self.state.watch.contains_current() {
            return ret;
        }
        let major = ret & vm_fault_reason::MAJOR != 0 || call.flags & fault_flag::TRIED != 0;
        let fault = super::Fault {
            address: call.address,
            flags: call.flags,
            major,
            fault_type: call.fault_type,
            huge: call.huge,
            pages: call.pages,
            // SAFETY: The user registers of a fault are the exception frame of the fault on
            // this task's kernel stack, which stays until the fault handler returns to user
            // mode, after this; null for `get_user_pages()`.
            regs: unsafe { call.regs.as_ref() },
        };
        // As in the tracepoint's and the kprobes' handlers: the ring and the stack walk's
        // per-CPU state want no switch meanwhile.
        without_preemption(|| super::record(&self.state, &fault));
        ret
    }
}

/// Runs the calls of `handle_mm_fault()` of watched processes, which its hook sends here.
///
/// # Safety
///
/// Called as `handle_mm_fault()` is, by its callers, through the hook's redirect.
unsafe extern "C" fn watched_handle_mm_fault(
    vma: *mut bindings::vm_area_struct,
    address: c_ulong,
    flags: c_uint,
    regs: *mut bindings::pt_regs,
) -> bindings::vm_fault_t {
    IN_FLIGHT.add(1, Relaxed);
    let context = CONTEXT.load(Acquire);
    // SAFETY: The hook redirects only while the source is registered, whose drop unregisters
    // the hook (after which, ftrace's RCU tasks grace period past, every call it sent here
    // has counted itself in `IN_FLIGHT`) and waits for `IN_FLIGHT` to fall to zero before it
    // frees the context.
    let ret = match unsafe { context.as_ref() } {
        Some(context) => context.handle_watched(vma, address, flags, regs),
        // SAFETY: The arguments are the caller's, passed on unchanged.
        None => unsafe { bindings::handle_mm_fault(vma, address, flags, regs) },
    };
    IN_FLIGHT.fetch_add(-1, Release);
    ret
}

/// What a handler's hook notes in the pending fault.
#[derive(Clone, Copy)]
enum Note {
    /// The fault is resolved by this handler (huge: at PMD level).
    Handler(FaultType, bool),
    /// `do_wp_page(vmf)`.
    WriteProtect,
    /// `set_pte_range(vmf, folio, page, nr, addr)`: `nr` pages mapped.
    PteRange,
    /// `folio_add_new_anon_rmap(folio, vma, address, flags)`: a new anonymous folio.
    NewAnonFolio,
    /// `folio_add_anon_rmap_ptes(folio, page, nr_pages, vma, address, flags)`.
    AnonPtes,
    /// `folio_add_file_rmap_pmd(folio, page, vma)`: a file THP mapped.
    FilePmd,
}

/// Bytes of a page: the kernel's (4 KiB on x86_64, 4 or 16 KiB on arm64).
// CAST: a page size fits in 64 bits.
const PAGE_SIZE: u64 = bindings::PAGE_SIZE as u64;

impl PendingFault {
    /// Whether `vma` (a probed function's argument) is this fault's VMA: the rmap functions
    /// also run for migration finishing in the faulting task (`remove_migration_pte()`, a
    /// device-private page brought back by `do_swap_page()`, compaction during an
    /// allocation), which maps pages the fault did not.
    fn is_vma(&self, vma: usize) -> bool {
        vma == self.vma
    }
}

impl Note {
    /// Applies the note of a hook's hit, `entry`, to `fault`.
    fn apply(self, fault: &mut PendingFault, entry: &FunctionEntry<'_>) {
        match self {
            Note::Handler(fault_type, huge) => {
                fault.fault_type = fault_type;
                fault.huge = huge;
            }
            Note::WriteProtect => {
                // `do_swap_page()` calls it for a write to a page it swapped in but could not
                // make exclusive: still a swap-in.
                if fault.fault_type != FaultType::Swap {
                    fault.fault_type = FaultType::WriteProtect;
                    fault.huge = false;
                }
                fault.wp_fault = entry.arg(0) as *const bindings::vm_fault;
            }
            Note::PteRange => {
                // CAST: `unsigned int nr`, the low half of its register.
                fault.pages = fault.pages.saturating_add(entry.arg(3) as u32);
            }
            Note::NewAnonFolio => {
                if !fault.wp_fault.is_null() {
                    // `wp_page_copy()`: a copy adds to the resident set only if it replaces
                    // the zero page, for which `do_wp_page()` found no page.
                    // SAFETY: `wp_fault` is the `struct vm_fault` of the pending
                    // `do_wp_page()` call of this fault (in `__handle_mm_fault()`'s frame),
                    // which calls this; the current task is the only one using it.
                    let wp_fault = unsafe { VmFault::from_raw(fault.wp_fault) };
                    if !wp_fault.has_page() {
                        fault.pages = fault.pages.saturating_add(1);
                    }
                } else if matches!(fault.fault_type, FaultType::Anon | FaultType::Swap)
                    && fault.is_vma(entry.arg(1))
                {
                    // SAFETY: The probed function's first argument is a valid folio, for the
                    // call.
                    let folio = unsafe { Folio::from_raw(entry.arg(0) as *const bindings::folio) };
                    let pages = folio.nr_pages();
                    fault.pages = fault
                        .pages
                        .saturating_add(u32::try_from(pages).unwrap_or(u32::MAX));
                }
                // A file fault's copy-on-write: `set_pte_range()` counts it.
            }
            Note::AnonPtes => {
                // CAST: `int nr_pages`, the low half of its register; positive.
                let nr = entry.arg(2) as u32;
                // CAST: an address fits in 64 bits.
                let first = entry.arg(4) as u64;
                let covers = fault.address >= first
                    && fault.address - first < u64::from(nr).saturating_mul(PAGE_SIZE);
                if fault.fault_type == FaultType::Swap
                    && fault.wp_fault.is_null()
                    && fault.is_vma(entry.arg(3))
                    && covers
                {
                    fault.pages = fault.pages.saturating_add(nr);
                }
            }
            Note::FilePmd => {
                if fault.fault_type == FaultType::File && fault.is_vma(entry.arg(2)) {
                    fault.pages = fault.pages.saturating_add(PMD_PAGES);
                }
            }
        }
    }
}

/// The handler of the hook on `handle_mm_fault()`, which sends watched processes' calls to
/// [`watched_handle_mm_fault`].
pub(crate) struct MmFaultHook {
    /// The state whose watch set is tested first, held here so that the test is two loads
    /// away.
    state: Arc<State>,
}

impl FunctionHooksHandler for MmFaultHook {
    /// Every process's faults come here: one bit test for an unwatched one, inlined into the
    /// ftrace callback.
    #[inline(always)]
    fn wanted(&self) -> bool {
        self.state.watch.contains_current()
    }

    /// `handle_mm_fault(vma, address, flags, regs)` entered by a watched process.
    fn hit(&self, entry: &mut FunctionEntry<'_>) {
        // CAST: `unsigned int flags` is the low half of its register.
        let flags = entry.arg(2) as u32;
        // get_user_pages() on another process's mm (ptrace, process_vm_readv): not a fault
        // of the current process's address space.
        if flags & fault_flag::REMOTE != 0 {
            return;
        }
        // The call `watched_handle_mm_fault` makes.
        if within_this_module(entry.parent_ip()) {
            return;
        }
        // SAFETY: `watched_handle_mm_fault` has `handle_mm_fault()`'s signature and C calling
        // convention; this module's code stays until the calls sent there have returned
        // (`FaultKprobes`'s drop waits for them). The hook is registered with `redirects`.
        let _ = unsafe { entry.redirect(watched_handle_mm_fault as *const () as usize) };
    }
}

/// The handler of the hooks on the [`HANDLERS`] present: notes in the current task's pending
/// fault what resolved it.
pub(crate) struct HandlerHooks {
    /// As in [`MmFaultHook`].
    state: Arc<State>,
    context: NonNull<FaultContext>,
    /// The note of each hooked function, in the hooks' order.
    notes: KVec<Note>,
}

// SAFETY: `context` points to the context of the `FaultKprobes` that owns these hooks, which
// unregisters them before it frees it (and leaks it if they cannot be: see `FaultKprobes`),
// and is only read through `&`.
unsafe impl Send for HandlerHooks {}
// SAFETY: As above.
unsafe impl Sync for HandlerHooks {}

impl FunctionHooksHandler for HandlerHooks {
    /// As in [`MmFaultHook`].
    #[inline(always)]
    fn wanted(&self) -> bool {
        self.state.watch.contains_current()
    }

    /// A handler entered by a watched process.
    fn hit(&self, entry: &mut FunctionEntry<'_>) {
        // SAFETY: `context` is alive while the hooks are (see `Send`).
        let context = unsafe { self.context.as_ref() };
        let Some(&note) = entry.index().and_then(|index| self.notes.get(index)) else {
            return;
        };
        let fault = context.pending.current();
        if fault.is_null() {
            return;
        }
        // SAFETY: `fault` is the pending fault of the current task's innermost
        // `watched_handle_mm_fault` call, on its stack: only this task uses it (in task
        // context, as `current` checks), and not meanwhile (that call is in
        // `handle_mm_fault()`, which runs this).
        note.apply(unsafe { &mut *fault }, entry);
    }
}

/// The handlers hooked: symbol, note, and whether the kernel may lack the function (built
/// without the feature, or inlined), in which case it is left out.
const HANDLERS: [(&CStr, Note, bool); 14] = [
    (
        c"do_anonymous_page",
        Note::Handler(FaultType::Anon, false),
        false,
    ),
    (c"do_fault", Note::Handler(FaultType::File, false), false),
    (
        c"do_swap_page",
        Note::Handler(FaultType::Swap, false),
        false,
    ),
    (c"do_wp_page", Note::WriteProtect, false),
    (
        c"do_huge_pmd_anonymous_page",
        Note::Handler(FaultType::Anon, true),
        true,
    ),
    (
        c"do_huge_pmd_wp_page",
        Note::Handler(FaultType::WriteProtect, true),
        true,
    ),
    (
        c"hugetlb_fault",
        Note::Handler(FaultType::Hugetlb, true),
        true,
    ),
    (
        c"do_huge_pmd_numa_page",
        Note::Handler(FaultType::Numa, true),
        true,
    ),
    (
        c"do_huge_pmd_uffd_rwp",
        Note::Handler(FaultType::Other, true),
        true,
    ),
    (
        c"do_huge_pmd_device_private",
        Note::Handler(FaultType::Other, true),
        true,
    ),
    (c"set_pte_range", Note::PteRange, false),
    (c"folio_add_new_anon_rmap", Note::NewAnonFolio, false),
    (c"folio_add_anon_rmap_ptes", Note::AnonPtes, false),
    (c"folio_add_file_rmap_pmd", Note::FilePmd, true),
];

/// The hooks of this fault source, registered disarmed, and what they share with
/// [`watched_handle_mm_fault`].
///
/// # Invariants
///
/// `context` is owned: from `KBox::into_raw`, freed at drop once `handlers` (which point to
/// it) are unregistered, and leaked if they cannot be; [`CONTEXT`] points to it from
/// registration until drop.
pub(crate) struct FaultKprobes {
    /// The hook on `handle_mm_fault()`, with `FTRACE_OPS_FL_IPMODIFY`.
    mm_fault: FunctionHooks<MmFaultHook>,
    /// The hooks on the handlers, without: they may share their functions with a live patch.
    handlers: FunctionHooks<HandlerHooks>,
    context: NonNull<FaultContext>,
}

// SAFETY: `context` is owned, and only read through `&` (`FaultContext` is `Send + Sync`).
unsafe impl Send for FaultKprobes {}
// SAFETY: As above.
unsafe impl Sync for FaultKprobes {}

impl FaultKprobes {
    /// Registers the hooks, disarmed; fails (naming the function) if a function that every
    /// kernel has cannot be hooked, or if a fault source is registered already.
    pub(crate) fn register(state: &Arc<State>) -> Result<Self> {
        let context = KBox::new(
            FaultContext {
                state: state.clone(),
                pending: PendingFaults::new()?,
                missed: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let mut mm_fault_ip = KVec::with_capacity(1, GFP_KERNEL)?;
        mm_fault_ip.push(hooked(c"handle_mm_fault", false)?, GFP_KERNEL)?;
        let mut functions = KVec::with_capacity(HANDLERS.len(), GFP_KERNEL)?;
        let mut notes = KVec::with_capacity(HANDLERS.len(), GFP_KERNEL)?;
        for (symbol, note, optional) in HANDLERS {
            match hooked(symbol, optional) {
                Ok(ip) => {
                    functions.push(ip, GFP_KERNEL)?;
                    notes.push(note, GFP_KERNEL)?;
                }
                Err(e) if optional && e == ENOENT => {}
                Err(e) => return Err(e),
            }
        }
        let mm_fault = FunctionHooks::register_disarmed(
            mm_fault_ip,
            true,
            MmFaultHook {
                state: state.clone(),
            },
        )?;
        // Freed below if anything fails, or by `drop`.
        let context = NonNull::from(KBox::leak(context));
        let handlers = FunctionHooks::register_disarmed(
            functions,
            false,
            HandlerHooks {
                state: state.clone(),
                context,
                notes,
            },
        );
        let handlers = match handlers {
            Ok(handlers) => handlers,
            Err(e) => {
                // SAFETY: From `KBox::leak` above; nothing else points to it.
                drop(unsafe { KBox::from_raw(context.as_ptr()) });
                return Err(e);
            }
        };
        if CONTEXT
            .cmpxchg(core::ptr::null_mut(), context.as_ptr(), Release)
            .is_err()
        {
            pr_err!("fault source: registered twice\n");
            drop(handlers);
            // SAFETY: From `KBox::leak` above; the hooks that pointed to it, never armed, are
            // freed.
            drop(unsafe { KBox::from_raw(context.as_ptr()) });
            return Err(EBUSY);
        }
        // INVARIANT: `context` is owned, the handlers' hooks point to it; `CONTEXT` is set.
        Ok(Self {
            mm_fault,
            handlers,
            context,
        })
    }

    fn context(&self) -> &FaultContext {
        // SAFETY: `context` is owned, valid until drop (the type invariants).
        unsafe { self.context.as_ref() }
    }

    /// Arms the hooks; on failure the caller disarms them. `EBUSY` (logged) if another
    /// ftrace user modifies the instruction pointer at `handle_mm_fault()`.
    pub(crate) fn arm(&self) -> Result {
        self.handlers.arm()?;
        self.mm_fault.arm().inspect_err(|&e| {
            if e == EBUSY {
                pr_err!(
                    "fault source: cannot hook handle_mm_fault: another live patch or kprobe \
                     (with a post handler) redirects it through ftrace\n"
                );
            }
        })
    }

    /// Disarms the hooks; fails if they could not be.
    pub(crate) fn disarm(&self) -> Result {
        let mm_fault = self.mm_fault.disarm();
        let handlers = self.handlers.disarm();
        mm_fault.and(handlers)
    }

    /// Faults not recorded: watched processes' `handle_mm_fault()` calls beyond the pending
    /// ones there is room for.
    pub(crate) fn faults_missed(&self) -> u64 {
        u64::try_from(self.context().missed.load(Relaxed)).unwrap_or(0)
    }

    /// Every hit missed: [`FaultKprobes::faults_missed`] (ftrace hooks miss none).
    pub(crate) fn missed(&self) -> u64 {
        self.faults_missed()
    }

    /// Whether every hook goes through ftrace: always (a function that cannot be hooked
    /// through ftrace fails the registration or is left out).
    pub(crate) fn ftrace_based(&self) -> bool {
        true
    }
}

/// Sleeps between two checks that no watched fault is in flight any more, at unload.
const IN_FLIGHT_POLL_MS: i64 = 10;

/// Checks between two log lines saying that unload still waits: one every 10 s of sleeps.
const IN_FLIGHT_LOG_EVERY: u32 = 1000;

impl Drop for FaultKprobes {
    fn drop(&mut self) {
        // No more calls sent to `watched_handle_mm_fault`: unregistering waits for ftrace's
        // RCU tasks grace period, so every call sent there before has counted itself.
        let unregistered = self.disarm().is_ok();
        if !unregistered {
            pr_err!("fault source: cannot unregister the hooks: leaking them and their context\n");
        }
        let mut polls = 0u32;
        while read_once(&IN_FLIGHT) > 0 {
            // A fault may sleep (I/O, a userfaultfd): wait for it to return.
            polls = polls.wrapping_add(1);
            if polls % IN_FLIGHT_LOG_EVERY == 0 {
                pr_info!("fault source: waiting for watched faults in flight to return\n");
            }
            fsleep(Delta::from_millis(IN_FLIGHT_POLL_MS));
        }
        // Calls that counted themselves out may still run their last instructions here.
        // SAFETY: Waiting for an RCU tasks grace period is allowed in process context.
        unsafe { bindings::synchronize_rcu_tasks() };
        CONTEXT.store(core::ptr::null_mut(), Release);
        if unregistered {
            // SAFETY: `context` is owned (the type invariants), and the hooks that pointed to
            // it are unregistered (their drop, after this, only frees them).
            drop(unsafe { KBox::from_raw(self.context.as_ptr()) });
        }
        // Else the hooks' drop leaks them, and the context stays for their handlers.
    }
}

/// The ftrace location of `symbol`, naming it in the log when it cannot be hooked.
fn hooked(symbol: &'static CStr, optional: bool) -> Result<usize> {
    match ftrace_location(symbol, optional) {
        Err(e) if e == eopnotsupp() => {
            if optional {
                pr_info!(
                    "fault source: {} cannot be hooked through ftrace: left out\n",
                    symbol
                );
                Err(ENOENT)
            } else {
                pr_err!("fault source: {} cannot be hooked through ftrace\n", symbol);
                Err(e)
            }
        }
        Err(e) if e == ENOENT && optional => {
            pr_info!("fault source: no {} in this kernel\n", symbol);
            Err(e)
        }
        result => result,
    }
}
