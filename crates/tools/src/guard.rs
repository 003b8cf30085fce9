//! Where text may leave the box through a tool (docs/labels.md, "Where text may leave
//! the box"): the label policy checked before any tool runs, and so before any DNS lookup
//! or connection (looking up a composed host name leaks as surely as fetching it), and
//! what a refused URL looks like when it is offered to the owner for `/allow`.
//!
//! The threat is a model fully controlled by untrusted text in its context. Such a model
//! can put anything the context holds into a URL, so:
//! - a URL standing verbatim in an owner message of the current epoch is allowed: the
//!   owner chose it, it carries nothing from the context;
//! - any other URL is refused when the context is untrusted and at least
//!   `tools.http_fetch.guard_class`, and whenever the context holds `secret`.
//!
//! Choosing among the owner's URLs still says something (which of them, in what order),
//! so while the context is guarded each of the owner's URLs is fetched at most once per
//! owner line, and each URL the owner writes is one form (its closing punctuation is not
//! part of it) and one request (forms asking the same thing count once): the model's
//! choice is then a subset in an order, a bit per line for one URL (measured in the
//! tests below), instead of a string of any length spelled in fetches.
//!
//! `read_file` and `recall` only bring text in; they are always allowed (their results
//! raise the context label instead).

pub mod offer;

pub use offer::{offer, Offer};

use super::HTTP_FETCH;
use proto::{DataClass, Label, Origin, Record};
use serde_json::Value;
use url::Url;

/// The prefix of every policy refusal's tool result, so the model can tell a refusal
/// from a page.
pub const REFUSED_PREFIX: &str = "error: refused: ";

/// Characters that close a sentence or a bracket around a URL in prose without being part
/// of it: `see <https://x.org/a>.` or `(https://x.org/a),`. Terminals and chat clients
/// leave them out when they make a link, and so does loopd: the owner's URL is their token
/// with these cut from its end (docs/labels.md, 'The owner's URLs').
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '\'', '"'];

/// Whether `url` is one of the owner's URLs: it stands in one of the owner's messages
/// among `records` (the current epoch's) as a whitespace-delimited `http://` or `https://`
/// token, read as `owner_url` reads it. Exactly that form: a substring is not enough (a
/// prefix of the owner's URL could still spell out something else they wrote), and
/// neither is the token with its closing punctuation, so each URL the owner writes is one
/// request a model may make, not one per punctuation mark after it.
fn is_owner_url(url: &str, records: &[Record]) -> bool {
    records.iter().any(|r| match r {
        Record::User {
            content,
            origin: Origin::Owner,
            ..
        } => owner_url_tokens(content).any(|token| owner_url(token) == url),
        _ => false,
    })
}

/// The URL tokens of one owner message, as written (closing punctuation and all).
fn owner_url_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(char::is_whitespace).filter_map(|word| {
        let at = word.find("http://").or_else(|| word.find("https://"))?;
        Some(&word[at..])
    })
}

/// The URL in an owner's token: the token with every `TRAILING` character cut from its
/// end, except a closing bracket the URL itself opened (`…/wiki/Tea_(drink)` keeps its
/// `)`, as link makers keep it).
fn owner_url(token: &str) -> &str {
    let mut url = token;
    while let Some(last) = url.chars().next_back() {
        let opener = match last {
            ')' => Some('('),
            ']' => Some('['),
            '}' => Some('{'),
            _ => None,
        };
        let cut = match opener {
            Some(open) => url.matches(open).count() < url.matches(last).count(),
            None => TRAILING.contains(&last),
        };
        if !cut {
            break;
        }
        url = &url[..url.len() - last.len_utf8()];
    }
    url
}

/// What a fetch of `url` asks its server for: the URL's normal form without its
/// fragment, which is never sent. Two of the owner's URLs asking for the same thing are
/// one URL for the once-per-line bound.
fn request_of(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.to_string(),
    }
}

/// Why the label policy refused a call: `why` for the owner, and the URL a refused
/// `http_fetch` wanted, exactly as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub why: String,
    pub url: Option<String>,
}

impl Refusal {
    /// The reason the model and the `note` read: the tool, the URL and why.
    pub fn reason(&self) -> String {
        match &self.url {
            Some(url) => format!("{HTTP_FETCH} of {url} refused: {}", self.why),
            None => format!("{HTTP_FETCH} refused: {}", self.why),
        }
    }
}

/// What the policy lets a call do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Run it.
    Run,
    /// Run it: the owner's own URL while the context is guarded. Its `tool_result` is what
    /// keeps the URL from being fetched again before the owner's next line; the caller
    /// may tell the owner with `owner_fetch_note`.
    OwnerOnce(String),
}

