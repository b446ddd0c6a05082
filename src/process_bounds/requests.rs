//! How many requests of each kind a window of a run holds, from the machine's bounds: what
//! `window` prices with the children each request starts.

use crate::machine::bounds;
use crate::machine::Limits;
use crate::step::Step;
use sdlc_machine::fleet::Contention;

/// The requests a window holds, by kind, besides its step attempts.
pub(super) struct Requests {
    /// Looks at CI.
    pub looks: u64,
    /// Looks at the review.
    pub review_looks: u64,
    /// Waits between looks at a review that holds the merge.
    pub review_waits: u64,
    /// Checks of preconditions.
    pub checks: u64,
    /// Selections of the next issue.
    pub selects: u64,
    /// Writes to the tracker (a mark of an escalation and the like).
    pub writes: u64,
    /// Looks at whether the tracker closed a merged issue.
    pub close_looks: u64,
    /// The merge's runs and turns.
    pub merge: MergeRuns,
    /// Branch updates after a repaired conflict.
    pub updates: u64,
    /// Claims of an issue.
    pub claims: u64,
    /// Renewals of a claim.
    pub renewals: u64,
}

/// The merge's own requests in a window.
pub(super) struct MergeRuns {
    /// Merge runs besides the window's attempts: those of monitorCI attempts spent by a CI
    /// that failed on the merge together with main.
    pub together: u64,
    /// Every merge run, the `together` ones included.
    pub merges: u64,
    /// Looks at the forge's merge queue, each a merge run again.
    pub queue_looks: u64,
    /// Merge runs again after a lost push race.
    pub reruns: u64,
    /// Requests for the merge turn.
    pub turns: u64,
}

impl Requests {
    /// The requests of a window that holds at most `attempts` step attempts (waits
    /// included) and `cycles` cycles.
    pub(super) fn in_window(l: &Limits, attempts: u64, cycles: u64) -> Requests {
        let n = l.enabled_steps().count() as u64;
        let b = u64::from(l.max_bounce_retries);
        // A look after each wait of monitorCI's schedule, and one right after a repair's fix.
        let looks = attempts.saturating_mul(l.ci_polls().len() as u64 + 1);
        // The review is looked at after every pass of CI (at most one per look at CI), and the
        // looks that find it holding the merge are at most one per pause of its schedule and
        // one more, per cycle.
        let review_looks = if l.review.is_some() {
            looks.saturating_add(cycles.saturating_mul(l.review_polls().len() as u64 + 1))
        } else {
            0
        };
        let review_waits = review_looks.saturating_sub(looks);
        // Each check answers with a dispatch, a step already done or a bounce.
        let checks = attempts.saturating_add(cycles.saturating_mul(n + b + 1));
        let selects = cycles + 1;
        let writes = cycles + 2;
        // A merge's close waits for the tracker's own close: one more look (a `RecordMerged`)
        // after each of its waits, at most one merge per cycle.
        let close_looks = cycles.saturating_mul(u64::from(l.tracker_close_waits));
        let MergeRuns {
            together,
            merges,
            queue_looks,
            reruns,
            turns,
        } = MergeRuns::in_window(l, attempts, cycles);
        // A turn taken after a pause is followed by the merge's checks again: once per merge run.
        let checks = checks.saturating_add(merges + reruns);
        // A merge attempt that repairs a conflict updates the branch once after the agent.
        let updates = merges;
        // Where issues are claimed: each selection claims its issue (an issue another runner
        // holds costs one selection and one claim more, once per cycle), and every request that
        // works on the issue or waits is preceded by a renewal.
        let (claims, renewals) = if l.claims {
            let worked =
                attempts + reruns + together + turns + checks + looks + updates + review_looks;
            let worked = worked + queue_looks;
            (
                selects,
                worked + attempts + looks + turns + review_waits + queue_looks,
            )
        } else {
            (0, 0)
        };
        Requests {
            looks,
            review_looks,
            review_waits,
            checks,
            selects,
            writes,
            close_looks,
            merge: MergeRuns {
                together,
                merges,
                queue_looks,
                reruns,
                turns,
            },
            updates,
            claims,
            renewals,
        }
    }
}

impl MergeRuns {
    /// The merge's requests of a window that holds at most `attempts` step attempts and
    /// `cycles` cycles.
    fn in_window(l: &Limits, attempts: u64, cycles: u64) -> MergeRuns {
        // Only merge attempts take the merge turn: at most `maxRetriesPerStep` of them per cycle,
        // each repeated after a rate-limit or network wait, and the waited ones before each
        // bounce from merge (`bounds::merge_dispatches_per_cycle`; never more than the window's
        // attempts).
        let merge_attempts = if l.enabled(Step::Merge) {
            attempts.min(cycles.saturating_mul(bounds::merge_dispatches_per_cycle(l)))
        } else {
            0
        };
        // A merge run whose commit CI failed together with main (`CiFailedTogether`) spends a
        // monitorCI attempt, not a merge attempt: at most `maxRetriesPerStep` of them per cycle,
        // each a run of its own besides the window's attempts.
        let together = if l.enabled(Step::Merge) && l.enabled(Step::MonitorCi) {
            attempts.min(cycles.saturating_mul(u64::from(l.max_retries_per_step.max(1))))
        } else {
            0
        };
        let merges = merge_attempts.saturating_add(together);
        // A merge the forge's merge queue holds looks at the queue after each wait of monitorCI's
        // CI schedule, each look the merge's run again (no attempt): per merge run at most as many
        // looks as the schedule has waits.
        let queue_looks = merge_attempts.saturating_mul(l.ci_polls().len() as u64);
        // A lost push race runs the merge again (agent-run or builtin), after a pause and a
        // merge turn taken again; each wait for the turn is at most `turn_pauses` pauses, each
        // followed by one more request for the turn.
        let reruns = u64::from(Contention::MAX_LOST_RACES).saturating_mul(merges);
        let turn_pauses = l
            .merge_turn_wait_ms
            .map_or(0, sdlc_machine::fleet::LeaseWait::max_pauses);
        let turns = (merges + reruns).saturating_mul(1 + turn_pauses);
        MergeRuns {
            together,
            merges,
            queue_looks,
            reruns,
            turns,
        }
    }
}
