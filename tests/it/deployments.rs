//! The example deployments (`examples/github-actions/`, `examples/kubernetes/`) are read with a
//! real YAML parser, and every `sdlc-runner` command line in them is parsed by the real CLI
//! definition, so an example cannot drift from the flags the binary accepts. Beside that: the
//! structure that makes several runners on one tracker work (triggers, a matrix of slots with
//! one concurrency group each, logs uploaded whatever the outcome; an Indexed Job whose
//! runners all start at once with distinct worker ids and a Secret that exists), and the
//! configs they ship, validated like `config check` does.

use clap::Parser;
use sdlc_runner::cli::{Cli, Command};
use sdlc_runner::config::Config;
use serde::Deserialize;
use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn example(path: &str) -> (PathBuf, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(path);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    (path, text)
}

fn yaml_documents(path: &Path, text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| {
            Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
        })
        .collect()
}

/// `value[key]`, failing with the path when it is missing.
fn at<'a>(value: &'a Value, path: &[&str]) -> &'a Value {
    let mut v = value;
    for (i, key) in path.iter().enumerate() {
        v = v
            .get(*key)
            .unwrap_or_else(|| panic!("missing key {}", path[..=i].join(".")));
    }
    v
}

fn seq(value: &Value) -> &[Value] {
    value
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("not a list: {value:?}"))
}

fn string(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value:?}"))
}

// ---------------------------------------------------------------------------------------------
// Shell-like word splitting: enough to find the commands of a `run:` script or `sh -c` script.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    /// `;`, `;;`, `&`, `&&`, `|`, `||`, `(`, `)`, a newline: ends a simple command.
    Control,
    /// `>`, `>>`, `<`, `>&`: the next word is its target, not an argument.
    Redirect,
}

/// Joins backslash-newline continuations into one line each.
fn logical_lines(script: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        let trailing = line.len() - line.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            current.push_str(&line[..line.len() - 1]);
            current.push(' ');
        } else {
            current.push_str(line);
            lines.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// Copies an opaque `${{ … }}`, `$( … )` or `${ … }` starting at `chars[i]` (the `$`) into
/// `word`; returns the index after it, or `None` when `chars[i]` starts none of them.
fn opaque(chars: &[char], i: usize, word: &mut String) -> Option<usize> {
    let rest = |n: usize| chars.get(i + n).copied();
    let end = if rest(1) == Some('{') && rest(2) == Some('{') {
        (i + 3..chars.len().saturating_sub(1))
            .find(|&j| chars[j] == '}' && chars[j + 1] == '}')
            .map(|j| j + 2)
    } else if rest(1) == Some('(') || rest(1) == Some('{') {
        let (open, close) = if rest(1) == Some('(') {
            ('(', ')')
        } else {
            ('{', '}')
        };
        let mut depth = 0usize;
        let mut end = None;
        for (j, &c) in chars.iter().enumerate().skip(i + 1) {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    end = Some(j + 1);
                    break;
                }
            }
        }
        end
    } else {
        return None;
    };
    let end = end.unwrap_or_else(|| panic!("unclosed {}", chars[i..].iter().collect::<String>()));
    word.extend(&chars[i..end]);
    Some(end)
}

/// Splits one logical line into words and operators, as a POSIX shell would before expansion:
/// quotes are removed, `${{ … }}` (GitHub expressions) and `$(VAR)` / `$(…)` / `${…}` stay
/// whole words, an unquoted `#` at a word's start comments out the rest.
fn tokenize(line: &str) -> Vec<Token> {
    let chars: Vec<char> = line.chars().collect();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                flush(&mut word, &mut in_word, &mut tokens);
                i += 1;
            }
            '#' if !in_word => break,
            '\'' => {
                let end = (i + 1..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .unwrap_or_else(|| panic!("unclosed ' in {line}"));
                word.extend(&chars[i + 1..end]);
                in_word = true;
                i = end + 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                loop {
                    match chars.get(i) {
                        None => panic!("unclosed \" in {line}"),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                            word.push(chars[i + 1]);
                            i += 2;
                        }
                        Some('$') => match opaque(&chars, i, &mut word) {
                            Some(end) => i = end,
                            None => {
                                word.push('$');
                                i += 1;
                            }
                        },
                        Some(&other) => {
                            word.push(other);
                            i += 1;
                        }
                    }
                }
            }
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    word.push(next);
                }
                in_word = true;
                i += 2;
            }
            '$' => {
                in_word = true;
                match opaque(&chars, i, &mut word) {
                    Some(end) => i = end,
                    None => {
                        word.push('$');
                        i += 1;
                    }
                }
            }
            ';' | '&' | '|' | '(' | ')' => {
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Control);
                let doubled = matches!(c, ';' | '&' | '|') && chars.get(i + 1) == Some(&c);
                i += if doubled { 2 } else { 1 };
            }
            '>' | '<' => {
                // `2>`: the digits are a file descriptor, not a word.
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Redirect);
                i += 1;
                while matches!(chars.get(i), Some('>' | '&')) {
                    i += 1;
                }
            }
            other => {
                word.push(other);
                in_word = true;
                i += 1;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut tokens);
    tokens
}