/// The start of the `note` that tells the owner a guarded fetch of one of their URLs
/// happened; the URL as fetched follows the call number and `: `. Only for the owner to
/// read: the bound is read from the records (`fetched_since_owner_line`).
const OWNER_FETCH_NOTE: &str = "fetched the owner's url while the context is guarded, call ";

/// The `note` recording that call `number` fetched the owner's `url` under the guard.
pub fn owner_fetch_note(number: u64, url: &str) -> String {
    format!("{OWNER_FETCH_NOTE}{number}: {url}")
}

/// The label policy: may tool `name` run with the model's `arguments` when the epoch's
/// context label is `context` and its records are `records`? Arguments that are not a
/// JSON object with a string `url` pass here and fail in the tool itself, which fetches
/// nothing for them.
pub fn policy(
    name: &str,
    arguments: &str,
    context: Label,
    guard_class: DataClass,
    records: &[Record],
) -> Result<Allowed, Refusal> {
    if name != HTTP_FETCH {
        return Ok(Allowed::Run);
    }
    let Some(url) = url_of(arguments) else {
        return Ok(Allowed::Run);
    };
    let guarded = context.untrusted && context.class >= guard_class;
    if is_owner_url(&url, records) {
        if !guarded {
            return Ok(Allowed::Run);
        }
        return match fetched_since_owner_line(&url, records) {
            None => Ok(Allowed::OwnerOnce(url)),
            Some(call) => Err(Refusal {
                why: format!(
                    "the owner's url was already fetched since their last message (call {call}), and while the conversation holds untrusted text and {} data each of the owner's urls is fetched once per owner message, so that the order of fetches cannot spell out what the conversation holds",
                    context.class
                ),
                url: Some(url),
            }),
        };
    }
    let why = if context.class >= DataClass::Secret {
        Some("the conversation holds secret data".to_string())
    } else if guarded {
        Some(format!(
            "the conversation holds untrusted text and {} data (tools.http_fetch.guard_class is {guard_class})",
            context.class
        ))
    } else {
        None
    };
    match why {
        None => Ok(Allowed::Run),
        Some(why) => Err(Refusal {
            why: format!("{why}, and a url the owner did not send could carry it out"),
            url: Some(url),
        }),
    }
}

/// The call that fetched what `url` asks for since the owner's last line, if any, read
/// from loopd's own typed records (docs/labels.md, 'While the context is guarded'): each
/// `http_fetch` `tool_result` after the owner's last `user` record that no `refused`
/// record names (a refused call sent nothing), its URL taken from the call's arguments in
/// the `assistant` record before it. Never from a tool result's content (a page can say
/// anything) nor from a note's wording (notes are for the owner to read). A fetch made
/// before the guard came up counts too: the bound is one fetch of each of the owner's
/// URLs per owner line.
fn fetched_since_owner_line(url: &str, records: &[Record]) -> Option<u64> {
    let request = request_of(url);
    let since = records
        .iter()
        .rposition(|r| {
            matches!(
                r,
                Record::User {
                    origin: Origin::Owner,
                    ..
                }
            )
        })
        .map_or(0, |at| at + 1);
    let refused: Vec<u64> = records[since..]
        .iter()
        .filter_map(|r| {
            if let Record::Refused { call, .. } = r {
                Some(*call)
            } else {
                None
            }
        })
        .collect();
    records.iter().enumerate().skip(since).find_map(|(at, r)| {
        let Record::ToolResult {
            call,
            tool_call_id,
            name,
            ..
        } = r
        else {
            return None;
        };
        if name != HTTP_FETCH || refused.contains(call) {
            return None;
        }
        requested(&records[..at], tool_call_id)
            .iter()
            .any(|fetched| request_of(fetched) == request)
            .then_some(*call)
    })
}

/// The URLs the `http_fetch` calls with id `id` of the last `assistant` record in
/// `records` asked for. Ids are unique within one answer in every log loopd writes; in
/// one where they are not, the result counts as a fetch of each such call's URL, so the
/// bound can only get stricter.
fn requested(records: &[Record], id: &str) -> Vec<String> {
    proto::record::last_answer(records)
        .map_or(&[][..], |(_, calls)| calls)
        .iter()
        .filter(|c| c.id == id && c.name == HTTP_FETCH)
        .filter_map(|c| url_of(&c.arguments))
        .collect()
}

/// The string `url` of the model's JSON `arguments`, if they hold one.
pub fn url_of(arguments: &str) -> Option<String> {
    match serde_json::from_str::<Value>(arguments).ok()? {
        Value::Object(mut map) => match map.remove("url") {
            Some(Value::String(url)) => Some(url),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests;
