//! Facts the runner owns, checked before a step and before a post-step check so that their
//! failures are reported as the environment's and never blamed on an issue: git lock files a
//! dead process left behind, changes in the tree that are no cycle's work, and a person's own
//! decision about the issue (closed, relabelled, marked escalated). They are asked in one call
//! off the runtime together with the step's own checks (`Probe`): one trip to the blocking
//! pool per request, not one per question.

use super::shutdown::Shutdown;
use super::{network, Told};
use crate::call_failure::{CallFailureKind, Kinded};
use crate::config::Config;
use crate::machine::{Core, Event, Mode};
use crate::narration as say;
use crate::ports::git::GitError;
use crate::ports::World;
use crate::step::Step;
use crate::tracker::{Issue, TrackerError};
use std::path::PathBuf;
use std::time::Duration;

/// A git lock file older than this is taken as left behind by a process that died: git holds
/// its locks for milliseconds.
const STALE_LOCK_AGE: Duration = Duration::from_secs(30);

/// After a runner died mid-git (killed, a broken pipe): the lock files its git left that
/// no process holds are removed, so the continued session does not fail on its own
/// leftovers. Anything else stays for the workspace check to name. What it narrates.
pub(super) async fn clear_locks_of_a_killed_runner(io: &crate::ports::Io) -> Vec<String> {
    let mut said = Vec::new();
    for lock in io.call(|w| w.git.locks_of_a_dead_git()).await {
        match std::fs::remove_file(&lock) {
            Ok(()) => said.push(say::removed_dead_git_lock(&lock)),
            Err(e) => said.push(say::cannot_remove(&lock, &e)),
        }
    }
    said
}

/// The verdict on the facts `probe` found, in the order they were asked: `Err(event)`
/// when one decides (a stale git lock or foreign changes: `WorkspaceUnfit`; the person
/// withdrew the issue: `IssueWithdrawn`; the tracker could not be asked: the network's or
/// the shutdown's event), else `Ok` with what was asked after them. What it found is told.
pub(super) fn verdict<T>(
    cfg: &Config,
    core: &Core,
    shutdown: &Shutdown,
    step: Step,
    probe: Probe<T>,
    told: &mut Told,
) -> Result<T, Event> {
    let project = &cfg.project_path;
    if let Some(lock) = probe.locks.first() {
        let said = say::stale_git_lock(lock, STALE_LOCK_AGE.as_secs(), project);
        told.narrate(say::workspace(&said));
        told.say(said);
        return Err(Event::WorkspaceUnfit { step });
    }
    if let Some(Ok(changes)) = &probe.foreign {
        if !changes.is_empty() {
            let list = foreign_list(changes, "\n");
            let said = say::foreign_changes(project, step.key(), &list, FOREIGN_FIX);
            told.narrate(say::workspace(&said));
            told.say(said);
            return Err(Event::WorkspaceUnfit { step });
        }
    }
    if let (Some(read), Some(issue)) = (probe.issue, core.runner().issue) {
        let services = || cfg.api_services();
        if let Some(event) = withdrawn_by_a_person(core, shutdown, services, issue, read, told)? {
            return Err(event);
        }
    }
    // A fact that decided returned above; a probe always asks what follows otherwise.
    probe.then.ok_or(Event::WorkspaceUnfit { step })
}

/// What the tracker's answer about `issue` means: `Ok(Some(IssueWithdrawn))` when a person
/// closed it, took its automatable label away (not under `--issue`, which names it
/// explicitly) or marked it escalated; `Err(event)` when the tracker could not be asked for
/// the network. Any other failure to read leaves the decision to the step's own checks.
fn withdrawn_by_a_person(
    core: &Core,
    shutdown: &Shutdown,
    services: impl FnOnce() -> String,
    issue: u32,
    read: Result<(bool, Issue), TrackerError>,
    told: &mut Told,
) -> Result<Option<Event>, Event> {
    let what = format!("reading issue #{issue} from the tracker");
    let (judged, failed) = network::judge(shutdown, services, &what, read);
    told.told(failed);
    let found = match judged {
        network::Patient::Done(Ok(found)) => found,
        // Gone from the tracker (deleted, moved away) is a person's move like a close.
        network::Patient::Done(Err(e)) if e.kind() == CallFailureKind::NotFound => {
            let why = "deleted from the tracker (it is no longer there)";
            told.say(say::withdrawn_said(issue, why));
            told.narrate(say::withdrawn(issue, why));
            return Ok(Some(Event::IssueWithdrawn { issue }));
        }
        network::Patient::Done(Err(e)) => {
            told.narrate(say::warning_of(&what, &e));
            return Ok(None);
        }
        network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => return Err(event),
    };
    let explicit = matches!(core.runner().mode, Mode::SingleIssue(_));
    let Some(why) = withdrawn(&found.1, found.0, explicit) else {
        return Ok(None);
    };
    told.say(say::withdrawn_said(issue, why));
    told.narrate(say::withdrawn(issue, why));
    Ok(Some(Event::IssueWithdrawn { issue }))
}

impl FactsAsked {
    /// What to ask before `step` (`with_tree`: the tree too, which must hold nothing but the
    /// runner's own files before a cycle's first step).
    pub(super) fn before(core: &Core, with_tree: bool) -> FactsAsked {
        FactsAsked {
            with_tree,
            issue: core.runner().issue,
            explicit: matches!(core.runner().mode, Mode::SingleIssue(_)),
        }
    }

