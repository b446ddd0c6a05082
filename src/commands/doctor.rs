//! `sdlc-runner doctor --config F`: everything `run` would refuse before any agent runs, and
//! what would fail later in an unattended run (the agent binary, gh's login, the remote, the
//! log directory, disk space). One line per check on stdout, `ok`, `warn` or `fail` with the
//! fix; exit 2 when a check fails, else 0. Doctor changes nothing on disk.

use crate::config::{Config, ForgeKind, TrackerConfig};
use crate::process::ChildSpec;
use crate::step::Step;
use std::path::Path;
use std::time::Duration;

mod gitlab;
mod linear;
mod local_state;
mod sandbox;

use local_state::{artifacts, disk, excludes, log_dir, runner_state, tree};

/// How long a probe of another program (agent --version, gh auth status, git ls-remote) may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub verdict: Verdict,
    pub detail: String,
    /// What to do about a warn or fail.
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn warn(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            verdict: Verdict::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            verdict: Verdict::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn line(&self) -> String {
        let mut line = format!(
            "{:<4}  {:<9} {}",
            self.verdict.word(),
            self.name,
            self.detail
        );
        if let Some(fix) = &self.fix {
            line.push_str(&format!("; fix: {fix}"));
        }
        crate::redact::redact(&line)
    }
}

pub fn run(config: &Path) -> i32 {
    let checks = match Config::load(config) {
        Ok(cfg) => {
            let mut checks = vec![Check::ok(
                "config",
                format!("{}: schema and values", config.display()),
            )];
            checks.extend(diagnose(&cfg));
            checks
        }
        // One failed check per error, so the count at the end is the number of errors.
        Err(e) => e
            .lines()
            .into_iter()
            .map(|line| {
                Check::fail(
                    "config",
                    line.to_string(),
                    "correct it (`sdlc-runner config schema` lists every key)",
                )
            })
            .collect(),
    };
    for check in &checks {
        out!("{}", check.line());
    }
    let worst = checks
        .iter()
        .map(|c| c.verdict)
        .max()
        .unwrap_or(Verdict::Ok);
    let (fails, warns) = (
        checks.iter().filter(|c| c.verdict == Verdict::Fail).count(),
        checks.iter().filter(|c| c.verdict == Verdict::Warn).count(),
    );
    match worst {
        Verdict::Fail => {
            say!("doctor: {fails} check(s) failed, {warns} warning(s): `run` would refuse or fail; fix the lines marked fail");
            2
        }
        Verdict::Warn => {
            say!("doctor: ready, with {warns} warning(s)");
            0
        }
        Verdict::Ok => {
            say!("doctor: ready");
            0
        }
    }
}

/// Every check after the config loaded, in the order an operator would fix them.
pub fn diagnose(cfg: &Config) -> Vec<Check> {
    let mut checks = vec![project(cfg)];
    let in_repo = checks[0].verdict != Verdict::Fail;
    checks.push(skills(cfg));
    checks.push(agent(cfg));
    checks.extend(crate::agent::cli::doctor_checks(cfg).into_iter().map(|c| {
        use crate::agent::cli::CheckLevel as L;
        let fix = c.fix.unwrap_or_default();
        match c.level {
            L::Ok => Check::ok("agent", c.detail),
            L::Warn => Check::warn("agent", c.detail, fix),
            L::Fail => Check::fail("agent", c.detail, fix),
        }
    }));
    checks.extend(sandbox::checks(cfg));
    checks.push(tracker(cfg));
    if let Some(ci) = &cfg.local_ci {
        checks.push(local_ci(ci, &ci.sandbox(&cfg.agent.sandbox)));
    }
    if uses_github(cfg) {
        checks.push(gh_auth(cfg));
        if cfg.forge == ForgeKind::Github && which::which("gh").is_ok() {
            checks.push(github_reviews(cfg));
        }
    }
    if cfg.forge == ForgeKind::Gitlab || cfg.tracker.kind() == crate::config::TrackerKind::Gitlab {
        checks.extend(gitlab::checks(cfg));
    }
    if let Ok(t) = crate::wiring::linear_tracker(cfg) {
        checks.extend(linear::checks(&t));
    }
    if in_repo {
        checks.push(remote(cfg));
        checks.extend(runner_state(cfg));
        checks.push(artifacts(cfg));
        checks.push(excludes(cfg));
        checks.push(tree(cfg));
    }
    checks.push(log_dir(cfg));
    checks.push(disk(cfg));
    checks
}

