use clap::Parser;
use sdlc_runner::cli::{Cli, Command};
use sdlc_runner::commands;

fn main() {
    let cli = Cli::parse();
    let code = match &cli.command {
        Command::Diagram(args) => commands::diagram::run(args),
        Command::Config { command } => commands::config::run(command),
        Command::Bounds { config } => commands::bounds::run(config),
        Command::Replay { journal } => commands::replay::run(journal),
        Command::Status { config, json } => commands::status::run(config, *json),
        Command::FakeAgent(args) => sdlc_runner::fake_agent::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Decide { option, config } => commands::decide::run(option, config),
    };
    std::process::exit(code);
}
