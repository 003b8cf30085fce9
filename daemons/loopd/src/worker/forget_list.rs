//! A `/forget` list (docs/forgetting.md): what a query found, on the box and in Honcho,
//! kept per asking session until the owner picks from it, and shown a page at a time, each
//! entry naming its place and cut to the part around its match; and the sessions that
//! could not be searched and the files not searched, as the owner is told of them.

use super::forget_honcho;
use conversation::forget::find::{Found, Place, Searched};
use honcho::derived::Derived;
use proto::config::Config;
use proto::{DataClass, SessionId};
use std::collections::HashMap;

/// The most entries one page of a list shows: the reply stays readable, `/forget more`
/// shows the next page, and `/forget all` still removes every match, shown or not.
pub(crate) const MAX_SHOWN: usize = 50;

/// The most characters of one entry's text a list shows: a fetched page can be megabytes,
/// and the owner needs to see what matched, not all of it. The part around the first
/// match is shown.
pub(crate) const MAX_ENTRY_CHARS: usize = 1200;

/// The most bytes of one page of a list: well under the channel's backpressure limit
/// (`crate::limits::MAX_OUTPUT`), so a long list is paged, never a reply the connection cannot
/// hold.
pub(crate) const MAX_PAGE_BYTES: usize = 256 * 1024;

/// Each asking session's last list.
#[derive(Default)]
pub(crate) struct Lists {
    pub(super) last: HashMap<SessionId, Listed>,
    /// What the removals a crash cut short, finished at this start, took, in words, by
    /// each session whose files they changed: the answer to the `/forget all` or
    /// `/forget N` that asked for them when it comes again in one of those sessions (a
    /// room runs a line a crash cut short again), once, in place of "nothing listed".
    pub(super) finished: HashMap<SessionId, String>,
}

pub(super) struct Listed {
    pub(super) query: String,
    pub(super) found: Vec<Found>,
    /// What Honcho derived that holds the query, numbered after `found`.
    pub(super) honcho: Vec<Derived>,
    /// Why Honcho could not be searched to the end, if it could not.
    pub(super) honcho_failed: Option<String>,
    /// The sessions that could not be searched and the files not searched, as the owner
    /// is told of them (empty when everything was).
    pub(super) unread: String,
    /// How many entries the pages so far have shown.
    pub(super) shown: usize,
}

impl Listed {
    /// Every entry: the box's and Honcho's.
    pub(super) fn total(&self) -> usize {
        self.found.len() + self.honcho.len()
    }
}

/// Where a list is shown, and so what it may quote (docs/matrix.md, 'Labels').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ShownTo {
    /// The socket: every entry's text.
    Terminal,
    /// A Matrix room: no text above `matrix.max_class` (the first), nor what Honcho
    /// derived when Honcho may be sent more than that (`honcho.max_class`, the second).
    Room(DataClass, DataClass),
}

impl ShownTo {
    pub(super) fn of(cfg: &Config, in_room: bool) -> ShownTo {
        match in_room {
            true => ShownTo::Room(cfg.matrix.max_class, cfg.honcho.max_class),
            false => ShownTo::Terminal,
        }
    }

    /// The room's bound when `class` is above it: the entry is then listed without
    /// its text.
    fn withholds(self, class: DataClass) -> Option<DataClass> {
        match self {
            ShownTo::Room(max, _) if class > max => Some(max),
            _ => None,
        }
    }
}

