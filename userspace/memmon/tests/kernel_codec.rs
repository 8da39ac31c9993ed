//! The kernel module's record codec and text formatter (`src/record/`, free of the kernel),
//! compiled here on the host: random events go through the module's encode, decode and
//! text line, then this library's `parse_line` and `Display`, and must come out as the same
//! line. So the line format cannot drift between the two sides.

#[allow(dead_code, clippy::all)]
#[path = "../../../src/record/mod.rs"]
mod record;

use record::event::{Event, FaultType, Kind, StackEnd, STACK_MAX};
use record::packed::{self, State};
use record::text::{format_event, Line};

/// A small deterministic generator (xorshift64*), so that a failure can be replayed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Mostly small numbers, sometimes any 64 bits, as registers hold.
    fn value(&mut self) -> u64 {
        match self.below(4) {
            0 => self.below(16),
            1 => self.below(1 << 20),
            2 => 0x7f00_0000_0000 + self.below(1 << 32),
            _ => self.next(),
        }
    }
}

fn random_event(r: &mut Random, time_ns: &mut u64) -> (Event, Vec<u64>) {
    let kind = Kind::ALL[r.below(Kind::ALL.len() as u64) as usize];
    let pid = 1 + r.below(4) as i32;
    let tid = if r.below(3) == 0 { pid + 1 } else { pid };
    let mut event = Event::new(kind, pid, tid);
    *time_ns += r.below(1 << 24);
    event.time_ns = *time_ns;
    for arg in event.args.iter_mut() {
        *arg = r.value();
    }
    // CAST: small values, as the kernel stores them.
    event.ret = match r.below(3) {
        0 => -(r.below(140) as i64),
        1 => r.below(1 << 20) as i64,
        // A call returns an errno (above) or a value of 63 bits at most.
        _ => (r.next() >> 1) as i64,
    };
    // What the producers store for the kinds that are not calls.
    match kind {
        Kind::Fork => {
            event.args[0] = r.below(2);
            event.ret = 1 + r.below(1 << 22) as i64;
        }
        Kind::Exit => event.ret = r.next() as i32 as i64,
        Kind::Rss => event.args[5] = r.below(3),
        Kind::Exec => event.args[0] = r.below(17),
        _ => {}
    }
    if kind == Kind::Brk {
        // brk does not fail: it returns the break, an address.
        event.ret = (r.value() & 0x7fff_ffff_ffff) as i64;
    }
    if kind == Kind::Fault {
        event.fault_type = FaultType::from_u8(r.below(9) as u8).unwrap_or(FaultType::Anon);
        event.flags = r.below(1 << 8) as u32;
        event.args[2] = 1 + r.below(512);
    } else if kind.is_syscall() {
        event.dur_ns = 1 + r.below(1 << 30);
    }
    if matches!(kind, Kind::Mmap | Kind::Mark | Kind::Exec) && r.below(2) == 0 {
        let len = r.below(140) as usize;
        let text: Vec<u8> = (0..len).map(|_| r.below(256) as u8).collect();
        if r.below(2) == 0 {
            event.set_text(&text);
        } else {
            event.set_text_tail(&text);
        }
    }
    // Only faults and system calls carry stacks.
    let stacked = kind == Kind::Fault || kind.is_syscall();
    let depth = if !stacked || r.below(2) == 0 {
        0
    } else {
        1 + r.below(STACK_MAX as u64) as usize
    };
    let stack: Vec<u64> = (0..depth).map(|_| 0x40_0000 + r.below(1 << 20)).collect();
    if !stack.is_empty() {
        event.stack_end = StackEnd::ALL[r.below(StackEnd::ALL.len() as u64) as usize];
    }
    (event, stack)
}

#[test]
fn kernel_lines_round_trip_through_the_library() {
    let mut r = Random(0x6d65_6d6d_6f6e_2121);
    let mut time_ns = 1_000_000_000;
    let mut encoder = State::ZERO;
    let mut decoder = State::ZERO;
    let mut block = vec![0u8; 4096];
    let mut line = Line::new();
    let mut checked = 0;
    for i in 0..20_000 {
        let (event, stack) = random_event(&mut r, &mut time_ns);
        // Each block starts from the zero state, as the ring's do.
        if i % 64 == 0 {
            encoder.reset();
            decoder.reset();
        }
        let size = packed::encode(&event, event.time_ns, &stack, &mut encoder, &mut block)
            .expect("a record fits in a block");
        let mut decoded = Event::new(Kind::Fault, 0, 0);
        let mut frames = [0u64; STACK_MAX];
        let (used, stack_len) =
            packed::decode(&block[..size], &mut decoder, &mut decoded, &mut frames)
                .expect("the record decodes");
        assert_eq!(used, size, "event {i}: decode used a different size");
        assert_eq!(&frames[..stack_len], &stack[..], "event {i}: stack");
        format_event(&mut line, &decoded, &frames[..stack_len]);
        let text = std::str::from_utf8(line.as_bytes()).expect("lines are ASCII");
        let text = text.strip_suffix('\n').expect("a line ends with a newline");
        let parsed = memmon::parse_line(text)
            .unwrap_or_else(|e| panic!("event {i}: the library refuses {text:?}: {e}"));
        assert_eq!(parsed.to_string(), text, "event {i}: Display differs");
        checked += 1;
    }
    assert_eq!(checked, 20_000);
}
