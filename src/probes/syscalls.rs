// SPDX-License-Identifier: GPL-2.0

//! The mm system calls, through kretprobes on their entry points (`__x64_sys_*`,
//! `__arm64_sys_*`: [`crate::arch::SYSCALLS`]).
//!
//! The entry handler of a watched process's call saves the call's arguments (and, for a file
//! mapping, the file's path); the exit handler writes one event with the arguments, the result
//! and the time spent in the call, stamped when the call returned. Faults taken inside the
//! call therefore come before the call's line, in time as in the stream.

use crate::arch::{self, SYSCALLS};
use crate::bindings;
use crate::kernel_ext::delayed_work::{CancellableWork, WorkHandler};
use crate::kernel_ext::kcrate::{
    alloc::KVec,
    sync::{
        atomic::{Atomic, Relaxed},
        new_mutex, Arc, Mutex,
    },
    time::msecs_to_jiffies,
    types::Opaque,
};
use crate::kernel_ext::kprobe::{Kretprobe, KretprobeHandler, Unregistration};
use crate::kernel_ext::prelude::*;
use crate::kernel_ext::task::now_ns;
use crate::probes::fault::kprobes::FaultKprobes;
use crate::probes::stack;
use crate::record::event::{Event, Kind};
use crate::state::State;
use core::mem::MaybeUninit;

/// Calls of one syscall that may be in flight at once (sleeping in the kernel) and still be
/// recorded; more are counted as missed in `/proc/memmon/stats`.
const MAX_ACTIVE: i32 = 256;

const MAP_ANONYMOUS: u64 = 0x20;

/// What the entry handler saves for the exit handler: the event, filled in but for `ret`.
#[derive(Clone, Copy)]
pub(crate) struct PendingCall {
    event: Event,
}

/// The handler of one syscall's kretprobe.
pub(crate) struct SyscallProbe {
    state: Arc<State>,
    kind: Kind,
    paths: Arc<PathBuffers>,
}

impl KretprobeHandler for SyscallProbe {
    type Data = PendingCall;

    fn entry(&self, regs: &bindings::pt_regs, data: &mut MaybeUninit<PendingCall>) -> bool {
        if !self.state.watch.contains_current() {
            return false;
        }
        // `__x64_sys_*(const struct pt_regs *regs)`, `__arm64_sys_*(...)`: the argument is the
        // user registers.
        let user = arch::kernel_arg(regs, 0) as *const bindings::pt_regs;
        if user.is_null() {
            return false;
        }
        // SAFETY: The syscall entry passes the task's saved user registers, valid during the
        // call.
        let user = unsafe { &*user };
        let call = data.write(PendingCall {
            event: crate::probes::current_event(self.kind),
        });
        let event = &mut call.event;
        // When the call began, for its duration.
        event.time_ns = now_ns();
        event.args = arch::syscall_args(user);
        if self.kind == Kind::Mmap && event.args[3] & MAP_ANONYMOUS == 0 {
            // CAST: the fd argument is a C int.
            let fd = event.args[4] as i32;
            // SAFETY: Kretprobe entry handlers run with preemption disabled.
            unsafe { capture_file_path(event, fd, &self.paths) };
        }
        true
    }

    fn exit(&self, call: &mut PendingCall, regs: &bindings::pt_regs) {
        let event = &mut call.event;
        // CAST: the return value register holds a long.
        event.ret = arch::return_value(regs) as i64;
        // The entry handler stamped the event when the call began; the ring stamps its record
        // with the time it returns, and stores the difference as its duration.
        if stack::depth() == 0 {
            self.state.ring.push(event);
        } else {
            // Measured before the user stack is walked, which may take long.
            event.dur_ns = now_ns().saturating_sub(event.time_ns).max(1);
            stack::push_with_user_stack(&self.state, event, None);
        }
    }
}

/// `PATH_MAX`: room for any path `d_path` can produce.
const PATH_MAX: usize = 4096;

/// One path buffer per CPU, for the entry handlers (too big for the kernel stack).
pub(crate) struct PathBuffers {
    buffers: KVec<Opaque<[u8; PATH_MAX]>>,
}

// SAFETY: Each buffer is only used by the probe handler running on its CPU (see `get`).
unsafe impl Send for PathBuffers {}
// SAFETY: As above.
unsafe impl Sync for PathBuffers {}

impl PathBuffers {
    fn new() -> Result<Self> {
        let ncpus = crate::kernel_ext::kcrate::cpu::nr_cpu_ids() as usize;
        let mut buffers = KVec::with_capacity(ncpus, GFP_KERNEL)?;
        for _ in 0..ncpus {
            buffers.push(Opaque::uninit(), GFP_KERNEL)?;
        }
        Ok(Self { buffers })
    }

    /// The buffer of the current CPU. Only a kprobe handler running with preemption
    /// disabled may use it, and only until it returns: kprobe handlers do not nest on a CPU,
    /// so nothing else uses it meanwhile.
    fn current(&self) -> Option<*mut [u8; PATH_MAX]> {
        let cpu = crate::kernel_ext::kcrate::cpu::CpuId::current().as_u32() as usize;
        Some(self.buffers.get(cpu)?.get())
    }
}

