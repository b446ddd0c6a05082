//! The rules, in precedence order (see the module above): environment, quota, API pressure,
//! the runner's guards, what the agent reported, tool output, and the unknown remainder.

use super::tool_lines::{
    is_hard_build_line, is_lint_line, is_soft_build_line, is_test_line, is_typecheck_line,
};
use super::{
    contains_ci, context_excerpt, find_line, headline_for, lines_of, normalize, one_line,
    tail_chars, Facts, Observation, Verdict, MAX_EVIDENCE_LINES, MAX_EXCERPT_CHARS,
};
use crate::agent::stream::{soft_failure, SoftFailure};
use crate::failure::FailureClass;

pub(super) const ROOT_REFUSAL: &[&str] = &["cannot be used with root/sudo privileges"];
pub(super) const DISK_FULL: &[&str] = &["No space left on device", "ENOSPC", "Disk quota exceeded"];
pub(super) const MISSING_BINARY: &[&str] = &[
    "command not found",
    "No such file or directory",
    "is not recognized as an internal or external command",
    "Permission denied",
    "cannot execute",
];
pub(super) const AUTH_TEXT: &[&str] = &[
    "Not logged in",
    "Please run /login",
    "Invalid API key",
    "invalid x-api-key",
    "authentication_error",
    "OAuth token has expired",
    "OAuth token revoked",
    "Credit balance is too low",
];
pub(super) const AUTH_ERRORS: &[&str] = &[
    "authentication_failed",
    "oauth_org_not_allowed",
    "billing_error",
    "permission_error",
];

pub(super) fn environment(obs: &Observation, facts: &Facts) -> Option<Verdict> {
    let summary = obs.summary;
    if let Some(line) = facts.cli_text_has(ROOT_REFUSAL) {
        return Some(Verdict::new(
            FailureClass::ToolingEnv,
            line,
            obs.stderr_tail,
        ));
    }
    if let Some(line) = facts
        .cli_text_has(DISK_FULL)
        .or_else(|| find_line(&facts.failed_tool_lines, DISK_FULL))
    {
        return Some(Verdict::new(FailureClass::ToolingEnv, line, line));
    }
    // The agent never started: nothing on stdout, and the shell or the loader said why.
    let never_started = summary.lines == 0 && summary.result.is_none();
    if never_started {
        let missing = find_line(&lines_of(obs.stderr_tail), MISSING_BINARY).map(str::to_string);
        if matches!(obs.exit_code, Some(126) | Some(127)) || missing.is_some() {
            let line = missing.unwrap_or_else(|| {
                format!(
                    "agent exited {} without output: binary missing or not executable",
                    obs.exit_code.unwrap_or_default()
                )
            });
            return Some(Verdict::new(
                FailureClass::ToolingEnv,
                line,
                obs.stderr_tail,
            ));
        }
    }

    let result = summary.result.as_ref();
    let status = result
        .and_then(|r| r.api_error_status)
        .or(summary.api_error_status);
    let retry = if result.is_none() {
        summary.last_api_retry.as_ref()
    } else {
        None
    };
    let auth_status = matches!(status, Some(401) | Some(403))
        || retry.is_some_and(|r| matches!(r.error_status, Some(401) | Some(403)));
    let auth_error = summary
        .assistant_errors
        .iter()
        .chain(retry.and_then(|r| r.error.as_ref()))
        .find(|e| AUTH_ERRORS.contains(&e.as_str()));
    let auth_type = result
        .and_then(|r| r.api_error_type.as_deref())
        .is_some_and(|t| t == "authentication_error" || t == "permission_error");
    let auth_line = facts.cli_text_has(AUTH_TEXT);
    if auth_status || auth_error.is_some() || auth_type || auth_line.is_some() {
        let message = auth_line
            .map(str::to_string)
            .or_else(|| api_message(obs))
            .or_else(|| auth_error.cloned())
            .unwrap_or_else(|| format!("API status {}", status.unwrap_or_default()));
        return Some(Verdict::new(FailureClass::Auth, message.clone(), message));
    }
    None
}

/// The CLI's kinds of API failure that mean no request reached the model (a name that does
/// not resolve, a refused port, a proxy or firewall in the way): no HTTP status.
pub(super) const UNREACHABLE_ERRORS: &[&str] = &["connection_failed"];

