//! The human-readable form of `status`, and the one-line texts `watch` shares with it.

use super::{Counters, RunningStepView, Status, WaitView};

impl Status {
    /// The human-readable form.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let mut line = |s: String| {
            o.push_str(&s);
            o.push('\n');
        };
        line(format!("project:  {}", self.project.display()));
        line(format!("runner:   {}", self.runner));
        self.worker_lines(&mut line);
        self.train_lines(&mut line);
        self.claim_lines(&mut line);
        line(format!(
            "journal:  {} ({} records)",
            self.journal.display(),
            self.journal_lines
        ));
        if let Some(t) = &self.torn_line {
            line(format!("  warning: {t}"));
        }
        if let Some(h) = &self.sticky_halt {
            line(format!(
                "HALTED:   {h} — `run` refuses to start until you inspect the cause and pass --ack-halt"
            ));
        }
        self.session_lines(&mut line);
        if let Some(r) = &self.running_step {
            line(format!("running:  {}", running_text(r, &self.refs)));
        }
        if let Some(w) = &self.wait {
            line(format!("waiting:  {}", wait_text(w)));
        }
        if let Some(g) = &self.github {
            line(format!("github:   {}", github_text(g)));
        }
        if let Some(d) = &self.divergence {
            line(format!(
                "  warning: the journal diverges from the machine at {d}"
            ));
        }
        self.counter_lines(&mut line);
        self.spend_lines(&mut line);
        for l in refused_lines(&self.refused_hosts, &self.refs) {
            line(l);
        }
        self.failure_lines(&mut line);
        self.state_file_line(&mut line);
        line(format!("logs:     {}", self.log_dir.display()));
        line(format!(
            "orchestration log: {}",
            self.orchestration_log.display()
        ));
        o
    }

    /// The issue claims and the merge lease, each with its holder and its end.
    fn claim_lines(&self, line: &mut impl FnMut(String)) {
        let lease = self.merge_lease.iter().map(|c| ("merge:   ", c));
        for (what, c) in self.claims.iter().map(|c| ("claim:   ", c)).chain(lease) {
            line(format!(
                "{what} {} by worker {} until {}{}",
                self.refs.issue(c.issue),
                c.worker,
                c.expires_at,
                if c.live {
                    ""
                } else {
                    " (expired: may be taken over)"
                }
            ));
        }
    }

    /// The session, and where its machine is: state, issue, step.
    fn session_lines(&self, line: &mut impl FnMut(String)) {
        match &self.session {
            None => line("session:  none recorded yet".into()),
            Some(id) => {
                let mut how = session_words(self.session_status.as_deref().unwrap_or_default());
                if let Some(code) = self.exit_code {
                    how.push_str(&format!(" (code {code})"));
                }
                line(format!("session:  {id} ({how})"));
            }
        }
        if let Some(state) = &self.state {
            line(format!("state:    {state}"));
            line(format!(
                "issue:    {}",
                self.current_issue
                    .map_or("none".to_string(), |i| self.refs.issue(i))
            ));
            line(format!(
                "step:     {}{}",
                self.current_step.as_deref().unwrap_or("none"),
                self.current_attempt
                    .map(|a| format!(" (attempt {a})"))
                    .unwrap_or_default()
            ));
        }
    }

    /// The state file: where it is, and what it says or why it cannot be read.
    fn state_file_line(&self, line: &mut impl FnMut(String)) {
        let sf = &self.state_file;
        match (&sf.content, &sf.error) {
            (Some(s), _) => line(format!(
                "state file: {} (step {}, last completed {}, issue {})",
                sf.path.display(),
                s.current_step,
                s.last_completed_step,
                s.current_issue
                    .map_or("none".to_string(), |i| self.refs.issue(i))
            )),
            (None, Some(e)) => line(format!("state file: {}: {e}", sf.path.display())),
            (None, None) => line(format!("state file: {} (missing)", sf.path.display())),
        }
    }

    /// One line per worker of a fleet, with what it runs or waits for.
    fn worker_lines(&self, line: &mut impl FnMut(String)) {
        for w in &self.workers {
            let mut how = w
                .session_status
                .as_deref()
                .map_or_else(|| "no session".into(), session_words);
            if let Some(state) = &w.state {
                how.push_str(&format!(", {state}"));
            }
            if let (Some(n), Some(step)) = (w.current_issue, &w.current_step) {
                how.push_str(&format!(", issue {} at {step}", self.refs.issue(n)));
                if let Some(a) = w.current_attempt {
                    how.push_str(&format!(" attempt {a}"));
                }
            }
            if let Some(h) = &w.sticky_halt {
                how.push_str(&format!(", HALTED: {h}"));
            }
            line(format!("worker {}: {} ({how})", w.name, w.runner));
            if let Some(r) = &w.running_step {
                line(format!("  running:  {}", running_text(r, &self.refs)));
            }
            if let Some(wait) = &w.wait {
                line(format!("  waiting:  {}", wait_text(wait)));
            }
        }
    }

    /// The merge train's cars, the ones settled, its CI runs so far.
    fn train_lines(&self, line: &mut impl FnMut(String)) {
        if let Some(t) = &self.train {
            for car in &t.cars {
                let tree: Vec<String> = car.tree.iter().map(|n| self.refs.issue(*n)).collect();
                let waited = car
                    .waiting_seconds
                    .map(|s| {
                        format!(
                            ", waiting {}",
                            crate::progress::clock(std::time::Duration::from_secs(s))
                        )
                    })
                    .unwrap_or_default();
                line(format!(
                    "train:    {} at position {}: {} (main + {}){waited}",
                    self.refs.issue(car.issue),
                    car.position,
                    car.verdict,
                    tree.join(" + ")
                ));
            }
            let settled: Vec<String> = t.settled.iter().map(|n| self.refs.issue(*n)).collect();
            if !settled.is_empty() {
                line(format!(
                    "train:    settled, merging in order: {}",
                    settled.join(", ")
                ));
            }
            line(format!("train:    {} CI run(s) so far", t.runs));
        }
    }

    /// The counters: attempts, bounces, escalations, review rounds, and the streaks that halt.
    fn counter_lines(&self, line: &mut impl FnMut(String)) {
        if let Some(c) = &self.counters {
            line("counters:".into());
            line(format!(
                "  failed attempts (limit {} per step): {}",
                c.max_retries_per_step,
                render_map(&c.attempts)
            ));
            line(format!(
                "  bounces: {} (escalate above {})",
                c.bounces, c.max_bounce_retries
            ));
            line(format!(
                "  consecutive escalations: {}/{}",
                c.consecutive_escalations, c.max_consecutive_escalations
            ));
            if let Some(max) = c.max_review_rounds {
                let waiting: Vec<String> = c
                    .waiting_for_person
                    .iter()
                    .map(|&i| self.refs.issue(i))
                    .collect();
                line(format!(
                    "  review rounds: {}/{max} (looks that found the merge held: {}; waiting for a person: {})",
                    c.review_rounds,
                    c.review_looks,
                    if waiting.is_empty() { "none".to_string() } else { waiting.join(", ") }
                ));
            }
            let escalated: Vec<String> = c
                .escalated_issues
                .iter()
                .map(|&i| self.refs.issue(i))
                .collect();
            line(format!(
                "  escalated issues: {}",
                if escalated.is_empty() {
                    "none".to_string()
                } else {
                    escalated.join(", ")
                }
            ));
            streak_lines(c, line);
        }
    }

    /// What was spent against the budgets: the issue's, the session's, a call's, the day's.
    fn spend_lines(&self, line: &mut impl FnMut(String)) {
        if let Some(b) = &self.budgets {
            let of = |spent: String, limit: Option<f64>, unit: &str| match limit {
                Some(l) => format!("{spent} of {l:.2}{unit}"),
                None => format!("{spent} (no budget)"),
            };
            line(format!(
                "spend:    issue ${}, issue time {}, session ${}",
                of(format!("{:.2}", b.issue_usd), b.per_issue_usd, ""),
                of(
                    format!("{:.1}", b.issue_minutes),
                    b.per_issue_minutes,
                    " min"
                ),
                of(format!("{:.2}", b.session_usd), b.per_session_usd, ""),
            ));
            if let Some(left) = b.call_left_usd {
                let cap = b
                    .per_call_usd
                    .map(|c| format!(" (perCallUsd {c:.2})"))
                    .unwrap_or_default();
                line(format!("money per call: ${left:.2}{cap}"));
            }
        }
        if let Some(d) = &self.day {
            let frees = d
                .frees_at
                .as_ref()
                .map(|t| format!("; reached, frees at {t}"))
                .unwrap_or_default();
            line(format!(
                "day:      ${:.2} of {:.2} over the last 24 hours, every session and worker{frees}",
                d.spent_usd, d.per_day_usd
            ));
        }
    }

    /// The last failure, and what the failures since the last merge cost.
    fn failure_lines(&self, line: &mut impl FnMut(String)) {
        if let Some(f) = &self.last_failure {
            line(format!(
                "last failure: {} in {} (signature {})",
                f.class, f.step, f.signature
            ));
            for fact in &f.weakened {
                line(format!("  weakened: {fact}"));
            }
            if let Some(decided) = &f.decided {
                line(format!("  decided: {decided}"));
            }
        }
        if let Some(w) = &self.wasted_since_last_merge {
            line(format!(
                "since the last merge ({} merges this session): {} invocations, {} turns, ${:.2}",
                w.merges, w.since_merge.invocations, w.since_merge.turns, w.since_merge.cost_usd
            ));
            for (class, s) in &w.failed_by_class {
                line(format!(
                    "  failed {class}: {} invocations, {} turns, ${:.2}",
                    s.invocations, s.turns, s.cost_usd
                ));
            }
        }
    }
}

