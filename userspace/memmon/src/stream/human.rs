//! A human-readable rendering in the style of the original memmon log.
//!
//! ```text
//! 29305: anon page @0x804a004 (W)
//! 29305: mmap(0x0, 139264, rw-, PRIVATE|ANONYMOUS, fd -1) -> 0x7f5a2c1e4000
//! 29305: munmap(0x7f5a2c1e4000, 139264) -> 0
//! 29305: fsync(1) -> 0
//! ```

use std::fmt;

use crate::stream::event::{Event, EventKind, Ret, SyscallResult};

/// Wraps an event so that `Display` gives the human-readable form (no newline).
#[derive(Debug, Clone, Copy)]
pub struct Human<'e, 'a> {
    event: &'e Event<'a>,
    with_time: bool,
}

impl<'a> Event<'a> {
    /// The human-readable form: `PID: what happened` (`PID/TID:` for a non-main thread).
    pub fn human(&self) -> Human<'_, 'a> {
        Human {
            event: self,
            with_time: false,
        }
    }

    /// The human-readable form prefixed with the timestamp.
    pub fn human_with_time(&self) -> Human<'_, 'a> {
        Human {
            event: self,
            with_time: true,
        }
    }
}

fn hex_ret(result: &SyscallResult) -> Ret {
    Ret {
        result: *result,
        hex: true,
    }
}

fn dec_ret(result: &SyscallResult) -> Ret {
    Ret {
        result: *result,
        hex: false,
    }
}

/// Describes a wait(2) status: `exited 3`, `killed by SIGKILL`, ...
pub fn describe_wait_status(code: i32) -> String {
    let signal = code & 0x7f;
    if signal == 0 {
        format!("exited {}", (code >> 8) & 0xff)
    } else if signal == 0x7f {
        format!("stopped (status {code:#x})")
    } else {
        let core = if code & 0x80 != 0 {
            " (core dumped)"
        } else {
            ""
        };
        format!("killed by signal {signal}{core}")
    }
}

impl fmt::Display for Human<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let event = self.event;
        if self.with_time {
            write!(f, "{} ", event.time)?;
        }
        if let EventKind::Lost { count } = event.kind {
            return write!(
                f,
                "*** {count} events lost (overwritten before they were read) ***"
            );
        }
        if event.pid == event.tid {
            write!(f, "{}: ", event.pid)?;
        } else {
            write!(f, "{}/{}: ", event.pid, event.tid)?;
        }
        write_what(f, &event.kind)?;
        if let Some(dur) = event.dur {
            write!(f, " in {dur} ns")?;
        }
        Ok(())
    }
}

