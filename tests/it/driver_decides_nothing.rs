//! "The driver decides nothing", checked: the async shell (`src/driver/`) performs one effect
//! and reports one event. It may not start processes itself (that is the process runner's,
//! `src/process.rs`, behind the adapters), may not block its thread in a sleep, and may not
//! decide from error text. Every place where it still waits is listed below with the policy
//! that bounds it; a new wait, a new sleep or a new text match fails this test until it is
//! either moved into the machine or listed here with its reason.

use std::path::Path;

/// (file, how many waits (`clock.sleep`) it may hold, why the wait is bounded and whose policy
/// it follows).
const WAITS: &[(&str, usize, &str)] = &[
    (
        "wait.rs",
        1,
        "the machine's own Wait and Pause effects (backoff, quota, network, CI, fleet, merge-turn and decision waits): their length is the machine's",
    ),
];

/// Every `.rs` file under `src/driver/`, subfolders included (`attempt/`), as (its path
/// below `src/driver/`, its code without comment lines).
fn driver_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/driver") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let name = path
                .strip_prefix(&root)
                .expect("below src/driver")
                .to_str()
                .expect("utf8")
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("read");
            // Only code: comments may name what the code must not do.
            let code: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            files.push((name, code));
        }
    }
    assert!(files.len() > 5, "the driver's files were not found");
    assert!(
        files.iter().any(|(name, _)| name.contains('/')),
        "the driver's subfolders were not read"
    );
    files
}

/// `code` without its unit tests: everything from the first `#[cfg(test)]` on (the tests
/// module closes each file).
fn without_tests(code: &str) -> &str {
    code.find("#[cfg(test)]").map_or(code, |at| &code[..at])
}

/// The driver decides nothing by the text of an answer: whether CI failed, a branch conflicts
/// or a config problem is the agent's is told by a type the adapter sets, never by a prefix,
/// suffix or substring of what a tool or a message said.
#[test]
fn the_driver_decides_nothing_by_matching_text() {
    for (name, code) in driver_sources() {
        for banned in ["starts_with(\"", "ends_with(\"", ".contains(\""] {
            assert!(
                !without_tests(&code).contains(banned),
                "src/driver/{name} decides by matching text (`{banned}`): give the answer a type where it is made (an event, a CallFailureKind, a field the adapter sets)"
            );
        }
    }
}

/// What a failure class means (retry, wait, escalate, halt) is the machine's: the driver
/// reports the class it was told and never reads its disposition to choose an answer.
#[test]
fn the_driver_reads_no_failure_classs_disposition() {
    for (name, code) in driver_sources() {
        for banned in [".disposition()", "Disposition::", ".retryable()"] {
            assert!(
                !without_tests(&code).contains(banned),
                "src/driver/{name} decides by a failure class's meaning (`{banned}`): report the class, let the machine decide"
            );
        }
    }
}

#[test]
fn the_driver_starts_no_process_and_never_blocks_in_a_sleep() {
    for (name, code) in driver_sources() {
        for banned in [
            "thread::sleep",
            "std::process::Command",
            "Command::new",
            "tokio::process",
            "spawn_blocking",
        ] {
            assert!(
                !code.contains(banned),
                "src/driver/{name} uses `{banned}`: processes belong to the process runner behind the adapters, waits to the machine"
            );
        }
    }
}

#[test]
fn the_driver_decides_nothing_from_error_text() {
    for (name, code) in driver_sources() {
        for banned in [
            "is_transient(&",
            ".to_string().contains(",
            "stderr.contains(",
        ] {
            assert!(
                !code.contains(banned),
                "src/driver/{name} decides from error text (`{banned}`): classify once at the adapter (CallFailureKind)"
            );
        }
    }
}

#[test]
fn every_wait_of_the_driver_is_listed_with_its_bound() {
    for (name, code) in driver_sources() {
        // Through the clock port or not, a wait is a wait.
        let sleeps =
            code.matches("tokio::time::sleep").count() + code.matches("clock.sleep(").count();
        let allowed = WAITS
            .iter()
            .find(|(file, _, _)| *file == name)
            .map_or(0, |(_, n, _)| *n);
        assert!(
            sleeps <= allowed,
            "src/driver/{name} waits {sleeps} time(s), {allowed} listed: a wait is the machine's (an Effect::Wait), or listed here with what bounds it"
        );
    }
}

