//! `sdlc-runner init`: a commented starting config for the repository in the current
//! directory. The tracker and forge follow the `origin` remote (GitHub when it points at
//! github.com or at a GitHub Enterprise host `gh` is logged in to; GitLab when it points at
//! gitlab.com or at a host whose API answers `/api/v4/version`; else the local tracker and
//! forge); the five steps that need no model run as
//! builtin steps. An existing file is never overwritten.

use crate::cli::InitArgs;
use std::path::{Path, PathBuf};

mod template;

/// The local tracker's directory, relative to the config file.
pub const LOCAL_TRACKER_DIR: &str = "issues";

pub fn run(args: &InitArgs) -> i32 {
    match init(args) {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// Where the project's remote lives, as init reads it from origin.
struct Remote {
    /// origin's host and `owner/name`.
    origin: Option<(String, String)>,
    /// The GitHub repository (`owner/name`, or `host/owner/name` on a GitHub Enterprise
    /// server `gh` is logged in to).
    github: Option<String>,
    /// The GitLab server and project path.
    gitlab: Option<(String, String)>,
}

fn init(args: &InitArgs) -> Result<(), i32> {
    let cwd = std::env::current_dir().map_err(|e| {
        say!("error: cannot read the current directory: {e}");
        2
    })?;
    let top = toplevel(&cwd).map_err(|message| {
        say!("error: {message}");
        2
    })?;
    let remote = Remote::of(&top);
    let target = match &args.config {
        Some(path) if path.is_absolute() => path.clone(),
        Some(path) => cwd.join(path),
        None => top.join("sdlc-config.json"),
    };
    if let Some(old) = remote
        .github
        .as_ref()
        .and_then(|_| crate::services::github::forge::older_gh(Path::new("gh"), &top))
    {
        say!("error: {old}; install a newer gh (the distribution's package, or https://cli.github.com), then run init again");
        return Err(2);
    }
    let mut text = config_text(&top, remote.github.as_deref());
    if let Some((url, project)) = &remote.gitlab {
        text = with_gitlab(&text, url, project);
    }
    write_config(&target, &template::adapt(&text, args.agent))?;
    // A config left untracked would make the tree dirty, which startCycle refuses.
    let excluded = target
        .strip_prefix(&top)
        .ok()
        .map(|relative| exclude(&top, relative));
    if remote.github.is_none() && remote.gitlab.is_none() {
        make_local_tracker(&top, &target);
    }
    // The runner's own files, so `doctor` has nothing to warn about right after init.
    let artifacts: Vec<String> = crate::artifacts::exclude_patterns().collect();
    if let Err(e) = crate::git::exclude::add_excludes(
        &top,
        &artifacts,
        "# sdlc-runner artifacts (with their temporary and renamed copies)",
    ) {
        say!("warning: cannot add the runner's files to .git/info/exclude ({e}); the first run tries again");
    }
    out!("{}", target.display());
    say_written(&remote, &target, excluded);
    Ok(())
}

impl Remote {
    fn of(top: &Path) -> Remote {
        let origin = origin_url(top).and_then(|url| remote_slug(&url));
        let github = origin
            .as_ref()
            .filter(|(host, _)| host == "github.com" || gh_logged_in(top, host))
            .map(|(host, slug)| match host.as_str() {
                "github.com" => slug.clone(),
                _ => format!("{host}/{slug}"),
            });
        let gitlab = match (&github, origin_url(top)) {
            (None, Some(url)) => gitlab_remote(&url),
            _ => None,
        };
        Remote {
            origin,
            github,
            gitlab,
        }
    }
}

/// Writes the new config; init never overwrites one.
fn write_config(target: &Path, text: &str) -> Result<(), i32> {
    match crate::safe_fs::write_new(target, text.as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            say!(
                "error: {} already exists; init never overwrites a config: move it away or pass --config with another path",
                target.display()
            );
            Err(2)
        }
        Err(e) => {
            say!(
                "error: cannot write {}: {e}; choose another path with --config",
                target.display()
            );
            Err(2)
        }
    }
}

/// The local tracker's directory: created (doctor and run need it) and kept out of git, so
/// that neither new issue files nor the runner's own writes to them ever dirty the tree.
fn make_local_tracker(top: &Path, target: &Path) {
    let issues = target.parent().unwrap_or(top).join(LOCAL_TRACKER_DIR);
    if let Err(e) = std::fs::create_dir_all(&issues) {
        say!(
            "warning: cannot create {} ({e}); create it before running",
            issues.display()
        );
    }
    if let Ok(relative) = issues.strip_prefix(top) {
        let pattern = format!("/{}/", relative.display());
        if let Err(e) = crate::git::exclude::add_excludes(
            top,
            &[pattern],
            "# the local tracker's issue files (sdlc-runner init)",
        ) {
            say!(
                "warning: cannot add {} to .git/info/exclude ({e}); the runner ignores it anyway",
                issues.display()
            );
        }
    }
}

/// What init wrote and chose, and what is left to do before the first run.
fn say_written(remote: &Remote, target: &Path, excluded: Option<std::io::Result<bool>>) {
    if let (None, None, Some((host, _))) = (&remote.github, &remote.gitlab, &remote.origin) {
        say!("note: origin is on {host}, which `gh auth status --hostname {host}` does not accept; if it is a GitHub Enterprise server, log in (`gh auth login --hostname {host}`) and run init again for the github tracker and forge");
    }
    match &remote.github {
        None if remote.gitlab.is_some() => {
            let (url, project) = remote.gitlab.clone().unwrap_or_default();
            say!("wrote {}: tracker and forge gitlab ({project} at {url}, through GitLab's API with the token in GITLAB_TOKEN); steps startCycle, startIssue, commitPush, createPR, monitorCI and merge are builtin", target.display())
        }
        Some(slug) => say!("wrote {}: tracker and forge github ({slug}, through `gh`); steps startCycle, startIssue, commitPush, createPR, monitorCI and merge are builtin", target.display()),
        None => say!(
            "wrote {}: no GitHub remote, so the local tracker (issues/ beside the config, kept out of git; add issues with `sdlc-runner issue new \"title\"`) and the local forge; steps startCycle, startIssue, commitPush, createPR, monitorCI and merge are builtin",
            target.display()
        ),
    }
    match excluded {
        Some(Ok(true)) => say!(
            "added it to .git/info/exclude so an untracked config does not dirty the tree (commit it with `git add -f` to share it)"
        ),
        Some(Err(e)) => say!("warning: cannot add it to .git/info/exclude ({e}); commit it or the runner will see a dirty tree"),
        _ => {}
    }
    // What the chosen CLI still needs before it can run unattended (binary, login, settings).
    if let Ok(cfg) = crate::config::Config::load(target) {
        for c in crate::agent::cli::doctor_checks(&cfg) {
            if c.level != crate::agent::cli::CheckLevel::Ok {
                say!(
                    "note: {}{}",
                    c.detail,
                    c.fix.map(|f| format!("; fix: {f}")).unwrap_or_default()
                );
            }
        }
    }
    say!(
        "next: edit it, then `sdlc-runner doctor --config {}` and `sdlc-runner run --config {}`",
        target.display(),
        target.display()
    );
}

fn toplevel(cwd: &Path) -> Result<PathBuf, String> {
    let out = crate::git::command::output(cwd, &["rev-parse", "--show-toplevel"])
        .map_err(|e| format!("cannot run git in {}: {e}; install git", cwd.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} is not inside a git repository; run init in your project (or `git init` first)",
            cwd.display()
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    ))
}

