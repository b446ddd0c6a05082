//! What the driver knows of the issue under way beyond the machine's counters.

use crate::prompt::IssueContext;

/// The issue the prompts talk about, and what the runner saw of it.
#[derive(Default)]
pub(super) struct Cycle {
    /// The issue the prompts talk about (number, title, feature branch).
    pub issue: IssueContext,
    /// The spec directory's feature name, once a probe has seen it.
    pub feature: Option<String>,
    /// Issues an earlier session of the journal merged: facts the tracker may not show yet
    /// (or ever), for selection and dependencies.
    pub merged_before: std::collections::BTreeSet<u32>,
}

impl Cycle {
    /// The prompt's issue facts, asked of the tracker and git when the runner restarted
    /// mid-cycle with nothing in memory.
    pub async fn know(&mut self, io: &crate::ports::Io, issue: u32) {
        if self.issue.number != issue {
            self.issue = io.call(move |w| IssueContext::asked(w, issue)).await;
        }
    }

    /// What the step's checks are told of the cycle: the machine's issue and verified
    /// commit, the feature the driver saw, whether the step is `builtin` (the config's), the
    /// test-weakening check of its pushes as `cfg` sets it and the machine approves it.
    pub fn step_context(
        &self,
        core: &crate::machine::Core,
        cfg: &crate::config::Config,
        step: crate::step::Step,
    ) -> crate::steps::checks::StepContext {
        let approved = core.runner().weakening_approved();
        crate::steps::checks::StepContext {
            gate: crate::steps::weakening::Gate::configured(cfg, approved),
            issue: core.runner().issue,
            feature: self.feature.clone(),
            verified: core.runner().verified.map(|c| c.hex()),
            pushed_weakened: core.runner().last_class[crate::step::Step::CommitPush.index()]
                == Some(crate::failure::FailureClass::TestsWeakened),
            builtin: cfg.builtin(step),
            ci_by_train: core.runner().limits.train_tests_ci,
        }
    }
}
