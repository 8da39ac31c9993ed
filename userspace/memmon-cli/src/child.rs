//! Starting a command that waits until memmon has put it in the watch set.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::ptrace;
use nix::sys::signal::{kill, signal, SigHandler, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{execvp, fork, pipe2, read, write, ForkResult, Pid};

/// A forked child blocked before exec until [`HeldChild::release`].
pub struct HeldChild {
    pid: Pid,
    /// Writing a byte here lets the child exec.
    release: Option<OwnedFd>,
    /// Closed by exec (O_CLOEXEC); carries the errno if exec fails.
    exec_status: OwnedFd,
    program: String,
}

/// Exit code of the child when it cannot exec (like a shell's "command not found").
const EXEC_FAILED: i32 = 127;

/// How long a program may take from its exec to its entry point (the dynamic loader's
/// work and the libraries' constructors) before memmon stops waiting for it there.
pub const ENTRY_WAIT: Duration = Duration::from_secs(5);

/// Calls of the dynamic loader's `_dl_debug_state` stopped at, at most: one before and one
/// after the libraries a program needs are mapped, and two for each library its
/// constructors open.
const LOADER_STOPS_MAX: u32 = 64;

/// Where [`HeldChild::release_at_exec`] has stopped the new program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Right after exec: only the program and its dynamic loader are mapped.
    Exec,
    /// In the dynamic loader's `_dl_debug_state`, which it calls when it starts mapping
    /// objects and when it is done: at the second call the libraries the program needs are
    /// mapped, and their constructors have not run.
    Loader,
    /// At the program's entry point: the libraries it needs are mapped and initialised.
    Entry,
}

impl HeldChild {
    /// Forks a child that will exec `command` once released.
    pub fn spawn(command: &[String]) -> Result<HeldChild> {
        let Some(program) = command.first() else {
            bail!("no command given");
        };
        let args: Vec<CString> = command
            .iter()
            .map(|arg| CString::new(arg.as_bytes()))
            .collect::<Result<_, _>>()
            .context("the command contains a NUL byte")?;
        let (release_read, release_write) =
            pipe2(OFlag::O_CLOEXEC).context("cannot create a pipe")?;
        let (status_read, status_write) =
            pipe2(OFlag::O_CLOEXEC).context("cannot create a pipe")?;
        // SAFETY: memmon is single-threaded, and the child only calls async-signal-safe
        // functions (close, read, signal, execvp, write, _exit) before exec or exit; the
        // argument vector is built before the fork.
        match unsafe { fork() }.context("cannot fork")? {
            ForkResult::Child => {
                drop(release_write);
                drop(status_read);
                let mut byte = [0u8; 1];
                // A signal memmon catches (Ctrl-C) interrupts the wait: wait again.
                let released = loop {
                    match read(&release_read, &mut byte) {
                        Ok(1) => break true,
                        Err(nix::errno::Errno::EINTR) => continue,
                        _ => break false,
                    }
                };
                if released {
                    // Rust ignores SIGPIPE; the command must get the default disposition.
                    // SAFETY: setting SIG_DFL installs no handler.
                    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
                    let error = match execvp(&args[0], &args) {
                        Err(errno) => errno as i32,
                        Ok(never) => match never {},
                    };
                    let _ = write(&status_write, &error.to_ne_bytes());
                }
                // SAFETY: _exit ends the child without running the parent's atexit code
                // or destructors, which is what a failed child of fork must do.
                unsafe { libc::_exit(EXEC_FAILED) }
            }
            ForkResult::Parent { child } => Ok(HeldChild {
                pid: child,
                release: Some(release_write),
                exec_status: status_read,
                program: program.clone(),
            }),
        }
    }

    /// The child's pid as the module sees it.
    pub fn pid_u32(&self) -> u32 {
        // Pids are positive.
        u32::try_from(self.pid.as_raw()).unwrap_or(0)
    }

