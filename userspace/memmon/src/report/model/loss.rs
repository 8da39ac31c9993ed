//! What the stream did not record: events overwritten before the reader got them (`lost`
//! lines), faults the module did not record while its ring was nearly full (`dropped`
//! lines, per process) and stacks it shed (`stack_end=shed`, per process). A report built
//! on such a stream says so wherever it shows its figures.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

/// The most processes a sentence names for one kind of loss.
const NAMED: usize = 3;

/// The loss of one process (pid 0: processes the module could not keep apart).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProcessLoss {
    /// The process.
    pub pid: u32,
    /// Its command (`comm` of its exec, or its parent's), when the stream says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Faults not recorded (`dropped faults=N`).
    pub dropped: u64,
    /// Stacks shed (`stack_end=shed`).
    pub shed: u64,
}

impl ProcessLoss {
    /// `4242 (cc1plus)`, `4242`, or for pid 0 the processes the module could not keep
    /// apart.
    pub fn name(&self) -> String {
        match (self.pid, &self.command) {
            (0, _) => "processes the module could not keep apart".to_owned(),
            (pid, Some(command)) => format!("{pid} ({command})"),
            (pid, None) => pid.to_string(),
        }
    }
}

/// Everything the stream did not record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Loss {
    /// Events overwritten before the reader got them (`lost count=N`), of any kind.
    pub lost: u64,
    /// Faults not recorded (`dropped faults=N`), all processes.
    pub dropped: u64,
    /// Stacks shed (`stack_end=shed`), all processes.
    pub shed: u64,
    /// By process, most dropped faults first (then most stacks shed, then pid).
    #[serde(rename = "loss_by_process", skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessLoss>,
}

impl Loss {
    /// Whether nothing was lost.
    pub fn is_empty(&self) -> bool {
        self.lost == 0 && self.dropped == 0 && self.shed == 0
    }

    /// The loss of process `pid`, if any.
    pub fn process(&self, pid: u32) -> Option<&ProcessLoss> {
        self.processes.iter().find(|p| p.pid == pid)
    }

    /// The loss in one sentence, `None` when nothing was lost: `3 733 events lost
    /// (overwritten before memmon read them); 512 faults of 4242 (cc1plus) not recorded;
    /// 1 024 stacks of 4242 (cc1plus) shed (cut short or not walked)`.
    pub fn sentence(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if self.lost > 0 {
            parts.push(format!(
                "{} event{} lost (overwritten before memmon read them)",
                grouped(self.lost),
                if self.lost == 1 { "" } else { "s" }
            ));
        }
        if self.dropped > 0 {
            parts.push(format!(
                "{} not recorded",
                self.per_process("fault", |p| p.dropped)
            ));
        }
        if self.shed > 0 {
            parts.push(format!(
                "{} shed (cut short or not walked)",
                self.per_process("stack", |p| p.shed)
            ));
        }
        Some(parts.join("; "))
    }

    /// `512 faults of 4242 (cc1plus), 30 of 4250 (as) and 7 of 2 other processes`.
    fn per_process(&self, what: &str, count: impl Fn(&ProcessLoss) -> u64) -> String {
        let mut counted: Vec<&ProcessLoss> =
            self.processes.iter().filter(|p| count(p) > 0).collect();
        counted.sort_by(|a, b| count(b).cmp(&count(a)).then(a.pid.cmp(&b.pid)));
        let mut named: Vec<String> = counted
            .iter()
            .take(NAMED)
            .enumerate()
            .map(|(index, p)| {
                let n = count(p);
                if index == 0 {
                    format!("{} {what}{} of {}", grouped(n), plural(n), p.name())
                } else {
                    format!("{} of {}", grouped(n), p.name())
                }
            })
            .collect();
        let rest = &counted[counted.len().min(NAMED)..];
        if !rest.is_empty() {
            let n: u64 = rest.iter().map(|p| count(p)).sum();
            named.push(format!(
                "{} of {} other process{}",
                grouped(n),
                rest.len(),
                if rest.len() == 1 { "" } else { "es" }
            ));
        }
        match named.split_last() {
            Some((last, first)) if !first.is_empty() => {
                format!("{} and {last}", first.join(", "))
            }
            _ => named.concat(),
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `3 733`, `1 024 000`: a count with its thousands apart.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(digit);
    }
    out
}

/// The replay's count of what was lost.
#[derive(Debug, Clone, Default)]
pub(crate) struct LossCounter {
    lost: u64,
    /// Dropped faults and shed stacks by pid.
    by_pid: BTreeMap<u32, (u64, u64)>,
    /// The command of each pid, as its exec (or its parent's) named it.
    commands: HashMap<u32, String>,
}

impl LossCounter {
    /// A `lost count=N` line.
    pub(crate) fn lost(&mut self, count: u64) {
        self.lost = self.lost.saturating_add(count);
    }

