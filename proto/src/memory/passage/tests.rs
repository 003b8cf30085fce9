//! Where a long record is cut: around what matched, at word boundaries, the window found
//! by the sliding count as by counting every window afresh, and the words matched in place
//! as they would be lower-cased.

use super::*;
use crate::label::{DataClass, Label};

/// Every window counted afresh, as passages were chosen before the sliding count: the
/// reference it must equal.
fn best_start_by_every_window(found: &[(usize, usize)], room: usize, total: usize) -> usize {
    let lead = room / 4;
    let mut best = (0usize, 0usize);
    for &(at, _) in found {
        let start = at.saturating_sub(lead).min(total - room);
        let mut held = 0u64;
        for &(w, q) in found {
            if w >= start && w < start + room && q < 64 {
                held |= 1 << q;
            }
        }
        let n = held.count_ones() as usize;
        if n > best.1 {
            best = (start, n);
        }
    }
    best.0
}

/// Numbers below `n` drawn from `seed` (a linear congruential generator): the same
/// cases on every run.
fn draws(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    }
}

#[test]
fn the_sliding_count_chooses_the_window_every_window_counted_afresh_chooses() {
    let mut next = draws(42);
    for round in 0..200 {
        let total = 200 + next(3000);
        let room = 20 + next(600).min(total - 20);
        let wanted = 1 + next(8);
        let mut at = 0;
        let mut found = Vec::new();
        while at < total {
            found.push((at, next(wanted)));
            at += 1 + next(40);
        }
        assert_eq!(
            best_start(&found, wanted, room, total),
            best_start_by_every_window(&found, room, total),
            "round {round}"
        );
    }
}

fn hit(role: &str, untrusted: bool) -> Hit {
    let label = Label::new(DataClass::Private, untrusted);
    crate::test_records::hit(role, "tea at four", label)
}

/// Every word lower-cased into a string of its own, as the matches were found before
/// ASCII words were compared in place: the reference `steering_matches` must equal.
fn steering_matches_lower_cased(text: &str, wanted: &[String]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut ch = 0usize;
    for piece in text.split_inclusive(|c: char| !c.is_alphanumeric()) {
        let word: String = piece
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        if let Some(q) = wanted.iter().position(|q| same_word(&word, q)) {
            found.push((ch, q));
        }
        ch += piece.chars().count();
    }
    found
}

#[test]
fn matches_compared_in_place_are_the_matches_lower_cased() {
    let text = "Dentist appointments: Zoë's APPOINTMENT at the Électricité office, \
        then the dentists (appoi.) and Σίσυφος; ΣΊΣΥΦΟΣ\tnew-line\nstraße STRASSE \
        \u{212a}elvin kelvins électricity 42 x-ray X-RAYS — appointment.";
    let ascii = "Dentist appointments: my APPOINTMENT at the office, then the \
        dentists (appoi.) and x-ray;\tnew-line\nkelvins 42 X-RAYS -- appointment.";
    let late = format!("{}Zoë appointments…", ascii.repeat(7));
    let split = format!("{}é{}", ascii.repeat(3), ascii.repeat(3));
    let inside = format!("{}dentisté appointments", ascii.repeat(3));
    for text in [text.repeat(7), ascii.repeat(7), late, split, inside] {
        for q in [
            "when is my dentist appointment?",
            "Zoë électricité",
            "sisyphus ΣΊΣΥΦΟΣ straße",
            "kelvin x-ray 42",
            "dentist appointments for the x-rays",
            "",
        ] {
            let wanted = steering_words(q);
            assert_eq!(
                steering_matches(&text, &wanted),
                steering_matches_lower_cased(&text, &wanted),
                "{q}"
            );
        }
    }
}

#[test]
fn an_ascii_word_compared_in_place_is_the_same_word_lower_cased() {
    let words = [
        "",
        "a",
        "Appointment",
        "APPOINTMENTS",
        "appoi",
        "Appo",
        "dentist",
        "Dentists",
        "x",
        "ZOE",
        "Zoë",
        "électricité",
        "electricity",
        "ÉLECTRICITY",
        "straße",
        "STRASSE",
        "Σίσυφος",
        "ΣΊΣΥΦΟΣ",
        "k",
        "\u{212a}elvin",
        "kelvin",
        "Kelvins",
    ];
    for w in words.iter().filter(|w| w.is_ascii()) {
        for q in &words {
            let q = q.to_lowercase();
            assert_eq!(
                same_ascii_word(w, &q),
                same_word(&w.to_lowercase(), &q),
                "{w} against {q}"
            );
        }
    }
}

#[test]
fn a_long_record_is_clipped_to_the_passage_around_what_matched() {
    let filler = "lorem ipsum dolor sit amet ".repeat(400);
    let text = format!("{filler}my zebra collection has eleven zebras {filler}");
    let mut h = hit("owner", false);
    h.text = text.clone();
    let total = clip_to_passage(&mut h, "tell me about my zebra collection", 600);
    assert_eq!(total, Some(text.chars().count()));
    // The whole hit, the note saying how long the record is included, keeps the bound.
    assert!(h.text.chars().count() <= 600, "{}", h.text.chars().count());
    let (passage, note) = h.text.split_once('\n').unwrap();
    assert!(
        passage.contains("my zebra collection has eleven zebras"),
        "{passage}"
    );
    assert!(
        passage.starts_with(CUT) && passage.ends_with(CUT),
        "{passage}"
    );
    // Cut at word boundaries: the words beside the marks are whole.
    let inner = passage.trim_matches(CUT);
    assert!(filler.contains(inner.split("my zebra").next().unwrap().trim_start()));
    assert!(
        inner.split_whitespace().all(|w| {
            "lorem ipsum dolor sit amet my zebra collection has eleven zebras".contains(w)
        }),
        "{inner}"
    );
    assert_eq!(
        note,
        format!(
            "(a passage of a record of {} characters)",
            text.chars().count()
        )
    );
}

