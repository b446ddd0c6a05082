//! `sdlc-runner decide OPTION --config F`: answer the pending decision of a manual-approval run.

use crate::machine::DecisionOption;
use crate::runner_dir::RunnerDir;
use std::path::Path;

/// `decide` when no runner waits for a decision.
pub const NOTHING_PENDING: i32 = 3;

pub fn run(option: &str, config: &Path) -> i32 {
    let Some(option) = DecisionOption::parse(option) else {
        let names: Vec<&str> = DecisionOption::ALL.iter().map(|o| o.name()).collect();
        say!(
            "error: \"{option}\" is not a decision: use one of {}",
            names.join(", ")
        );
        return 2;
    };
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let path = match RunnerDir::locate(&cfg.project_path) {
        Ok(dir) => dir.decision(),
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    match crate::decision_file::answer(&path, option) {
        Ok(()) => {
            out!("answered {}: {}", path.display(), option.name());
            0
        }
        // Nothing is waiting: the command line was fine but there is nothing to answer, which
        // is not a halt (1) either; 3 is decide's own code for it (README "Exit codes").
        Err(e @ crate::decision_file::AnswerError::NotPending(_)) => {
            say!("nothing to decide: {e}");
            NOTHING_PENDING
        }
        Err(e) => {
            say!("error: {e}");
            2
        }
    }
}
