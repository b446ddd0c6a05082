//! `Exit`: the run ends. What it holds is given back (the merge turn, the claim), the fleet is
//! told, and the session either ends in the journal or, when the machine did not end it (a
//! signal, a lost claim), is left for the next run to continue with the same counters.

use super::claim::{self, ClaimKeeper};
use super::fleet::{self, Link};
use super::merge;
use super::report;
use super::run_context::RunContext;
use super::shell::Shell;
use crate::artifacts;
use crate::journal::SessionEnd;
use crate::machine::{Core, State};
use crate::narration as say;

/// Ends the run with `code` in `state`: the process's exit code and what it narrates.
pub(super) async fn exit(
    (code, state): (u8, &State),
    (core, run): (&Core, &RunContext),
    shell: &mut Shell,
    (claims, fleet): (Option<&mut ClaimKeeper>, Option<&Link>),
) -> (i32, Vec<String>) {
    // A merge turn held when the run stops (a halt, a signal) is given back with it.
    let mut said = merge::release_merge_turn(fleet, claims.as_deref(), &shell.io).await;
    fleet::tell(fleet, |worker| sdlc_machine::fleet::Report::Finished {
        worker,
    });
    if let Some(issue) = claims.as_ref().and_then(|k| k.held).map(|(n, _)| n) {
        said.extend(claim::release(claims, &shell.io, issue).await);
    }
    let project = &run.cfg.project_path;
    if matches!(state, State::Halted { .. }) {
        // Everything stays for inspection: state file, auto-mode flag, branch, tree.
        return (i32::from(code), said);
    }
    if !core.is_terminal() {
        // The machine did not end the session (a signal, a lost claim, a tracker that
        // could not be read): the next run continues it with the same counters.
        let signal = shell.shutdown.requested();
        shell.state.signal_shutdown = signal.map(|s| s.name().to_string());
        shell.state.runner_pid = None;
        said.extend(shell.save_state(project));
        let _ = artifacts::remove_auto_mode(project);
        let how = match signal {
            Some(s) => say::shut_down_by(s.name()),
            None => say::stopped_with(code),
        };
        said.push(say::stopped_continues(&how, &run.session));
        return (i32::from(code), said);
    }
    let ended = shell
        .journal
        .as_mut()
        .map(|j| j.end(SessionEnd::Exit { code }));
    if let Some(Err(e)) = ended {
        said.push(say::cannot_record_end(&e));
    }
    shell.state.runner_pid = None;
    said.extend(shell.save_state(project));
    let _ = artifacts::remove_auto_mode(project);
    let r = core.runner();
    said.push(say::done(code, r.stats.merges, &report::wasted_work(r)));
    (i32::from(code), said)
}
