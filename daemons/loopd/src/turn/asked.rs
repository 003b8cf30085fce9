//! A reminder asked for in words (docs/reminders.md, 'Asked in words'): whether an owner's
//! line asks to be reminded, and the `/remind WHEN TEXT` command that would set it. A turn
//! whose model set no reminder for such a line ends with loopd's own `· ` line giving
//! that command, so the owner never walks away believing one is set when none is.
//!
//! Pure: English phrasings, judged a sentence at a time; the clock is a parameter.

use chrono::{DateTime, Datelike, Duration, Local, NaiveDate, Utc, Weekday};

/// The `· ` line (without its marker) for `line` when it asks for a reminder the turn did
/// not set: the command to send, with WHEN and TEXT filled in from its words where they
/// could be read, and the forms of WHEN where they could not.
pub fn unset_line(line: &str, now: DateTime<Utc>) -> Option<String> {
    let ask = asked(line, now)?;
    let text = ask.text.as_deref().unwrap_or("TEXT");
    Some(match ask.when {
        Some(when) => format!("no reminder was set; to set it, send: /remind {when} {text}"),
        None => format!(
            "no reminder was set; to set one, send: /remind WHEN {text} ({})",
            remind::when::FORMS
        ),
    })
}

/// What a line asking for a reminder asks: when (in a form `/remind` reads, checked
/// against `now`) and what, each only where its words say it plainly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub when: Option<String>,
    pub text: Option<String>,
}

/// Whether `line` asks for a reminder, and what it asks (see the module's docs page for
/// the rule): the first sentence that asks decides.
pub fn asked(line: &str, now: DateTime<Utc>) -> Option<Asked> {
    sentences(line).find_map(|words| sentence(&words, now))
}

/// A word of the owner's line: as written (for TEXT) and as matched (lower case, with
/// punctuation around it and typographic apostrophes made plain).
#[derive(Debug, Clone)]
struct Word {
    said: String,
    low: String,
}

/// Words that open a question about what was, or what is: a sentence starting with one
/// (`what did you remind me to do`, `did you set a reminder`) asks, it does not order.
const QUESTION_OPENERS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "where", "why", "how", "did", "do", "does", "have",
    "has", "had", "was", "were", "is", "are", "am",
];

/// Words after `remind me` that make it a question about memory (`remind me what we said
/// about X`, `remind me where I put the keys`), not a reminder to set.
const ASKING: &[&str] = &[
    "what", "which", "who", "whom", "whose", "where", "why", "how", "when", "whether", "if",
];

/// Verbs that set a reminder when `reminder` follows them closely (`set a reminder`,
/// `add another reminder`, `I need a reminder`).
const SETTING: &[&str] = &[
    "set", "create", "add", "make", "schedule", "put", "need", "want",
];

/// Words that may stand between a `SETTING` verb and `reminder`.
const BETWEEN: &[&str] = &["a", "an", "me", "up", "us", "another", "new", "quick", "in"];

/// Verbs that, with `me` and a time, ask to be told later (`ping me at 5pm`).
const NUDGING: &[&str] = &["ping", "nudge", "alert", "notify", "text", "message"];

/// The sentences of `line`: each line of it, split at `?`, `!`, `;`, or a `.` ending a
/// word (not the one in `5.30pm`), each as its words.
fn sentences(line: &str) -> impl Iterator<Item = Vec<Word>> {
    let mut out: Vec<Vec<Word>> = Vec::new();
    for text_line in line.lines() {
        out.push(Vec::new());
        for raw in text_line.split_whitespace() {
            for (i, part) in raw.split(['?', '!', ';']).enumerate() {
                if i > 0 {
                    out.push(Vec::new());
                }
                if let (Some(w), Some(last)) = (word(part), out.last_mut()) {
                    last.push(w);
                }
            }
            if raw.ends_with('.') {
                out.push(Vec::new());
            }
        }
    }
    out.into_iter().filter(|s| !s.is_empty())
}