/// The model could not be reached: `NETWORK`, the network's failure (or the sandbox's view of
/// it), which the machine waits out like any network failure and never charges to the issue.
pub(super) fn unreachable(obs: &Observation) -> Option<Verdict> {
    let summary = obs.summary;
    let result = summary.result.as_ref();
    let kind = result
        .and_then(|r| r.api_error.as_deref())
        .or(summary.api_error_kind.as_deref())?;
    let status = result
        .and_then(|r| r.api_error_status)
        .or(summary.api_error_status);
    if !UNREACHABLE_ERRORS.contains(&kind) || status.is_some() {
        return None;
    }
    let message = api_message(obs).unwrap_or_else(|| kind.to_string());
    let mut verdict = Verdict::new(
        FailureClass::Network,
        format!("model unreachable: {kind}"),
        message.clone(),
    );
    verdict.headline = format!("the agent cannot reach its model: {}", one_line(&message));
    Some(verdict)
}

/// The CLI's own description of an API failure.
pub(super) fn api_message(obs: &Observation) -> Option<String> {
    obs.summary
        .result
        .as_ref()
        .and_then(|r| r.result_text.clone())
        .or_else(|| obs.summary.api_error_message.clone())
        .filter(|t| !t.trim().is_empty())
}

pub(super) const QUOTA_TEXT: &[&str] = &[
    "usage limit reached",
    "hit your limit",
    "out of extra usage",
    "limit will reset",
];

pub(super) fn quota(obs: &Observation, facts: &Facts) -> Option<Verdict> {
    let text_line = facts
        .cli_text_has(QUOTA_TEXT)
        .or_else(|| {
            facts
                .cli_lines
                .iter()
                .find(|l| contains_ci(l, "limit reached") && contains_ci(l, "reset"))
                .map(String::as_str)
        })
        .map(str::to_string);
    let resets_at = obs.summary.quota_resets_at.or_else(|| {
        text_line.as_deref().and_then(|line| {
            // Older CLIs: "Claude AI usage limit reached|1700000000".
            let (_, epoch) = line.rsplit_once('|')?;
            epoch.trim().parse::<i64>().ok()
        })
    });
    if resets_at.is_none() && text_line.is_none() {
        return None;
    }
    let message = text_line
        .or_else(|| api_message(obs))
        .unwrap_or_else(|| "usage window exhausted".to_string());
    let mut verdict = Verdict::new(
        FailureClass::Quota,
        "usage window exhausted",
        message.clone(),
    );
    verdict.headline = match resets_at {
        Some(at) => format!("{} (resets at epoch {at})", one_line(&message)),
        None => one_line(&message),
    };
    verdict.wait_hint_secs =
        resets_at.map(|at| u64::try_from(at.saturating_sub(obs.now_epoch_secs)).unwrap_or(0));
    Some(verdict)
}

pub(super) fn api_pressure(obs: &Observation, facts: &Facts) -> Option<Verdict> {
    let summary = obs.summary;
    let result = summary.result.as_ref();
    let retry = if result.is_none() {
        summary.last_api_retry.as_ref()
    } else {
        None
    };
    let status = result
        .and_then(|r| r.api_error_status)
        .or(summary.api_error_status)
        .or(retry.and_then(|r| r.error_status));
    let error_type = result
        .and_then(|r| r.api_error_type.as_deref())
        .unwrap_or("");
    let errors = |name: &str| {
        summary.assistant_errors.iter().any(|e| e == name)
            || retry.and_then(|r| r.error.as_deref()) == Some(name)
    };
    let class = if status == Some(429) || error_type == "rate_limit_error" || errors("rate_limit") {
        FailureClass::RateLimit
    } else if status == Some(529)
        || error_type == "overloaded_error"
        || errors("overloaded")
        || status.is_some_and(|s| (500..600).contains(&s))
        || facts.cli_text_has(&["overloaded_error"]).is_some()
    {
        FailureClass::Overloaded
    } else {
        return None;
    };
    let message = api_message(obs).unwrap_or_else(|| format!("API status {status:?}"));
    let evidence = match status {
        Some(s) => format!("api status {s}"),
        None => "api error".to_string(),
    };
    let mut verdict = Verdict::new(class, evidence, message.clone());
    verdict.headline = one_line(&message);
    Some(verdict)
}

