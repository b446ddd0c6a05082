//! The first event of a run, once the driver drives: the journal's restart event, or what git
//! and the forge show that the journal does not know (a merged PR, a branch made by hand).

use super::cycle::Cycle;
use super::run_context::RunContext;
use super::Answer;
use crate::artifacts::StateFile;
use crate::machine::{Core, Event, Mode};
use crate::narration as say;
use crate::ports::Io;
use crate::prompt::IssueContext;
use crate::step::Step;
use crate::steps::checks;

/// The first event of this run. Where the journal has a cycle in progress, that cycle goes
/// on from the journal's position (an interrupted attempt counts as failed): the work tree
/// never moves it, except that a merged PR for the issue's branch means the merge is done.
/// Without a cycle, git may show work the journal does not know (a branch made by hand):
/// it is adopted unless the tracker marks the issue escalated.
pub(super) async fn initial_event(
    core: &Core,
    io: &Io,
    state: &StateFile,
    run: &RunContext,
    cycle: &mut Cycle,
    restart: Event,
) -> Answer {
    let main = &run.main;
    if core.is_terminal() || matches!(restart, Event::ModeChanged { .. }) {
        return Answer::of(restart);
    }
    if matches!(core.runner().mode, Mode::SingleStep(_)) {
        return Answer::of(restart);
    }
    if let Some(issue) = core.runner().issue {
        return cycle_under_way(core, io, state, cycle, issue, restart).await;
    }
    let state = state.clone();
    // A pushed head the test-weakening check has not let through is checked now.
    let gate = crate::steps::weakening::Gate::configured(&run.cfg, false);
    let progress = io
        .call(move |w| checks::detect_progress(&*w.git, &*w.forge, Some(&state), gate.as_ref()))
        .await;
    let detected = match progress {
        Ok(d) => d,
        Err(e) => return Answer::of(restart).narrated(say::progress_unreadable(&e)),
    };
    let Some(d) = detected else {
        return Answer::of(restart);
    };
    if let Mode::SingleIssue(n) = core.runner().mode {
        if d.issue != n {
            return Answer::of(restart);
        }
    }
    let number = d.issue;
    let issue = match io.call(move |w| w.tracker.get(number)).await {
        Ok(issue) => issue,
        Err(e) => {
            return Answer::of(restart).narrated(say::branch_not_adopted(&d.branch, d.issue, &e))
        }
    };
    if issue.escalated || core.escalated().contains(&d.issue) {
        return Answer::of(restart).narrated(say::branch_of_escalated(&d.branch, d.issue));
    }
    if d.merged {
        if !issue.state_open {
            // Merged and closed: only the checkout to main was left to do.
            let mut answer = Answer::of(restart);
            if let Err(e) = io.call(|w| w.git.checkout_main()).await {
                answer = answer.narrated(say::cannot_check_out(main, &e));
            }
            return answer;
        }
        return Answer::of(Event::AlreadyMerged { issue: d.issue })
            .narrated(say::already_merged_fresh_cycle(d.issue));
    }
    cycle.issue = IssueContext {
        number: d.issue,
        title: issue.title,
        branch: Some(d.branch.clone()),
    };
    cycle.feature = d.feature.clone();
    Answer::of(Event::Resume {
        issue: d.issue,
        next: d.next,
    })
    .narrated(say::adopting_branch(&d.branch, d.issue, d.next.key()))
}

/// The journal's cycle goes on from its position; a merged PR for its branch means the merge
/// is done (unless the journal records it already: the restart re-issues that request).
async fn cycle_under_way(
    core: &Core,
    io: &Io,
    state: &StateFile,
    cycle: &mut Cycle,
    issue: u32,
    restart: Event,
) -> Answer {
    cycle.issue = io.call(move |w| IssueContext::asked(w, issue)).await;
    if state.current_issue == Some(issue) {
        cycle.feature = state.feature_name.clone();
    }
    // A merge the journal already records is being told to the tracker: the
    // restart event re-issues that request.
    let recorded = core.runner().merged.contains(&issue);
    let branch = cycle.issue.branch.clone().filter(|_| !recorded);
    let merged = match branch {
        Some(b) => {
            let pr = io.call(move |w| w.forge.pr_for_branch(&b)).await;
            matches!(pr, Ok(Some(pr)) if pr.state == crate::forge::PrState::Merged)
        }
        None => false,
    };
    if merged {
        let resume = Event::Resume {
            issue,
            next: Step::Merge,
        };
        return Answer::of(resume).narrated(say::pr_merged_recording(issue));
    }
    Answer::of(restart)
}
