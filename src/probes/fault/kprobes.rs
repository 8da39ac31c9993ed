// SPDX-License-Identifier: GPL-2.0

//! The fault source of a kernel without the `mm:mm_fault` tracepoint (a distribution's
//! stock kernel): a kretprobe on `handle_mm_fault()` and kprobes on the handlers it
//! dispatches to, all through ftrace where the kernel allows it.
//!
//! - `handle_mm_fault(vma, address, flags, regs)`: its entry handler takes a call of a
//!   watched process, with the address, flags and user registers; its exit handler records
//!   the fault as `mm_account_fault()` counts it, which `handle_mm_fault()` calls (inlined)
//!   just before it returns: not a call that returned `VM_FAULT_RETRY` nor one that failed
//!   (`VM_FAULT_ERROR`), major if `VM_FAULT_MAJOR` or retried (`FAULT_FLAG_TRIED`).
//!   So a process's fault lines equal its rusage faults here too, `get_user_pages()`
//!   included.
//! - The handlers note in the pending call (found with [`Kretprobe::with_current_call`],
//!   which reads the current task's list of pending returns: no lock, no table) what
//!   resolved it, as `patches/0001` notes it at the dispatch sites: `do_anonymous_page`
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
//! Every probe is registered disarmed and armed with the syscall probes while a process is
//! watched ([`crate::probes::syscalls`]): with nothing watched, faults run unpatched.

use crate::bindings;
use crate::kernel_ext::kprobe::{
    Kprobe, KprobeHandler, Kretprobe, KretprobeHandler, Unregistration,
};
use crate::kernel_ext::mm::{fault_flag, vm_fault_reason, Folio, VmFault};
use crate::record::event::FaultType;
use crate::state::State;
use core::{mem::MaybeUninit, ptr::NonNull};
use kernel::{alloc::KVec, prelude::*, str::CStr, sync::Arc};

/// Calls of `handle_mm_fault()` that may be pending at once (many sleep in I/O) and still
/// be recorded; more are counted as missed in `/proc/memmon/stats` (`probe_missed`).
const MAX_ACTIVE: i32 = 4096;

/// Pages of a PMD mapping (`HPAGE_PMD_NR` on x86_64 with 4 KiB pages).
const PMD_PAGES: u32 = 512;

/// A pending `handle_mm_fault()` call of a watched process, as its entry handler saw it and
/// the handlers fill it in.
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

/// The kretprobe on `handle_mm_fault()`.
pub(crate) struct FaultCall {
    state: Arc<State>,
}

impl KretprobeHandler for FaultCall {
    type Data = PendingFault;

    fn entry(&self, regs: &bindings::pt_regs, data: &mut MaybeUninit<PendingFault>) -> bool {
        if !self.state.watch.contains_current() {
            return false;
        }
        // `handle_mm_fault(vma, address, flags, regs)`: rdi, rsi, rdx, rcx.
        // CAST: `unsigned int flags` is the low half of its register.
        let flags = regs.dx as u32;
        // get_user_pages() on another process's mm (ptrace, process_vm_readv): not a fault
        // of the current process's address space.
        if flags & fault_flag::REMOTE != 0 {
            return false;
        }
        data.write(PendingFault {
            vma: regs.di,
            // CAST: registers are 64 bits wide on x86_64.
            address: regs.si as u64,
            flags,
            regs: regs.cx as *const bindings::pt_regs,
            fault_type: FaultType::Spurious,
            huge: false,
            pages: 0,
            wp_fault: core::ptr::null(),
        });
        true
    }