pub(super) fn guards(obs: &Observation) -> Option<Verdict> {
    let no_result = obs.summary.result.is_none();
    let tail = tail_chars(obs.output_tail, MAX_EXCERPT_CHARS);
    if obs.timed_out || (obs.exit_code == Some(124) && no_result) {
        return Some(Verdict::new(FailureClass::Timeout, "step timeout", tail));
    }
    if obs.idle_timed_out {
        return Some(Verdict::new(
            FailureClass::Idle,
            "no output within the idle timeout",
            tail,
        ));
    }
    if obs.killed
        || obs.exit_code.is_none()
        || (matches!(obs.exit_code, Some(137) | Some(143)) && no_result)
    {
        let how = match obs.exit_code {
            Some(code) => format!("killed by a signal (exit {code})"),
            None => "killed by a signal".to_string(),
        };
        let mut verdict = Verdict::new(FailureClass::Killed, "killed by a signal", tail);
        verdict.headline = how;
        return Some(verdict);
    }
    None
}

pub(super) const CONTEXT_TEXT: &[&str] = &[
    "prompt is too long",
    "prompt too long",
    "context_length_exceeded",
    "context window",
    "context_window_exceeded",
    "exceed context limit",
    "maximum context length",
];

pub(super) fn agent_reported(
    obs: &Observation,
    facts: &Facts,
    soft: Option<&SoftFailure>,
) -> Option<Verdict> {
    let result = obs.summary.result.as_ref()?;
    let reason = result.terminal_reason.as_deref().unwrap_or("");
    let context_line = facts.cli_text_has(CONTEXT_TEXT);
    if context_line.is_some()
        || reason.contains("prompt_too_long")
        || reason.contains("context")
        || result.api_error_status == Some(413)
    {
        let message = context_line
            .map(str::to_string)
            .or_else(|| api_message(obs))
            .unwrap_or_else(|| reason.to_string());
        let mut verdict = Verdict::new(
            FailureClass::ContextWindow,
            "context window",
            message.clone(),
        );
        verdict.headline = one_line(&message);
        return Some(verdict);
    }
    if result.subtype == "error_max_budget_usd" || reason == "budget_exhausted" {
        let spent = result
            .total_cost_usd
            .map(|c| format!(" (${c:.2} spent)"))
            .unwrap_or_default();
        let mut verdict = Verdict::new(
            FailureClass::Budget,
            "error_max_budget_usd",
            result.result_text.clone().unwrap_or_default(),
        );
        verdict.headline = format!("hit --max-budget-usd{spent}");
        return Some(verdict);
    }
    if result.subtype == "error_max_turns" || reason == "max_turns" {
        let turns = result
            .num_turns
            .map(|n| format!(" after {n} turns"))
            .unwrap_or_default();
        let mut verdict = Verdict::new(
            FailureClass::MaxTurns,
            "error_max_turns",
            result.result_text.clone().unwrap_or_default(),
        );
        verdict.headline = format!("hit --max-turns{turns}");
        return Some(verdict);
    }
    denied_tools(obs, result, soft).map(|tools| permission_denied(result, tools))
}

/// The tools the agent was denied, seriously enough to explain the attempt.
fn denied_tools(
    obs: &Observation,
    result: &crate::agent::stream::ResultEvent,
    soft: Option<&SoftFailure>,
) -> Option<Vec<String>> {
    match soft {
        Some(SoftFailure::PermissionDenied(tools)) => Some(tools.clone()),
        // A failed attempt can carry serious denials too; they explain it better than a guess.
        _ => match soft_failure(
            &crate::agent::stream::ResultEvent {
                subtype: String::new(),
                is_error: false,
                ..result.clone()
            },
            obs.temp_dir,
        ) {
            Some(SoftFailure::PermissionDenied(tools)) => Some(tools),
            _ => None,
        },
    }
}

/// The verdict for denied tools, with the paths they were denied.
fn permission_denied(
    result: &crate::agent::stream::ResultEvent,
    mut tools: Vec<String>,
) -> Verdict {
    tools.sort();
    tools.dedup();
    let paths: Vec<&str> = result
        .permission_denials
        .iter()
        .filter(|d| tools.contains(&d.tool_name))
        .filter_map(|d| d.path.as_deref())
        .collect();
    let evidence = format!("denied: {} {}", tools.join(", "), paths.join(" "));
    let mut verdict = Verdict::new(FailureClass::PermissionDenied, evidence, "");
    verdict.headline = format!("permission denied for {}", tools.join(", "));
    verdict.excerpt = format!(
        "The agent was denied: {}{}",
        tools.join(", "),
        if paths.is_empty() {
            String::new()
        } else {
            format!(" ({})", paths.join(", "))
        }
    );
    verdict
}