/// Calls into the world that only an adapter may make: the driver holds the ports
/// (`src/ports/`) and reaches git, the forge, the tracker, the agent, the notification
/// channels and the clock through them alone, so the in-memory fakes can stand in for all.
const CONCRETE: &[&str] = &[
    "tokio::time::sleep",
    "Repo::",
    "Forge::",
    "Tracker::",
    "Notifier::",
    "run_agent_stoppable",
    // A git command started from the driver: git runs only in git/, behind the git port.
    "git::command::run(",
    "git::command::output(",
    "git::command::",
    "crate::git::repo::Repo",
    "crate::forge::Forge",
    "crate::tracker::Tracker",
    "crate::notify::Notifier",
    "chrono::Utc::now()",
];

/// (file, call, why it may stay).
const CONCRETE_ALLOWED: &[(&str, &str, &str)] = &[
    (
        "claim.rs",
        "chrono::Utc::now()",
        "ClaimKeeper, outside the driver, filters live claims by the time now",
    ),
    (
        "mod.rs",
        "chrono::Utc::now()",
        "the orchestration log's time stamps",
    ),
    (
        "attempt.rs",
        "chrono::Utc::now()",
        "an attempt's start stamp and the classifier's epoch for quota resets",
    ),
    (
        "builtin_step.rs",
        "chrono::Utc::now()",
        "the time in the CI polling message",
    ),
    (
        "merge.rs",
        "chrono::Utc::now()",
        "merge lease stamps in the claim store",
    ),
    (
        "claim.rs",
        "chrono::Utc::now()",
        "claim lease stamps in the claim store",
    ),
];

#[test]
fn the_driver_reaches_the_world_only_through_the_ports() {
    for (name, code) in driver_sources() {
        for call in CONCRETE {
            let allowed = CONCRETE_ALLOWED
                .iter()
                .any(|(file, c, _)| *file == name && c == call);
            assert!(
                allowed || !code.contains(call),
                "src/driver/{name} calls `{call}` directly: the driver reaches the world only through the ports (src/ports/: git, tracker, forge, agent, notifier, clock), so that the fakes can stand in"
            );
        }
    }
}

/// The driver builds no adapter: the composition root (`src/wiring.rs`) builds the production
/// ports, the claim store among them, and startup (`src/launch/`) hands the driver whatever
/// ports it was given, so a run on the fakes keeps no real claim files. The driver never names
/// the root (`tests/it/layering.rs` holds the layers too).
#[test]
fn the_driver_builds_no_adapter() {
    for (name, code) in driver_sources() {
        let code = without_tests(&code);
        for adapter in ["wiring::", "tracker::claims"] {
            assert!(
                !code.contains(adapter),
                "src/driver/{name} names `{adapter}`: the driver builds no adapter; the claim store and every other port come from its `Ports` (built in src/wiring.rs)"
            );
        }
    }
}

#[test]
fn the_driver_holds_one_port_of_each_kind() {
    let (_, code) = driver_sources()
        .into_iter()
        .find(|(name, _)| name == "shell.rs")
        .expect("src/driver/shell.rs");
    for field in [
        "io: Io,",
        "notifier: std::sync::Arc<dyn NotifierPort>",
        "agent: Box<dyn AgentPort>",
        "clock: std::sync::Arc<dyn Clock>",
    ] {
        assert!(
            code.contains(field),
            "the Driver no longer holds `{field}`: every outside party is a port"
        );
    }
    let world =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ports/world.rs"))
            .expect("src/ports/world.rs");
    for field in [
        "git: Box<dyn GitPort>",
        "forge: Box<dyn ForgePort>",
        "tracker: Box<dyn TrackerPort>",
        "claims: Option<ClaimStore>",
    ] {
        assert!(
            world.contains(field),
            "the blocking ports' World no longer holds `{field}`"
        );
    }
}

/// The driver's async code never waits for a child process: the ports whose adapters start
/// children (git, the forge, the tracker, the claim store) are held only inside `ports::Io`,
/// which makes every call on the blocking pool. Checked here by what the driver's state may
/// hold, and at run time by the process runner (a debug build panics at a child started by
/// async code) and by the in-memory fakes (a call made on the runtime's thread panics).
#[test]
fn the_driver_holds_the_blocking_ports_only_behind_io() {
    let sources = driver_sources();
    for (file, name) in [
        ("mod.rs", "struct Driver {"),
        ("shell.rs", "struct Shell {"),
        ("keeper.rs", "struct ClaimKeeper {"),
    ] {
        let (_, code) = sources
            .iter()
            .find(|(f, _)| f == file)
            .unwrap_or_else(|| panic!("src/driver/{file}"));
        let start = code
            .find(name)
            .unwrap_or_else(|| panic!("src/driver/{file} has no `{name}`"));
        let body = &code[start..];
        let body = &body[..body.find("\n}").expect("the struct's end")];
        for held in [
            "GitPort",
            "ForgePort",
            "TrackerPort",
            "ClaimStore",
            ": Repo,",
            "Repo>",
            "Tracker>",
        ] {
            assert!(
                !body.contains(held),
                "src/driver/{file}: `{name}` holds `{held}`: a blocking port is held only inside ports::Io, so that async code cannot call it on the runtime's thread"
            );
        }
    }
}