/// `refused:  api.example.com (implement attempt 1 of #3, 2026-12-06T10:00:00Z)`, one line per
/// host the allowlist's proxy refused the agent in the last run; none without a refusal.
fn refused_lines(
    hosts: &[crate::live_status::RefusedHost],
    refs: &crate::config::IssueRefs,
) -> Vec<String> {
    hosts
        .iter()
        .map(|r| {
            format!(
                "refused:  {} by the allowlist ({} attempt {} of {}, {})",
                r.host,
                r.step,
                r.attempt,
                refs.issue(r.issue),
                r.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )
        })
        .collect()
}

/// `implement attempt 2 of #12 · 3m05s · 14 turns · $0.42 · Edit` (`of ENG-12` on Linear).
pub fn running_text(r: &RunningStepView, refs: &crate::config::IssueRefs) -> String {
    let s = &r.step;
    format!(
        "{} attempt {} of {} · {}",
        s.step,
        s.attempt,
        refs.issue(s.issue),
        tally(r)
    )
}

fn tally(r: &RunningStepView) -> String {
    crate::progress::tally(
        std::time::Duration::from_secs(r.elapsed_seconds),
        r.step.turns,
        r.step.cost_usd,
        r.step.last_tool.as_deref(),
    )
}

/// What a runner does this moment, short (the table beside it names the step): `3m05s · 14
/// turns · $0.42 · Edit`, `RATE_LIMIT until 16:40:00 UTC (25s)`, or `—`.
pub fn now_text(running: Option<&RunningStepView>, wait: Option<&WaitView>) -> String {
    match (running, wait) {
        (Some(r), _) => tally(r),
        (None, Some(w)) => format!(
            "{} until {} ({})",
            w.wait.reason,
            w.wait.until.format("%H:%M:%S UTC"),
            crate::progress::clock(std::time::Duration::from_secs(w.remaining_seconds))
        ),
        (None, None) => "—".to_string(),
    }
}

