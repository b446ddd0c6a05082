//! monitorCI's look at CI within a builtin step, and what a builtin action found.

use super::super::cycle::Cycle;
use super::super::network;
use super::super::step_run::{Calls, Voice};
use super::{commit_of, persons_move, Facts};
use crate::machine::{Commit, Event};
use crate::step::Step;
use crate::steps::builtin::{self, CiLook, Failed};

/// What a builtin action found: CI pending, passed or failed on a commit, a person's move
/// (its event), or the step done.
pub(in crate::driver) enum Looked {
    Pending(Commit),
    Passed(Commit),
    /// The failing checks, as the forge's verdict named them.
    CiFailed(String),
    Person(Event),
    Done(String),
    /// The runner's own push after a repair is missing (`CiLook::Unpushed`).
    Unpushed,
}

/// One look at CI, for `commit` (none: the one the runner pushed): origin's branch looked
/// at first, so that a person's move is an event. The look dies with its process group at
/// the step's timeoutMin; the waits between looks are the machine's.
pub(super) async fn look_once(
    calls: Calls<'_>,
    cycle: &Cycle,
    voice: &mut Voice<'_>,
    step: Step,
    commit: Option<Commit>,
) -> Result<Result<Looked, Failed>, Event> {
    let deadline = crate::process::deadline_after(calls.run.cfg.timeout(step));
    let facts = Facts::of(cycle, calls.run.refs());
    let expected = commit.map(|c| c.hex());
    let settled = calls
        .patiently(voice, "watching CI", move |w| {
            crate::process::within_deadline(deadline, || {
                facts.with(&*w.git, |facts| {
                    builtin::ci_settled(&*w.git, &*w.forge, facts, expected.as_deref())
                })
            })
        })
        .await;
    let looked = match settled {
        network::Patient::Done(Ok(looked)) => looked,
        network::Patient::Done(Err(failed)) => return Ok(Err(failed)),
        network::Patient::GaveUp(ev) | network::Patient::Cancelled(ev) => return Err(ev),
    };
    let main = &calls.run.main;
    Ok(match looked {
        CiLook::Pending(c) => commit_of(&c).map(Looked::Pending),
        CiLook::Passed(c) => commit_of(&c).map(Looked::Passed),
        CiLook::Failed { checks, .. } => Ok(Looked::CiFailed(checks)),
        CiLook::Unpushed => Ok(Looked::Unpushed),
        CiLook::Person(head) => Ok(Looked::Person(persons_move(
            voice,
            &cycle.issue,
            main,
            head,
        ))),
    })
}
