//! The owner's `/remind` (docs/reminders.md): `/remind WHEN TEXT` sets a reminder in the
//! connection's session, `/remind` lists that session's, `/remind cancel N` removes one.
//! Pure over the book: the channel answers with the reply and logs the note.

use super::{shown, when, Book, By, CommandError};
use chrono::{DateTime, Utc};
use proto::DataClass;

/// What a `/remind` came to: the reply text, and the `note` to log in the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub reply: String,
    pub note: Option<String>,
    /// The book changed (the poll loop's timer follows it).
    pub changed: bool,
}

/// Runs `/remind arg` for `session` at `now`; an `Err` is the `error:` text.
pub fn run(
    book: &mut Book,
    session: &str,
    arg: &str,
    now: DateTime<Utc>,
    owner_class: DataClass,
) -> Result<Said, CommandError> {
    run_quoting(book, session, arg, now, owner_class, &|_| true)
}

/// `run`, where the reply quotes a reminder's text only when `quote` says so (a Matrix
/// room: the owner's own reminders at or below `matrix.max_class`); the others are named
/// by their number, who set them and their label. The session's note is whole.
pub fn run_quoting(
    book: &mut Book,
    session: &str,
    arg: &str,
    now: DateTime<Utc>,
    owner_class: DataClass,
    quote: &dyn Fn(&super::Reminder) -> bool,
) -> Result<Said, CommandError> {
    let words: Vec<&str> = arg.split_whitespace().collect();
    match words.as_slice() {
        [] => Ok(Said {
            reply: list(book, session, now, quote),
            note: None,
            changed: false,
        }),
        ["cancel", rest @ ..] => {
            let [n] = rest else {
                return Err(CommandError::CancelNeedsOne);
            };
            let n: u64 = n
                .trim_start_matches('#')
                .parse()
                .map_err(|_| CommandError::CancelNumber(n.to_string()))?;
            let gone = book.cancel(session, n)?;
            Ok(Said {
                reply: format!("reminder {n} cancelled: {}", text_or_why(&gone, quote)),
                note: Some(format!(
                    "reminder {n} cancelled by the owner: {}",
                    gone.text
                )),
                changed: true,
            })
        }
        _ => {
            let at = when::parse(&words, now).map_err(CommandError::When)?;
            let text = words[at.words..].join(" ");
            if text.is_empty() {
                return Err(CommandError::NoText);
            }
            let r = book.add(session, at.due, &text, By::Owner, owner_class)?;
            Ok(Said {
                reply: format!(
                    "reminder {} set for {} ({}): {}",
                    r.n,
                    shown(at.due),
                    from_now(now, at.due),
                    text_or_why(&r, quote)
                ),
                note: Some(super::set_note(&r)),
                changed: true,
            })
        }
    }
}

/// A reminder's text, or, where it is not to be shown, why.
fn text_or_why(r: &super::Reminder, quote: &dyn Fn(&super::Reminder) -> bool) -> String {
    if quote(r) {
        return r.text.clone();
    }
    let who = match (r.by, r.untrusted) {
        (By::Owner, _) => "",
        (By::Assistant, false) => "set by the assistant, ",
        (By::Assistant, true) => "set by the assistant after reading a page or file, ",
    };
    format!(
        "({who}labelled {}: its text is shown at the terminal)",
        r.class
    )
}

/// The session's reminders, one a line, soonest first.
fn list(
    book: &Book,
    session: &str,
    now: DateTime<Utc>,
    quote: &dyn Fn(&super::Reminder) -> bool,
) -> String {
    let list = book.of(session);
    if list.is_empty() {
        return format!("no reminders in session {session}; /remind WHEN TEXT sets one");
    }
    let mut out = String::new();
    for r in list {
        let by = match (r.by, quote(&r)) {
            // Allowed by the owner, written after untrusted text: said as the delivery
            // says it.
            (By::Assistant, true) if r.untrusted => {
                " (set by the assistant; untrusted: written after reading a page or file)"
            }
            (By::Assistant, true) => " (set by the assistant)",
            _ => "",
        };
        out.push_str(&format!(
            "{}  {} ({})  {}{by}\n",
            r.n,
            shown(r.due_at()),
            from_now(now, r.due_at()),
            text_or_why(&r, quote)
        ));
    }
    out.push_str("/remind cancel N removes one");
    out
}

