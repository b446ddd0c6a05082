//! What the operator's repository lets git run, and where it sends the work: recorded when a
//! session starts, pinned on every git call of the runner, and compared after each agent step
//! (docs/security.md, "What the agent leaves in .git").
//!
//! An agent that writes into the clone's git directory could otherwise have the runner, outside
//! any sandbox and with the operator's credentials, run its code (a hook, an fsmonitor, a
//! filter or textconv driver, a credential helper, an ssh command …) or push to a remote of its
//! choosing. The record holds the repository's own configuration files, the attributes file of
//! the git directory, what `.git` is in the work tree and every hook; [`Trusted::changes`] names
//! what differs, and [`Trusted::restore`] puts the recorded state back, before the runner's next
//! git call.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The configuration sections whose every entry can run a program, redirect a fetch or a push,
/// or pull in more configuration: none of them is the agent's to change.
const GUARDED_SECTIONS: &[&str] = &[
    "include",
    "includeif",
    "url",
    "remote",
    "filter",
    "credential",
    "gpg",
    "hook",
    "trace2",
    "http",
    "protocol",
    "submodule",
    "extensions",
    "mergetool",
    "difftool",
    "pager",
    "sendemail",
];

/// Single entries of otherwise harmless sections that run a program or move the work tree.
const GUARDED_KEYS: &[&str] = &[
    "core.hookspath",
    "core.fsmonitor",
    "core.fsmonitorhookversion",
    "core.sshcommand",
    "core.gitproxy",
    "core.askpass",
    "core.editor",
    "core.pager",
    "core.worktree",
    "core.attributesfile",
    "core.alternaterefscommand",
    "core.bare",
    "diff.external",
    "sequence.editor",
    "uploadpack.packobjectshook",
    "interactive.difffilter",
    "web.browser",
    "imap.tunnel",
];

/// Entries of a section with a subsection (`diff.<driver>.textconv`) that run a program.
const GUARDED_DRIVER_KEYS: &[(&str, &str)] = &[
    ("diff", "textconv"),
    ("diff", "command"),
    ("merge", "driver"),
    ("browser", "cmd"),
    ("man", "cmd"),
];

/// Whether a configuration entry (git's canonical spelling: section and name lower case) is
/// one the agent may not change.
pub fn is_guarded(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    let section = lower.split('.').next().unwrap_or_default();
    if GUARDED_SECTIONS.contains(&section) || GUARDED_KEYS.contains(&lower.as_str()) {
        return true;
    }
    let name = lower.rsplit('.').next().unwrap_or_default();
    let has_subsection = lower.matches('.').count() >= 2;
    has_subsection
        && GUARDED_DRIVER_KEYS
            .iter()
            .any(|(s, n)| *s == section && *n == name)
}

/// A file of the git directory the record keeps byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Kept {
    path: PathBuf,
    /// What a person reads in a change's description (`.git/config`).
    label: String,
    /// `None` when the file did not exist.
    content: Option<Entry>,
}

impl Kept {
    fn read(path: PathBuf, label: String) -> io::Result<Kept> {
        Ok(Kept {
            content: read_entry(&path)?,
            path,
            label,
        })
    }
}

/// A file as recorded: its bytes and permission bits, or where it links to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Entry {
    File { bytes: Vec<u8>, mode: u32 },
    Link(PathBuf),
}

/// The repository's trusted state, recorded once per session (per clone), and kept in the
/// runner's directory so that a session resumed after a crash compares with it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Trusted {
    work_tree: PathBuf,
    /// The configuration files, `info/attributes` and the work tree's `.git` when it is a file.
    kept: Vec<Kept>,
    /// The files the configuration includes (or would, once there), byte for byte: while
    /// they and the configuration files are as recorded, the guarded entries are too.
    included: Vec<Kept>,
    /// The guarded entries of the configuration files, includes followed, in order.
    guarded: Vec<(String, String)>,
    /// Where git looked for hooks when the session started.
    hooks_dir: PathBuf,
    hooks: BTreeMap<String, Entry>,
    /// The runner's private copy of the hooks, which every git call of the runner uses.
    pinned_hooks: PathBuf,
}

