//! Issue selection and the durable escalation mark, against a real directory of issue files
//! and against a fake `gh` (a bash script in a temp dir that serves canned JSON and records
//! every call).

use sdlc_runner::ports::TrackerPort;
use sdlc_runner::services::github::GitHub;
use sdlc_runner::services::local::Local;
use sdlc_runner::tracker::{Selection, Traced, TrackerError};
use serde_json::json;
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn none() -> BTreeSet<u32> {
    BTreeSet::new()
}

fn selected(s: Selection) -> u32 {
    match s {
        Selection::Issue(i) => i.number,
        other => panic!("expected an issue, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Local tracker

struct Dir {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

fn issues(list: &[serde_json::Value]) -> (Dir, Traced<Local>) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("issues");
    fs::create_dir(&path).unwrap();
    for v in list {
        let n = v["number"].as_u64().unwrap();
        fs::write(
            path.join(format!("{n}.json")),
            serde_json::to_string_pretty(v).unwrap(),
        )
        .unwrap();
    }
    let tracker = Traced::new("local", Local::new(&path));
    (Dir { _tmp: tmp, path }, tracker)
}

fn local(number: u32, milestone: Option<&str>, body: &str) -> serde_json::Value {
    json!({"number": number, "title": format!("Issue {number}"), "body": body, "state": "open",
           "labels": ["automatable"], "milestone": milestone, "escalated": false, "escalation": null})
}

fn with(mut v: serde_json::Value, key: &str, value: serde_json::Value) -> serde_json::Value {
    v[key] = value;
    v
}

#[test]
fn local_first_milestone_with_work_wins_and_lowest_number_in_it() {
    let (_d, t) = issues(&[
        local(1, Some("v2"), ""),
        local(3, Some("v1"), ""),
        local(2, Some("v1"), ""),
        local(4, None, ""),
        // An open milestone holding only non-automatable work does not stall selection.
        with(local(5, Some("v0"), ""), "labels", json!(["question"])),
        // Closed issues do not make a milestone open.
        with(local(6, Some("a-closed"), ""), "state", json!("closed")),
    ]);
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 2);
    let session: BTreeSet<u32> = [2, 3].into();
    // v1 is exhausted by this session's escalations: the next milestone is used.
    assert_eq!(selected(t.select(&session, &none()).unwrap()), 1);
    let session: BTreeSet<u32> = [1, 2, 3].into();
    assert_eq!(selected(t.select(&session, &none()).unwrap()), 4);
}

#[test]
fn local_dependencies_inside_the_milestone_must_be_closed() {
    let (_d, t) = issues(&[
        local(9, Some("m"), "Depends on: #12"),
        local(10, Some("m"), "Needs the schema.\nDepends on: #11"),
        with(local(11, Some("m"), ""), "state", json!("closed")),
        with(local(12, Some("m"), ""), "labels", json!([])),
        local(13, Some("m"), "Blocks: #20\nDepends on: #404"),
        local(20, Some("other"), ""),
        with(local(14, Some("m"), ""), "parent", json!(15)),
        with(local(15, Some("m"), ""), "labels", json!(["epic"])),
    ]);
    // #9 waits for the open #12; #10's dependency is closed.
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 10);
    t.close(10, "merged by sdlc-runner").unwrap();
    // #13 depends on an issue of another milestone and on a number that does not exist.
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 13);
    t.close(13, "merged").unwrap();
    // #14's parent #15 is open in the milestone; #9 still waits for #12.
    assert_eq!(
        t.select(&none(), &none()).unwrap(),
        Selection::AllBlocked {
            numbers: vec![9, 14]
        }
    );
    t.close(12, "done by hand").unwrap();
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 9);
}

#[test]
fn local_mutual_dependencies_are_all_blocked() {
    let (_d, t) = issues(&[
        local(1, None, "Depends on: #2"),
        local(2, None, "depends on: #1"),
    ]);
    assert_eq!(
        t.select(&none(), &none()).unwrap(),
        Selection::AllBlocked {
            numbers: vec![1, 2]
        }
    );
}

