//! `memmon top`: the live view. Events come from the module's stream (the processes
//! watched with `-p`, `--cgroup` or the command after `--`) or from a capture replayed at
//! `--speed` times its own pace; they go into [`memmon::top::TopModel`] (the report's
//! replay), sampled every `--interval`. On a terminal the sample is drawn with ratatui
//! (keys: s sort, p/space pause, tab processes/sites, q quit); where stdout is not a
//! terminal, or one memmon cannot drive (a console without a controlling terminal, where
//! opening /dev/tty fails), it is printed as a plain table every interval and once more at
//! the end, with one line on stderr saying so.
//!
//! Live, the module records call stacks (`--stacks N`, as deep as `record`'s by default,
//! `stack_depth` restored at the end) and memmon loads the unwind tables of the watched
//! processes, as `record` does, so that the sites are named by the program's own code.
//!
//! With `-p` or `-- CMD`, top follows the processes it added and the children they fork
//! (`fork ... watched=1`), and unwatches those still running at the end. Live lines that do
//! not decode are warned about on stderr once per event kind (after the terminal view, while
//! it is up; its status line counts them).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use memmon::capture::control::{process_path, ModuleParams};
use memmon::capture::resident::start_snapshots;
use memmon::report::symbolize::symbols::SymbolOptions;
use memmon::top::{
    process_cells, render_plain, site_cells, status_line, ProcessOrder, SiteOrder, TopModel,
    TopSample, PROCESS_COLUMNS, SITE_COLUMNS,
};
use memmon::{
    parse_line, CaptureReader, EventKind, ParseError, ProcInterface, Snapshot, SnapshotSource,
};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind};
use ratatui::crossterm::terminal::{self as crossterm_terminal, EnterAlternateScreen};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::{DefaultTerminal, Terminal};

use crate::child::{HeldChild, Stop};
use crate::live::{catch_interrupts, interrupted, monotonic_now, LiveEvents};
use crate::params::{self, DEFAULT_STACK_DEPTH};
use crate::unwind::UnwindTables;

/// Options of `memmon top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Seconds between refreshes.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0,
          value_parser = parse_seconds)]
    interval: f64,
    /// Replay this capture instead of the live stream (needs neither root nor the module).
    #[arg(long, short = 'i', value_name = "CAPTURE",
          conflicts_with_all = ["pids", "cgroup", "command"])]
    input: Option<PathBuf>,
    /// With --input: replay at N times the capture's own pace.
    #[arg(long, value_name = "N", default_value_t = 1.0, requires = "input",
          value_parser = parse_speed)]
    speed: f64,
    /// Watch these running processes, and their children (repeat or separate with commas).
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',',
          conflicts_with_all = ["cgroup", "command"])]
    pids: Vec<u32>,
    /// Watch every process of this cgroup v2 directory and below (`/sys/fs/cgroup/NAME`
    /// or NAME below the cgroup2 root).
    #[arg(long, value_name = "PATH", conflicts_with = "command")]
    cgroup: Option<PathBuf>,
    /// Record user call stacks of up to N frames (module parameter stack_depth, restored
    /// afterwards; by default as deep as `record`'s, 0 = none).
    #[arg(long, value_name = "N", conflicts_with = "input",
          value_parser = clap::value_parser!(u32).range(0..=127))]
    stacks: Option<u32>,
    /// Sites listed in the plain table.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Where the binaries are (as for `memmon report`).
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
    /// The command to run and watch (with its children).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.05..=3600.0).contains(&value) => Ok(value),
        _ => Err("expected seconds from 0.05 to 3600".to_owned()),
    }
}

fn parse_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value > 0.0 && value.is_finite() => Ok(value),
        _ => Err("expected a positive factor".to_owned()),
    }
}

/// Where the events come from.
enum Source {
    /// A capture, paced.
    Capture {
        reader: Box<CaptureReader<BufReader<File>>>,
        speed: f64,
        /// Stream time of the first event and the wall time it was replayed.
        origin: Option<(u128, Instant)>,
        /// The next event, read but not due yet.
        pending: Option<memmon::Event<'static>>,
        done: bool,
    },
    /// The module's stream.
    Live {
        events: LiveEvents,
        since: memmon::Timestamp,
        /// Pids seen (snapshotted when first seen).
        seen: BTreeSet<u32>,
        /// With `-p` or `-- CMD`: the processes added and the children they forked (their
        /// `fork ... watched=1`), less those that exited: unwatched at the end. None with
        /// `--cgroup`, where the cgroup is.
        followed: Option<BTreeSet<u32>>,
        undecodable: Undecodable,
        /// The unwind tables of the watched processes (boxed: the variant is large).
        tables: Box<UnwindTables>,
    },
}