/// The driver reads the time of day and measures durations through the clock port
/// (`self.clock.now()`, `self.clock.instant()`), never from the system: leases, waits, "until"
/// stamps and the time an attempt took (which feeds the time budget) are then the same in the
/// in-memory driver tests, and the time a decision needs comes into the machine with the
/// answer that carries it. A child's deadline is the process layer's
/// (`process::deadline_after`).
#[test]
fn the_driver_reads_the_time_only_from_the_clock_port() {
    for (name, code) in driver_sources() {
        for banned in [
            "Utc::now()",
            "Local::now()",
            "SystemTime::now()",
            "Instant::now()",
        ] {
            assert!(
                !without_tests(&code).contains(banned),
                "src/driver/{name} reads the system clock (`{banned}`): ask the clock port (`self.clock.now()`, `self.clock.instant()`)"
            );
        }
    }
}

/// A driver of small handlers: `Driver` holds at most ten fields (groups named for what they
/// hold) and only `mod.rs` extends it, so every other module's handlers are functions of the
/// parts they need; the sentences it logs live in `src/narration.rs`, not in the driver.
#[test]
fn the_driver_is_a_loop_of_small_handlers_that_holds_no_log_prose() {
    let sources = driver_sources();
    for (name, code) in &sources {
        if name != "mod.rs" {
            assert!(
                !code.contains("impl Driver"),
                "src/driver/{name} extends Driver: give its handlers the parts they need (RunContext, Shell, Cycle, the core, …) instead"
            );
        }
        let code = without_tests(code);
        assert!(
            !code.contains("log(&format!("),
            "src/driver/{name} logs a sentence of its own: name it in src/narration.rs"
        );
        // The words the diagnostics keep and the notifications send are the narration's too.
        let words: String = code.split_whitespace().collect();
        assert!(
            !words.contains("say(format!("),
            "src/driver/{name} words what an answer said itself (`say(format!(`): name it in src/narration.rs"
        );
        for (at, _) in words.match_indices("notifier.send(") {
            let call = &words[at..];
            let call = &call[..call.find(");").unwrap_or(call.len())];
            assert!(
                !call.contains("format!("),
                "src/driver/{name} words a notification itself (`{call}`): name it in src/narration.rs"
            );
        }
    }
    let (_, code) = sources
        .iter()
        .find(|(name, _)| name == "mod.rs")
        .expect("src/driver/mod.rs");
    let start = code.find("struct Driver {").expect("struct Driver");
    let body = &code[start..];
    let body = &body[..body.find("\n}").expect("the struct's end")];
    let fields = body
        .lines()
        .skip(1)
        .filter(|l| l.trim_end().ends_with(',') && l.contains(": "))
        .count();
    assert!(
        (3..=10).contains(&fields),
        "Driver has {fields} fields: group them (at most ten) by what they hold"
    );
    // The loop dispatches: each request's work lives in a handler of its own module, so
    // `perform_effect` stays a table of one short arm per request and mod.rs stays the loop.
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver/mod.rs"))
            .expect("src/driver/mod.rs");
    let lines = text.lines().count();
    assert!(
        lines <= 600,
        "src/driver/mod.rs has {lines} lines (at most 600): move a request's work into its handler's module"
    );
    let start = text
        .find("async fn perform_effect(")
        .expect("Driver::perform_effect");
    let body = &text[start..];
    let body = &body[..body.find("\n    }\n").expect("perform_effect's end")];
    // An arm's body: from its `=> {` to the `}` at the match's indentation.
    let mut body_lines: Option<(usize, &str)> = None;
    for line in body.lines() {
        let at_arm = line.starts_with("            ") && !line.starts_with("             ");
        match body_lines {
            Some((n, arm)) if at_arm && line.trim() == "}" => {
                assert!(
                    n <= 7,
                    "the arm `{arm}` of Driver::perform_effect has {n} lines: give the request a handler that takes the parts it needs and returns its Answer"
                );
                body_lines = None;
            }
            Some((n, arm)) => body_lines = Some((n + 1, arm)),
            None if at_arm && line.trim_end().ends_with("=> {") => {
                body_lines = Some((0, line.trim()));
            }
            None => {}
        }
    }
}