/// `raw` as a `Word`, or none when it is only punctuation. As written, it keeps a comma
/// after it (`milk, bread and eggs`) but not the quotes around it or what ends a
/// sentence; as matched, it is its letters and digits and what joins them (`don't`,
/// `17:00`, `5.30pm`).
fn word(raw: &str) -> Option<Word> {
    let said = raw
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim_end_matches(|c: char| !c.is_alphanumeric() && c != ',');
    let low = said
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
        .replace('’', "'");
    if low.is_empty() {
        return None;
    }
    Some(Word {
        said: said.to_string(),
        low,
    })
}

/// The reminder one sentence asks for, if it asks for one.
fn sentence(words: &[Word], now: DateTime<Utc>) -> Option<Asked> {
    let low: Vec<&str> = words.iter().map(|w| w.low.as_str()).collect();
    let opener = low.first()?.split('\'').next().unwrap_or_default();
    if QUESTION_OPENERS.contains(&opener) {
        return None;
    }
    let time = Time::read(&low, now);
    let after = trigger(&low, time.found())?;
    let text = text(&words[after..], &time.used);
    Some(Asked {
        when: time.when(now),
        text,
    })
}

/// Where the reminded thing starts, when `low` (a sentence's words) asks for a reminder;
/// `timed` says whether the sentence names a time.
fn trigger(low: &[&str], timed: bool) -> Option<usize> {
    for i in 0..low.len() {
        let next = low.get(i + 1).copied().unwrap_or_default();
        let then = low.get(i + 2).copied();
        if low[i] == "remind" && matches!(next, "me" | "us") {
            return match then {
                Some(w) if ASKING.contains(&w) => None,
                Some("to" | "that") => Some(i + 2),
                Some("about" | "of") if low.get(i + 3).is_some_and(|w| ASKING.contains(w)) => None,
                _ if timed => Some(i + 2),
                _ => None,
            };
        }
        if SETTING.contains(&low[i]) {
            let reminder = low[i + 1..]
                .iter()
                .take(4)
                .position(|w| !BETWEEN.contains(w))
                .map(|at| i + 1 + at)
                .filter(|&at| matches!(low[at], "reminder" | "reminders"));
            if let Some(at) = reminder {
                return Some(at + 1);
            }
        }
        if i == 0 && low[i] == "reminder" && (timed || next == "to") {
            return Some(1);
        }
        let negated = matches!(low[i], "don't" | "dont" | "never")
            || (low[i] == "not" && i > 0 && low[i - 1] == "do");
        if negated && next == "let" && low.get(i + 2..i + 4) == Some(&["me", "forget"][..]) {
            return Some(i + 4);
        }
        if low[i] == "sure" && next == "i" {
            match low.get(i + 2..i + 4) {
                Some(["remember", ..]) => return Some(i + 3),
                Some(["don't" | "dont", "forget"]) => return Some(i + 4),
                Some(["do", "not"]) if low.get(i + 4) == Some(&"forget") => return Some(i + 5),
                _ => {}
            }
        }
        if NUDGING.contains(&low[i]) && next == "me" && timed {
            return Some(i + 2);
        }
    }
    None
}

/// TEXT: the words from where the reminded thing starts, without the ones that said when
/// (`used`, indices into the whole sentence, shifted by the start), the small words that
/// join it to the trigger (`to`, `about`, `that`), and a closing `please`.
fn text(words: &[Word], used: &[bool]) -> Option<String> {
    let offset = used.len() - words.len();
    let kept: Vec<&Word> = words
        .iter()
        .enumerate()
        .filter(|(i, _)| !used[offset + i])
        .map(|(_, w)| w)
        .collect();
    let joining = |w: &&&Word| matches!(w.low.as_str(), "to" | "about" | "of" | "that" | "for");
    let closing = |w: &&&Word| matches!(w.low.as_str(), "please" | "thanks");
    let from = kept.iter().take_while(joining).count();
    let to = kept.len() - kept[from..].iter().rev().take_while(closing).count();
    let said: Vec<&str> = kept[from..to].iter().map(|w| w.said.as_str()).collect();
    let text = said.join(" ");
    let text = text.trim_end_matches([',', ':']);
    (!text.is_empty()).then(|| text.to_string())
}