/// Most event kinds whose undecodable lines are counted apart (and warned about).
const UNDECODABLE_KINDS: usize = 16;

/// Live lines that do not decode: each kind's first one is warned about on stderr (as
/// `record` warns), the rest counted; while the terminal view is up, the warnings are held
/// until it is gone.
#[derive(Debug, Default)]
struct Undecodable {
    total: u64,
    /// Lines per event kind (the line's third word).
    kinds: BTreeMap<String, u64>,
    /// Warnings held back while the terminal view owns the screen.
    held: Option<Vec<String>>,
}

impl Undecodable {
    fn note(&mut self, line: &str, error: &ParseError) {
        self.total += 1;
        let kind = line.split_ascii_whitespace().nth(2).unwrap_or("");
        if let Some(count) = self.kinds.get_mut(kind) {
            *count += 1;
            return;
        }
        if self.kinds.len() == UNDECODABLE_KINDS {
            return;
        }
        self.kinds.insert(kind.to_owned(), 1);
        let warning = format!(
            "memmon: warning: skipping undecodable event ({error}): {line} (further ones of \
             this kind are counted, not shown)"
        );
        match &mut self.held {
            Some(held) => held.push(warning),
            None => eprintln!("{warning}"),
        }
    }

    /// Holds the warnings back (the terminal view is up).
    fn hold(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// Prints the held warnings, and how many lines were skipped in all when some were not
    /// shown.
    fn finish(&mut self) {
        for warning in self.held.take().unwrap_or_default() {
            eprintln!("{warning}");
        }
        let shown = self.kinds.len() as u64;
        if self.total > shown {
            eprintln!(
                "memmon: warning: {} undecodable events skipped in all ({} not shown)",
                self.total,
                self.total - shown
            );
        }
    }
}

/// How far ahead of its time a replayed event may be applied (no sleep for less).
const PACE_SLACK: Duration = Duration::from_millis(2);
/// At the end, at most this many rounds of unwatching the followed processes and reading
/// the stream for forks not read yet, each reading for [`UNWATCH_READ`].
const UNWATCH_ROUNDS: usize = 8;
const UNWATCH_READ: Duration = Duration::from_millis(20);

fn sleep_until(when: Instant) {
    let now = Instant::now();
    if when > now {
        std::thread::sleep(when - now);
    }
}

impl Source {
    /// Feeds the model what is due until `deadline`; false once a capture is exhausted.
    fn feed(&mut self, model: &mut TopModel, deadline: Instant) -> Result<bool> {
        match self {
            Source::Capture {
                reader,
                speed,
                origin,
                pending,
                done,
            } => {
                loop {
                    if pending.is_none() {
                        let Some(record) = reader.next_record() else {
                            *done = true;
                            break;
                        };
                        match record {
                            Ok((_, memmon::Record::Event(event))) if event.pid != 0 => {
                                *pending = Some(event.into_owned());
                            }
                            Ok((_, record)) => {
                                model.record(&record);
                                continue;
                            }
                            // Bad lines are skipped, as the report skips them.
                            Err(memmon::ReadError::Parse { .. })
                            | Err(memmon::ReadError::BadSnapshotHeader { .. }) => continue,
                            Err(error) => return Err(error).context("cannot read the capture"),
                        }
                    }
                    let Some(event) = pending.take() else {
                        continue;
                    };
                    let time = event.time.as_nanos();
                    let (start, wall) = *origin.get_or_insert((time, Instant::now()));
                    let due = wall
                        + Duration::from_secs_f64(time.saturating_sub(start) as f64 / 1e9 / *speed);
                    if due > deadline {
                        // Ahead of the pace: kept for after the refresh that comes first.
                        *pending = Some(event);
                        sleep_until(deadline);
                        return Ok(true);
                    }
                    if due > Instant::now() + PACE_SLACK {
                        sleep_until(due);
                    }
                    model.event(&event);
                }
                sleep_until(deadline);
                Ok(false)
            }
            Source::Live {
                events,
                since,
                seen,
                followed,
                undecodable,
                tables,
            } => {
                let timeout = deadline
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(u128::from(u16::MAX)) as u16;
                let since = *since;
                events.poll_lines(timeout, |line| {
                    let event = match parse_line(line) {
                        Ok(event) => event,
                        Err(error) => {
                            undecodable.note(line, &error);
                            return Ok(());
                        }
                    };
                    if event.time < since && !matches!(event.kind, EventKind::Lost { .. }) {
                        return Ok(());
                    }
                    if let Some(followed) = followed.as_mut() {
                        match event.kind {
                            EventKind::Fork {
                                child,
                                watched: true,
                            } if followed.contains(&event.pid) => {
                                followed.insert(child);
                            }
                            EventKind::Exit { .. } => {
                                followed.remove(&event.pid);
                            }
                            _ => {}
                        }
                    }
                    if event.pid != 0 && seen.insert(event.pid) {
                        first_seen(model, event.pid, FirstSeen::Running);
                        tables.sync(event.pid);
                    }
                    tables.note(&event);
                    model.event(&event);
                    Ok(())
                })?;
                tables.flush();
                Ok(true)
            }
        }
    }