#[test]
fn local_escalated_issues_are_excluded_durably() {
    let (d, t) = issues(&[
        local(1, None, ""),
        with(local(2, None, ""), "escalated", json!(true)),
        with(
            local(3, None, ""),
            "labels",
            json!(["automatable", "sdlc-escalated"]),
        ),
    ]);
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 1);
    let session: BTreeSet<u32> = [1].into();
    assert_eq!(
        t.select(&session, &none()).unwrap(),
        Selection::AllEscalated {
            numbers: vec![1, 2, 3]
        }
    );

    t.mark_escalated(
        1,
        "FAILURE LOOP DETECTED: bounce loop\nGITHUB_TOKEN=ghp_abcdefghijklmnop123",
    )
    .unwrap();
    // A later session (empty session set) still skips it.
    assert_eq!(
        t.select(&none(), &none()).unwrap(),
        Selection::AllEscalated {
            numbers: vec![1, 2, 3]
        }
    );
    let raw: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.path.join("1.json")).unwrap()).unwrap();
    assert_eq!(raw["escalated"], true);
    let text = raw["escalation"].as_str().unwrap();
    assert!(
        text.contains("FAILURE LOOP DETECTED: bounce loop"),
        "{text}"
    );
    assert!(
        text.contains("GITHUB_TOKEN=***") && !text.contains("ghp_abc"),
        "{text}"
    );
    assert!(text.contains("\"escalated\" to false"), "{text}");
    assert!(t.get(1).unwrap().escalated);

    // A person lifts the quarantine by editing the file.
    let mut edited = raw.clone();
    edited["escalated"] = json!(false);
    fs::write(d.path.join("1.json"), edited.to_string()).unwrap();
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 1);
}

/// An escalation note quotes agent output: its escape sequences and carriage returns reach the
/// tracker escaped, its line breaks stay.
#[test]
fn control_characters_reach_the_tracker_escaped() {
    let (d, t) = issues(&[local(1, None, "")]);
    t.mark_escalated(1, "verify failed\nerror: \x1b[31mred\x1b[0m\rover")
        .unwrap();
    t.close(1, "merged \x1b]0;title\x07").unwrap();
    let raw: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.path.join("1.json")).unwrap()).unwrap();
    let note = raw["escalation"].as_str().unwrap();
    assert!(
        note.contains("verify failed\nerror: \\x1b[31mred\\x1b[0m\\rover"),
        "{note:?}"
    );
    assert_eq!(raw["resolution"], "merged \\x1b]0;title\\x07");
}

#[test]
fn local_nothing_to_do() {
    let (_d, t) = issues(&[]);
    assert_eq!(t.select(&none(), &none()).unwrap(), Selection::NoIssues);
    let (_d, t) = issues(&[
        with(local(1, None, ""), "state", json!("closed")),
        with(local(2, Some("m"), ""), "labels", json!(["bug"])),
    ]);
    assert_eq!(t.select(&none(), &none()).unwrap(), Selection::NoIssues);
}

#[test]
fn local_configurable_label() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("1.json"),
        json!({"number": 1, "title": "t", "state": "open", "labels": ["robot"]}).to_string(),
    )
    .unwrap();
    let mut l = Local::new(tmp.path());
    assert_eq!(
        Traced::new("local", l.clone())
            .select(&none(), &none())
            .unwrap(),
        Selection::NoIssues
    );
    l.label = "robot".into();
    assert_eq!(
        selected(Traced::new("local", l).select(&none(), &none()).unwrap()),
        1
    );
}

