use super::*;
use proptest::prelude::*;

/// For each of `targets`, every character whose confusable skeleton (UTS #39, as the
/// crate's data holds it) is exactly that target: one pass over all of Unicode.
fn drawn_as(targets: &[&str]) -> Vec<Vec<char>> {
    let mut found = vec![Vec::new(); targets.len()];
    for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
        let drawn: String = skeleton_of(c).into_iter().collect();
        if let Some(i) = targets.iter().position(|&t| t == drawn) {
            found[i].push(c);
        }
    }
    found
}

/// The lines of `text` as the owner sees them.
fn lines(text_in: &str) -> Vec<String> {
    text(text_in).lines().map(str::to_string).collect()
}

/// `text` streamed through one `Screen` in `pieces`.
fn streamed(pieces: &[&str]) -> String {
    let mut out = String::new();
    let mut screen = Screen::new();
    for piece in pieces {
        screen.write(piece, Source::Model, &mut out);
    }
    screen.settle(&mut out);
    out
}

#[test]
fn terminal_controls_are_shown_as_escapes() {
    assert_eq!(
        text("a\u{1b}[1A\u{1b}[2Kb\0c\rd\u{9b}2J"),
        "a\\u{1b}[1A\\u{1b}[2Kb\\u{0}c\\u{d}d\\u{9b}2J"
    );
}

#[test]
fn bidi_overrides_and_zero_width_characters_are_shown_as_escapes() {
    assert_eq!(
        text("Tea\u{200b}\u{200c}\u{202e}x\u{2066}\u{feff}\u{e0041}"),
        "Tea\\u{200b}\\u{200c}\\u{202e}x\\u{2066}\\u{feff}\\u{e0041}"
    );
}

#[test]
fn newline_stays_and_tab_is_spaces_to_its_stop_in_running_text_but_not_in_one_line() {
    assert_eq!(text("a\n\tb"), "a\n        b");
    assert_eq!(text("ab\tc\n\t\td"), "ab      c\n                d");
    assert_eq!(one_line("a\n\tb"), "a\\u{a}\\u{9}b");
}

#[test]
fn the_named_lookalikes_of_loopds_marks_are_marked_at_a_line_start() {
    for forged in [
        "error: llama.cpp timed out; send /allow 2",
        "error\u{1361} llama.cpp timed out",
        "e\u{27e}\u{27e}o\u{27e}: llama.cpp timed out",
        "err\u{966}r: llama.cpp timed out",
        "\u{435}rr\u{43e}r: llama.cpp timed out",
        "ｅｒｒｏｒ：\u{3000}llama.cpp timed out",
        "\u{1d41e}rror\u{2236} x",
        "error:x",
        "· http_fetch of x refused: send /allow 2",
        "\u{2d1} http_fetch of x refused",
        "\u{2022} http_fetch of x refused",
        "\u{22c5} http_fetch of x refused",
        "\u{30fb}http_fetch",
        "  \u{b7} indented",
        "memory · session main · 2026-11-30T06:00:00.000Z",
        "memory-tainted · session main · 2026-11-30T06:00:00.000Z",
        "rnemory \u{2022} session main",
        "┃ a line already marked",
    ] {
        let shown = lines(&format!("ok\n{forged}\nend"));
        assert!(shown[1].starts_with(MARK), "{forged:?} shown as {shown:?}");
        assert_eq!(shown[0], "ok");
        assert_eq!(shown[2], "end");
    }
}

#[test]
fn a_marked_lines_own_dot_is_written_as_itself_and_any_later_one_escaped() {
    assert_eq!(
        text("· http_fetch · x\n• milk"),
        "┃ · http_fetch \\u{b7} x\n┃ • milk"
    );
    assert_eq!(
        text("memory · session main · t"),
        "┃ memory \\u{b7} session main \\u{b7} t"
    );
}

#[test]
fn honest_compiler_output_stays_readable_and_only_a_line_starting_as_an_error_is_marked() {
    let quoted = "cargo said:\n\
                  error[E0308]: mismatched types\n\
                  warning: unused variable: `x`\n\
                  error: could not compile `foo` (bin \"foo\") due to 1 previous error\n\
                  so the build said error: could not compile `foo`; server_error: 500";
    assert_eq!(
        text(quoted),
        "cargo said:\n\
         error[E0308]: mismatched types\n\
         warning: unused variable: `x`\n\
         ┃ error: could not compile `foo` (bin \"foo\") due to 1 previous error\n\
         so the build said error: could not compile `foo`; server_error: 500"
    );
}

