//! The status page: one HTML document with its styles, script and the machine's overview
//! diagram inlined, all compiled into the binary (nothing is fetched from elsewhere).

use std::sync::OnceLock;

const TEMPLATE: &str = include_str!("assets/index.html");
const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/app.js");
/// Written by `sdlc-runner diagram` from the executable machine; `diagram --check` keeps it
/// fresh.
const DIAGRAM: &str = include_str!("../../state-diagrams/overview-page.svg");

/// The step keys in lifecycle order, as a JavaScript list's items: the page shows counters
/// by step in the order the steps run (the status document's objects have no order).
fn steps() -> String {
    crate::step::Step::ALL
        .iter()
        .map(|s| format!("\"{}\"", s.key()))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn html() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        TEMPLATE
            .replacen("/*STYLE*/", STYLE, 1)
            .replacen("/*SCRIPT*/", &SCRIPT.replacen("/*STEPS*/", &steps(), 1), 1)
            .replacen("<!--DIAGRAM-->", DIAGRAM, 1)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_knows_the_steps_in_lifecycle_order() {
        let page = super::html();
        assert!(
            page.contains(r#"const STEPS = ["startCycle", "startIssue", "#),
            "the step order is not in the page's script"
        );
        assert!(!page.contains("/*STEPS*/"));
    }

    #[test]
    fn the_page_shows_the_merge_train_from_the_status_document() {
        let page = super::html();
        for part in [
            r#"<section id="train" hidden>"#,
            r#"<tbody id="train-cars">"#,
            "train(st.train);",
            "c.waitingSeconds",
            "c.verdict",
            "t.runs",
        ] {
            assert!(page.contains(part), "{part} is not in the page");
        }
    }

    #[test]
    fn the_page_shows_githubs_requests_by_the_names_the_status_document_gives_them() {
        let page = super::html();
        let g = crate::stats::GithubRequests {
            requests: 3,
            not_modified: 1,
            rate_limit_remaining: Some(4977),
        };
        let named = serde_json::to_value(g).expect("json");
        let keys = named
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>());
        for key in keys.unwrap_or_default() {
            assert!(
                page.contains(&format!("g.{key}")),
                "the page does not show {key}"
            );
        }
        for part in [
            r#"<div id="github" class="muted" hidden>"#,
            "github(st.github);",
        ] {
            assert!(page.contains(part), "{part} is not in the page");
        }
    }
}
