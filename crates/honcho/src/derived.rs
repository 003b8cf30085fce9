//! What Honcho derived that holds a `/forget` query (docs/forgetting.md, 'What Honcho
//! keeps'): its conclusions about either peer and the lines of the owner's peer card,
//! matched by the box's own rule (`proto::query`: words and quoted phrases, whole words,
//! any case). They are listed with the box's own entries before anything is deleted,
//! and only those the owner picks are deleted: a conclusion by its id
//! (`DELETE …/conclusions/{id}`, a soft delete its reconciler finishes later), a card
//! line by its text (`GET`, then `PUT …/peers/{peer}/card`).
//!
//! Conclusions are found by what they say, not by dates: a conclusion's `created_at` is
//! when Honcho stored it, which says nothing about the message it came from. Every
//! conclusion is about a peer (`observed_id`); those about the owner and the assistant
//! are searched, in every Honcho session and across them (a dream's carry none).
//!
//! Blocking: one request per page of conclusions per peer and one for the card to list;
//! one per conclusion and two for the card to delete; each bounded by the client's
//! timeouts; the first failure ends the work, and the answer says why.

use super::client::{CallError, Client};
use super::detail::known_detail;
use super::names;
use proto::config::Honcho;
use proto::query::Query;
use serde_json::json;
use std::time::{Duration, Instant};

/// The most pages of conclusions read per peer for one list: 100 000 conclusions. Past
/// this the rest are not searched and the list says so.
pub const MAX_CONCLUSION_PAGES: u64 = 1000;

/// How long one request of a `/forget` list may take: the list runs on loopd's worker,
/// where every session's turns wait behind it, so a Honcho that does not answer costs
/// them this once, not the reporter's 30 s (docs/forgetting.md, 'What Honcho keeps').
pub const LIST_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a whole `/forget` list may search Honcho: past it the list says what was
/// not searched, as for any other stop.
pub const LIST_WITHIN: Duration = Duration::from_secs(15);

/// One thing Honcho derived that holds the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Derived {
    /// A conclusion, by Honcho's id, about `about` (a peer).
    Conclusion {
        id: String,
        about: String,
        text: String,
    },
    /// A line of `peer`'s own peer card.
    CardLine { peer: String, text: String },
}

impl Derived {
    /// What it is and where, without its text: for the list's entry head and the reply.
    pub fn place(&self) -> String {
        match self {
            Derived::Conclusion { id, about, .. } => {
                format!("Honcho: a conclusion about {about} ({id})")
            }
            Derived::CardLine { peer, .. } => format!("Honcho: a line of {peer}'s peer card"),
        }
    }

    pub fn text(&self) -> &str {
        match self {
            Derived::Conclusion { text, .. } | Derived::CardLine { text, .. } => text,
        }
    }
}

/// What a search found, and why it stopped early if it did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    pub found: Vec<Derived>,
    pub failed: Option<String>,
}

/// Honcho's conclusions about either peer and the owner's card lines that hold `query`.
/// `None` when reporting is off (`honcho.url` empty) or its names are bad: then nothing
/// was ever sent.
pub fn search(cfg: &Honcho, query: &str) -> Option<Search> {
    if cfg.url.is_empty() || names::check(cfg).is_err() {
        return None;
    }
    let client = Client::with_timeout(cfg, LIST_REQUEST_TIMEOUT);
    let query = Query::parse(query);
    let mut out = Search::default();
    let deadline = Instant::now() + LIST_WITHIN;
    if let Err(e) = search_into(&client, cfg, &query, deadline, &mut out) {
        out.failed = Some(refusal(&e, cfg));
    }
    Some(out)
}

fn search_into(
    client: &Client,
    cfg: &Honcho,
    query: &Query,
    deadline: Instant,
    out: &mut Search,
) -> Result<(), CallError> {
    let late = |out: &mut Search| {
        out.failed = Some(format!(
            "it took longer than {} s; only what came by then was searched",
            LIST_WITHIN.as_secs()
        ));
    };
    for peer in [&cfg.owner_peer, &cfg.assistant_peer] {
        let filter = json!({ "observed_id": peer });
        let mut page = 1;
        loop {
            if Instant::now() >= deadline {
                late(out);
                return Ok(());
            }
            let (items, pages) = client.conclusions(&filter, page)?;
            for (id, text) in items {
                let known = out
                    .found
                    .iter()
                    .any(|d| matches!(d, Derived::Conclusion { id: i, .. } if *i == id));
                if query.matches(&text) && !known {
                    out.found.push(Derived::Conclusion {
                        id,
                        about: peer.clone(),
                        text,
                    });
                }
            }
            if page >= pages {
                break;
            }
            if page >= MAX_CONCLUSION_PAGES {
                out.failed = Some(format!(
                    "more than {MAX_CONCLUSION_PAGES} pages of conclusions about {peer}; only those were searched"
                ));
                break;
            }
            page += 1;
        }
    }
    if Instant::now() >= deadline {
        late(out);
        return Ok(());
    }
    for line in client.card(&cfg.owner_peer)? {
        if query.matches(&line) {
            out.found.push(Derived::CardLine {
                peer: cfg.owner_peer.clone(),
                text: line,
            });
        }
    }
    Ok(())
}