/// The configuration files as a check last found them, nothing guarded changed; `Default`
/// before the first check.
#[derive(Debug, Default)]
pub struct Seen(Option<Vec<Kept>>);

/// How the record reads the configuration: `git config --file <f> --includes --show-origin
/// --list -z`,
/// started by the caller (git starts only in `git/command.rs`).
pub type ListConfig<'a> = &'a dyn Fn(&Path) -> io::Result<Vec<u8>>;

impl Trusted {
    /// Records the repository whose work tree is `work_tree`, whose git directories are
    /// `git_dir` and `common_dir`, and copies its hooks into `pinned_hooks` (in the runner's
    /// private directory).
    pub fn record(
        work_tree: &Path,
        (git_dir, common_dir): (&Path, &Path),
        pinned_hooks: &Path,
        list: ListConfig<'_>,
    ) -> io::Result<Trusted> {
        let mut kept = vec![
            Kept::read(common_dir.join("config"), ".git/config".into())?,
            Kept::read(
                git_dir.join("config.worktree"),
                ".git/config.worktree".into(),
            )?,
            Kept::read(
                common_dir.join("info").join("attributes"),
                ".git/info/attributes".into(),
            )?,
        ];
        let dot_git = work_tree.join(".git");
        if fs::symlink_metadata(&dot_git).is_ok_and(|m| !m.is_dir()) {
            kept.push(Kept::read(dot_git, "the work tree's .git file".into())?);
        }
        let (guarded, included) = guarded_entries(&kept, list)?;
        let hooks_dir = hooks_dir(work_tree, common_dir, &guarded);
        let hooks = read_hooks(&hooks_dir)?;
        let trusted = Trusted {
            work_tree: work_tree.to_path_buf(),
            kept,
            included,
            guarded,
            hooks_dir,
            hooks,
            pinned_hooks: pinned_hooks.to_path_buf(),
        };
        trusted.write_hooks(&trusted.pinned_hooks)?;
        Ok(trusted)
    }