    fn exit(&self, call: &mut PendingFault, regs: &bindings::pt_regs) {
        // CAST: `vm_fault_t` is an unsigned int, the low half of rax.
        let ret = regs.ax as u32;
        if ret & vm_fault_reason::RETRY != 0 || ret & vm_fault_reason::ERROR != 0 {
            return;
        }
        // As the tracepoint: a process unwatched while the fault was handled is not recorded.
        if !self.state.watch.contains_current() {
            return;
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
        super::record(&self.state, &fault);
    }
}

/// What a handler probe notes in the pending fault.
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

/// Pages of memory (4 KiB on x86_64).
const PAGE_SIZE: u64 = 4096;

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
    /// Applies the note of a probe hit with `regs` to `fault`.
    fn apply(self, fault: &mut PendingFault, regs: &bindings::pt_regs) {
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
                fault.wp_fault = regs.di as *const bindings::vm_fault;
            }
            Note::PteRange => {
                // CAST: `unsigned int nr`, the low half of rcx.
                fault.pages = fault.pages.saturating_add(regs.cx as u32);
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
                    && fault.is_vma(regs.si)
                {
                    // SAFETY: The probed function's first argument is a valid folio, for the
                    // call.
                    let folio = unsafe { Folio::from_raw(regs.di as *const bindings::folio) };
                    let pages = folio.nr_pages();
                    fault.pages = fault
                        .pages
                        .saturating_add(u32::try_from(pages).unwrap_or(u32::MAX));
                }
                // A file fault's copy-on-write: `set_pte_range()` counts it.
            }
            Note::AnonPtes => {
                // CAST: `int nr_pages`, the low half of rdx; positive.
                let nr = regs.dx as u32;
                // CAST: registers are 64 bits wide on x86_64.
                let first = regs.r8 as u64;
                let covers = fault.address >= first
                    && fault.address - first < u64::from(nr).saturating_mul(PAGE_SIZE);
                if fault.fault_type == FaultType::Swap
                    && fault.wp_fault.is_null()
                    && fault.is_vma(regs.cx)
                    && covers
                {
                    fault.pages = fault.pages.saturating_add(nr);
                }
            }
            Note::FilePmd => {
                if fault.fault_type == FaultType::File && fault.is_vma(regs.dx) {
                    fault.pages = fault.pages.saturating_add(PMD_PAGES);
                }
            }
        }
    }
}

/// A kprobe on a fault handler: notes what it does in the pending fault of the current task.
pub(crate) struct HandlerProbe {
    note: Note,
    state: Arc<State>,
    /// The kretprobe on `handle_mm_fault()`.
    call: NonNull<Kretprobe<FaultCall>>,
}

// SAFETY: `call` points to the pinned kretprobe of the `FaultKprobes` that owns this probe,
// which is unregistered after this probe (see `FaultKprobes`) and only read through `&`.
unsafe impl Send for HandlerProbe {}
// SAFETY: As above.
unsafe impl Sync for HandlerProbe {}

impl KprobeHandler for HandlerProbe {
    fn hit(&self, regs: &bindings::pt_regs) {
        // Handlers run for every process's faults: one load while nothing is watched (the
        // probes are disarmed then anyway), one bit test for an unwatched process.
        if !self.state.watch.any_watched() || !self.state.watch.contains_current() {
            return;
        }
        // SAFETY: `call` is alive while this probe is registered (see `Send`).
        let call = unsafe { self.call.as_ref() };
        // SAFETY: This runs in a kprobe handler: no handler of the `handle_mm_fault()`
        // kretprobe runs in this task meanwhile.
        unsafe { call.with_current_call(|fault| self.note.apply(fault, regs)) };
    }
}

/// The handler probes: symbol, note, and whether the kernel may lack the function (built
/// without the feature, or inlined), in which case the probe is left out.
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

/// The probes of this fault source, registered disarmed.
///
/// # Invariants
///
/// `handlers` point to `call` (pinned in its box); they are declared first, so that they are
/// unregistered first when dropped one by one, and [`FaultKprobes::unregister_into`] puts
/// them in the kprobe batch, which [`Unregistration`] unregisters before its kretprobes (a
/// handler left out of the batch for want of memory unregisters itself later, when the
/// `FaultKprobes` is dropped, before `call`).
pub(crate) struct FaultKprobes {
    handlers: KVec<Pin<KBox<Kprobe<HandlerProbe>>>>,
    call: Pin<KBox<Kretprobe<FaultCall>>>,
}

