//! What the owner is shown of a URL the label policy refused, and whether `/allow N` may
//! fetch it (docs/labels.md, 'Refusals and `/allow N`'): its normal form, shown whole, or
//! why it is not offered.

use url::Url;

/// The longest URL offered for `/allow`, in characters of its normal form. The owner is
/// asked to read the URL before allowing it, and this is about six rows of an
/// 80-column terminal; a longer URL is shown cut and not offered at all (the owner can
/// still send it in a message of their own).
pub const MAX_OFFERED_URL: usize = 512;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
