//! `sdlc-runner issue new|list|show|reopen`: the local tracker's issues without editing JSON
//! by hand. The file format is `tracker::Local`'s (docs/operating.md, "Local issues"; docs/interfaces.md).

use crate::cli::IssueCommand;
use crate::config::TrackerConfig;
use crate::services::local::Local;
use crate::tracker::Issue;
use std::io::Read as _;
use std::path::Path;

pub fn run(command: &IssueCommand) -> i32 {
    let config = match command {
        IssueCommand::New { config, .. }
        | IssueCommand::List { config }
        | IssueCommand::Show { config, .. }
        | IssueCommand::Reopen { config, .. } => config,
    };
    let tracker = match local_tracker(config) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let result = match command {
        IssueCommand::New {
            title,
            body_file,
            label,
            depends_on,
            ..
        } => new(&tracker, title, body_file.as_deref(), label, depends_on),
        IssueCommand::List { .. } => list(&tracker),
        IssueCommand::Show { number, .. } => show(&tracker, *number),
        IssueCommand::Reopen { number, .. } => reopen(&tracker, *number),
    };
    match result {
        Ok(()) => 0,
        Err(message) => {
            say!("error: {message}");
            2
        }
    }
}

/// The config's local tracker, with its directory created; exit 2 naming the problem.
fn local_tracker(config: &Path) -> Result<Local, i32> {
    let cfg = super::load_config(config)?;
    crate::wiring::tracker(&cfg).map_err(|e| {
        say!("error: {e}");
        2
    })?;
    match &cfg.tracker {
        TrackerConfig::Local { .. } => {
            let t = crate::wiring::local_tracker(&cfg).map_err(|e| {
                say!("error: {e}");
                2
            })?;
            if let Err(e) = std::fs::create_dir_all(&t.dir) {
                say!(
                    "error: cannot create the issue directory {}: {e}",
                    t.dir.display()
                );
                return Err(2);
            }
            Ok(t)
        }
        TrackerConfig::Github { label, .. } => {
            say!(
                "error: {}: the tracker is GitHub: use `gh issue create --label {}` (and `gh issue list`, `gh issue view`, `gh issue reopen`); `sdlc-runner issue` works on the local tracker",
                cfg.file.display(),
                label
            );
            Err(2)
        }
        TrackerConfig::Linear { label, .. } => {
            say!(
                "error: {}: the tracker is Linear team {}: create and edit its issues in Linear (label {}); `sdlc-runner issue` works on the local tracker",
                cfg.file.display(),
                cfg.linear.team.clone().unwrap_or_default(),
                label
            );
            Err(2)
        }
        TrackerConfig::Gitlab { label, .. } => {
            say!(
                "error: {}: the tracker is GitLab project {}: create and edit its issues in GitLab (label {}); `sdlc-runner issue` works on the local tracker",
                cfg.file.display(),
                cfg.gitlab.project.clone().unwrap_or_default(),
                label
            );
            Err(2)
        }
    }
}

fn new(
    tracker: &Local,
    title: &str,
    body_file: Option<&Path>,
    labels: &[String],
    depends_on: &[u32],
) -> Result<(), String> {
    if title.trim().is_empty() {
        return Err("the title is empty: give the issue a title".into());
    }
    let mut body = match body_file {
        None => String::new(),
        Some(p) if p == Path::new("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the body from stdin: {e}"))?;
            text
        }
        Some(p) => {
            std::fs::read_to_string(p).map_err(|e| format!("--body-file {}: {e}", p.display()))?
        }
    };
    if !depends_on.is_empty() {
        let numbers: Vec<String> = depends_on.iter().map(|n| format!("#{n}")).collect();
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(&format!("Depends on: {}\n", numbers.join(", ")));
    }
    let labels: Vec<String> = if labels.is_empty() {
        vec![tracker.label.clone()]
    } else {
        labels.to_vec()
    };
    let number = tracker
        .create(title.trim(), &body, &labels)
        .map_err(|e| e.to_string())?;
    out!("{number}");
    let selected = labels.contains(&tracker.label);
    say!(
        "wrote {}: issue #{number} \"{}\", labels {}{}",
        tracker.dir.join(format!("{number}.json")).display(),
        title.trim(),
        labels.join(", "),
        if selected {
            String::new()
        } else {
            format!(
                "; without the label {} `run` does not select it",
                tracker.label
            )
        }
    );
    Ok(())
}

/// Why `run` would not select an open issue, or `None` when it may.
pub fn not_selected_because(tracker: &Local, issue: &Issue) -> Option<String> {
    if !issue.state_open {
        return Some("closed".into());
    }
    if issue.escalated {
        return Some(format!(
            "quarantined (escalated): `sdlc-runner release {}` lifts it",
            issue.number
        ));
    }
    if !issue.labels.contains(&tracker.label) {
        return Some(format!(
            "lacks the label {}: `run` does not select it",
            tracker.label
        ));
    }
    None
}

fn list(tracker: &Local) -> Result<(), String> {
    let issues = tracker.all().map_err(|e| e.to_string())?;
    if issues.is_empty() {
        say!(
            "no issues in {}: add one with `sdlc-runner issue new \"title\"`",
            tracker.dir.display()
        );
    }
    for issue in &issues {
        let state = if issue.state_open { "open" } else { "closed" };
        let note = match not_selected_because(tracker, issue) {
            Some(why) if issue.state_open => format!("  [{why}]"),
            _ => String::new(),
        };
        let deps = issue.dependencies();
        let deps = if deps.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = deps.iter().map(|n| format!("#{n}")).collect();
            format!("  (depends on {})", list.join(", "))
        };
        out!(
            "#{:<4} {state:<6} {}{deps}{note}",
            issue.number,
            issue.title
        );
    }
    Ok(())
}

fn show(tracker: &Local, number: u32) -> Result<(), String> {
    let issue = tracker.get(number).map_err(|e| e.to_string())?;
    let (escalation, resolution) = tracker.notes(number).map_err(|e| e.to_string())?;
    out!("#{} {}", issue.number, issue.title);
    out!(
        "state:     {}",
        if issue.state_open { "open" } else { "closed" }
    );
    out!("labels:    {}", issue.labels.join(", "));
    if let Some(m) = &issue.milestone {
        out!("milestone: {m}");
    }
    let deps: Vec<String> = issue
        .dependencies()
        .iter()
        .map(|n| format!("#{n}"))
        .collect();
    if !deps.is_empty() {
        out!("depends on: {}", deps.join(", "));
    }
    match not_selected_because(tracker, &issue) {
        Some(why) => out!("run:       not selected: {why}"),
        None => out!("run:       selectable (once its dependencies are closed)"),
    }
    out!(
        "file:      {}",
        tracker.dir.join(format!("{number}.json")).display()
    );
    if !issue.body.is_empty() {
        out!("\n{}", issue.body.trim_end());
    }
    if let Some(text) = escalation {
        out!("\nescalation:\n{}", text.trim_end());
    }
    if let Some(text) = resolution {
        out!("\nresolution: {}", text.trim_end());
    }
    Ok(())
}

fn reopen(tracker: &Local, number: u32) -> Result<(), String> {
    let was_closed = tracker.reopen(number).map_err(|e| e.to_string())?;
    if was_closed {
        say!("issue #{number} is open again");
    } else {
        say!("issue #{number} was already open");
    }
    Ok(())
}
