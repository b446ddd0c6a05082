//! `sdlc-runner status --watch`: the status page's picture in a terminal, refreshed in place
//! (for an SSH session): each worker's state and step, the counters against their limits, the
//! last journal records and the halt diagnostic. Read from the same files as `status`.

use crate::commands::status::{self, Status};
use crate::config::Config;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, List, ListItem, Paragraph, Row, Table, Wrap};
use ratatui::Frame;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often the files are read again.
const REFRESH: Duration = Duration::from_secs(1);
/// Journal records shown.
const RECENT: usize = 12;

pub fn run(config: &Path) -> i32 {
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() {
        say!("error: status --watch draws on a terminal; use `status --json` in scripts");
        return 2;
    }
    let mut terminal = ratatui::init();
    let result = watch(&mut terminal, &cfg);
    ratatui::restore();
    match result {
        Ok(()) => 0,
        Err(e) => {
            say!("error: status --watch: {e}");
            2
        }
    }
}

fn watch(terminal: &mut ratatui::DefaultTerminal, cfg: &Config) -> std::io::Result<()> {
    let mut last = Instant::now() - REFRESH;
    let mut view = Picture::default();
    loop {
        if last.elapsed() >= REFRESH {
            view = Picture::read(cfg);
            last = Instant::now();
        }
        terminal.draw(|frame| draw(frame, &view))?;
        if event::poll(Duration::from_millis(200))? {
            if let Event::Key(key) = event::read()? {
                let ctrl_c =
                    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
                if ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Esc) {
                    return Ok(());
                }
            }
        }
    }
}

/// What one refresh shows.
#[derive(Default)]
struct Picture {
    status: Option<Status>,
    error: Option<String>,
    recent: Vec<String>,
}

impl Picture {
    fn read(cfg: &Config) -> Picture {
        match status::status(cfg) {
            Ok(st) => Picture {
                recent: recent(&st.journal),
                status: Some(st),
                error: None,
            },
            Err(e) => Picture {
                status: None,
                error: Some(e.to_string()),
                recent: Vec::new(),
            },
        }
    }
}

/// The last records of a journal, one line each, redacted (read from its end only).
fn recent(journal: &Path) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(journal) else {
        return Vec::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(64 * 1024);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text
        .lines()
        .skip(usize::from(from > 0))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| crate::redact::redact(&summary(&v)))
        .collect();
    let keep = lines.len().saturating_sub(RECENT);
    lines.drain(..keep);
    lines.reverse();
    lines
}

/// `12:03:04 RunStep (step verify, issue 2, attempt 1) → Verify`
fn summary(v: &serde_json::Value) -> String {
    let time = v["time"].as_str().unwrap_or("").get(11..19).unwrap_or("");
    let kind = v["kind"].as_str().unwrap_or("?");
    let inner = if v["event"].is_object() {
        &v["event"]
    } else {
        &v["effect"]
    };
    let name = inner["event"]
        .as_str()
        .or_else(|| inner["effect"].as_str())
        .unwrap_or(kind);
    let bits: Vec<String> = ["step", "issue", "attempt", "class", "seconds"]
        .iter()
        .filter_map(|k| {
            let x = &inner[*k];
            (!x.is_null())
                .then(|| format!("{k} {}", x.as_str().map_or(x.to_string(), str::to_string)))
        })
        .collect();
    let state = v["state"]
        .as_str()
        .map(|s| format!(" → {s}"))
        .unwrap_or_default();
    if bits.is_empty() {
        format!("{time} {name}{state}")
    } else {
        format!("{time} {name} ({}){state}", bits.join(", "))
    }
}

fn draw(frame: &mut Frame, picture: &Picture) {
    let Some(st) = &picture.status else {
        let text = picture.error.clone().unwrap_or_else(|| "reading…".into());
        frame.render_widget(
            Paragraph::new(text).block(Block::default().borders(Borders::ALL).title("status")),
            frame.area(),
        );
        return;
    };
    let bars = bars(st);
    let halt = st
        .sticky_halt
        .clone()
        .or_else(|| st.workers.iter().find_map(|w| w.sticky_halt.clone()));
    let workers = st.workers.len().max(1);
    let [head, halt_area, table_area, bar_area, events_area] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(if halt.is_some() { 3 } else { 0 }),
        Constraint::Length(workers as u16 + 3),
        Constraint::Length(bars.len() as u16 + 2),
        Constraint::Min(3),
    ])
    .areas(frame.area());
    draw_head(frame, st, head);
    if let Some(h) = halt {
        frame.render_widget(
            Paragraph::new(format!("HALTED: {h}"))
                .style(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD))
                .wrap(Wrap { trim: true })
                .block(Block::default().borders(Borders::ALL)),
            halt_area,
        );
    }
    draw_workers(frame, st, table_area);
    draw_bars(frame, &bars, bar_area);
    let items: Vec<ListItem> = picture
        .recent
        .iter()
        .map(|l| ListItem::new(l.as_str()))
        .collect();
    frame.render_widget(
        List::new(items).block(
            Block::default()
                .borders(Borders::ALL)
                .title("recent records"),
        ),
        events_area,
    );
}

