//! Session ids: the one name that becomes a directory under `sessions/`, so its alphabet is
//! small enough that no id can climb out of that directory or collide by case.

use std::fmt;

/// Longest id: one leading character plus 62 more, as in `[a-z0-9][a-z0-9-]{0,62}`.
pub const MAX_SESSION_ID: usize = 63;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSessionId(pub String);

impl fmt::Display for BadSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Quoted up to one character past the longest id: a frame or a line can carry a
        // megabyte of anything here, and this message reaches the journal.
        let n = self.0.chars().count();
        let shown: String = self.0.chars().take(MAX_SESSION_ID + 1).collect();
        let cut = if n > MAX_SESSION_ID + 1 {
            format!("… ({n} characters)")
        } else {
            String::new()
        };
        write!(
            f,
            "session id {shown:?}{cut} must be 1 to {MAX_SESSION_ID} of a-z, 0-9 and '-', not starting with '-'"
        )
    }
}

impl std::error::Error for BadSessionId {}

impl SessionId {
    pub fn parse(s: &str) -> Result<SessionId, BadSessionId> {
        let ok_char = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        let b = s.as_bytes();
        let valid = !b.is_empty()
            && b.len() <= MAX_SESSION_ID
            && ok_char(b[0])
            && b[1..].iter().all(|&c| ok_char(c) || c == b'-');
        if valid {
            Ok(SessionId(s.to_string()))
        } else {
            Err(BadSessionId(s.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_alphabet_and_refuses_the_rest() {
        for ok in ["main", "a", "0-x", &"a".repeat(63)] {
            assert!(SessionId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "Main", "a/b", "..", "a b", &"a".repeat(64), "é"] {
            assert!(SessionId::parse(bad).is_err(), "{bad}");
        }
    }

    /// Guards the journal: a client's megabyte "id" is not quoted whole.
    #[test]
    fn a_long_bad_id_is_quoted_only_in_part() {
        let said = SessionId::parse(&"A".repeat(200_000))
            .unwrap_err()
            .to_string();
        assert!(said.len() < 200, "{said}");
        assert!(said.contains("(200000 characters)"), "{said}");
    }
}
