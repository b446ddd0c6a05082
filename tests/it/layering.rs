//! No import cycle between the top-level modules of `src/`: each module may name lower ones
//! (`crate::<module>`), never one that names it back, directly or through others. A cycle
//! means two modules can only be understood, tested and changed together; the fix is to move
//! the piece both need down into the lower one.
//!
//! The check reads the sources (comments and string literals left out), collects every
//! `crate::<module>` a file names, including the modules of a `use crate::{a, b::c}` group,
//! and fails on any cycle, naming its modules and the files that close it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which top-level modules each top-level module names, and in which files.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn top_level_modules_form_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph_of(&src);
    assert!(
        graph.len() > 10,
        "the check found only {} top-level modules under {}: it reads the wrong place",
        graph.len(),
        src.display()
    );
    let cycles: Vec<String> = strongly_connected(&graph)
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|group| describe(&graph, &group))
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles between top-level modules of src/ (move what both sides need into \
         the lower module):\n{}",
        cycles.join("\n")
    );
}

/// The scripted stand-in agent (`fake_agent`) is reached only by its subcommand and by the
/// in-memory agent fake of the crate's tests, and the fakes of the ports compile for tests
/// only: nothing a real run executes can end up acting with a scripted agent or a fake port.
#[test]
fn the_scripted_agent_and_the_fakes_are_out_of_the_run_paths_reach() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph_of(&src);
    assert!(
        graph.contains_key("fake_agent"),
        "src/fake_agent/ is gone: the scripted agent moved and this check reads the wrong place"
    );
    let allowed = |file: &str| file == "commands/mod.rs" || file.starts_with("ports/fake/");
    let mut reaching: Vec<String> = graph
        .values()
        .filter_map(|named| named.get("fake_agent"))
        .flatten()
        .filter(|file| !allowed(file))
        .cloned()
        .collect();
    reaching.sort();
    assert!(
        reaching.is_empty(),
        "these files name the scripted agent (fake_agent), which only its subcommand and the \
         tests' agent fake may: {reaching:?}"
    );
    let ports = std::fs::read_to_string(src.join("ports/mod.rs")).expect("src/ports/mod.rs");
    let declared = ports
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| w[0] == "#[cfg(test)]" && w[1] == "pub mod fake;");
    assert!(
        declared,
        "src/ports/mod.rs must declare `pub mod fake;` right under `#[cfg(test)]`: the fakes \
         are for the crate's tests, not for the product"
    );
}