/// The project, the runner and the session.
fn draw_head(frame: &mut Frame, st: &Status, area: Rect) {
    let session = st
        .session
        .as_ref()
        .map(|s| {
            format!(
                "session {s} ({})",
                st.session_status.as_deref().unwrap_or("?")
            )
        })
        .unwrap_or_else(|| "no session yet".into());
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(vec![
                Span::styled(
                    "sdlc-runner ",
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(format!("{} · {}", st.project.display(), st.runner)),
            ]),
            Line::from(format!("{session} · q quits")),
        ]),
        area,
    );
}

/// One row per worker (one for the runner itself without workers): where each is and what
/// it does now.
fn draw_workers(frame: &mut Frame, st: &Status, area: Rect) {
    let dash = |s: Option<String>| s.unwrap_or_else(|| "—".into());
    let rows: Vec<Row> = if st.workers.is_empty() {
        vec![Row::new(vec![
            "runner".to_string(),
            dash(st.state.clone()),
            dash(st.current_issue_ref.clone()),
            dash(st.current_step.clone()),
            status::now_text(st.running_step.as_ref(), st.wait.as_ref()),
            st.runner.clone(),
        ])]
    } else {
        st.workers
            .iter()
            .map(|w| {
                Row::new(vec![
                    w.name.clone(),
                    dash(w.state.clone()),
                    dash(w.current_issue_ref.clone()),
                    dash(w.current_step.clone()),
                    status::now_text(w.running_step.as_ref(), w.wait.as_ref()),
                    w.runner.clone(),
                ])
            })
            .collect()
    };
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(8),
                Constraint::Length(18),
                Constraint::Length(7),
                Constraint::Length(12),
                Constraint::Min(30),
                Constraint::Length(20),
            ],
        )
        .header(
            Row::new(vec!["worker", "state", "issue", "step", "now", "runner"])
                .style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .block(Block::default().borders(Borders::ALL).title("workers")),
        area,
    );
}

/// A gauge per counter, blue, then yellow past two thirds of its limit, red at it.
fn draw_bars(frame: &mut Frame, bars: &[(String, u32, u32)], area: Rect) {
    let block = Block::default().borders(Borders::ALL).title("counters");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = Layout::vertical(vec![Constraint::Length(1); bars.len()]).split(inner);
    for ((label, count, limit), area) in bars.iter().zip(rows.iter()) {
        let ratio = if *limit > 0 {
            (f64::from(*count) / f64::from(*limit)).min(1.0)
        } else {
            0.0
        };
        let colour = if ratio >= 1.0 {
            Color::Red
        } else if ratio >= 0.66 {
            Color::Yellow
        } else {
            Color::Blue
        };
        frame.render_widget(
            Gauge::default()
                .ratio(ratio)
                .gauge_style(Style::default().fg(colour))
                .label(format!("{label}: {count}/{limit}")),
            *area,
        );
    }
}

/// `(label, count, limit)` for every counter with a limit.
fn bars(st: &Status) -> Vec<(String, u32, u32)> {
    let Some(c) = &st.counters else {
        return Vec::new();
    };
    let mut out: Vec<(String, u32, u32)> = c
        .attempts
        .iter()
        .map(|(step, n)| {
            (
                format!("failed attempts {step}"),
                *n,
                c.max_retries_per_step,
            )
        })
        .collect();
    out.push(("bounces".into(), c.bounces, c.max_bounce_retries));
    out.push((
        "consecutive escalations".into(),
        c.consecutive_escalations,
        c.max_consecutive_escalations,
    ));
    out.extend(
        c.phase_failures
            .iter()
            .filter(|(_, v)| v.limit > 0)
            .map(|(step, v)| (format!("failures in a row {step}"), v.count, v.limit)),
    );
    out.push((
        "rate-limit waits in a row".into(),
        c.rate_limit_wait_streak,
        c.max_rate_limit_waits,
    ));
    out
}
