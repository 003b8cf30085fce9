//! Asking the llama.cpp server which spans of a text its tokenizer would read as special
//! tokens, so tool text can be broken exactly there (`proto::neutralise_spans`), whatever
//! model is served, beyond the static list in `proto::neutralise`.
//!
//! `POST /tokenize` with `with_pieces: true` returns each token's id and text; with
//! `parse_special: true` a control sequence such as ChatML's turn opener (`<|` `im_start` `|>`) or SmolLM2's
//! `<filename>` comes back as one token, with `parse_special: false` as plain pieces
//! (docs/llama-api.md). A token of the first answer whose id is not in the second is a
//! special token; its piece is the span to break. What a model is found to treat as
//! special is remembered per model (`GET /props` `model_path`) in the client's
//! [`Specials`], so when the server cannot be asked later every span seen before is still
//! broken, with the static list besides.
//! The two HTTP calls are the `ModelServer` trait's (`model_path`, `special_spans`), so a
//! scripted model in unit tests answers them too.

use super::ModelServer;
use proto::neutralise_spans;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How long one `/tokenize` call may take (`/props` has the probes' timeout, as
/// docs/llama-api.md says). Tokenizing 16 000 characters takes milliseconds; a server
/// that needs seconds is busy or gone, and the static list stands in rather than
/// holding up the turn.
pub const TOKENIZE_TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes of `/tokenize` answer allowed per byte of text asked about. A token covers at
/// least one byte of text and takes about 30 bytes of JSON (`{"id":12345,"piece":"x"}`);
/// a piece that is not whole UTF-8 comes as a list of byte values, a few more. An answer
/// past this is not an answer about this text, and is refused unread rather than held.
const ANSWER_BYTES_PER_TEXT_BYTE: u64 = 64;

/// Answer bytes allowed whatever the text's length: the envelope and a short text.
const ANSWER_BYTES_BASE: u64 = 64 * 1024;

/// Largest answer read from `/tokenize` at all, however long the text.
const MAX_ANSWER_BYTES: u64 = 8 * 1024 * 1024;

/// Special spans remembered per model, at most this many per model: a vocabulary has a
/// few hundred special tokens at most.
const MAX_SPECIALS_PER_MODEL: usize = 4096;

/// Models remembered: one server serves one model; a few reloads of other models fit.
const MAX_MODELS: usize = 16;

/// What a client has learnt of the models served behind it: the spans each reads as
/// special. Owned by the one llama.cpp client (`ModelServer::specials`).
#[derive(Default)]
pub struct Specials {
    /// Spans known to be special, per model path.
    known: Mutex<HashMap<String, BTreeSet<String>>>,
    /// Whether the last ask failed and was reported.
    warned: AtomicBool,
}

impl Specials {
    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<String>>> {
        // The map is whole between statements: a panic elsewhere cannot leave it torn.
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `text` with every control sequence broken: the static list, then each span the
/// server behind `llama` says its model reads as special (and every span seen for that
/// model before). When the server cannot be asked, the remembered spans and the static
/// list.
pub fn neutralise_for_model(llama: &dyn ModelServer, text: &str) -> String {
    let base_url = llama.base_url();
    // Asked of the text as the static list leaves it: what is left special is exactly
    // what the static list does not know.
    let first = proto::neutralise(text).into_owned();
    let model = llama.model_path();
    let found = llama.special_spans(&first);
    let specials = llama.specials();
    let spans: Vec<String> = match (&model, found) {
        (model, Ok(found)) => {
            specials.warned.store(false, Ordering::Relaxed);
            let mut map = specials.known();
            let key = model.clone().unwrap_or_default();
            if !map.contains_key(&key) && map.len() >= MAX_MODELS {
                map.clear();
            }
            let set = map.entry(key).or_default();
            for span in found {
                if set.len() < MAX_SPECIALS_PER_MODEL {
                    set.insert(span);
                }
            }
            set.iter().cloned().collect()
        }
        (model, Err(why)) => {
            // Once per run of failures, not per tool result: a server without
            // `/tokenize` would otherwise fill the journal.
            if !specials.warned.swap(true, Ordering::Relaxed) {
                plumbing::warn!(
                "llama.cpp at {base_url} could not say which spans are special tokens ({why}); tool text is broken by the static list and the spans seen before"
                );
            }
            let map = specials.known();
            map.get(&model.clone().unwrap_or_default())
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default()
        }
    };
    neutralise_spans(&first, &spans).into_owned()
}

/// The most of a `/tokenize` answer read for `text`.
fn answer_cap(text: &str) -> u64 {
    (text.len() as u64)
        .saturating_mul(ANSWER_BYTES_PER_TEXT_BYTE)
        .saturating_add(ANSWER_BYTES_BASE)
        .min(MAX_ANSWER_BYTES)
}

/// One token of a `/tokenize` answer; `piece` is a string, or a list of byte values.
#[derive(serde::Deserialize)]
struct Token {
    id: Option<u64>,
    #[serde(default)]
    piece: Value,
}

/// Why the server could not say how it tokenizes a text. Every variant names
/// `POST /tokenize`, so a warning built from it says which call failed.
#[derive(Debug)]
pub enum TokenizeError {
    /// No answer, an HTTP error status, or no tokenizer to ask at all.
    Request(String),
    /// The answer could not be read whole within the cap for this text.
    Body(super::body::BodyError),
    /// The answer was not a `tokens` list of ids and pieces.
    Json(serde_json::Error),
    /// A token of the answer had no numeric `id`.
    NoId,
}

impl fmt::Display for TokenizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenizeError::Request(why) => write!(f, "POST /tokenize: {why}"),
            TokenizeError::Body(e) => {
                write!(f, "POST /tokenize: {e} (the most read for this text)")
            }
            TokenizeError::Json(e) => write!(
                f,
                "POST /tokenize: the answer is not a `tokens` list of ids and pieces: {e}"
            ),
            TokenizeError::NoId => write!(f, "POST /tokenize: a token without a numeric `id`"),
        }
    }
}