/// The next page of `listed`: numbered entries, each naming its session, each text cut
/// to the part around its first match when long, the page bounded in entries and bytes.
/// In a room (`to`), an entry labelled above `matrix.max_class` is its line alone.
pub(super) fn render_page(listed: &mut Listed, to: ShownTo) -> String {
    let total = listed.total();
    let first = listed.shown;
    let mut out = if first > 0 {
        format!("entries {} and on of {total}:", first + 1)
    } else if listed.honcho.is_empty() {
        format!("{total} entries on the box hold that:")
    } else {
        format!(
            "{total} entries hold that: {} on the box and {} in Honcho (what Honcho derived is deleted there only if you choose it):",
            listed.found.len(),
            listed.honcho.len()
        )
    };
    let mut n = first;
    while n < total && n - first < MAX_SHOWN {
        let entry = match listed.found.get(n) {
            Some(f) => render_entry(n + 1, f, &listed.query, to.withholds(f.label.class)),
            None => {
                let d = &listed.honcho[n - listed.found.len()];
                match to {
                    ShownTo::Room(max, honcho) if honcho > max => {
                        forget_honcho::render_withheld(n + 1, d, honcho, max)
                    }
                    _ => forget_honcho::render_entry(n + 1, d),
                }
            }
        };
        // One entry always goes out, so a page never shows nothing.
        if n > first && out.len() + entry.len() > MAX_PAGE_BYTES {
            break;
        }
        out.push_str(&entry);
        n += 1;
    }
    listed.shown = n;
    if n < total {
        out.push_str(&format!(
            "\n… {} more; /forget more shows the next page, /forget all removes them too",
            total - n
        ));
    }
    if let Some(why) = &listed.honcho_failed {
        out.push_str(&forget_honcho::unsearched(why));
    }
    out.push_str(&listed.unread);
    out.push_str("\n/forget N… removes those entries, /forget all every one; nothing is removed until you do.");
    out
}

/// Entry `n`: its place and, unless `withheld` (the room's bound, which its label is
/// above), its text.
fn render_entry(n: usize, f: &Found, query: &str, withheld: Option<DataClass>) -> String {
    let place = match f.place {
        Place::Record { epoch, line } => format!("epoch {epoch} line {}", line + 1),
        Place::Carry { epoch } => format!("epoch {epoch} head"),
        Place::Reminder { n } => format!("reminders.json, reminder {n}"),
        Place::Inbox { n } => format!("inbox.json, message {n}"),
    };
    let mut out = format!(
        "\n{n}. session {}: {} ({place}, {}):",
        f.session, f.kind, f.time
    );
    if let Some(max) = withheld {
        out.push_str(&format!(
            " labelled {}, above matrix.max_class ({max}): the list at the terminal shows it",
            f.label.class
        ));
        return out;
    }
    for line in excerpt(&f.text, query).lines() {
        out.push_str("\n   ");
        out.push_str(line);
    }
    out
}

/// `text` whole when short, else the `MAX_ENTRY_CHARS` around the first match (or its
/// start when the match is in a decoded form only), marked with what was left out.
fn excerpt(text: &str, query: &str) -> String {
    let chars = text.chars().count();
    if chars <= MAX_ENTRY_CHARS {
        return text.to_string();
    }
    let at_byte = proto::query::Query::parse(query).first(text).unwrap_or(0);
    let at = text[..at_byte].chars().count();
    let start = at.saturating_sub(MAX_ENTRY_CHARS / 2);
    let end = (start + MAX_ENTRY_CHARS).min(chars);
    let part: String = text.chars().skip(start).take(end - start).collect();
    format!(
        "{}{part}{}\n({chars} characters in all; the part around the match is shown)",
        if start > 0 { "…" } else { "" },
        if end < chars { "…" } else { "" }
    )
}

/// Sessions and files passed over that a reply names, one line each: a directory full of
/// damaged sessions or files put there by hand must not make a reply the connection (or a
/// Matrix message) cannot hold. Every one is in the journal.
const MAX_PASSED_NAMED: usize = 20;

/// What `find_all` passed over, each logged and named for the owner: the sessions it
/// could not read, and the files of the others it did not search (docs/forgetting.md,
/// 'Files not searched'). What they hold was neither listed nor removed, and only the
/// owner can mend, move or delete them. `said` is empty when everything was searched.
pub(super) struct Passed {
    pub(super) said: String,
    /// Where the search reached, for the reply: `on the box` when everywhere.
    pub(super) place: &'static str,
}

