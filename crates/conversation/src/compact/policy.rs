//! The pure rules of compaction: when it is due, the fallback summary, and the label a
//! new epoch carries. No I/O, so the pinned numbers (docs/turn.md, 'Compaction') are unit
//! tests.

use crate::prompt::{cap_chars, cap_chars_from_end};
use proto::Record;

/// Words in a run that, seen again and again, mark a summary as a loop: long enough that
/// plain prose ("the owner said that") does not repeat them by chance.
pub(crate) const LOOP_RUN: usize = 6;

/// The share of a summary's word runs that may be repeats before it counts as the model
/// repeating itself. A small model's loop repeats nearly all of them (a sentence over and
/// over); a real summary, almost none.
pub(crate) const LOOP_SHARE: f64 = 0.25;

/// Whether `text` repeats itself: more than `LOOP_SHARE` of its runs of `LOOP_RUN` words
/// occur earlier in it too. A summary like that lost the conversation it stands for
/// (docs/turn.md, "A summary that lost the conversation").
pub(crate) fn repeats(text: &str) -> bool {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    // Too short to loop: fewer than four runs' worth of words.
    if words.len() < LOOP_RUN * 4 {
        return false;
    }
    let runs: Vec<&[String]> = words.windows(LOOP_RUN).collect();
    let mut seen = std::collections::HashSet::new();
    let repeated = runs.iter().filter(|run| !seen.insert(**run)).count();
    repeated as f64 > LOOP_SHARE * runs.len() as f64
}

/// True when the epoch's last usage filled at least `threshold` of the slot's context:
/// `cache_n + prompt_n >= threshold × n_ctx`. The add saturates so absurd counts from a
/// server cannot wrap around to "not due", and the comparison is in f64 so that
/// 0.85 × 262144 = 222822.4 makes 222822 not due and 222823 due.
pub fn due(cache_n: u64, prompt_n: u64, threshold: f64, n_ctx: u64) -> bool {
    cache_n.saturating_add(prompt_n) as f64 >= threshold * n_ctx as f64
}

/// The summary used when the model cannot write one because the summary call itself is
/// context-full: the epoch's user texts in order (newest last), joined by a blank line;
/// when that is longer than `summary_chars` characters, the oldest text is cut away (on a
/// character boundary) so that the newest is kept (docs/turn.md).
pub(crate) fn fallback_summary(records: &[Record], summary_chars: usize) -> String {
    let texts: Vec<&str> = records
        .iter()
        .filter_map(|r| match r {
            Record::User { content, .. } => Some(content.as_str()),
            Record::Assistant { .. }
            | Record::ToolResult { .. }
            | Record::ToolSummary { .. }
            | Record::Usage { .. }
            | Record::Memory { .. }
            | Record::Note { .. }
            | Record::Forgotten { .. }
            | Record::Refused { .. }
            | Record::Allowed { .. } => None,
        })
        .collect();
    cap_chars_from_end(&texts.join("\n\n"), summary_chars).to_string()
}

/// The carry of a fallback that keeps the epoch's own carry, for one the rules above do
/// not call for (the owner's `/compact` answered with an empty or refused summary), where
/// the old epoch would otherwise have stayed current with its carry: the carry whole
/// (it was cut to `summary_chars` when it was made), then a blank line and as much of
/// `lines`, the fallback of the epoch's own texts, newest kept, as the room left holds.
pub(crate) fn keeping_carry(carry: &str, lines: &str, summary_chars: usize) -> String {
    let carry = cap_chars(carry.trim(), summary_chars);
    if carry.is_empty() {
        return cap_chars_from_end(lines, summary_chars).to_string();
    }
    let room = summary_chars.saturating_sub(carry.chars().count() + 2);
    let lines = cap_chars_from_end(lines.trim(), room).trim_start();
    if lines.is_empty() {
        carry.to_string()
    } else {
        format!("{carry}\n\n{lines}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carry_kept_by_the_fallback_stays_whole_and_the_oldest_lines_give_way() {
        // Regression: the carry went first into a text cut from its start, so a long
        // epoch's lines, or a long carry, cut the carry away.
        let carry = "c".repeat(90);
        let lines = format!("{}\n\n{}", "old".repeat(10), "new".repeat(2));
        let kept = keeping_carry(&carry, &lines, 100);
        assert_eq!(kept, format!("{carry}\n\nnewnew"));
        assert_eq!(keeping_carry(&carry, "", 100), carry);
        assert_eq!(keeping_carry("", &lines, 6), "newnew");
        // A carry filling the room keeps it all.
        assert_eq!(
            keeping_carry(&"c".repeat(100), &lines, 100),
            "c".repeat(100)
        );
    }
    use proto::record::context_label;
    use proto::test_records::{note, tool_result, user};
    use proto::{DataClass, Label};

    #[test]
    fn due_at_850_of_1000_not_at_849() {
        assert!(!due(800, 49, 0.85, 1000));
        assert!(due(800, 50, 0.85, 1000));
    }

    #[test]
    fn due_at_222823_of_262144_not_at_222822() {
        assert!(!due(222_000, 822, 0.85, 262_144));
        assert!(due(222_000, 823, 0.85, 262_144));
    }

    #[test]
    fn threshold_one_is_the_whole_window() {
        assert!(!due(1000, 1047, 1.0, 2048));
        assert!(due(1000, 1048, 1.0, 2048));
    }

    #[test]
    fn counts_that_would_overflow_saturate_to_due() {
        assert!(due(u64::MAX, u64::MAX, 0.85, 262_144));
    }

    #[test]
    fn fallback_is_user_texts_newest_last_joined_by_a_blank_line() {
        let records = [
            user("first"),
            note("skip me"),
            user("second"),
            user("third"),
        ];
        assert_eq!(fallback_summary(&records, 100), "first\n\nsecond\n\nthird");
    }

    #[test]
    fn fallback_cap_is_in_characters_on_a_boundary_and_keeps_the_newest() {
        let records = [user("héllo"), user("wörld")];
        assert_eq!(fallback_summary(&records, 2), "ld");
        assert_eq!(fallback_summary(&records, 8), "o\n\nwörld");
        assert_eq!(fallback_summary(&records, 12), "héllo\n\nwörld");
        assert_eq!(fallback_summary(&records, 0), "");
    }

    #[test]
    fn fallback_over_the_cap_cuts_the_oldest_text_not_the_newest() {
        let old = "o".repeat(50);
        let records = [user(&old), user("the newest question")];
        let kept = fallback_summary(&records, 30);
        assert!(kept.ends_with("the newest question"), "{kept:?}");
        assert_eq!(kept.chars().count(), 30);
    }

    #[test]
    fn no_users_give_an_empty_fallback() {
        assert_eq!(fallback_summary(&[note("n")], 100), "");
        assert_eq!(fallback_summary(&[], 100), "");
    }

    #[test]
    fn the_context_label_joins_the_carry_and_every_record() {
        let secret = tool_result(1, "read_file", "x", DataClass::Secret, false);
        let carry = Label::new(DataClass::Public, true);
        assert_eq!(
            context_label(carry, &[user("u"), secret], DataClass::Public),
            Label::new(DataClass::Secret, true)
        );
        assert_eq!(
            context_label(Label::PUBLIC, &[user("u")], DataClass::Public),
            Label::PUBLIC
        );
        assert_eq!(
            context_label(Label::PUBLIC, &[user("u")], DataClass::Private),
            Label::new(DataClass::Private, false)
        );
    }
}