/// What a deletion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deleted {
    /// Honcho's ids of the conclusions deleted.
    pub conclusions: Vec<String>,
    /// Lines taken out of a peer card.
    pub card_lines: usize,
    /// Chosen card lines no longer on the card (changed since the list).
    pub card_lines_gone: usize,
    pub failed: Option<String>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Deleted {
    /// The sentence for the owner's reply: what was deleted, by Honcho's ids.
    pub fn sentence(&self) -> String {
        let mut out = String::from("Honcho:");
        if !self.conclusions.is_empty() {
            out.push_str(&format!(
                " {} deleted ({}; Honcho keeps them marked deleted until its reconciler runs);",
                plural(self.conclusions.len(), "conclusion", "conclusions"),
                self.conclusions.join(", ")
            ));
        }
        if self.card_lines > 0 {
            out.push_str(&format!(
                " {} taken out of the owner's peer card;",
                plural(self.card_lines, "line", "lines")
            ));
        }
        if self.card_lines_gone > 0 {
            out.push_str(&format!(
                " {} of the peer card no longer there (the card changed since the list);",
                plural(self.card_lines_gone, "line", "lines")
            ));
        }
        if self.conclusions.is_empty() && self.card_lines == 0 && self.card_lines_gone == 0 {
            out.push_str(" nothing deleted;");
        }
        out.pop();
        out.push('.');
        if let Some(e) = &self.failed {
            out.push_str(&format!(" Not finished: {e}."));
        }
        out
    }
}

/// Deletes what the owner chose of a search's list, and nothing else. `None` when
/// reporting is off or nothing was chosen.
pub fn delete(cfg: &Honcho, chosen: &[&Derived]) -> Option<Deleted> {
    if cfg.url.is_empty() || names::check(cfg).is_err() || chosen.is_empty() {
        return None;
    }
    let client = Client::new(cfg);
    let mut out = Deleted::default();
    if let Err(e) = delete_into(&client, chosen, &mut out) {
        out.failed = Some(refusal(&e, cfg));
    }
    Some(out)
}

fn delete_into(client: &Client, chosen: &[&Derived], out: &mut Deleted) -> Result<(), CallError> {
    let mut lines: Vec<(&str, &str)> = Vec::new();
    for d in chosen {
        match d {
            Derived::Conclusion { id, .. } => {
                client.delete_conclusion(id)?;
                out.conclusions.push(id.clone());
            }
            Derived::CardLine { peer, text } => lines.push((peer, text)),
        }
    }
    let mut peers: Vec<&str> = lines.iter().map(|(p, _)| *p).collect();
    peers.sort_unstable();
    peers.dedup();
    for peer in peers {
        let mut card = client.card(peer)?;
        let before = card.len();
        for (_, text) in lines.iter().filter(|(p, _)| *p == peer) {
            // One chosen line takes out one equal line: the others stay.
            match card.iter().position(|l| l == text) {
                Some(at) => {
                    card.remove(at);
                }
                None => out.card_lines_gone += 1,
            }
        }
        if card.len() < before {
            client.set_card(peer, &card)?;
            out.card_lines += before - card.len();
        }
    }
    Ok(())
}

/// Why Honcho would not list or delete, in words: a token limited to one session is told
/// apart, since what it needs is a workspace token (docs/honcho.md, 'What Honcho's answers
/// do').
pub fn refusal(e: &CallError, cfg: &Honcho) -> String {
    if let CallError::Status {
        status: 401 | 403,
        body,
        ..
    } = e
    {
        if matches!(
            known_detail(body),
            Some("JWT not permissioned for this resource" | "Unauthorized access to resource")
        ) {
            return format!(
                "Honcho refused the token in honcho.token_file for the workspace's conclusions and peer card ({e}); a token limited to one session may not read or delete them: a workspace token is needed (Honcho's scripts/generate_jwt.py --workspace {})",
                cfg.workspace
            );
        }
    }
    e.to_string()
}