    /// Undecodable live lines so far.
    fn undecodable(&self) -> u64 {
        match self {
            Source::Capture { .. } => 0,
            Source::Live { undecodable, .. } => undecodable.total,
        }
    }

    /// Holds the warnings about undecodable lines back while the terminal view is up.
    fn hold_warnings(&mut self) {
        if let Source::Live { undecodable, .. } = self {
            undecodable.hold();
        }
    }

    /// Prints the warnings held back, and the total.
    fn finish_warnings(&mut self) {
        if let Source::Live { undecodable, .. } = self {
            undecodable.finish();
        }
    }

    /// The processes followed and still running (none with `--cgroup` or a capture).
    fn followed(&self) -> Vec<u32> {
        match self {
            Source::Live {
                followed: Some(followed),
                ..
            } => followed.iter().copied().collect(),
            _ => Vec::new(),
        }
    }

    /// Forgets the unwind ranges given (at the end).
    fn finish_tables(&mut self) {
        if let Source::Live { tables, .. } = self {
            tables.finish();
        }
    }

    /// Stream seconds per wall second.
    fn pace(&self) -> f64 {
        match self {
            Source::Capture { speed, .. } => *speed,
            Source::Live { .. } => 1.0,
        }
    }
}

/// When a live process is seen for the first time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FirstSeen {
    /// Running already (`-p`, a process of the cgroup, a child seen at its first event):
    /// what it holds is read with its mappings.
    Running,
    /// Stopped at the exec of the command `top` started: its new image holds nothing yet.
    AtExec,
}

/// A live process seen for the first time: its name, mappings and (running) the pages it
/// holds, from /proc.
fn first_seen(model: &mut TopModel, pid: u32, seen: FirstSeen) {
    if let Ok(comm) = std::fs::read_to_string(process_path(pid, "comm")) {
        model.name(pid, comm.trim_end());
    }
    if let Ok(exe) = std::fs::read_link(process_path(pid, "exe")) {
        model.executable(&exe.to_string_lossy());
    }
    let time = monotonic_now();
    if seen == FirstSeen::Running {
        if let Some(snapshots) = start_snapshots(pid, time) {
            for snapshot in snapshots {
                model.snapshot(snapshot);
            }
            return;
        }
    }
    if let Ok(maps) = std::fs::read_to_string(process_path(pid, "maps")) {
        model.snapshot(Snapshot {
            source: SnapshotSource::Maps,
            pid,
            time,
            reason: "start".to_owned(),
            note: None,
            lines: maps.lines().map(str::to_owned).collect(),
        });
    }
}

/// What was added to the watch set, to take away at the end (with the pids and the
/// command: the processes followed, [`Source::followed`]).
enum Watched {
    Nothing,
    Pids,
    Cgroup(PathBuf),
    Command(HeldChild),
}

