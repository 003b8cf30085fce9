//! The two commands that ask other servers — `/status` (llama.cpp, memoryd and the status
//! board) and `/recall` (memoryd) — each on a short-lived thread of its own, so neither the
//! poll loop nor the turn worker waits on them. The reply comes back as the job's `Done`.
//! `/recall` is for a person at a terminal: each hit is cut to a screenful and says how
//! long it is whole (the `recall` tool gives the model the hits whole), its header is
//! loopd's own line in memoryd's rendering and its text is streamed as the model's text is,
//! so nothing a hit holds can pass for a header, an activity line or an error
//! (docs/channel.md, 'Quoted text').

use crate::worker::{Event, Failure, JobId, Notifier, Reply};
use conversation::status::{context_text, Board, SessionView};
use llama::Client;
use proto::config::Config;
use proto::memory::{Hit, MemoryStatus};
use proto::{DataClass, SessionId};

/// The most characters of one hit `/recall` shows: about six lines of an 80-column
/// terminal, so eight hits fit in a few screens and each can still be recognised.
const HIT_SHOWN_CHARS: usize = 480;

/// The most lines of one hit `/recall` shows, for hits made of many short lines.
const HIT_SHOWN_LINES: usize = 6;

/// Runs `/status` on its own thread and sends the reply as job `id`'s `Done`. `client` is
/// the daemon's one llama.cpp client; its `/health` is bounded by `llama::PROBE_TIMEOUT`,
/// and the poll loop never waits for it.
pub(crate) fn spawn_status(
    id: JobId,
    cfg: &Config,
    client: Client,
    session: SessionId,
    mail: String,
    board: Board,
    notify: Notifier,
) {
    let memory = cfg.memory.socket.clone();
    let n_ctx = cfg.expect.n_ctx;
    spawn(notify.clone(), id, move || {
        let mut out = format!("session: {session}\n");
        out.push_str(&session_lines(board.get(session.as_str()), n_ctx));
        match client.health() {
            Ok(()) => out.push_str(&format!("llama.cpp: reachable at {}\n", client.base_url())),
            Err(e) => out.push_str(&format!("llama.cpp: unreachable: {e}\n")),
        }
        out.push_str(&board.background().lines());
        out.push_str(&mail);
        out.push_str(&memoryd_line(&memory));
        Ok(out)
    });
}

/// `/status`'s lines about the session: its epoch, context and label, and what memory
/// brought into its last turn.
fn session_lines(view: Option<SessionView>, n_ctx: u64) -> String {
    let mut out = String::new();
    match view {
        Some(SessionView::Open {
            epoch,
            records,
            usage,
            label,
            memory: last_memory,
        }) => {
            out.push_str(&format!("epoch: {epoch} ({records} records)\n"));
            out.push_str(&format!(
                "context: {}\n",
                context_text(usage.as_ref(), n_ctx)
            ));
            out.push_str(&format!("label: {label}\n"));
            // What memory brought into the last turn, as the model read it
            // (docs/turn.md, 'Memory in the turn').
            match last_memory {
                Some((label, content)) => {
                    out.push_str(&format!("last turn from memory ({label}):\n"));
                    for line in content.lines() {
                        out.push_str(&format!("  {line}\n"));
                    }
                }
                None => out.push_str("last turn from memory: nothing\n"),
            }
        }
        Some(SessionView::New) => {
            out.push_str("epoch: 0 (new: nothing written yet)\n");
            out.push_str(&format!("context: {}\n", context_text(None, n_ctx)));
            out.push_str("label: public\n");
        }
        Some(SessionView::Broken(e)) => out.push_str(&format!("log: cannot be opened: {e}\n")),
        None => out.push_str("epoch: not opened yet\n"),
    }
    out
}

/// `/status`'s last line: memoryd at `socket`, asked how much it holds.
fn memoryd_line(socket: &std::path::Path) -> String {
    match conversation::memory::status(socket) {
        Ok(s) => format!(
            "memoryd: reachable at {} ({} logs, {} rows; {})",
            socket.display(),
            s.logs,
            s.rows,
            backfill_text(&s)
        ),
        Err(conversation::memory::MemoryError::Refused(m)) => {
            format!("memoryd: reachable at {}, but: {m}", socket.display())
        }
        Err(e) => format!("memoryd: unreachable: {e}"),
    }
}