#[test]
fn local_malformed_files_are_named() {
    let (d, t) = issues(&[local(1, None, "")]);
    fs::write(d.path.join("README.md"), "not an issue").unwrap();
    fs::create_dir(d.path.join("attachments.json")).unwrap();
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 1);

    fs::write(d.path.join("2.json"), "{\"number\": 2, \"title\": ").unwrap();
    let err = t.select(&none(), &none()).unwrap_err().to_string();
    assert!(
        err.contains("2.json") && err.contains("not a valid issue"),
        "{err}"
    );

    fs::write(
        d.path.join("2.json"),
        json!({"number": 2, "title": "x", "state": "maybe"}).to_string(),
    )
    .unwrap();
    let err = t.select(&none(), &none()).unwrap_err().to_string();
    assert!(err.contains("2.json") && err.contains("maybe"), "{err}");

    fs::write(
        d.path.join("2.json"),
        json!({"number": 3, "title": "x", "state": "open"}).to_string(),
    )
    .unwrap();
    let err = t.select(&none(), &none()).unwrap_err().to_string();
    assert!(
        err.contains("2.json") && err.contains("file name says 2"),
        "{err}"
    );

    fs::remove_file(d.path.join("2.json")).unwrap();
    fs::write(d.path.join("notes.json"), "{}").unwrap();
    let err = t.select(&none(), &none()).unwrap_err().to_string();
    assert!(
        err.contains("notes.json") && err.contains("<issue number>.json"),
        "{err}"
    );

    let missing = Traced::new("local", Local::new(d.path.join("nope")));
    let err = missing.select(&none(), &none()).unwrap_err();
    assert!(matches!(err, TrackerError::Dir { .. }), "{err}");
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn local_close_roundtrip_keeps_unknown_keys_and_writes_atomically() {
    let (d, t) = issues(&[with(
        local(7, Some("m"), "body"),
        "estimate",
        json!({"points": 3}),
    )]);
    let before = t.get(7).unwrap();
    assert!(before.state_open);
    assert_eq!(before.branch(), "7-issue-7");
    t.close(7, "merged in abc123").unwrap();
    let after = t.get(7).unwrap();
    assert!(!after.state_open);
    assert_eq!(after.title, before.title);
    assert_eq!(after.milestone.as_deref(), Some("m"));
    let raw: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.path.join("7.json")).unwrap()).unwrap();
    assert_eq!(raw["state"], "closed");
    assert_eq!(raw["resolution"], "merged in abc123");
    assert_eq!(raw["estimate"], json!({"points": 3}));
    let names: Vec<String> = fs::read_dir(&d.path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["7.json".to_string()]);

    assert!(matches!(
        t.get(8),
        Err(TrackerError::NotFound { number: 8, .. })
    ));
    assert!(matches!(t.close(8, ""), Err(TrackerError::NotFound { .. })));
    assert!(matches!(
        t.mark_escalated(8, ""),
        Err(TrackerError::NotFound { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// GitHub tracker with a fake gh

/// A fake `gh` answering GitHub's REST API as `gh api --include` prints it: serves
/// `<data>/milestones.json`, `open.json` (the open issues with a label), `milestone.json`
/// (every issue of a milestone), `view_<N>.json`; records each call in `<data>/calls` as
/// `<cwd>|<args>`. A label is known once it was created.
fn fake_gh(data: &Path) -> PathBuf {
    let script = format!(
        r#"#!/usr/bin/env bash
D='{d}'
echo "$(pwd)|$*" >> "$D/calls"
if [ -f "$D/fail" ]; then cat "$D/fail" >&2; exit 1; fi
case "$1 $2" in
  "api --include")
    method=GET; endpoint="$3"
    if [ "$3" = "-X" ]; then method="$4"; endpoint="$5"; fi
    # <data>/limit: the next call whose "METHOD endpoint" holds its words meets GitHub's
    # primary rate limit, once.
    if [ -f "$D/limit" ] && case "$method $endpoint" in *"$(cat "$D/limit")"*) true;; *) false;; esac; then
      rm "$D/limit"
      printf 'HTTP/2.0 403 Forbidden\r\nX-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: %s\r\n\r\n{{"message":"API rate limit exceeded for user ID 1."}}' "$(( $(date +%s) + 30 ))"
      echo 'gh: API rate limit exceeded for user ID 1. (HTTP 403)' >&2; exit 1
    fi
    ok() {{ printf 'HTTP/2.0 %s\r\nContent-Type: application/json\r\n\r\n' "$1"; }}
    case "$method $endpoint" in
      "GET repos/{{owner}}/{{repo}}/milestones"*) ok "200 OK"; cat "$D/milestones.json";;
      "GET repos/{{owner}}/{{repo}}/labels/"*)
        if [ -f "$D/label" ]; then ok "200 OK"; echo '{{"name":"x"}}';
        else ok "404 Not Found"; echo '{{"message":"Not Found"}}'; exit 1; fi;;
      "POST repos/{{owner}}/{{repo}}/labels") cat > "$D/label_created"; touch "$D/label"; ok "201 Created"; echo '{{}}';;
      "POST repos/{{owner}}/{{repo}}/issues/"*/labels) cat > "$D/labelled"; ok "200 OK"; echo '[]';;
      "DELETE repos/{{owner}}/{{repo}}/issues/"*/labels/*) ok "200 OK"; echo '[]';;
      "POST repos/{{owner}}/{{repo}}/issues/"*/comments) cat > "$D/comment.json"
        ok "201 Created"; echo '{{}}';;
      "PATCH repos/{{owner}}/{{repo}}/issues/"*) n="${{endpoint##*/}}"; cat > "$D/closed_$n"; ok "200 OK"; echo '{{}}';;
      "GET repos/{{owner}}/{{repo}}/issues?"*milestone=*) ok "200 OK"; cat "$D/milestone.json";;
      "GET repos/{{owner}}/{{repo}}/issues?"*) ok "200 OK"; cat "$D/open.json";;
      "GET repos/{{owner}}/{{repo}}/issues/"*/events*) ok "200 OK"
        echo '[{{"event":"labeled","label":{{"name":"automatable"}},"actor":{{"login":"owner"}},"created_at":"2026-01-01T00:00:00Z"}}]';;
      "GET repos/{{owner}}/{{repo}}/collaborators/"*/permission) ok "200 OK"; echo '{{"permission":"admin"}}';;
      "GET user") ok "200 OK"; echo '{{"login":"runner"}}';;
      "GET graphql") ok "200 OK"; echo '{{"data":{{"repository":{{"issue":{{"lastEditedAt":null,"editor":null}}}}}}}}';;
      "GET repos/{{owner}}/{{repo}}/issues/"*/comments*) ok "200 OK"
        if [ -f "$D/comment.json" ]; then printf '['; cat "$D/comment.json"; printf ']'; else echo '[]'; fi;;
      "GET repos/{{owner}}/{{repo}}/issues/"*)
        n="${{endpoint##*/}}"
        if [ -f "$D/view_$n.json" ]; then ok "200 OK"; cat "$D/view_$n.json";
        else ok "404 Not Found"; echo '{{"message":"Not Found"}}'; exit 1; fi;;
      *) echo "fake gh: unexpected $*" >&2; exit 2;;
    esac;;
  *) echo "fake gh: unexpected $*" >&2; exit 2;;
