//! The status page: one HTML document with its styles, script and the machine's overview
//! diagram inlined, all compiled into the binary (nothing is fetched from elsewhere).

use std::sync::OnceLock;

const TEMPLATE: &str = include_str!("assets/index.html");
const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/app.js");
/// Written by `sdlc-runner diagram` from the executable machine; `diagram --check` keeps it
/// fresh.
const DIAGRAM: &str = include_str!("../../state-diagrams/overview-page.svg");

pub fn html() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        TEMPLATE
            .replacen("/*STYLE*/", STYLE, 1)
            .replacen("/*SCRIPT*/", SCRIPT, 1)
            .replacen("<!--DIAGRAM-->", DIAGRAM, 1)
    })
}
