use super::*;

fn config(kind: SandboxKind) -> SandboxConfig {
    SandboxConfig {
        kind,
        ..SandboxConfig::default()
    }
}

fn spec<'a>(config: &'a SandboxConfig, handed: &'a [PathBuf]) -> Spec<'a> {
    Spec {
        config,
        agent: Some(AgentKind::Claude),
        work_tree: Path::new("/w/project"),
        runner_dir: Path::new("/w/project/.git/sdlc-runner"),
        git_dir_writable: true,
        handed,
        home: Some(Path::new("/home/op")),
    }
}

/// Where `needle` (a run of arguments) starts in `args`.
fn at(args: &[String], needle: &[&str]) -> Option<usize> {
    args.windows(needle.len())
        .position(|w| w.iter().zip(needle).all(|(a, b)| a == b))
}

fn has(args: &[String], needle: &[&str]) -> bool {
    at(args, needle).is_some()
}

#[test]
fn kind_none_wraps_nothing() {
    let c = config(SandboxKind::None);
    let wrapped = wrap(&spec(&c, &[]), Path::new("claude"), &[], &[], &|_| None)
        .expect("no sandbox program is needed");
    assert_eq!(wrapped, None);
}

#[test]
fn bwrap_shows_the_work_tree_and_hides_the_runners_directory_last() {
    let c = config(SandboxKind::Bwrap);
    let issue = [PathBuf::from("/w/project/.git/sdlc-runner/issues/7.md")];
    let args = bwrap_args(
        &spec(&c, &issue),
        Path::new("/usr/bin/claude"),
        &["-p".to_string(), "P".to_string()],
    );
    for flags in [
        &["--die-with-parent"][..],
        &["--new-session"],
        &["--unshare-pid"],
        &["--ro-bind-try", "/usr", "/usr"],
        &["--ro-bind-try", "/etc", "/etc"],
        &["--tmpfs", "/tmp"],
        &["--proc", "/proc"],
        &["--tmpfs", "/home/op"],
        &["--bind-try", "/home/op/.claude", "/home/op/.claude"],
        &[
            "--bind-try",
            "/home/op/.claude.json",
            "/home/op/.claude.json",
        ],
        &[
            "--ro-bind-try",
            "/home/op/.gitconfig",
            "/home/op/.gitconfig",
        ],
        &["--chdir", "/w/project"],
    ] {
        assert!(has(&args, flags), "{flags:?} in {args:?}");
    }
    assert!(!args.contains(&"--unshare-net".to_string()), "network host");
    let tree = at(&args, &["--bind", "/w/project", "/w/project"]).expect("work tree rw");
    let home = at(&args, &["--tmpfs", "/home/op"]).expect("home");
    let hidden = at(&args, &["--tmpfs", "/w/project/.git/sdlc-runner"]).expect("hidden");
    let issue_at = at(
        &args,
        &[
            "--ro-bind",
            "/w/project/.git/sdlc-runner/issues/7.md",
            "/w/project/.git/sdlc-runner/issues/7.md",
        ],
    )
    .expect("the issue's text bound back");
    let ro = at(&args, &["--remount-ro", "/w/project/.git/sdlc-runner"]).expect("read-only");
    assert!(home < tree && tree < hidden && hidden < issue_at && issue_at < ro);
    // The git directory is inside the work tree: bound with it, not again.
    assert!(!has(
        &args,
        &["--bind", "/w/project/.git", "/w/project/.git"]
    ));
    let end = at(&args, &["--", "/usr/bin/claude", "-p", "P"]).expect("the agent last");
    assert_eq!(end + 4, args.len());
}

