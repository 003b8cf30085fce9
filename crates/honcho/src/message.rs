//! Turning finished turns into Honcho messages, and choosing the next batch to post.
//!
//! Each owner turn gives the owner's message (peer `owner_peer`) and then the final answer
//! (peer `assistant_peer`), each with the record's `time` as `created_at` and a stable id
//! in its metadata. Heartbeat turns give none. A text longer than Honcho accepts is sent
//! as several messages in order, so nothing is refused for its length, and a text holding
//! a tokenizer's special token is posted with that token broken ([`posted_text`]), so
//! nothing is refused for its words either (docs/honcho.md, 'What is posted').

use super::cursor::Cursor;
use super::label::{LabelError, Labeller};
use super::scan::{Scan, Turn};
use proto::Origin;
use proto::{DataClass, Label};
use serde_json::{json, Value};
use std::borrow::Cow;

/// Honcho refuses a batch of more than 100 messages (`MessageBatchCreate`).
pub const MAX_BATCH: usize = 100;

/// Honcho's default `MAX_MESSAGE_SIZE`: a message's content may hold at most this many
/// characters (Unicode code points, as Python counts them). Longer texts are split so that
/// one long answer is not refused. The setting is the server's own and may be lower; the
/// reporter starts from this and cuts smaller when a server refuses a piece as too long
/// (see `sync`), so this is where cutting starts, not a limit loopd imposes.
pub const MAX_MESSAGE_CHARS: usize = 25_000;

/// The smallest piece a text is cut to however often a server refuses pieces as too long:
/// below this a "too long" answer is not about length, and the message is passed over.
pub const MIN_MESSAGE_CHARS: usize = 256;

/// The metadata key holding a message's stable id.
pub const ID_KEY: &str = "boxmaker_id";

/// The metadata key naming a message's record by its epoch, time and side (and part),
/// not by its byte offset: a forget rewrites a log and moves the offsets of every later
/// line, and `/forget` must still find what Honcho holds of a record reported before an
/// earlier forget of the same epoch moved it.
pub const RECORD_KEY: &str = "boxmaker_record";

/// The metadata key naming the boxmaker session, so that the reporter can ask Honcho for
/// the newest messages of one session even when several share a Honcho session.
pub const SESSION_KEY: &str = "boxmaker_session";

/// The peers from `[honcho]`, borrowed from the configuration the reporter runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peers<'a> {
    pub owner: &'a str,
    pub assistant: &'a str,
}

/// One message to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub id: String,
    /// See [`RECORD_KEY`].
    pub record: String,
    pub peer: String,
    pub content: String,
    pub created_at: String,
}

impl Outgoing {
    /// The message as Honcho's `MessageCreate`.
    pub fn to_json(&self, session: &str) -> Value {
        json!({
            "content": self.content,
            "peer_id": self.peer,
            "created_at": self.created_at,
            "metadata": { ID_KEY: self.id, RECORD_KEY: self.record, SESSION_KEY: session },
        })
    }
}

/// A message's id: `<session>/<epoch>/<offset of its record's line>/<owner|assistant>`,
/// with `/<part>` added for the second and later parts of a split text. It names the
/// record on disk, so it is the same however often the logs are scanned.
pub fn message_id(session: &str, epoch: u64, offset: u64, role: &str, part: usize) -> String {
    if part == 0 {
        format!("{session}/{epoch}/{offset}/{role}")
    } else {
        format!("{session}/{epoch}/{offset}/{role}/{part}")
    }
}

/// A message's [`RECORD_KEY`]: `<session>/<epoch>/<record time>/<owner|assistant>`, with
/// `/<part>` as in [`message_id`]. One side of one epoch never writes two records in the
/// same millisecond, so it names one record, wherever its line is.
pub fn record_key(session: &str, epoch: u64, time: &str, role: &str, part: usize) -> String {
    if part == 0 {
        format!("{session}/{epoch}/{time}/{role}")
    } else {
        format!("{session}/{epoch}/{time}/{role}/{part}")
    }
}

/// The invisible character put right after the `<` of a special token: the one loopd puts
/// into tool text for llama.cpp too. It is default-ignorable, so `/forget`'s matching
/// (`proto::query`) reads past it and a person sees nothing.
pub const TOKEN_BREAKER: char = proto::neutralise::BREAKER;

