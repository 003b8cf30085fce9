//! Forgetting in Honcho: what its v3 API allows for records the owner made the box forget,
//! and a plain sentence of what stays there.
//!
//! Honcho's API has no way to delete a message or change its content (a message's
//! `PUT` changes only its metadata); deleting the whole Honcho session would take every
//! other message of it along. What can be deleted are the conclusions Honcho's deriver
//! drew (`DELETE /v3/workspaces/{workspace}/conclusions/{id}`). A conclusion does not say
//! which messages it came from, but Honcho dates it with the newest message of the batch
//! it was drawn from, so a conclusion of the same Honcho session dated before the first
//! forgotten message cannot hold its text; every other one of that session might, and is
//! deleted. Conclusions Honcho draws across sessions later (its "dreams") and peer cards
//! carry no session, cannot be told apart, and are left: the sentence says so.
//!
//! Each forgotten record is looked for by its `boxmaker_id` (the offset its line had),
//! and, when that finds nothing, by its `boxmaker_record` (epoch, time and side): a
//! record reported before an earlier forget of the same epoch moved its line is found
//! that way.
//!
//! Blocking: up to two requests per side of each forgotten record and per part of a long
//! text, one per page of conclusions and one per conclusion deleted, each bounded by the
//! client's timeouts; the first failure ends the work.

use super::client::{CallError, Client};
use super::message::{message_id, record_key, time_key, ID_KEY, MIN_MESSAGE_CHARS, RECORD_KEY};
use super::names;
use proto::config::Honcho;
use std::fmt;

/// The most pages of conclusions read for one forget: 100 000 conclusions of one session.
/// Past this the rest are left and the sentence says so.
pub const MAX_CONCLUSION_PAGES: u64 = 1000;

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
    pub conclusions_deleted: usize,
    /// Why the work stopped early (Honcho unreachable, a token that may not list or
    /// delete conclusions, too many conclusions), if it did.
    pub failed: Option<String>,
}

impl Forgot {
    /// The plain sentence for the owner.
    pub fn sentence(&self) -> String {
        let mut out = if self.messages_left.is_empty() && self.failed.is_none() {
            format!(
                "Honcho holds no message with the forgotten text (session {}, workspace {}).",
                self.session, self.workspace
            )
        } else if self.messages_left.is_empty() {
            format!(
                "Honcho could not be asked whether it holds the forgotten text (session {}, workspace {}).",
                self.session, self.workspace
            )
        } else {
            format!(
                "Honcho still holds {} message{} with the forgotten text (session {}, workspace {}; Honcho ids {}): its API cannot delete or edit a message, only delete that whole Honcho session with every other message in it.",
                self.messages_left.len(),
                if self.messages_left.len() == 1 { "" } else { "s" },
                self.session,
                self.workspace,
                self.messages_left.join(", ")
            )
        };
        if !self.messages_left.is_empty() || self.conclusions_deleted > 0 {
            out.push_str(&format!(
                " {} conclusion{} Honcho drew from that session at or after it {} deleted; conclusions it drew across sessions and its peer cards may still reflect it.",
                self.conclusions_deleted,
                if self.conclusions_deleted == 1 { "" } else { "s" },
                if self.conclusions_deleted == 1 { "was" } else { "were" },
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
/// the owner made the box forget. `None` when Honcho reporting is off (`honcho.url`
/// empty) or its names are bad (then nothing was ever sent).
pub fn forget(cfg: &Honcho, session: &str, records: &[Record]) -> Option<Forgot> {
    if cfg.url.is_empty() || names::check(cfg).is_err() {
        return None;
    }
    let client = Client::new(cfg);
    let target = if cfg.session.is_empty() {
        session.to_string()
    } else {
        cfg.session.clone()
    };
    let mut out = Forgot {
        session: target.clone(),
        workspace: cfg.workspace.clone(),
        ..Forgot::default()
    };
    if let Err(e) = run(&client, session, &target, records, &mut out) {
        out.failed = Some(e.to_string());
    }
    Some(out)
}

fn run(
    client: &Client,
    session: &str,
    target: &str,
    records: &[Record],
    out: &mut Forgot,
) -> Result<(), CallError> {
    let mut earliest: Option<String> = None;
    for r in records {
        for role in ["owner", "assistant"] {
            for part in 0..MAX_PARTS {
                // By the offset first; a record reported before an earlier forget of its
                // epoch moved its line is found by its epoch, time and side instead.
                let id = message_id(session, r.epoch, r.offset, role, part);
                let key = record_key(session, r.epoch, &r.time, role, part);
                let found = match client.message_by(target, ID_KEY, &id)? {
                    Some(m) => Some(m),
                    None => client.message_by(target, RECORD_KEY, &key)?,
                };
                let Some((honcho_id, created_at)) = found else {
                    break;
                };
                out.messages_left.push(honcho_id);
                if earliest
                    .as_deref()
                    .is_none_or(|e| time_key(&created_at) < time_key(e))
                {
                    earliest = Some(created_at);
                }
            }
        }
    }
    let Some(earliest) = earliest else {
        return Ok(());
    };
    // Listed first, deleted after: deleting while paging would shift the pages.
    let mut doomed = Vec::new();
    let mut page = 1;
    loop {
        let (items, pages) = client.conclusions(target, page)?;
        doomed.extend(
            items
                .into_iter()
                .filter(|(_, t)| time_key(t) >= time_key(&earliest))
                .map(|(id, _)| id),
        );
        if page >= pages {
            break;
        }
        if page >= MAX_CONCLUSION_PAGES {
            out.failed = Some(format!(
                "Honcho session {target} has more than {MAX_CONCLUSION_PAGES} pages of conclusions; only those were looked at"
            ));
            break;
        }
        page += 1;
    }
    for id in doomed {
        client.delete_conclusion(&id)?;
        out.conclusions_deleted += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_order_across_fraction_lengths_and_offsets() {
        assert!(time_key("2026-11-30T04:34:57Z") < time_key("2026-11-30T04:34:57.001Z"));
        assert_eq!(
            time_key("2026-11-30T04:34:57.5Z"),
            time_key("2026-11-30T04:34:57.500000+00:00")
        );
        assert!(time_key("2026-11-30T04:34:58Z") > time_key("2026-11-30T04:34:57.999Z"));
        assert!(time_key("yesterday") > time_key("2099-01-01T00:00:00Z"));
    }

    #[test]
    fn the_sentence_says_what_stays_and_what_went() {
        let f = Forgot {
            session: "main".into(),
            workspace: "boxmaker".into(),
            messages_left: vec!["m1".into(), "m2".into()],
            conclusions_deleted: 3,
            failed: None,
        };
        let s = f.sentence();
        assert!(s.starts_with("Honcho still holds 2 messages"), "{s}");
        assert!(s.contains("Honcho ids m1, m2"), "{s}");
        assert!(s.contains("cannot delete or edit a message"), "{s}");
        assert!(s.contains("3 conclusions Honcho drew"), "{s}");
        let none = Forgot {
            session: "main".into(),
            workspace: "boxmaker".into(),
            ..Forgot::default()
        };
        assert!(none.sentence().starts_with("Honcho holds no message"));
    }
}
