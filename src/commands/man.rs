//! `sdlc-runner man [--out-dir DIR]`: man pages generated from the clap definitions.

use crate::cli::Cli;
use clap::CommandFactory;
use std::path::Path;

pub fn run(out_dir: Option<&Path>) -> i32 {
    let command = Cli::command();
    let Some(dir) = out_dir else {
        return match render(&command) {
            Ok(page) => {
                out_raw!("{}", String::from_utf8_lossy(&page));
                0
            }
            Err(e) => {
                say!("error: cannot render the man page: {e}");
                1
            }
        };
    };
    match write_pages(&command, dir) {
        Ok(names) => {
            for name in names {
                out!("{}", dir.join(name).display());
            }
            0
        }
        Err(e) => {
            say!(
                "error: cannot write man pages into {}: {e}; check that the directory exists and is writable",
                dir.display()
            );
            2
        }
    }
}

fn render(command: &clap::Command) -> std::io::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    Ok(page)
}

/// `sdlc-runner.1`, then `sdlc-runner-<command>.1` for every visible subcommand.
fn write_pages(command: &clap::Command, dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    let main = "sdlc-runner.1".to_string();
    std::fs::write(dir.join(&main), render(command)?)?;
    names.push(main);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("sdlc-runner-{}", sub.get_name());
        let page = render(&sub.clone().name(name.clone()))?;
        let file = format!("{name}.1");
        std::fs::write(dir.join(&file), page)?;
        names.push(file);
    }
    Ok(names)
}