/// Stores the path of the file open as `fd` in the current task as the event's text; a path
/// longer than the text keeps its end.
///
/// # Safety
///
/// Called from a kprobe handler, with preemption disabled (see [`PathBuffers::current`]).
unsafe fn capture_file_path(event: &mut Event, fd: i32, paths: &PathBuffers) {
    let Ok(fd) = u32::try_from(fd) else {
        return;
    };
    let Some(buf) = paths.current() else {
        return;
    };
    // SAFETY: The caller runs in a kprobe handler with preemption disabled, so this CPU's
    // buffer is used by nothing else until it returns (see `PathBuffers::current`); any bytes
    // are a valid `[u8; N]`.
    let buf = unsafe { &mut *buf };
    // SAFETY: `fget` may be called from any task context; it returns a referenced file or
    // null.
    let file = unsafe { bindings::fget(fd) };
    if file.is_null() {
        return;
    }
    // SAFETY: `file` is referenced, so its path is valid; `d_path` writes at most `buf.len()`
    // bytes into `buf` and returns a pointer into it or an error pointer.
    let path = unsafe {
        bindings::d_path(
            crate::kernel_ext::kcrate::file_path(file),
            buf.as_mut_ptr().cast(),
            // CAST: PATH_MAX fits a C int.
            PATH_MAX as i32,
        )
    };
    match kernel::error::from_err_ptr(path) {
        Ok(path) => {
            // `d_path` builds the path at the end of `buf`, NUL-terminated.
            // CAST: the pointer is inside `buf`.
            let start = (path as usize).wrapping_sub(buf.as_ptr() as usize);
            match buf
                .get(start..)
                .and_then(|rest| rest.split(|&b| b == 0).next())
            {
                Some(bytes) => event.set_text_tail(bytes),
                None => event.set_text(b"?"),
            }
        }
        Err(_) => event.set_text(b"?"),
    }
    // SAFETY: The reference taken by `fget` is dropped after its last use (`d_path`); `fput`
    // defers the final release to task work, which is allowed here.
    unsafe { bindings::fput(file) };
}

/// How often, while the probes are armed, [`Arming`] looks whether any process is still
/// watched: the probes are disarmed at most this long after the last one left the set.
const DISARM_CHECK_MS: u32 = 1000;

/// The kretprobes of all mm syscalls, and the fault source's kprobes where faults come from
/// them ([`crate::probes::fault::kprobes`]), armed only while some process is watched.
///
/// A kretprobe costs every call of every process, watched or not, the ftrace trampoline, the
/// kprobe dispatch and an instance taken and given back (about 300 instructions), before the
/// entry handler sees that the caller is not watched. So the probes are registered disarmed;
/// a `watch-pids` write that adds a process arms them before it returns (patching the 18
/// entry points: about 0.1 s under TCG, 0.7 s on the debug kernel, far less on hardware), and
/// a check every [`DISARM_CHECK_MS`] disarms them once no process is watched and none can be
/// added meanwhile ([`crate::watch::WatchSet::if_empty`]). With memmon loaded and nothing
/// watched, mm syscalls run unpatched.
pub(crate) struct SyscallProbes {
    arming: Pin<KBox<CancellableWork<Arming>>>,
    paths: Arc<PathBuffers>,
}

/// The probes and whether they are armed; as a [`WorkHandler`], the check that disarms them.
#[pin_data]
struct Arming {
    probes: KVec<Pin<KBox<Kretprobe<SyscallProbe>>>>,
    /// The fault source's probes, armed and disarmed with the syscall probes.
    faults: Option<FaultKprobes>,
    state: Arc<State>,
    /// Held while arming or disarming the probes.
    #[pin]
    lock: Mutex<()>,
    /// Whether the probes are armed: written under `lock`, read without it.
    armed: Atomic<bool>,
}

impl Arming {
    /// Arms every probe unless they are armed; returns whether it armed them. Fails with
    /// `EBUSY` (logged) if one cannot be armed, leaving them all disarmed.
    fn arm(&self) -> Result<bool> {
        let _guard = self.lock.lock();
        if self.armed.load(Relaxed) {
            return Ok(false);
        }
        self.arm_all()?;
        self.armed.store(true, Relaxed);
        Ok(true)
    }

    /// Arms every probe; on failure (logged) disarms them all. Called with `lock` held.
    fn arm_all(&self) -> Result {
        for (probe, (symbol, _)) in self.probes.iter().zip(SYSCALLS) {
            if let Err(e) = probe.arm() {
                if e == EBUSY {
                    pr_err!(
                        "watch-pids: cannot arm the syscall probes: kprobes are disabled \
                         system-wide (debugfs kprobes/enabled is 0)\n"
                    );
                } else {
                    pr_err!(
                        "watch-pids: cannot arm the probe of {}: error {}\n",
                        symbol,
                        e.to_errno()
                    );
                }
                // Disarming what was armed can only fail where arming failed too.
                let _ = self.disarm_all();
                return Err(EBUSY);
            }
        }
        if let Some(faults) = &self.faults {
            if let Err(e) = faults.arm() {
                pr_err!(
                    "watch-pids: cannot arm the fault probes: error {}\n",
                    e.to_errno()
                );
                let _ = self.disarm_all();
                return Err(EBUSY);
            }
        }
        Ok(())
    }