    /// A `dropped faults=N` line of `pid`.
    pub(crate) fn dropped(&mut self, pid: u32, faults: u64) {
        let entry = self.by_pid.entry(pid).or_default();
        entry.0 = entry.0.saturating_add(faults);
    }

    /// A stack of `pid` with `stack_end=shed`.
    pub(crate) fn shed(&mut self, pid: u32) {
        self.by_pid.entry(pid).or_default().1 += 1;
    }

    /// `pid` executed `command` (its `comm`).
    pub(crate) fn exec(&mut self, pid: u32, command: &str) {
        self.commands.insert(pid, command.to_owned());
    }

    /// `parent` forked `child`: the child has its parent's command until it execs.
    pub(crate) fn fork(&mut self, parent: u32, child: u32) {
        if let Some(command) = self.commands.get(&parent).cloned() {
            self.commands.entry(child).or_insert(command);
        }
    }

    /// Events lost so far.
    pub(crate) fn lost_events(&self) -> u64 {
        self.lost
    }

    /// What was lost so far.
    pub(crate) fn loss(&self) -> Loss {
        let mut processes: Vec<ProcessLoss> = self
            .by_pid
            .iter()
            .filter(|(_, (dropped, shed))| *dropped > 0 || *shed > 0)
            .map(|(&pid, &(dropped, shed))| ProcessLoss {
                pid,
                command: self.commands.get(&pid).cloned().filter(|_| pid != 0),
                dropped,
                shed,
            })
            .collect();
        processes.sort_by(|a, b| {
            b.dropped
                .cmp(&a.dropped)
                .then(b.shed.cmp(&a.shed))
                .then(a.pid.cmp(&b.pid))
        });
        Loss {
            lost: self.lost,
            dropped: processes.iter().map(|p| p.dropped).sum(),
            shed: processes.iter().map(|p| p.shed).sum(),
            processes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_with_their_thousands_apart() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(3733), "3 733");
        assert_eq!(grouped(1_024_000), "1 024 000");
    }

    #[test]
    fn the_sentence_names_the_processes() {
        let mut counter = LossCounter::default();
        assert_eq!(counter.loss().sentence(), None);
        counter.lost(3733);
        counter.exec(4242, "cc1plus");
        counter.dropped(4242, 512);
        for _ in 0..1024 {
            counter.shed(4242);
        }
        assert_eq!(
            counter.loss().sentence().unwrap(),
            "3 733 events lost (overwritten before memmon read them); 512 faults of 4242 (cc1plus) not recorded; 1 024 stacks of 4242 (cc1plus) shed (cut short or not walked)"
        );
        counter.exec(10, "sh");
        counter.fork(10, 11);
        counter.dropped(10, 30);
        counter.dropped(11, 1);
        counter.dropped(12, 2);
        counter.dropped(0, 5);
        let loss = counter.loss();
        assert_eq!((loss.dropped, loss.shed), (550, 1024));
        assert_eq!(
            loss.sentence().unwrap(),
            "3 733 events lost (overwritten before memmon read them); 512 faults of 4242 (cc1plus), 30 of 10 (sh), 5 of processes the module could not keep apart and 3 of 2 other processes not recorded; 1 024 stacks of 4242 (cc1plus) shed (cut short or not walked)"
        );
    }
}
