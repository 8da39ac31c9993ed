//! The module's own parser of `/proc/memmon/unwind` writes (`src/unwind/format.rs`, free of
//! the kernel), compiled here: it accepts every write this crate encodes, and refuses every
//! fuzz case the crate's validator refuses for the format (EINVAL), so that the two cannot
//! drift apart.

#[allow(dead_code, clippy::all)]
#[path = "../../../src/unwind/format.rs"]
mod format;

use memmon_unwind::fuzz::{generate, FuzzContext};
use memmon_unwind::protocol::Reject;

#[test]
fn the_module_parser_agrees_with_the_crate_on_every_fuzz_case() {
    let context = FuzzContext::new(100, 200);
    for write in context.setup_writes() {
        assert!(format::parse(&write).is_ok(), "the setup write is refused");
    }
    let cases = generate(7, 10_000, &context);
    let mut format_errors = 0;
    for (i, case) in cases.iter().enumerate() {
        let parsed = format::parse(&case.bytes);
        match &case.reject {
            Reject::Invalid(_) => {
                format_errors += 1;
                assert!(
                    parsed.is_err(),
                    "case {i} ({}): the module accepts it",
                    case.mutation
                );
            }
            // Refused later, for the module's state (unknown key, process not watched): the
            // format itself is valid.
            _ => assert!(
                parsed.is_ok(),
                "case {i} ({}): the module refuses its format: {:?}",
                case.mutation,
                parsed.err()
            ),
        }
    }
    assert!(format_errors > 5_000, "only {format_errors} format cases");
}
