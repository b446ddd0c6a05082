//! `run --dry-run`: the issue the runner would take and the first invocation it would make,
//! with nothing changed.

use super::cycle::Cycle;
use super::exit::Ended;
use super::run_context::RunContext;
use super::select::{issue_list, unlabelled, TrackerQuery};
use super::*;
use crate::ports::Io;

/// One agent call a dry run shows: its step, what it is told as, its prompt and the skill
/// file the agent would be handed with it.
struct Planned<'p> {
    step: Step,
    name: &'p str,
    prompt: &'p str,
    skill: Option<std::path::PathBuf>,
}

/// The command line a first attempt of the planned call would run under `cfg` for `issue`,
/// as one line, and the skill file the agent would be handed with it.
fn planned(
    run: &RunContext,
    core: &Core,
    issue: &IssueContext,
    cfg: &Config,
    call: Planned,
) -> String {
    let Planned {
        step,
        name,
        prompt,
        skill,
    } = call;
    let info = AttemptInfo {
        step,
        name,
        issue: issue.number,
        issue_id: &run.refs().id(issue.number),
        attempt: 1,
        prompt,
        skill: None,
        money_left_micros: core.runner().money_left_micros(),
    };
    let inv = cli::planned_invocation(cfg, &run.program, &info);
    let skill = skill
        .map(|p| format!(" (+ skill {})", p.display()))
        .unwrap_or_default();
    format!("{}{skill}", shown(&inv))
}

/// What the step's sandbox binds for its agent beyond the work tree (the program's and its
/// interpreter's installations, the files its route variables name).
fn view(run: &RunContext, step: Step) -> Vec<String> {
    use crate::agent::sandbox;
    let agent = run.cfg.agent(step);
    let program = if agent.command == run.cfg.agent.command {
        run.program.clone()
    } else {
        which::which(&agent.command).unwrap_or_else(|_| agent.command.clone().into())
    };
    let home = sandbox::runner_home();
    let spec = sandbox::Spec {
        config: &agent.sandbox,
        agent: Some(agent.kind),
        git_dir_writable: true,
        work_tree: &run.cfg.project_path,
        runner_dir: &run.runner_dir.dir,
        handed: &[],
        home: home.as_deref(),
    };
    sandbox::planned_binds(&spec, &program, &sandbox::runner_var)
}

/// `--dry-run`: show the issue and the first invocation; change nothing. The exit code, and
/// what it narrates.
pub(super) async fn dry_run(
    run: &RunContext,
    io: &Io,
    core: &Core,
    cycle: &mut Cycle,
    claims: Option<&claim::ClaimKeeper>,
) -> Ended {
    out!("dry run: project {}", run.cfg.project_path.display());
    if let Err(ended) = select(io, core, cycle, claims).await {
        return ended;
    }
    plan_steps(run, core, &cycle.issue);
    let limits = run.cfg.limits();
    let rounds = limits.review.as_ref().map_or(0, |g| g.max_rounds);
    if rounds > 0 && !matches!(core.runner().mode, Mode::SingleStep(_)) {
        plan_review(run, core, &cycle.issue, rounds);
    }
    plan_bounds(run, &limits);
    Ended {
        code: 0,
        narration: Vec::new(),
    }
}

/// The issue the runner would take, shown and known to the cycle; `Err` with how the dry run
/// ends when there is none or the tracker failed.
async fn select(
    io: &Io,
    core: &Core,
    cycle: &mut Cycle,
    claims: Option<&claim::ClaimKeeper>,
) -> Result<(), Ended> {
    // What `run` refuses before it starts an issue, said before the plan it would not reach.
    if let Ok(changes) = io.call(|w| w.git.foreign_changes()).await {
        if !changes.is_empty() {
            out!(
                    "warning: the working tree has changes that are no issue's work ({}): `run` refuses to start an issue over them; fix: {}",
                    foreign_list(&changes, ", "),
                    FOREIGN_FIX
                );
        }
    }
    let query = TrackerQuery::of(core, claims, &cycle.merged_before);
    match io.call(move |w| query.ask(&*w.tracker)).await {
        Ok(Selection::Issue(issue)) => {
            out!("would work on issue #{}: {}", issue.number, issue.title);
            cycle.issue = IssueContext {
                number: issue.number,
                title: issue.title,
                branch: None,
            };
        }
        Ok(Selection::NoIssues) => {
            out!("no open automatable issue: nothing to do");
            return Err(Ended {
                code: 0,
                narration: unlabelled(io).await,
            });
        }
        Ok(Selection::AllEscalated { numbers }) => {
            out!(
                "would halt: all issues escalated ({})",
                issue_list(&numbers)
            )
        }
        Ok(Selection::AllBlocked { numbers }) => {
            out!("would halt: all issues blocked ({})", issue_list(&numbers))
        }
        Err(e) => {
            say!("error: tracker: {e}");
            return Err(Ended {
                code: 2,
                narration: Vec::new(),
            });
        }
    }
    Ok(())
}

