//! The generated 1 M-event capture of the report benchmark (also used by the HTML size
//! test): one process, stacks on every line.

/// Number of event lines in the generated capture.
pub const EVENTS: usize = 1_000_000;

/// A deterministic capture of one process: per 100 events, 94 faults (anon W, file R,
/// wp, swap) with 8-frame stacks from 64 distinct call paths, 2 mmap (1 MiB anonymous),
/// 2 munmap of the oldest region once 64 are live, 1 madvise DONTNEED, 1 brk.
pub fn generate_capture() -> String {
    let mut text = String::with_capacity(EVENTS * 160);
    text.push_str(
        "# memmon-capture 1\n# snapshot maps 4000 100.000000000 start\n\
         #| 00400000-00401000 r--p 00000000 00:03 5 /bench/prog\n\
         #| 00401000-00500000 r-xp 00001000 00:03 5 /bench/prog\n\
         #| 7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n",
    );
    let mut state: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut live: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
    let mut next_region: u64 = 0x7f00_0000_0000;
    let mut brk: u64 = 0x0100_0000;
    for index in 0..EVENTS {
        let secs = 100 + index / 100_000;
        let nanos = (index % 100_000) * 10_000 + 1;
        let head = format!("{secs}.{nanos:09} 4000/4000");
        let random = next();
        let path = random % 64;
        let stack: Vec<String> = (0..8)
            .map(|depth| format!("{:#x}", 0x401000 + path * 0x100 + depth * 0x1000 + 5))
            .collect();
        let stack = stack.join(",");
        let line = match index % 100 {
            _ if live.is_empty() || index % 100 < 2 => {
                let start = next_region;
                next_region += 0x10_0000;
                live.push_back(start);
                format!(
                    "{head} mmap addr=0x0 len=1048576 prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret={start:#x} dur=2000 stack={stack}"
                )
            }
            2..=3 if live.len() > 64 => {
                let start = live.pop_front().unwrap_or(0);
                format!("{head} munmap addr={start:#x} len=1048576 ret=0 dur=3000 stack={stack}")
            }
            4 => {
                let start = live[(random as usize / 7) % live.len()];
                format!(
                    "{head} madvise addr={start:#x} len=65536 advice=DONTNEED ret=0 dur=900 stack={stack}"
                )
            }
            5 => {
                brk += 0x1000;
                format!("{head} brk req={brk:#x} ret={brk:#x} dur=500 stack={stack}")
            }
            _ => {
                let start = live[(random as usize / 3) % live.len()];
                let addr = start + (random >> 20 & 0xff) * 0x1000 + 0x10;
                let (kind, access) = match random % 20 {
                    0..=15 => ("anon", "W"),
                    16 => ("file", "R"),
                    17..=18 => ("wp", "W"),
                    _ => ("swap", "R"),
                };
                format!(
                    "{head} fault type={kind} access={access} addr={addr:#x} ip={:#x} stack={stack}",
                    0x401000 + path * 0x100 + 5
                )
            }
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}