impl std::error::Error for TokenizeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenizeError::Body(e) => Some(e),
            TokenizeError::Json(e) => Some(e),
            TokenizeError::Request(_) | TokenizeError::NoId => None,
        }
    }
}

#[derive(serde::Deserialize)]
struct Answer {
    tokens: Vec<Token>,
}

/// The pieces of `text` the server's tokenizer reads as special tokens.
pub fn special_spans(
    agent: &ureq::Agent,
    base_url: &str,
    text: &str,
) -> Result<Vec<String>, TokenizeError> {
    let with = tokenize(agent, base_url, text, true)?;
    let without: HashSet<u64> = tokenize(agent, base_url, text, false)?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut spans: Vec<String> = with
        .into_iter()
        .filter(|(id, _)| !without.contains(id))
        .filter_map(|(_, piece)| piece)
        .collect();
    spans.sort();
    spans.dedup();
    Ok(spans)
}

/// Characters counted as one token when the server cannot be asked: English runs near
/// four characters a token in the tokenizers served, so three over-counts, which is the
/// safe side for a bound (docs/turn.md, 'Memory in the turn').
pub const CHARS_PER_TOKEN: u64 = 3;

/// The tokens the server's tokenizer reads in `text`, control sequences as it would
/// read them in a prompt.
pub fn count_tokens(agent: &ureq::Agent, base_url: &str, text: &str) -> Result<u64, TokenizeError> {
    Ok(tokenize(agent, base_url, text, true)?.len() as u64)
}

/// `text`'s tokens as the server behind `llama` counts them, or at `CHARS_PER_TOKEN`
/// characters a token (rounded up) when it cannot be asked.
pub fn tokens_of(llama: &dyn ModelServer, text: &str) -> u64 {
    llama
        .count_tokens(text)
        .unwrap_or_else(|_| estimate_tokens(text))
}

/// `text`'s tokens at `CHARS_PER_TOKEN` characters a token, rounded up.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(CHARS_PER_TOKEN)
}

/// Token ids and their text pieces (`None` for a piece that is not whole UTF-8, which the
/// server sends as a list of bytes).
fn tokenize(
    agent: &ureq::Agent,
    base_url: &str,
    text: &str,
    parse_special: bool,
) -> Result<Vec<(u64, Option<String>)>, TokenizeError> {
    let body = json!({
        "content": text,
        "add_special": false,
        "parse_special": parse_special,
        "with_pieces": true,
    });
    let answer = agent
        .post(&format!("{base_url}/tokenize"))
        .timeout(TOKENIZE_TIMEOUT)
        .set("Content-Type", "application/json")
        .send_string(&body.to_string())
        .map_err(|e| {
            TokenizeError::Request(match e {
                ureq::Error::Transport(t) => super::transport_words(&t),
                ureq::Error::Status(status, _) => format!("status code {status}"),
            })
        })?;
    let cap = answer_cap(text);
    let raw = super::body::read_capped(answer.into_reader(), cap).map_err(TokenizeError::Body)?;
    let answer: Answer = serde_json::from_slice(&raw).map_err(TokenizeError::Json)?;
    answer
        .tokens
        .into_iter()
        .map(|t| match (t.id, t.piece) {
            (Some(id), Value::String(p)) => Ok((id, Some(p))),
            (Some(id), _) => Ok((id, None)),
            (None, _) => Err(TokenizeError::NoId),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_cap_grows_with_the_text_up_to_its_bound() {
        assert_eq!(answer_cap(""), ANSWER_BYTES_BASE);
        assert_eq!(
            answer_cap("abcd"),
            ANSWER_BYTES_BASE + 4 * ANSWER_BYTES_PER_TEXT_BYTE
        );
        assert_eq!(answer_cap(&"x".repeat(1 << 20)), MAX_ANSWER_BYTES);
    }
}