fn origin_url(top: &Path) -> Option<String> {
    let out = crate::git::command::output(top, &["remote", "get-url", "origin"]).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|url| !url.is_empty())
}

/// The host and `owner/name` of a remote on any host, in any of its spellings
/// (`https://host/o/n`, `ssh://[user@]host[:port]/o/n`, `user@host:o/n`), else None.
pub fn remote_slug(url: &str) -> Option<(String, String)> {
    let (host, path) = if let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .or_else(|| url.strip_prefix("ssh://"))
    {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        (host.split(':').next()?, path)
    } else {
        // scp-like: `[user@]host:path`, never a local path (those have no colon before a slash).
        let (authority, path) = url.split_once(':')?;
        if authority.contains('/') || url.contains("://") {
            return None;
        }
        (authority.rsplit('@').next()?, path)
    };
    if host.is_empty() {
        return None;
    }
    let rest = path.trim_start_matches('/').trim_end_matches('/');
    let rest = rest.strip_suffix(".git").unwrap_or(rest);
    let mut parts = rest.split('/');
    let (owner, name) = (parts.next()?, parts.next()?);
    (parts.next().is_none() && !owner.is_empty() && !name.is_empty())
        .then(|| (host.to_ascii_lowercase(), format!("{owner}/{name}")))
}

