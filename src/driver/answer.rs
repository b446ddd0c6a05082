//! What a request's handler hands back to the loop (`Answer`), what it collects while it works
//! (`Told`), and how a long handler narrates before it ends (`Narrator`).

use super::network;
use crate::journal::FailureDetail;
use crate::machine::{Event, Report};
use std::path::PathBuf;

/// What a request's handler answers: the event for the machine and the lines it narrates,
/// which the loop logs in the order they were said.
pub(super) struct Answer {
    pub event: Event,
    /// What the answer said, for the diagnostics (`Report::said`), when it said anything.
    pub said: Option<String>,
    /// The context of the failure a `StepFailed` reports (`Report::failure`).
    pub failure: Option<FailureDetail>,
    pub narration: Vec<String>,
}

impl Answer {
    /// The answer `event`, with nothing said or to narrate yet.
    pub fn of(event: Event) -> Answer {
        Answer {
            event,
            said: None,
            failure: None,
            narration: Vec::new(),
        }
    }

    /// What the answer reports to the machine beyond its event.
    pub fn report(&mut self) -> Report {
        Report {
            failure: self.failure.take(),
            said: self.said.take(),
        }
    }

    /// The answer with one more line to narrate.
    pub fn narrated(mut self, line: String) -> Answer {
        self.narration.push(line);
        self
    }
}

/// What a handler has told so far while it works: the words for the diagnostics (the last
/// said wins, as `Report::said`) and the lines to narrate, in order.
#[derive(Default)]
pub(super) struct Told {
    pub said: Option<String>,
    pub narration: Vec<String>,
}

impl Told {
    /// What the answer says, for the diagnostics.
    pub fn say(&mut self, text: String) {
        self.said = Some(text);
    }

    /// One more line for the log.
    pub fn narrate(&mut self, line: String) {
        self.narration.push(line);
    }

    /// What a failed call told (`network::judge`), said and narrated.
    pub fn told(&mut self, told: Option<network::Told>) {
        if let Some(told) = told {
            self.say(told.said);
            self.narrate(told.narration);
        }
    }

    /// The handler's answer: `event` with all it told.
    pub fn answer(self, event: Event) -> Answer {
        Answer {
            event,
            said: self.said,
            failure: None,
            narration: self.narration,
        }
    }
}

/// Where and as whom a handler logs a line at once, for the handlers whose narration cannot
/// wait for their answer (a wait is announced before it begins). Built by the loop for one
/// request; the line is written as `Driver::log` writes it.
pub(super) struct Narrator {
    pub log: PathBuf,
    pub worker: Option<u32>,
    pub issue: Option<u32>,
    pub step: Option<&'static str>,
}

impl Narrator {
    /// One entry of the orchestration log, narrated on the console too.
    pub fn log(&self, line: &str) {
        crate::logging::orchestrate(
            crate::logging::Origin {
                log: &self.log,
                worker: self.worker,
                issue: self.issue,
                step: self.step,
            },
            line,
        );
    }

    /// Logs the lines in order.
    pub fn narrate(&self, lines: impl IntoIterator<Item = String>) {
        for line in lines {
            self.log(&line);
        }
    }
}

/// The longest tail of what was said that the machine keeps and the journal records: far more
/// than the diagnostics quote, which is what makes the cut invisible in them.
const LAST_WORDS_CHARS: usize = 4000;

/// What the machine keeps of what was said: redacted (the journal is a sink like any other)
/// and its tail only.
pub(super) fn last_words_kept(said: &str) -> String {
    let said = crate::redact::redact(said);
    match said.char_indices().rev().nth(LAST_WORDS_CHARS - 1) {
        Some((cut, _)) => said[cut..].to_string(),
        None => said,
    }
}
