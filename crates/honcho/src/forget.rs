//! Forgetting in Honcho: what its v3 API allows for records the owner made the box forget,
//! and plain sentences of what stays there and what the owner can do about it.
//!
//! Honcho's API has no way to delete a message or change its content (a message's `PUT`
//! changes only its metadata), nor its embeddings or a session's summary; deleting the
//! whole Honcho session would take every other message of it along. What can be changed
//! is what Honcho derived, its conclusions and the owner's peer card: those are listed
//! with the box's own entries and deleted as the owner picks them (`derived`). Here: the
//! messages that hold a forgotten record, and whether the summary says the words (the
//! query the owner forgot by, never written to disk, so a removal finished after a
//! restart cannot look, and says so).
//!
//! Each forgotten record is looked for by its `boxmaker_id` (the offset its line had),
//! and, when that finds nothing, by its `boxmaker_record` (epoch, time and side): a
//! record reported before an earlier forget of the same epoch moved its line is found
//! that way.
//!
//! Blocking: up to two requests per side of each forgotten record and per part of a long
//! text, and one for the summaries, each bounded by the client's timeouts; the first
//! failure ends the work.

use super::client::{CallError, Client};
use super::derived::refusal;
use super::message::{message_id, record_key, ID_KEY, MIN_MESSAGE_CHARS, RECORD_KEY};
use super::names;
use proto::config::Honcho;
use proto::query::Query;
use std::fmt;

/// The most parts of one record looked for: a record line is at most
/// `sessions::MAX_RECORD_LINE` bytes, cut into pieces of at least `MIN_MESSAGE_CHARS`.
const MAX_PARTS: usize = (sessions::MAX_RECORD_LINE as usize) / MIN_MESSAGE_CHARS + 1;

/// A forgotten record: where its line started in the session's logs before it was
/// forgotten, and its time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub epoch: u64,
    pub offset: u64,
    pub time: String,
}

/// What forgetting did in Honcho.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forgot {
    /// The Honcho session looked in and the workspace.
    pub session: String,
    pub workspace: String,
    /// Honcho's ids of the messages that still hold forgotten text.
    pub messages_left: Vec<String>,
    /// Whether the forgotten words were known (not after a restart).
    pub words_known: bool,
    /// Whether a session summary Honcho made still holds the words.
    pub summary_holds: bool,
    /// Why the work stopped early (Honcho unreachable, a token that may not), if it did.
    pub failed: Option<String>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Forgot {
    /// The plain sentences for the owner: what Honcho still holds, and what to do.
    pub fn sentence(&self) -> String {
        let (s, w) = (&self.session, &self.workspace);
        let mut out = if self.messages_left.is_empty() && self.failed.is_none() {
            format!("Honcho holds no message with the forgotten text (session {s}, workspace {w}).")
        } else if self.messages_left.is_empty() {
            format!("Honcho could not be asked whether it holds the forgotten text (session {s}, workspace {w}).")
        } else {
            format!(
                "Honcho still holds {} with the forgotten text (session {s}, workspace {w}; Honcho ids {}), and their embeddings: its API cannot delete or edit a message, only delete that whole Honcho session with every other message in it (DELETE /v3/workspaces/{w}/sessions/{s}).",
                plural(self.messages_left.len(), "message", "messages"),
                self.messages_left.join(", ")
            )
        };
        if !self.words_known {
            out.push_str(" Its summary, conclusions and the peer card were not searched: the forgotten words are never kept on disk, and this removal was finished after a restart; /forget with the words again lists what Honcho derived.");
        } else if self.summary_holds {
            out.push_str(&format!(
                " The session's summary still says it (GET /v3/workspaces/{w}/sessions/{s}/summaries): Honcho's API cannot edit a summary; it is replaced when Honcho next summarises the session."
            ));
        }
        if !self.messages_left.is_empty() {
            out.push_str(&format!(
                " Honcho's deriver may still draw conclusions from those messages (a queued task runs after 512 tokens or 30 minutes): list them later with POST /v3/workspaces/{w}/conclusions/list and delete them with DELETE /v3/workspaces/{w}/conclusions/ID."
            ));
        }
        if let Some(e) = &self.failed {
            out.push_str(&format!(" Not finished: {e}."));
        }
        out
    }
}

impl fmt::Display for Forgot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sentence())
    }
}

/// Does in Honcho what its API allows for `records` of boxmaker session `session`, which
/// the owner made the box forget by `words` (`None` when they are not known: a removal
/// finished after a restart). `None` when Honcho reporting is off (`honcho.url` empty) or
/// its names are bad (then nothing was ever sent).
pub fn forget(
    cfg: &Honcho,
    session: &str,
    records: &[Record],
    words: Option<&str>,
) -> Option<Forgot> {
    if cfg.url.is_empty() || names::check(cfg).is_err() {
        return None;
    }
    let client = Client::new(cfg);
    let target = if cfg.session.is_empty() {
        session.to_string()
    } else {
        cfg.session.clone()
    };
    let words = words.filter(|w| !w.trim().is_empty());
    let mut out = Forgot {
        session: target.clone(),
        workspace: cfg.workspace.clone(),
        words_known: words.is_some(),
        ..Forgot::default()
    };
    if let Err(e) = run(&client, session, &target, records, words, &mut out) {
        out.failed = Some(refusal(&e, cfg));
    }
    Some(out)
}

fn run(
    client: &Client,
    session: &str,
    target: &str,
    records: &[Record],
    words: Option<&str>,
    out: &mut Forgot,
) -> Result<(), CallError> {
    for r in records {
        for role in ["owner", "assistant"] {
            for part in 0..MAX_PARTS {
                // By the offset first; a record reported before an earlier forget of its
                // epoch moved its line is found by its epoch, time and side instead.
                let id = message_id(session, r.epoch, r.offset, role, part);
                let key = record_key(session, r.epoch, &r.time, role, part);
                let mut found = client.messages_by(target, ID_KEY, &id)?;
                if found.is_empty() {
                    found = client.messages_by(target, RECORD_KEY, &key)?;
                }
                if found.is_empty() {
                    break;
                }
                for m in found {
                    if !out.messages_left.contains(&m) {
                        out.messages_left.push(m);
                    }
                }
            }
        }
    }
    let Some(words) = words else {
        return Ok(());
    };
    let query = Query::parse(words);
    out.summary_holds = client.summaries(target)?.iter().any(|s| query.matches(s));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_says_what_stays_and_what_the_owner_can_do() {
        let f = Forgot {
            session: "main".into(),
            workspace: "boxmaker".into(),
            messages_left: vec!["m1".into(), "m2".into()],
            words_known: true,
            summary_holds: true,
            failed: None,
        };
        let s = f.sentence();
        assert!(s.starts_with("Honcho still holds 2 messages"), "{s}");
        assert!(s.contains("Honcho ids m1, m2"), "{s}");
        assert!(s.contains("and their embeddings"), "{s}");
        assert!(s.contains("cannot delete or edit a message"), "{s}");
        assert!(s.contains("summary still says it"), "{s}");
        assert!(s.contains("deriver may still draw"), "{s}");
        let none = Forgot {
            session: "main".into(),
            workspace: "boxmaker".into(),
            words_known: true,
            ..Forgot::default()
        };
        assert!(none.sentence().starts_with("Honcho holds no message"));
        let later = Forgot {
            words_known: false,
            ..none
        };
        assert!(later.sentence().contains("were not searched"));
    }
}
