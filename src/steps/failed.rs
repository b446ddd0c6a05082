//! Why a builtin step failed: the words that show it, the kind of call failure, and the facts
//! the machine needs typed (the files of a conflict, the tests a branch weakens).

use crate::call_failure::{CallFailureKind, Kinded};
use crate::git::repo::RepoError;

/// Why a builtin step failed, with the output that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// What failed and the output that shows it.
    pub what: String,
    /// What kind of call failure it was (`Other` for a refusal of the step itself).
    pub kind: CallFailureKind,
    /// For a conflict with main (`kind` `Conflict`): the files that conflict, where git named
    /// them (a forge's "not mergeable" names none).
    pub paths: Vec<String>,
    /// For a branch that weakens the tests (`TESTS_WEAKENED`): what it weakens, file and line.
    pub weakened: Vec<crate::weakening::Fact>,
}

impl Failed {
    /// A failure the step decided itself (not a failed call).
    pub fn other(what: String) -> Failed {
        Failed {
            what,
            kind: CallFailureKind::Other,
            paths: Vec::new(),
            weakened: Vec::new(),
        }
    }

    /// The branch weakens the tests as `facts` say: nothing was pushed.
    pub fn weakened(facts: Vec<crate::weakening::Fact>) -> Failed {
        Failed {
            what: format!(
                "the branch weakens the tests; nothing was pushed:\n{}",
                crate::weakening::describe(&facts)
            ),
            kind: CallFailureKind::Other,
            paths: Vec::new(),
            weakened: facts,
        }
    }
}

impl Kinded for Failed {
    fn kind(&self) -> CallFailureKind {
        self.kind
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl From<RepoError> for Failed {
    fn from(e: RepoError) -> Self {
        Failed {
            kind: e.kind(),
            what: e.to_string(),
            paths: e
                .conflict_paths()
                .map(<[String]>::to_vec)
                .unwrap_or_default(),
            weakened: Vec::new(),
        }
    }
}
