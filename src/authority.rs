//! Who steers the merge and the agent (docs/security.md, "Who steers the agent and the
//! merge"). On a public repository anyone can review, comment or label; only the words and
//! decisions of people with write access count: a review, an approval, a request for changes
//! or a comment holds or permits the merge, or reaches the agent, only when its author may
//! write to the repository (GitHub: `author_association` OWNER, MEMBER or COLLABORATOR, or a
//! collaborator permission admin, maintain or write; GitLab: access level Developer (30) or
//! more). `review.trustedAuthors` admits named bots or outside reviewers; `review.ignoreAuthors`
//! leaves its authors out whatever their rights. The rule is [`judge`]; the log says once per
//! author and run why one was left out ([`say_left_out`]).

use std::collections::BTreeSet;
use std::sync::Mutex;

/// GitLab's Developer access level: the least that may push to a branch.
pub const DEVELOPER: u64 = 30;

/// What the forge says of an author's rights on the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing<'a> {
    /// GitHub's `author_association` of a review or comment (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIMER`, `FIRST_TIME_CONTRIBUTOR`, `MANNEQUIN`,
    /// `NONE`); empty when the answer names none.
    Association(&'a str),
    /// GitHub's collaborator permission (`admin`, `maintain`, `write`, `triage`, `read`,
    /// `none`).
    Permission(&'a str),
    /// GitLab's access level of the author in the project, inherited ones included; `None`:
    /// no member.
    AccessLevel(Option<u64>),
}

/// The operator's lists: `review.trustedAuthors` and `review.ignoreAuthors`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authority {
    /// Counted whatever the forge says of their rights.
    pub trusted: Vec<String>,
    /// Never counted, whatever their rights (the runner's own account is left out apart).
    pub ignored: Vec<String>,
}

/// Whether an author's words count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// They count: the author has write access, or is listed in `review.trustedAuthors`.
    Counts,
    /// Listed in `review.ignoreAuthors`: left out, as the operator asked (nothing to say).
    Ignored,
    /// Left out for want of authority; the reason, for the log.
    LeftOut(String),
}

impl Verdict {
    /// Whether the words count.
    pub fn counts(&self) -> bool {
        *self == Verdict::Counts
    }
}

/// GitHub's associations of an author with write access to the repository.
const WRITE_ASSOCIATIONS: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];
/// GitHub's collaborator permissions that may write.
const WRITE_PERMISSIONS: [&str; 3] = ["admin", "maintain", "write"];

/// GitLab's name of an access level.
fn level_name(level: u64) -> &'static str {
    match level {
        0 => "No access",
        5 => "Minimal access",
        10 => "Guest",
        15 => "Planner",
        20 => "Reporter",
        30 => "Developer",
        40 => "Maintainer",
        50 => "Owner",
        _ => "custom",
    }
}

/// Whether `author`'s words count, given what the forge says of their rights and the
/// operator's lists. `ignoreAuthors` wins over everything (a login in both lists is refused
/// by the config's check); `trustedAuthors` over the forge's word. Logins compare without
/// regard to case, as GitHub's and GitLab's do. An author without a login never counts.
pub fn judge(author: &str, standing: Standing<'_>, authority: &Authority) -> Verdict {
    let named = |list: &[String]| list.iter().any(|a| a.eq_ignore_ascii_case(author));
    if author.is_empty() {
        return Verdict::LeftOut("the forge names no author".into());
    }
    if named(&authority.ignored) {
        return Verdict::Ignored;
    }
    if named(&authority.trusted) {
        return Verdict::Counts;
    }
    match standing {
        Standing::Association(a)
            if WRITE_ASSOCIATIONS.iter().any(|w| w.eq_ignore_ascii_case(a)) =>
        {
            Verdict::Counts
        }
        Standing::Association(a) => {
            let a = if a.is_empty() { "none given" } else { a };
            Verdict::LeftOut(format!(
                "no write access to the repository (author_association {a})"
            ))
        }
        Standing::Permission(p) if WRITE_PERMISSIONS.iter().any(|w| w.eq_ignore_ascii_case(p)) => {
            Verdict::Counts
        }
        Standing::Permission(p) => {
            let p = if p.is_empty() { "none" } else { p };
            Verdict::LeftOut(format!(
                "no write access to the repository (permission {p})"
            ))
        }
        Standing::AccessLevel(Some(level)) if level >= DEVELOPER => Verdict::Counts,
        Standing::AccessLevel(Some(level)) => Verdict::LeftOut(format!(
            "access level {level} ({}) in the project, below Developer (30)",
            level_name(level)
        )),
        Standing::AccessLevel(None) => Verdict::LeftOut("not a member of the project".into()),
    }
}

/// The authors already named in the log this run.
static TOLD: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The log's line for `author` left out of `what` ("review feedback", "the issue's
/// comments") for `reason`.
pub fn left_out_line(what: &str, author: &str, reason: &str) -> String {
    format!("left out {what} by @{author}: {reason}; add it to review.trustedAuthors to count it")
}