/// `text` as it is posted to Honcho (docs/honcho.md, 'What is posted'): NUL taken out, and
/// a [`TOKEN_BREAKER`] put after the `<` of every `<|` NAME `|>` run together (a NAME of
/// ASCII letters, digits and `_`). Honcho 3.0.12 counts a message's tokens with tiktoken (`o200k_base`,
/// in `MessageCreate`'s validator) and chunks it for embedding (`cl100k_base`) before the
/// create commits, both with tiktoken's default of refusing any special token in the
/// text: `endoftext` or `endofprompt` in that shape gets a 422 for the message, which
/// would be passed over for good, and `fim_prefix` a 500, which would hold the session
/// for ever. Every special token of tiktoken's encodings has that shape, and tiktoken
/// matches only the exact text. NUL goes first because Honcho takes it out before it
/// counts, so a NUL inside a special token would not save it there. (No source file holds
/// a special token whole; the tests build them from pieces.) Borrowed and unchanged when
/// there is nothing to change, which is nearly always.
pub fn posted_text(text: &str) -> Cow<'_, str> {
    let text: Cow<'_, str> = if text.contains('\0') {
        Cow::Owned(text.replace('\0', ""))
    } else {
        Cow::Borrowed(text)
    };
    let breaks: Vec<usize> = text
        .match_indices("<|")
        .filter(|&(i, _)| special_shaped(&text[i + 2..]))
        .map(|(i, _)| i + 1)
        .collect();
    if breaks.is_empty() {
        return text;
    }
    let mut out = String::with_capacity(text.len() + breaks.len() * TOKEN_BREAKER.len_utf8());
    let mut from = 0;
    for at in breaks {
        out.push_str(&text[from..at]);
        out.push(TOKEN_BREAKER);
        from = at;
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
}

/// Whether `after` (what follows a `<|`) goes on as NAME `|>`: the shape of tiktoken's
/// special tokens. The name cannot hold `<`, so looking ahead from every `<|` of a text
/// reads each character a bounded number of times.
fn special_shaped(after: &str) -> bool {
    let name = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    name > 0 && after[name..].starts_with("|>")
}

/// The pieces `text` is posted as: [`posted_text`] cut into pieces of at most `max_chars`
/// characters. The one place a message's content is made.
fn parts(text: &str, max_chars: usize) -> Vec<String> {
    split(&posted_text(text), max_chars)
}

/// The messages one turn gives, in the order they are posted, each text cut into pieces of
/// at most `max_chars` characters.
pub fn turn_messages(
    session: &str,
    turn: &Turn,
    peers: &Peers<'_>,
    max_chars: usize,
) -> Vec<Outgoing> {
    if turn.origin == Origin::Heartbeat {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (said, role, peer) in [
        (&turn.user, "owner", peers.owner),
        (&turn.answer, "assistant", peers.assistant),
    ] {
        for (part, content) in parts(&said.text, max_chars).into_iter().enumerate() {
            out.push(Outgoing {
                id: message_id(session, turn.epoch, said.offset, role, part),
                record: record_key(session, turn.epoch, &said.time, role, part),
                peer: peer.to_string(),
                content,
                created_at: said.time.clone(),
            });
        }
    }
    out
}

/// `text` in pieces of at most `max_chars` characters (at least one); an empty text is one
/// empty piece.
fn split(text: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut pieces = Vec::new();
    let mut rest = text;
    loop {
        let cut = rest
            .char_indices()
            .nth(max_chars)
            .map_or(rest.len(), |(i, _)| i);
        pieces.push(rest[..cut].to_string());
        rest = &rest[cut..];
        if rest.is_empty() {
            return pieces;
        }
    }
}

/// The next batch and the cursor to store once Honcho holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextBatch {
    pub batch: Vec<Outgoing>,
    /// `ends[i]`: the cursor to store once Honcho holds `batch[..=i]`, for when only part
    /// of a batch goes through (a message refused on its own).
    pub ends: Vec<Cursor>,
    pub after: Cursor,
}

/// What may be posted, and how: the labeller reading the logs, `honcho.max_class`, and
/// the most characters a message may hold.
pub struct PostRules<'a> {
    pub labels: &'a mut Labeller,
    pub max_class: DataClass,
    pub max_chars: usize,
}