fn uses_github(cfg: &Config) -> bool {
    cfg.forge == ForgeKind::Github || matches!(cfg.tracker, TrackerConfig::Github { .. })
}

fn project(cfg: &Config) -> Check {
    match crate::git::repo::Repo::open(&cfg.project_path) {
        Ok(mut repo) => match repo.settle_base(cfg.base_branch.as_deref()) {
            Ok(source) => Check::ok(
                "project",
                format!(
                    "{}: git repository, {}",
                    cfg.project_path.display(),
                    crate::git::repo::describe_base(&repo.main, &source, &cfg.file)
                ),
            ),
            // The remote line says what is wrong with origin; `run` would stop on it.
            Err(_) => Check::warn(
                "project",
                format!(
                    "{}: git repository; its base branch cannot be asked from origin (guessed: {})",
                    cfg.project_path.display(),
                    repo.main
                ),
                "fix origin (see the remote line), or set baseBranch in the config",
            ),
        },
        Err(e) => Check::fail(
            "project",
            format!("projectPath: {e}"),
            "point projectPath at a clone of the repository",
        ),
    }
}

fn skills(cfg: &Config) -> Check {
    let mut found = 0;
    let mut missing = Vec::new();
    for step in Step::ALL {
        if let Some(file) = cfg.skill_file(step).filter(|_| cfg.enabled(step)) {
            if file.is_file() {
                found += 1;
            } else {
                missing.push(format!("steps.{}.skill: {}", step.key(), file.display()));
            }
        }
    }
    if missing.is_empty() {
        Check::ok("skills", format!("{found} skill file(s) found"))
    } else {
        Check::fail(
            "skills",
            format!("missing {}", missing.join(", ")),
            "set pluginsPath to the plugins checkout, or remove the step's skill",
        )
    }
}

fn agent(cfg: &Config) -> Check {
    let program = match which::which(&cfg.agent.command) {
        Ok(p) => p,
        Err(_) => {
            return Check::fail(
                "agent",
                format!("agent.command \"{}\" is not on PATH", cfg.agent.command),
                "install the agent CLI or set agent.command to its path",
            )
        }
    };
    let mut cmd = ChildSpec::new(&program);
    cmd.arg("--version");
    match crate::process::output_within(cmd, PROBE_TIMEOUT) {
        Ok(Some(out)) if out.status.success() => {
            let version = String::from_utf8_lossy(&out.stdout);
            let version = version.lines().next().unwrap_or("").trim();
            Check::ok("agent", format!("{} ({version})", program.display()))
        }
        Ok(Some(out)) => Check::warn(
            "agent",
            format!(
                "`{} --version` ended ({}): {}",
                program.display(),
                crate::ports::git::CallEnd::of_exit(out.status.code()),
                first_line(&out.stderr)
            ),
            "run the agent by hand once to see whether it works",
        ),
        Ok(None) => Check::warn(
            "agent",
            format!(
                "`{} --version` gave no answer within {} s",
                program.display(),
                PROBE_TIMEOUT.as_secs()
            ),
            "run the agent by hand once to see whether it works",
        ),
        Err(e) => Check::fail(
            "agent",
            format!("{} cannot be started: {e}", program.display()),
            "check that agent.command is an executable",
        ),
    }
}