    /// Lets the child exec the command; fails if exec failed (the child is then reaped).
    /// Calls `at_stop` while the child is stopped right after a successful exec, before
    /// the new program's first instruction ([`Stop::Exec`], through ptrace's exec event:
    /// memmon loads its unwind tables there); at each call of the dynamic loader's
    /// `_dl_debug_state` before the entry point ([`Stop::Loader`]: the libraries are mapped
    /// at the second, before their constructors run); and at the program's entry point,
    /// before the program's own code runs ([`Stop::Entry`]). The later stops are hardware
    /// breakpoints: the program's memory is not written. Where ptrace is not allowed,
    /// `at_stop(Stop::Exec)` runs once exec returned, while the program runs; where the
    /// breakpoints cannot be set or the entry is not reached within [`ENTRY_WAIT`], there
    /// are no later stops.
    pub fn release_at_exec(&mut self, mut at_stop: impl FnMut(Stop)) -> Result<()> {
        let traced = ptrace::seize(self.pid, ptrace::Options::PTRACE_O_TRACEEXEC).is_ok();
        if let Some(fd) = self.release.take() {
            write(&fd, b"x").context("cannot release the child process")?;
        }
        let mut exec_seen = false;
        if traced {
            exec_seen = self.wait_for_exec(&mut at_stop);
        }
        let mut bytes = [0u8; 4];
        let mut filled = 0;
        while filled < bytes.len() {
            match read(&self.exec_status, &mut bytes[filled..]) {
                Ok(0) => break,
                Ok(count) => filled += count,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(error) => return Err(error).context("cannot learn whether exec worked"),
            }
        }
        if filled == bytes.len() {
            let errno = nix::errno::Errno::from_raw(i32::from_ne_bytes(bytes));
            let _ = waitpid(self.pid, None);
            bail!("cannot run {}: {}", self.program, errno.desc());
        }
        if traced && !exec_seen && self.has_exited()? {
            let _ = self.reap();
            bail!("{} ended before it could start", self.program);
        }
        if !exec_seen {
            at_stop(Stop::Exec);
        }
        Ok(())
    }