    /// Disarms every probe; fails if one could not be. Called with `lock` held.
    fn disarm_all(&self) -> Result {
        let mut result = Ok(());
        for probe in self.probes.iter() {
            if let Err(e) = probe.disarm() {
                result = Err(e);
            }
        }
        if let Some(Err(e)) = self.faults.as_ref().map(FaultKprobes::disarm) {
            result = Err(e);
        }
        result
    }
}

impl WorkHandler for Arming {
    fn run(&self) -> Option<c_ulong> {
        let again = Some(msecs_to_jiffies(DISARM_CHECK_MS));
        let disarmed = self.state.watch.if_empty(|| {
            let _guard = self.lock.lock();
            if let Err(e) = self.disarm_all() {
                pr_warn!(
                    "cannot disarm the syscall probes (error {}): they stay armed\n",
                    e.to_errno()
                );
                // Armed as a whole again (arming an armed probe does nothing), so that the
                // state is all or nothing; the next check tries again.
                if self.arm_all().is_ok() {
                    return false;
                }
                // `arm_all` disarmed what it could: the next write that adds a process arms
                // them all again.
            }
            self.armed.store(false, Relaxed);
            true
        });
        match disarmed {
            Some(true) => None,
            _ => again,
        }
    }
}

impl SyscallProbes {
    /// Probes every syscall of [`SYSCALLS`], disarmed; fails (naming the syscall) if one
    /// cannot be. `faults` are armed and disarmed with them.
    pub(crate) fn register(state: &Arc<State>, faults: Option<FaultKprobes>) -> Result<Self> {
        let mut probes = KVec::with_capacity(SYSCALLS.len(), GFP_KERNEL)?;
        let paths = Arc::new(PathBuffers::new()?, GFP_KERNEL)?;
        for (symbol, kind) in SYSCALLS {
            let handler = SyscallProbe {
                state: state.clone(),
                kind,
                paths: paths.clone(),
            };
            probes.push(
                KBox::pin_init(
                    Kretprobe::register_disarmed(symbol, MAX_ACTIVE, handler),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        let arming = KBox::pin_init(
            CancellableWork::new(try_pin_init!(Arming {
                probes,
                faults,
                state: state.clone(),
                lock <- new_mutex!(()),
                armed: Atomic::new(false),
            })),
            GFP_KERNEL,
        )?;
        Ok(Self { arming, paths })
    }

    /// Arms the probes unless they are armed; fails (logged) if one cannot be armed.
    pub(crate) fn arm(&self) -> Result {
        if self.arming.handler().arm()? {
            self.arming.schedule(msecs_to_jiffies(DISARM_CHECK_MS));
        }
        Ok(())
    }

    /// Whether the probes are armed.
    pub(crate) fn armed(&self) -> bool {
        self.arming.handler().armed.load(Relaxed)
    }

    /// Calls missed because too many were in flight at once.
    pub(crate) fn missed(&self) -> u64 {
        self.probes().iter().map(|probe| probe.missed()).sum()
    }

    /// Faults the fault source's probes missed (0 without them).
    pub(crate) fn faults_missed(&self) -> u64 {
        self.arming
            .handler()
            .faults
            .as_ref()
            .map_or(0, FaultKprobes::faults_missed)
    }

    /// Every hit the fault source's probes missed (0 without them).
    pub(crate) fn fault_probes_missed(&self) -> u64 {
        self.arming
            .handler()
            .faults
            .as_ref()
            .map_or(0, FaultKprobes::missed)
    }

    /// Stops the check that disarms the probes and hands every probe to `batch`, which
    /// unregisters them together (the fault source's hooks unregister themselves when
    /// dropped).
    pub(crate) fn unregister_into<'a>(&'a self, batch: &mut Unregistration<'a>) {
        self.arming.cancel();
        for probe in self.probes().iter() {
            batch.add_kretprobe(probe);
        }
    }

    /// Bytes of the per-CPU path buffers.
    pub(crate) fn path_bytes(&self) -> usize {
        self.paths.buffers.len() * PATH_MAX
    }

    /// Whether every probe whose handlers need it goes through ftrace.
    pub(crate) fn ftrace_based(&self) -> bool {
        self.probes().iter().all(|probe| probe.ftrace_based())
            && self
                .arming
                .handler()
                .faults
                .as_ref()
                .is_none_or(FaultKprobes::ftrace_based)
    }

    fn probes(&self) -> &[Pin<KBox<Kretprobe<SyscallProbe>>>] {
        &self.arming.handler().probes
    }
}
