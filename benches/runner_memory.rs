//! Peak resident memory of the runner while its agent streams stream-json: the real binary
//! runs one issue whose implement step floods its output (the fake agent's `flood:<MB>`),
//! and prints its own peak RSS (`VmHWM`) on its `SDLC_RUNNER_STATS=1` line at exit. The same
//! run without a flood is the reference: the figure should not grow with the output.
//!
//! `cargo bench --bench runner_memory` (about 1 GiB through a pipe; a minute or two)

mod common;

use common::{runner_binary, stats, Project};
use serde_json::json;
use std::time::Instant;

fn peak_mib(bin: &std::path::Path, flood_mb: u64) -> (f64, f64) {
    let script = if flood_mb == 0 {
        json!({})
    } else {
        json!({"steps": {"implement": [format!("flood:{flood_mb}")]}})
    };
    let p = Project::new(bin, 1, script, json!({}));
    let started = Instant::now();
    let (out, _) = p.run(bin, &["--issue", "1"]);
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(
        out.status.code(),
        Some(0),
        "runner failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if flood_mb > 0 {
        // The flood really went through: the attempt's log says what the budget dropped.
        let dropped = std::fs::read_dir(p.root.join("logs"))
            .expect("log directory")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("implement"))
            .any(|e| {
                std::fs::read(e.path()).is_ok_and(|b| b.windows(13).any(|w| w == b"bytes dropped"))
            });
        assert!(
            dropped,
            "no implement log with dropped bytes after flood:{flood_mb}"
        );
    }
    (stats(&out).vmhwm_kib as f64 / 1024.0, secs)
}

fn main() {
    let bin = runner_binary();
    let (base, _) = peak_mib(&bin, 0);
    let (small, _) = peak_mib(&bin, 64);
    let (big, secs) = peak_mib(&bin, 1024);
    println!("workload: one issue, the implement step prints N MiB of stream-json (assistant events), default log budget (500 MB)");
    println!("runner peak RSS, 1 GiB streamed: {big:.1} MiB ({secs:.1} s for the whole run)");
    println!("runner peak RSS, 64 MiB streamed: {small:.1} MiB");
    println!("reference: runner peak RSS, same run without the flood: {base:.1} MiB");
    println!(
        "growth from 64 MiB to 1 GiB of output: {:+.1} MiB",
        big - small
    );
}
