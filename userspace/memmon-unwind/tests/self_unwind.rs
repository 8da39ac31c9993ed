//! Unwinds this test's own stack, captured with inline assembly four calls deep, with the
//! tables of the objects this process maps (the test binary, libc, libgcc_s, ld.so: the
//! Rust standard library and glibc have no frame pointers), loaded through the
//! [`Loader`] into a [`KernelModel`] that validates every write as the module does. The
//! return addresses must be those `_Unwind_Backtrace` (the `backtrace` crate) finds, and
//! reach the test's outer functions.

use std::arch::asm;
use std::path::Path;

use memmon_unwind::loader::Loader;
use memmon_unwind::maps::{read_maps, DEFAULT_PROC_ROOT};
use memmon_unwind::protocol::KernelModel;
use memmon_unwind::walk::{walk, End, Regs, Step};

struct Capture {
    regs: Regs,
    /// The stack, from `regs.rsp` up.
    stack: Vec<u8>,
    /// The frames `_Unwind_Backtrace` finds from inside `capture`.
    reference: Vec<u64>,
}

impl Capture {
    fn read(&self, address: u64) -> Option<u64> {
        let at = usize::try_from(address.checked_sub(self.regs.rsp)?).ok()?;
        let bytes = self.stack.get(at..at + 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }
}

/// The end of the mapping that holds `address` (this thread's stack).
fn mapping_end(address: u64) -> u64 {
    let maps = read_maps(Path::new(DEFAULT_PROC_ROOT), std::process::id()).expect("maps");
    maps.iter()
        .find(|m| m.start <= address && address < m.end)
        .expect("the stack is mapped")
        .end
}

#[inline(never)]
fn capture() -> Capture {
    let (rip, rsp, rbp): (u64, u64, u64);
    // SAFETY: reads three registers, touches no memory.
    unsafe {
        asm!(
            "lea {rip}, [rip]",
            "mov {rsp}, rsp",
            "mov {rbp}, rbp",
            rip = out(reg) rip,
            rsp = out(reg) rsp,
            rbp = out(reg) rbp,
            options(nomem, nostack, preserves_flags),
        );
    }
    let len = (mapping_end(rsp) - rsp).min(1 << 20);
    // SAFETY: `rsp..rsp + len` lies in this thread's stack mapping, readable; the frames
    // above `rsp` are those of `capture` and its callers, alive while it runs.
    let stack = unsafe { std::slice::from_raw_parts(rsp as *const u8, len as usize) }.to_vec();
    let mut reference = Vec::new();
    backtrace::trace(|frame| {
        reference.push(frame.ip() as u64);
        true
    });
    Capture {
        regs: Regs { rip, rsp, rbp },
        stack,
        reference,
    }
}

#[inline(never)]
fn level3(n: u64) -> Capture {
    let c = capture();
    std::hint::black_box(n);
    c
}

#[inline(never)]
fn level2(n: u64) -> Capture {
    let c = level3(std::hint::black_box(n + 1));
    std::hint::black_box(&c);
    c
}

#[inline(never)]
fn level1(n: u64) -> Capture {
    let v: Vec<u64> = (0..n).collect();
    let c = level2(std::hint::black_box(v.len() as u64));
    std::hint::black_box(&v);
    c
}

/// The test's outer function: the chain must reach it.
#[inline(never)]
fn outer() -> Capture {
    let c = level1(std::hint::black_box(7));
    std::hint::black_box(&c);
    c
}

/// The name of the function at `ip`, if the symbols say.
fn name(ip: u64) -> String {
    let mut found = String::new();
    backtrace::resolve((ip - 1) as *mut std::ffi::c_void, |symbol| {
        if found.is_empty() {
            if let Some(name) = symbol.name() {
                found = format!("{name:#}");
            }
        }
    });
    found
}

#[test]
fn own_stack_unwinds_through_std_and_libc() {
    let capture = outer();
    let pid = std::process::id();
    let mut model = KernelModel::new();
    model.watched.insert(pid);
    let mut loader = Loader::new(&mut model);
    let report = loader
        .sync_process(pid)
        .expect("the model takes every write");
    assert!(report.ranges >= 2, "{report:?}");
    assert!(!report.added.is_empty());
    drop(loader);

    let lookup = |pc: u64| model.lookup(pid, pc);
    let w = walk(lookup, |a| capture.read(a), capture.regs, 128);
    let names: Vec<String> = w.frames.iter().skip(1).map(|&ip| name(ip)).collect();
    eprintln!("walk ({:?}):", w.end);
    for (ip, (name, step)) in w.frames.iter().skip(1).zip(names.iter().zip(&w.steps)) {
        eprintln!("  {ip:#x} {step:?} {name}");
    }

    // The chain reaches the test's own functions, in order.
    let position = |what: &str| {
        names
            .iter()
            .position(|n| n.ends_with(what))
            .unwrap_or_else(|| panic!("{what} not in the walk: {names:?}"))
    };
    let l3 = position("self_unwind::level3");
    let l2 = position("self_unwind::level2");
    let l1 = position("self_unwind::level1");
    let test = position("self_unwind::outer");
    assert!(l3 < l2 && l2 < l1 && l1 < test, "{names:?}");

    // It is the chain _Unwind_Backtrace finds, to the end of the thread's stack.
    let first = w.frames[1];
    let k = capture
        .reference
        .iter()
        .position(|&ip| ip == first)
        .expect("the reference has capture's return address");
    let reference = &capture.reference[k..];
    let ours = &w.frames[1..];
    let common = ours.len().min(reference.len());
    assert_eq!(&ours[..common], &reference[..common]);
    assert!(
        common > test,
        "the walk and the reference agree past the test function"
    );
    assert_eq!(
        w.end,
        End::Outermost,
        "the thread's first frame ends the walk"
    );
    assert!(w.steps.iter().all(|s| *s == Step::Table));

    // Frame pointers alone do not get there.
    let fp = walk(|_| None, |a| capture.read(a), capture.regs, 128);
    eprintln!(
        "frame pointers alone: {} frames, {:?}",
        fp.frames.len(),
        fp.end
    );
}
