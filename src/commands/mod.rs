//! One module per subcommand; each returns the process exit code.

pub(crate) mod bounds;
pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod decide;
pub mod demo;
pub(crate) mod diagram;
pub(crate) mod doctor;
pub(crate) mod init;
pub(crate) mod issue;
pub(crate) mod man;
pub(crate) mod release;
pub(crate) mod replay;
pub(crate) mod review;
pub(crate) mod run;
pub(crate) mod status;
pub(crate) mod watch;

use crate::cli::Command;

/// Runs one parsed subcommand and returns the process exit code (0 success, 2 bad config or
/// arguments, others as docs/interfaces.md lists per command).
pub fn dispatch(command: &Command) -> i32 {
    match command {
        Command::Diagram(args) => diagram::run(args),
        Command::Config { command } => config::run(command),
        Command::Bounds { config } => bounds::run(config),
        Command::Replay { journal } => replay::run(journal),
        Command::Status {
            config,
            json: _,
            watch: true,
        } => watch::run(config),
        Command::Status { config, json, .. } => status::run(config, *json),
        Command::FakeAgent(args) => crate::fake_agent::run(&crate::fake_agent::Request {
            script: args.script.as_deref(),
            kind: args.kind,
            rest: &args.rest,
        }),
        Command::EgressRelay(args) => match args.command.split_first() {
            Some((program, rest)) => crate::egress::relay::entry(
                &args.socket,
                args.port,
                std::path::Path::new(program),
                rest,
            ),
            None => 2,
        },
        Command::Run(args) => run::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Decide { option, config } => decide::run(option, config),
        Command::Init(args) => init::run(args),
        Command::Doctor { config } => doctor::run(config),
        Command::Completions { shell } => completions::run(*shell),
        Command::Issue { command } => issue::run(command),
        Command::Release { issues, config } => release::run(issues, config),
        Command::Review {
            issue,
            approve: _,
            request_changes,
            comment,
            author,
            config,
        } => review::run(
            *issue,
            review::Verdict::of(request_changes.as_deref(), comment.as_deref()),
            author.as_deref(),
            config,
        ),
        Command::Man { out_dir } => man::run(out_dir.as_deref()),
    }
}

/// Load a config for a command, or print every error (naming file and key) and give the
/// exit code 2 of docs/interfaces.md.
/// The config's tracker, once every issue of `issues` was read from it, before a command
/// writes anything: else the exit code, after saying which issue is missing (2) or could not
/// be read (1) and that `nothing` was done.
pub(crate) fn tracker_holding(
    cfg: &crate::config::Config,
    issues: &[u32],
    nothing: &str,
) -> Result<Box<dyn crate::ports::TrackerPort>, i32> {
    use crate::tracker::TrackerError;
    let tracker = crate::wiring::tracker(cfg).map_err(|e| {
        say!("error: {e}");
        2
    })?;
    for &n in issues {
        match tracker.get(n) {
            Ok(_) => {}
            Err(e @ TrackerError::NotFound { .. }) => {
                say!("error: {e}: {nothing}");
                return Err(2);
            }
            Err(e) => {
                say!("error: cannot read issue #{n}: {e}; {nothing}");
                return Err(1);
            }
        }
    }
    Ok(tracker)
}

pub(crate) fn load_config(path: &std::path::Path) -> Result<crate::config::Config, i32> {
    crate::config::Config::load(path).map_err(|e| {
        for line in e.lines() {
            say!("{line}");
        }
        2
    })
}