/// The local tracker is read exactly as `run` reads it (every issue file, the same errors),
/// and the labels `run` selects by are counted.
fn tracker(cfg: &Config) -> Check {
    if let Err(e) = crate::wiring::tracker(cfg) {
        return Check::fail(
            "tracker",
            e,
            "export the token in the variable named, as the user the runner runs as",
        );
    }
    let local = match &cfg.tracker {
        TrackerConfig::Local { .. } => match crate::wiring::local_tracker(cfg) {
            Ok(t) => t,
            Err(e) => return Check::fail("tracker", e, "correct the tracker in the config"),
        },
        TrackerConfig::Github { label, .. } => {
            return Check::ok("tracker", format!("github issues labelled {label}, via gh"))
        }
        TrackerConfig::Linear { label, .. } => {
            let team = cfg.linear.team.clone().unwrap_or_default();
            return Check::ok(
                "tracker",
                format!("linear issues of team {team} labelled {label}"),
            );
        }
        TrackerConfig::Gitlab { label, .. } => {
            let project = cfg.gitlab.project.clone().unwrap_or_default();
            return Check::ok(
                "tracker",
                format!("gitlab issues of {project} labelled {label}"),
            );
        }
    };
    local_issues(&local)
}

/// What `run` would find in the local tracker's directory: the issue files read, the open
/// ones counted by whether they can be selected.
fn local_issues(local: &crate::services::local::Local) -> Check {
    let dir = local.dir.display();
    if !local.dir.is_dir() {
        return Check::fail(
            "tracker",
            format!("tracker.dir {dir} is not a directory"),
            "create the directory (`sdlc-runner issue new \"title\"` does) or correct tracker.dir",
        );
    }
    let issues =
        match local.all() {
            Ok(issues) => issues,
            Err(e) => return Check::fail(
                "tracker",
                e.to_string(),
                "correct or remove the file: `run` refuses the whole tracker while it is invalid",
            ),
        };
    let open: Vec<_> = issues.iter().filter(|i| i.state_open).collect();
    let selectable = open
        .iter()
        .filter(|i| i.labels.contains(&local.label) && !i.escalated)
        .count();
    let unlabelled: Vec<String> = open
        .iter()
        .filter(|i| !i.labels.contains(&local.label))
        .map(|i| format!("#{}", i.number))
        .collect();
    let escalated: Vec<String> = open
        .iter()
        .filter(|i| i.escalated)
        .map(|i| format!("#{}", i.number))
        .collect();
    let mut detail = format!(
        "local {dir}: {} issue file(s), {} open, {selectable} selectable (label {})",
        issues.len(),
        open.len(),
        local.label
    );
    if !unlabelled.is_empty() {
        detail.push_str(&format!(
            "; without the label (never selected): {}",
            unlabelled.join(", ")
        ));
    }
    if !escalated.is_empty() {
        detail.push_str(&format!("; quarantined: {}", escalated.join(", ")));
    }
    if selectable == 0 {
        return Check::warn(
            "tracker",
            detail,
            format!(
                "`run` has nothing to do: add an issue with `sdlc-runner issue new \"title\"` (labelled {})",
                local.label
            ),
        );
    }
    Check::ok("tracker", detail)
}

/// The CI command is there, and it runs in a sandbox: it runs what the agent wrote.
fn local_ci(ci: &crate::config::LocalCi, sandbox: &crate::config::SandboxConfig) -> Check {
    let program = ci.command.first().map(String::as_str).unwrap_or("");
    match which::which(program) {
        Ok(_) if sandbox.kind == crate::config::SandboxKind::None => Check::warn(
            "ci",
            "without a sandbox, localCi runs agent-written code unconfined, with your \
             credentials (your home, the tokens in the runner's environment)",
            "set agent.sandbox.kind: \"bwrap\" (\"agent\": {\"sandbox\": {\"kind\": \"bwrap\"}}): \
             localCi runs in the agent's sandbox",
        ),
        Ok(path) => Check::ok(
            "ci",
            format!(
                "localCi runs {} (found {}) inside {} ({})",
                ci.command.join(" "),
                path.display(),
                sandbox.kind,
                match sandbox.network {
                    crate::config::SandboxNetwork::Host => "network host",
                    crate::config::SandboxNetwork::None
                    | crate::config::SandboxNetwork::Allowlist => "no network",
                }
            ),
        ),
        Err(_) => Check::fail(
            "ci",
            format!("localCi.command: \"{program}\" is not on PATH"),
            "install it or give its full path in localCi.command",
        ),
    }
}