/// `in 2h 5m`, `in 3d 4h`, `in 40s`, or `due now`.
pub fn from_now(now: DateTime<Utc>, due: DateTime<Utc>) -> String {
    let s = (due - now).num_seconds();
    if s <= 0 {
        return "due now".into();
    }
    let (d, h, m) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("in {s}s"),
        (0, 0, m) => format!("in {m}m"),
        (0, h, m) => format!("in {h}h {m}m"),
        (d, h, _) => format!("in {d}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_list_and_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let mut book = Book::load(dir.path()).unwrap();
        let now = crate::clock::now();
        let p = DataClass::Private;
        let set = run(&mut book, "main", "in 2h call mum", now, p).unwrap();
        assert!(
            set.reply.starts_with("reminder 1 set for "),
            "{}",
            set.reply
        );
        assert!(set.reply.ends_with("(in 2h 0m): call mum"), "{}", set.reply);
        assert!(set.note.unwrap().starts_with("reminder 1 set by the owner"));
        let listed = run(&mut book, "main", "", now, p).unwrap().reply;
        assert!(
            listed.starts_with("1  ") && listed.contains("call mum"),
            "{listed}"
        );
        assert!(run(&mut book, "other", "", now, p)
            .unwrap()
            .reply
            .starts_with("no reminders"));
        assert!(run(&mut book, "main", "cancel x", now, p)
            .unwrap_err()
            .to_string()
            .contains("\"x\""));
        assert!(run(&mut book, "main", "cancel 9", now, p)
            .unwrap_err()
            .to_string()
            .contains("no reminder 9"));
        let gone = run(&mut book, "main", "cancel 1", now, p).unwrap();
        assert_eq!(gone.reply, "reminder 1 cancelled: call mum");
        assert!(run(&mut book, "main", "noon lunch", now, p)
            .unwrap_err()
            .to_string()
            .contains("\"noon\""));
        assert!(run(&mut book, "main", "in 2h", now, p)
            .unwrap_err()
            .to_string()
            .contains("needs a text"));
    }

    /// Regression: a reminder the owner allowed from a held call was listed only as "set
    /// by the assistant", though its words were written after reading untrusted text.
    #[test]
    fn an_allowed_untrusted_reminder_is_listed_as_untrusted() {
        let dir = tempfile::tempdir().unwrap();
        let mut book = Book::load(dir.path()).unwrap();
        let now = crate::clock::now();
        let due = now + chrono::Duration::hours(1);
        book.add_untrusted("main", due, "click the link", DataClass::Public)
            .unwrap();
        let listed = run(&mut book, "main", "", now, DataClass::Private)
            .unwrap()
            .reply;
        assert!(
            listed.contains(
                "click the link (set by the assistant; untrusted: written after reading a page or file)"
            ),
            "{listed}"
        );
    }

    /// Regression: where the text may not be quoted (a room whose `matrix.max_class` is
    /// below the reminder's label), `/remind WHEN TEXT` was still confirmed with it,
    /// though the list and `/remind cancel` keep it at the terminal.
    #[test]
    fn a_reminder_not_to_be_quoted_is_confirmed_without_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let mut book = Book::load(dir.path()).unwrap();
        let now = crate::clock::now();
        let quote = |r: &super::super::Reminder| r.class <= DataClass::Public;
        let set = run_quoting(
            &mut book,
            "main",
            "in 1h ring the locksmith about 4471",
            now,
            DataClass::Private,
            &quote,
        )
        .unwrap();
        assert!(
            set.reply.starts_with("reminder 1 set for "),
            "{}",
            set.reply
        );
        assert!(!set.reply.contains("4471"), "{}", set.reply);
        assert!(
            set.reply
                .ends_with("(labelled private: its text is shown at the terminal)"),
            "{}",
            set.reply
        );
        assert!(
            set.note.unwrap().contains("4471"),
            "the session's note is whole"
        );
    }
}