/// `memmon top`.
pub fn top(proc: &ProcInterface, args: TopArgs) -> Result<ExitCode> {
    let symbol_options = SymbolOptions {
        sysroot: args.sysroot.clone(),
        ..SymbolOptions::default()
    };
    let mut model = TopModel::new(symbol_options);
    // Live, stacks as deep as record's, set before the command starts (restored when
    // dropped, at the end).
    let _stacks = args.input.is_none().then(|| {
        params::grow_rings(proc);
        params::stack_depth(
            &ModuleParams::default(),
            args.stacks.unwrap_or(DEFAULT_STACK_DEPTH),
            args.stacks.is_some(),
        )
    });
    let (mut source, watched) = match &args.input {
        Some(path) => {
            let file =
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            // Ctrl-C ends the replay as it ends the live view: with a last table.
            catch_interrupts()?;
            (
                Source::Capture {
                    reader: Box::new(CaptureReader::new(BufReader::new(file))),
                    speed: args.speed,
                    origin: None,
                    pending: None,
                    done: false,
                },
                Watched::Nothing,
            )
        }
        None => open_live(proc, &args, &mut model)?,
    };
    let interval = Duration::from_secs_f64(args.interval);
    let plain = format!(
        "printing a table every {} s, and one at the end",
        args.interval
    );
    let mut ended = None;
    if io::stdout().is_terminal() {
        match open_terminal() {
            Ok(mut terminal) => {
                source.hold_warnings();
                let outcome = terminal_loop(&mut terminal, &mut model, &mut source, interval);
                close_terminal();
                match outcome {
                    Ok(TerminalEnd::Quit) => ended = Some(Ok(())),
                    Ok(TerminalEnd::Failed(error)) => {
                        eprintln!("memmon top: the terminal failed ({error}): {plain}")
                    }
                    Err(error) => ended = Some(Err(error)),
                }
            }
            Err(error) => eprintln!("memmon top: cannot drive the terminal ({error}): {plain}"),
        }
    } else {
        eprintln!("memmon top: stdout is not a terminal: {plain}");
    }
    let result = match ended {
        Some(result) => result,
        None => {
            let command_exited = || match &watched {
                Watched::Command(child) => child.has_exited().unwrap_or(true),
                _ => false,
            };
            plain_loop(&mut model, &mut source, interval, args.top, command_exited)
        }
    };
    source.finish_tables();
    source.finish_warnings();
    let root = match watched {
        Watched::Nothing | Watched::Pids => None,
        Watched::Cgroup(path) => {
            let _ = proc.unwatch_cgroup(&path);
            None
        }
        Watched::Command(child) => {
            if !child.has_exited().unwrap_or(true) {
                child.signal(nix::sys::signal::Signal::SIGTERM);
            }
            let _ = child.reap();
            Some(child.pid_u32())
        }
    };
    // The command, reaped, has left the watch set; the other followed processes are still
    // in it. One at a time: one that exited meanwhile (ESRCH) must not keep the rest. A
    // fork not read yet names a child that is watched too: what is left of the stream is
    // read (briefly) for such forks, and their children are unwatched in turn.
    let mut unwatched = BTreeSet::new();
    for _ in 0..UNWATCH_ROUNDS {
        let pending: Vec<u32> = source
            .followed()
            .into_iter()
            .filter(|pid| Some(*pid) != root && !unwatched.contains(pid))
            .collect();
        if pending.is_empty() {
            break;
        }
        for pid in pending {
            let _ = proc.unwatch(&[pid]);
            unwatched.insert(pid);
        }
        if source
            .feed(&mut model, Instant::now() + UNWATCH_READ)
            .is_err()
        {
            break;
        }
    }
    result.map(|()| ExitCode::SUCCESS)
}

fn open_live(
    proc: &ProcInterface,
    args: &TopArgs,
    model: &mut TopModel,
) -> Result<(Source, Watched)> {
    let cgroup = args
        .cgroup
        .as_deref()
        .map(memmon::capture::cgroup::validate)
        .transpose()?;
    if args.pids.is_empty() && cgroup.is_none() && args.command.is_empty() {
        anyhow::bail!(
            "memmon top needs what to watch: -p PID, --cgroup PATH, -- CMD or --input CAPTURE"
        );
    }
    let events = LiveEvents::open(proc)?;
    catch_interrupts()?;
    let since = monotonic_now();
    let mut seen = BTreeSet::new();
    let mut followed = BTreeSet::new();
    let mut tables = UnwindTables::open(proc, crate::unwind::enabled());
    let watched = if let Some(path) = cgroup {
        proc.watch_cgroup(&path)?;
        Watched::Cgroup(path)
    } else if !args.pids.is_empty() {
        proc.watch_following(&args.pids)?;
        for &pid in &args.pids {
            seen.insert(pid);
            followed.insert(pid);
            first_seen(model, pid, FirstSeen::Running);
            tables.sync(pid);
        }
        Watched::Pids
    } else {
        let mut child = HeldChild::spawn(&args.command)?;
        let pid = child.pid_u32();
        if let Err(error) = proc.watch_following(&[pid]) {
            child.abandon();
            return Err(error.into());
        }
        seen.insert(pid);
        followed.insert(pid);
        // As record does: the program's maps and tables while it is stopped at its exec,
        // its libraries' once the loader mapped them and at its entry point.
        child.release_at_exec(|stop| match stop {
            Stop::Exec => {
                first_seen(model, pid, FirstSeen::AtExec);
                tables.sync_at_exec(pid);
            }
            Stop::Loader | Stop::Entry => tables.sync(pid),
        })?;
        Watched::Command(child)
    };
    let followed = (!matches!(watched, Watched::Cgroup(_))).then_some(followed);
    Ok((
        Source::Live {
            events,
            since,
            seen,
            followed,
            undecodable: Undecodable::default(),
            tables: Box::new(tables),
        },
        watched,
    ))
}