    /// Waits, as the child's tracer, for its exec event and calls `at_stop` there; then,
    /// if a breakpoint can be set at the program's entry, for that and the loader's
    /// `_dl_debug_state`, calling `at_stop` at each; then detaches. Every other stop is
    /// resumed as it would have gone without a tracer (a signal delivered, a group stop
    /// kept). Returns whether the exec was seen,
    /// without consuming the child's exit, so that [`HeldChild::has_exited`] and
    /// [`HeldChild::reap`] still see it.
    fn wait_for_exec(&self, at_stop: &mut impl FnMut(Stop)) -> bool {
        let pid = self.pid;
        let mut exec_seen = false;
        // The breakpoints while they are set, and until when to wait for the entry.
        let mut entry: Option<(Breakpoints, Instant)> = None;
        let mut loader_stops = 0;
        // Whether the wait for the entry was given up on (the child interrupted).
        let mut interrupted = false;
        loop {
            // Not blocking while the breakpoints are set: one that is never hit must not
            // hold memmon.
            let (event, signal) = match look(pid, entry.is_none() || interrupted) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) | Ok(Seen::Exited) => break,
                Ok(Seen::Nothing) => {
                    // No change yet: the program runs towards its entry.
                    if let Some((_, deadline)) = entry.filter(|_| !interrupted) {
                        if Instant::now() >= deadline {
                            let _ = ptrace::interrupt(pid);
                            interrupted = true;
                        } else {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    }
                    continue;
                }
                Ok(Seen::Stop { event, signal }) => (event, signal),
            };
            // Take the stop looked at. nix cannot name a stop by a real-time signal
            // (EINVAL), but the stop is taken all the same.
            match waitpid(pid, None) {
                Ok(WaitStatus::Stopped(..) | WaitStatus::PtraceEvent(..))
                | Err(nix::errno::Errno::EINVAL) => {}
                _ => continue,
            }
            let mut request = Resume::Continue;
            let mut delivered = 0;
            if interrupted {
                // The entry breakpoint was given up on: this is the interrupt's stop, or a
                // stop that came before it. Detach (a pending interrupt goes with it),
                // unless a breakpoint's SIGTRAP raced the interrupt and is still pending:
                // then resume (the breakpoints are cleared) and take its stop first, so
                // that it does not kill the program once it is no longer traced.
                clear_breakpoints(pid);
                request = Resume::Detach;
                if event == 0 && signal != libc::SIGTRAP {
                    delivered = signal;
                } else if event == libc::PTRACE_EVENT_STOP
                    && signal != libc::SIGTRAP
                    && sigtrap_pending(pid)
                {
                    request = Resume::Continue;
                }
            } else if event == libc::PTRACE_EVENT_EXEC {
                // The first exec, or another before the entry (one from a library's
                // constructor): exec cleared the debug registers. A wrapper such as `env`
                // reaches its own entry first, where memmon detaches.
                exec_seen = true;
                loader_stops = 0;
                at_stop(Stop::Exec);
                match set_breakpoints(pid) {
                    Some(set) => entry = Some((set, Instant::now() + ENTRY_WAIT)),
                    None => request = Resume::Detach,
                }
            } else if event == 0
                && signal == libc::SIGTRAP
                && entry.is_some_and(|(set, _)| at_breakpoint(pid, set.entry))
            {
                clear_breakpoints(pid);
                entry = None;
                at_stop(Stop::Entry);
                request = Resume::Detach;
            } else if event == 0
                && signal == libc::SIGTRAP
                && entry.is_some_and(|(set, _)| set.loader.is_some_and(|at| at_breakpoint(pid, at)))
            {
                // Resumed past it (the kernel sets the resume flag), up to a bound in case
                // a program calls it without end. The time memmon takes here does not count
                // against the wait for the entry.
                let began = Instant::now();
                at_stop(Stop::Loader);
                if let Some((_, deadline)) = entry.as_mut() {
                    *deadline += began.elapsed();
                }
                loader_stops += 1;
                if loader_stops >= LOADER_STOPS_MAX {
                    breakpoints::keep_entry(pid);
                }
            } else if event == libc::PTRACE_EVENT_STOP {
                // A group stop (SIGSTOP, SIGTSTP): the child stays stopped until SIGCONT.
                request = Resume::Listen;
            } else if event == 0 {
                // A signal for the child: delivered (any number, real-time ones too).
                delivered = signal;
            }
            resume(pid, request, delivered);
            if request == Resume::Detach {
                break;
            }
        }
        exec_seen
    }

    /// Kills and reaps a child that was never released.
    pub fn abandon(self) {
        let _ = kill(self.pid, Signal::SIGKILL);
        let _ = waitpid(self.pid, None);
    }

    /// Whether the child has exited, without reaping it (it stays a zombie, so its pid
    /// cannot be reused while memmon looks at /proc/PID).
    pub fn has_exited(&self) -> Result<bool> {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(self.pid), flags) {
            Ok(WaitStatus::StillAlive) => Ok(false),
            Ok(_) => Ok(true),
            Err(nix::errno::Errno::EINTR) => Ok(false),
            Err(error) => Err(error).context("cannot wait for the child"),
        }
    }

    /// Reaps the exited child; returns the shell-style exit code (128+N for signal N).
    pub fn reap(&self) -> Result<i32> {
        loop {
            match waitpid(self.pid, None) {
                Ok(WaitStatus::Exited(_, code)) => return Ok(code),
                Ok(WaitStatus::Signaled(_, signal, _)) => return Ok(128 + signal as i32),
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(error) => return Err(error).context("cannot wait for the child"),
            }
        }
    }

    /// Sends a signal to the child.
    pub fn signal(&self, signal: Signal) {
        let _ = kill(self.pid, signal);
    }
}

/// `AT_ENTRY` of the auxiliary vector: the program's entry point.
const AT_ENTRY: u64 = 9;

/// `AT_BASE` of the auxiliary vector: where the dynamic loader is loaded (its load bias).
const AT_BASE: u64 = 7;

/// The execution breakpoints set in a program stopped at its exec.
#[derive(Clone, Copy, Debug)]
struct Breakpoints {
    /// The program's entry point (breakpoint 0).
    entry: u64,
    /// The dynamic loader's `_dl_debug_state` (breakpoint 1), if it has one and the
    /// architecture resumes past it ([`breakpoints::LOADER`]).
    loader: Option<u64>,
}

