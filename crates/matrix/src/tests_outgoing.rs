//! Splitting and transaction ids: no network.

use crate::outgoing::{
    content, html, plan, redaction_txn, split, txn_id, Style, MAX_CONTENT_BYTES, PART_BUDGET,
};

fn json_len(v: &serde_json::Value) -> usize {
    v.to_string().len()
}

#[test]
fn a_short_reply_is_one_plain_event() {
    let parts = plan("main", 7, Style::Text, "", "hello\nworld");
    assert_eq!(parts.len(), 1);
    assert_eq!(
        parts[0].content,
        serde_json::json!({"msgtype": "m.text", "body": "hello\nworld"})
    );
    assert!(parts[0].content.get("format").is_none());
}

#[test]
fn a_long_reply_splits_at_line_boundaries_and_every_part_fits_one_event() {
    // Quotes and control characters grow in JSON: the split counts what is written.
    let line = "\"quoted\" \\ and a tab\there, ünïcödé ✓".repeat(20);
    let text: Vec<String> = (0..400).map(|i| format!("{i}: {line}")).collect();
    let text = text.join("\n");
    for style in [Style::Text, Style::Notice, Style::Unasked] {
        let header = match style {
            Style::Unasked => "loopd: reminder",
            _ => "",
        };
        let parts = plan("main", 1, style, header, &text);
        assert!(parts.len() > 1, "{style:?}");
        for p in &parts {
            assert!(json_len(&p.content) <= MAX_CONTENT_BYTES, "{style:?}");
        }
        if style != Style::Unasked {
            let bodies: Vec<&str> = parts
                .iter()
                .map(|p| p.content["body"].as_str().unwrap())
                .collect();
            assert_eq!(bodies.join("\n"), text, "cut at line boundaries only");
            assert!(bodies.iter().all(|b| b.starts_with(char::is_numeric)));
        }
    }
}

/// Guards a long command answer in a room: a notice split into several events opens
/// each after the first with loopd's line, so no event of loopd's kind holds quoted text
/// alone, and every part still fits one event.
#[test]
fn a_split_notice_opens_each_later_part_with_its_line() {
    let line = "   the assistant said: quoted text that goes on".repeat(20);
    let text: Vec<String> = (0..400).map(|i| format!("{i}: {line}")).collect();
    let text = text.join("\n");
    let parts = plan("main", 1, Style::Notice, "loopd: continued", &text);
    assert!(parts.len() > 1);
    for (i, p) in parts.iter().enumerate() {
        assert!(json_len(&p.content) <= MAX_CONTENT_BYTES);
        let body = p.content["body"].as_str().unwrap();
        assert_eq!(body.starts_with("loopd: continued\n"), i > 0, "part {i}");
    }
    let alone = plan("main", 1, Style::Notice, "loopd: continued", "short");
    assert_eq!(alone[0].content["body"], "short");
}

#[test]
fn a_line_longer_than_an_event_is_cut_at_character_boundaries() {
    let line = "é✓".repeat(PART_BUDGET);
    let pieces = split(&line, PART_BUDGET, crate::outgoing::json_cost);
    assert!(pieces.len() > 1);
    assert_eq!(pieces.concat(), line);
    for p in &pieces {
        let c: usize = p.chars().map(crate::outgoing::json_cost).sum();
        assert!(c <= PART_BUDGET);
    }
}

#[test]
fn empty_lines_and_an_empty_reply_survive_the_split() {
    assert_eq!(split("", 10, |_| 1), vec![""]);
    assert_eq!(split("a\n\nb", 10, |_| 1), vec!["a\n\nb"]);
    // Budget 3: "a\n" fits, "a\n\n" is three, then "b" no longer fits.
    let pieces = split("a\n\nb", 3, |_| 1);
    assert_eq!(pieces.join("\n"), "a\n\nb");
}

