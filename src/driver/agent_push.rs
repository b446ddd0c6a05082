//! An agent's own push: the agent of commitPush pushed the branch itself, or the agent that
//! runs createPR or monitorCI pushed a repair, so the test-weakening check a builtin push runs
//! first (`steps::weakening`) runs right after its attempt, before the PR is opened, CI's
//! verdict taken or anything merged; once per head (`check_once`: a head the check let
//! through before is not checked again). A weakening the spec does not call for fails the
//! attempt as `TESTS_WEAKENED`, the same hand-back and escalation as a refused builtin push.

use super::builtin_step::{weakening_gate, Facts};
use super::network::Patient;
use super::step_run::StepRun;
use crate::agent::classify::{classify_network, classify_weakening, Classified};
use crate::machine::Event;
use crate::narration as say;
use crate::step::Step;
use crate::steps::builtin::gate_before_push;

impl StepRun<'_> {
    /// The check of the branch the agent's `step` pushed: `Ok(None)` when nothing is weakened
    /// (or the check is off, or a person approved it in this cycle, or it let this head
    /// through before), `Ok(Some(failure))`
    /// otherwise; `Err(event)`: the machine must hear that first (a stop request).
    pub(super) async fn agent_push_weakened(
        &mut self,
        step: Step,
    ) -> Result<Option<Classified>, Event> {
        let Some(gate) = weakening_gate(&self.run.cfg, self.core) else {
            return Ok(None);
        };
        // The agent's push is on origin and the check not run yet: a runner killed here
        // checks that head on restart (`steps::checks::already_done`).
        crate::failpoint::point("agent pushed: before the weakening check");
        let facts = Facts::of(self.cycle, self.run.refs()).gated(Some(gate));
        let what = say::checking_the_pushed_branch(step.key());
        let checked = self
            .patiently(&what, move |w| {
                facts.with(&*w.git, |f| gate_before_push(&*w.git, f))
            })
            .await;
        match checked {
            Patient::Done(Ok(_)) => Ok(None),
            Patient::Done(Err(failed)) if !failed.weakened.is_empty() => {
                let words = say::tests_weakened(&failed.weakened, true);
                self.voice.log(&words);
                self.voice.say(words);
                Ok(Some(classify_weakening(step.key(), &failed.weakened, true)))
            }
            Patient::Done(Err(failed)) => Ok(Some(crate::agent::classify::classify_post_check(
                step.key(),
                &failed.what,
            ))),
            // The agent ran: asking for the check again would run it twice.
            Patient::GaveUp(_) => Ok(Some(classify_network(step.key(), self.voice.just_said()))),
            Patient::Cancelled(event) => Err(event),
        }
    }
}