/// A message of a scan not yet reported: to post, or held back for good because its
/// label is above `honcho.max_class`. Either way the cursor moves past it.
enum Item {
    Post(Outgoing),
    Withheld { id: String, label: Label },
}

/// The labels of a turn's messages, in [`turn_messages`]' order: the owner's words, then
/// the answer under the context it was written in.
fn turn_labels(turn: &Turn, labels: &mut Labeller) -> Result<[Label; 2], LabelError> {
    Ok([
        labels.owner_label(),
        labels.context_at(turn.epoch, turn.answer.offset)?,
    ])
}

/// Every message of `scan` that `from` does not already count as reported, each with the
/// cursor that counts it (and all before it) as reported.
fn pending(
    session: &str,
    scan: &Scan,
    from: &Cursor,
    peers: &Peers<'_>,
    gate: &mut PostRules<'_>,
) -> Result<Vec<(Item, Cursor)>, LabelError> {
    let mut out = Vec::new();
    for turn in &scan.turns {
        let messages = turn_messages(session, turn, peers, gate.max_chars);
        let labels = if messages.is_empty() {
            [Label::PUBLIC; 2]
        } else {
            turn_labels(turn, gate.labels)?
        };
        let owner_parts = parts(&turn.user.text, gate.max_chars).len();
        let total = messages.len();
        let skip = if (turn.epoch, turn.user.offset) == (from.epoch, from.offset) {
            from.done
        } else {
            0
        };
        for (k, m) in messages.into_iter().enumerate().skip(skip) {
            let after = if k + 1 == total {
                Cursor {
                    epoch: turn.epoch,
                    offset: turn.end,
                    done: 0,
                }
            } else {
                Cursor {
                    epoch: turn.epoch,
                    offset: turn.user.offset,
                    done: k + 1,
                }
            };
            // The owner's parts come first (see `turn_messages`); parts of one text share
            // its record, and so its label.
            let label = if k < owner_parts {
                labels[0]
            } else {
                labels[1]
            };
            let item = if label.class > gate.max_class {
                Item::Withheld { id: m.id, label }
            } else {
                Item::Post(m)
            };
            out.push((item, after));
        }
    }
    Ok(out)
}

/// The next batch of at most `max` messages from `scan`, which was read from `from`.
/// Messages held back by their label are passed over (the cursor moves past them) with a
/// `loopd:` line each, once: only those before the batch's end are passed over now.
pub fn plan(
    session: &str,
    scan: &Scan,
    from: &Cursor,
    peers: &Peers<'_>,
    max: usize,
    gate: &mut PostRules<'_>,
) -> Result<NextBatch, LabelError> {
    let all = pending(session, scan, from, peers, gate)?;
    let mut batch = Vec::new();
    let mut ends = Vec::new();
    let mut last = *from;
    for (item, cursor) in all {
        match item {
            // The batch is full: the cursor rests just past the last message it passed.
            Item::Post(_) if batch.len() == max => {
                return Ok(NextBatch {
                    batch,
                    ends,
                    after: last,
                })
            }
            Item::Post(m) => {
                batch.push(m);
                ends.push(cursor);
            }
            Item::Withheld { id, label } => plumbing::notice!(
                "honcho: session {session}: message {id} is {label}, above honcho.max_class ({}); it is passed over for good, not posted",
                gate.max_class
            ),
        }
        last = cursor;
    }
    // Everything found is passed, so the cursor may move on to where the scan rested.
    Ok(NextBatch {
        batch,
        ends,
        after: scan.rest,
    })
}

/// How many messages of `scan` (read from `from`) are still to be posted; those held back
/// by their label are not counted. Logs nothing: this only answers `/status`.
pub fn count_pending(
    session: &str,
    scan: &Scan,
    from: &Cursor,
    peers: &Peers<'_>,
    gate: &mut PostRules<'_>,
) -> Result<usize, LabelError> {
    Ok(pending(session, scan, from, peers, gate)?
        .iter()
        .filter(|(item, _)| matches!(item, Item::Post(_)))
        .count())
}

