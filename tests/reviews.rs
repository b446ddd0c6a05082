//! PR reviews on the local forge, end to end: the real binary, a real git project, the local
//! tracker and a person speaking through `sdlc-runner review N`.

mod e2e;

use e2e::{code, text, Project};
use serde_json::json;

#[test]
fn review_stores_each_verdict_beside_the_tracker_with_its_author_id_and_time() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let out = p.review(
        1,
        &["--request-changes", "Rename foo to bar.", "--author", "ann"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("local-1-1 on issue #1: ann asked for changes"),
        "{}",
        text(&out)
    );
    let out = p.review(1, &["--comment", "Also the docs.", "--author", "bob"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = p.review(1, &["--approve", "--author", "ann"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let reviews = p.reviews(1)["reviews"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let seen: Vec<(&str, &str, &str, &str)> = reviews
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap_or(""),
                r["author"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or(""),
                r["body"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("local-1-1", "ann", "requestChanges", "Rename foo to bar."),
            ("local-1-2", "bob", "comment", "Also the docs."),
            ("local-1-3", "ann", "approve", ""),
        ]
    );
    assert!(
        reviews
            .iter()
            .all(|r| r["time"].as_str().is_some_and(|t| t.starts_with("20"))),
        "{reviews:?}"
    );
    // The tracker still reads its issues: the reviews directory is no issue file.
    let list = p
        .command(&["issue", "list", "--config", p.config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&list), 0, "{}", text(&list));
}

#[test]
fn review_of_an_issue_the_tracker_lacks_or_without_a_verdict_is_refused() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let out = p.review(7, &["--approve"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("#7") || text(&out).contains('7'),
        "{}",
        text(&out)
    );
    assert_eq!(p.reviews(7), serde_json::Value::Null);
    let out = p.review(1, &[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    let out = p.review(1, &["--approve", "--comment", "x"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
}
