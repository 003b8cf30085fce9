//! What is indexed (docs/memoryd.md): the owner's and the assistant's text as kind `session`, and
//! tool summaries as kind `summary` with their own label. Raw tool results are never
//! indexed; they only raise the rolling label, which labels the records after them. What
//! the owner says is `channel.owner_class` (docs/labels.md): it raises the rolling label too, so
//! an owner row and the answers after it carry at least that class.
//! Nothing above the index's `max_class` becomes a row, so secret text never reaches the
//! file, and empty text is skipped.

use proto::label::{DataClass, Label};
use proto::record::{Origin, Record};
use std::borrow::Cow;

/// The most bytes of a record's text kept in its row. A row is read whole by every recall
/// that finds it (re-ranking, fusion, the answer frame) and by the embedding backfill, so
/// an unbounded row makes every recall that matches it as slow as the row is long: forty
/// 8 MiB rows once took 14–19 s a recall. 32 KiB is some 8 000 words, far past an
/// ordinary message or answer, and fifty such hits still fit a recall's answer after
/// clipping (`service::fit`). The rest of a longer text is not indexed, and the row says
/// so at its end (`clipped_marker`).
pub const MAX_ROW_BYTES: usize = 32 * 1024;

/// What ends a row cut at `MAX_ROW_BYTES`: an ellipsis and the record's whole length, so
/// a hit never passes a part for the whole.
pub fn clipped_marker(total_chars: usize) -> String {
    format!("… [clipped: the record had {total_chars} characters]")
}

/// `text` as stored in a row: whole when it is at most `MAX_ROW_BYTES`, else its first
/// `MAX_ROW_BYTES` bytes (cut on a character boundary) and `clipped_marker`.
pub(super) fn row_text(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_ROW_BYTES {
        return Cow::Borrowed(text);
    }
    let mut cut = MAX_ROW_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + 64);
    out.push_str(&text[..cut]);
    out.push_str(&clipped_marker(text.chars().count()));
    Cow::Owned(out)
}

/// The classes that decide a row: the index's `memory.max_class` and the owner's words'
/// `channel.owner_class`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Classes {
    pub max: DataClass,
    pub owner: DataClass,
}

/// One record as it goes into the index.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row<'a> {
    pub time: &'a str,
    pub kind: &'static str,
    pub role: &'static str,
    pub label: Label,
    pub text: &'a str,
}