/// The GitLab instance's URL and the project's path of an origin on GitLab: gitlab.com, or a
/// host whose API answers `/api/v4/version` (with the token in `GITLAB_TOKEN`, which most
/// instances want for it). `None` for any other remote.
fn gitlab_remote(url: &str) -> Option<(String, String)> {
    let (base, project) = gitlab_base(url)?;
    if base == "https://gitlab.com" {
        return Some((base, project));
    }
    let token = crate::api_client::read_token(
        "GITLAB_TOKEN",
        "gitlab.tokenEnv",
        Path::new("sdlc-config.json"),
    )
    .ok()?;
    let mut api = crate::api_client::ApiClient::new(
        &crate::services::gitlab::client::api_root(&base),
        token,
        crate::api_client::Auth::PrivateToken,
        "GITLAB_TOKEN",
    );
    api.timeout = std::time::Duration::from_secs(10);
    let version = api
        .json("GET", &crate::api_client::Endpoint::new("version"), None)
        .ok()?;
    version["version"].as_str().map(|_| (base, project))
}

/// Where a remote's GitLab API would be and the project's whole path (groups nest):
/// `https://host[:port]` for an http(s) remote as written, `https://host` for ssh.
pub fn gitlab_base(url: &str) -> Option<(String, String)> {
    let (base, path) = if let Some((scheme, rest)) = url
        .strip_prefix("https://")
        .map(|r| ("https", r))
        .or_else(|| url.strip_prefix("http://").map(|r| ("http", r)))
    {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        (format!("{scheme}://{}", host.to_ascii_lowercase()), path)
    } else if let Some(rest) = url.strip_prefix("ssh://") {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?.split(':').next()?;
        (format!("https://{}", host.to_ascii_lowercase()), path)
    } else {
        // scp-like `[user@]host:path`; a local path has no colon before a slash.
        let (authority, path) = url.split_once(':')?;
        if authority.contains('/') || url.contains("://") {
            return None;
        }
        let host = authority.rsplit('@').next()?;
        (format!("https://{}", host.to_ascii_lowercase()), path)
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    (path.contains('/') && !path.split('/').any(str::is_empty)).then(|| (base, path.to_string()))
}

/// `text` (the local tracker's starting config) with the GitLab tracker and forge instead.
fn with_gitlab(text: &str, url: &str, project: &str) -> String {
    let start = text.find("  \"tracker\": {");
    let end = text.find("  \"forge\": \"local\",");
    let (Some(start), Some(end)) = (start, end) else {
        return text.to_string();
    };
    let end = end + "  \"forge\": \"local\",".len();
    let url = serde_json::Value::from(url);
    let project = serde_json::Value::from(project);
    let gitlab = format!(
        r#"  "tracker": {{
    "_comment": "Issues of the GitLab project labelled `automatable`, read and marked through GitLab's API.",
    "kind": "gitlab",
    "label": "automatable",
    "escalatedLabel": "sdlc-escalated"
  }},
  "_forge": "Branches are pushed to origin; merge requests opened, their pipelines watched and merged through GitLab's API.",
  "forge": "gitlab",
  "gitlab": {{
    "_comment": "The API token (scope api) is read from tokenEnv at start; it is never logged nor given to the agent.",
    "url": {url},
    "project": {project},
    "tokenEnv": "GITLAB_TOKEN"
  }},"#
    );
    format!("{}{gitlab}{}", &text[..start], &text[end..])
}