/// The values of the auxiliary vector of `pid` for `kinds`, in that order (0 if absent).
fn auxv_values<const N: usize>(pid: Pid, kinds: [u64; N]) -> Option<[u64; N]> {
    let auxv = std::fs::read(format!("/proc/{pid}/auxv")).ok()?;
    let mut values = [0; N];
    for pair in auxv.chunks_exact(16) {
        let word = |at: usize| u64::from_ne_bytes(pair[at..at + 8].try_into().unwrap_or([0; 8]));
        if let Some(slot) = kinds.iter().position(|&kind| kind == word(0)) {
            values[slot] = word(8);
        }
    }
    Some(values)
}

/// The run-time address of the dynamic loader's `_dl_debug_state` in `pid`, whose loader
/// is loaded at `base`.
fn loader_debug_state(pid: Pid, base: u64) -> Option<u64> {
    let proc_root = std::path::Path::new("/proc");
    let pid = u32::try_from(pid.as_raw()).ok()?;
    let maps = memmon_unwind::maps::read_maps(proc_root, pid).ok()?;
    let mapping = maps
        .iter()
        .find(|entry| entry.start == base && entry.offset == 0)?;
    let object = memmon_unwind::maps::open_object(proc_root, pid, mapping).ok()?;
    let address = memmon_unwind::needed::loader_debug_state(&object.data)?;
    base.checked_add(address)
}

/// Sets execution breakpoints at the entry point of `pid` (stopped at its exec), breakpoint
/// 0, and at its dynamic loader's `_dl_debug_state`, if it has one, breakpoint 1 (where the
/// architecture allows it: [`breakpoints::LOADER`]); returns their addresses, or `None` if
/// the entry's cannot be set.
fn set_breakpoints(pid: Pid) -> Option<Breakpoints> {
    let [entry, base] = auxv_values(pid, [AT_ENTRY, AT_BASE])?;
    if entry == 0 {
        return None;
    }
    let loader = Some(base)
        .filter(|&base| base != 0 && breakpoints::LOADER)
        .and_then(|base| loader_debug_state(pid, base));
    match loader {
        Some(at) if breakpoints::set(pid, &[entry, at]) => Some(Breakpoints {
            entry,
            loader: Some(at),
        }),
        _ if breakpoints::set(pid, &[entry]) => Some(Breakpoints {
            entry,
            loader: None,
        }),
        _ => {
            breakpoints::clear(pid);
            None
        }
    }
}

/// Whether a SIGTRAP is pending for `pid` (its thread's or its process's), by
/// `/proc/PID/status`.
fn sigtrap_pending(pid: Pid) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let bit = 1u64 << (libc::SIGTRAP - 1);
    status
        .lines()
        .filter_map(|line| {
            line.strip_prefix("SigPnd:")
                .or_else(|| line.strip_prefix("ShdPnd:"))
        })
        .filter_map(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .any(|mask| mask & bit != 0)
}

/// Disables the breakpoints of `pid` (in a ptrace stop).
fn clear_breakpoints(pid: Pid) {
    breakpoints::clear(pid);
}

/// Whether `pid`, stopped by a SIGTRAP, is at `address` (an execution breakpoint stops
/// before the instruction runs).
fn at_breakpoint(pid: Pid, address: u64) -> bool {
    breakpoints::pc(pid) == Some(address)
}

/// The hardware execution breakpoints of a tracee, x86_64's: debug registers 0 and 1,
/// enabled in DR7, written with `PTRACE_POKEUSER`. A tracee resumed at one goes past it
/// (the kernel sets the resume flag).
#[cfg(target_arch = "x86_64")]
mod breakpoints {
    use nix::libc;
    use nix::sys::ptrace;
    use nix::unistd::Pid;

    /// Whether the loader's breakpoint, which the tracee is resumed at, is set.
    pub(super) const LOADER: bool = true;

    /// DR7's bits that enable breakpoints 0 and 1, with their condition bits (16-19,
    /// 20-23) zero: break on executing the instruction at DR0, DR1.
    const DR7_ENABLE: [u64; 2] = [1, 1 << 2];

    /// The offset of debug register `n` in the tracee's `struct user`.
    fn debug_register(n: usize) -> usize {
        std::mem::offset_of!(libc::user, u_debugreg) + n * 8
    }