    /// The `-c` options every git call of the runner carries: the recorded hooks (the runner's
    /// copy, which nothing in the work tree or the git directory can change) and the recorded
    /// fsmonitor (none unless the operator set one).
    pub fn pins(&self) -> Vec<String> {
        let fsmonitor = self
            .guarded
            .iter()
            .rev()
            .find(|(k, _)| k == "core.fsmonitor")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "false".into());
        vec![
            "-c".into(),
            format!("core.hooksPath={}", self.pinned_hooks.display()),
            "-c".into(),
            format!("core.fsmonitor={fsmonitor}"),
        ]
    }

    /// Whether this record is of the work tree at `path`.
    pub fn is_of(&self, path: &Path) -> bool {
        self.work_tree == path
    }

    /// Where a git call's options go for this repository: `pins` then `args`.
    pub fn pinned<'a>(pins: &'a [String], args: &[&'a str]) -> Vec<&'a str> {
        pins.iter()
            .map(String::as_str)
            .chain(args.iter().copied())
            .collect()
    }

    /// What differs from the record, one line each (empty when nothing does). `seen` keeps
    /// the configuration files as the last check found them with nothing guarded changed, so
    /// that a benign change (a branch's upstream) costs one look at git, not one per step.
    pub fn changes(&self, seen: &mut Seen, list: ListConfig<'_>) -> io::Result<Vec<String>> {
        let mut found = Vec::new();
        let mut now_kept = Vec::new();
        for k in &self.kept {
            let now = Kept::read(k.path.clone(), k.label.clone())?;
            if now.content.is_some() && k.content.is_none() && k.label.ends_with("attributes") {
                found.push(format!("{} added", k.label));
            } else if now.content != k.content && k.label.ends_with("attributes") {
                found.push(format!("{} changed", k.label));
            } else if now.content != k.content && k.label.contains(".git file") {
                found.push(format!("{} changed (it names the git directory)", k.label));
            }
            now_kept.push(now);
        }
        let dot_git = self.work_tree.join(".git");
        let recorded_file = self.kept.iter().any(|k| k.path == dot_git);
        if !recorded_file && fs::symlink_metadata(&dot_git).is_ok_and(|m| !m.is_dir()) {
            found.push("the work tree's .git was replaced (it names another git directory)".into());
        }
        // Asking git costs a process per step: only when a file it reads changed since the
        // record, or since the last check that found nothing guarded changed.
        let mut files = now_kept.clone();
        for k in &self.included {
            files.push(Kept::read(k.path.clone(), k.label.clone())?);
        }
        let reference = match &seen.0 {
            Some(last) => last.clone(),
            None => self.kept.iter().chain(&self.included).cloned().collect(),
        };
        if files != reference {
            let (guarded, _) = guarded_entries(&now_kept, list)?;
            let changed = entry_changes(&self.guarded, &guarded);
            seen.0 = changed.is_empty().then_some(files);
            found.extend(changed);
        }
        found.extend(hook_changes(
            "hook",
            &self.hooks,
            &read_hooks(&self.hooks_dir)?,
        ));
        found.extend(hook_changes(
            "the runner's copy of hook",
            &self.hooks,
            &read_hooks(&self.pinned_hooks)?,
        ));
        Ok(found)
    }

    /// Puts the recorded state back: the configuration files and `info/attributes` byte for
    /// byte, every hook as it was (an added one removed), and the runner's copy of the hooks.
    pub fn restore(&self) -> io::Result<()> {
        for k in self.kept.iter().chain(&self.included) {
            if read_entry(&k.path)? != k.content {
                put(&k.path, k.content.as_ref())?;
            }
        }
        let dot_git = self.work_tree.join(".git");
        let recorded_file = self.kept.iter().any(|k| k.path == dot_git);
        if !recorded_file && fs::symlink_metadata(&dot_git).is_ok_and(|m| !m.is_dir()) {
            return Err(io::Error::other(format!(
                "{} was replaced by a file; the runner cannot put the git directory back",
                dot_git.display()
            )));
        }
        if read_hooks(&self.hooks_dir)? != self.hooks {
            self.write_hooks(&self.hooks_dir)?;
        }
        if read_hooks(&self.pinned_hooks)? != self.hooks {
            self.write_hooks(&self.pinned_hooks)?;
        }
        Ok(())
    }

    /// Makes `dir` hold exactly the recorded hooks.
    fn write_hooks(&self, dir: &Path) -> io::Result<()> {
        if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
            fs::remove_file(dir)?;
        }
        fs::create_dir_all(dir)?;
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let keep = name.to_str().is_some_and(|n| self.hooks.contains_key(n));
            if !keep {
                let path = entry.path();
                if entry.file_type()?.is_dir() {
                    fs::remove_dir_all(&path)?;
                } else {
                    fs::remove_file(&path)?;
                }
            }
        }
        for (name, hook) in &self.hooks {
            let path = dir.join(name);
            if read_entry(&path)?.as_ref() != Some(hook) {
                put(&path, Some(hook))?;
            }
        }
        Ok(())
    }
}

/// Configuration entries as `(key, value)`, in the order git reads them.
type Entries = Vec<(String, String)>;

/// The guarded entries of the kept configuration files, in file order, and every file they
/// read: the files entries came from (includes followed) and the files includes name, there
/// or not yet.
fn guarded_entries(kept: &[Kept], list: ListConfig<'_>) -> io::Result<(Entries, Vec<Kept>)> {
    let mut out = Vec::new();
    let mut sources: Vec<PathBuf> = Vec::new();
    for k in kept.iter().filter(|k| k.label.contains("config")) {
        if k.content.is_none() {
            continue;
        }
        let listed = list(&k.path)?;
        let mut fields = listed.split(|b| *b == 0);
        while let (Some(origin), Some(entry)) = (fields.next(), fields.next()) {
            let origin = String::from_utf8_lossy(origin);
            if let Some(file) = origin.strip_prefix("file:") {
                let file = k.path.parent().unwrap_or(Path::new("")).join(file);
                if file != k.path && !sources.contains(&file) {
                    sources.push(file);
                }
            }
            let text = String::from_utf8_lossy(entry);
            let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
            if !is_guarded(key) {
                continue;
            }
            if key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path")) {
                let named = include_target(&k.path, value);
                if !sources.contains(&named) {
                    sources.push(named);
                }
            }
            out.push((key.to_string(), value.to_string()));
        }
    }
    let sources = sources
        .into_iter()
        .map(|path| {
            let label = format!("included configuration {}", path.display());
            Kept::read(path, label)
        })
        .collect::<io::Result<Vec<_>>>()?;
    Ok((out, sources))
}