/// Whether `gh` is logged in to `host` (a GitHub Enterprise server answers like github.com):
/// what makes a remote there one the github tracker and forge can use. No gh, or no answer
/// within the limit, is a no.
fn gh_logged_in(top: &Path, host: &str) -> bool {
    let mut cmd = crate::services::github::gh::unattended(Path::new("gh"), top);
    cmd.args(["auth", "status", "--hostname", host]);
    matches!(
        crate::process::output_within(cmd, std::time::Duration::from_secs(30)),
        Ok(Some(out)) if out.status.success()
    )
}

/// Adds `/<relative>` to `.git/info/exclude` unless a line already says so; `Ok(true)` when
/// it was added.
fn exclude(top: &Path, relative: &Path) -> std::io::Result<bool> {
    let pattern = format!("/{}", relative.display());
    crate::git::exclude::add_excludes(top, &[pattern], "# sdlc-runner config (sdlc-runner init)")
        .map(|added| added > 0)
}

/// The agent's sandbox in the starting config: bubblewrap where it is installed. Where it is
/// not, the key is left out (JSON has no commented-out line) and a `_sandbox` comment says
/// how to turn it on; doctor then warns that the agent runs unsandboxed.
pub fn sandbox_text(bwrap_installed: bool) -> &'static str {
    if bwrap_installed {
        r#"    "_sandbox": "The agent runs in bubblewrap (installed here): it can change the work tree and nothing else, not the runner's journal, your home or your tokens (README, \"The agent in a sandbox\"). \"kind\": \"none\" runs it unsandboxed.",
    "sandbox": { "kind": "bwrap" }"#
    } else {
        r#"    "_sandbox": "bubblewrap is not installed here, so the agent runs unsandboxed and reaches all you can (doctor warns). Install it (apt-get install bubblewrap) and add \"sandbox\": {\"kind\": \"bwrap\"} to this object: the agent can then change the work tree and nothing else (README, \"The agent in a sandbox\").""#
    }
}

