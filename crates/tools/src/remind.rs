//! The `remind` tool's schema and arguments (docs/reminders.md, "The remind tool"): the
//! model sets a reminder for the owner with `{when, text}`, `when` in the forms `/remind`
//! reads. Whether it may (not while the context is untrusted: a page must not schedule
//! messages to the owner) and the book it goes into are loopd's turn loop's
//! (`turn::tools_run`); this only reads what the model asked for.

use ::remind::{self, when, WhenError};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::fmt;

pub const REMIND: &str = "remind";

/// The schema sent to the model.
pub fn schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": REMIND,
            "description": "Set a reminder: at the given time the owner is sent the text, \
                            even when nobody is connected. Use it when the owner asks to be \
                            reminded of something.",
            "parameters": {
                "type": "object",
                "properties": {
                    "when": {
                        "type": "string",
                        "description": "Local time: \"17:30\", \"tomorrow 9:00\", \"in 2h\" or \"2026-12-24 09:00\"",
                    },
                    "text": { "type": "string", "description": "What to remind the owner of" },
                },
                "required": ["when", "text"],
                "additionalProperties": false,
            },
        },
    })
}

/// A reminder the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub due: DateTime<Utc>,
    pub text: String,
}

/// What is wrong with the model's `{when, text}`; the tool result says it in words.
#[derive(Debug)]
pub enum AskError {
    Json(serde_json::Error),
    /// A field that is missing or not a string.
    Missing(&'static str),
    EmptyText,
    When(WhenError),
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Json(e) => write!(f, "{REMIND}: the arguments are not valid JSON: {e}"),
            AskError::Missing(name) => {
                write!(f, "{REMIND}: missing the string argument `{name}`")
            }
            AskError::EmptyText => write!(f, "{REMIND}: the text is empty"),
            AskError::When(e) => write!(f, "{REMIND}: when: {e}"),
        }
    }
}

impl std::error::Error for AskError {}

/// Reads the model's `{when, text}` at `now`.
pub fn read(arguments: &str, now: DateTime<Utc>) -> Result<Ask, AskError> {
    let value: Value = serde_json::from_str(arguments).map_err(AskError::Json)?;
    let field = |name: &'static str| match value.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(AskError::Missing(name)),
    };
    let at = field("when")?;
    let text = remind::one_line(&field("text")?);
    if text.is_empty() {
        return Err(AskError::EmptyText);
    }
    let words: Vec<&str> = at.split_whitespace().collect();
    let read = when::parse(&words, now).map_err(AskError::When)?;
    if read.words != words.len() {
        let rest = words[read.words..].join(" ");
        return Err(AskError::When(WhenError::Trailing(rest)));
    }
    Ok(Ask {
        due: read.due,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_arguments_are_read_or_refused_in_words() {
        let now = remind::clock::now();
        let ask = read(r#"{"when":"in 2h","text":"call\nmum"}"#, now).unwrap();
        assert_eq!(ask.text, "call mum");
        assert_eq!(ask.due, now + chrono::Duration::hours(2));
        assert!(read(r#"{"when":"soon","text":"x"}"#, now)
            .unwrap_err()
            .to_string()
            .contains("\"soon\""));
        assert!(read(r#"{"when":"in 2h please","text":"x"}"#, now)
            .unwrap_err()
            .to_string()
            .contains("please"));
        assert!(read(r#"{"when":"in 2h"}"#, now)
            .unwrap_err()
            .to_string()
            .contains("`text`"));
        assert!(read(r#"{"when":"in 2h","text":"  "}"#, now)
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(read("[1]", now).is_err());
    }
}
