//! `Exit`: the run ends. What it holds is given back (the merge turn, the claim), the fleet is
//! told, and the session either ends in the journal or, when the machine did not end it (a
//! signal, a lost claim), is left for the next run to continue with the same counters.

use super::claim;
use super::context::Context;
use super::fleet_link;
use super::merge;
use super::request::Exit;
use crate::artifacts;
use crate::journal::SessionEnd;
use crate::machine::State;
use crate::narration as say;
use crate::report;

/// How the run ends: the process's exit code, and what the end narrates.
pub(super) struct Ended {
    pub code: i32,
    pub narration: Vec<String>,
}

/// Ends the run with the request's code in the state the machine decided it in.
pub(super) async fn exit(cx: Context<'_>, request: Exit) -> Ended {
    let Context {
        run,
        shell,
        core,
        claims,
        fleet,
        state,
        ..
    } = cx;
    let code = request.code;
    // A merge turn held when the run stops (a halt, a signal) is given back with it.
    let mut said = merge::give_turn_back(fleet, claims.as_deref(), &shell.io).await;
    fleet_link::tell(fleet, |worker| sdlc_machine::fleet::Report::Finished {
        worker,
    });
    if let Some(issue) = claims.as_ref().and_then(|k| k.held).map(|(n, _)| n) {
        said.extend(claim::release(claims, &shell.io, issue).await);
    }
    let project = &run.cfg.project_path;
    if matches!(state, State::Halted { .. }) {
        // Everything stays for inspection: state file, auto-mode flag, branch, tree.
        return Ended {
            code: i32::from(code),
            narration: said,
        };
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
        return Ended {
            code: i32::from(code),
            narration: said,
        };
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
    Ended {
        code: i32::from(code),
        narration: said,
    }
}