#[test]
fn bwrap_cuts_the_network_and_adds_the_configured_paths_after_the_home() {
    let c = SandboxConfig {
        kind: SandboxKind::Bwrap,
        network: SandboxNetwork::None,
        read_only: vec!["~/src/shared".into(), "/opt/tools".into()],
        writable: vec!["/var/cache/build".into()],
        ..SandboxConfig::default()
    };
    let args = bwrap_args(&spec(&c, &[]), Path::new("/usr/bin/claude"), &[]);
    assert!(has(&args, &["--unshare-net"]));
    let home = at(&args, &["--tmpfs", "/home/op"]).expect("home");
    let shared = at(
        &args,
        &[
            "--ro-bind-try",
            "/home/op/src/shared",
            "/home/op/src/shared",
        ],
    )
    .expect("~ is the runner's home");
    assert!(home < shared);
    assert!(has(&args, &["--ro-bind-try", "/opt/tools", "/opt/tools"]));
    assert!(has(
        &args,
        &["--bind-try", "/var/cache/build", "/var/cache/build"]
    ));
    // A writable path cannot show the runner's directory: it is hidden after every bind.
    let cache = at(&args, &["--bind-try", "/var/cache/build"]).expect("writable");
    let hidden = at(&args, &["--tmpfs", "/w/project/.git/sdlc-runner"]).expect("hidden");
    assert!(cache < hidden);
}

#[test]
fn a_worktrees_common_git_directory_outside_it_is_bound_so_the_agent_can_commit() {
    let c = config(SandboxKind::Bwrap);
    let s = Spec {
        runner_dir: Path::new("/w/main/.git/sdlc-runner"),
        ..spec(&c, &[])
    };
    let args = bwrap_args(&s, Path::new("/usr/bin/claude"), &[]);
    assert!(has(&args, &["--bind", "/w/main/.git", "/w/main/.git"]));
    assert!(has(&args, &["--tmpfs", "/w/main/.git/sdlc-runner"]));
}

#[test]
fn each_cli_keeps_its_own_config_directory_only() {
    let c = config(SandboxKind::Bwrap);
    let s = Spec {
        agent: Some(AgentKind::Codex),
        ..spec(&c, &[])
    };
    let args = bwrap_args(&s, Path::new("/usr/bin/codex"), &[]);
    assert!(has(
        &args,
        &["--bind-try", "/home/op/.codex", "/home/op/.codex"]
    ));
    assert!(!args.iter().any(|a| a.contains(".claude")), "{args:?}");
}

#[test]
fn the_environment_is_only_what_the_agent_needs() {
    let c = SandboxConfig {
        kind: SandboxKind::Bwrap,
        env: vec!["EXTRA".into(), "UNSET".into()],
        ..SandboxConfig::default()
    };
    let host = |name: &str| {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/op"),
            ("LANG", "C.UTF-8"),
            ("GH_TOKEN", "ghp_secret"),
            ("SDLC_TRACKER_TOKEN", "t"),
            ("ANTHROPIC_API_KEY", "sk-ant-x"),
            ("OPENAI_API_KEY", "sk-o"),
            ("EXTRA", "yes"),
            ("SDLC_STEP", "from the runner's own environment"),
            ("ANTHROPIC_BASE_URL", "https://gateway.example"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("NODE_EXTRA_CA_CERTS", "/home/op/ca.pem"),
            ("OPENAI_BASE_URL", "https://openai-gateway.example"),
        ]
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
    };
    let step = vec![
        ("SDLC_STEP".to_string(), "implement".to_string()),
        ("SDLC_ISSUE".to_string(), "7".to_string()),
    ];
    let env = environment(&spec(&c, &[]), &step, &host);
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "PATH",
            "HOME",
            "LANG",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "HTTPS_PROXY",
            "NODE_EXTRA_CA_CERTS",
            "EXTRA",
            "SDLC_STEP",
            "SDLC_ISSUE",
            "IS_SANDBOX",
        ]
    );
    assert!(env.contains(&("IS_SANDBOX".into(), "1".into())));
    assert!(env.contains(&("SDLC_STEP".into(), "implement".into())));
    let codex = Spec {
        agent: Some(AgentKind::Codex),
        ..spec(&c, &[])
    };
    let env = environment(&codex, &[], &host);
    assert!(env.iter().any(|(k, _)| k == "OPENAI_API_KEY"));
    assert!(env.iter().any(|(k, _)| k == "OPENAI_BASE_URL"));
    assert!(env.iter().any(|(k, _)| k == "HTTPS_PROXY"));
    for other in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "IS_SANDBOX"] {
        assert!(!env.iter().any(|(k, _)| k == other), "{other}");
    }
}