/// The simple commands of a script: words between control operators, redirections dropped,
/// leading reserved words (`if`, `then`, `!`, `{`…) and variable assignments skipped.
fn simple_commands(script: &str) -> Vec<(String, Vec<String>)> {
    const RESERVED: &[&str] = &[
        "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
        "exec",
    ];
    let mut commands = Vec::new();
    for line in logical_lines(script) {
        let mut words: Vec<String> = Vec::new();
        let mut tokens = tokenize(&line).into_iter();
        let mut finish = |words: &mut Vec<String>| {
            let start = words
                .iter()
                .position(|w| {
                    !RESERVED.contains(&w.as_str())
                        && !w.split_once('=').is_some_and(|(name, _)| {
                            !name.is_empty()
                                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        })
                })
                .unwrap_or(words.len());
            if start < words.len() {
                commands.push((line.trim().to_string(), words.split_off(start)));
            }
            words.clear();
        };
        while let Some(token) = tokens.next() {
            match token {
                Token::Word(w) => words.push(w),
                Token::Control => finish(&mut words),
                Token::Redirect => {
                    tokens.next();
                }
            }
        }
        finish(&mut words);
    }
    commands
}

#[test]
fn the_tokenizer_splits_like_a_shell() {
    let commands = simple_commands(
        "set +e\n\
         if ! command -v sdlc-runner >/dev/null; then X=1 sdlc-runner run \\\n  --config \"a b.json\" --worker-id gha-${{ github.run_id }}-${{ matrix.runner }} 2>&1 || code=$?; fi\n\
         echo 'sdlc-runner run' # sdlc-runner doctor\n\
         jq -cn '[range(1; $n + 1)]' >> \"$GITHUB_OUTPUT\"",
    );
    let words: Vec<Vec<String>> = commands.into_iter().map(|(_, w)| w).collect();
    let expected: Vec<Vec<&str>> = vec![
        vec!["set", "+e"],
        vec!["command", "-v", "sdlc-runner"],
        vec![
            "sdlc-runner",
            "run",
            "--config",
            "a b.json",
            "--worker-id",
            "gha-${{ github.run_id }}-${{ matrix.runner }}",
        ],
        // `code=$?` (an assignment alone) and `fi` are no commands.
        vec!["echo", "sdlc-runner run"],
        vec!["jq", "-cn", "[range(1; $n + 1)]"],
    ];
    assert_eq!(words, expected);
    assert_eq!(
        tokenize("k8s-$(JOB_NAME)-$(JOB_COMPLETION_INDEX)"),
        vec![Token::Word(
            "k8s-$(JOB_NAME)-$(JOB_COMPLETION_INDEX)".into()
        )]
    );
}

// ---------------------------------------------------------------------------------------------
// Placeholders and the real CLI

