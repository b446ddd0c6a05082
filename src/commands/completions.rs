//! `sdlc-runner completions <shell>`: the completion script, generated from the same clap
//! definitions that parse the command line, so it can never list a flag that does not exist.

use crate::cli::Cli;
use clap::CommandFactory;

pub fn run(shell: clap_complete::Shell) -> i32 {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "sdlc-runner", &mut script);
    out_raw!("{}", String::from_utf8_lossy(&script));
    0
}
