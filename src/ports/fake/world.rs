//! The data the fake ports share: a repository, its origin, the forge's PRs and CI, the
//! tracker's issues, and the scripted faults.

use crate::ports::forge::{CiState, Feedback, Pr, PrState};
use crate::ports::tracker::Issue;
use crate::step::Step;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// A feature branch of the fake repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Branch {
    /// Commits of its own (ahead of main).
    pub commits: u32,
    /// Of those, the ones origin has.
    pub pushed: u32,
    /// Origin has the branch.
    pub on_origin: bool,
    /// Origin's main commit the branch was last brought up to date with.
    pub base: u32,
    /// Merged into origin's main.
    pub merged: bool,
}

/// Faults the fakes act out, each counted down as it happens.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// The tracker refuses every write (close, quarantine) as a permission failure.
    pub tracker_read_only: bool,
    /// The next this many tracker calls fail on the network.
    pub tracker_network_failures: u32,
    /// The next this many forge calls fail on the network.
    pub forge_network_failures: u32,
    /// Every push is refused by a hook.
    pub reject_pushes: bool,
    /// The next this many merges lose the push race: another merger's commit lands on
    /// origin's main just before, and the merge is refused.
    pub lost_races: u32,
    /// A person closes issue `.0` in the tracker right after its step `.1` succeeded.
    pub close_after: Option<(u32, Step)>,
    /// A person closes this issue in the tracker while its merge pauses after a lost race.
    pub close_on_lost_race: Option<u32>,
    /// Someone else writes file `.2` with `.3` right after step `.1` of issue `.0` succeeded
    /// (another runner's claim, say).
    pub write_after: Option<(u32, Step, std::path::PathBuf, String)>,
    /// CI of every branch.
    pub ci: Option<CiState>,
    /// An agent's merge puts the PR in the base branch's merge queue instead of merging it
    /// (as `gh pr merge` does where the base branch requires the queue); the queue merges it
    /// at the look after this many looks found it still queued.
    pub merge_queue_looks: Option<u32>,
}

/// Everything the fakes hold.
#[derive(Debug, Clone, Default)]
pub struct WorldState {
    /// The checked-out branch; `main` at the start.
    pub current: String,
    /// Commits on origin's main (each merge adds one): its "commit id".
    pub origin_main: u32,
    /// Feature branches by name.
    pub branches: BTreeMap<String, Branch>,
    /// Changes in the tree that are nobody's work (`git status` paths).
    pub foreign_changes: Vec<String>,
    /// What the last agent step changed of the repository's hooks and configuration, as the
    /// real adapter describes it: taken (and so put back) by the next `undo_tampering`.
    pub tampering: Vec<String>,
    /// Whether the session recorded the repository's hooks and configuration.
    pub trust_recorded: bool,
    /// Issues whose spec files are written.
    pub specs: BTreeSet<u32>,
    /// PRs by head branch.
    pub prs: BTreeMap<String, Pr>,
    /// Reviews and comments by head branch, oldest first.
    pub reviews: BTreeMap<String, Vec<Feedback>>,
    /// Issues by number.
    pub issues: BTreeMap<u32, Issue>,
    /// Scripted faults.
    pub script: Script,
    /// Every agent invocation: (issue, step, attempt).
    pub invocations: Vec<(u32, Step, u32)>,
    /// Every merge into origin's main, by issue, in order.
    pub merges: Vec<u32>,
    /// PRs waiting in the merge queue, by branch: the looks left before the queue merges.
    pub queued: BTreeMap<String, u32>,
    /// Every successful tracker write: `close #N` or `escalate #N`.
    pub tracker_writes: Vec<String>,
}

impl WorldState {
    /// Issue `issue`'s branch merged into origin's main, its PR with it.
    pub fn merge(&mut self, issue: u32, branch: &str) {
        if let Some(pr) = self.prs.get_mut(branch) {
            pr.state = PrState::Merged;
        }
        self.branches.entry(branch.to_string()).or_default().merged = true;
        self.origin_main += 1;
        self.merges.push(issue);
    }
}

/// The shared world; clones share it.
#[derive(Debug, Clone)]
pub struct World(Arc<Mutex<WorldState>>);

impl World {
    /// A repository on main and a tracker holding `issues` (number, title), open and
    /// labelled for automation with `label`.
    pub fn new(issues: &[(u32, &str)], label: &str) -> World {
        let mut state = WorldState {
            current: "main".to_string(),
            ..Default::default()
        };
        for &(number, title) in issues {
            state.issues.insert(
                number,
                Issue {
                    number,
                    title: title.to_string(),
                    body: String::new(),
                    labels: vec![label.to_string()],
                    milestone: None,
                    state_open: true,
                    escalated: false,
                    parent: None,
                    closed_by_merged_pr: None,
                    blocked_by: Vec::new(),
                },
            );
        }
        World(Arc::new(Mutex::new(state)))
    }

    /// The state, locked (a panic in another holder does not hide it).
    pub fn lock(&self) -> MutexGuard<'_, WorldState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state, locked for a call of a port whose production adapter blocks (git, the
    /// forge, the tracker). Such a call made on a thread that drives async code panics: the
    /// driver must make it through `ports::Io`, off the runtime, as it must with the real
    /// adapters.
    pub(super) fn lock_for_blocking_call(&self) -> MutexGuard<'_, WorldState> {
        assert!(
            crate::process::may_block(),
            "a blocking port was called on a thread that drives async code: call it through ports::Io"
        );
        self.lock()
    }

    /// Sets the scripted faults.
    pub fn script(&self, edit: impl FnOnce(&mut Script)) {
        edit(&mut self.lock().script);
    }
}

/// Counts a scripted fault down: `true` when one was due (and is now spent).
pub(super) fn due(counter: &mut u32) -> bool {
    let due = *counter > 0;
    *counter = counter.saturating_sub(1);
    due
}

/// What a fake network failure says.
pub(super) const NETWORK_DOWN: &str = "error connecting to api.github.com";