/// Replaces every `${{ expr }}` and `$(VAR)` in `word` through `value`; panics naming a
/// placeholder it has no sample value for, so a new one in an example gets one here.
fn substitute(word: &str, value: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let (name, len) = if let Some(inner) = tail.strip_prefix("${{") {
            let end = inner.find("}}").expect("closed ${{");
            (inner[..end].trim(), 3 + end + 2)
        } else if let Some(inner) = tail.strip_prefix("$(") {
            let end = inner.find(')').expect("closed $(");
            (inner[..end].trim(), 2 + end + 1)
        } else {
            panic!("{word:?}: a shell variable in an sdlc-runner command line has no sample value in this test");
        };
        let v = value(name)
            .unwrap_or_else(|| panic!("{word:?}: no sample value for the placeholder {name:?}"));
        out.push_str(&v);
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

/// One `sdlc-runner` command line found in an example.
#[derive(Debug, Clone)]
struct Invocation {
    /// Where it was found, for messages.
    origin: String,
    /// The arguments after the program, placeholders unexpanded.
    args: Vec<String>,
}

impl Invocation {
    fn subcommand(&self) -> &str {
        self.args.first().map_or("", String::as_str)
    }

    fn option(&self, name: &str) -> Option<&str> {
        let at = self.args.iter().position(|a| a == name)?;
        self.args.get(at + 1).map(String::as_str)
    }

    /// Parses the command line with the placeholders replaced; `--version` and `--help` count
    /// as parsed.
    fn parse(&self, value: &dyn Fn(&str) -> Option<String>) -> Option<Cli> {
        let args: Vec<String> = self.args.iter().map(|a| substitute(a, value)).collect();
        let argv = std::iter::once("sdlc-runner".to_string()).chain(args.iter().cloned());
        match Cli::try_parse_from(argv) {
            Ok(cli) => Some(cli),
            Err(e)
                if matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayVersion | clap::error::ErrorKind::DisplayHelp
                ) =>
            {
                None
            }
            Err(e) => panic!(
                "{}: `sdlc-runner {}` is not a valid command line:\n{}",
                self.origin,
                args.join(" "),
                e.render()
            ),
        }
    }
}

fn is_sdlc_runner(program: &str) -> bool {
    Path::new(program).file_name().and_then(|n| n.to_str()) == Some("sdlc-runner")
}

fn invocations_in_script(origin: &str, script: &str) -> Vec<Invocation> {
    simple_commands(script)
        .into_iter()
        .filter(|(_, words)| is_sdlc_runner(&words[0]))
        .map(|(line, words)| Invocation {
            origin: format!("{origin}: {line}"),
            args: words[1..].to_vec(),
        })
        .collect()
}

/// The worker id of a parsed `run`, which must be set.
fn worker_id(invocation: &Invocation, cli: Option<Cli>) -> String {
    match cli.map(|c| c.command) {
        Some(Command::Run(args)) => args
            .worker_id
            .unwrap_or_else(|| panic!("{}: run without --worker-id", invocation.origin)),
        other => panic!("{}: not a run command: {other:?}", invocation.origin),
    }
}