#[test]
fn the_work_tree_stays_writable_under_a_read_only_home_and_the_clis_own_directory_too() {
    let c = SandboxConfig {
        kind: SandboxKind::Bwrap,
        read_only: vec!["~".into()],
        ..SandboxConfig::default()
    };
    let s = Spec {
        work_tree: Path::new("/home/op/src/project"),
        runner_dir: Path::new("/home/op/src/project/.git/sdlc-runner"),
        ..spec(&c, &[])
    };
    let args = bwrap_args(&s, Path::new("/usr/bin/claude"), &[]);
    let tmpfs = at(&args, &["--tmpfs", "/home/op"]).expect("home");
    let home = at(&args, &["--ro-bind-try", "/home/op", "/home/op"]).expect("~ read-only");
    let claude = at(
        &args,
        &["--bind-try", "/home/op/.claude", "/home/op/.claude"],
    )
    .expect("cli");
    let tree = at(
        &args,
        &["--bind", "/home/op/src/project", "/home/op/src/project"],
    )
    .expect("tree");
    let hidden = at(&args, &["--tmpfs", "/home/op/src/project/.git/sdlc-runner"]).expect("hidden");
    assert!(
        tmpfs < home && home < claude && home < tree && tree < hidden,
        "{args:?}"
    );
}

#[test]
fn the_files_the_route_variables_name_are_bound_read_only() {
    let c = config(SandboxKind::Bwrap);
    let host = |name: &str| match name {
        "NODE_EXTRA_CA_CERTS" => Some("/home/op/corp-ca.pem".to_string()),
        "SSL_CERT_FILE" => Some("/etc/ssl/certs/ca.pem".to_string()),
        _ => None,
    };
    let view = view_of(&spec(&c, &[]), &host);
    let args = bwrap_args_with(&spec(&c, &[]), Path::new("/usr/bin/claude"), &[], &view);
    let ca = "/home/op/corp-ca.pem";
    let at_ca = at(&args, &["--ro-bind-try", ca, ca]).expect("the CA bundle");
    let home = at(&args, &["--tmpfs", "/home/op"]).expect("home");
    assert!(home < at_ca);
    assert!(
        !args.iter().any(|a| a == "/etc/ssl/certs/ca.pem"),
        "{args:?}"
    );
}

#[test]
fn podman_runs_the_same_layout_in_the_image_with_values_kept_out_of_the_arguments() {
    let c = SandboxConfig {
        kind: SandboxKind::Podman,
        network: SandboxNetwork::None,
        image: Some("localhost/agent:1".into()),
        ..SandboxConfig::default()
    };
    let issue = [PathBuf::from("/w/project/.git/sdlc-runner/issues/7.md")];
    let env = vec![
        ("ANTHROPIC_API_KEY".to_string(), "sk-ant-secret".to_string()),
        ("SDLC_STEP".to_string(), "implement".to_string()),
    ];
    let args = container_args(
        &spec(&c, &issue),
        Path::new("/usr/bin/claude"),
        &["-p".to_string()],
        &env,
    );
    assert_eq!(args[..3], ["run", "--rm", "-i"]);
    for flags in [
        &["--init"][..],
        &["--read-only"],
        &["--tmpfs", "/tmp"],
        &["--network", "none"],
        &["--volume", "/w/project:/w/project"],
        &["--volume", "/w/project/.git/sdlc-runner"],
        &[
            "--volume",
            "/w/project/.git/sdlc-runner/issues/7.md:/w/project/.git/sdlc-runner/issues/7.md:ro",
        ],
        &["--workdir", "/w/project"],
        &["-e", "ANTHROPIC_API_KEY"],
        &["-e", "SDLC_STEP"],
        &["-e", "SDLC_RUNNER_SCOPE"],
    ] {
        assert!(has(&args, flags), "{flags:?} in {args:?}");
    }
    assert!(
        !args.iter().any(|a| a.contains("sk-ant-secret")),
        "a value in the arguments is readable by any user: {args:?}"
    );
    assert_eq!(
        has(&args, &["--userns=keep-id"]),
        !rustix::process::getuid().is_root(),
        "rootless podman keeps the user; rootful podman refuses keep-id (and runs as root)"
    );
    assert!(has(&args, &["--tmpfs", "/home/op"]));
    let tree = at(&args, &["--volume", "/w/project:/w/project"]).expect("tree");
    let hidden = at(&args, &["--volume", "/w/project/.git/sdlc-runner"]).expect("hidden");
    assert!(tree < hidden);
    let image = at(&args, &["localhost/agent:1", "/usr/bin/claude", "-p"]).expect("image");
    assert_eq!(image + 3, args.len());
}