/// `RATE_LIMIT until 2026-11-25 16:40:00 UTC (25s left)`.
pub fn wait_text(w: &WaitView) -> String {
    // The review's wait is a person's, not a failure's: said in words.
    let reason = match w.wait.reason.as_str() {
        "REVIEW" => "for review",
        other => other,
    };
    format!(
        "{} until {} ({} left)",
        reason,
        w.wait.until.format("%Y-%m-%d %H:%M:%S UTC"),
        crate::progress::clock(std::time::Duration::from_secs(w.remaining_seconds))
    )
}

fn render_map(m: &super::views::ByStep<u32>) -> String {
    if m.is_empty() {
        return "none".to_string();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// GitHub's requests of the live runner: `23 requests (8 answered 304, free), rate limit left 4977`.
pub(crate) fn github_text(g: &crate::stats::GithubRequests) -> String {
    let left = g
        .rate_limit_remaining
        .map_or("unknown".to_string(), |n| n.to_string());
    format!(
        "{} requests ({} answered 304, free of the rate limit), rate limit left {left}",
        g.requests, g.not_modified
    )
}

/// The streaks that halt or escalate: failures per step, the same signature, waits in a row.
fn streak_lines(c: &Counters, line: &mut impl FnMut(String)) {
    let phases: Vec<String> = c
        .phase_failures
        .iter()
        .map(|(k, v)| {
            if v.limit > 0 {
                format!("{k} {}/{}", v.count, v.limit)
            } else {
                format!("{k} {} (no limit)", v.count)
            }
        })
        .collect();
    line(format!(
        "  consecutive failures per step: {}",
        if phases.is_empty() {
            "none".to_string()
        } else {
            phases.join(", ")
        }
    ));
    line(format!(
        "  same-signature streak (limit {}): {}",
        c.max_consecutive_same_failure,
        render_map(&c.same_signature_streak)
    ));
    line(format!(
        "  rate-limit waits in a row: {}/{}",
        c.rate_limit_wait_streak, c.max_rate_limit_waits
    ));
    line(format!(
        "  network waits of steps in a row (the model out of reach): {}/{}",
        c.step_network_wait_streak, c.max_network_waits
    ));
}
/// A session's status as the text says it: the JSON's word, but for a worker standing by.
fn session_words(status: &str) -> String {
    match status {
        "standingBy" => "standing by: as many workers as allowed are at work".into(),
        other => other.into(),
    }
}
