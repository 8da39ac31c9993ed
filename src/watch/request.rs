// SPDX-License-Identifier: GPL-2.0

//! The items of a `watch-pids` write, parsed and resolved: `N`, `+N`, `-N`, `0`, `c:PATH`,
//! `-c:PATH`.

use super::bitmap::PID_LIMIT;
use super::cgroup::{cgroup_key, resolve_cgroup, WatchedCgroup};
use super::rejected::Rejected;
use crate::kernel_ext::cgroup::Cgroup;
use crate::kernel_ext::kcrate::alloc::{flags::GFP_KERNEL, KVec};
use crate::kernel_ext::pid::{current_in_initial_pid_ns, ProcessPid};
use crate::kernel_ext::prelude::*;

/// One parsed request of a `watch-pids` write.
pub(super) enum Request {
    /// `N` (follow = false) or `+N` (follow = true), N resolved to the process it names.
    Add { process: ProcessPid, follow: bool },
    /// `-N`, N resolved to a global tgid; `None` when there is nothing to remove.
    Remove { tgid: Option<i32> },
    /// `0`.
    Clear,
    /// `c:PATH`: the cgroup, and PATH as written.
    AddCgroup { cgroup: Cgroup, path: KVec<u8> },
    /// `-c:PATH`: the key ([`cgroup_key`]) of the watched cgroup it names; `None` when it
    /// names a cgroup that is not watched.
    RemoveCgroup { key: Option<usize> },
}

/// Keeps `planned`, the keys of the cgroups watched once the items so far apply, up to date
/// with `request`; refuses a cgroup beyond [`CGROUPS_MAX`](super::cgroup::CGROUPS_MAX).
pub(super) fn plan(planned: &mut KVec<usize>, request: Request) -> Result<Request, Rejected> {
    match &request {
        Request::Clear => planned.clear(),
        Request::AddCgroup { cgroup, .. } => {
            let key = cgroup_key(cgroup);
            if !planned.contains(&key) {
                planned.push_within_capacity(key).map_err(|_| Rejected {
                    error: ENOSPC,
                    why: "as many cgroups as can be are watched (64)",
                })?;
            }
        }
        Request::RemoveCgroup { key: Some(key) } => planned.retain(|k| k != key),
        _ => {}
    }
    Ok(request)
}

fn parse_decimal(digits: &[u8]) -> Result<i32> {
    if digits.is_empty() || digits.len() > 10 {
        return Err(EINVAL);
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(EINVAL);
        }
        value = value * 10 + i64::from(d - b'0');
    }
    // CAST: PID_LIMIT is 2^22.
    if value >= PID_LIMIT as i64 {
        return Err(EINVAL);
    }
    i32::try_from(value).map_err(|_| EINVAL)
}

pub(super) fn parse_request(token: &[u8], cgroups: &[WatchedCgroup]) -> Result<Request, Rejected> {
    match token {
        [b'c', b':', path @ ..] => {
            let cgroup = resolve_cgroup(path)?;
            let mut written = KVec::with_capacity(path.len(), GFP_KERNEL)?;
            written.extend_from_slice(path, GFP_KERNEL)?;
            Ok(Request::AddCgroup {
                cgroup,
                path: written,
            })
        }
        [b'-', b'c', b':', path @ ..] => {
            let key = match resolve_cgroup(path) {
                // Also one that an earlier item of the same write adds (`plan` and the apply
                // step look the key up in what is watched by then); the address of a cgroup
                // that is neither watched nor added names nothing.
                Ok(cgroup) => Some(cgroup_key(&cgroup)),
                // The path no longer resolves in the writer's mount namespace (cgroup2 has no
                // rename, but the mount may have changed): the path it is listed with still
                // names it. Else the error stands (a mistyped path is not taken for a removed
                // cgroup).
                Err(rejected) => Some(
                    cgroups
                        .iter()
                        .find(|c| c.path.as_slice() == path)
                        .map(|c| cgroup_key(&c.cgroup))
                        .ok_or(rejected)?,
                ),
            };
            Ok(Request::RemoveCgroup { key })
        }
        [b'+', digits @ ..] => {
            let nr = parse_decimal(digits)?;
            if nr == 0 {
                return Err(EINVAL.into());
            }
            Ok(Request::Add {
                process: ProcessPid::find_in_current_ns(nr)?,
                follow: true,
            })
        }
        [b'-', digits @ ..] => {
            let nr = parse_decimal(digits)?;
            if nr == 0 {
                return Err(EINVAL.into());
            }
            // A process that is gone has left the set already. Its number still names a watched
            // pid only when the writer sees global pids; from a child namespace it names none.
            let tgid = match ProcessPid::find_in_current_ns(nr) {
                Ok(process) => Some(process.tgid()),
                Err(_) if current_in_initial_pid_ns() => Some(nr),
                Err(_) => None,
            };
            Ok(Request::Remove { tgid })
        }
        digits => match parse_decimal(digits)? {
            0 => Ok(Request::Clear),
            nr => Ok(Request::Add {
                process: ProcessPid::find_in_current_ns(nr)?,
                follow: false,
            }),
        },
    }
}
