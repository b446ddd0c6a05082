//! The offline forge: origin plays GitHub. A branch with its own work merged into
//! `origin/<main>` is a merged PR; there is no CI.
//!
//! Open PRs are records (`<pulls>/<n>.json`) when the runner opens them itself (builtin
//! createPR). When an agent opens them instead it has no way to write a record, so without
//! a records directory a pushed branch stands for its open PR.

use super::{ForgeError, Pr, PrState};
use crate::git::repo::Repo;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One local pull request.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    number: u32,
    branch: String,
    title: String,
    body: String,
    created_at: String,
}

fn records(pulls: &Path) -> Result<Vec<Record>, ForgeError> {
    let entries = match std::fs::read_dir(pulls) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(io_error(pulls, "cannot list the local PRs", source)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let bytes = crate::safe_fs::read_no_follow(&path)
            .map_err(|source| io_error(&path, "cannot read a local PR", source))?;
        let record: Record = serde_json::from_slice(&bytes).map_err(|e| ForgeError::Parse {
            command: format!("read {}", path.display()),
            detail: format!("{e}; remove the file if it is not a PR record"),
        })?;
        out.push(record);
    }
    out.sort_by_key(|r| r.number);
    Ok(out)
}

fn io_error(path: &Path, what: &str, source: std::io::Error) -> ForgeError {
    ForgeError::Command {
        command: format!("{what} ({})", path.display()),
        status: None,
        stderr: source.to_string(),
        hint: "check the permissions of the runner's state directory",
        kind: crate::call_failure::CallFailureKind::of_io(&source),
    }
}

fn url(branch: &str, number: u32) -> String {
    if number == 0 {
        format!("local:{branch}")
    } else {
        format!("local:{branch}#{number}")
    }
}

pub(super) fn pr_for_branch(
    repo: &Repo,
    pulls: Option<&Path>,
    branch: &str,
) -> Result<Option<Pr>, ForgeError> {
    let record = match pulls {
        Some(dir) => records(dir)?.into_iter().rev().find(|r| r.branch == branch),
        None => None,
    };
    let number = record.as_ref().map_or(0, |r| r.number);
    if repo.branch_has_own_work(branch)? && repo.merged_into_main(branch)? {
        return Ok(Some(Pr {
            number,
            url: url(branch, number),
            state: PrState::Merged,
        }));
    }
    let open = match pulls {
        Some(_) => record.is_some(),
        None => repo.branch_pushed(branch)?,
    };
    Ok(open.then(|| Pr {
        number,
        url: url(branch, number),
        state: PrState::Open,
    }))
}

pub(super) fn create_pr(
    pulls: Option<&Path>,
    branch: &str,
    title: &str,
    body: &str,
) -> Result<Pr, ForgeError> {
    let Some(dir) = pulls else {
        // An agent-run createPR: pushing the branch was opening the PR.
        return Ok(Pr {
            number: 0,
            url: url(branch, 0),
            state: PrState::Open,
        });
    };
    crate::safe_fs::create_private_dir(dir).map_err(|e| ForgeError::Command {
        command: format!("create {}", dir.display()),
        status: None,
        kind: crate::call_failure::CallFailureKind::Permission,
        stderr: e.to_string(),
        hint: "check the runner's state directory",
    })?;
    let number = records(dir)?.last().map_or(1, |r| r.number + 1);
    let record = Record {
        number,
        branch: branch.to_string(),
        title: title.to_string(),
        body: body.to_string(),
        created_at: chrono::Utc::now().to_rfc3339(),
    };
    let path = dir.join(format!("{number}.json"));
    let bytes = serde_json::to_vec_pretty(&record).map_err(|e| ForgeError::Parse {
        command: format!("write {}", path.display()),
        detail: e.to_string(),
    })?;
    crate::safe_fs::write_new(&path, &bytes)
        .map_err(|source| io_error(&path, "cannot write the local PR", source))?;
    Ok(Pr {
        number,
        url: url(branch, number),
        state: PrState::Open,
    })
}

pub(super) fn merge_pr(
    repo: &Repo,
    _pulls: Option<&Path>,
    branch: &str,
    commit: &str,
    message: &str,
) -> Result<(), ForgeError> {
    repo.merge_into_main(branch, commit, message)
}
