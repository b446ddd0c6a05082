//! The offline forge: origin plays GitHub. A pushed branch is an open PR and a branch with
//! its own work merged into `origin/<main>` is a merged one; there is no CI.

use super::{Pr, PrState};
use crate::repo::{Repo, RepoError};

pub(super) fn pr_for_branch(repo: &Repo, branch: &str) -> Result<Option<Pr>, RepoError> {
    let url = format!("local:{branch}");
    if repo.branch_has_own_work(branch)? && repo.merged_into_main(branch)? {
        return Ok(Some(Pr {
            number: 0,
            url,
            state: PrState::Merged,
        }));
    }
    if repo.branch_pushed(branch)? {
        return Ok(Some(Pr {
            number: 0,
            url,
            state: PrState::Open,
        }));
    }
    Ok(None)
}