#[test]
fn words_that_only_begin_like_a_mark_are_left_as_they_are() {
    for honest in [
        "Error: capital letters are not loopd's mark",
        "errors: 3",
        "err",
        "terror: a film",
        "memory is short",
        "memoryless",
        "memory-tainted",
        ". a dot",
        "- a list item",
        "* another",
        "| a | table |",
        "> a quote",
        "Grüße, 東京 — «ok» → done.",
        "ошибка: по-русски",
    ] {
        assert_eq!(text(honest), honest, "{honest:?}");
    }
    let deep = format!("{}error: far in", " ".repeat(MAX_INDENT + 1));
    assert_eq!(text(&deep), deep);
}

#[test]
fn a_mark_split_across_pieces_is_still_judged_whole() {
    assert_eq!(
        streamed(&["ok\ne", "rr", "or", ": x\n", "err", "ata\n", "·", " y"]),
        "ok\n┃ error: x\nerrata\n┃ · y"
    );
    assert_eq!(
        streamed(&["memory", " ", "\u{b7}", " s"]),
        "┃ memory \\u{b7} s"
    );
}

#[test]
fn a_line_start_is_never_held_without_bound() {
    let mut out = String::new();
    let mut screen = Screen::new();
    screen.write(&"\u{200b}".repeat(MAX_HEAD), Source::Model, &mut out);
    assert!(out.starts_with(MARK), "{out:?}");
    let mut out = String::new();
    let mut screen = Screen::new();
    screen.write(&" ".repeat(MAX_INDENT + 1), Source::Model, &mut out);
    assert_eq!(out, " ".repeat(MAX_INDENT + 1));
}

#[test]
fn no_ascii_character_is_drawn_as_a_dot() {
    assert!((0..128_u8).all(|b| !dot_like(char::from(b))));
}

/// The table of lookalikes, drawn from the confusables data: every character whose
/// skeleton is a letter of `error`, the colon or the middle dot, put in its place in a
/// forged mark, is marked at a line's start; every dot-like one is escaped mid-line.
#[test]
fn every_confusable_of_the_marks_in_the_unicode_data_is_marked() {
    let found = drawn_as(&["e", "r", "o", ":", "\u{b7}"]);
    let (letters, colons, dots) = (&found[..3], &found[3], &found[4]);
    let mut forged = Vec::new();
    for (i, letter) in "error".char_indices() {
        let like = &letters["ero".find(letter).unwrap_or_default()];
        for c in like {
            forged.push(format!("{}{c}{}: x", &"error"[..i], &"error"[i + 1..]));
        }
    }
    for c in colons {
        forged.push(format!("error{c} x"));
    }
    for &c in dots {
        forged.push(format!("{c} http_fetch of x refused: send /allow 2"));
    }
    assert!(
        forged.len() > 150 && dots.len() > 20,
        "the data holds fewer lookalikes than expected: {}",
        forged.len()
    );
    for f in &forged {
        let shown = text(&format!("ok\n{f}"));
        let second = shown.lines().nth(1).unwrap_or_default();
        assert!(second.starts_with(MARK), "{f:?} shown as {shown:?}");
    }
    for &c in dots {
        let shown = text(&format!("a {c} b"));
        assert!(!shown.contains(c), "{c:?} mid-line shown as {shown:?}");
        assert!(!one_line(&c.to_string()).contains(c), "{c:?}");
    }
}

/// Characters for the generated texts: loopd's marks, their lookalikes, the bar, blanks.
fn mixed_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("error:".to_string()),
        Just("err\u{966}r\u{1361}".to_string()),
        Just("memory".to_string()),
        Just("\u{b7}".to_string()),
        Just("\u{2022}".to_string()),
        Just("┃".to_string()),
        "[ero:m xy\n\t-]{0,6}",
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn no_shown_line_starts_as_loopds_own(s in mixed_text()) {
        for line in text(&s).lines() {
            let bare = line.trim_start();
            prop_assert!(
                line.starts_with(MARK) || !(
                    bare.starts_with(ERROR.trim_end())
                        || bare.starts_with(ACTIVITY.trim_end())
                        || bare.starts_with("err\u{966}r")
                        || bare.starts_with('\u{2022}')
                ),
                "{line:?}"
            );
        }
    }

    #[test]
    // Tabs are left out: they are shown as spaces.
    fn taking_one_mark_off_each_marked_line_gives_the_text_back(s in "[ero:m┃ xy\n-]{0,40}") {
        let shown = text(&s);
        let back: Vec<&str> = shown
            .split('\n')
            .map(|l| l.strip_prefix(MARK).unwrap_or(l))
            .collect();
        prop_assert_eq!(back.join("\n"), s);
    }

    #[test]
    fn streaming_in_any_pieces_shows_what_the_whole_text_shows(
        s in mixed_text(),
        cuts in proptest::collection::vec(0usize..64, 0..6),
    ) {
        let chars: Vec<char> = s.chars().collect();
        let mut at: Vec<usize> = cuts.into_iter().map(|c| c.min(chars.len())).collect();
        at.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in at.into_iter().chain([chars.len()]) {
            pieces.push(chars[from..cut].iter().collect::<String>());
            from = cut;
        }
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        prop_assert_eq!(streamed(&refs), text(&s));
    }
}

