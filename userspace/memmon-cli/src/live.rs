//! SIGINT/SIGTERM for the live loops; the stream and the clock are the library's
//! ([`memmon::capture::live`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
pub use memmon::capture::live::{monotonic_now, LiveEvents};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// Number of SIGINT/SIGTERM received.
static INTERRUPTS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_interrupt(_signal: nix::libc::c_int) {
    // Only an atomic add: async-signal-safe.
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag instead of killing memmon, without SA_RESTART so
/// that a blocked poll returns at once. Exec resets the handler in children.
pub fn catch_interrupts() -> Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only updates an atomic, which is async-signal-safe.
        unsafe { sigaction(signal, &action) }
            .with_context(|| format!("cannot install a {signal} handler"))?;
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    interrupt_count() > 0
}

/// How many times SIGINT or SIGTERM arrived.
pub fn interrupt_count() -> usize {
    INTERRUPTS.load(Ordering::SeqCst)
}