#[test]
fn docker_has_the_same_layout_and_host_network_adds_no_flag() {
    let c = SandboxConfig {
        kind: SandboxKind::Docker,
        image: Some("agent".into()),
        ..SandboxConfig::default()
    };
    let args = container_args(&spec(&c, &[]), Path::new("/usr/bin/claude"), &[], &[]);
    assert!(!has(&args, &["--network"]));
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    assert!(has(&args, &["--user", &format!("{uid}:{gid}")]));
    assert_eq!(args.last().map(String::as_str), Some("/usr/bin/claude"));
}

#[test]
fn a_sandbox_that_could_not_start_is_told_from_the_agents_own_failure() {
    let bwrap = SandboxKind::Bwrap;
    let said = failed_to_start(
        bwrap,
        Some(1),
        0,
        "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.\n",
    )
    .expect("bwrap's own failure");
    assert!(said.contains("user namespaces"), "{said}");
    assert!(said.contains("doctor"), "{said}");
    // The agent printed something: it started, whatever it said after.
    assert_eq!(failed_to_start(bwrap, Some(1), 10, "bwrap: x"), None);
    assert_eq!(
        failed_to_start(bwrap, Some(1), 0, "error: tests failed"),
        None
    );
    assert_eq!(failed_to_start(bwrap, Some(2), 0, "bwrap: x"), None);
    assert_eq!(
        failed_to_start(SandboxKind::None, Some(1), 0, "bwrap: x"),
        None
    );
    let podman = failed_to_start(
        SandboxKind::Podman,
        Some(125),
        0,
        "Error: localhost/agent: image not known",
    )
    .expect("no image");
    assert!(podman.contains("agent.sandbox.image"), "{podman}");
    assert!(failed_to_start(SandboxKind::Docker, Some(127), 0, "").is_some());
    assert_eq!(failed_to_start(SandboxKind::Docker, Some(1), 0, ""), None);
}

#[test]
fn a_clones_borrowed_objects_are_bound_read_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tree = tmp.path().join("w0");
    let info = tree.join(".git/objects/info");
    std::fs::create_dir_all(&info).expect("info");
    std::fs::write(
        info.join("alternates"),
        "/w/project/.git/objects\n../../../w0-own/objects\n",
    )
    .expect("alternates");
    let c = config(SandboxKind::Bwrap);
    let runner_dir = tree.join(".git/sdlc-runner");
    let s = Spec {
        work_tree: &tree,
        runner_dir: &runner_dir,
        ..spec(&c, &[])
    };
    let args = bwrap_args(&s, Path::new("/usr/bin/claude"), &[]);
    assert!(has(
        &args,
        &[
            "--ro-bind-try",
            "/w/project/.git/objects",
            "/w/project/.git/objects"
        ]
    ));
    // Relative to the objects directory, and within the work tree: bound with it already.
    assert!(!args.iter().any(|a| a.contains("w0-own")), "{args:?}");
}

#[test]
fn a_program_in_the_home_directory_is_bound_alone_never_the_home() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("op");
    std::fs::create_dir_all(home.join(".local/bin")).expect("home");
    for p in [home.join("agent"), home.join(".local/bin/claude")] {
        std::fs::write(&p, "").expect("program");
    }
    let c = config(SandboxKind::Bwrap);
    let s = Spec {
        home: Some(&home),
        ..spec(&c, &[])
    };
    let h = home.display().to_string();
    let alone = bwrap_args(&s, &home.join("agent"), &[]);
    let program = format!("{h}/agent");
    assert!(has(&alone, &["--ro-bind", &program, &program]), "{alone:?}");
    assert!(!has(&alone, &["--ro-bind", &h, &h]), "{alone:?}");
    let dir = bwrap_args(&s, &home.join(".local/bin/claude"), &[]);
    let bin = format!("{h}/.local/bin");
    assert!(has(&dir, &["--ro-bind", &bin, &bin]), "{dir:?}");
}

