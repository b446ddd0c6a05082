//! `sdlc-runner decide OPTION --config F`: answer the pending decision of a manual-approval run.

use crate::files;
use crate::machine::DecisionOption;
use std::path::Path;

pub fn run(option: &str, config: &Path) -> i32 {
    let Some(option) = DecisionOption::parse(option) else {
        let names: Vec<&str> = DecisionOption::ALL.iter().map(|o| o.name()).collect();
        eprintln!(
            "error: \"{option}\" is not a decision: use one of {}",
            names.join(", ")
        );
        return 2;
    };
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let path = cfg.project_path.join(files::DECISION_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "error: no decision is pending ({} does not exist)",
                path.display()
            );
            return 1;
        }
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return 2;
        }
    };
    let mut request: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {} is not valid JSON ({e}); the runner rewrites it at the next decision point", path.display());
            return 2;
        }
    };
    if let Some(obj) = request.as_object_mut() {
        obj.insert(
            "answer".into(),
            serde_json::Value::String(option.name().into()),
        );
    }
    let tmp = path.with_extension("json.tmp");
    let written = serde_json::to_string_pretty(&request)
        .map_err(std::io::Error::other)
        .and_then(|t| std::fs::write(&tmp, t))
        .and_then(|()| std::fs::rename(&tmp, &path));
    match written {
        Ok(()) => {
            println!("answered {}: {}", path.display(), option.name());
            0
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", path.display());
            2
        }
    }
}