/// The steps the run would take, each with the invocation of its first attempt.
fn plan_steps(run: &RunContext, core: &Core, issue: &IssueContext) {
    let first = match core.runner().mode {
        Mode::SingleStep(step) => step,
        _ => Step::StartCycle,
    };
    for step in Step::ALL
        .into_iter()
        .filter(|s| s.number() >= first.number() && run.cfg.enabled(*s))
    {
        if run.cfg.builtin(step) {
            out!(
                "step {} {}: builtin (the runner does it; no agent call)",
                step.number(),
                step.key()
            );
            if matches!(core.runner().mode, Mode::SingleStep(_)) {
                break;
            }
            continue;
        }
        let prompt = crate::prompt::prompt(&run.cfg, step, issue, None);
        let call = Planned {
            step,
            name: step.key(),
            prompt: &prompt,
            skill: run.cfg.skill_file(step),
        };
        let line = planned(run, core, issue, &run.cfg, call);
        out!("step {} {}: {line}", step.number(), step.key());
        if let Some(line) = crate::agent::sandbox::planned(&run.cfg.agent(step).sandbox) {
            out!("  {line}");
            for bind in view(run, step) {
                out!("    {bind}");
            }
        }
        if matches!(core.runner().mode, Mode::SingleStep(_)) {
            break;
        }
    }
}

/// The review rounds the run would make, with the invocation of one.
fn plan_review(run: &RunContext, core: &Core, issue: &IssueContext, rounds: u32) {
    let prompt = crate::prompt::address_review_prompt(
        &run.cfg,
        issue,
        "<the reviewers' new feedback>",
        None,
    );
    let round = run.cfg.review_round();
    let call = Planned {
        step: Step::MonitorCi,
        name: crate::config::ADDRESS_REVIEW,
        prompt: &prompt,
        skill: run.cfg.round_skill_file(),
    };
    out!(
        "addressReview: on a request for changes with new feedback, up to {rounds} round(s) (review.maxReviewRounds), each {}, then the runner's commit and push",
        planned(run, core, issue, &round, call)
    );
    if let Some(line) = crate::agent::sandbox::planned(&run.cfg.address_review.agent.sandbox) {
        out!("  {line}");
    }
}

/// The agent invocations and step attempts of a clean issue and of the worst case.
fn plan_bounds(run: &RunContext, limits: &crate::machine::Limits) {
    let b = crate::machine::bounds::compute(limits);
    let a = crate::machine::bounds::agent_invocations(limits, &run.cfg.builtin_steps());
    let (agent, builtin) = run.cfg.steps_by_performer();
    out!(
            "a clean issue: {} agent invocation(s) and {} builtin action(s); worst case: {} agent invocations between merges, {} before a halt if nothing succeeds; {} step attempts (agent invocations and builtin actions together) between merges, {} before a halt",
            agent.len(),
            builtin.len(),
            a.between_merges,
            a.nothing_succeeds,
            b.between_merges,
            b.nothing_succeeds
        );
}

/// `inv` as one line: the program, then its arguments (quoted where they hold a space).
fn shown(inv: &cli::Invocation) -> String {
    let args: Vec<String> = inv
        .args
        .iter()
        .map(|a| {
            if a.contains(' ') {
                format!("{a:?}")
            } else {
                a.clone()
            }
        })
        .collect();
    format!("{} {}", inv.program.display(), args.join(" "))
}