/// Runs `/recall QUERY` against memoryd on its own thread: each hit's header as loopd's
/// own line and its text as text, then the count of weaker matches as the end.
pub(crate) fn spawn_recall(
    id: JobId,
    cfg: &Config,
    query: String,
    max_class: DataClass,
    notify: Notifier,
) {
    let mut memory = cfg.memory.clone();
    memory.max_class = max_class;
    let events = notify.clone();
    spawn(notify, id, move || {
        let mut hits = conversation::memory::recall(&memory, &query).map_err(Failure::Memory)?;
        // memoryd answers nothing above the class asked; a hit that says otherwise (a
        // fault, or another build) is not shown where that class was the bound.
        hits.retain(|h| h.label.class <= memory.max_class);
        let (shown, rest) = shown(hits, &query, memory.hit_chars as usize);
        for hit in shown {
            events.send(Event::HitHeader {
                id,
                tainted: hit.tainted,
                session: hit.session,
                time: hit.time,
            });
            events.send(Event::Text { id, text: hit.text });
        }
        Ok(rest)
    });
}

/// memoryd's vector backfill: how many rows have their vector and how many wait.
fn backfill_text(s: &MemoryStatus) -> String {
    if s.vectors_pending == 0 {
        format!("vectors: {} rows, backfill done", s.vectors)
    } else {
        format!(
            "vectors: {} rows, backfill running: {} rows pending",
            s.vectors, s.vectors_pending
        )
    }
}

/// The least `Hit::relevance` a hit needs to be shown by `/recall`: a third of the
/// query's content words (or that similarity by meaning). Below it a hit shares a word
/// with the query by chance, and a screen of those hides the one that answers.
pub(crate) const SHOWN_FLOOR: u16 = 334;

/// One hit as `/recall` shows it.
#[derive(Debug, PartialEq, Eq)]
struct Shown {
    /// Its header line, `memory · session <session> · <time>`, starts `memory-tainted`
    /// when this is set (`reply::Block::hit_header` writes it).
    tainted: bool,
    session: String,
    time: String,
    /// `the owner said: …` or `the assistant said: …`, every further line of the hit
    /// indented by two spaces, ending in a newline.
    text: String,
}

/// `/recall`'s reply: the relevant hits, each the passage around what matched
/// (`memory.hit_chars`) cut to a screenful, and the text that ends the block (no match, or
/// how many weaker matches were left out).
fn shown(hits: Vec<Hit>, query: &str, hit_chars: usize) -> (Vec<Shown>, String) {
    let total = hits.len();
    let relevant: Vec<Hit> = hits
        .into_iter()
        .filter(|h| h.relevance >= SHOWN_FLOOR)
        .map(|mut h| {
            proto::memory::clip_to_passage(&mut h, query, hit_chars);
            h
        })
        .collect();
    let left_out = total - relevant.len();
    let mut rest = String::new();
    if relevant.is_empty() {
        rest.push_str("no memories match");
    }
    if left_out > 0 {
        if !rest.is_empty() {
            rest.push('\n');
        }
        rest.push_str(&format!(
            "({left_out} weaker match{} left out)",
            if left_out == 1 { "" } else { "es" }
        ));
    }
    let shown = for_the_screen(relevant)
        .into_iter()
        .map(|hit| {
            let who = if hit.role == "owner" {
                "the owner said"
            } else {
                "the assistant said"
            };
            Shown {
                tainted: hit.label.untrusted,
                session: hit.session,
                time: hit.time,
                text: {
                    let mut text = format!("{who}: ");
                    proto::memory::push_indented(&mut text, &hit.text);
                    text.push('\n');
                    text
                },
            }
        })
        .collect();
    (shown, rest)
}

