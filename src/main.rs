use clap::Parser;
use sdlc_runner::cli::{Cli, Command};
use sdlc_runner::commands;

fn main() {
    let cli = Cli::parse();
    // One logging system for every command: narration, the orchestration log and, as
    // `RUST_LOG` or `run -v` ask, the runner's diagnostics (src/logging.rs).
    let verbose = match &cli.command {
        Command::Run(args) => args.verbose,
        _ => 0,
    };
    sdlc_runner::logging::init(verbose);
    let code = commands::dispatch(&cli.command);
    if matches!(&cli.command, Command::Run(_) | Command::Demo(_)) {
        sdlc_runner::stats::report();
    }
    std::process::exit(code);
}