/// The file an include names: `~/` is the home directory, a relative path is relative to the
/// configuration file that names it, as git reads them.
fn include_target(config: &Path, value: &str) -> PathBuf {
    match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(rest))
            .unwrap_or_else(|| PathBuf::from(value)),
        None => config.parent().unwrap_or(Path::new("")).join(value),
    }
}

/// Where git looks for hooks: the recorded `core.hooksPath` (relative to the work tree, as git
/// reads it), else the common git directory's `hooks`.
fn hooks_dir(work_tree: &Path, common_dir: &Path, guarded: &[(String, String)]) -> PathBuf {
    match guarded.iter().rev().find(|(k, _)| k == "core.hookspath") {
        Some((_, v)) if v.starts_with("~/") => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(&v[2..]))
            .unwrap_or_else(|| PathBuf::from(v)),
        Some((_, v)) => work_tree.join(v),
        None => common_dir.join("hooks"),
    }
}

fn entry_changes(before: &[(String, String)], after: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in after {
        if !before.contains(&(k.clone(), v.clone())) {
            out.push(format!("git config {k} = {v:?} added"));
        }
    }
    for (k, v) in before {
        if !after.contains(&(k.clone(), v.clone())) {
            out.push(format!("git config {k} = {v:?} removed"));
        }
    }
    out
}

fn hook_changes(
    what: &str,
    before: &BTreeMap<String, Entry>,
    after: &BTreeMap<String, Entry>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, hook) in after {
        match before.get(name) {
            None => out.push(format!("{what} {name} added")),
            Some(h) if h != hook => out.push(format!("{what} {name} changed")),
            Some(_) => {}
        }
    }
    for name in before.keys().filter(|n| !after.contains_key(*n)) {
        out.push(format!("{what} {name} removed"));
    }
    out
}

/// Every entry of a hooks directory but subdirectories, by name.
fn read_hooks(dir: &Path) -> io::Result<BTreeMap<String, Entry>> {
    let mut out = BTreeMap::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(out)
        }
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            // git names its hooks in ASCII: such a file can never run as one.
            continue;
        };
        if let Some(hook) = read_entry(&entry.path())? {
            out.insert(name, hook);
        }
    }
    Ok(out)
}

/// A file or link as it is now; `None` for nothing there (or a directory, which git never
/// reads as a hook or a configuration file).
fn read_entry(path: &Path) -> io::Result<Option<Entry>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if meta.file_type().is_symlink() {
        return Ok(Some(Entry::Link(fs::read_link(path)?)));
    }
    if !meta.is_file() {
        return Ok(None);
    }
    Ok(Some(Entry::File {
        bytes: crate::safe_fs::read_no_follow(path)?,
        mode: meta.permissions().mode() & 0o7777,
    }))
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Puts `entry` at `path` in place of whatever is there (a link, a directory); `None` removes
/// it. A file is written atomically, with its recorded permission bits.
fn put(path: &Path, entry: Option<&Entry>) -> io::Result<()> {
    match entry {
        None => remove_if_there(path),
        Some(Entry::File { bytes, mode }) => {
            if fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
                fs::remove_dir_all(path)?;
            }
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            crate::safe_fs::write_atomic(path, bytes)?;
            fs::set_permissions(path, fs::Permissions::from_mode(*mode))
        }
        Some(Entry::Link(target)) => {
            remove_if_there(path)?;
            std::os::unix::fs::symlink(target, path)
        }
    }
}
