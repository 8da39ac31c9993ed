//! `memmon top`: the live view. Events come from the module's stream (the processes
//! watched with `-p`, `--cgroup` or the command after `--`) or from a capture replayed at
//! `--speed` times its own pace; they go into [`memmon::top::TopModel`] (the report's
//! replay), sampled every `--interval`. On a terminal the sample is drawn with ratatui
//! (keys: s sort, p/space pause, tab processes/sites, q quit); otherwise it is printed as
//! a plain table every interval.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use memmon::capture::control::process_path;
use memmon::report::view::symbols::SymbolOptions;
use memmon::top::{
    process_cells, render_plain, site_cells, status_line, ProcessOrder, SiteOrder, TopModel,
    TopSample, PROCESS_COLUMNS, SITE_COLUMNS,
};
use memmon::{parse_line, CaptureReader, EventKind, ProcInterface, Snapshot, SnapshotSource};
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::DefaultTerminal;

use crate::child::{HeldChild, Stop};
use crate::live::{catch_interrupts, interrupted, monotonic_now, LiveEvents};

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
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pids: Vec<u32>,
    /// Watch every process of this cgroup v2 directory and below (absolute path).
    #[arg(long, value_name = "PATH")]
    cgroup: Option<PathBuf>,
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
        seen: std::collections::BTreeSet<u32>,
    },
}

/// How far ahead of its time a replayed event may be applied (no sleep for less).
const PACE_SLACK: Duration = Duration::from_millis(2);

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
            } => {
                let timeout = deadline
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(u128::from(u16::MAX)) as u16;
                let since = *since;
                events.poll_lines(timeout, |line| {
                    let event = match parse_line(line) {
                        Ok(event) => event,
                        Err(_) => return Ok(()),
                    };
                    if event.time < since && !matches!(event.kind, EventKind::Lost { .. }) {
                        return Ok(());
                    }
                    if event.pid != 0 && seen.insert(event.pid) {
                        first_seen(model, event.pid);
                    }
                    model.event(&event);
                    Ok(())
                })?;
                Ok(true)
            }
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

/// A live process seen for the first time: its name and mappings from /proc.
fn first_seen(model: &mut TopModel, pid: u32) {
    if let Ok(comm) = std::fs::read_to_string(process_path(pid, "comm")) {
        model.name(pid, comm.trim_end());
    }
    if let Ok(maps) = std::fs::read_to_string(process_path(pid, "maps")) {
        model.snapshot(&Snapshot {
            source: SnapshotSource::Maps,
            pid,
            time: monotonic_now(),
            reason: "start".to_owned(),
            note: None,
            lines: maps.lines().map(str::to_owned).collect(),
        });
    }
}

/// What was added to the watch set, to take away at the end.
enum Watched {
    Nothing,
    Pids(Vec<u32>),
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
    let (mut source, watched) = match &args.input {
        Some(path) => {
            let file =
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
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
    let result = if io::stdout().is_terminal() {
        let mut terminal = ratatui::init();
        let result = terminal_loop(&mut terminal, &mut model, &mut source, interval);
        ratatui::restore();
        result
    } else {
        let command_exited = || match &watched {
            Watched::Command(child) => child.has_exited().unwrap_or(true),
            _ => false,
        };
        plain_loop(&mut model, &mut source, interval, args.top, command_exited)
    };
    match watched {
        Watched::Nothing => {}
        Watched::Pids(pids) => {
            for pid in pids {
                let _ = proc.unwatch(&[pid]);
            }
        }
        Watched::Cgroup(path) => {
            let _ = proc.unwatch_cgroup(&path);
        }
        Watched::Command(child) => {
            if !child.has_exited().unwrap_or(true) {
                child.signal(nix::sys::signal::Signal::SIGTERM);
            }
            let _ = child.reap();
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
    let mut seen = std::collections::BTreeSet::new();
    let watched = if let Some(path) = cgroup {
        proc.watch_cgroup(&path)?;
        Watched::Cgroup(path)
    } else if !args.pids.is_empty() {
        proc.watch_following(&args.pids)?;
        for &pid in &args.pids {
            seen.insert(pid);
            first_seen(model, pid);
        }
        Watched::Pids(args.pids.clone())
    } else {
        let mut child = HeldChild::spawn(&args.command)?;
        let pid = child.pid_u32();
        if let Err(error) = proc.watch_following(&[pid]) {
            child.abandon();
            return Err(error.into());
        }
        seen.insert(pid);
        child.release_at_exec(|stop| {
            if stop == Stop::Exec {
                first_seen(model, pid);
            }
        })?;
        Watched::Command(child)
    };
    Ok((
        Source::Live {
            events,
            since,
            seen,
        },
        watched,
    ))
}

/// stdout is not a terminal: a table every interval, until the capture ends, the command
/// exits (its last events read, then one last table) or Ctrl-C.
fn plain_loop(
    model: &mut TopModel,
    source: &mut Source,
    interval: Duration,
    top: usize,
    command_exited: impl Fn() -> bool,
) -> Result<()> {
    let mut out = io::stdout().lock();
    let mut next = Instant::now() + interval;
    loop {
        let exited = command_exited();
        let more = source.feed(model, next)? && !exited;
        if Instant::now() >= next || !more {
            let sample = model.sample(interval.as_secs_f64() * source.pace());
            if write!(out, "{}", render_plain(&sample, top))
                .and_then(|()| out.flush())
                .is_err()
            {
                return Ok(()); // the reader went away
            }
            next += interval;
        }
        if !more || interrupted() {
            return Ok(());
        }
    }
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
}

/// How often keys are looked at while events are fed.
const KEY_POLL: Duration = Duration::from_millis(50);

fn terminal_loop(
    terminal: &mut DefaultTerminal,
    model: &mut TopModel,
    source: &mut Source,
    interval: Duration,
) -> Result<()> {
    let mut screen = Screen {
        pane: Pane::Processes,
        process_order: ProcessOrder::default(),
        site_order: SiteOrder::default(),
        paused: false,
        ended: false,
    };
    let mut shown = model.sample(0.0);
    let mut next = Instant::now() + interval;
    let mut last = Instant::now();
    draw(terminal, &shown, &screen)?;
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
            next = Instant::now() + interval;
            redraw = true;
        }
        while event::poll(Duration::ZERO)? {
            match event::read()? {
                TermEvent::Key(key) if key.kind == KeyEventKind::Press => match key.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
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
            return Ok(());
        }
        if redraw {
            draw(terminal, &shown, &screen)?;
        }
    }
}

fn draw(terminal: &mut DefaultTerminal, sample: &TopSample, screen: &Screen) -> Result<()> {
    let mut sample = sample.clone();
    sample.sort_processes(screen.process_order);
    sample.sort_sites(screen.site_order);
    terminal
        .draw(|frame| {
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
        })
        .context("cannot draw on the terminal")?;
    Ok(())
}