esac
"#,
        d = data.display()
    );
    let path = data.join("gh");
    fs::write(&path, script).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// An issue as GitHub's REST API answers it; its milestone's number is its sprint's.
fn gh_issue(n: u32, milestone: Option<&str>, labels: &[&str], body: &str) -> serde_json::Value {
    json!({
        "number": n, "title": format!("Issue {n}"), "body": body, "state": "open",
        "labels": labels.iter().map(|l| json!({"id": 1, "name": l, "color": "fff", "description": ""})).collect::<Vec<_>>(),
        "milestone": milestone.map(|m| json!({"number": m.trim_start_matches("Sprint ").parse::<u32>().unwrap_or(9), "title": m, "description": "", "due_on": null})),
        "state_reason": null,
        "parent_issue_url": null,
    })
}

struct FakeGh {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    repo: PathBuf,
    tracker: Traced<GitHub>,
}

impl FakeGh {
    fn new() -> FakeGh {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let repo = tmp.path().join("repo");
        fs::create_dir(&data).unwrap();
        fs::create_dir(&repo).unwrap();
        let mut gh = GitHub::new(&repo);
        gh.gh = fake_gh(&data);
        FakeGh {
            _tmp: tmp,
            data,
            repo,
            tracker: Traced::new("github", gh),
        }
    }

    fn put(&self, name: &str, value: &serde_json::Value) {
        fs::write(self.data.join(name), value.to_string()).unwrap();
    }

    fn calls(&self) -> Vec<String> {
        fs::read_to_string(self.data.join("calls"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let (cwd, args) = l.split_once('|').unwrap();
                assert_eq!(Path::new(cwd), self.repo, "gh must run in the project");
                args.to_string()
            })
            .collect()
    }
}