/// Inside each folder of `src/` the same holds between its modules: a file of one module may
/// name a sibling (`super::page`, `crate::diagram::page`), never one that names it back,
/// directly or through others.
#[test]
fn the_modules_inside_each_folder_form_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let folders = folder_graphs(&src);
    assert!(
        folders.len() > 10 && folders.contains_key("driver") && folders.contains_key("diagram"),
        "the check found only the folders {:?} under {}: it reads the wrong place",
        folders.keys().collect::<Vec<_>>(),
        src.display()
    );
    let mut cycles = Vec::new();
    for (folder, graph) in &folders {
        for group in strongly_connected(graph) {
            if group.len() > 1 {
                cycles.push(format!("in src/{folder}/: {}", describe(graph, &group)));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles between the modules of a folder (move what both sides need into a \
         module of its own, or into the lower one):\n{}",
        cycles.join("\n")
    );
}

/// The in-memory fakes, read as a layer of their own.
const FAKES: &str = "ports/fake/";

/// The modules whose production adapters the ports stand for. The ports name none of them:
/// a port's trait and its vocabulary (errors, answers) are read, and faked, without an
/// adapter, and the adapters are put together outside `ports/`, in `wiring.rs`.
const ADAPTERS: [&str; 7] = [
    "git", "forge", "tracker", "services", "agent", "notify", "wiring",
];

#[test]
fn the_ports_name_no_adapter() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let ports = rust_files(&src.join("ports"));
    assert!(
        ports.len() > 5,
        "the check found only {} files under src/ports/",
        ports.len()
    );
    let mut named = Vec::new();
    for file in ports {
        let rel = file.strip_prefix(&src).expect("a file under src/");
        if rel.to_string_lossy().starts_with(FAKES) {
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        for module in crate_paths(&strip(&text)) {
            if ADAPTERS.contains(&module.as_str()) {
                named.push(format!("src/{} names crate::{module}", rel.display()));
            }
        }
    }
    assert!(
        named.is_empty(),
        "a port names an adapter (move the type it needs into the port, the adapter's impl \
         beside the adapter, and the wiring into src/wiring.rs):\n{}",
        named.join("\n")
    );
}

/// The services under `src/services/` (one folder each, `shared/` aside), read from the tree.
fn service_folders(src: &Path) -> Vec<String> {
    let services: Vec<String> = std::fs::read_dir(src.join("services"))
        .expect("src/services/ is readable")
        .map(|e| e.expect("an entry of src/services/").path())
        .filter(|p| p.is_dir())
        .map(|p| module_name(&p))
        .filter(|name| name != "shared")
        .collect();
    assert!(
        ["github", "gitlab", "linear", "local"]
            .iter()
            .all(|s| services.iter().any(|have| have == s)),
        "the check found only the services {services:?} under src/services/: it reads the wrong place"
    );
    services
}

/// The modules above the services: they choose one (`wiring`) or run the whole (`commands`,
/// `launch`, `driver`). A service, a port or what the ports share naming one of them turns
/// the layers upside down.
const ABOVE_SERVICES: [&str; 5] = ["wiring", "commands", "launch", "driver", "driver_on_ports"];

/// The modules above the driver: the composition root, which builds the production ports, the
/// launch, which starts drivers on them (startup, the fleet), and the commands. The driver is
/// the loop and its handlers on the ports it is handed: naming one of them would pull startup
/// or the fleet back into it.
const ABOVE_DRIVER: [&str; 3] = ["wiring", "launch", "commands"];

/// Each service under `src/services/` lives in its own house, the layers in order from the
/// bottom: the ports (`src/ports/`, which name no service and nothing above them), what every
/// tracker or forge shares (`src/tracker/`, `src/forge/`: selection, the claims' rules, the
/// review decision), `services/shared/` (naming no service), each service (naming no other:
/// no file of `services/gitlab/` names `services::linear`, nor another service's module or
/// type under `forge`/`tracker`, `forge::github`, `tracker::GitHub`), and above them all the
/// composition root (`wiring.rs`), which alone chooses a service, with the commands, the
/// launch and the driver, which no service, port or shared logic names. The driver names no
/// service either, nor the layers above it ([`ABOVE_DRIVER`]).
#[test]
fn the_service_folders_keep_their_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let services = service_folders(&src);
    let files: Vec<(String, String)> = rust_files(&src)
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(&src).expect("a file under src/");
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            (rel.to_string_lossy().to_string(), text)
        })
        .collect();
    let read = |folder: &str| files.iter().filter(|(f, _)| f.starts_with(folder)).count();
    assert!(
        read("services/") > 20 && read("ports/") > 5 && read("tracker/") + read("forge/") > 2,
        "the check read too few files under src/services/, src/ports/, src/tracker/ and src/forge/"
    );
    let broken = out_of_house(&files, &services);
    assert!(
        broken.is_empty(),
        "a service names another or a layer above it, the ports or their shared logic name \
         a service, or the driver names a layer above it (move what both need below them, \
         into services/shared/, tracker/, forge/, api_client/ or the ports; choose a service \
         in src/wiring.rs; start drivers in src/launch/):\n{}",
        broken.join("\n")
    );
}