/// Hits cut to a screenful each, every cut one saying the hit's whole length.
fn for_the_screen(hits: Vec<Hit>) -> Vec<Hit> {
    hits.into_iter()
        .map(|mut hit| {
            if let Some(short) = shortened(&hit.text) {
                hit.text = short;
            }
            hit
        })
        .collect()
}

/// `text` cut at `HIT_SHOWN_CHARS` characters or `HIT_SHOWN_LINES` lines, whichever
/// comes first, with its length in characters; `None` when it fits whole.
fn shortened(text: &str) -> Option<String> {
    let by_lines = text
        .match_indices('\n')
        .nth(HIT_SHOWN_LINES - 1)
        .map(|(at, _)| at);
    let by_chars = text.char_indices().nth(HIT_SHOWN_CHARS).map(|(at, _)| at);
    let cut = match (by_lines, by_chars) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    let total = text.chars().count();
    Some(format!(
        "{} … [shortened: {total} characters in all]",
        text[..cut].trim_end()
    ))
}

fn spawn(notify: Notifier, id: JobId, f: impl FnOnce() -> Reply + Send + 'static) {
    let fallback = notify.clone();
    let spawned = std::thread::Builder::new()
        .name("command".into())
        .spawn(move || {
            notify.done(id, f());
        });
    if let Err(e) = spawned {
        fallback.done(id, Err(Failure::NoThread(e)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_recall_hit_is_cut_to_a_screenful_that_says_its_whole_length() {
        let text = "é".repeat(4400);
        let short = shortened(&text).unwrap();
        assert!(short.starts_with(&"é".repeat(HIT_SHOWN_CHARS)));
        assert!(!short.starts_with(&"é".repeat(HIT_SHOWN_CHARS + 1)));
        assert!(
            short.ends_with("… [shortened: 4400 characters in all]"),
            "{short}"
        );
    }

    #[test]
    fn a_recall_hit_of_many_short_lines_is_cut_by_lines() {
        let text = (1..=20)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let short = shortened(&text).unwrap();
        assert_eq!(short.lines().count(), HIT_SHOWN_LINES);
        assert!(short.starts_with("line 1\n"));
        assert!(short.contains("line 6 … [shortened: "), "{short}");
    }

    #[test]
    fn a_short_recall_hit_is_shown_whole() {
        assert_eq!(shortened("dentist on Thursday at 3pm"), None);
        let fits = "x".repeat(HIT_SHOWN_CHARS);
        assert_eq!(shortened(&fits), None);
    }

    fn hit(role: &str, untrusted: bool, text: &str, relevance: u16) -> Hit {
        let label = proto::Label::new(proto::DataClass::Private, untrusted);
        Hit {
            relevance,
            ..proto::test_records::hit(role, text, label)
        }
    }

    #[test]
    fn a_recall_hit_is_its_header_fields_and_its_indented_text() {
        let (shown_hits, rest) = shown(
            vec![
                hit("owner", false, "tea at four\n· http_fetch /allow 1", 1000),
                hit("assistant", true, "noted", 1000),
                hit("owner", false, "weak", 1),
            ],
            "tea",
            600,
        );
        assert_eq!(
            shown_hits,
            [
                Shown {
                    tainted: false,
                    session: "main".into(),
                    time: "2026-11-30T06:00:00.000Z".into(),
                    text: "the owner said: tea at four\n  · http_fetch /allow 1\n".into(),
                },
                Shown {
                    tainted: true,
                    session: "main".into(),
                    time: "2026-11-30T06:00:00.000Z".into(),
                    text: "the assistant said: noted\n".into(),
                },
            ]
        );
        assert_eq!(rest, "(1 weaker match left out)");
        assert_eq!(
            shown(vec![], "tea", 600),
            (vec![], "no memories match".to_string())
        );
    }

    #[test]
    fn status_says_whether_the_vector_backfill_is_done() {
        let mut s = MemoryStatus {
            vectors: 120,
            ..MemoryStatus::default()
        };
        assert_eq!(backfill_text(&s), "vectors: 120 rows, backfill done");
        s.vectors_pending = 30;
        assert_eq!(
            backfill_text(&s),
            "vectors: 120 rows, backfill running: 30 rows pending"
        );
    }
}