#[test]
fn a_transaction_id_is_fixed_by_what_is_sent() {
    let a = plan("main", 3, Style::Text, "", "x");
    let again = plan("main", 3, Style::Text, "", "x");
    assert_eq!(a, again, "planned again after a crash: the same events");
    let other_block = plan("main", 4, Style::Text, "", "x");
    let other_session = plan("work", 3, Style::Text, "", "x");
    assert_ne!(a[0].txn, other_block[0].txn);
    assert_ne!(a[0].txn, other_session[0].txn);
    assert_ne!(txn_id(&["ab", "c"]), txn_id(&["a", "bc"]));
    let id = &a[0].txn;
    assert_eq!(id.len(), 34);
    assert!(id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    assert_eq!(redaction_txn("!r", "$e"), redaction_txn("!r", "$e"));
    assert_ne!(redaction_txn("!r", "$e"), redaction_txn("!r", "$f"));
}

#[test]
fn every_part_of_a_split_reply_has_its_own_transaction_id() {
    let text = "x\n".repeat(PART_BUDGET);
    let parts = plan("main", 1, Style::Text, "", &text);
    let mut ids: Vec<&str> = parts.iter().map(|p| p.txn.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), parts.len());
}

/// The one formatted kind: loopd's header set apart, the text after it escaped, so model
/// text that imitates markup stays text.
#[test]
fn an_unasked_message_sets_loopds_header_apart_and_escapes_the_text() {
    let c = content(
        Style::Unasked,
        "loopd: reminder",
        "<b>loopd:</b> fake & \"real\"\nline",
    );
    assert_eq!(c["msgtype"], "m.text");
    assert_eq!(c["format"], "org.matrix.custom.html");
    assert_eq!(
        c["body"],
        "loopd: reminder\n<b>loopd:</b> fake & \"real\"\nline"
    );
    assert_eq!(
        c["formatted_body"],
        "<strong>loopd: reminder</strong><br>&lt;b&gt;loopd:&lt;/b&gt; fake &amp; &quot;real&quot;<br>line"
    );
    assert_eq!(html("a<b"), "a&lt;b");
}

/// A header of control characters and markup at its longest still leaves every part of
/// the longest text inside one event.
#[test]
fn the_longest_header_on_the_fullest_part_still_fits_one_event() {
    let header = "<\u{1}&\"".repeat(1000);
    let text = "<\u{1}&\"".repeat(PART_BUDGET);
    let parts = plan("main", 1, Style::Unasked, &header, &text);
    assert!(parts.len() > 1);
    for p in &parts {
        assert!(json_len(&p.content) <= MAX_CONTENT_BYTES);
    }
}

#[test]
fn notices_and_model_text_are_never_formatted() {
    let t = content(Style::Text, "", "<b>hi</b>");
    let n = content(Style::Notice, "", "loopd: done");
    assert_eq!(t["msgtype"], "m.text");
    assert_eq!(n["msgtype"], "m.notice");
    assert!(t.get("format").is_none() && n.get("format").is_none());
    assert!(t.get("formatted_body").is_none() && n.get("formatted_body").is_none());
}

/// In an unasked message's plain body (what a push notification shows) a model line that
/// reads as loopd's header, by its look, is marked, and so is one starting with the
/// mark's bar, so one mark off each marked line gives the text back.
#[test]
fn an_unasked_bodys_model_lines_that_read_as_loopds_are_marked() {
    let text = "loopd: reminder at 09:00\n  LOOPD: again\nl\u{200b}oopd: hidden\n\u{217c}oopd: numeral\n┃ bar\nloop de loop\nsay loopd: no";
    let c = content(Style::Unasked, "loopd: reminder", text);
    let body = c["body"].as_str().unwrap();
    let lines: Vec<&str> = body.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "┃ loopd: reminder at 09:00",
            "┃   LOOPD: again",
            "┃ l\u{200b}oopd: hidden",
            "┃ \u{217c}oopd: numeral",
            "┃ ┃ bar",
            "loop de loop",
            "say loopd: no",
        ]
    );
    let back: Vec<&str> = lines
        .iter()
        .map(|l| l.strip_prefix(crate::outgoing::MARK).unwrap_or(l))
        .collect();
    assert_eq!(back.join("\n"), text);
    // The formatted body sets the header apart already; its text is as written.
    assert!(c["formatted_body"]
        .as_str()
        .unwrap()
        .contains("<br>loopd: reminder at 09:00"));
}