/// The day a sentence names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Day {
    Today,
    Tomorrow,
    On(NaiveDate),
}

/// What a sentence says about when: a span (`in 2 hours`), or a day and a clock time,
/// and which of its words said it.
#[derive(Debug, Default)]
struct Time {
    span: Option<String>,
    day: Option<Day>,
    clock: Option<(u32, u32)>,
    /// `at 8`: an hour without am or pm, a time only in the evening (`tonight at 8`),
    /// since alone it could be either.
    bare: Option<u32>,
    /// `tonight`, `evening`, `afternoon`: an hour under 12 without am or pm is after noon.
    late: bool,
    used: Vec<bool>,
}

impl Time {
    fn read(low: &[&str], now: DateTime<Utc>) -> Time {
        let today = now.with_timezone(&Local).date_naive();
        let mut t = Time {
            used: vec![false; low.len()],
            ..Time::default()
        };
        let mut i = 0;
        while i < low.len() {
            let w = low[i];
            let next = low.get(i + 1).copied();
            if w == "in" {
                if let Some((span, took)) = span(&low[i + 1..]) {
                    t.span.get_or_insert(span);
                    t.mark(i, 1 + took);
                    i += 1 + took;
                    continue;
                }
            }
            if let Some(day) = day(w, today) {
                t.day.get_or_insert(day);
                t.late |= w == "tonight";
                let before = i.checked_sub(1).map(|b| low[b]);
                if matches!(before, Some("on" | "next" | "this")) {
                    t.mark(i - 1, 1);
                }
                t.mark(i, 1);
                i += 1;
                continue;
            }
            if matches!(w, "evening" | "afternoon") && i > 0 && matches!(low[i - 1], "this" | "the")
            {
                t.late = true;
                t.mark(i - 1, 2);
                i += 1;
                continue;
            }
            let hour = next
                .filter(|n| n.len() <= 2)
                .and_then(|n| n.parse::<u32>().ok());
            if let (true, Some(h), None) = (w == "at", hour, clock(next.unwrap_or(""), None)) {
                if (1..=12).contains(&h)
                    && low.get(i + 2).is_none_or(|a| !matches!(*a, "am" | "pm"))
                {
                    t.bare.get_or_insert(h);
                    t.mark(i, 2);
                    i += 2;
                    continue;
                }
            }
            if let Some((clock, took)) = clock(w, next) {
                t.clock.get_or_insert(clock);
                let before = i.checked_sub(1).map(|b| low[b]);
                if matches!(before, Some("at" | "by" | "around" | "for" | "@")) {
                    t.mark(i - 1, 1);
                }
                t.mark(i, took);
                i += took;
                continue;
            }
            i += 1;
        }
        t
    }

    fn mark(&mut self, from: usize, n: usize) {
        for u in self.used.iter_mut().skip(from).take(n) {
            *u = true;
        }
    }

    fn found(&self) -> bool {
        self.span.is_some() || self.day.is_some() || self.clock.is_some() || self.bare.is_some()
    }

    /// WHEN as `/remind` reads it, only when it reads and is ahead of `now`.
    fn when(&self, now: DateTime<Utc>) -> Option<String> {
        let clock = self
            .clock
            .or_else(|| self.bare.filter(|_| self.late).map(|h| (h, 0)));
        let when = match (&self.span, self.day, clock) {
            (Some(span), _, _) => span.clone(),
            (None, day, Some((mut h, m))) => {
                if self.late && h < 12 {
                    h += 12;
                }
                let at = format!("{h:02}:{m:02}");
                match day {
                    Some(Day::Tomorrow) => format!("tomorrow {at}"),
                    Some(Day::On(date)) => format!("{date} {at}"),
                    Some(Day::Today) | None => at,
                }
            }
            (None, _, None) => return None,
        };
        let words: Vec<&str> = when.split_whitespace().collect();
        remind::when::parse(&words, now).ok().map(|_| when)
    }
}