    /// Writes `value` to the tracee's debug register `n`; whether it took it.
    fn set_debug_register(pid: Pid, n: usize, value: u64) -> bool {
        // The kernel checks the offset and the value.
        ptrace::write_user(
            pid,
            debug_register(n) as ptrace::AddressType,
            value as libc::c_long,
        )
        .is_ok()
    }

    /// Sets breakpoints 0, 1... at `addresses` (at most 2) and enables those alone; whether
    /// the kernel took them.
    pub(super) fn set(pid: Pid, addresses: &[u64]) -> bool {
        let mut enable = 0;
        for (n, &address) in addresses.iter().enumerate().take(2) {
            if !set_debug_register(pid, n, address) {
                return false;
            }
            enable |= DR7_ENABLE[n];
        }
        set_debug_register(pid, 7, enable)
    }

    /// Disables and clears breakpoints 0 and 1.
    pub(super) fn clear(pid: Pid) {
        set_debug_register(pid, 7, 0);
        set_debug_register(pid, 0, 0);
        set_debug_register(pid, 1, 0);
    }

    /// Keeps breakpoint 0 (the entry's) alone enabled.
    pub(super) fn keep_entry(pid: Pid) {
        set_debug_register(pid, 7, DR7_ENABLE[0]);
    }

    /// The tracee's instruction pointer.
    pub(super) fn pc(pid: Pid) -> Option<u64> {
        let offset = std::mem::offset_of!(libc::user, regs)
            + std::mem::offset_of!(libc::user_regs_struct, rip);
        ptrace::read_user(pid, offset as ptrace::AddressType)
            .ok()
            .map(|rip| rip as u64)
    }
}

/// The hardware execution breakpoints of a tracee, arm64's: the breakpoint registers of
/// `NT_ARM_HW_BREAK` (`struct user_hwdebug_state`), written with `PTRACE_SETREGSET`. arm64's
/// kernel does not step a tracee over a ptrace breakpoint it is resumed at (it would stop
/// there again): only the entry's is set, where memmon clears it and detaches, not the
/// loader's (the libraries' constructors run before their ranges are given; their tables
/// are loaded at the exec all the same).
#[cfg(target_arch = "aarch64")]
mod breakpoints {
    use nix::libc;
    use nix::unistd::Pid;

    /// Whether the loader's breakpoint, which the tracee is resumed at, is set.
    pub(super) const LOADER: bool = false;

    /// `NT_ARM_HW_BREAK`, the register set of the hardware breakpoints.
    const NT_ARM_HW_BREAK: libc::c_int = 0x402;
    /// A breakpoint's control word: enabled (bit 0), at EL0 (privilege 2, bits 1-2), on
    /// execution (type 0, bits 3-4) of a 4-byte instruction (length 0xf, bits 5-12).
    const CTRL_EXEC_EL0: u32 = (0xf << 5) | (2 << 1) | 1;