/// Sprint 1 holds #4 (escalated), #5 (depends on #1, closed as not planned) and #6
/// (Blocks: #2, completed; depends on #30 outside the milestone). Sprint 2 and the repo have
/// more work that must not be chosen first.
fn sprint_fixture(f: &FakeGh) {
    fs::write(
        f.data.join("milestones.json"),
        "[{\"number\":2,\"title\":\"Sprint 2\",\"open_issues\":1},{\"number\":1,\"title\":\"Sprint 1\",\"open_issues\":3}]",
    )
    .unwrap();
    let open = vec![
        gh_issue(5, Some("Sprint 1"), &["automatable"], "Depends on: #1"),
        gh_issue(4, Some("Sprint 1"), &["automatable", "sdlc-escalated"], ""),
        gh_issue(
            6,
            Some("Sprint 1"),
            &["automatable"],
            "Blocks: #2\r\nDepends on: #30",
        ),
        gh_issue(8, Some("Sprint 2"), &["automatable"], ""),
        gh_issue(9, None, &["automatable"], ""),
    ];
    let mut closed1 = gh_issue(1, Some("Sprint 1"), &[], "");
    closed1["state"] = json!("closed");
    closed1["state_reason"] = json!("not_planned");
    let mut closed2 = gh_issue(2, Some("Sprint 1"), &[], "");
    closed2["state"] = json!("closed");
    closed2["state_reason"] = json!("completed");
    // The issues' list holds pull requests too; they are never issues.
    let mut pull = gh_issue(3, Some("Sprint 1"), &["automatable"], "");
    pull["pull_request"] = json!({"url": "u"});
    let milestone = vec![
        closed1,
        closed2,
        open[0].clone(),
        open[1].clone(),
        open[2].clone(),
        pull.clone(),
    ];
    let mut listed = open.clone();
    listed.push(pull);
    f.put("open.json", &json!(listed));
    f.put("milestone.json", &json!(milestone));
}

#[test]
fn github_selects_in_the_first_milestone_honouring_issues_closed_as_not_planned() {
    let f = FakeGh::new();
    sprint_fixture(&f);
    // #5 waits: its dependency #1 was closed as not planned, not done.
    assert_eq!(selected(f.tracker.select(&none(), &none()).unwrap()), 6);
    let calls = f.calls();
    assert_eq!(
        calls,
        [
            // The candidates first: the open milestones are asked because some have one.
            "api --include repos/{owner}/{repo}/issues?state=open&labels=automatable&per_page=100&page=1",
            "api --include repos/{owner}/{repo}/milestones?state=open&per_page=100&page=1",
            "api --include repos/{owner}/{repo}/issues?state=all&milestone=1&per_page=100&page=1",
            // Who applied the chosen one's label (not the runner's own account), whether they
            // may write, and who edited it last.
            "api --include repos/{owner}/{repo}/issues/6/events?per_page=100&page=1",
            "api --include user",
            "api --include repos/{owner}/{repo}/collaborators/owner/permission",
            "api --include graphql -F owner={owner} -F repo={repo} -F number=6 -f query=query IssueLastEdit($owner: String!, $repo: String!, $number: Int!) { repository(owner: $owner, name: $repo) { issue(number: $number) { lastEditedAt editor { login } } } }",
        ]
    );

    let session: BTreeSet<u32> = [6].into();
    assert_eq!(
        f.tracker.select(&session, &none()).unwrap(),
        Selection::AllBlocked { numbers: vec![5] }
    );
}

#[test]
fn github_repo_wide_without_milestones_views_dependencies() {
    let f = FakeGh::new();
    fs::write(f.data.join("milestones.json"), "[]").unwrap();
    let mut open = vec![
        gh_issue(2, None, &["automatable"], "Depends on: #1"),
        gh_issue(3, None, &["automatable"], "Depends on: #99"),
        gh_issue(4, None, &["automatable"], ""),
    ];
    open[2]["parent_issue_url"] = json!("https://api.github.com/repos/o/r/issues/1");
    f.put("open.json", &json!(open));
    f.put("view_1.json", &gh_issue(1, None, &["question"], ""));
    // #2 waits for the open, non-automatable #1; #99 does not exist.
    assert_eq!(selected(f.tracker.select(&none(), &none()).unwrap()), 3);
    let calls = f.calls();
    assert!(
        calls
            .iter()
            .any(|c| c == "api --include repos/{owner}/{repo}/issues/1"),
        "{calls:?}"
    );
    assert!(
        calls
            .iter()
            .any(|c| c == "api --include repos/{owner}/{repo}/issues/99"),
        "{calls:?}"
    );

    let session: BTreeSet<u32> = [3].into();
    assert_eq!(
        f.tracker.select(&session, &none()).unwrap(),
        Selection::AllBlocked {
            numbers: vec![2, 4]
        }
    );
    // No automatable issue open at all.
    f.put("open.json", &json!([]));
    assert_eq!(
        f.tracker.select(&none(), &none()).unwrap(),
        Selection::NoIssues
    );
}