/// A builtin merge that failed because the branch does not merge cleanly into main: the local
/// forge names the conflicting files, GitHub says the pull request is not mergeable.
pub fn is_merge_conflict(what: &str) -> bool {
    let lower = what.to_ascii_lowercase();
    // GitHub says "not mergeable" of a PR its base branch's rules refuse too: no conflict.
    let by_rule = lower.contains("policy prohibits the merge");
    lower.contains("merge conflict in:")
        || (lower.contains("is not mergeable") && !by_rule)
        || lower.contains("merge commit cannot be cleanly created")
}

/// Evidence lines of a class decided from tool output.
pub(super) fn tool_output(facts: &Facts) -> Option<Verdict> {
    let lines = &facts.tool_lines;
    let clippy_run = lines.iter().any(|l| {
        l.contains("clippy::")
            || l.contains("implied by `-D warnings`")
            || l.contains("rust-clippy")
    });
    type Rule<'a> = (FailureClass, &'a dyn Fn(&str) -> bool);
    let lint = |l: &str| is_lint_line(l, clippy_run);
    // Halts the run, so only from output that certainly reports a failure.
    let command_missing = |l: &str| {
        (l.contains("command not found")
            || l.contains("is not recognized as an internal or external command")
            || l.contains("is not installed"))
            && facts.failed_tool_lines.iter().any(|f| f.ends_with(l))
    };
    let rules: [Rule; 6] = [
        (FailureClass::Typecheck, &is_typecheck_line),
        (FailureClass::BuildCompile, &is_hard_build_line),
        (FailureClass::Lint, &lint),
        (FailureClass::TestAssertion, &is_test_line),
        (FailureClass::BuildCompile, &is_soft_build_line),
        (FailureClass::ToolingEnv, &command_missing),
    ];
    let bare: Vec<&str> = lines
        .iter()
        .map(|l| normalize::strip_timestamp_prefix(l))
        .collect();
    for (class, matches) in rules {
        let hits: Vec<usize> = (0..lines.len()).filter(|&i| matches(bare[i])).collect();
        if hits.is_empty() {
            continue;
        }
        let mut evidence: Vec<&str> = Vec::new();
        for &i in &hits {
            let line = bare[i].trim();
            if !evidence.contains(&line) && evidence.len() < MAX_EVIDENCE_LINES {
                evidence.push(line);
            }
        }
        let mut verdict = Verdict::new(class, evidence.join("\n"), context_excerpt(lines, &hits));
        verdict.headline = headline_for(class, &bare, &hits);
        return Some(verdict);
    }
    None
}

pub(super) fn unknown(obs: &Observation, facts: &Facts) -> Verdict {
    // The CLI's last words, else the last lines of output: what a person would read first.
    let source: Vec<&String> = if facts.cli_lines.is_empty() {
        facts.tool_lines.iter().collect()
    } else {
        facts.cli_lines.iter().collect()
    };
    let last: Vec<&str> = source
        .iter()
        .rev()
        .take(10)
        .rev()
        .map(|l| l.trim())
        .collect();
    let exit = match obs.exit_code {
        Some(code) => format!("exit {code}"),
        None => "no exit code".to_string(),
    };
    let soft = obs
        .summary
        .result
        .as_ref()
        .and_then(|r| soft_failure(r, obs.temp_dir))
        .map(|s| match s {
            SoftFailure::ErrorSubtype(subtype) => format!(" ({subtype})"),
            SoftFailure::IsError => " (is_error)".to_string(),
            SoftFailure::PermissionDenied(_) => String::new(),
        })
        .unwrap_or_default();
    let mut verdict = Verdict::new(
        FailureClass::Unknown,
        format!("{exit}{soft}\n{}", last.join("\n")),
        last.join("\n"),
    );
    verdict.headline = match last.last() {
        Some(line) => format!("{exit}{soft}: {line}"),
        None => format!("{exit}{soft}"),
    };
    verdict
}
