use super::*;
use chrono::TimeZone;

/// Noon (UTC) on Monday 2026-12-07: the same local date in any time zone within 11 hours.
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 7, 12, 0, 0)
        .single()
        .unwrap_or_default()
}

fn ask(line: &str) -> Option<(Option<String>, Option<String>)> {
    asked(line, now()).map(|a| (a.when, a.text))
}

#[test]
fn a_reminder_asked_for_in_words_is_read_with_its_when_and_its_text() {
    let table: &[(&str, Option<&str>, Option<&str>)] = &[
        (
            "remind me to call the plumber at 5pm tomorrow",
            Some("tomorrow 17:00"),
            Some("call the plumber"),
        ),
        (
            "Remind me to call the plumber at 5pm tomorrow.",
            Some("tomorrow 17:00"),
            Some("call the plumber"),
        ),
        (
            "set a reminder for 9am tomorrow to take the bins out",
            Some("tomorrow 09:00"),
            Some("take the bins out"),
        ),
        (
            "can you set me a reminder in 2 hours to stretch?",
            Some("in 2h"),
            Some("stretch"),
        ),
        (
            "don't let me forget to water the plants tonight at 8",
            Some("20:00"),
            Some("water the plants"),
        ),
        (
            "Don’t let me forget to water the plants",
            None,
            Some("water the plants"),
        ),
        (
            "remind me in 30 minutes to check the oven",
            Some("in 30m"),
            Some("check the oven"),
        ),
        (
            "remind me in an hour to call back",
            Some("in 1h"),
            Some("call back"),
        ),
        (
            "remind me in half an hour to call back",
            Some("in 30m"),
            Some("call back"),
        ),
        (
            "remind me on friday at 10:30 to pay rent",
            Some("2026-12-11 10:30"),
            Some("pay rent"),
        ),
        ("remind me at 17:00 to leave", Some("17:00"), Some("leave")),
        (
            "remind me on 2026-12-24 at 9am to buy a tree",
            Some("2026-12-24 09:00"),
            Some("buy a tree"),
        ),
        ("remind me to buy milk", None, Some("buy milk")),
        (
            "please remind me tomorrow about the dentist",
            None,
            Some("the dentist"),
        ),
        (
            "make sure I remember to call Anna at noon",
            Some("12:00"),
            Some("call Anna"),
        ),
        ("ping me in 2h", Some("in 2h"), None),
        (
            "I need a reminder to renew my passport",
            None,
            Some("renew my passport"),
        ),
        (
            "Hi! Remind me to stretch in 1h30m please",
            Some("in 1h30m"),
            Some("stretch"),
        ),
        (
            "reminder: dentist tomorrow at 9:15am",
            Some("tomorrow 09:15"),
            Some("dentist"),
        ),
        (
            "remind me at 5 pm to feed the cat",
            Some("17:00"),
            Some("feed the cat"),
        ),
    ];
    for &(line, when, text) in table {
        assert_eq!(
            ask(line),
            Some((when.map(String::from), text.map(String::from))),
            "{line:?}"
        );
    }
}

#[test]
fn questions_about_memory_and_other_uses_of_the_words_are_not_reminders() {
    for line in [
        "remind me what we said about the plumber",
        "remind me where I put my passport",
        "can you remind me what time the dentist is?",
        "remind me about what we discussed yesterday",
        "remind me of the plumber's name",
        "remind me",
        "what did you remind me to do?",
        "did you set a reminder for tomorrow?",
        "what reminders do I have",
        "how do I set a reminder?",
        "I reminded him to call at 5pm",
        "the reminder was useful",
        "this reminds me of my trip",
        "don't forget the milk",
        "call the plumber at 5pm tomorrow",
        "what is 5pm in Tokyo time?",
    ] {
        assert_eq!(ask(line), None, "{line:?}");
    }
}

#[test]
fn a_when_that_would_not_be_read_or_is_past_is_left_for_the_owner() {
    // `at 5` alone could be morning or evening; a date already past is not offered.
    assert_eq!(
        ask("remind me at 5 to call mum"),
        Some((None, Some("call mum".into())))
    );
    assert_eq!(
        ask("remind me on 2020-01-01 at 9am to look back"),
        Some((None, Some("look back".into())))
    );
}

#[test]
fn the_line_gives_the_command_to_send_or_its_forms() {
    assert_eq!(
        unset_line("remind me to call the plumber at 5pm tomorrow", now()).as_deref(),
        Some("no reminder was set; to set it, send: /remind tomorrow 17:00 call the plumber")
    );
    let open = unset_line("remind me to buy milk", now()).unwrap_or_default();
    assert!(
        open.starts_with(
            "no reminder was set; to set one, send: /remind WHEN buy milk (WHEN is 17:30"
        ),
        "{open}"
    );
    assert_eq!(unset_line("remind me what we said", now()), None);
}

/// Regression: negations and figures of speech got loopd's "no reminder was set; to set
/// it, send: /remind …" line; a plain request with `when` after `remind me` got none, and
/// a part of the day was read as TEXT.
#[test]
fn negations_and_told_reminders_ask_nothing_and_plain_requests_are_read() {
    for not_asking in [
        "Never remind me to call him again",
        "I don't want a reminder for that at 5pm",
        "It would remind me of home if we went there at 5pm",
        "She forgot to remind me to pay the bill yesterday",
    ] {
        assert_eq!(unset_line(not_asking, now()), None, "{not_asking}");
    }
    assert!(unset_line("Remind me when it's 5pm to call mom", now()).is_some());
    assert_eq!(
        ask("Can you remind me tomorrow morning to call mom").and_then(|a| a.1),
        Some("call mom".to_string())
    );
    for asking in [
        "Please don't forget to remind me at 5pm to call mom",
        "Could you remind me at 5pm to call mom",
        "No, remind me at 5pm to call mom",
        "I can't remember it, remind me at 5pm to call mom",
        "I want you to remind me at 5pm to call mom",
    ] {
        assert_eq!(
            ask(asking).and_then(|a| a.1),
            Some("call mom".to_string()),
            "{asking}"
        );
    }
    assert_eq!(
        ask("Remind me when it's 5pm to call mom"),
        Some((Some("17:00".into()), Some("call mom".into())))
    );
    assert_eq!(
        ask("remind me tomorrow evening at 8 to call mom").and_then(|a| a.0),
        Some("tomorrow 20:00".to_string())
    );
}
