//! Recall over words in more rows than a search scores (`index::common`): the window of
//! newest matches must never cost a rare word its old record.

use super::*;
use crate::index::common_words::COMMON_ROWS;

/// The owner's `text`, `i` seconds into the history.
fn said(i: usize, text: &str) -> Record {
    let time = proto::time::format_unix_millis(1_780_000_000_000 + i as i64 * 1000);
    crate::fixture::user_at(&time, text)
}

/// `old` notes first, then more than `COMMON_ROWS` newer rows that all hold "today".
fn history(old: &[&str]) -> (World, Index) {
    let w = World::new();
    let mut lines = String::new();
    for (i, n) in old.iter().enumerate() {
        lines.push_str(&said(i, n).to_line());
    }
    for i in 0..COMMON_ROWS as usize + 500 {
        let n = old.len() + i;
        lines.push_str(&said(n, &format!("today note {n} about nothing much")).to_line());
    }
    w.append("main", 0, &lines);
    let ix = w.index();
    (w, ix)
}

#[test]
fn a_rare_word_beside_common_ones_finds_its_old_record() {
    let (_w, mut ix) = history(&[
        "the dentist moved my appointment to friday",
        "the plumber comes on monday",
    ]);
    // No row holds all three words, so the any-words search runs: over the rare words
    // only, not the newest rows holding "today".
    let found = texts(&mut ix, "what did the dentist and the plumber say today");
    assert!(
        found[..2].iter().any(|t| t.contains("dentist"))
            && found[..2].iter().any(|t| t.contains("plumber")),
        "{found:?}"
    );
    // The all-words search keeps a common word: a rare one bounds it.
    let found = texts(&mut ix, "dentist appointment today");
    assert!(found[0].contains("dentist"), "{found:?}");
}

#[test]
fn common_words_only_answer_from_the_newest_matches() {
    let (_w, mut ix) = history(&["today an old note"]);
    let found = texts(&mut ix, "what about today's note?");
    assert_eq!(found.len(), 50, "a full page of hits");
    let newest = COMMON_ROWS as usize + 500;
    for t in &found {
        let n: usize = t
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            n + COMMON_ROWS as usize > newest,
            "{t:?} is older than the window"
        );
    }
}

#[test]
fn a_group_is_common_past_the_bound_and_forgotten_when_rows_go() {
    let (_w, mut ix) = history(&["dentist"]);
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert!(ix.is_common("\"today\"").unwrap());
    assert!(!ix.is_common("\"dentist\"").unwrap());
    assert!(ix.common.knows("\"today\""));
    ix.common.forget();
    assert!(!ix.common.knows("\"today\""));
}

#[test]
fn a_record_with_the_rare_and_the_common_word_ranks_above_one_with_the_rare_only() {
    let (_w, mut ix) = history(&["the dentist called today", "the dentist appointment moved"]);
    // The AND is scored by the rare word only, among the rows holding both.
    let found = texts(&mut ix, "dentist today");
    assert_eq!(found[0], "the dentist called today", "{found:?}");
    assert_eq!(found[1], "the dentist appointment moved", "{found:?}");
}

#[test]
fn every_kind_of_search_runs_with_the_class_filter() {
    let (_w, mut ix) = history(&["the dentist called today"]);
    ix.catch_up(Budget::UNLIMITED).unwrap();
    // Owner rows are private: a public caller sees none, by every path.
    for q in [
        "today note",
        "today",
        "dentist today",
        "dentist called",
        "dentist zebra",
    ] {
        let hits = ix.search(q, DataClass::Public, 10).unwrap();
        assert!(hits.is_empty(), "{q:?}: {hits:?}");
    }
    assert!(!ix
        .search("today note", DataClass::Private, 10)
        .unwrap()
        .is_empty());
}

#[test]
fn a_question_whose_rare_word_is_nowhere_still_finds_its_common_words() {
    let (_w, mut ix) = history(&[]);
    // "zebra" matches nothing, so it is rare; "today" and "note" are in every row. The
    // rows holding both common words are still candidates, newest first.
    let found = texts(&mut ix, "zebra today note");
    assert!(!found.is_empty(), "no hits");
    assert!(found[0].starts_with("today note "), "{found:?}");
}

#[test]
fn a_groups_frequency_is_its_rows_counted_to_one_past_the_common_bound() {
    let (_w, mut ix) = history(&["dentist", "the dentist again"]);
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert_eq!(ix.frequency("\"dentist\"").unwrap(), 2);
    assert_eq!(ix.frequency("\"zebra\"").unwrap(), 0);
    assert_eq!(ix.frequency("\"today\"").unwrap(), COMMON_ROWS + 1);
    // Once known common, from the verdict remembered: the same count.
    assert!(ix.common.knows("\"today\""));
    assert_eq!(ix.frequency("\"today\"").unwrap(), COMMON_ROWS + 1);
}