#[test]
fn github_get_maps_fields() {
    let f = FakeGh::new();
    let mut v = gh_issue(
        12,
        Some("M"),
        &["automatable", "sdlc-escalated"],
        "Depends on: #3",
    );
    v["parent_issue_url"] = json!("https://api.github.com/repos/o/r/issues/2");
    v["state_reason"] = json!("not_planned");
    v["state"] = json!("closed");
    f.put("view_12.json", &v);
    let i = f.tracker.get(12).unwrap();
    assert_eq!(i.number, 12);
    assert_eq!(i.milestone.as_deref(), Some("M"));
    assert!(i.escalated && !i.state_open);
    assert_eq!(i.parent, Some(2));
    assert_eq!(i.closed_by_merged_pr, Some(false));
    assert_eq!(i.dependencies(), vec![2, 3]);
    assert!(matches!(
        f.tracker.get(77),
        Err(TrackerError::NotFound { number: 77, .. })
    ));
}

#[test]
fn github_mark_escalated_creates_the_label_and_comments() {
    let f = FakeGh::new();
    f.tracker
        .mark_escalated(
            7,
            "FAILURE LOOP DETECTED: consecutive escalations\nkey sk-ant-api03-secretsecret",
        )
        .unwrap();
    let calls = f.calls();
    assert_eq!(
        calls,
        vec![
            "api --include repos/{owner}/{repo}/labels/sdlc-escalated",
            "api --include -X POST repos/{owner}/{repo}/labels --input -",
            "api --include -X POST repos/{owner}/{repo}/issues/7/labels --input -",
            "api --include repos/{owner}/{repo}/issues/7/comments?per_page=100&page=1",
            "api --include -X POST repos/{owner}/{repo}/issues/7/comments --input -",
        ]
    );
    let created: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(f.data.join("label_created")).unwrap()).unwrap();
    assert_eq!(
        created,
        json!({"name": "sdlc-escalated", "color": "B60205",
            "description": "sdlc-runner gave up on this issue; remove the label to let it run again"})
    );
    let labelled: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(f.data.join("labelled")).unwrap()).unwrap();
    assert_eq!(labelled, json!({"labels": ["sdlc-escalated"]}));
    let comment = comment_body(&f.data);
    assert!(
        comment.contains("FAILURE LOOP DETECTED: consecutive escalations"),
        "{comment}"
    );
    assert!(
        comment.contains("sk-ant-***") && !comment.contains("secretsecret"),
        "{comment}"
    );
    assert!(
        comment.contains("`sdlc-runner release 7` (or remove the `sdlc-escalated` label)"),
        "{comment}"
    );
    // GitHub closed the issue through the merged PR: close only reads it back.
    let mut closed = gh_issue(7, None, &["automatable"], "");
    closed["state"] = json!("closed");
    f.put("view_7.json", &closed);
    let before = f.calls().len();
    f.tracker.close(7, "merged by sdlc-runner").unwrap();
    let calls = f.calls();
    assert_eq!(
        calls[before..],
        ["api --include repos/{owner}/{repo}/issues/7"],
        "only the issue is read"
    );
    assert!(!f.data.join("closed_7").exists());
    // GitHub left it open (the token cannot write issues, the base is not the default
    // branch): the runner says why and closes it.
    f.put("view_7.json", &gh_issue(7, None, &["automatable"], ""));
    f.tracker.close(7, "merged by sdlc-runner").unwrap();
    let closed: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(f.data.join("closed_7")).unwrap()).unwrap();
    assert_eq!(closed["state"], "closed", "{:?}", f.calls());
    let comment = comment_body(&f.data);
    assert!(comment.contains("left the issue open"), "{comment}");
    // The same close asked again (a rate limit refused the close after the comment): the
    // newest comment already says it, so only the close is sent.
    let before = f.calls().len();
    f.tracker.close(7, "merged by sdlc-runner").unwrap();
    let again = &f.calls()[before..];
    assert!(
        again.iter().all(|c| !c.contains("-X POST")),
        "nothing said twice: {again:?}"
    );
    assert!(again.iter().any(|c| c.contains("-X PATCH")), "{again:?}");
}