/// Regression: a reply whose first line was the model's `loopd: reminder 9, due now` was
/// an `m.text` whose body read exactly like a real unasked reminder's in a phone's
/// notification. A reply's lines that read as loopd's header are marked; the bar's own
/// lines are left to the reply block, which marked them already.
#[test]
fn a_replys_model_lines_that_read_as_loopds_header_are_marked() {
    let text = "loopd: reminder 9, due now\n┃ · read_file x\nJust words, loopd: mine.";
    let c = content(Style::Text, "", text);
    assert_eq!(
        c["body"].as_str().unwrap(),
        "┃ loopd: reminder 9, due now\n┃ · read_file x\nJust words, loopd: mine."
    );
    assert!(c.get("format").is_none());
    let n = content(Style::Notice, "", "loopd: this room is served again");
    assert_eq!(
        n["body"], "loopd: this room is served again",
        "loopd's own notice"
    );
}

/// Regression: the header check lower-cased a line before taking its skeleton, so a
/// capital `I` (drawn as `l` in the sans-serif fonts of phones and Matrix clients) became
/// `i` and `Ioopd: reminder at 09:53` went out unmarked, reading in a notification exactly
/// as loopd's header; a restricted letter (`ʟ`, `ɭ`) or a combining mark on a letter did
/// the same, where the socket's marks treat them as lookalikes.
#[test]
fn a_line_reading_as_loopd_by_a_capital_i_a_restricted_letter_or_a_combining_mark_is_marked() {
    let forged = [
        "Ioopd: reminder at 09:53 Sun 6 Dec",
        "IOOPD: reminder at 09:53",
        "\u{196}OOPD: reminder",
        "\u{29f}oopd: reminder",
        "\u{26d}oopd: reminder",
        "l\u{301}oopd: reminder",
        "lo\u{323}opd: reminder",
        "  Ioopd: indented",
    ];
    for line in forged {
        for style in [Style::Text, Style::Unasked] {
            let c = content(style, "loopd: reminder at 09:00", line);
            let body = c["body"].as_str().unwrap();
            let shown = body.lines().last().unwrap();
            assert_eq!(
                shown,
                format!("{}{line}", crate::outgoing::MARK),
                "{style:?}: {line:?}"
            );
        }
    }
    for honest in [
        "I looped the loop",
        "Iowa",
        "lo-fi loopd",
        "look, loopd",
        "Loop de loop",
    ] {
        let c = content(Style::Text, "", honest);
        assert_eq!(c["body"], honest, "{honest:?}");
    }
}

/// Regression: a line longer than a whole event is cut at a character boundary, and the
/// event after the cut opened with whatever stood there, unjudged. A model line padded to
/// the budget and then `error: …` (left as itself in the middle of a line) made an
/// `m.text` whose body, and push notification, opened with loopd's failure mark. Each
/// event that starts mid-line has its start judged as a line's: marked where it starts as
/// loopd's lines do, in every style, and left alone otherwise.
#[test]
fn an_event_a_cut_starts_mid_line_is_marked_when_its_start_reads_as_loopds() {
    let forged = [
        "error: llama.cpp timed out; send /allow 7",
        "Ioopd: reminder at 09:53 Sun 6 Dec",
        "memory · session main · 2026-12-06",
        "┃ already marked-looking",
    ];
    for style in [Style::Text, Style::Notice, Style::Unasked] {
        // What one character of the padding costs in this style's part.
        let per = if style == Style::Unasked { 2 } else { 1 };
        for tail in forged {
            let line = format!("{}{tail}", "a".repeat(PART_BUDGET / per));
            let parts = plan("main", 1, style, "loopd: heartbeat at 09:00", &line);
            assert_eq!(parts.len(), 2, "{style:?}");
            let body = parts[1].content["body"].as_str().unwrap();
            // An unasked message's header, or a split notice's opening line, first.
            let first = match style {
                Style::Unasked | Style::Notice => body.lines().nth(1).unwrap(),
                Style::Text => body.lines().next().unwrap(),
            };
            assert_eq!(
                first,
                format!("{}{tail}", crate::outgoing::MARK),
                "{style:?}: {body:?}"
            );
            assert_eq!(parts[1].content["msgtype"], parts[0].content["msgtype"]);
        }
        // An honest cut is not marked.
        let line = format!("{}plain words", "a".repeat(PART_BUDGET / per));
        let parts = plan("main", 1, style, "loopd: heartbeat at 09:00", &line);
        assert!(parts[1].content["body"]
            .as_str()
            .unwrap()
            .lines()
            .any(|l| l == "plain words"));
    }
}

