//! Honcho's rule for the names loopd sends it: workspace, session and peer ids must match
//! `^[a-zA-Z0-9_-]+$` and hold at most 512 characters (its `RESOURCE_NAME_PATTERN` and the
//! `max_length` of `WorkspaceCreate`, `SessionCreate` and `PeerCreate`). Honcho does not
//! refuse a bad name cleanly on the messages route: a bad workspace or session name fails
//! inside it as HTTP 500, retried for ever, and a bad peer name as 422 on every batch. So
//! the names are checked before the reporter starts, and a bad one is an error naming its
//! key.

use proto::config::Honcho;
use std::fmt;

/// Honcho's longest workspace, session or peer id.
pub const MAX_NAME_CHARS: usize = 512;

/// A `[honcho]` name Honcho would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadName {
    /// The config key, such as `honcho.workspace`.
    pub key: &'static str,
    pub value: String,
    pub why: &'static str,
}

impl fmt::Display for BadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} = {:?} {}; Honcho accepts only letters, digits, '-' and '_', 1 to {MAX_NAME_CHARS} characters",
            self.key, self.value, self.why
        )
    }
}

impl std::error::Error for BadName {}

/// Why `name` breaks Honcho's rule, or `None` when it keeps it.
pub fn fault(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some("is too long")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        Some("holds a character Honcho refuses")
    } else {
        None
    }
}

/// Checks every name `[honcho]` gives. `honcho.session` may be empty (each boxmaker
/// session reports under its own id, which always keeps the rule).
pub fn check(cfg: &Honcho) -> Result<(), BadName> {
    let names = [
        ("honcho.workspace", &cfg.workspace, false),
        ("honcho.session", &cfg.session, true),
        ("honcho.owner_peer", &cfg.owner_peer, false),
        ("honcho.assistant_peer", &cfg.assistant_peer, false),
    ];
    for (key, value, may_be_empty) in names {
        if may_be_empty && value.is_empty() {
            continue;
        }
        if let Some(why) = fault(value) {
            return Err(BadName {
                key,
                value: value.clone(),
                why,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honchos_name_rule_is_kept_exactly() {
        assert_eq!(fault("main-1_X"), None);
        assert_eq!(fault(&"a".repeat(MAX_NAME_CHARS)), None);
        assert_eq!(fault(&"a".repeat(MAX_NAME_CHARS + 1)), Some("is too long"));
        assert_eq!(fault(""), Some("is empty"));
        for bad in ["a.b", "a b", "a/b", "é", "scope.x"] {
            assert!(fault(bad).is_some(), "{bad}");
        }
    }

    /// Regression: a bad name was sent as it was; Honcho answered 500 (workspace,
    /// session: retried for ever) or 422 (peer: every batch dropped).
    #[test]
    fn a_bad_name_in_any_honcho_key_is_an_error_naming_the_key() {
        let good = Honcho::default();
        assert_eq!(check(&good), Ok(()));
        type Spoil = fn(&mut Honcho);
        let cases: [(&str, Spoil); 4] = [
            ("honcho.workspace", |h| h.workspace = "my workspace".into()),
            ("honcho.session", |h| h.session = "a.b".into()),
            ("honcho.owner_peer", |h| h.owner_peer = String::new()),
            ("honcho.assistant_peer", |h| {
                h.assistant_peer = "x".repeat(600)
            }),
        ];
        for (key, spoil) in cases {
            let mut cfg = Honcho::default();
            spoil(&mut cfg);
            let e = check(&cfg).unwrap_err();
            assert_eq!(e.key, key);
            let text = e.to_string();
            assert!(text.starts_with(key), "{text}");
            assert!(text.contains("letters, digits"), "{text}");
        }
    }
}