/// The check above fails on each kind of step out of a house, and passes the ones the layers
/// allow: a service naming its own modules, the shared ones and the ports, and the wiring
/// naming every service.
#[test]
fn a_service_naming_another_or_a_layer_above_is_caught() {
    let services: Vec<String> = ["github", "gitlab", "linear", "local"]
        .into_iter()
        .map(String::from)
        .collect();
    let check = |file: &str, text: &str| out_of_house(&[(file.into(), text.into())], &services);
    for (file, text) in [
        (
            "services/github/forge.rs",
            "use crate::services::gitlab::GitLab;",
        ),
        (
            "services/github/forge/ci.rs",
            "use super::super::super::gitlab::client;",
        ),
        (
            "services/github/port.rs",
            "use crate::services::{local::Local, github::gh};",
        ),
        (
            "services/gitlab/tracker.rs",
            "fn f() { crate::tracker::GitHub::new(); }",
        ),
        (
            "services/linear/claims.rs",
            "use crate::forge::github::merge_gate;",
        ),
        (
            "services/shared/claim_notes.rs",
            "use crate::services::linear::Linear;",
        ),
        (
            "services/local/claims.rs",
            "fn f() { crate::wiring::tracker(cfg); }",
        ),
        ("services/gitlab/mod.rs", "use crate::commands::doctor;"),
        ("ports/tracker.rs", "use crate::services::local::Local;"),
        ("ports/claims.rs", "use crate::wiring::claim_store;"),
        ("tracker/claims.rs", "use crate::services::github::GitHub;"),
        ("forge/mod.rs", "use crate::services::shared::claim_notes;"),
        (
            "driver/merge.rs",
            "fn f() { crate::forge::GitLabForge::new(); }",
        ),
        ("driver/mod.rs", "use crate::wiring::production;"),
        (
            "driver/fleet_link.rs",
            "fn f() { super::super::launch::run(cfg, opts); }",
        ),
        ("driver/select.rs", "use crate::launch::{settle_tracker};"),
    ] {
        assert_eq!(check(file, text).len(), 1, "{file}: `{text}` is not caught");
    }
    for (file, text) in [
        (
            "services/github/port.rs",
            "use super::tracker::GitHub; use crate::services::github::gh; \
             use crate::services::shared::claim_notes::NoteClaims; use crate::ports::ForgePort;",
        ),
        (
            "services/local/claims.rs",
            "use crate::tracker::claims::expiry;",
        ),
        (
            "services/gitlab/forge.rs",
            "use crate::forge::{last_push, ReviewState};",
        ),
        (
            "wiring.rs",
            "use crate::services::{github::GitHub, gitlab::GitLab};",
        ),
        (
            "commands/doctor/linear.rs",
            "use crate::services::linear::Linear;",
        ),
        (
            "ports/fake/claims.rs",
            "fn t() { crate::services::local::LocalClaims::new(p); }",
        ),
        (
            "launch/startup.rs",
            "use crate::driver::{Driver, Shell}; fn f() { crate::wiring::production(c, w); }",
        ),
    ] {
        assert_eq!(check(file, text), Vec::<String>::new(), "{file}: `{text}`");
    }
}

/// Where a file of `src/` lives, as the layers of the services see it.
#[derive(Clone, Copy, PartialEq)]
enum House<'a> {
    /// A file of `services/<service>/` (`shared` among them).
    Service(&'a str),
    /// A port's file (the fakes sit above the adapters they stand for, `FAKES`).
    Port,
    /// What every tracker or forge shares: `tracker/`, `forge/`.
    Shared,
    /// The driver, above the services, which it reaches through the ports, and below the
    /// launch and the wiring ([`ABOVE_DRIVER`]).
    Driver,
    /// Anything else: the wiring, the commands, the modules below all.
    Other,
}

/// Each step out of its house the files (path under `src/`, text) take, one line each; see
/// [`the_service_folders_keep_their_layers`] for the houses.
fn out_of_house(files: &[(String, String)], services: &[String]) -> Vec<String> {
    let mut broken = Vec::new();
    for (rel, text) in files {
        let mut module: Vec<String> = rel
            .split('/')
            .map(|c| c.trim_end_matches(".rs").to_string())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let house = match (module[0].as_str(), module.get(1)) {
            ("services", Some(own)) => House::Service(own.as_str()),
            ("ports", _) if !rel.starts_with(FAKES) => House::Port,
            ("tracker" | "forge", _) => House::Shared,
            ("driver", _) => House::Driver,
            _ => House::Other,
        };
        for path in module_paths(&strip(text), &module) {
            if let Some(why) = step_out(&path, house, services) {
                broken.push(format!(
                    "src/{rel} names crate::{} ({why})",
                    path.join("::")
                ));
            }
        }
    }
    broken
}