/// No terminal view: a table every interval, until the capture ends, the command exits
/// (its last events read) or Ctrl-C, and one last table then.
fn plain_loop(
    model: &mut TopModel,
    source: &mut Source,
    interval: Duration,
    top: usize,
    command_exited: impl Fn() -> bool,
) -> Result<()> {
    let mut out = io::stdout().lock();
    let mut next = Instant::now() + interval;
    let mut last = Instant::now();
    loop {
        let exited = command_exited();
        let more = source.feed(model, next)? && !exited;
        let end = !more || interrupted();
        if end || Instant::now() >= next {
            // The time that passed: the last interval is often a short one.
            let sample = model.sample(last.elapsed().as_secs_f64() * source.pace());
            last = Instant::now();
            if write!(out, "{}", render_plain(&sample, top))
                .and_then(|()| out.flush())
                .is_err()
            {
                return Ok(()); // the reader went away
            }
            next += interval;
        }
        if end {
            return Ok(());
        }
    }
}

/// The terminal view, or why there is none: raw mode, the alternate screen and a ratatui
/// terminal of stdout's size, each step undone when a later one fails (on a console
/// without a controlling terminal, /dev/tty does not open). A panic restores the terminal
/// before its message.
fn open_terminal() -> io::Result<DefaultTerminal> {
    crossterm_terminal::enable_raw_mode()?;
    if let Err(error) = ratatui::crossterm::execute!(io::stdout(), EnterAlternateScreen) {
        let _ = crossterm_terminal::disable_raw_mode();
        return Err(error);
    }
    let terminal = match Terminal::new(CrosstermBackend::new(io::stdout())) {
        Ok(terminal) => terminal,
        Err(error) => {
            close_terminal();
            return Err(error);
        }
    };
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        close_terminal();
        hook(info);
    }));
    Ok(terminal)
}

/// Leaves the alternate screen and raw mode (what fails to be undone is left).
fn close_terminal() {
    let _ = ratatui::try_restore();
}

/// What the terminal view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pane {
    Processes,
    Sites,
}

struct Screen {
    pane: Pane,
    process_order: ProcessOrder,
    site_order: SiteOrder,
    paused: bool,
    ended: bool,
    /// Undecodable live lines so far (shown in the status line).
    undecodable: u64,
}

/// How often keys are looked at while events are fed.
const KEY_POLL: Duration = Duration::from_millis(50);

/// How the terminal view ended.
enum TerminalEnd {
    /// `q`, Esc or Ctrl-C.
    Quit,
    /// Drawing or reading keys failed: the plain tables take over.
    Failed(io::Error),
}

/// The terminal view until `q`, Esc or Ctrl-C; errors are the source's.
fn terminal_loop(
    terminal: &mut DefaultTerminal,
    model: &mut TopModel,
    source: &mut Source,
    interval: Duration,
) -> Result<TerminalEnd> {
    match terminal_view(terminal, model, source, interval)? {
        Ok(()) => Ok(TerminalEnd::Quit),
        Err(error) => Ok(TerminalEnd::Failed(error)),
    }
}

