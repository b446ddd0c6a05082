//! `sdlc-runner decide OPTION --config F`: answer the pending decision of a manual-approval run.

use crate::machine::DecisionOption;
use crate::runner_dir::RunnerDir;
use std::path::Path;

pub fn run(option: &str, config: &Path) -> i32 {
    let Some(option) = DecisionOption::parse(option) else {
        let names: Vec<&str> = DecisionOption::ALL.iter().map(|o| o.name()).collect();
        say!(
            "error: \"{option}\" is not a decision: use one of {}",
            names.join(", ")
        );
        return 2;
    };
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let path = match RunnerDir::locate(&cfg.project_path) {
        Ok(dir) => dir.decision(),
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    let text = match crate::safe_fs::read_no_follow(&path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            say!(
                "error: no decision is pending ({} does not exist)",
                path.display()
            );
            return 1;
        }
        Err(e) => {
            say!("error: cannot read {}: {e}", path.display());
            return 2;
        }
    };
    let mut request: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            say!("error: {} is not valid JSON ({e}); the runner rewrites it at the next decision point", path.display());
            return 2;
        }
    };
    if let Some(obj) = request.as_object_mut() {
        obj.insert(
            "answer".into(),
            serde_json::Value::String(option.name().into()),
        );
    }
    let written = serde_json::to_string_pretty(&request)
        .map_err(std::io::Error::other)
        .and_then(|t| crate::safe_fs::write_atomic(&path, t.as_bytes()));
    match written {
        Ok(()) => {
            out!("answered {}: {}", path.display(), option.name());
            0
        }
        Err(e) => {
            say!("error: cannot write {}: {e}", path.display());
            2
        }
    }
}