/// The row for `record`, if it is indexed, updating the log's rolling label on the way.
/// Every variant is named so that a new record type is a compile error here.
pub(super) fn row_of<'a>(
    record: &'a Record,
    rolling: &mut Label,
    max_class: DataClass,
    owner_class: DataClass,
) -> Option<Row<'a>> {
    // The rolling label is the epoch's context label, by the one rule loopd keeps it by.
    // A record raises it before its own row is labelled: an owner line at the owner's
    // class, a tool result or memory record at theirs (a summary's is its result's, which
    // came before it).
    *rolling = proto::record::context_label_after(*rolling, record, owner_class);
    let session = |time: &'a str, role: &'static str, text: &'a str| Row {
        time,
        kind: "session",
        role,
        label: *rolling,
        text,
    };
    let row = match record {
        Record::User {
            time,
            content,
            origin: Origin::Owner,
            ..
        } => session(time, "owner", content),
        // A heartbeat turn's text is loopd's own prompt, not something the owner said;
        // recalling it as "the owner said" would put words in the owner's mouth.
        Record::User {
            origin: Origin::Heartbeat,
            ..
        } => return None,
        Record::Assistant {
            time,
            content: Some(content),
            ..
        } => session(time, "assistant", content),
        Record::Assistant { content: None, .. } => return None,
        // A memory record is a copy of rows already indexed where they were first said;
        // indexing it again would answer every later recall twice. Its label raised the
        // rolling one above, as it did the prompt's.
        Record::ToolResult { .. } | Record::Memory { .. } => return None,
        // A summary carries the label of the result it summarises, not the rolling one;
        // it is still skipped while the log's context is above the index's class.
        Record::ToolSummary {
            time,
            content,
            class,
            untrusted,
            ..
        } => {
            if rolling.class > max_class {
                return None;
            }
            Row {
                time,
                kind: "summary",
                role: "summary",
                label: Label::new(*class, *untrusted),
                text: content,
            }
        }
        // A forgotten record holds no text; its label raised the rolling one above.
        Record::Usage { .. }
        | Record::Note { .. }
        | Record::Forgotten { .. }
        | Record::Refused { .. }
        | Record::Allowed { .. } => return None,
    };
    if row.label.class > max_class || row.text.trim().is_empty() {
        return None;
    }
    Some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    use proto::test_records::{tool_result, tool_summary, user, T};

    #[test]
    fn a_row_longer_than_the_cap_is_cut_on_a_character_boundary_and_says_so() {
        assert!(matches!(row_text("short"), Cow::Borrowed("short")));
        // A three-byte character straddles the cap.
        let long = format!("{}€{}", "a".repeat(MAX_ROW_BYTES - 1), "b".repeat(10));
        let row = row_text(&long);
        let chars = long.chars().count();
        assert!(
            row.ends_with(&clipped_marker(chars)),
            "{}",
            &row[row.len() - 80..]
        );
        let kept = row.len() - clipped_marker(chars).len();
        assert_eq!(kept, MAX_ROW_BYTES - 1);
        assert!(long.starts_with(&row[..kept]));
    }

    #[test]
    fn a_tool_result_raises_the_label_of_what_follows_and_is_not_a_row() {
        let mut rolling = Label::PUBLIC;
        let p = DataClass::Private;
        assert_eq!(
            row_of(&user("a"), &mut rolling, p, DataClass::Public)
                .unwrap()
                .label,
            Label::PUBLIC
        );
        assert!(row_of(
            &tool_result(1, "read_file", "the raw body", DataClass::Public, true),
            &mut rolling,
            p,
            DataClass::Public
        )
        .is_none());
        let b = user("b");
        let after = row_of(&b, &mut rolling, p, DataClass::Public).unwrap();
        assert_eq!(after.label, Label::new(DataClass::Public, true));
    }

    #[test]
    fn nothing_above_max_class_becomes_a_row() {
        let mut rolling = Label::PUBLIC;
        let p = DataClass::Private;
        assert!(row_of(
            &tool_summary(1, "a summary", DataClass::Secret, false),
            &mut rolling,
            p,
            DataClass::Public
        )
        .is_none());
        assert!(row_of(
            &tool_result(1, "read_file", "the raw body", DataClass::Secret, false),
            &mut rolling,
            p,
            DataClass::Public
        )
        .is_none());
        assert!(row_of(
            &user("after the secret"),
            &mut rolling,
            p,
            DataClass::Public
        )
        .is_none());
        assert!(row_of(
            &tool_summary(1, "a summary", DataClass::Public, false),
            &mut rolling,
            p,
            DataClass::Public
        )
        .is_none());
    }

    #[test]
    fn owner_text_is_owner_class_and_raises_what_follows() {
        let mut rolling = Label::PUBLIC;
        let p = DataClass::Private;
        let pin = user("my pin is 4711");
        let said = row_of(&pin, &mut rolling, p, p).unwrap();
        assert_eq!(said.label, Label::new(DataClass::Private, false));
        let answer = Record::Assistant {
            cut: false,
            time: T.into(),
            content: Some("noted".into()),
            tool_calls: vec![],
        };
        let row = row_of(&answer, &mut rolling, p, p).unwrap();
        assert_eq!(row.label.class, DataClass::Private);
        // An owner class above the index's is never a row.
        let x = user("x");
        let mut fresh = Label::PUBLIC;
        assert!(row_of(&x, &mut fresh, p, DataClass::Secret).is_none());
    }

    #[test]
    fn a_summary_keeps_its_own_label() {
        let mut rolling = Label::new(DataClass::Private, true);
        let s = tool_summary(1, "a summary", DataClass::Public, false);
        let row = row_of(&s, &mut rolling, DataClass::Private, DataClass::Public).unwrap();
        assert_eq!((row.kind, row.role), ("summary", "summary"));
        assert_eq!(row.label, Label::PUBLIC);
    }

    #[test]
    fn empty_text_and_bookkeeping_records_are_skipped() {
        let mut rolling = Label::PUBLIC;
        let p = DataClass::Private;
        assert!(row_of(&user("  \n"), &mut rolling, p, DataClass::Public).is_none());
        let silent = Record::Assistant {
            cut: false,
            time: T.into(),
            content: None,
            tool_calls: vec![],
        };
        assert!(row_of(&silent, &mut rolling, p, DataClass::Public).is_none());
        let note = Record::Note {
            time: T.into(),
            text: "compaction failed".into(),
        };
        assert!(row_of(&note, &mut rolling, p, DataClass::Public).is_none());
    }
}