fn gh_auth(cfg: &Config) -> Check {
    if which::which("gh").is_err() {
        return Check::fail(
            "gh",
            "the GitHub tracker or forge is configured but `gh` is not on PATH",
            "install the GitHub CLI (https://cli.github.com) and run `gh auth login`",
        );
    }
    let version = match crate::services::github::forge::check_gh_version(
        Path::new("gh"),
        &cfg.project_path,
    ) {
        Ok(v) => v,
        Err(why) => {
            let (a, b, c) = crate::services::github::forge::GH_MINIMUM;
            return Check::fail(
                "gh",
                why,
                format!("install gh {a}.{b}.{c} or later (the distribution's package, or https://cli.github.com)"),
            );
        }
    };
    let mut cmd = crate::services::github::gh::unattended(Path::new("gh"), &cfg.project_path);
    cmd.args(["auth", "status"]);
    match crate::process::output_within(cmd, PROBE_TIMEOUT) {
        Ok(Some(out)) if out.status.success() => {
            Check::ok("gh", format!("gh {version}; gh auth status: logged in"))
        }
        Ok(Some(out)) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            Check::fail(
                "gh",
                format!("gh auth status: {}", first_line(text.as_bytes())),
                "run `gh auth login` (or set GH_TOKEN) as the user the runner runs as",
            )
        }
        Ok(None) => Check::fail(
            "gh",
            format!(
                "gh auth status gave no answer within {} s",
                PROBE_TIMEOUT.as_secs()
            ),
            "check the network and `gh auth status` by hand",
        ),
        Err(e) => Check::fail(
            "gh",
            format!("gh cannot be started: {e}"),
            "reinstall the GitHub CLI",
        ),
    }
}

/// The review gate reads every PR's reviews before its merge: the token must be allowed to.
fn github_reviews(cfg: &Config) -> Check {
    let gh = std::path::PathBuf::from("gh");
    use crate::services::github::forge::ReviewsReadable;
    match crate::services::github::forge::check_reviews_readable(&gh, &cfg.project_path) {
        ReviewsReadable::Yes(what) => Check::ok("reviews", what),
        ReviewsReadable::Refused(why) => Check::fail(
            "reviews",
            why,
            "give the token read access to pull requests (a fine-grained token: `Pull requests: read`), so the review gate can read reviews before a merge",
        ),
        ReviewsReadable::Unknown(why) => Check::warn(
            "reviews",
            format!("GitHub gave no answer about reviews: {why}"),
            "check `gh auth status` and the network; the review gate reads reviews before every merge",
        ),
    }
}

fn remote(cfg: &Config) -> Check {
    let has_origin =
        crate::git::command::output(&cfg.project_path, &["remote", "get-url", "origin"])
            .is_ok_and(|o| o.status.success());
    if !has_origin {
        return if cfg.forge == ForgeKind::Local {
            Check::ok("remote", "no origin remote (the local forge needs none)")
        } else {
            Check::fail(
                "remote",
                "the github forge pushes to origin, and the clone has no origin remote",
                "`git remote add origin <url>`",
            )
        };
    }
    let ls_remote = ["ls-remote", "--heads", "origin"];
    match crate::git::command::run(&cfg.project_path, &ls_remote, &[], PROBE_TIMEOUT) {
        Ok(Some(out)) if out.status.success() => Check::ok("remote", "origin reachable"),
        Ok(Some(out)) => Check::fail(
            "remote",
            format!("git ls-remote origin: {}", first_line(&out.stderr)),
            "check the remote URL, the network and git's credentials for this user",
        ),
        Ok(None) => Check::fail(
            "remote",
            format!(
                "git ls-remote origin gave no answer within {} s",
                PROBE_TIMEOUT.as_secs()
            ),
            "check the network",
        ),
        Err(e) => Check::fail(
            "remote",
            format!("git cannot be started: {e}"),
            "install git",
        ),
    }
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no output")
        .to_string()
}