/// Why naming `path` takes a file of `house` out of it, if it does.
fn step_out(path: &[String], house: House, services: &[String]) -> Option<&'static str> {
    let top = path.first()?.as_str();
    let above = ABOVE_SERVICES.contains(&top);
    // A module or type named after a service (`forge::github`, `tracker::GitLab`).
    let named_after = |names: &[&str]| {
        path.iter()
            .skip(1)
            .any(|segment| names.iter().any(|s| segment.to_lowercase().starts_with(s)))
    };
    match house {
        House::Service(_) | House::Port | House::Shared if above => {
            Some("a module above the services")
        }
        House::Service(own) => {
            let others: Vec<&str> = services
                .iter()
                .map(String::as_str)
                .filter(|s| *s != own)
                .collect();
            let through = ["services", "forge", "tracker"].contains(&top);
            let next = path.get(1).map(|s| s.to_lowercase()).unwrap_or_default();
            (through && others.iter().any(|s| next.starts_with(s))).then_some("another service")
        }
        House::Port => (top == "services").then_some("a service, from a port"),
        House::Driver if ABOVE_DRIVER.contains(&top) => Some("a layer above the driver"),
        House::Shared | House::Driver => (top == "services"
            || named_after(&["github", "gitlab", "linear"]))
        .then_some("a service, from what the ports share or the driver"),
        House::Other => None,
    }
}

/// Every git command of the runner starts in `src/git/` (`git::command::run`), which makes
/// each one non-interactive, in one language, time-limited and in its own process group. The
/// process runner may know which program is git (`process::git_program`, to name and count
/// it) but builds no git command; the scripted fake agent does its own git as an agent would.
/// Unit tests' fixtures (after a file's `#[cfg(test)]`) are not the runner's commands.
#[test]
fn git_starts_only_in_git() {
    let mut started = Vec::new();
    for (rel, text) in runner_code(&["git/", "fake_agent/"]) {
        let text = text.as_str();
        let code = strip(text).replace(char::is_whitespace, "");
        // Strings kept (the program's name is one), comment lines left out.
        let raw: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<String>()
            .replace(char::is_whitespace, "");
        for (seen, what) in [
            (
                raw.contains("Command::new(\"git\")"),
                "Command::new(\"git\")",
            ),
            (
                code.contains("Command::new(git_program"),
                "Command::new(git_program())",
            ),
            (
                code.contains("Command::new(crate::process::git_program"),
                "Command::new(git_program())",
            ),
            (
                raw.contains("ChildSpec::new(\"git\")"),
                "ChildSpec::new(\"git\")",
            ),
            (
                code.contains("ChildSpec::new(git_program")
                    || code.contains("ChildSpec::new(crate::process::git_program"),
                "ChildSpec::new(git_program())",
            ),
            (code.contains("git_command("), "git_command"),
            (code.contains("git_within("), "git_within"),
            (code.contains("git_output("), "git_output"),
        ] {
            if seen {
                started.push(format!("src/{rel}: {what}"));
            }
        }
    }
    assert!(
        started.is_empty(),
        "git started outside src/git/ (call crate::git::command::output, within or run):\n{}",
        started.join("\n")
    );
}

/// Every child process starts in `src/process/` (`ChildSpec`): its own group, a deadline, the
/// run's stop, head and tail of its output, for git, gh, the tracker's commands, the local CI,
/// a notification and the agent alike. Only the scripted fake agent (a stand-in CLI, not the
/// runner) and unit tests start processes of their own.
#[test]
fn processes_start_only_in_process() {
    let mut started = Vec::new();
    for (rel, text) in runner_code(&["process/", "fake_agent/"]) {
        let code = strip(&text).replace(char::is_whitespace, "");
        for what in [
            "Command::new(",
            "process::Command",
            "CommandExt",
            ".spawn()",
            ".output()",
        ] {
            if code.contains(what) {
                started.push(format!("src/{rel}: {what}"));
            }
        }
    }
    assert!(
        started.is_empty(),
        "a process started outside src/process/ (build a crate::process::ChildSpec):\n{}",
        started.join("\n")
    );
}