/// Writes what happened (the part after `PID: `).
fn write_what(f: &mut fmt::Formatter<'_>, kind: &EventKind<'_>) -> fmt::Result {
    {
        match kind {
            EventKind::Fault {
                fault_type,
                access,
                addr,
                ip: _,
                user,
                huge,
                major,
                retry,
                pages,
                gen,
            } => {
                write!(
                    f,
                    "{} page @{addr:#x} ({})",
                    fault_type.as_str(),
                    access.as_str()
                )?;
                for (present, note) in [
                    (!user, " [kernel]"),
                    (*huge, " [huge]"),
                    (*major, " [major]"),
                    (*retry, " [retry]"),
                ] {
                    if present {
                        f.write_str(note)?;
                    }
                }
                if *pages != 1 {
                    write!(f, " [{pages} pages]")?;
                }
                if let Some(gen) = gen {
                    write!(f, " [generation {gen}]")?;
                }
                Ok(())
            }
            EventKind::Mmap {
                addr,
                len,
                prot,
                flags,
                fd,
                off,
                ret,
                file,
            } => {
                write!(f, "mmap({addr:#x}, {len}, {prot}, {flags}, fd {fd}")?;
                if *off != 0 {
                    write!(f, ", off {off}")?;
                }
                write!(f, ") -> {}", hex_ret(ret))?;
                if let Some(file) = file {
                    write!(f, " {}", file.to_string_lossy())?;
                }
                Ok(())
            }
            EventKind::Munmap { addr, len, ret } => {
                write!(f, "munmap({addr:#x}, {len}) -> {}", dec_ret(ret))
            }
            EventKind::Mremap {
                old,
                old_len,
                new_len,
                flags,
                new,
                ret,
            } => write!(
                f,
                "mremap({old:#x}, {old_len}, {new_len}, {flags}, {new:#x}) -> {}",
                hex_ret(ret)
            ),
            EventKind::Brk { req, ret } => write!(f, "brk({req:#x}) -> {ret:#x}"),
            EventKind::Mprotect {
                addr,
                len,
                prot,
                ret,
            } => write!(f, "mprotect({addr:#x}, {len}, {prot}) -> {}", dec_ret(ret)),
            EventKind::Madvise {
                addr,
                len,
                advice,
                ret,
            } => write!(f, "madvise({addr:#x}, {len}, {advice}) -> {}", dec_ret(ret)),
            EventKind::Mlock { addr, len, ret } => {
                write!(f, "mlock({addr:#x}, {len}) -> {}", dec_ret(ret))
            }
            EventKind::Mlock2 {
                addr,
                len,
                flags,
                ret,
            } => write!(f, "mlock2({addr:#x}, {len}, {flags}) -> {}", dec_ret(ret)),
            EventKind::Munlock { addr, len, ret } => {
                write!(f, "munlock({addr:#x}, {len}) -> {}", dec_ret(ret))
            }
            EventKind::Mlockall { flags, ret } => {
                write!(f, "mlockall({flags}) -> {}", dec_ret(ret))
            }
            EventKind::Munlockall { ret } => write!(f, "munlockall() -> {}", dec_ret(ret)),
            EventKind::Fsync { fd, ret } => write!(f, "fsync({fd}) -> {}", dec_ret(ret)),
            EventKind::Msync {
                addr,
                len,
                flags,
                ret,
            } => write!(f, "msync({addr:#x}, {len}, {flags}) -> {}", dec_ret(ret)),
            EventKind::PkeyMprotect {
                addr,
                len,
                prot,
                pkey,
                ret,
            } => write!(
                f,
                "pkey_mprotect({addr:#x}, {len}, {prot}, {pkey}) -> {}",
                dec_ret(ret)
            ),
            EventKind::Mseal {
                addr,
                len,
                flags,
                ret,
            } => write!(f, "mseal({addr:#x}, {len}, {flags}) -> {}", dec_ret(ret)),
            EventKind::ProcessMadvise {
                pidfd,
                vec,
                vlen,
                advice,
                flags,
                ret,
            } => write!(
                f,
                "process_madvise(pidfd {pidfd}, {vec:#x}, {vlen}, {advice}, {flags}) -> {}",
                dec_ret(ret)
            ),
            EventKind::Shmat {
                shmid,
                addr,
                flags,
                ret,
            } => write!(f, "shmat({shmid}, {addr:#x}, {flags}) -> {}", hex_ret(ret)),
            EventKind::Shmdt { addr, ret } => write!(f, "shmdt({addr:#x}) -> {}", dec_ret(ret)),
            EventKind::Rss {
                anon,
                file,
                shmem,
                swap,
                peak,
                at,
            } => write!(
                f,
                "rss at {}: anon {anon}, file {file}, shmem {shmem}, swap {swap}, peak {peak}",
                at.as_str()
            ),
            EventKind::Mark { text } => write!(f, "mark {:?}", text.to_string_lossy()),
            EventKind::Exec { comm, filename } => write!(
                f,
                "exec {} ({})",
                filename.to_string_lossy(),
                comm.to_string_lossy()
            ),
            EventKind::Fork { child, watched } => {
                let note = if *watched { " (watched)" } else { "" };
                write!(f, "fork -> {child}{note}")
            }
            EventKind::Exit { code } => write!(f, "exit: {}", describe_wait_status(*code)),
            EventKind::Gen { n, armed } => {
                write!(f, "generation {n}: {armed} pages armed for access sampling")
            }
            EventKind::Lost { .. } => Ok(()),
        }
    }
}
