//! How issues and changes are named to people and tools: in the tracker's own form (`#12` on
//! GitHub, GitLab and the local tracker, `ENG-12` on Linear; `!34` for a GitLab merge
//! request, `#34` for a pull request). The machine knows issues by number only; every place
//! that prints, names a branch or tells the agent an issue asks this one type, built from the
//! config, so no place re-derives the form.

use super::{Config, ForgeKind, TrackerConfig};

/// The reference form of one config's tracker and forge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssueRefs {
    /// The Linear team's key: issue `n` is `<team>-<n>`. `None`: issue `n` is `#n`.
    team: Option<String>,
    /// Changes are GitLab merge requests (`!n`), not pull requests (`#n`).
    merge_requests: bool,
}

impl IssueRefs {
    /// The form the config's tracker and forge use.
    pub fn of(cfg: &Config) -> IssueRefs {
        let team = match cfg.tracker {
            TrackerConfig::Linear { .. } => cfg.linear.team.clone().filter(|t| !t.is_empty()),
            _ => None,
        };
        IssueRefs {
            team,
            merge_requests: cfg.forge == ForgeKind::Gitlab,
        }
    }

    /// Linear's form with the team key `team`, for tests and tools without a config.
    pub fn linear(team: &str) -> IssueRefs {
        IssueRefs {
            team: Some(team.to_string()),
            merge_requests: false,
        }
    }

    /// Issue `n` as people read it: `#12`, `ENG-12`.
    pub fn issue(&self, n: u32) -> String {
        match &self.team {
            Some(team) => format!("{team}-{n}"),
            None => format!("#{n}"),
        }
    }

    /// Issue `n` as a name: `12`, `ENG-12`. It leads the feature branch (`<id>-<slug>`) and is
    /// the agent's `SDLC_ISSUE`.
    pub fn id(&self, n: u32) -> String {
        match &self.team {
            Some(team) => format!("{team}-{n}"),
            None => n.to_string(),
        }
    }

    /// The start of every feature branch of issue `n`: `12-`, `ENG-12-`.
    pub fn branch_prefix(&self, n: u32) -> String {
        format!("{}-", self.id(n))
    }

    /// The change (pull or merge request) `n` as people read it: `#34`, `!34`.
    pub fn change(&self, n: u32) -> String {
        if self.merge_requests {
            format!("!{n}")
        } else {
            format!("#{n}")
        }
    }

    /// The line of a change's description that closes issue `n` on merge: `Closes #12` for
    /// the forge's own issues; `Closes ENG-12` for Linear, whose integration reads it, where
    /// `#12` would close the forge's unrelated issue 12.
    pub fn closes(&self, n: u32) -> String {
        format!("Closes {}", self.issue(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tracker_names_its_issues_in_its_own_form() {
        let hash = IssueRefs::default();
        assert_eq!(
            (hash.issue(12), hash.id(12), hash.change(34)),
            ("#12".into(), "12".into(), "#34".into())
        );
        let lab = IssueRefs {
            merge_requests: true,
            ..IssueRefs::default()
        };
        assert_eq!(
            (lab.issue(12), lab.change(34)),
            ("#12".into(), "!34".into())
        );
        let linear = IssueRefs::linear("ENG");
        assert_eq!(
            (linear.issue(12), linear.id(12), linear.branch_prefix(12)),
            ("ENG-12".into(), "ENG-12".into(), "ENG-12-".into())
        );
        assert_eq!(linear.closes(12), "Closes ENG-12");
    }
}