    /// One breakpoint register pair of `struct user_hwdebug_state`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct DebugReg {
        addr: u64,
        ctrl: u32,
        pad: u32,
    }

    /// `struct user_hwdebug_state` with room for two breakpoints.
    #[repr(C)]
    #[derive(Default)]
    struct HwDebugState {
        dbg_info: u32,
        pad: u32,
        regs: [DebugReg; 2],
    }

    /// Writes the tracee's breakpoints 0 and 1 (each `(address, enabled)`); whether the
    /// kernel took them.
    fn write(pid: Pid, regs: [(u64, bool); 2]) -> bool {
        let mut state = HwDebugState::default();
        for (slot, (addr, enabled)) in state.regs.iter_mut().zip(regs) {
            *slot = DebugReg {
                addr,
                ctrl: if enabled { CTRL_EXEC_EL0 } else { 0 },
                pad: 0,
            };
        }
        let mut iov = libc::iovec {
            iov_base: (&mut state as *mut HwDebugState).cast(),
            iov_len: std::mem::size_of::<HwDebugState>(),
        };
        // SAFETY: `iov` describes `state`, valid for its size, which the kernel reads (as
        // many registers as it holds, fewer if the CPU has fewer); the request takes no
        // other pointer.
        let ret = unsafe {
            libc::ptrace(
                libc::PTRACE_SETREGSET,
                pid.as_raw(),
                NT_ARM_HW_BREAK as usize as *mut libc::c_void,
                (&mut iov as *mut libc::iovec).cast::<libc::c_void>(),
            )
        };
        ret == 0
    }

    /// Sets breakpoints 0, 1... at `addresses` (at most 2) and enables those alone; whether
    /// the kernel took them.
    pub(super) fn set(pid: Pid, addresses: &[u64]) -> bool {
        let at = |n: usize| addresses.get(n).map_or((0, false), |&a| (a, true));
        write(pid, [at(0), at(1)])
    }

    /// Disables and clears breakpoints 0 and 1.
    pub(super) fn clear(pid: Pid) {
        write(pid, [(0, false), (0, false)]);
    }

    /// Keeps breakpoint 0 (the entry's) alone enabled: not reached (no loader breakpoint).
    pub(super) fn keep_entry(_pid: Pid) {}

    /// The tracee's program counter (`NT_PRSTATUS`: X0 to X30, SP, PC, PSTATE).
    pub(super) fn pc(pid: Pid) -> Option<u64> {
        let mut regs = std::mem::MaybeUninit::<libc::user_regs_struct>::zeroed();
        let mut iov = libc::iovec {
            iov_base: regs.as_mut_ptr().cast(),
            iov_len: std::mem::size_of::<libc::user_regs_struct>(),
        };
        // SAFETY: `iov` describes `regs`, valid for its size, which the kernel fills.
        let ret = unsafe {
            libc::ptrace(
                libc::PTRACE_GETREGSET,
                pid.as_raw(),
                libc::NT_PRSTATUS as usize as *mut libc::c_void,
                (&mut iov as *mut libc::iovec).cast::<libc::c_void>(),
            )
        };
        // SAFETY: zeroed, then filled by the kernel: a plain struct of integers.
        (ret == 0).then(|| unsafe { regs.assume_init() }.pc)
    }
}

/// What [`look`] saw of the traced child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// No state change yet (only when not blocking).
    Nothing,
    /// It exited or was killed.
    Exited,
    /// It is in a ptrace stop: `event` (`PTRACE_EVENT_*`, 0 for a signal's stop) and the
    /// signal number.
    Stop { event: i32, signal: i32 },
}

/// Runs `work` while process `pid` (a followed process memmon did not start: a compiler
/// driver's `cc1plus`) is stopped: seized (`PTRACE_SEIZE`, which sends no signal and which
/// its parent's wait does not see) and interrupted, then let go as it was, with the signal
/// whose stop came first, if one did, delivered. A process memmon may not trace (traced
/// already, by memmon itself or a debugger, or not allowed) runs on meanwhile; one that
/// exits meanwhile is waited for, so that its parent is told.
pub fn while_stopped<T>(pid: u32, work: impl FnOnce() -> T) -> T {
    let Ok(raw) = i32::try_from(pid) else {
        return work();
    };
    let target = Pid::from_raw(raw);
    if ptrace::seize(target, ptrace::Options::empty()).is_err() {
        return work();
    }
    let _ = ptrace::interrupt(target);
    // The stop to let go from, and the signal to deliver then.
    let stopped = loop {
        match look(target, true) {
            Err(nix::errno::Errno::EINTR) | Ok(Seen::Nothing) => continue,
            Ok(Seen::Exited) => {
                // Taken, so that its parent is told of its end (ptrace's reparenting).
                let _ = waitpid(target, Some(WaitPidFlag::__WALL));
                break None;
            }
            Err(_) => break None,
            Ok(Seen::Stop { event, signal }) => {
                match waitpid(target, Some(WaitPidFlag::__WALL)) {
                    Ok(WaitStatus::Stopped(..) | WaitStatus::PtraceEvent(..))
                    | Err(nix::errno::Errno::EINVAL) => {}
                    _ => continue,
                }
                // The interrupt's stop (PTRACE_EVENT_STOP, also a group stop's under
                // seize), or a signal's that came before it: that signal goes on.
                break Some(if event == 0 { signal } else { 0 });
            }
        }
    };
    let result = work();
    if let Some(signal) = stopped {
        // A pending interrupt goes with the detach.
        resume(target, Resume::Detach, signal);
    }
    result
}

