//! `sdlc-runner diagram`: write or check the derived diagrams.

use crate::cli::{DiagramArgs, DiagramFormat};
use crate::diagram::{self, Rendered};
use std::path::Path;

pub fn run(args: &DiagramArgs) -> i32 {
    let graph = diagram::explore();
    let wanted = |name: &str| match args.format {
        None => true,
        Some(DiagramFormat::Mermaid) => name.ends_with(".mmd"),
        Some(DiagramFormat::Dot) => name.ends_with(".dot"),
        Some(DiagramFormat::Scxml) => name.ends_with(".scxml"),
    };
    let files: Vec<Rendered> = diagram::render_all(&graph)
        .into_iter()
        .filter(|f| wanted(&f.name))
        .collect();
    if args.check {
        return check(&args.out, &files);
    }
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        say!("error: cannot create {}: {e}", args.out.display());
        return 2;
    }
    for file in &files {
        let path = args.out.join(&file.name);
        if let Err(e) = std::fs::write(&path, &file.text) {
            say!("error: cannot write {}: {e}", path.display());
            return 2;
        }
        out!("wrote {} ({} edges)", path.display(), file.edges);
    }
    0
}

fn check(dir: &Path, files: &[Rendered]) -> i32 {
    let stale = stale(dir, files);
    if stale.is_empty() {
        out!("diagrams in {} are fresh", dir.display());
        0
    } else {
        for s in &stale {
            say!("{s}");
        }
        say!(
            "regenerate with: sdlc-runner diagram --out {}",
            dir.display()
        );
        1
    }
}

/// One message per file that differs from what the machine derives now, or is not there.
fn stale(dir: &Path, files: &[Rendered]) -> Vec<String> {
    let mut stale = Vec::new();
    for file in files {
        let path = dir.join(&file.name);
        let fresh = &file.text;
        match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                stale.push(format!("{}: missing", path.display()))
            }
            Err(e) => stale.push(format!("{}: cannot read ({e})", path.display())),
            Ok(old) if old != *fresh => {
                let old_lines: Vec<&str> = old.lines().collect();
                let new_lines: Vec<&str> = fresh.lines().collect();
                let first = old_lines.iter().zip(&new_lines).position(|(a, b)| a != b);
                let removed: Vec<&&str> = old_lines
                    .iter()
                    .filter(|l| !new_lines.contains(l))
                    .collect();
                let added: Vec<&&str> = new_lines
                    .iter()
                    .filter(|l| !old_lines.contains(l))
                    .collect();
                let at = first.unwrap_or(old_lines.len().min(new_lines.len())) + 1;
                let mut msg = format!(
                    "{}: stale (+{} -{} lines, first difference at line {at})",
                    path.display(),
                    added.len(),
                    removed.len()
                );
                for line in removed.iter().take(5) {
                    msg.push_str(&format!("\n  - {}", line.trim()));
                }
                for line in added.iter().take(5) {
                    msg.push_str(&format!("\n  + {}", line.trim()));
                }
                stale.push(msg);
            }
            Ok(_) => {}
        }
    }
    stale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written() -> (tempfile::TempDir, Vec<Rendered>) {
        let files = diagram::render_all(diagram::explored());
        let dir = tempfile::tempdir().expect("temp dir");
        for f in &files {
            std::fs::write(dir.path().join(&f.name), &f.text).expect("write diagram");
        }
        (dir, files)
    }

    /// The diagrams committed in `state-diagrams/` are what `sdlc-runner diagram --check`
    /// derives from the machine now: a change to the machine that leaves them stale fails
    /// `cargo test`, not only CI. Checked here rather than by running the binary, so that it
    /// shares the one exploration of this crate's diagram tests (about thirty CPU-seconds)
    /// instead of exploring again.
    #[test]
    fn the_committed_state_diagrams_are_what_the_machine_derives() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("state-diagrams");
        let files = diagram::render_all(diagram::explored());
        let stale = stale(&dir, &files);
        assert!(
            stale.is_empty(),
            "stale state diagrams (regenerate with `cargo run -- diagram`):\n{}",
            stale.join("\n")
        );
        assert_eq!(check(&dir, &files), 0);
    }

    #[test]
    fn diagram_check_passes_on_what_diagram_writes() {
        let (dir, files) = written();
        assert_eq!(stale(dir.path(), &files), Vec::<String>::new());
        assert_eq!(check(dir.path(), &files), 0);
    }

    #[test]
    fn diagram_check_fails_on_a_stale_view_naming_it() {
        let (dir, files) = written();
        let path = dir.path().join("overview.dot");
        let old = std::fs::read_to_string(&path).expect("read overview");
        std::fs::write(&path, old.replacen("halt", "stop", 1)).expect("write overview");
        let msgs = stale(dir.path(), &files);
        assert_eq!(msgs.len(), 1, "{msgs:?}");
        assert!(msgs[0].contains("overview.dot: stale"), "{}", msgs[0]);
        assert_eq!(check(dir.path(), &files), 1);
    }

    #[test]
    fn diagram_check_fails_on_a_missing_view_naming_it() {
        let (dir, files) = written();
        std::fs::remove_file(dir.path().join("build.mmd")).expect("remove view");
        let msgs = stale(dir.path(), &files);
        assert_eq!(msgs.len(), 1, "{msgs:?}");
        assert!(msgs[0].ends_with("build.mmd: missing"), "{}", msgs[0]);
        assert_eq!(check(dir.path(), &files), 1);
    }
}