/// The local CI's view: a scratch tree outside the clone, the clone's git directory
/// read-only, nothing of the agent CLI's.
fn ci_spec<'a>(config: &'a SandboxConfig, runner_dir: &'a Path) -> Spec<'a> {
    Spec {
        agent: None,
        work_tree: Path::new("/tmp/sdlc-runner-ci-x/tree"),
        runner_dir,
        git_dir_writable: false,
        ..spec(config, &[])
    }
}

#[test]
fn the_local_ci_gets_the_git_directory_read_only_and_none_of_the_clis_config_or_keys() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let runner_dir = tmp.path().join("project/.git/sdlc-runner");
    std::fs::create_dir_all(&runner_dir).expect("runner dir");
    let git_dir = tmp.path().join("project/.git").display().to_string();
    let hidden = runner_dir.display().to_string();
    let mut c = config(SandboxKind::Bwrap);
    c.env = vec!["CI_CACHE".into()];
    let s = ci_spec(&c, &runner_dir);
    let args = bwrap_args(&s, Path::new("/usr/bin/sh"), &["ci.sh".into()]);
    let tree = "/tmp/sdlc-runner-ci-x/tree";
    assert!(has(&args, &["--bind", tree, tree]), "{args:?}");
    let ro = at(&args, &["--ro-bind", &git_dir, &git_dir]).expect("git dir read-only");
    assert!(!has(&args, &["--bind", &git_dir, &git_dir]), "{args:?}");
    let covered = at(&args, &["--tmpfs", &hidden]).expect("runner's directory hidden");
    assert!(
        ro < covered,
        "hidden after the git directory's bind: {args:?}"
    );
    assert!(!args.iter().any(|a| a.contains(".claude")), "{args:?}");
    assert!(has(&args, &["--chdir", tree, "--", "/usr/bin/sh", "ci.sh"]));
    let host = |name: &str| Some(format!("host-{name}"));
    let env = environment(&s, &[], &host);
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["PATH", "HOME", "LANG", "TERM", "CI_CACHE"]);
}

#[test]
fn a_runners_directory_that_is_not_there_is_not_made_under_a_read_only_git_directory() {
    let c = config(SandboxKind::Bwrap);
    let s = ci_spec(&c, Path::new("/nowhere/.git/sdlc-runner"));
    let args = bwrap_args(&s, Path::new("/usr/bin/sh"), &[]);
    assert!(has(&args, &["--ro-bind", "/nowhere/.git", "/nowhere/.git"]));
    assert!(
        !args.iter().any(|a| a == "/nowhere/.git/sdlc-runner"),
        "{args:?}"
    );
}

#[test]
fn a_ci_program_in_the_tree_or_relative_to_it_binds_nothing_more() {
    let c = config(SandboxKind::Bwrap);
    let s = ci_spec(&c, Path::new("/nowhere/.git/sdlc-runner"));
    for program in ["./ci.sh", "/tmp/sdlc-runner-ci-x/tree/.ci/run"] {
        let args = bwrap_args(&s, Path::new(program), &[]);
        assert!(!has(&args, &["--ro-bind", ".", "."]), "{args:?}");
        assert!(
            !has(
                &args,
                &[
                    "--ro-bind",
                    "/tmp/sdlc-runner-ci-x/tree/.ci",
                    "/tmp/sdlc-runner-ci-x/tree/.ci"
                ]
            ),
            "{args:?}"
        );
        assert!(has(&args, &["--", program]), "{args:?}");
    }
}

#[test]
fn the_local_ci_in_a_container_mounts_the_git_directory_read_only() {
    let mut c = config(SandboxKind::Podman);
    c.image = Some("localhost/ci:1".into());
    let s = ci_spec(&c, Path::new("/nowhere/.git/sdlc-runner"));
    let args = container_args(&s, Path::new("sh"), &["ci.sh".into()], &[]);
    assert!(
        has(&args, &["--volume", "/nowhere/.git:/nowhere/.git:ro"]),
        "{args:?}"
    );
    assert!(!args.iter().any(|a| a.contains(".claude")), "{args:?}");
    assert!(has(&args, &["localhost/ci:1", "sh", "ci.sh"]), "{args:?}");
}