#[test]
fn github_errors_name_the_command_and_stderr() {
    let f = FakeGh::new();
    fs::write(
        f.data.join("fail"),
        "HTTP 401: Bad credentials (https://api.github.com/graphql)\n",
    )
    .unwrap();
    let err = f.tracker.select(&none(), &none()).unwrap_err().to_string();
    assert!(
        err.contains("api --include repos/{owner}/{repo}/issues?state=open"),
        "{err}"
    );
    assert!(
        err.contains("exit code 1") && err.contains("Bad credentials"),
        "{err}"
    );

    fs::remove_file(f.data.join("fail")).unwrap();
    fs::write(f.data.join("milestones.json"), "[]").unwrap();
    fs::write(f.data.join("open.json"), "<html>rate limited</html>").unwrap();
    let err = f.tracker.select(&none(), &none()).unwrap_err().to_string();
    assert!(
        err.contains("issues?state=open") && err.contains("not the expected JSON"),
        "{err}"
    );

    let mut gh = GitHub::new(&f.repo);
    gh.gh = f.data.join("no-such-gh");
    let err = Traced::new("github", gh)
        .select(&none(), &none())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no-such-gh") && err.contains("install the GitHub CLI"),
        "{err}"
    );
}

#[test]
fn local_create_numbers_files_and_release_and_reopen_undo_the_runners_marks() {
    let tmp = tempfile::tempdir().unwrap();
    let l = Local::new(tmp.path());
    fs::write(
        tmp.path().join("4.json"),
        json!({"number": 4, "title": "t", "state": "open", "custom": 1}).to_string(),
    )
    .unwrap();
    let n = l.create("New one", "", &["automatable".into()]).unwrap();
    assert_eq!(n, 5, "one more than the highest file");
    let tracker = Traced::new("local", l.clone());
    assert_eq!(selected(tracker.select(&none(), &none()).unwrap()), 5);
    let mut labelled = l.clone();
    labelled.escalated_label = "stuck".into();
    labelled.mark_escalated(5, "boom").unwrap();
    assert!(labelled.get(5).unwrap().escalated);
    assert!(labelled.lift_quarantine(5).unwrap());
    assert!(!labelled.get(5).unwrap().escalated);
    assert!(
        !labelled.lift_quarantine(5).unwrap(),
        "nothing left to lift"
    );
    l.close(5, "merged").unwrap();
    assert!(l.reopen(5).unwrap());
    assert!(l.get(5).unwrap().state_open);
    let kept: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("4.json")).unwrap()).unwrap();
    assert_eq!(kept["custom"], 1);
}

#[test]
fn github_release_removes_the_escalated_label_only_when_it_is_there() {
    let f = FakeGh::new();
    fs::write(f.data.join("label"), "").unwrap();
    f.put(
        "view_7.json",
        &gh_issue(7, None, &["automatable", "sdlc-escalated"], ""),
    );
    assert!(f.tracker.lift_quarantine(7).unwrap());
    let calls = f.calls();
    assert_eq!(
        calls,
        [
            "api --include repos/{owner}/{repo}/issues/7",
            "api --include -X DELETE repos/{owner}/{repo}/issues/7/labels/sdlc-escalated"
        ]
    );
    f.put("view_8.json", &gh_issue(8, None, &["automatable"], ""));
    assert!(!f.tracker.lift_quarantine(8).unwrap());
    assert_eq!(f.calls().len(), 3, "nothing to remove: no edit");
}

