//! `sdlc-runner review N --approve | --request-changes TEXT | --comment TEXT --config F`: a
//! person's review of the local forge's PR of issue N, stored beside the local tracker's
//! issues (`<tracker.dir>/reviews/<N>.json`) for `run` to read before it merges.

use crate::config::ForgeKind;
use crate::forge::ReviewKind;
use crate::runner_dir::RunnerDir;
use std::path::Path;

/// What the reviewer says.
pub enum Verdict<'a> {
    Approve,
    RequestChanges(&'a str),
    Comment(&'a str),
}

impl<'a> Verdict<'a> {
    /// The verdict of the command line, whose flags clap keeps exclusive and required:
    /// neither text given means `--approve`.
    pub fn of(request_changes: Option<&'a str>, comment: Option<&'a str>) -> Verdict<'a> {
        match (request_changes, comment) {
            (Some(text), _) => Verdict::RequestChanges(text),
            (None, Some(text)) => Verdict::Comment(text),
            (None, None) => Verdict::Approve,
        }
    }
}

pub fn run(issue: u32, verdict: Verdict, author: Option<&str>, config: &Path) -> i32 {
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    if cfg.forge != ForgeKind::Local {
        say!(
            "error: {}: forge is {:?}: review the pull or merge request on the forge itself; `review` speaks for the local forge",
            cfg.file.display(),
            cfg.forge
        );
        return 2;
    }
    if let Err(code) = super::tracker_holding(&cfg, &[issue], "nothing reviewed") {
        return code;
    }
    let author = author
        .map(str::to_string)
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "local".to_string());
    match record(&cfg, issue, &verdict, &author) {
        Ok(said) => {
            out!("{said}");
            0
        }
        Err(e) => {
            say!("error: {e}; nothing reviewed");
            1
        }
    }
}

/// Stores `author`'s `verdict` on issue `issue`'s PR of the local forge where `run` reads
/// it, and says so (`local-1-2 on issue #1: ann asked for changes (…/reviews/1.json)`). The
/// demo's reviewer speaks through it too.
pub fn record(
    cfg: &crate::config::Config,
    issue: u32,
    verdict: &Verdict,
    author: &str,
) -> Result<String, String> {
    let runner_dir = RunnerDir::locate(&cfg.project_path).map_err(|e| e.to_string())?;
    let dir = crate::services::local::port::reviews_dir(cfg, &runner_dir.dir);
    let (kind, body) = match *verdict {
        Verdict::Approve => (ReviewKind::Approve, ""),
        Verdict::RequestChanges(text) => (ReviewKind::RequestChanges, text),
        Verdict::Comment(text) => (ReviewKind::Comment, text),
    };
    let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let review =
        crate::services::local::forge::record_review(&dir, issue, author, kind, body, &time)
            .map_err(|e| e.to_string())?;
    let what = match kind {
        ReviewKind::Approve => "approved",
        ReviewKind::RequestChanges => "asked for changes",
        ReviewKind::Comment => "commented",
    };
    Ok(format!(
        "{} on issue #{issue}: {author} {what} ({})",
        review.id,
        dir.join(format!("{issue}.json")).display()
    ))
}
