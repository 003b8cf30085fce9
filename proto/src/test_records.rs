//! Records for tests: the one set of builders every crate's tests (and the end-to-end
//! tests, through `tests/e2e/support/records.rs`) make log records with, so a change to
//! a record's fields is made here once. Compiled for proto's own tests and, for other
//! crates, only with the `test-support` feature, which only dev-dependencies turn on.
//!
//! Every builder dates its record `T`; `.at(time)` (`Dated`) dates it otherwise. A record
//! line for a log file is `Record::to_line`.

use crate::label::{DataClass, Label};
use crate::memory::{Hit, FULLY_RELEVANT};
use crate::record::{Origin, Record, Tokens, ToolCall};

/// The time of every record a test does not date itself.
pub const T: &str = "2026-11-30T06:00:00.000Z";

/// A recall hit: `text` said by `role`, with `label`, fully relevant, from session `main`
/// at `T`; set other fields with struct update syntax.
pub fn hit(role: &str, text: &str, label: Label) -> Hit {
    Hit {
        session: "main".into(),
        epoch: 0,
        time: T.into(),
        kind: "session".into(),
        role: role.into(),
        label,
        text: text.into(),
        relevance: FULLY_RELEVANT,
    }
}

/// What the owner said.
pub fn user(text: &str) -> Record {
    Record::User {
        time: T.into(),
        content: text.into(),
        origin: Origin::Owner,
        matrix: None,
    }
}

/// What the owner said, at `time`.
pub fn user_at(time: &str, text: &str) -> Record {
    user(text).at(time)
}

/// An owner's line that came from Matrix event `event`.
pub fn user_from_matrix(text: &str, event: &str) -> Record {
    Record::User {
        time: T.into(),
        content: text.into(),
        origin: Origin::Owner,
        matrix: Some(crate::record::FromMatrix {
            event: event.into(),
        }),
    }
}

/// The line loopd's heartbeat timer starts a turn with.
pub fn heartbeat(text: &str) -> Record {
    Record::User {
        time: T.into(),
        content: text.into(),
        origin: Origin::Heartbeat,
        matrix: None,
    }
}

/// An answer in text, with no tool call.
pub fn assistant(text: &str) -> Record {
    Record::Assistant {
        time: T.into(),
        content: Some(text.into()),
        tool_calls: Vec::new(),
        cut: false,
    }
}

/// An answer that is only tool calls, each `(id, name, arguments)`.
pub fn assistant_calling(calls: &[(&str, &str, &str)]) -> Record {
    Record::Assistant {
        time: T.into(),
        content: None,
        tool_calls: calls
            .iter()
            .map(|(id, name, arguments)| ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*arguments).into(),
            })
            .collect(),
        cut: false,
    }
}

/// Tool call `call`'s result (its id `c<call>`), labelled `class`, `untrusted`.
pub fn tool_result(
    call: u64,
    name: &str,
    content: &str,
    class: DataClass,
    untrusted: bool,
) -> Record {
    Record::ToolResult {
        time: T.into(),
        call,
        tool_call_id: format!("c{call}"),
        name: name.into(),
        content: content.into(),
        class,
        untrusted,
    }
}

/// The background summary of tool call `call`'s result.
pub fn tool_summary(call: u64, content: &str, class: DataClass, untrusted: bool) -> Record {
    Record::ToolSummary {
        time: T.into(),
        call,
        tool_call_id: format!("c{call}"),
        content: content.into(),
        class,
        untrusted,
    }
}

/// What loopd brought back from memory for a turn.
pub fn memory(content: &str, class: DataClass, untrusted: bool) -> Record {
    Record::Memory {
        time: T.into(),
        content: content.into(),
        class,
        untrusted,
    }
}

/// A completion's token counts, on slot 0.
pub fn usage(cache_n: u64, prompt_n: u64, predicted_n: u64) -> Record {
    Record::Usage {
        time: T.into(),
        slot: 0,
        tokens: Tokens {
            cache_n,
            prompt_n,
            predicted_n,
        },
    }
}

/// A note for the owner to read later.
pub fn note(text: &str) -> Record {
    Record::Note {
        time: T.into(),
        text: text.into(),
    }
}

/// A record dated otherwise than `T`.
pub trait Dated {
    /// The same record at `time`.
    fn at(self, time: &str) -> Record;
}

impl Dated for Record {
    fn at(mut self, at: &str) -> Record {
        // Every variant named: a new one must say where its time is.
        match &mut self {
            Record::User { time, .. }
            | Record::Assistant { time, .. }
            | Record::Memory { time, .. }
            | Record::ToolResult { time, .. }
            | Record::ToolSummary { time, .. }
            | Record::Usage { time, .. }
            | Record::Note { time, .. }
            | Record::Forgotten { time, .. }
            | Record::Refused { time, .. }
            | Record::Allowed { time, .. } => *time = at.into(),
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builder_writes_a_line_the_reader_takes_back() {
        let records = [
            user("hi"),
            user_at("2026-12-01T10:00:00.000Z", "later"),
            heartbeat("beat"),
            assistant("hello"),
            assistant_calling(&[("c1", "read_file", "{\"path\":\"/x\"}")]),
            tool_result(1, "read_file", "body", DataClass::Private, false),
            tool_summary(1, "a body", DataClass::Private, false),
            memory("a hit", DataClass::Public, true),
            usage(1, 2, 3),
            note("n"),
        ];
        for r in records {
            assert_eq!(Record::from_line(&r.to_line()).expect("read back"), r);
        }
        assert_eq!(
            user("x").at("2026-12-02T00:00:00.000Z").time(),
            "2026-12-02T00:00:00.000Z"
        );
    }
}
