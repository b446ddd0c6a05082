//! The live status line of a running agent step, on a terminal: issue, step, attempt,
//! elapsed time, turns and cost so far and the last tool the agent used, redrawn in place
//! (`console::show_status`) while the agent streams, and cleared when the step ends, where the
//! driver's summary line ("implement: succeeded in 3m05s (14 turns, $0.42)") takes its place.
//! Off a terminal nothing here prints: narration stays one time-stamped line per event.

use crate::agent::stream::StreamSummary;
use crate::step::Step;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the line is redrawn when nothing new arrives (the elapsed time moves).
pub const REDRAW: Duration = Duration::from_millis(500);

/// What the line shows, updated from the stream as it arrives.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub issue: u32,
    pub step: Step,
    pub attempt: u32,
    pub turns: u32,
    pub cost_usd: Option<f64>,
    pub last_tool: Option<String>,
}

impl Snapshot {
    pub fn new(issue: u32, step: Step, attempt: u32) -> Snapshot {
        Snapshot {
            issue,
            step,
            attempt,
            turns: 0,
            cost_usd: None,
            last_tool: None,
        }
    }

    /// Takes what the stream reader has learnt; `true` when the line changed.
    pub fn update(&mut self, summary: &StreamSummary) -> bool {
        let cost = summary.result.as_ref().and_then(|r| r.total_cost_usd);
        let changed = self.turns != summary.turns
            || self.cost_usd != cost
            || self.last_tool != summary.last_tool;
        if changed {
            self.turns = summary.turns;
            self.cost_usd = cost;
            self.last_tool.clone_from(&summary.last_tool);
        }
        changed
    }

    /// The line, at most `width` characters.
    pub fn render(&self, elapsed: Duration, width: usize) -> String {
        let line = format!(
            "#{} {} {} attempt {} · {}",
            self.issue,
            self.step.number(),
            self.step.key(),
            self.attempt,
            tally(
                elapsed,
                self.turns,
                self.cost_usd,
                self.last_tool.as_deref()
            )
        );
        fit(&line, width)
    }
}

/// A running step's time and work so far: `3m05s · 14 turns · $0.42 · Edit` (the cost and the
/// tool once known). The terminal line and `status` say it alike.
pub fn tally(
    elapsed: Duration,
    turns: u32,
    cost_usd: Option<f64>,
    last_tool: Option<&str>,
) -> String {
    let mut text = format!(
        "{} · {} turn{}",
        clock(elapsed),
        turns,
        if turns == 1 { "" } else { "s" }
    );
    if let Some(cost) = cost_usd {
        text.push_str(&format!(" · ${cost:.2}"));
    }
    if let Some(tool) = last_tool {
        text.push_str(&format!(" · {tool}"));
    }
    text
}

/// `45s`, `3m05s`, `1h02m`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

fn fit(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let mut out: String = line.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A status line being shown: the stream side updates the snapshot, a ticker redraws it.
#[derive(Clone)]
pub struct Live {
    shared: Arc<Mutex<Snapshot>>,
    started: Instant,
}

impl Live {
    pub fn new(snapshot: Snapshot) -> Live {
        Live {
            shared: Arc::new(Mutex::new(snapshot)),
            started: Instant::now(),
        }
    }

    /// Called with every chunk the agent writes; redraws only when something changed.
    pub fn observe(&self, summary: &StreamSummary) {
        let changed = match self.shared.lock() {
            Ok(mut s) => s.update(summary),
            Err(_) => false,
        };
        if changed {
            self.draw();
        }
    }

    pub fn draw(&self) {
        let line = match self.shared.lock() {
            Ok(s) => s.render(self.started.elapsed(), crate::console::width()),
            Err(_) => return,
        };
        crate::console::show_status(&line);
    }

    /// Redraws every [`REDRAW`] until the returned task is aborted.
    pub fn tick(&self) -> tokio::task::JoinHandle<()> {
        let live = self.clone();
        tokio::spawn(async move {
            loop {
                live.draw();
                tokio::time::sleep(REDRAW).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_what_the_stream_said_and_fits_the_terminal() {
        let mut s = Snapshot::new(12, Step::Implement, 2);
        assert_eq!(
            s.render(Duration::from_secs(185), 200),
            "#12 4 implement attempt 2 · 3m05s · 0 turns"
        );
        let mut summary = StreamSummary {
            turns: 14,
            last_tool: Some("Edit".into()),
            ..Default::default()
        };
        assert!(s.update(&summary));
        assert!(!s.update(&summary), "nothing new, no redraw");
        assert_eq!(
            s.render(Duration::from_secs(3725), 200),
            "#12 4 implement attempt 2 · 1h02m · 14 turns · Edit"
        );
        summary.result = Some(crate::agent::stream::ResultEvent {
            total_cost_usd: Some(0.4234),
            ..Default::default()
        });
        assert!(s.update(&summary));
        assert!(s
            .render(Duration::from_secs(9), 200)
            .ends_with("· 9s · 14 turns · $0.42 · Edit"));
        let narrow = s.render(Duration::from_secs(9), 20);
        assert_eq!(narrow.chars().count(), 20);
        assert!(narrow.ends_with('…'));
    }
}