/// The terminal view; the outer error is the source's, the inner the terminal's.
fn terminal_view(
    terminal: &mut DefaultTerminal,
    model: &mut TopModel,
    source: &mut Source,
    interval: Duration,
) -> Result<io::Result<()>> {
    let mut screen = Screen {
        pane: Pane::Processes,
        process_order: ProcessOrder::default(),
        site_order: SiteOrder::default(),
        paused: false,
        ended: false,
        undecodable: 0,
    };
    let mut shown = model.sample(0.0);
    let mut next = Instant::now() + interval;
    let mut last = Instant::now();
    // A terminal error ends the view with it.
    macro_rules! term {
        ($e:expr) => {
            match $e {
                Ok(value) => value,
                Err(error) => return Ok(Err(error)),
            }
        };
    }
    term!(draw(terminal, &shown, &screen));
    loop {
        let deadline = (Instant::now() + KEY_POLL).min(next);
        if !screen.ended {
            screen.ended = !source.feed(model, deadline)?;
        } else {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        }
        let mut redraw = false;
        if Instant::now() >= next {
            // Sampled even when paused, so the next shown interval is one interval.
            let sample = model.sample(last.elapsed().as_secs_f64() * source.pace());
            last = Instant::now();
            if !screen.paused {
                shown = sample;
            }
            screen.undecodable = source.undecodable();
            next = Instant::now() + interval;
            redraw = true;
        }
        while term!(event::poll(Duration::ZERO)) {
            match term!(event::read()) {
                TermEvent::Key(key) if key.kind == KeyEventKind::Press => match key.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(Ok(())),
                    KeyCode::Char('s') => match screen.pane {
                        Pane::Processes => screen.process_order = screen.process_order.next(),
                        Pane::Sites => screen.site_order = screen.site_order.next(),
                    },
                    KeyCode::Char('p') | KeyCode::Char(' ') => screen.paused = !screen.paused,
                    KeyCode::Tab => {
                        screen.pane = match screen.pane {
                            Pane::Processes => Pane::Sites,
                            Pane::Sites => Pane::Processes,
                        }
                    }
                    _ => {}
                },
                TermEvent::Resize(..) => {}
                _ => {}
            }
            redraw = true;
        }
        if interrupted() {
            return Ok(Ok(()));
        }
        if redraw {
            term!(draw(terminal, &shown, &screen));
        }
    }
}

fn draw(terminal: &mut DefaultTerminal, sample: &TopSample, screen: &Screen) -> io::Result<()> {
    let mut sample = sample.clone();
    sample.sort_processes(screen.process_order);
    sample.sort_sites(screen.site_order);
    terminal.draw(|frame| {
        let [status, main, sites, help] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let mut state = status_line(&sample);
        if screen.paused {
            state.push_str("  [paused]");
        }
        if screen.ended {
            state.push_str("  [end of capture]");
        }
        if screen.undecodable > 0 {
            state.push_str(&format!("  undecodable {} (skipped)", screen.undecodable));
        }
        frame.render_widget(Paragraph::new(format!("memmon top: {state}")), status);
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let processes = Table::new(
            sample.processes.iter().map(|r| Row::new(process_cells(r))),
            [
                Constraint::Length(7),
                Constraint::Length(15),
                Constraint::Length(10),
                Constraint::Length(10),
                Constraint::Length(10),
                Constraint::Length(11),
                Constraint::Length(11),
                Constraint::Length(7),
                Constraint::Length(6),
                Constraint::Length(7),
                Constraint::Length(8),
            ],
        )
        .header(Row::new(PROCESS_COLUMNS).style(bold))
        .block(Block::bordered().title(format!(
            " processes (sorted by {}) ",
            screen.process_order.as_str()
        )));
        let site_table = Table::new(
            sample.sites.iter().map(|r| Row::new(site_cells(r))),
            [
                Constraint::Length(11),
                Constraint::Length(12),
                Constraint::Length(10),
                Constraint::Fill(1),
            ],
        )
        .header(Row::new(SITE_COLUMNS).style(bold))
        .block(Block::bordered().title(format!(
            " sites by resident growth (sorted by {}) ",
            screen.site_order.as_str()
        )));
        // tab: the selected table on top.
        match screen.pane {
            Pane::Processes => {
                frame.render_widget(processes, main);
                frame.render_widget(site_table, sites);
            }
            Pane::Sites => {
                frame.render_widget(site_table, main);
                frame.render_widget(processes, sites);
            }
        }
        frame.render_widget(
            Line::from("s sort  p/space pause  tab processes/sites  q quit"),
            help,
        );
    })?;
    Ok(())
}
