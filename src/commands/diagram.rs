//! `sdlc-runner diagram`: write or check the derived diagrams.

use crate::cli::{DiagramArgs, DiagramFormat};
use crate::diagram;
use std::path::Path;

pub fn run(args: &DiagramArgs) -> i32 {
    let graph = diagram::explore();
    let wanted = |name: &str| match args.format {
        None => true,
        Some(DiagramFormat::Mermaid) => name.ends_with(".mmd"),
        Some(DiagramFormat::Dot) => name.ends_with(".dot"),
        Some(DiagramFormat::Scxml) => name.ends_with(".scxml"),
    };
    let files: Vec<(&str, String)> = diagram::render_all(&graph)
        .into_iter()
        .filter(|(n, _)| wanted(n))
        .collect();
    if args.check {
        return check(&args.out, &files);
    }
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        say!("error: cannot create {}: {e}", args.out.display());
        return 2;
    }
    for (name, text) in &files {
        let path = args.out.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            say!("error: cannot write {}: {e}", path.display());
            return 2;
        }
        out!("wrote {} ({} edges)", path.display(), graph.edges.len());
    }
    0
}

fn check(dir: &Path, files: &[(&str, String)]) -> i32 {
    let mut stale = Vec::new();
    for (name, fresh) in files {
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
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
