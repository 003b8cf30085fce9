//! The copies of conversation text outside the session files that `/forget` reaches too
//! (docs/forgetting.md, 'Reminders and the inbox'): the reminders in `reminders.json`
//! and the messages in `inbox.json` (a heartbeat's news, a delivered or waiting
//! reminder). A message waiting for the notify command is one of those: its turn is kept
//! by number, so once removed here the command never gets it. The delivery notes in the
//! session logs name a reminder by number, never its text; the note of its setting holds
//! the text and is found with the logs.
//!
//! A removal takes the book's lock and then the inbox's, as the poll loop does when it
//! moves a due reminder into the inbox, so a reminder is never added back after it.

use super::find::{holds, Found, Place};
use crate::inbox::{self, Message, Piece};
use proto::Label;

/// Where the reminders and the inbox are, shared with the poll loop.
#[derive(Clone)]
pub struct Mail {
    pub reminders: remind::Shared,
    pub inbox: inbox::Shared,
}

/// What a removal took from each file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Reminders removed from `reminders.json`, by number.
    pub reminders: Vec<u64>,
    /// Messages removed from `inbox.json`, by number.
    pub inbox: Vec<u64>,
    /// Of those, the ones still waiting for the notify command.
    pub unnotified: Vec<u64>,
}

impl Taken {
    /// What was removed, one line a file, for the reply.
    pub fn lines(&self) -> Vec<String> {
        let numbers = |ns: &[u64]| ns.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        let mut lines = Vec::new();
        if !self.reminders.is_empty() {
            lines.push(format!(
                "reminders.json: {} reminders removed ({}); they will not be delivered",
                self.reminders.len(),
                numbers(&self.reminders)
            ));
        }
        if !self.inbox.is_empty() {
            lines.push(format!(
                "inbox.json: {} messages removed ({})",
                self.inbox.len(),
                numbers(&self.inbox)
            ));
        }
        if !self.unnotified.is_empty() {
            lines.push(format!(
                "notify.command: {} waiting messages removed before it got them ({})",
                self.unnotified.len(),
                numbers(&self.unnotified)
            ));
        }
        lines
    }
}

/// The text of an inbox message as `/forget` shows and searches it.
fn message_text(m: &Message) -> String {
    m.pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) | Piece::Activity(t) | Piece::Must(t) => t.as_str(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Mail {
    /// Every reminder and inbox message that holds `query`, reminders first, each in
    /// number order.
    pub fn find(&self, query: &str) -> Vec<Found> {
        let mut found: Vec<Found> = self.reminders.with(|book| {
            book.all()
                .iter()
                .filter(|r| holds(&r.text, query))
                .map(|r| Found {
                    session: r.session.clone(),
                    place: Place::Reminder { n: r.n },
                    kind: "reminder",
                    time: r.set.clone(),
                    text: r.text.clone(),
                    offset: 0,
                    len: 0,
                    label: Label {
                        class: r.class,
                        untrusted: false,
                    },
                    call: None,
                    event: None,
                    allowed: None,
                    reminder: None,
                    heartbeat: None,
                })
                .collect()
        });
        found.sort_by_key(|f| match f.place {
            Place::Reminder { n } => n,
            _ => 0,
        });
        let messages = self.inbox.with(|i| {
            i.all()
                .iter()
                .filter_map(|m| {
                    let text = message_text(m);
                    holds(&text, query).then(|| Found {
                        session: m.session.clone(),
                        place: Place::Inbox { n: m.n },
                        kind: if m.delivered.is_some() {
                            "inbox message"
                        } else {
                            "inbox message (waiting)"
                        },
                        time: m.time.clone(),
                        text,
                        offset: 0,
                        len: 0,
                        label: Label {
                            class: m.class,
                            untrusted: m.untrusted,
                        },
                        call: None,
                        event: None,
                        allowed: None,
                        reminder: None,
                        heartbeat: None,
                    })
                })
                .collect::<Vec<_>>()
        });
        found.extend(messages);
        found
    }

    /// Removes the reminders and inbox messages among `chosen` and writes each file.
    pub fn remove(&self, chosen: &[&Found]) -> Result<Taken, MailError> {
        let mut taken = Taken::default();
        for f in chosen {
            match f.place {
                Place::Reminder { n } => taken.reminders.push(n),
                Place::Inbox { n } => taken.inbox.push(n),
                Place::Record { .. } | Place::Carry { .. } => {}
            }
        }
        if taken.reminders.is_empty() && taken.inbox.is_empty() {
            return Ok(taken);
        }
        self.reminders.with(|book| {
            book.remove(&taken.reminders).map_err(MailError::Book)?;
            self.inbox.with(|i| {
                taken.unnotified = i
                    .all()
                    .iter()
                    .filter(|m| taken.inbox.contains(&m.n) && m.delivered.is_none() && !m.notified)
                    .map(|m| m.n)
                    .collect();
                i.remove(&taken.inbox).map_err(MailError::Inbox)
            })
        })?;
        self.reminders.changed();
        Ok(taken)
    }
}

/// A removal that could not be written: the book's, or the inbox's after the book's.
#[derive(Debug)]
pub enum MailError {
    Book(remind::BookError),
    Inbox(sessions::numbered::StoreError),
}

impl std::fmt::Display for MailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MailError::Book(e) => write!(f, "{e}"),
            MailError::Inbox(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for MailError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MailError::Book(e) => Some(e),
            MailError::Inbox(e) => Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::{Inbox, Kind};
    use proto::DataClass;

    #[test]
    fn reminders_and_inbox_messages_are_found_and_removed_from_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut book = remind::Book::load(dir.path()).unwrap();
        let due = remind::clock::now() + chrono::Duration::hours(1);
        let kept = book
            .add(
                "main",
                due,
                "call the bank",
                remind::By::Owner,
                DataClass::Private,
            )
            .unwrap();
        let pin = book
            .add(
                "main",
                due,
                "my password is P4471",
                remind::By::Owner,
                DataClass::Private,
            )
            .unwrap();
        let mut inbox = Inbox::load(dir.path()).unwrap();
        let label = Label {
            class: DataClass::Private,
            untrusted: true,
        };
        let said = vec![Piece::Text("As asked: P4471".into())];
        let (waiting, _) = inbox.add("main", Kind::Heartbeat, said, label, false, None);
        let mail = Mail {
            reminders: remind::Shared::new(book, None),
            inbox: inbox::Shared::new(inbox),
        };
        let found = mail.find("p4471");
        let places: Vec<&Place> = found.iter().map(|f| &f.place).collect();
        assert_eq!(
            places,
            [
                &Place::Reminder { n: pin.n },
                &Place::Inbox { n: waiting.n }
            ]
        );
        assert!(found[1].label.untrusted, "the label is kept, never lowered");
        let chosen: Vec<&Found> = found.iter().collect();
        let taken = mail.remove(&chosen).unwrap();
        assert_eq!(taken.reminders, [pin.n]);
        assert_eq!(taken.inbox, [waiting.n]);
        assert_eq!(taken.unnotified, [waiting.n]);
        for file in [remind::FILE, inbox::FILE] {
            let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
            assert!(!text.contains("P4471"), "{file}: {text}");
        }
        assert!(mail.find("P4471").is_empty());
        assert_eq!(mail.reminders.with(|b| b.all().to_vec()), [kept]);
    }
}