/// Validates a config shipped with an example as if it were at `path`.
fn check_config(text: &str, path: &Path) {
    if let Err(e) = Config::from_str(text, path) {
        panic!("the example config {} is invalid: {e}", path.display());
    }
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions

#[test]
fn the_github_actions_workflow_runs_valid_commands_in_a_matrix_of_slots() {
    let (path, text) = example("github-actions/sdlc-runner.yml");
    let docs = yaml_documents(&path, &text);
    assert_eq!(docs.len(), 1, "one workflow document");
    let workflow = &docs[0];

    // YAML 1.1 readers take `on` for a boolean; this parser (YAML 1.2) keeps the string.
    let on = at(workflow, &["on"]);
    let schedule = seq(at(on, &["schedule"]));
    assert!(!schedule.is_empty(), "a schedule");
    for entry in schedule {
        let cron = string(at(entry, &["cron"]));
        assert_eq!(cron.split_whitespace().count(), 5, "cron {cron:?}");
    }
    let inputs = at(on, &["workflow_dispatch", "inputs"])
        .as_mapping()
        .expect("workflow_dispatch inputs");
    assert!(!inputs.is_empty(), "an input for the number of runners");

    let jobs = at(workflow, &["jobs"]).as_mapping().expect("jobs");
    let (job_name, job) = jobs
        .iter()
        .find(|(_, job)| job.get("strategy").and_then(|s| s.get("matrix")).is_some())
        .expect("a job with a matrix");
    let job_name = string(job_name);
    let matrix_runner = at(job, &["strategy", "matrix", "runner"]);
    // Either a literal list of slots or an expression that computes it (from the input).
    let slots: Vec<String> = match matrix_runner.as_sequence() {
        Some(list) => list
            .iter()
            .map(|v| match v {
                Value::Number(n) => n.to_string(),
                other => string(other).to_string(),
            })
            .collect(),
        None => {
            assert!(
                string(matrix_runner).contains("fromJSON("),
                "matrix.runner is a list or a fromJSON expression"
            );
            (1..=3).map(|n| n.to_string()).collect()
        }
    };
    assert!(slots.len() >= 2, "several slots: {slots:?}");
    assert_eq!(
        at(job, &["strategy", "fail-fast"]).as_bool(),
        Some(false),
        "one halted runner must not cancel the others"
    );

    // One concurrency group per repository and slot, never cancelling a running runner.
    let group = string(at(job, &["concurrency", "group"]));
    assert!(
        group.contains("${{ github.repository }}") && group.contains("${{ matrix.runner }}"),
        "concurrency group per repository and slot: {group}"
    );
    assert_eq!(
        at(job, &["concurrency", "cancel-in-progress"]).as_bool(),
        Some(false)
    );

    let steps = seq(at(job, &["steps"]));
    fn uses(step: &Value) -> &str {
        step.get("uses").and_then(Value::as_str).unwrap_or("")
    }
    let checkout = steps
        .iter()
        .find(|s| uses(s).starts_with("actions/checkout@"))
        .expect("a checkout step");
    assert_eq!(
        at(checkout, &["with", "fetch-depth"]).as_u64(),
        Some(0),
        "checkout with full history"
    );
    let upload = steps
        .iter()
        .find(|s| uses(s).starts_with("actions/upload-artifact@v4"))
        .expect("an upload-artifact@v4 step");
    assert_eq!(
        string(at(upload, &["if"])),
        "always()",
        "logs on failure too"
    );
    assert!(!string(at(upload, &["with", "path"])).trim().is_empty());
    assert!(
        string(at(upload, &["with", "name"])).contains("${{ matrix.runner }}"),
        "one artifact name per slot"
    );

    // Every sdlc-runner command line of every step, in order.
    let mut invocations = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        if let Some(script) = step.get("run") {
            let name = step.get("name").and_then(Value::as_str).unwrap_or("");
            let origin = format!("{} job {job_name} step {n} ({name})", path.display());
            invocations.extend(invocations_in_script(&origin, string(script)));
        }
    }
    let subcommands: Vec<&str> = invocations.iter().map(Invocation::subcommand).collect();
    for wanted in ["doctor", "run", "status"] {
        assert!(
            subcommands.contains(&wanted),
            "an `sdlc-runner {wanted}` in {subcommands:?}"
        );
    }
    let first = |name: &str| subcommands.iter().position(|s| *s == name).unwrap();
    assert!(first("doctor") < first("run"), "doctor before run");

    let mut worker_ids = BTreeSet::new();
    for slot in &slots {
        let value = |expr: &str| match expr {
            "github.run_id" => Some("14912345678".to_string()),
            "matrix.runner" => Some(slot.clone()),
            _ => None,
        };
        for invocation in &invocations {
            let cli = invocation.parse(&value);
            if invocation.subcommand() == "run" {
                let raw = invocation.option("--worker-id").unwrap_or("");
                assert!(
                    raw.contains("${{ matrix.runner }}") && raw.contains("${{ github.run_id }}"),
                    "{}: the worker id names the run and the slot",
                    invocation.origin
                );
                assert!(worker_ids.insert(worker_id(invocation, cli)));
            }
            if let Some(config) = invocation.option("--config") {
                assert_eq!(config, "sdlc-config.json", "{}", invocation.origin);
            }
        }
    }
    assert_eq!(
        worker_ids.len(),
        slots.len(),
        "every slot its own worker id"
    );

    // The config the workflow expects at the repository's top level.
    let (config_path, config) = example("github-actions/sdlc-config.json");
    check_config(&config, &config_path);
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

/// `command` followed by `args` of a container; a `sh -c SCRIPT` is split like a shell would.
fn container_invocations(origin: &str, container: &Value) -> Vec<Invocation> {
    let list = |key: &str| -> Vec<String> {
        container
            .get(key)
            .map(|v| seq(v).iter().map(|w| string(w).to_string()).collect())
            .unwrap_or_default()
    };
    let argv: Vec<String> = list("command").into_iter().chain(list("args")).collect();
    let Some(program) = argv.first() else {
        return Vec::new();
    };
    if matches!(program.as_str(), "sh" | "bash" | "/bin/sh" | "/bin/bash") {
        let script = argv
            .iter()
            .position(|a| a == "-c")
            .and_then(|at| argv.get(at + 1))
            .unwrap_or_else(|| panic!("{origin}: a shell without -c SCRIPT"));
        invocations_in_script(origin, script)
    } else if is_sdlc_runner(program) {
        vec![Invocation {
            origin: origin.to_string(),
            args: argv[1..].to_vec(),
        }]
    } else {
        Vec::new()
    }
}

/// The names in `$(NAME)` references of a word.
fn var_refs(word: &str) -> Vec<&str> {
    word.match_indices("$(")
        .filter_map(|(at, _)| {
            let rest = &word[at + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .collect()
}

#[test]
fn the_kubernetes_job_runs_k_runners_with_distinct_worker_ids() {
    let (path, text) = example("kubernetes/sdlc-runner-job.yaml");
    let docs = yaml_documents(&path, &text);
    let of_kind = |kind: &str| -> Vec<&Value> {
        docs.iter()
            .filter(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
            .collect()
    };
    let name = |doc: &Value| string(at(doc, &["metadata", "name"])).to_string();

    let secrets = of_kind("Secret");
    assert!(!secrets.is_empty(), "a Secret");
    let secret_names: BTreeSet<String> = secrets.iter().map(|s| name(s)).collect();
    for secret in &secrets {
        let data = at(secret, &["stringData"])
            .as_mapping()
            .expect("stringData");
        for key in ["ANTHROPIC_API_KEY", "GH_TOKEN"] {
            assert!(data.contains_key(key), "the Secret holds {key}");
        }
    }
    let config_maps = of_kind("ConfigMap");

    let jobs = of_kind("Job");
    assert_eq!(jobs.len(), 1, "one Job");
    let job = jobs[0];
    assert_eq!(string(at(job, &["apiVersion"])), "batch/v1");
    let spec = at(job, &["spec"]);
    assert_eq!(string(at(spec, &["completionMode"])), "Indexed");
    let completions = at(spec, &["completions"]).as_u64().expect("completions");
    assert!(completions >= 2, "several runners");
    assert_eq!(
        at(spec, &["parallelism"]).as_u64(),
        Some(completions),
        "every runner at once: parallelism == completions"
    );
    assert!(
        at(spec, &["backoffLimit"]).as_u64().is_some(),
        "a backoffLimit"
    );
    let pod = at(spec, &["template", "spec"]);
    assert_eq!(string(at(pod, &["restartPolicy"])), "Never");

    let init_containers = pod.get("initContainers").map(seq).unwrap_or_default();
    let containers = seq(at(pod, &["containers"]));
    let all: Vec<&Value> = init_containers.iter().chain(containers).collect();
    let container_names: BTreeSet<&str> = all.iter().map(|c| string(at(c, &["name"]))).collect();

    // Every Secret and ConfigMap referenced exists in this file.
    for container in &all {
        let cname = string(at(container, &["name"]));
        for env in container.get("env").map(seq).unwrap_or_default() {
            if let Some(secret) = env.get("valueFrom").and_then(|v| v.get("secretKeyRef")) {
                let secret_name = string(at(secret, &["name"]));
                assert!(
                    secret_names.contains(secret_name),
                    "{cname}: Secret {secret_name} is not in the file"
                );
                let key = string(at(secret, &["key"]));
                let holder = secrets.iter().find(|s| name(s) == secret_name).unwrap();
                assert!(
                    at(holder, &["stringData"]).get(key).is_some(),
                    "{cname}: Secret {secret_name} has no key {key}"
                );
            }
        }
        for from in container.get("envFrom").map(seq).unwrap_or_default() {
            if let Some(secret) = from.get("secretRef") {
                let secret_name = string(at(secret, &["name"]));
                assert!(
                    secret_names.contains(secret_name),
                    "{cname}: Secret {secret_name} is not in the file"
                );
            }
        }
    }
    for volume in pod.get("volumes").map(seq).unwrap_or_default() {
        if let Some(map) = volume.get("configMap") {
            let wanted = string(at(map, &["name"]));
            assert!(
                config_maps.iter().any(|c| name(c) == wanted),
                "ConfigMap {wanted} is not in the file"
            );
        }
    }
    // A failure policy naming a container that does not exist would never match.
    if let Some(policy) = spec.get("podFailurePolicy") {
        for rule in seq(at(policy, &["rules"])) {
            if let Some(cname) = rule.get("onExitCodes").and_then(|c| c.get("containerName")) {
                assert!(
                    container_names.contains(string(cname)),
                    "podFailurePolicy names {cname:?}"
                );
            }
        }
    }

    // The runners' command lines.
    let mut init_invocations = Vec::new();
    for c in init_containers {
        let origin = format!(
            "{} initContainer {}",
            path.display(),
            string(at(c, &["name"]))
        );
        init_invocations.extend(container_invocations(&origin, c));
    }
    let mut main_invocations = Vec::new();
    for c in containers {
        let origin = format!("{} container {}", path.display(), string(at(c, &["name"])));
        for invocation in container_invocations(&origin, c) {
            // Kubernetes expands $(VAR) from the container's own variables; an unknown one stays
            // as written. JOB_COMPLETION_INDEX is set by Kubernetes in an Indexed Job.
            let defined: BTreeSet<&str> = c
                .get("env")
                .map(seq)
                .unwrap_or_default()
                .iter()
                .map(|e| string(at(e, &["name"])))
                .chain(["JOB_COMPLETION_INDEX"])
                .collect();
            for arg in &invocation.args {
                for var in var_refs(arg) {
                    assert!(
                        defined.contains(var),
                        "{origin}: $({var}) is not a variable of the container"
                    );
                }
            }
            main_invocations.push(invocation);
        }
    }
    assert!(
        init_invocations
            .iter()
            .chain(&main_invocations)
            .any(|i| i.subcommand() == "doctor"),
        "sdlc-runner doctor"
    );
    let runs: Vec<&Invocation> = main_invocations
        .iter()
        .filter(|i| i.subcommand() == "run")
        .collect();
    assert_eq!(runs.len(), 1, "one sdlc-runner run in the Job's containers");
    let run = runs[0];
    let raw_id = run.option("--worker-id").expect("--worker-id");
    assert!(
        raw_id.contains("$(JOB_COMPLETION_INDEX)"),
        "worker id {raw_id:?} names the index"
    );
    assert!(
        !init_invocations.iter().any(|i| i.subcommand() == "run"),
        "run is the main container's"
    );

    let mut worker_ids = BTreeSet::new();
    for index in 0..completions {
        let value = |var: &str| match var {
            "JOB_COMPLETION_INDEX" => Some(index.to_string()),
            "JOB_NAME" => Some("sdlc-runner".to_string()),
            _ => None,
        };
        for invocation in init_invocations.iter().chain(&main_invocations) {
            let cli = invocation.parse(&value);
            if invocation.subcommand() == "run" {
                worker_ids.insert(worker_id(invocation, cli));
            }
        }
    }
    assert_eq!(
        worker_ids.len() as u64,
        completions,
        "every index its own worker id: {worker_ids:?}"
    );

    // The config every command reads comes from the ConfigMap, mounted where they look.
    let config_file = run.option("--config").expect("--config");
    let mounted = containers
        .iter()
        .flat_map(|c| c.get("volumeMounts").map(seq).unwrap_or_default());
    let volumes = pod.get("volumes").map(seq).unwrap_or_default();
    let mut found = false;
    for mount in mounted {
        let dir = string(at(mount, &["mountPath"]));
        let Some(file) = Path::new(config_file).strip_prefix(dir).ok() else {
            continue;
        };
        let volume = volumes
            .iter()
            .find(|v| v.get("name") == mount.get("name"))
            .expect("the mounted volume");
        let map_name = string(at(volume, &["configMap", "name"]));
        let map = config_maps.iter().find(|c| name(c) == map_name).unwrap();
        let key = file.to_str().unwrap();
        let config = string(at(map, &["data", key]));
        check_config(config, Path::new(config_file));
        found = true;
    }
    assert!(found, "{config_file} is a ConfigMap's file");
}