#[test]
fn a_record_that_fits_is_left_whole() {
    let mut h = hit("owner", false);
    assert_eq!(clip_to_passage(&mut h, "tea", 600), None);
    assert_eq!(h.text, "tea at four");
    // Without a matching word the passage is the record's start.
    let text = "word ".repeat(300);
    let p = passage(&text, "zebra", 100);
    assert!(
        p.starts_with("word") && p.ends_with(CUT) && p.chars().count() <= 100,
        "{p}"
    );
    // One unbroken word longer than the passage is cut inside it, still bounded.
    let p = passage(&"é".repeat(1000), "x", 50);
    assert!(p.chars().count() <= 50, "{p}");
}

/// Where the note saying how long the record is would take over half the bound, the
/// passage has the whole bound and the note is left out: the hit still keeps it.
#[test]
fn a_small_bound_keeps_the_passage_and_leaves_the_note_out() {
    let mut h = hit("owner", false);
    h.text = format!("{}my zebra collection", "lorem ipsum ".repeat(40));
    assert!(clip_to_passage(&mut h, "zebra", 80).is_some());
    assert!(h.text.chars().count() <= 80, "{}", h.text);
    assert!(
        !h.text.contains('\n') && h.text.contains("zebra"),
        "{}",
        h.text
    );
}

/// The first look at a long record decides its window only when the whole record's
/// matches choose the same one, and its bound is never below what the record holds. The
/// texts are long: ASCII ending in a clipped row's marker, ASCII with a few other words
/// (a Kelvin sign, a dotted capital I, a Greek sigma), or mixed throughout, with one rare
/// word somewhere. The questions ask for words the texts hold, the rare one, words they
/// do not hold, words they hold only inside other words, and words sharing a stem.
#[test]
fn the_first_look_chooses_the_window_the_whole_record_chooses() {
    let mut next = draws(7);
    let ascii = [
        "the",
        "harbour",
        "invoices",
        "forklift",
        "winter",
        "delivery",
        "deliveries",
        "staff",
        "cold",
        "store",
        "route",
        "shipping",
        "shipped",
        "Shipping,",
        "STORE.",
    ];
    let other = [
        "señal",
        "Überweisung",
        "…",
        "ΑΣ'Α",
        "\u{212A}eeper",
        "İstanbul",
    ];
    let asked_too = [
        "absent",
        "arbour",
        "lighthouse",
        "ας",
        "keeper",
        "ship",
        "istanbul",
    ];
    let (mut decided, mut undecided) = (0, 0);
    for round in 0..600 {
        let words = 800 + next(6_000);
        let rare = next(words);
        // One in how many words is not ASCII: never, now and then, often.
        let odd = [0, 700, 5][round % 3];
        let mut text = String::new();
        for i in 0..words {
            text.push_str(if i == rare {
                "Lighthouse"
            } else if odd > 0 && next(odd) == 0 {
                other[next(other.len())]
            } else {
                ascii[next(ascii.len())]
            });
            text.push(if next(9) == 0 { '\n' } else { ' ' });
        }
        if odd == 0 {
            text.push_str("… [clipped: the record had 99999 characters]");
        }
        let asked: Vec<&str> = (0..1 + next(5))
            .map(|_| match next(3) {
                0 => asked_too[next(asked_too.len())],
                _ => ascii[next(ascii.len())],
            })
            .collect();
        let query = asked.join(" ");
        let wanted = steering_words(&query);
        let total = text.chars().count();
        let room = 100 + next(900);
        let found = steering_matches(&text, &wanted);
        let mut held: Vec<usize> = found.iter().map(|m| m.1).collect();
        held.sort_unstable();
        held.dedup();
        if let Some(bound) = reachable(&text, &wanted) {
            assert!(bound >= held.len(), "round {round}: {query:?}");
        }
        let whole = best_start(&found, wanted.len(), room, total);
        match first_look(&text, &wanted, room, total) {
            Some(start) => {
                decided += 1;
                assert_eq!(start, whole, "round {round}: {query:?}, room {room}");
            }
            None => undecided += 1,
        }
    }
    // Both ways are taken, so both are checked.
    assert!(
        decided > 100 && undecided > 50,
        "{decided} decided, {undecided} not"
    );
}

#[test]
fn the_ascii_start_is_found_at_any_place() {
    for len in [0, 1, 63, 64, 65, 200] {
        for at in 0..=len {
            let mut text = "a".repeat(at);
            if at < len {
                text.push('é');
                text.push_str(&"b".repeat(len - at - 1));
            }
            assert_eq!(ascii_len(&text), at, "{len} {at}");
        }
    }
}
