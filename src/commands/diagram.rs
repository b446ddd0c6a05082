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
    let files: Vec<(&str, String)> =
        diagram::render_all(&graph).into_iter().filter(|(n, _)| wanted(n)).collect();
    if args.check {
        return check(&args.out, &files);
    }
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("error: cannot create {}: {e}", args.out.display());
        return 2;
    }
    for (name, text) in &files {
        let path = args.out.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return 2;
        }
        println!("wrote {} ({} edges)", path.display(), graph.edges.len());
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
                let removed = old_lines.iter().filter(|l| !new_lines.contains(l)).count();
                let added = new_lines.iter().filter(|l| !old_lines.contains(l)).count();
                let at = first.unwrap_or(old_lines.len().min(new_lines.len())) + 1;
                stale.push(format!(
                    "{}: stale (+{added} -{removed} lines, first difference at line {at})",
                    path.display()
                ));
            }
            Ok(_) => {}
        }
    }
    if stale.is_empty() {
        println!("diagrams in {} are fresh", dir.display());
        0
    } else {
        for s in &stale {
            eprintln!("{s}");
        }
        eprintln!("regenerate with: sdlc-runner diagram --out {}", dir.display());
        1
    }
}