/// The methods a step's parts (`StepRun`) may have in `builtin_step.rs` and `merge.rs`, with
/// why each takes the whole bundle: a request's handler, or the answer it gives, which records
/// a success or a failure (the machine's counters read, the cycle, the state file, the
/// notifier, the voice).
const STEP_RUN_METHODS: &[(&str, &str)] = &[
    (
        "run_builtin",
        "RunStep of a builtin step: the repair's agent, the runner's action",
    ),
    (
        "repair",
        "RunStep with repair of a builtin step: the agent between the runner's git halves",
    ),
    (
        "start_conflict_merge",
        "answers Repaired (nothing conflicts) or a failed attempt (builtin_failed)",
    ),
    (
        "conclude_conflict_merge",
        "answers Repaired, a conflict (merge_conflict) or a failed attempt (builtin_failed)",
    ),
    (
        "push_ci_repair",
        "answers Repaired, a person's move or a failed attempt (failed)",
    ),
    (
        "builtin_failed",
        "the answer of a failed call of the runner's own: failed",
    ),
    ("look_at_ci", "LookAtCi"),
    (
        "builtin_outcome",
        "the answer of run_builtin and look_at_ci: post-check, succeeded, failed",
    ),
    (
        "builtin_refused",
        "the answer of builtin_outcome's failed call: merge_conflict, failed, builtin_failed",
    ),
    ("run_merge", "RunStep of merge"),
    (
        "look_at_queue",
        "RunStep of merge while the merge queue holds the PR: answers through builtin_outcome",
    ),
    ("update_branch", "UpdateBranch"),
    (
        "merge_conflict",
        "the answer MergeConflict: the notifier, the state file, the voice",
    ),
    (
        "gate_before_the_agent",
        "answers BranchBehind or a failed attempt (failed)",
    ),
    (
        "look_before_merge",
        "answers a person's move or a failed attempt (failed)",
    ),
    (
        "up_to_date",
        "answers a conflict (merge_conflict) or a failed attempt (failed)",
    ),
];

/// A step's helpers take only what they need: in `builtin_step.rs` and `merge.rs` a method
/// of `StepRun` (the run context, the shell, the cycle, the machine and the voice, all at
/// once) is a request's handler or the answer it records (listed above); a helper that only
/// narrates, reads facts or makes a call is a function of the parts it reads (`Voice`,
/// `Calls`, `&Cycle`, `&Io`).
#[test]
fn a_steps_helpers_take_only_the_parts_they_need() {
    for (name, code) in driver_sources() {
        if name != "builtin_step.rs" && name != "merge.rs" {
            continue;
        }
        let code = without_tests(&code);
        for (at, _) in code.match_indices("impl StepRun<'_> {") {
            let body = &code[at..];
            let body = &body[..body.find("\n}").expect("the impl's end")];
            for line in body.lines() {
                // A method: `fn` at the impl's indentation.
                let Some(rest) = line
                    .strip_prefix("    ")
                    .filter(|l| !l.starts_with(' '))
                    .and_then(|l| l.split("fn ").nth(1))
                else {
                    continue;
                };
                let method = rest.split(['(', '<']).next().unwrap_or_default();
                assert!(
                    STEP_RUN_METHODS.iter().any(|(m, _)| *m == method),
                    "src/driver/{name}: `StepRun::{method}` takes the whole bundle: make it a function of the parts it uses (`Voice` to narrate, `Calls` to make a call, `&Cycle`, `&Io`), or list it with its reason"
                );
            }
        }
    }
}