impl Passed {
    pub(super) fn of(session: &SessionId, searched: &Searched) -> Passed {
        let mut lines = Vec::new();
        for u in &searched.unread {
            plumbing::warn!(
                "session {session}: /forget could not search session {}: {}",
                u.session,
                u.error
            );
            lines.push(format!(
                "\nsession {} could not be searched, so what it holds is neither listed nor removed: {}; mend or move that file, then list again.",
                u.session, u.error
            ));
        }
        for n in &searched.not_searched {
            plumbing::warn!(
                "session {session}: /forget did not search {} in session {}: {}",
                n.path.display(),
                n.session,
                n.why
            );
            lines.push(format!(
                "\nsession {}: {} was not searched ({}), so what it holds is neither listed nor removed; look into that file, and delete or move it if it holds that.",
                n.session,
                n.path.display(),
                n.why
            ));
        }
        let more = lines.len().saturating_sub(MAX_PASSED_NAMED);
        lines.truncate(MAX_PASSED_NAMED);
        let mut said = lines.concat();
        if more > 0 {
            said.push_str(&format!(
                "\n{more} more sessions or files were passed over likewise; the journal names each."
            ));
        }
        let place = if !searched.unread.is_empty() {
            "in the sessions that could be read"
        } else if !searched.not_searched.is_empty() {
            "in the files searched"
        } else {
            "on the box"
        };
        Passed { said, place }
    }

    /// Whether every session and file was searched.
    pub(super) fn nothing(&self) -> bool {
        self.said.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conversation::forget::find::NotSearched;

    /// A session directory holding hundreds of files that hold the words, none of them an
    /// epoch's: the reply names the first few and counts the rest, where it named each.
    #[test]
    fn what_was_passed_over_is_named_up_to_a_bound_and_the_rest_counted() {
        let searched = Searched {
            found: Vec::new(),
            unread: Vec::new(),
            not_searched: (0..500)
                .map(|n| NotSearched {
                    session: "main".into(),
                    path: format!("/s/main/copy-{n}.txt").into(),
                    why: "no epoch's head or log".into(),
                })
                .collect(),
        };
        let passed = Passed::of(&SessionId::parse("main").unwrap(), &searched);
        assert_eq!(
            passed.said.matches("was not searched").count(),
            MAX_PASSED_NAMED
        );
        assert!(passed.said.ends_with(
            "\n480 more sessions or files were passed over likewise; the journal names each."
        ));
        assert_eq!(passed.place, "in the files searched");
    }

    fn found(text: &str, class: DataClass) -> Found {
        Found {
            session: "main".into(),
            place: conversation::forget::find::Place::Record { epoch: 0, line: 3 },
            kind: "user",
            time: "2026-12-07T10:00:00.000Z".into(),
            text: text.into(),
            offset: 0,
            len: 0,
            label: proto::Label::new(class, false),
            call: None,
            event: None,
            allowed: None,
            reminder: None,
            heartbeat: None,
        }
    }

    /// Guards a `/forget` list asked from a Matrix room, a line "exactly as on the socket"
    /// (it used to be answered "ask at the terminal"): every entry is listed and numbered
    /// as at the terminal, and an entry labelled above `matrix.max_class` is its line
    /// alone, its text kept from the homeserver.
    #[test]
    fn a_rooms_list_numbers_every_entry_and_quotes_none_above_the_rooms_class() {
        let listed = || Listed {
            query: "pin".into(),
            found: vec![
                found("my gym pin is 2231", DataClass::Private),
                found("my bank pin is 4471", DataClass::Secret),
            ],
            honcho: Vec::new(),
            honcho_failed: None,
            unread: String::new(),
            shown: 0,
        };
        let room = ShownTo::Room(DataClass::Private, DataClass::Private);
        let page = render_page(&mut listed(), room);
        assert!(
            page.contains("\n1. session main: user ") && page.contains("2231"),
            "{page}"
        );
        assert!(page.contains("\n2. session main: user "), "{page}");
        assert!(!page.contains("4471"), "{page}");
        assert!(
            page.contains("labelled secret, above matrix.max_class (private): the list at the terminal shows it"),
            "{page}"
        );
        let terminal = render_page(&mut listed(), ShownTo::Terminal);
        assert!(
            terminal.contains("4471") && terminal.contains("2231"),
            "{terminal}"
        );
    }
}