/// Regression: an unasked message's `formatted_body` (what a Matrix client shows in the
/// room) set loopd's header apart only by drawing it bold, and left the text after it
/// unmarked; the model's line in mathematical bold letters (`𝐥𝐨𝐨𝐩𝐝: 𝐫𝐞𝐦𝐢𝐧𝐝𝐞𝐫 𝐚𝐭 …`)
/// drew as a second bold header of loopd's inside the message. It is marked there too.
#[test]
fn a_line_drawn_as_loopds_bold_header_is_marked_in_the_formatted_body() {
    let forged = "\u{1d425}\u{1d428}\u{1d428}\u{1d429}\u{1d41d}: \u{1d42b}\u{1d41e}\u{1d426}\u{1d422}\u{1d427}\u{1d41d}\u{1d41e}\u{1d42b} at 09:00";
    let text = format!("All quiet.\n{forged}\nsend your PIN here\nloopd: plain letters");
    let c = content(Style::Unasked, "loopd: heartbeat at 08:00", &text);
    let formatted = c["formatted_body"].as_str().unwrap();
    assert!(
        formatted.contains(&format!("<br>{}{forged}<br>", crate::outgoing::MARK)),
        "{formatted}"
    );
    assert!(
        formatted.ends_with("<br>loopd: plain letters"),
        "{formatted}"
    );
    assert!(c["body"]
        .as_str()
        .unwrap()
        .contains(&format!("\n{}{forged}\n", crate::outgoing::MARK)));
}

/// Regression: the header check looked at a line's first 64 characters, blanks included,
/// so a model line of 64 spaces (or ideographic spaces, or blank Braille patterns) and
/// then `loopd: reminder at …` went out unmarked; a phone's notification, which does not
/// show a body's leading blanks, read it as loopd's header. Blanks are looked through,
/// however many.
#[test]
fn a_line_reading_as_loopds_header_after_any_run_of_blanks_is_marked() {
    for blank in [" ", "\u{3000}", "\u{2800}", "\t"] {
        let line = format!("{}loopd: reminder at 09:53 Sun 6 Dec", blank.repeat(200));
        for style in [Style::Text, Style::Unasked] {
            let c = content(style, "loopd: reminder at 09:00", &line);
            let body = c["body"].as_str().unwrap();
            assert_eq!(
                body.lines().last().unwrap(),
                format!("{}{line}", crate::outgoing::MARK),
                "{style:?}: {blank:?}"
            );
        }
    }
}

/// Lines marked in both the plain and the formatted body, as many as fit, still leave
/// every part inside one event.
#[test]
fn an_unasked_part_of_lines_marked_twice_still_fits_one_event() {
    let line = "\u{1d425}\u{1d428}\u{1d428}\u{1d429}\u{1d41d}";
    let text = vec![line; PART_BUDGET].join("\n");
    let parts = plan("main", 1, Style::Unasked, &"<".repeat(200), &text);
    assert!(parts.len() > 1);
    for p in &parts {
        assert!(json_len(&p.content) <= MAX_CONTENT_BYTES);
    }
}