    /// The same, without the tracker's answer about the issue (after a step: a person's
    /// decision is read before the next one).
    pub(super) fn without_issue(self) -> FactsAsked {
        FactsAsked {
            issue: None,
            ..self
        }
    }
}

/// Why a person took `issue` out of the runner's hands, if they did.
fn withdrawn(issue: &Issue, selectable: bool, explicit: bool) -> Option<&'static str> {
    if !issue.state_open {
        Some("closed")
    } else if issue.escalated {
        Some("marked escalated")
    } else if !explicit && !selectable {
        Some("no longer labelled for automation")
    } else {
        None
    }
}

/// Which facts a probe asks before a step or a post-step check.
#[derive(Debug, Clone, Copy)]
pub(super) struct FactsAsked {
    with_tree: bool,
    /// The issue under way, whose state the tracker is asked for (none: not asked).
    issue: Option<u32>,
    explicit: bool,
}

/// The facts the runner owns and a person's decision, asked in one call off the runtime (each
/// only while the ones before it let the step go on), then what the step itself asks.
pub(super) struct Probe<T> {
    /// Git lock files left behind.
    locks: Vec<PathBuf>,
    /// Changes in the tree that are no issue's work, when asked.
    foreign: Option<Result<Vec<String>, GitError>>,
    /// The issue as the tracker has it, and whether it is still selectable, when asked.
    issue: Option<Result<(bool, Issue), TrackerError>>,
    /// What the step asks after the facts, when none of them decided.
    then: Option<T>,
}

impl<T> Probe<T> {
    /// Asks `facts` of `world` in order, stopping at the first that decides, then `then`.
    pub(super) fn ask(world: &World, facts: FactsAsked, then: impl FnOnce(&World) -> T) -> Self {
        let mut probe = Probe {
            locks: world.git.stale_locks(STALE_LOCK_AGE),
            foreign: None,
            issue: None,
            then: None,
        };
        if !probe.locks.is_empty() {
            return probe;
        }
        if facts.with_tree {
            let foreign = world.git.foreign_changes();
            let decides = matches!(&foreign, Ok(changes) if !changes.is_empty());
            probe.foreign = Some(foreign);
            if decides {
                return probe;
            }
        }
        if let Some(issue) = facts.issue {
            let read = world
                .tracker
                .get(issue)
                .map(|found| (world.tracker.selectable(&found), found));
            let decides = match &read {
                Ok((selectable, found)) => withdrawn(found, *selectable, facts.explicit).is_some(),
                Err(e) => network::ends_the_sequence(e.kind()),
            };
            probe.issue = Some(read);
            if decides {
                return probe;
            }
        }
        probe.then = Some(then(world));
        probe
    }
}

/// What to do about changes in the working tree that are no issue's work.
pub(crate) const FOREIGN_FIX: &str = "commit, stash or remove them (git stash --include-untracked), or add the paths to .git/info/exclude if they belong to a tool";

/// The first ten of `changes` (`git status --porcelain` lines), joined by `sep`, and how many
/// more there are.
pub(crate) fn foreign_list(changes: &[String], sep: &str) -> String {
    let shown: Vec<&str> = changes.iter().take(10).map(String::as_str).collect();
    let more = changes.len().saturating_sub(shown.len());
    let mut list = shown.join(sep);
    if more > 0 {
        list.push_str(&format!("{sep}… and {more} more"));
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::fake;

    fn world_of(fakes: &fake::World) -> (World, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ports, _) = fake::ports(fakes, dir.path());
        let world = World {
            git: ports.git,
            forge: ports.forge,
            tracker: ports.tracker,
            claims: None,
        };
        (world, dir)
    }

    const ASK: FactsAsked = FactsAsked {
        with_tree: true,
        issue: Some(1),
        explicit: false,
    };

    #[test]
    fn a_probe_asks_the_step_only_when_the_facts_let_it_go_on() {
        let fakes = fake::World::new(&[(1, "First")], "automatable");
        let (world, _dir) = world_of(&fakes);
        let probe = Probe::ask(&world, ASK, |_| "asked");
        assert!(probe.locks.is_empty());
        assert!(matches!(probe.foreign, Some(Ok(ref c)) if c.is_empty()));
        assert!(matches!(probe.issue, Some(Ok((true, _)))));
        assert_eq!(probe.then, Some("asked"));
    }

    #[test]
    fn a_person_s_decision_or_a_tracker_that_cannot_be_asked_ends_the_probe() {
        let fakes = fake::World::new(&[(1, "First")], "automatable");
        let (world, _dir) = world_of(&fakes);
        fakes
            .lock()
            .issues
            .entry(1)
            .and_modify(|i| i.state_open = false);
        let closed = Probe::ask(&world, ASK, |_| panic!("the step was asked after a close"));
        assert!(matches!(closed.issue, Some(Ok((_, ref i))) if !i.state_open));
        assert!(closed.then.is_none());

        fakes
            .lock()
            .issues
            .entry(1)
            .and_modify(|i| i.state_open = true);
        fakes.script(|s| s.tracker_network_failures = 1);
        let unreachable = Probe::ask(&world, ASK, |_| panic!("the step was asked offline"));
        assert!(matches!(unreachable.issue, Some(Err(_))));
        assert!(unreachable.then.is_none());

        // Not asked about the issue (after a step): straight to the step's own check.
        let after = Probe::ask(&world, ASK.without_issue(), |_| "asked");
        assert!(after.issue.is_none());
        assert_eq!(after.then, Some("asked"));
    }
}
