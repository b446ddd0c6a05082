//! "The driver decides nothing", checked: the async shell (`src/driver/`) performs one effect
//! and reports one event. It may not start processes itself (that is the process runner's,
//! `src/process.rs`, behind the adapters), may not block its thread in a sleep, and may not
//! decide from error text. Every place where it still waits is listed below with the policy
//! that bounds it; a new wait, a new sleep or a new text match fails this test until it is
//! either moved into the machine or listed here with its reason.

use std::path::Path;

/// (file, how many `tokio::time::sleep` it may hold, why the wait is bounded and whose policy
/// it follows).
const WAITS: &[(&str, usize, &str)] = &[
    (
        "mod.rs",
        1,
        "the machine's own Wait effect (backoff, quota, network waits): its length is the machine's",
    ),
    (
        "decision.rs",
        1,
        "watching for a person's answer file; bounded by the machine's decision timeout",
    ),
    (
        "fleet.rs",
        1,
        "a fleet-wide pause ordered by the pure coordinator (sdlc_machine::fleet)",
    ),
    (
        "merge.rs",
        1,
        "the merge turn and lease waits, on the pure LeaseWait schedule (sdlc_machine::fleet)",
    ),
];

fn driver_sources() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/driver") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) == Some("rs") {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("utf8")
                .to_string();
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
    files
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
        let sleeps = code.matches("tokio::time::sleep").count();
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