impl FaultKprobes {
    /// Registers the probes, disarmed; fails (naming the function) if a probe that every
    /// kernel can have cannot be registered.
    pub(crate) fn register(state: &Arc<State>) -> Result<Self> {
        let call = KBox::pin_init(
            Kretprobe::register_disarmed(
                c"handle_mm_fault",
                MAX_ACTIVE,
                FaultCall {
                    state: state.clone(),
                },
            ),
            GFP_KERNEL,
        )?;
        let call_ptr = NonNull::from(&*call);
        let mut handlers = KVec::with_capacity(HANDLERS.len(), GFP_KERNEL)?;
        for (symbol, note, optional) in HANDLERS {
            let handler = HandlerProbe {
                note,
                state: state.clone(),
                call: call_ptr,
            };
            let probe = if optional {
                KBox::pin_init(
                    Kprobe::register_disarmed_if_present(symbol, handler),
                    GFP_KERNEL,
                )
            } else {
                KBox::pin_init(Kprobe::register_disarmed(symbol, handler), GFP_KERNEL)
            };
            match probe {
                // From an int3 trap the handler would run in NMI-like context, where it does
                // not look for the pending call.
                Ok(probe) if !probe.ftrace_based() => {
                    if !optional {
                        pr_err!("fault source: {} cannot be probed through ftrace\n", symbol);
                        return Err(EOPNOTSUPP);
                    }
                    pr_info!(
                        "fault source: {} cannot be probed through ftrace: left out\n",
                        symbol
                    );
                }
                Ok(probe) => handlers.push(probe, GFP_KERNEL)?,
                Err(e) if optional && e == ENOENT => {
                    pr_info!("fault source: no {} in this kernel\n", symbol);
                }
                Err(e) => return Err(e),
            }
        }
        // INVARIANT: every handler points to `call`, which is pinned in its box.
        Ok(Self { handlers, call })
    }

    /// Arms every probe, the handlers first; on failure the caller disarms them all.
    pub(crate) fn arm(&self) -> Result {
        for probe in self.handlers.iter() {
            probe.arm()?;
        }
        self.call.arm()
    }

    /// Disarms every probe; fails if one could not be.
    pub(crate) fn disarm(&self) -> Result {
        let mut result = self.call.disarm();
        for probe in self.handlers.iter() {
            if let Err(e) = probe.disarm() {
                result = Err(e);
            }
        }
        result
    }

    /// Faults not recorded: `handle_mm_fault()` calls beyond the pending ones the probe has
    /// room for, or hit recursively.
    pub(crate) fn faults_missed(&self) -> u64 {
        self.call.missed()
    }

    /// Every hit missed: [`FaultKprobes::faults_missed`], and handler probes hit
    /// recursively (by any process: not necessarily a watched fault's).
    pub(crate) fn missed(&self) -> u64 {
        self.call.missed()
            + self
                .handlers
                .iter()
                .map(|probe| probe.missed())
                .sum::<u64>()
    }

    /// Whether every probe goes through ftrace: the `handle_mm_fault()` probe's exit handler
    /// writes to the ring and walks the user stack, and a handler probe from an int3 trap
    /// would run in NMI-like context, where it does not find the pending call.
    pub(crate) fn ftrace_based(&self) -> bool {
        self.call.ftrace_based() && self.handlers.iter().all(|probe| probe.ftrace_based())
    }

    /// Hands every probe to `batch`, which unregisters them together.
    pub(crate) fn unregister_into<'a>(&'a self, batch: &mut Unregistration<'a>) {
        for probe in self.handlers.iter() {
            batch.add_kprobe(probe);
        }
        batch.add_kretprobe(&self.call);
    }
}
