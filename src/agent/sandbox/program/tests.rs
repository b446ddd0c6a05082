use super::*;
use std::os::unix::fs::PermissionsExt;

fn script(path: &Path, first_line: &str) {
    std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
    std::fs::write(path, format!("{first_line}\nbody\n")).expect("script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn a_script_naming_env_node_gets_the_node_of_its_path_with_its_version_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let v22 = home.join(".nvm/versions/node/v22");
    script(&v22.join("bin/node"), "#!/bin/sh");
    let cli = v22.join("lib/node_modules/fake-cli/cli.js");
    script(&cli, "#!/usr/bin/env node");
    std::os::unix::fs::symlink(&cli, v22.join("bin/fake-cli")).expect("link");
    let path = format!("{}:/usr/bin:/bin", v22.join("bin").display());
    let needs = needs(
        &v22.join("bin/fake-cli"),
        Some(&home),
        Path::new("/w"),
        Some(&path),
    );
    assert!(needs.read_only.contains(&v22), "{needs:?}");
    assert!(
        needs
            .read_only
            .contains(&v22.join("lib/node_modules/fake-cli")),
        "{needs:?}"
    );
    assert_eq!(
        needs.link, None,
        "the link is inside the bound version directory"
    );
}

#[test]
fn installations_are_the_directory_above_bin_or_shims_never_the_home() {
    let home = Path::new("/home/op");
    for (interpreter, root) in [
        (
            "/home/op/.nvm/versions/node/v22/bin/node",
            Some("/home/op/.nvm/versions/node/v22"),
        ),
        ("/home/op/.volta/bin/node", Some("/home/op/.volta")),
        ("/home/op/.pyenv/shims/python", Some("/home/op/.pyenv")),
        ("/home/op/.asdf/shims/node", Some("/home/op/.asdf")),
        (
            "/home/op/.local/share/mise/shims/node",
            Some("/home/op/.local/share/mise"),
        ),
        (
            "/home/op/.local/share/fnm/node-versions/v22/installation/bin/node",
            Some("/home/op/.local/share/fnm/node-versions/v22/installation"),
        ),
        ("/home/op/.local/bin/python3", Some("/home/op/.local")),
        ("/home/op/.cargo/bin/tool", Some("/home/op/.cargo")),
        // `~/bin`: the directory above is the home, so the directory itself.
        ("/home/op/bin/node", Some("/home/op/bin")),
        // In the home itself: the file alone.
        ("/home/op/node", Some("/home/op/node")),
        ("/usr/bin/node", None),
        ("/opt/node/bin/node", Some("/opt/node")),
    ] {
        assert_eq!(
            installation(Path::new(interpreter), Some(home)),
            root.map(PathBuf::from),
            "{interpreter}"
        );
    }
}

#[test]
fn the_first_line_names_the_interpreter_as_env_would_find_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    script(&bin.join("node"), "#!/bin/sh");
    let path = bin.display().to_string();
    for (line, want) in [
        ("#!/usr/bin/env node", Some(bin.join("node"))),
        (
            "#!/usr/bin/env -S node --no-warnings",
            Some(bin.join("node")),
        ),
        (
            "#! /usr/bin/env NODE_OPTIONS=x node",
            Some(bin.join("node")),
        ),
        (
            "#!/opt/py/bin/python3 -u",
            Some(PathBuf::from("/opt/py/bin/python3")),
        ),
        ("#!/usr/bin/env nothing-of-that-name", None),
        ("not a script", None),
    ] {
        let s = tmp.path().join("s");
        script(&s, line);
        assert_eq!(interpreter_of(&s, Some(&path)), want, "{line}");
    }
}