/// `tomorrow`, `today`, `tonight`, a weekday (the next one after today) or `2026-12-24`.
fn day(w: &str, today: NaiveDate) -> Option<Day> {
    match w {
        "tomorrow" | "tmrw" => return Some(Day::Tomorrow),
        "today" | "tonight" => return Some(Day::Today),
        _ => {}
    }
    if let Ok(date) = NaiveDate::parse_from_str(w, "%Y-%m-%d") {
        return Some(Day::On(date));
    }
    let weekday: Weekday = w.parse().ok()?;
    // `parse` takes `mon` and `monday`; a word like `sat` or `sun` is rarely a day in a
    // request, so only the whole name counts.
    if w.len() < 6 {
        return None;
    }
    let ahead = (7 + weekday.num_days_from_monday() as i64
        - today.weekday().num_days_from_monday() as i64)
        % 7;
    let ahead = if ahead == 0 { 7 } else { ahead };
    Some(Day::On(today + Duration::days(ahead)))
}

/// A clock time from `w` (and `next`, for `5 pm`): `17:00`, `5pm`, `5:30pm`, `5.30pm`,
/// `noon`, `midnight`; with how many words it took. A bare number is not a time.
fn clock(w: &str, next: Option<&str>) -> Option<((u32, u32), usize)> {
    match w {
        "noon" | "midday" => return Some(((12, 0), 1)),
        "midnight" => return Some(((0, 0), 1)),
        _ => {}
    }
    let (body, suffix, took) = if let Some(b) = w.strip_suffix("am").or(w.strip_suffix("a.m")) {
        (b, Some(false), 1)
    } else if let Some(b) = w.strip_suffix("pm").or(w.strip_suffix("p.m")) {
        (b, Some(true), 1)
    } else {
        match next {
            Some("am" | "a.m") => (w, Some(false), 2),
            Some("pm" | "p.m") => (w, Some(true), 2),
            _ => (w, None, 1),
        }
    };
    let (h, m) = match body.split_once([':', '.']) {
        Some((h, m)) if m.len() == 2 => (h, m),
        Some(_) => return None,
        // A bare hour is a time only with am or pm after it.
        None if suffix.is_some() => (body, "00"),
        None => return None,
    };
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(h) || !digits(m) {
        return None;
    }
    let (mut h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    match suffix {
        Some(_) if !(1..=12).contains(&h) => return None,
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        _ => {}
    }
    (h < 24 && m < 60).then_some(((h, m), took))
}

/// The span after `in`: `2 hours`, `90 minutes`, `3 days`, `an hour`, `half an hour`, or
/// one word as `/remind` writes it (`2h`, `90m`, `1h30m`); as `/remind` writes it, with
/// the words it took.
fn span(words: &[&str]) -> Option<(String, usize)> {
    let first = *words.first()?;
    if first == "half" && words.get(1..3) == Some(&["an", "hour"][..]) {
        return Some(("in 30m".to_string(), 3));
    }
    let unit = |u: &str| match u {
        "minute" | "minutes" | "min" | "mins" => Some('m'),
        "hour" | "hours" | "hr" | "hrs" => Some('h'),
        "day" | "days" => Some('d'),
        _ => None,
    };
    if matches!(first, "a" | "an") {
        let u = unit(words.get(1)?)?;
        return Some((format!("in 1{u}"), 2));
    }
    if first.bytes().all(|b| b.is_ascii_digit()) && first.len() <= 4 {
        let u = unit(words.get(1)?)?;
        return Some((format!("in {first}{u}"), 2));
    }
    let compact = first.len() <= 8
        && first
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'h' | b'm' | b'd'))
        && first.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && !first.bytes().all(|b| b.is_ascii_digit());
    compact.then(|| (format!("in {first}"), 1))
}

#[cfg(test)]
mod tests;
