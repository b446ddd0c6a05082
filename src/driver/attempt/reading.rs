//! What an agent's run is read into: its archived log's header, what the classifier is
//! shown, its last words and what it spent.

use super::super::step_run::Voice;
use crate::agent::classify::Observation;
use crate::agent::stream::StreamSummary;
use crate::agent::AgentExit;
use crate::logs::AttemptHeader;
use crate::machine::Usage;
use crate::narration as say;
use crate::step::Step;

/// Keeps the attempt's log under the log directory and prunes older ones (to `budget`
/// bytes), never the log whose path was just printed.
pub(super) fn archive(
    logs: &crate::logs::Logs,
    budget: u64,
    voice: &Voice<'_>,
    header: &AttemptHeader,
    live_log: &std::path::Path,
) {
    match logs.archive_attempt(header, live_log) {
        Ok(path) => {
            voice.log(&say::attempt_log(&path));
            let keep = [live_log.to_path_buf(), path];
            if let Err(e) = logs.prune(budget, &keep) {
                voice.log(&say::pruning_failed(&e));
            }
        }
        Err(e) => voice.log(&say::cannot_archive(&e)),
    }
}

/// The header of the attempt's archived log.
pub(super) fn attempt_header(
    exit: &AgentExit,
    issue: u32,
    name: &str,
    session: &str,
    attempt: u32,
    started_at: chrono::DateTime<chrono::Utc>,
) -> AttemptHeader {
    AttemptHeader {
        issue,
        step_key: name.to_string(),
        session: session.to_string(),
        attempt,
        started_at,
        exit_code: exit.exit_code,
        signal: exit.signal,
        duration: exit.duration,
        timed_out: exit.timed_out,
        idle_timed_out: exit.idle_timed_out,
        cancelled: exit.cancelled,
        refused_hosts: exit.refused_hosts.clone(),
    }
}

/// What the classifier is shown of the attempt.
pub(super) fn observation<'a>(
    exit: &'a AgentExit,
    summary: &'a StreamSummary,
    temp_dir: &'a std::path::Path,
    now_epoch_secs: i64,
) -> Observation<'a> {
    Observation {
        exit_code: exit.exit_code,
        timed_out: exit.timed_out,
        idle_timed_out: exit.idle_timed_out,
        killed: exit.signal.is_some() && !exit.killed_by_runner(),
        summary,
        stderr_tail: &exit.stderr_tail,
        output_tail: &exit.stdout_tail,
        now_epoch_secs,
        temp_dir,
    }
}

/// What a person should read first: the agent's own final words, else its raw tail.
pub(super) fn last_words(summary: &StreamSummary, exit: &AgentExit) -> String {
    match summary.result.as_ref().and_then(|r| r.result_text.clone()) {
        Some(text) if !text.trim().is_empty() => text,
        _ if !exit.stdout_tail.is_empty() => exit.stdout_tail.clone(),
        _ => exit.stderr_tail.clone(),
    }
}

/// What the attempt spent, as the stream reported it: dollars where the CLI says them, else
/// its tokens at `agent.pricing` (0 for a model without a price, which `config check`
/// refuses when budgets are in dollars). A run stopped at its money counts at least what the
/// meter saw.
pub(super) fn usage_of(
    summary: &StreamSummary,
    elapsed: std::time::Duration,
    cfg: &crate::config::Config,
    step: Step,
) -> Usage {
    let result = summary.result.as_ref();
    let priced = || {
        crate::agent::tokens::cost_micros(&cfg.pricing, &summary.tokens, cfg.model(step))
            .unwrap_or(0)
    };
    let metered = summary.money_reached.map_or(0, |m| m.spent_micros);
    Usage {
        cost_micros: metered.max(match result.and_then(|r| r.total_cost_usd) {
            Some(c) => (c.max(0.0) * 1e6) as u64,
            // Stopped before its result (the money reached, a timeout): what its messages'
            // tokens cost, as the meter counted them.
            None => priced(),
        }),
        elapsed_ms: elapsed.as_millis() as u64,
        // A CLI stopped before its result still made the tool calls it was counted for.
        turns: result
            .and_then(|r| r.num_turns)
            .unwrap_or(summary.tool_calls.max(summary.turns)),
    }
}