/// A timestamp as something that orders by time (the tests compare Honcho's form with
/// loopd's by it): a UTC `2026-11-30T04:34:57.1Z` (or `+00:00`) as its date and time,
/// then its fraction padded to nanoseconds. A time in another form sorts after everything.
#[cfg(any(test, feature = "test-support"))]
pub fn time_key(t: &str) -> (String, String) {
    let utc = t
        .strip_suffix('Z')
        .or_else(|| t.strip_suffix("+00:00"))
        .filter(|s| s.len() >= 19 && s.is_char_boundary(19));
    let Some(s) = utc else {
        return ("~".into(), String::new());
    };
    let (whole, frac) = s.split_at(19);
    let digits: String = frac.trim_start_matches('.').chars().take(9).collect();
    (whole.to_string(), format!("{digits:0<9}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_the_record_and_its_part() {
        let id = message_id("main", 3, 120, "assistant", 0);
        assert_eq!(id, "main/3/120/assistant");
        assert_eq!(message_id("main", 3, 120, "owner", 2), "main/3/120/owner/2");
    }

    #[test]
    fn long_texts_split_on_character_boundaries() {
        assert_eq!(split("", MAX_MESSAGE_CHARS), vec![String::new()]);
        let text = "é".repeat(MAX_MESSAGE_CHARS * 2 + 1);
        let pieces = split(&text, MAX_MESSAGE_CHARS);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0].chars().count(), MAX_MESSAGE_CHARS);
        assert_eq!(pieces[2], "é");
        assert_eq!(pieces.concat(), text);
    }

    /// tiktoken's special tokens of the encodings Honcho 3.0.12 uses, built from pieces
    /// (`o200k_base` counts a message, `cl100k_base` chunks it for embedding).
    fn special_tokens() -> Vec<String> {
        [
            "endoftext",
            "endofprompt",
            "fim_prefix",
            "fim_middle",
            "fim_suffix",
        ]
        .iter()
        .map(|name| special(name))
        .collect()
    }

    fn special(name: &str) -> String {
        format!("{}{name}{}", "<|", "|>")
    }

    #[test]
    fn special_tokens_are_broken_and_nothing_else_is_touched() {
        for token in special_tokens() {
            let text = format!("what does {token} mean? {token}{token}");
            let posted = posted_text(&text);
            assert!(!posted.contains(&token), "{posted:?}");
            assert_eq!(
                posted.replace(TOKEN_BREAKER, ""),
                text,
                "only the breaker added"
            );
            assert_eq!(posted_text(&posted), posted, "idempotent");
        }
        for plain in [
            "plain",
            "a <|> b",
            "Elm: f <| x |> g",
            "<|a b|>",
            "<|",
            "|>",
            "<|<|",
        ] {
            assert!(matches!(posted_text(plain), Cow::Borrowed(_)), "{plain}");
        }
        let eot = special("endoftext");
        let broken = eot.replacen('<', &format!("<{TOKEN_BREAKER}"), 1);
        assert_eq!(posted_text(&format!("<|{eot}")), format!("<|{broken}"));
    }

    /// Honcho takes NUL out of a message before it counts its tokens, so a NUL inside a
    /// special token must not save it from the break.
    #[test]
    fn a_nul_inside_a_special_token_does_not_hide_it() {
        let (eot, eop) = (special("endoftext"), special("endofprompt"));
        let logged = format!(
            "{} and {}",
            eot.replacen("of", "of\0", 1),
            eop.replacen('<', "<\0", 1)
        );
        let posted = posted_text(&logged);
        let broken = |t: &str| t.replacen('<', &format!("<{TOKEN_BREAKER}"), 1);
        assert_eq!(posted, format!("{} and {}", broken(&eot), broken(&eop)));
    }

    /// What is posted stays findable by `/forget`'s matching of the words in the log.
    #[test]
    fn the_posted_text_is_found_by_a_forget_of_the_logged_words() {
        use proto::query::Query;
        let eot = special("endoftext");
        let logged = format!("what does {eot} mean in GPT tokenizers?");
        let posted = posted_text(&logged);
        assert_ne!(posted, logged);
        for words in [
            logged.clone(),
            "endoftext".into(),
            format!("\"{eot} mean\""),
        ] {
            assert!(
                Query::parse(&words).matches(&posted),
                "{words:?} in {posted:?}"
            );
        }
    }
}
