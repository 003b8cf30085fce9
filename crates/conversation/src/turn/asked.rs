//! A reminder asked for in words (docs/reminders.md, 'Asked in words'): whether an owner's
//! line asks to be reminded, and the `/remind WHEN TEXT` command that would set it. A turn
//! whose model set no reminder for such a line ends with loopd's own `· ` line giving
//! that command, so the owner never walks away believing one is set when none is.
//!
//! Pure: English phrasings, judged a sentence at a time; the clock is a parameter.

mod time;

use chrono::{DateTime, Utc};
use time::Time;

/// The `· ` line (without its marker) for `line` when it asks for a reminder the turn did
/// not set: the command to send, with WHEN and TEXT filled in from its words where they
/// could be read, and the forms of WHEN where they could not.
pub(crate) fn unset_line(line: &str, now: DateTime<Utc>) -> Option<String> {
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

/// Words that make a trigger right after them not a request (`never remind me`, `I don't
/// want a reminder`), unless `forget` follows (`don't forget to remind me`). `not` counts
/// after `do` (`do not remind me`); `no` and `can't` do not (`no, remind me at 5pm`, `I
/// can't remember, remind me at 9`).
const NEGATIONS: &[&str] = &["never", "don't", "dont", "doesn't", "didn't", "won't"];

/// How many words before a trigger a negation reaches: `please don't ever remind me`;
/// further back it belongs to another clause.
const NEGATION_REACH: usize = 3;

/// Verbs after which `to remind` tells what happened or what was meant, not a request
/// (`she forgot to remind me`, `I tried to remind him`).
const NOT_DONE: &[&str] = &[
    "forgot",
    "failed",
    "tried",
    "meant",
    "used",
    "neglected",
    "refused",
    "wanted",
];

/// Modal verbs: after one, `remind` is a statement unless its subject is `you` (`it would
/// remind me of home`, but `could you remind me`).
const MODALS: &[&str] = &[
    "would", "could", "might", "may", "should", "must", "will", "can", "shall", "it'd", "that'd",
    "that'll", "it'll",
];

/// Words after `remind me when` that make `when` a time, not a question (`remind me when
/// it's 5pm to call mom`).
const WHEN_IT: &[&str] = &["it's", "its", "it"];

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
/// `timed` says whether the sentence names a time. A trigger after a negation, or told
/// as something that happened or would happen (`stated`), asks for nothing.
fn trigger(low: &[&str], timed: bool) -> Option<usize> {
    let (start, at) = triggered(low, timed)?;
    let window = &low[start.saturating_sub(NEGATION_REACH)..start];
    (!negated(window) && !stated(low, start)).then_some(at)
}

/// Whether `before` (the words ahead of a trigger) holds a negation not undone by
/// `forget` after it (`don't forget to remind me` asks; `don't let me forget` is a
/// trigger of its own and is not looked at here).
fn negated(before: &[&str]) -> bool {
    before.iter().enumerate().any(|(i, w)| {
        let negation = NEGATIONS.contains(w) || (*w == "not" && i > 0 && before[i - 1] == "do");
        negation && !before[i + 1..].contains(&"forget")
    })
}

/// Whether the `remind` at `at` is told, not asked: after a `NOT_DONE` verb and `to`, or
/// after a modal whose subject is not `you`.
fn stated(low: &[&str], at: usize) -> bool {
    if low.get(at) != Some(&"remind") {
        return false;
    }
    let before = |n: usize| at.checked_sub(n).map(|b| low[b]);
    match (before(2), before(1)) {
        (Some(verb), Some("to")) => NOT_DONE.contains(&verb),
        (subject, Some(modal)) if MODALS.contains(&modal) => subject != Some("you"),
        _ => false,
    }
}

/// Where the first trigger in `low` starts, and where the reminded thing after it starts.
fn triggered(low: &[&str], timed: bool) -> Option<(usize, usize)> {
    for i in 0..low.len() {
        let next = low.get(i + 1).copied().unwrap_or_default();
        let then = low.get(i + 2).copied();
        if low[i] == "remind" && matches!(next, "me" | "us") {
            return match then {
                // `remind me when it's 5pm to call mom`: the reminded thing follows the
                // `to` after the time, or is not said.
                Some("when") if timed && low.get(i + 3).is_some_and(|w| WHEN_IT.contains(w)) => {
                    let to = low[i + 3..].iter().position(|w| *w == "to");
                    Some(to.map_or(low.len(), |t| i + 3 + t))
                }
                Some(w) if ASKING.contains(&w) => None,
                Some("to" | "that") => Some(i + 2),
                Some("about" | "of") if low.get(i + 3).is_some_and(|w| ASKING.contains(w)) => None,
                _ if timed => Some(i + 2),
                _ => None,
            }
            .map(|at| (i, at));
        }
        if SETTING.contains(&low[i]) {
            let reminder = low[i + 1..]
                .iter()
                .take(4)
                .position(|w| !BETWEEN.contains(w))
                .map(|at| i + 1 + at)
                .filter(|&at| matches!(low[at], "reminder" | "reminders"));
            if let Some(at) = reminder {
                return Some((i, at + 1));
            }
        }
        if i == 0 && low[i] == "reminder" && (timed || next == "to") {
            return Some((i, 1));
        }
        let negated = matches!(low[i], "don't" | "dont" | "never")
            || (low[i] == "not" && i > 0 && low[i - 1] == "do");
        if negated && next == "let" && low.get(i + 2..i + 4) == Some(&["me", "forget"][..]) {
            return Some((i, i + 4));
        }
        if low[i] == "sure" && next == "i" {
            match low.get(i + 2..i + 4) {
                Some(["remember", ..]) => return Some((i, i + 3)),
                Some(["don't" | "dont", "forget"]) => return Some((i, i + 4)),
                Some(["do", "not"]) if low.get(i + 4) == Some(&"forget") => {
                    return Some((i, i + 5))
                }
                _ => {}
            }
        }
        if NUDGING.contains(&low[i]) && next == "me" && timed {
            return Some((i, i + 2));
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

#[cfg(test)]
mod tests;