/// Looks at the traced child's next state change without taking it (`WNOWAIT`), so that an
/// exit stays for [`HeldChild::has_exited`] and [`HeldChild::reap`]; waits for one when
/// `block`.
fn look(pid: Pid, block: bool) -> nix::Result<Seen> {
    let mut flags = WaitPidFlag::WEXITED | WaitPidFlag::WSTOPPED | WaitPidFlag::WNOWAIT;
    if !block {
        flags |= WaitPidFlag::WNOHANG;
    }
    match waitid(Id::Pid(pid), flags) {
        Ok(WaitStatus::StillAlive) => Ok(Seen::Nothing),
        Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => Ok(Seen::Exited),
        Ok(WaitStatus::PtraceEvent(_, signal, event)) => Ok(Seen::Stop {
            event,
            signal: signal as i32,
        }),
        Ok(WaitStatus::Stopped(_, signal)) => Ok(Seen::Stop {
            event: 0,
            signal: signal as i32,
        }),
        Ok(_) => Ok(Seen::Nothing),
        // nix names no real-time signal: an exit by one, or a stop by one (a signal's
        // stop: group stops are by the stop signals), whose number its siginfo has.
        Err(nix::errno::Errno::EINVAL) => {
            let exit = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
            match waitid(Id::Pid(pid), exit) {
                Ok(WaitStatus::StillAlive) => Ok(Seen::Stop {
                    event: 0,
                    signal: ptrace::getsiginfo(pid)?.si_signo,
                }),
                _ => Ok(Seen::Exited),
            }
        }
        Err(error) => Err(error),
    }
}

/// How [`resume`] lets a stopped tracee go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    /// `PTRACE_CONT`.
    Continue,
    /// `PTRACE_LISTEN`: a group stop stays until SIGCONT, and the tracer hears of it.
    Listen,
    /// `PTRACE_DETACH`.
    Detach,
}

/// Resumes the tracee `pid`, in a ptrace stop, delivering signal number `signal` (0 for
/// none). Raw ptrace: nix's `cont` and `detach` take a `Signal`, which has no real-time
/// signals, and a tracee must get every signal it was sent; and nix has no
/// `PTRACE_LISTEN`.
fn resume(pid: Pid, how: Resume, signal: i32) {
    let request = match how {
        Resume::Continue => libc::PTRACE_CONT,
        Resume::Listen => libc::PTRACE_LISTEN,
        Resume::Detach => libc::PTRACE_DETACH,
    };
    // SAFETY: PTRACE_CONT, PTRACE_LISTEN and PTRACE_DETACH take no pointer: `data` is a
    // signal number, which the kernel checks.
    unsafe {
        libc::ptrace(
            request,
            pid.as_raw(),
            std::ptr::null_mut::<libc::c_void>(),
            signal as libc::c_long,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::while_stopped;
    use std::process::{Command, Stdio};

    /// The state letter of `/proc/PID/stat` (`S` sleeping, `t` stopped by its tracer).
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.chars().next().unwrap()
    }

    #[test]
    fn a_process_is_stopped_for_the_work_and_let_go_after() {
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let during = while_stopped(pid, || state(pid));
        assert_eq!(
            during, 't',
            "stopped by memmon (its tracer) during the work"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(
            state(pid),
            'S',
            "asleep again after: neither stopped nor traced"
        );
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(status.contains("TracerPid:\t0\n"), "{status}");
        child.kill().unwrap();
        // Its parent (this test) still waits for it as usual.
        assert!(!child.wait().unwrap().success());
    }

    #[test]
    fn a_process_that_cannot_be_traced_runs_on_while_the_work_is_done() {
        // No such process: nothing to stop, the work is done all the same.
        assert_eq!(while_stopped(u32::MAX, || 7), 7);
        assert_eq!(while_stopped(4_194_304, || 8), 8);
    }

    #[test]
    fn an_exit_during_the_hold_reaches_its_parent() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(200));
        // Exited already (a zombie of this test): seized or not, its status stays for its
        // parent.
        while_stopped(pid, || ());
        assert!(child.wait().unwrap().success());
    }
}