/// Every handler takes one shape, `handler(Context, request) -> answer`: the loop's arms each
/// hand a request's handler the context and the request; no function of the driver takes a
/// tuple (a bundle of parts or of a request's fields: a named context or request says what
/// each is); no field carries an argument from one call to another (the cycle holds what the
/// runner saw of the issue, not what an attempt is handed); and no handler swaps the run's
/// config for a while (a review round's agent runs with the round's config, handed to it).
#[test]
fn every_handler_takes_a_named_context_and_its_request() {
    let sources = driver_sources();
    for (name, code) in &sources {
        let code = without_tests(code);
        for params in parameter_lists(code) {
            for param in top_level(params) {
                let ty = param.split_once(':').map_or("", |(_, t)| t).trim_start();
                assert!(
                    !param.trim_start().starts_with('(') && !ty.starts_with('(') && !ty.starts_with("&("),
                    "src/driver/{name} takes a tuple (`{}`): name it (a context of the parts, or the request)",
                    param.trim()
                );
            }
        }
        assert!(
            !code.contains("mem::replace"),
            "src/driver/{name} swaps a value for a while (`mem::replace`): hand the call what it needs instead"
        );
    }
    let (_, cycle) = sources
        .iter()
        .find(|(name, _)| name == "cycle.rs")
        .expect("src/driver/cycle.rs");
    for argument in ["money_left_micros", "review_feedback"] {
        assert!(
            !cycle.contains(argument),
            "src/driver/cycle.rs holds `{argument}`, an argument of an agent's call: hand it to the call (`AgentCall`)"
        );
    }
    let (_, code) = sources
        .iter()
        .find(|(name, _)| name == "mod.rs")
        .expect("src/driver/mod.rs");
    // An arm: from its `Request::X(r) =>` to the next arm.
    let arms: Vec<&str> = code
        .split("Request::")
        .skip(1)
        .filter(|arm| {
            arm.split_once("=>")
                .is_some_and(|(head, _)| head.ends_with("(r) "))
        })
        .collect();
    assert!(
        arms.len() >= 18,
        "Driver::perform_effect has {} arms of the form `Request::X(r) => handler(cx, r)`: one per request",
        arms.len()
    );
    for arm in arms {
        assert!(
            arm.contains("(cx, r)"),
            "`Request::{}`: a handler takes the context and its request",
            arm.lines().next().unwrap_or_default()
        );
    }
}

/// The parameter list of every `fn` in `code`, between its parentheses.
fn parameter_lists(code: &str) -> Vec<&str> {
    let mut lists = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        let boundary = at == 0 || !code.as_bytes()[at - 1].is_ascii_alphanumeric();
        let rest = &code[at..];
        let Some(open) = rest.find('(') else { continue };
        // A function's name and generics come before its parameters, on one line.
        if !boundary || rest[..open].contains(['{', ';', '\n', '=']) {
            continue;
        }
        let mut depth = 0;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        lists.push(&rest[open + 1..open + i]);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    lists
}

/// The parts of a parameter list between commas outside parentheses and brackets.
fn top_level(params: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in params.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&params[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&params[from..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

#[test]
fn a_tuple_parameter_is_seen_and_a_named_one_is_not() {
    let code = "fn a(x: u32, (b, c): (u32, u32)) {}\nasync fn d<'a>(cx: Context<'a>, r: Wait) -> Answer {}\n\
                fn e(f: impl FnOnce(u32) -> bool, g: &(u8, u8)) {}";
    let tuples: Vec<String> = parameter_lists(code)
        .into_iter()
        .flat_map(top_level)
        .filter(|p| {
            let ty = p.split_once(':').map_or("", |(_, t)| t).trim_start();
            p.trim_start().starts_with('(') || ty.starts_with('(') || ty.starts_with("&(")
        })
        .map(|p| p.trim().to_string())
        .collect();
    assert_eq!(tuples, vec!["(b, c): (u32, u32)", "g: &(u8, u8)"]);
}

/// (file, why it may read the machine's state by name.) How to perform a request is said by
/// the request (a pause says what it waits for); a handler that matched the state to choose
/// would decide something the journal does not hold.
const READS_STATE: &[(&str, &str)] = &[(
    "exit.rs",
    "at the session's end, a halted run leaves everything on disk for inspection: what the run leaves, not how a request is performed",
)];

#[test]
fn no_handler_chooses_how_to_perform_a_request_by_the_machines_state() {
    for (name, code) in driver_sources() {
        let code = without_tests(&code);
        // `State::` itself, not `QueueState::` or `PrState::` (the adapters' answers).
        let named = code.match_indices("State::").any(|(at, _)| {
            !code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        let listed = READS_STATE.iter().any(|(file, _)| *file == name);
        assert!(
            !named || listed,
            "src/driver/{name} chooses by the machine's state (`State::`): have the machine say it on the request, or list the file in READS_STATE with its reason"
        );
        assert!(
            named || !listed,
            "src/driver/{name} is listed in READS_STATE but reads no state: take it off"
        );
    }
}
