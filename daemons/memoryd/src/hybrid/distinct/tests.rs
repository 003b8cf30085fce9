//! Hits that say something else first: which records say the same thing, and the order
//! that puts their copies after the records saying something else.

use super::*;

/// Everyday remarks said again with another greeting or sign-off, and the one record
/// that answers what is asked about the project.
const COPIES: [&str; 3] = [
    "The dependency update for Heron broke three things in the build.",
    "By the way, the dependency update for Heron broke three things in the build.",
    "Hmm, the dependency update for Heron broke three things in the build. Thoughts?",
];
const ANSWER: &str = "Settled it: Heron will be Django with Postgres.";

fn words(t: &str) -> Said {
    content(t)
}

/// Regression: in a long history of small talk, the copies of one remark about a
/// project took every place of the hits, ahead of the record saying what the project
/// is built with (docs/memoryd.md, "Hits that say something else").
#[test]
fn copies_of_a_remark_go_after_a_record_saying_something_else() {
    let texts = [COPIES[0], COPIES[1], COPIES[2], ANSWER];
    let order = order(DISTINCT, &texts, &|_| false, 2);
    assert_eq!(order, vec![0, 3, 1, 2]);
    // Off: the score's order.
    assert_eq!(order_off(&texts), vec![0, 1, 2, 3]);
}

fn order_off(texts: &[&str]) -> Vec<usize> {
    super::order(OFF, texts, &|_| false, 2)
}

#[test]
fn a_copy_is_told_by_its_words_whatever_greeting_or_sign_off_it_has() {
    for a in COPIES {
        for b in COPIES {
            assert!(same(DISTINCT, &words(a), &words(b)), "{a} / {b}");
        }
        assert!(!same(DISTINCT, &words(a), &words(ANSWER)), "{a}");
    }
}

/// Regression: two friends with a flat in the same city were one fact said twice, and
/// the second left the hits of "Who do I know in Glasgow?" (docs/memoryd.md, "Hits that
/// say something else").
#[test]
fn the_same_sentence_about_someone_else_is_not_a_copy() {
    let a = words("Quick note: Priya has a flat in Glasgow, right by the old harbour.");
    let b = words("For the record: Zainab has a flat in Glasgow, right by the old harbour.");
    assert!(!same(DISTINCT, &a, &b));
    let a = words("Farah lives in Valencia, I keep forgetting that.");
    let b = words("Farah lives in Graz, I keep forgetting that.");
    assert!(!same(DISTINCT, &a, &b));
    // Regression: with the names first, where every word has its capital, the two
    // facts were one said twice.
    let a = words("Priya has a flat in Glasgow, right by the old harbour.");
    let b = words("Zainab has a flat in Glasgow, right by the old harbour.");
    assert!(!same(DISTINCT, &a, &b));
    // The same friend greeted otherwise is the same remark.
    let a = words("Morning! Mateo sent me a ridiculous video of a goat.");
    let b = words("Also, Mateo sent me a ridiculous video of a goat.");
    assert!(same(DISTINCT, &a, &b));
}

/// A long record holding every word of a short one does not repeat it, and two short
/// replies sharing a word or two say nothing alike.
#[test]
fn a_long_record_or_a_short_reply_is_no_copy() {
    let short = words("Tea at four with Mira.");
    let long = words(
        "Planning the week: tea at four with Mira on Monday, the dentist on Tuesday, \
         groceries and the car wash on Wednesday, and the train to Leeds on Friday.",
    );
    assert!(!same(DISTINCT, &short, &long));
    assert!(!same(
        DISTINCT,
        &words("Noted, thanks."),
        &words("Thanks, noted.")
    ));
}

/// What stays first stays: a pinned record (an exact code, the whole question) keeps its
/// place even when it repeats a record above it.
#[test]
fn a_pinned_record_keeps_its_place() {
    let texts = [COPIES[0], COPIES[1], ANSWER];
    assert_eq!(order(DISTINCT, &texts, &|i| i == 1, 3), vec![0, 1, 2]);
}

/// A record past `MAX_BYTES` is not cut into words: it repeats nothing, and nothing
/// repeats it.
#[test]
fn a_record_past_the_bound_is_kept_where_it_is() {
    let long = format!("{} {}", COPIES[0], "and more words ".repeat(200));
    let texts = [COPIES[0], long.as_str(), COPIES[1]];
    assert_eq!(order(DISTINCT, &texts, &|_| false, 3), vec![0, 1, 2]);
}