/// Says once per run and author why their words were left out.
pub fn say_left_out(what: &str, author: &str, reason: &str) {
    let first = TOLD
        .lock()
        .map(|mut told| told.insert(author.to_ascii_lowercase()))
        .unwrap_or(true);
    if first {
        say!("{}", left_out_line(what, author, reason));
    }
}

/// Says `line` once per run (a reason an issue waits for a person, asked at every selection).
pub fn say_once(line: &str) {
    let first = TOLD
        .lock()
        .map(|mut told| told.insert(line.to_string()))
        .unwrap_or(true);
    if first {
        say!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(trusted: &[&str], ignored: &[&str]) -> Authority {
        Authority {
            trusted: trusted.iter().map(|s| s.to_string()).collect(),
            ignored: ignored.iter().map(|s| s.to_string()).collect(),
        }
    }

    const ASSOCIATIONS: [&str; 9] = [
        "OWNER",
        "MEMBER",
        "COLLABORATOR",
        "CONTRIBUTOR",
        "FIRST_TIMER",
        "FIRST_TIME_CONTRIBUTOR",
        "MANNEQUIN",
        "NONE",
        "",
    ];
    const PERMISSIONS: [&str; 7] = ["admin", "maintain", "write", "triage", "read", "none", ""];
    const LEVELS: [Option<u64>; 9] = [
        None,
        Some(0),
        Some(5),
        Some(10),
        Some(15),
        Some(20),
        Some(30),
        Some(40),
        Some(50),
    ];

    fn standings() -> Vec<Standing<'static>> {
        let mut all: Vec<Standing<'static>> = ASSOCIATIONS
            .iter()
            .map(|a| Standing::Association(a))
            .collect();
        all.extend(PERMISSIONS.iter().map(|p| Standing::Permission(p)));
        all.extend(LEVELS.iter().map(|l| Standing::AccessLevel(*l)));
        all
    }

    fn writes(s: Standing<'_>) -> bool {
        match s {
            Standing::Association(a) => matches!(a, "OWNER" | "MEMBER" | "COLLABORATOR"),
            Standing::Permission(p) => matches!(p, "admin" | "maintain" | "write"),
            Standing::AccessLevel(l) => l.is_some_and(|l| l >= 30),
        }
    }

    #[test]
    fn every_standing_with_and_without_either_list_is_judged_by_the_rule() {
        for standing in standings() {
            for (trusted, ignored) in [(false, false), (true, false), (false, true), (true, true)] {
                let l = lists(
                    if trusted { &["Ann"] } else { &[] },
                    if ignored { &["ann"] } else { &[] },
                );
                let verdict = judge("ann", standing, &l);
                let want = if ignored {
                    "ignored"
                } else if trusted || writes(standing) {
                    "counts"
                } else {
                    "left out"
                };
                let got = match &verdict {
                    Verdict::Counts => "counts",
                    Verdict::Ignored => "ignored",
                    Verdict::LeftOut(_) => "left out",
                };
                assert_eq!(
                    got, want,
                    "{standing:?} trusted {trusted} ignored {ignored}"
                );
                assert_eq!(verdict.counts(), want == "counts");
            }
        }
    }

    #[test]
    fn the_reason_names_what_the_forge_said() {
        let none = Authority::default();
        let why = |s| match judge("x", s, &none) {
            Verdict::LeftOut(why) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            why(Standing::Association("NONE")),
            "no write access to the repository (author_association NONE)"
        );
        assert_eq!(
            why(Standing::Association("")),
            "no write access to the repository (author_association none given)"
        );
        assert_eq!(
            why(Standing::Permission("read")),
            "no write access to the repository (permission read)"
        );
        assert_eq!(
            why(Standing::AccessLevel(Some(20))),
            "access level 20 (Reporter) in the project, below Developer (30)"
        );
        assert_eq!(
            why(Standing::AccessLevel(None)),
            "not a member of the project"
        );
        assert_eq!(
            left_out_line("review feedback", "stranger", &why(Standing::Association("NONE"))),
            "left out review feedback by @stranger: no write access to the repository (author_association NONE); add it to review.trustedAuthors to count it"
        );
    }

    #[test]
    fn an_author_without_a_login_never_counts_even_with_rights() {
        let l = lists(&[""], &[]);
        assert!(!judge("", Standing::Association("OWNER"), &l).counts());
        assert!(!judge("", Standing::AccessLevel(Some(50)), &l).counts());
    }

    #[test]
    fn associations_and_permissions_compare_without_regard_to_case() {
        let none = Authority::default();
        assert!(judge("a", Standing::Association("collaborator"), &none).counts());
        assert!(judge("a", Standing::Permission("WRITE"), &none).counts());
    }
}