#[test]
fn paths_resolve_from_the_module_that_names_them() {
    let text = "use super::{render::xml, views::{a, b}}; use super::super::top::X; \
                fn f() { crate::diagram::page::svg(); self::inner::g(); }";
    let named = module_paths(&strip(text), &["diagram".into(), "page".into()]);
    let expected: BTreeSet<Vec<String>> = [
        vec!["diagram", "render", "xml"],
        vec!["diagram", "views", "a"],
        vec!["diagram", "views", "b"],
        vec!["top", "X"],
        vec!["diagram", "page", "svg"],
        vec!["diagram", "page", "inner", "g"],
    ]
    .into_iter()
    .map(|p| p.into_iter().map(String::from).collect())
    .collect();
    assert_eq!(named.into_iter().collect::<BTreeSet<_>>(), expected);
}

#[test]
fn the_scanner_sees_paths_groups_and_nothing_in_comments_or_strings() {
    let text = r##"
        use crate::alpha::X;
        use crate::{beta, gamma::{Y, Z}, self as _};
        fn f() { crate::delta::g(); let _ = "crate::epsilon"; let _ = r#"crate::zeta"#; }
        // crate::eta
        /* crate::theta /* nested */ crate::iota */
        const C: char = '"'; fn l<'a>(_: &'a str) { crate::kappa::h(); }
        macro_rules! m { () => { $crate::lambda::k() } }
    "##;
    let named: BTreeSet<String> = crate_paths(&strip(text)).into_iter().collect();
    let expected: BTreeSet<String> = ["alpha", "beta", "gamma", "delta", "kappa", "self"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(named, expected);
}

#[test]
fn a_cycle_is_found_and_named() {
    let mut graph = Graph::new();
    let mut edge = |from: &str, to: &str| {
        graph
            .entry(from.to_string())
            .or_default()
            .entry(to.to_string())
            .or_default()
            .insert(format!("{from}.rs"));
        graph.entry(to.to_string()).or_default();
    };
    edge("a", "b");
    edge("b", "c");
    edge("c", "a");
    edge("c", "d");
    let groups: Vec<Vec<String>> = strongly_connected(&graph)
        .into_iter()
        .filter(|g| g.len() > 1)
        .collect();
    assert_eq!(groups, vec![vec!["a".to_string(), "b".into(), "c".into()]]);
    let text = describe(&graph, &groups[0]);
    assert!(
        text.contains("a -> b (a.rs)") && text.contains("c -> a (c.rs)"),
        "{text}"
    );
    assert!(!text.contains("-> d"), "{text}");
}

/// The top-level modules of `src/` (files and folders, apart from the crate roots) and the
/// modules each names.
fn graph_of(src: &Path) -> Graph {
    let mut tops = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("src/ is readable") {
        let path = entry.expect("an entry of src/").path();
        let name = module_name(&path);
        if path.is_dir() || (name.ends_with(".rs") && name != "lib.rs" && name != "main.rs") {
            tops.insert(name.trim_end_matches(".rs").to_string());
        }
    }
    let mut graph: Graph = tops.iter().map(|t| (t.clone(), BTreeMap::new())).collect();
    for file in rust_files(src) {
        let rel = file
            .strip_prefix(src)
            .expect("a file under src/")
            .to_string_lossy()
            .to_string();
        // The fakes stand in for the adapters and may share their pure rules (the selection
        // rule, the scripted agent's words): a layer of their own above both, so that they
        // are no edge from the ports to an adapter.
        let top = if rel.starts_with(FAKES) {
            FAKES.trim_end_matches('/').to_string()
        } else {
            rel.split('/')
                .next()
                .expect("a path")
                .trim_end_matches(".rs")
                .to_string()
        };
        if top == FAKES.trim_end_matches('/') {
            graph.entry(top.clone()).or_default();
        } else if !tops.contains(&top) {
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        for named in crate_paths(&strip(&text)) {
            if named != top && tops.contains(&named) {
                graph
                    .get_mut(&top)
                    .expect("every top-level module is in the graph")
                    .entry(named)
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    graph
}

/// For each folder of `src/` (by its path, `driver`, `driver/sub`), its child modules and the
/// siblings each names.
fn folder_graphs(src: &Path) -> BTreeMap<String, Graph> {
    let mut folders: BTreeMap<String, Graph> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).expect("a file under src/");
        let mut module: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        if module.len() == 1 && (module[0] == "lib" || module[0] == "main") {
            continue;
        }
        // A folder's children: every module one level below it.
        for depth in 1..module.len() {
            let folder = module[..depth].join("/");
            folders
                .entry(folder)
                .or_default()
                .entry(module[depth].clone())
                .or_default();
        }
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let rel = rel.to_string_lossy().to_string();
        for named in module_paths(&strip(&text), &module) {
            let common = module
                .iter()
                .zip(&named)
                .take_while(|(a, b)| a == b)
                .count();
            // Only between two modules strictly inside one folder; the top level is the
            // other test's.
            if common == 0 || common >= module.len() || common >= named.len() {
                continue;
            }
            let folder = module[..common].join("/");
            let (from, to) = (module[common].clone(), named[common].clone());
            edges_of(&mut folders, folder, from, to, rel.clone());
        }
    }
    // A named item that is not a module of the folder (a type of its `mod.rs`) is no edge.
    for graph in folders.values_mut() {
        let children: BTreeSet<String> = graph.keys().cloned().collect();
        for targets in graph.values_mut() {
            targets.retain(|to, _| children.contains(to));
        }
    }
    folders
}

fn edges_of(
    folders: &mut BTreeMap<String, Graph>,
    folder: String,
    from: String,
    to: String,
    file: String,
) {
    folders
        .entry(folder)
        .or_default()
        .entry(from)
        .or_default()
        .entry(to)
        .or_default()
        .insert(file);
}

/// Every path a file of `module` names through `crate::`, `super::` or `self::`, resolved
/// to the crate's root, one per item of a `{...}` group.
fn module_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut paths = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let starts = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|p| code[at..].starts_with(p));
        let boundary = at == 0 || {
            let c = b[at - 1];
            !(c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b':')
        };
        let Some(start) = starts.filter(|_| boundary) else {
            at += code[at..].chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let mut base: Vec<String> = match start {
            "crate::" => Vec::new(),
            _ => module.to_vec(),
        };
        let mut i = at + start.len();
        if start == "super::" {
            base.pop();
            while code[i..].starts_with("super::") {
                base.pop();
                i += "super::".len();
            }
        }
        i = group_or_path(code, i, &base, &mut paths);
        at = i.max(at + 1);
    }
    paths
}

/// Reads `a::b::c` or `a::{x, y::z}` at `i` below `base`, pushing each full path; the index
/// after it.
fn group_or_path(code: &str, mut i: usize, base: &[String], paths: &mut Vec<Vec<String>>) -> usize {
    let b = code.as_bytes();
    let mut path = base.to_vec();
    loop {
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        if b.get(i) == Some(&b'{') {
            i += 1;
            loop {
                while b
                    .get(i)
                    .is_some_and(|c| c.is_ascii_whitespace() || *c == b',')
                {
                    i += 1;
                }
                match b.get(i) {
                    None => return i,
                    Some(b'}') => return i + 1,
                    Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                        i = group_or_path(code, i, &path, paths);
                    }
                    Some(_) => {
                        // `*`, `self`'s siblings and the like: skip to the next item.
                        i += 1;
                    }
                }
            }
        }
        let word = identifier(&code[i..]);
        if word.is_empty() {
            break;
        }
        i += word.len();
        if word != "self" {
            path.push(word);
        }
        if code[i..].starts_with("::") {
            i += 2;
        } else {
            break;
        }
    }
    if path.len() > base.len() {
        paths.push(path);
    }
    i
}

