//! `agent.sandbox.kind: "podman"`, end to end: the scripted agent runs every agent step of a
//! clean issue in a podman container from an image built offline from the distribution's
//! packages (the files of Debian's `libc6`, `libgcc-s1`, `git` and git's libraries as `dpkg`
//! installed them, imported with `podman import`), and the issue merges. Needs the
//! distribution's podman and runc; nothing leaves the loopback (the container has no network).

use crate::e2e::{self, code, text, BIN};
use crate::sandbox::{configure, project, sandboxed};
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// The image the test builds, under a name of its own.
const IMAGE: &str = "localhost/sdlc-runner-test-agent:1";

/// What the image holds: the libraries the runner's binary (the scripted agent) links
/// against, and git with its own (the scripted agent reads the branch).
const PACKAGES: [&str; 5] = ["libc6", "libgcc-s1", "git", "libpcre2-8-0", "zlib1g"];

pub(crate) fn podman_installed() {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("podman").is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "podman is not installed: apt-get install podman runc (the test needs the distribution's podman)"
    );
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the command starts");
    assert!(out.status.success(), "{cmd:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Builds [`IMAGE`] from the installed files of [`PACKAGES`], offline.
fn build_image(dir: &Path) {
    let root = dir.join("rootfs");
    for pkg in PACKAGES {
        for file in run(Command::new("dpkg").args(["-L", pkg])).lines() {
            let from = Path::new(file);
            let (Ok(meta), Ok(resolved)) =
                (std::fs::symlink_metadata(from), std::fs::metadata(from))
            else {
                continue;
            };
            if resolved.is_dir() {
                // Directories come with their files; a merged /usr's links are made below.
                continue;
            }
            // Where the file is, its directory's links resolved (`/lib64` is `/usr/lib64`).
            let parent = from
                .parent()
                .expect("parent")
                .canonicalize()
                .expect("parent");
            let to = root
                .join(parent.strip_prefix("/").expect("absolute"))
                .join(from.file_name().expect("name"));
            std::fs::create_dir_all(to.parent().expect("parent")).expect("dir");
            if to.exists() || to.is_symlink() {
                continue;
            }
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(from).expect("link");
                std::os::unix::fs::symlink(target, &to).expect("symlink");
            } else {
                std::fs::copy(from, &to).expect("copy");
            }
        }
    }
    // A merged /usr: `/lib64` and the like are links into `/usr`, in the image as here.
    for d in ["lib", "lib64", "bin", "sbin"] {
        let host = Path::new("/").join(d);
        if let Ok(target) = std::fs::read_link(&host) {
            std::fs::create_dir_all(root.join(&target)).expect("dir");
            std::os::unix::fs::symlink(&target, root.join(d)).expect("symlink");
        }
    }
    for d in ["tmp", "etc", "root"] {
        std::fs::create_dir_all(root.join(d)).expect("dir");
    }
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").expect("passwd");
    std::fs::write(root.join("etc/group"), "root:x:0:\n").expect("group");
    let tar = dir.join("rootfs.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&tar)
        .arg("."));
    run(Command::new("podman").arg("import").arg(&tar).arg(IMAGE));
}

#[test]
#[ignore = "needs podman; .ci/run installs it: cargo test -- --ignored"]
fn a_clean_issue_in_podman_runs_the_agent_in_the_image_and_merges() {
    podman_installed();
    let p = project(json!({}));
    build_image(&p.root);
    // This machine's podman runs as root inside a container: crun refuses its hybrid cgroups
    // and it may not raise its own limits, so runc runs the container with the limits it has.
    let conf = p.root.join("containers.conf");
    std::fs::write(
        &conf,
        "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n[engine]\nruntime = \"runc\"\n",
    )
    .expect("containers.conf");
    let bin_dir = Path::new(BIN).parent().expect("the binary's directory");
    let agent = sandboxed(
        &p,
        "podman",
        json!({
            "image": IMAGE,
            "readOnly": [bin_dir.to_str().expect("utf8")],
            "env": ["CONTAINERS_CONF"],
        }),
    );
    configure(&p, agent);
    let out = p.run_env(&[], &[("CONTAINERS_CONF", conf.to_str().expect("utf8"))]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let steps: Vec<String> = e2e::invocations_in(&p.agent_log)
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(
        steps,
        ["writeSpecs", "implement", "simplify", "verify"],
        "{all}"
    );
}