/// The config's text. JSON has no comments: keys starting with `_` are the config's comments.
pub fn config_text(project: &Path, github: Option<&str>) -> String {
    let sandbox = sandbox_text(which::which("bwrap").is_ok());
    let project = serde_json::Value::from(project.to_string_lossy().into_owned());
    let (tracker, forge) = match github {
        Some(slug) => (
            format!(
                r#"  "tracker": {{
    "_comment": "Issues of {slug} labelled `automatable`, read and marked through the gh CLI (run `gh auth login` first).",
    "kind": "github",
    "label": "automatable",
    "escalatedLabel": "sdlc-escalated"
  }},"#
            ),
            r#"  "_forge": "Branches are pushed to origin, PRs opened, watched and merged through gh.",
  "forge": "github","#,
        ),
        None => (
            r#"  "tracker": {
    "_comment": "No GitHub remote: one JSON file per issue in this directory (relative to this file), kept out of git. Add issues with `sdlc-runner issue new \"title\"` (labelled automatable unless --label says otherwise); the format is in the README.",
    "kind": "local",
    "dir": "issues"
  },"#
            .to_string(),
            r#"  "_forge": "local: PRs are records under .git/sdlc-runner/pulls and merges are local git merges.",
  "forge": "local","#,
        ),
    };
    // The template's placeholders are `@NAME@`: JSON never holds an `@` outside a string.
    include_str!("init/starting-config.json")
        .replace("@SANDBOX@", sandbox)
        .replace("@TRACKER@", &tracker)
        .replace("@FORGE@", forge)
        // Last: a path may hold anything.
        .replace("@PROJECT@", &project.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_in_every_spelling_on_any_host() {
        for (url, host) in [
            ("https://github.com/acme/widget.git", "github.com"),
            ("https://github.com/acme/widget", "github.com"),
            ("https://github.com/acme/widget/", "github.com"),
            ("git@github.com:acme/widget.git", "github.com"),
            ("ssh://git@github.com/acme/widget.git", "github.com"),
            ("https://GHE.example.com/acme/widget.git", "ghe.example.com"),
            (
                "ssh://git@ghe.example.com:2222/acme/widget",
                "ghe.example.com",
            ),
            ("git@ghe.example.com:acme/widget", "ghe.example.com"),
        ] {
            assert_eq!(
                remote_slug(url),
                Some((host.to_string(), "acme/widget".to_string())),
                "{url}"
            );
        }
        for url in [
            "/srv/git/widget.git",
            "file:///srv/git/acme/widget.git",
            "https://github.com/acme",
            "https://github.com/acme/widget/tree/main",
        ] {
            assert_eq!(remote_slug(url), None, "{url}");
        }
    }

    #[test]
    fn the_sandbox_is_bubblewrap_where_it_is_installed_and_a_comment_where_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        for installed in [true, false] {
            let text = config_text(dir.path(), None).replace(
                sandbox_text(which::which("bwrap").is_ok()),
                sandbox_text(installed),
            );
            let path = dir.path().join(format!("c-{installed}.json"));
            std::fs::write(&path, &text).expect("write");
            let config = crate::config::Config::load(&path)
                .unwrap_or_else(|e| panic!("{installed}: {}", e.lines().join("\n")));
            let sandbox = &config.agent.sandbox;
            if installed {
                assert_eq!(sandbox.kind, crate::config::SandboxKind::Bwrap);
            } else {
                assert_eq!(sandbox.kind, crate::config::SandboxKind::None);
                assert!(!sandbox.chosen, "doctor warns about it");
                assert!(text.contains("apt-get install bubblewrap"), "{text}");
            }
        }
    }

    #[test]
    fn gitlab_remotes_give_the_instance_and_the_whole_project_path() {
        for (url, base, project) in [
            (
                "https://gitlab.com/g/sub/p.git",
                "https://gitlab.com",
                "g/sub/p",
            ),
            (
                "git@gitlab.com:g/sub/p.git",
                "https://gitlab.com",
                "g/sub/p",
            ),
            (
                "ssh://git@gitlab.example.com:2222/g/p.git",
                "https://gitlab.example.com",
                "g/p",
            ),
            ("http://127.0.0.1:8080/g/p", "http://127.0.0.1:8080", "g/p"),
        ] {
            assert_eq!(
                gitlab_base(url),
                Some((base.to_string(), project.to_string())),
                "{url}"
            );
        }
        assert_eq!(gitlab_base("https://gitlab.com/just-a-user"), None);
        assert_eq!(gitlab_base("/srv/git/p.git"), None);
        assert_eq!(
            gitlab_remote("git@gitlab.com:g/sub/p.git"),
            Some(("https://gitlab.com".to_string(), "g/sub/p".to_string()))
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.json");
        let text = with_gitlab(
            &config_text(dir.path(), None),
            "https://gitlab.com",
            "g/sub/p",
        );
        std::fs::write(&path, text).expect("write");
        let config = crate::config::Config::load(&path)
            .unwrap_or_else(|e| panic!("{}", e.lines().join("\n")));
        assert_eq!(config.forge, crate::config::ForgeKind::Gitlab);
        assert_eq!(config.gitlab.project.as_deref(), Some("g/sub/p"));
    }

    #[test]
    fn both_templates_load_as_valid_configs() {
        let dir = tempfile::tempdir().expect("temp dir");
        for github in [None, Some("acme/widget")] {
            let path = dir.path().join(format!("c-{}.json", github.is_some()));
            std::fs::write(&path, config_text(dir.path(), github)).expect("write");
            let config = crate::config::Config::load(&path)
                .unwrap_or_else(|e| panic!("{github:?}: {}", e.lines().join("\n")));
            for step in [
                crate::step::Step::StartCycle,
                crate::step::Step::StartIssue,
                crate::step::Step::CommitPush,
                crate::step::Step::CreatePr,
                crate::step::Step::MonitorCi,
                crate::step::Step::Merge,
            ] {
                assert!(config.builtin(step), "{github:?}: {step:?} is builtin");
            }
            assert_eq!(
                config.forge == crate::config::ForgeKind::Github,
                github.is_some()
            );
            // The review block is there to uncomment: its keys, as a comment.
            let text = config_text(dir.path(), github);
            assert!(
                text.contains(r#""_review": "#) && text.contains("approvalTimeoutMinutes"),
                "{text}"
            );
            assert!(!config.review.require_approval);
            assert!(
                text.contains(r#""_addressReview": "#) && text.contains(r#"\"addressReview\": {"#),
                "{text}"
            );
        }
    }
}