fn module_name(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_else(|| panic!("{} is not a UTF-8 name", path.display()))
        .to_string()
}

/// The runner's own code: each file under `src/` (its path there, its text up to its first
/// `#[cfg(test)]`), but for unit-test files and the folders `allowed`.
fn runner_code(allowed: &[&str]) -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut code = Vec::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .expect("a file under src/")
            .to_string_lossy()
            .to_string();
        if allowed.iter().any(|a| rel.starts_with(a)) || rel.ends_with("tests.rs") {
            continue;
        }
        let mut text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        text.truncate(text.find("#[cfg(test)]").unwrap_or(text.len()));
        code.push((rel, text));
    }
    code
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in
            std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `text` without comments, string literals and character literals, which may mention paths
/// the code does not use.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |at: usize| at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            i = text[i..].find('\n').map_or(b.len(), |n| i + n);
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&b[i..]).filter(|_| !ident(i)) {
            let open = text[i..].find('"').expect("a raw string has a quote") + i + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            i = text[open..]
                .find(&close)
                .map_or(b.len(), |n| open + n + close.len());
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            i = text[i + 2..].find('\'').map_or(b.len(), |n| i + 2 + n + 1);
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            i += 3;
        } else {
            let c = text[i..].chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// How many `#` a raw string starting here has (`r"`, `r#"`, `br##"`, ...).
fn raw_string_start(b: &[u8]) -> Option<usize> {
    let rest = b.strip_prefix(b"b").unwrap_or(b).strip_prefix(b"r")?;
    let hashes = rest.iter().take_while(|&&c| c == b'#').count();
    (rest.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The first segment after each `crate::` (not `$crate::`, which a macro expands where it
/// is used), and each first segment of a `crate::{...}` group.
fn crate_paths(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut named = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::").map(|n| from + n) {
        from = at + "crate::".len();
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_' || b[at - 1] == b'$') {
            continue;
        }
        if b.get(from) == Some(&b'{') {
            let mut depth = 0;
            let mut expect = true;
            let mut i = from;
            while i < b.len() {
                match b[i] {
                    b'{' => {
                        depth += 1;
                        expect = depth == 1;
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' if depth == 1 => expect = true,
                    c if depth == 1 && expect && (c.is_ascii_alphabetic() || c == b'_') => {
                        let word = identifier(&code[i..]);
                        i += word.len();
                        named.push(word);
                        expect = false;
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        } else {
            let word = identifier(&code[from..]);
            if !word.is_empty() {
                named.push(word);
            }
        }
    }
    named
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The strongly connected groups of `graph` (Tarjan), each sorted; a group of more than one
/// module is a cycle.
fn strongly_connected(graph: &Graph) -> Vec<Vec<String>> {
    struct Search<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        groups: Vec<Vec<String>>,
    }
    impl<'g> Search<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph[v].keys() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    group.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                group.sort();
                self.groups.push(group);
            }
        }
    }
    let mut search = Search {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        groups: Vec::new(),
    };
    for v in graph.keys() {
        if !search.index.contains_key(v.as_str()) {
            search.visit(v);
        }
    }
    search.groups
}

/// A cycle's modules and every import between them, with the files that make it.
fn describe(graph: &Graph, group: &[String]) -> String {
    let mut lines = vec![format!("cycle: {}", group.join(", "))];
    for from in group {
        for (to, files) in &graph[from] {
            if group.contains(to) {
                let files: Vec<&str> = files.iter().map(String::as_str).collect();
                lines.push(format!("  {from} -> {to} ({})", files.join(", ")));
            }
        }
    }
    lines.join("\n")
}

/// The core reaches no clock, file or process because it cannot: its only dependencies are
/// the state machine crate and serde (dev-dependencies aside).
#[test]
fn the_core_depends_on_statig_and_serde_only() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/sdlc-machine/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("the core's Cargo.toml");
    let deps: Vec<&str> = text
        .split("\n[")
        .find(|table| table.starts_with("dependencies]"))
        .expect("a [dependencies] table")
        .lines()
        .skip(1)
        .filter_map(|l| l.split('=').next().map(str::trim))
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .collect();
    assert_eq!(
        deps,
        ["statig", "serde"],
        "{}: the core's dependencies changed; it must stay pure (no IO crate)",
        manifest.display()
    );
}