#[test]
fn local_unquarantine_lifts_the_runners_mark_and_says_why() {
    let (d, t) = issues(&[with(
        local(1, None, ""),
        "labels",
        json!(["automatable", "sdlc-escalated"]),
    )]);
    t.mark_escalated(1, "POST_CHECK at commitPush").unwrap();
    assert!(t.get(1).unwrap().escalated);
    t.unquarantine(1, "the same failure ended issue #2 too\x1b[31m")
        .unwrap();
    let issue = t.get(1).unwrap();
    assert!(!issue.escalated, "{issue:?}");
    assert!(!issue.labels.iter().any(|l| l == "sdlc-escalated"));
    assert_eq!(selected(t.select(&none(), &none()).unwrap()), 1);
    let raw: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.path.join("1.json")).unwrap()).unwrap();
    assert_eq!(raw["escalation"], serde_json::Value::Null);
    let why = raw["released"].as_str().unwrap();
    assert!(why.contains("ended issue #2 too"), "{why}");
    assert!(!why.contains('\x1b'), "control characters escaped: {why:?}");
}

#[test]
fn github_unquarantine_removes_the_label_and_comments_why() {
    let f = FakeGh::new();
    // The runner marked the issue before: the repository has the label.
    fs::write(f.data.join("label"), "").unwrap();
    f.tracker
        .unquarantine(7, "the same failure ended issue #8 too")
        .unwrap();
    assert_eq!(
        f.calls(),
        vec![
            "api --include -X DELETE repos/{owner}/{repo}/issues/7/labels/sdlc-escalated",
            "api --include repos/{owner}/{repo}/issues/7/comments?per_page=100&page=1",
            "api --include -X POST repos/{owner}/{repo}/issues/7/comments --input -",
        ]
    );
    let comment = comment_body(&f.data);
    assert!(comment.contains("ended issue #8 too"), "{comment}");
}

/// Every write of the GitHub tracker (the label, its creation, the comment, the close, the
/// read before the close, the label's removal) that meets GitHub's rate limit fails as a rate
/// limit with the time until it lifts, told from the answer's status and headers, so the
/// machine waits it out instead of halting on a refused write.
#[test]
fn github_tracker_writes_that_meet_the_rate_limit_say_so_with_the_wait() {
    use sdlc_runner::call_failure::{CallFailureKind, Kinded};
    let f = FakeGh::new();
    f.put("view_7.json", &gh_issue(7, None, &["automatable"], ""));
    let limited = |e: TrackerError| match e.kind() {
        CallFailureKind::RateLimited { wait_secs } => (1..=31).contains(&wait_secs),
        _ => false,
    };
    type Write<'a> = &'a dyn Fn() -> Result<(), TrackerError>;
    let writes: [(&str, Write); 6] = [
        ("GET repos/{owner}/{repo}/labels/", &|| {
            f.tracker.mark_escalated(7, "x")
        }),
        ("POST repos/{owner}/{repo}/labels", &|| {
            f.tracker.mark_escalated(7, "x")
        }),
        ("/issues/7/comments", &|| f.tracker.mark_escalated(7, "x")),
        ("GET repos/{owner}/{repo}/issues/7", &|| {
            f.tracker.close(7, "merged")
        }),
        ("PATCH", &|| f.tracker.close(7, "merged")),
        ("DELETE", &|| f.tracker.unquarantine(7, "lifted")),
    ];
    for (words, write) in writes {
        let _ = fs::remove_file(f.data.join("label"));
        fs::write(f.data.join("limit"), words).unwrap();
        let e = write().expect_err(words);
        let shown = e.to_string();
        assert!(limited(e), "{words}: {shown}");
        assert!(shown.contains("HTTP 403"), "{shown}");
        assert!(!f.data.join("limit").exists(), "{words} was asked");
        write().unwrap_or_else(|e| panic!("{words}: once lifted: {e}"));
    }
}

/// The body of the last comment the fake gh was given (`POST …/comments`, a JSON object).
fn comment_body(data: &Path) -> String {
    let json = fs::read_to_string(data.join("comment.json")).expect("a comment was written");
    let value: serde_json::Value = serde_json::from_str(&json).expect("the comment is JSON");
    value["body"].as_str().expect("a body").to_string()
}
