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
    let code = match &cli.command {
        Command::Diagram(args) => commands::diagram::run(args),
        Command::Config { command } => commands::config::run(command),
        Command::Bounds { config } => commands::bounds::run(config),
        Command::Replay { journal } => commands::replay::run(journal),
        Command::Status {
            config,
            json: _,
            watch: true,
        } => commands::watch::run(config),
        Command::Status { config, json, .. } => commands::status::run(config, *json),
        Command::FakeAgent(args) => sdlc_runner::fake_agent::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Decide { option, config } => commands::decide::run(option, config),
        Command::Init(args) => commands::init::run(args),
        Command::Doctor { config } => commands::doctor::run(config),
        Command::Completions { shell } => commands::completions::run(*shell),
        Command::Issue { command } => commands::issue::run(command),
        Command::Release { issues, config } => commands::release::run(issues, config),
        Command::Man { out_dir } => commands::man::run(out_dir.as_deref()),
    };
    if matches!(&cli.command, Command::Run(_) | Command::Demo(_)) {
        sdlc_runner::stats::report();
    }
    std::process::exit(code);
}
