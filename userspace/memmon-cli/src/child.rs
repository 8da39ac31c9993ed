//! Starting a command that waits until memmon has put it in the watch set.

use std::ffi::CString;
use std::os::fd::OwnedFd;

use anyhow::{bail, Context, Result};
use nix::fcntl::OFlag;
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
                unsafe { nix::libc::_exit(EXEC_FAILED) }
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
    /// Calls `at_exec` while the child is stopped right
    /// after a successful exec, before the new program's first instruction (through
    /// ptrace's exec event: memmon loads its unwind tables there). Where ptrace is not
    /// allowed, `at_exec` runs once exec returned, while the program runs.
    pub fn release_at_exec(&mut self, at_exec: impl FnOnce()) -> Result<()> {
        let traced = ptrace::seize(self.pid, ptrace::Options::PTRACE_O_TRACEEXEC).is_ok();
        if let Some(fd) = self.release.take() {
            write(&fd, b"x").context("cannot release the child process")?;
        }
        let mut at_exec = Some(at_exec);
        if traced {
            self.wait_for_exec(&mut at_exec);
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
        if traced && at_exec.is_some() && self.has_exited()? {
            let _ = self.reap();
            bail!("{} ended before it could start", self.program);
        }
        if let Some(at_exec) = at_exec.take() {
            at_exec();
        }
        Ok(())
    }

    /// Waits, as the child's tracer, for its exec event and calls `at_exec` there, then
    /// detaches; every other stop is resumed as it would have gone without a tracer (a
    /// signal delivered, a group stop kept). Returns without consuming the child's exit,
    /// so that [`HeldChild::has_exited`] and [`HeldChild::reap`] still see it.
    fn wait_for_exec(&self, at_exec: &mut Option<impl FnOnce()>) {
        use nix::libc;
        let pid = self.pid.as_raw();
        while at_exec.is_some() {
            // SAFETY: an all-zero siginfo_t is valid; waitid fills it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // Look first (WNOWAIT), so that an exit stays for has_exited and reap.
            // SAFETY: `info` is valid for writes; `pid` is this process's child.
            let looked = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WSTOPPED | libc::WNOWAIT,
                )
            };
            if looked < 0 {
                if nix::errno::Errno::last() == nix::errno::Errno::EINTR {
                    continue;
                }
                break;
            }
            if matches!(
                info.si_code,
                libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED
            ) {
                break;
            }
            let mut status = 0;
            // SAFETY: `status` is valid for writes; the child is in a ptrace stop.
            if unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let event = status >> 16;
            let (request, signal) = if event == libc::PTRACE_EVENT_EXEC {
                if let Some(at_exec) = at_exec.take() {
                    at_exec();
                }
                (libc::PTRACE_DETACH, 0)
            } else if event == libc::PTRACE_EVENT_STOP {
                // A group stop (SIGSTOP, SIGTSTP): the child stays stopped until SIGCONT.
                (libc::PTRACE_LISTEN, 0)
            } else if event != 0 {
                (libc::PTRACE_CONT, 0)
            } else {
                // A signal for the child: delivered (any number, real-time ones too).
                (libc::PTRACE_CONT, libc::WSTOPSIG(status))
            };
            // SAFETY: the child is this process's tracee, in a ptrace stop.
            unsafe {
                libc::ptrace(
                    request,
                    pid,
                    std::ptr::null_mut::<libc::c_void>(),
                    signal as libc::c_long,
                )
            };
        }
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