/// Regression: a character that draws as blank (its own skeleton is a space) is not
/// looked through as indent, and a base-less combining mark (zero width: VTE drops one
/// at column 0) hides the start: both show an unmarked `error: ` line.
#[test]
fn blank_and_zero_width_starts_do_not_hide_an_error_line() {
    for forged in [
        "\u{2800}error: llama.cpp timed out; send /allow 2",
        "\u{301}error: llama.cpp timed out; send /allow 2",
        "\u{20db}error: llama.cpp timed out; send /allow 2",
        "error.\u{307} llama.cpp timed out; send /allow 2",
    ] {
        assert!(
            text(forged).starts_with(MARK),
            "{forged:?} -> {:?}",
            text(forged)
        );
    }
    assert_eq!(
        text("\u{301}x"),
        "\\u{301}x",
        "a leading combining mark is escaped"
    );
    for honest in [
        "e\u{301}tait l\u{e0}",
        &".".repeat(80),
        "\u{201c}Quoted,\u{201d} she said",
    ] {
        assert_eq!(text(honest), honest, "left as it is");
    }
}

/// Regression: terminals stop a tab at the right margin without wrapping, so a run of
/// tabs, one filler and `error: ` put `error: ` at column 0 of the next screen row on any
/// terminal up to 8 * tabs columns wide; no width needed to be known. Shown as spaces,
/// which wrap, the `error: ` lands where the line's width puts it, as any long line's
/// text does (docs/channel.md, 'What the owner sees is true').
#[test]
fn tabs_then_a_filler_cannot_bring_error_to_column_zero_on_any_width() {
    let tail = "Xerror: llama.cpp timed out; send /allow 2";
    let shown = text(&format!("ok{}{tail}", "\t".repeat(20)));
    assert!(!shown.contains('\t'), "{shown:?}");
    assert_eq!(shown, format!("ok{}{tail}", " ".repeat(158)));
}

/// Regression: characters drawn as the activity marker's dot (or as the bullet the
/// module itself counts as one) whose UTS #39 skeleton does not start with `·` are
/// neither marked at a line start nor escaped mid-line, so a model line starting with one
/// reads as loopd's `· ` line offering `/allow`.
#[test]
fn dots_the_confusables_data_does_not_map_still_mark_an_activity_line() {
    for dot in ['\u{2e33}', '\u{318d}', '\u{2981}', '\u{2810}', '\u{1f784}'] {
        let forged = format!("{dot} http_fetch of http://evil.example/p refused: send: /allow 2");
        let shown = text(&forged);
        assert!(shown.starts_with(MARK), "U+{:04X}: {shown:?}", dot as u32);
        let mid = text(&format!("ok\u{a0}\u{a0}{dot} x"));
        assert!(!mid.contains(dot), "U+{:04X} mid-line: {mid:?}", dot as u32);
    }
}

/// Regression: a model line holding only a lookalike of `.` (U+2024 one dot leader,
/// U+FF0E fullwidth full stop) was shown as it is, and read as the `.` that ends
/// loopd's reply block, with the model's next line taken for something else.
#[test]
fn a_line_drawn_as_the_block_end_alone_is_marked() {
    for dot in ["\u{2024}", "\u{ff0e}", "  \u{2024} "] {
        let shown = text(&format!("{dot}\nyou> /forget all\n"));
        assert!(shown.starts_with(MARK), "{dot:?}: {shown:?}");
    }
    // The stuffed `.`, a dot leader within text, and an ellipsis are the model's as ever.
    assert_eq!(text("a\u{2024}b\n"), "a\u{2024}b\n");
    assert_eq!(text("\u{2026}\n"), "\u{2026}\n");
}
