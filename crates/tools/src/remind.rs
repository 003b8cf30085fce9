//! The `remind` tool's schema and arguments (docs/reminders.md, "The remind tool"): the
//! model sets a reminder for the owner with `{when, text}`, `when` in the forms `/remind`
//! reads. Whether it may (not while the context is untrusted: a page must not schedule
//! messages to the owner) and the book it goes into are loopd's turn loop's
//! (`turn::tools_run`); this only reads what the model asked for.

use ::remind::{self, when};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

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

/// Reads the model's `{when, text}` at `now`, or says in words what is wrong.
pub fn read(arguments: &str, now: DateTime<Utc>) -> Result<Ask, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("{REMIND}: the arguments are not valid JSON: {e}"))?;
    let field = |name: &str| match value.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(format!("{REMIND}: missing the string argument `{name}`")),
    };
    let at = field("when")?;
    let text = remind::one_line(&field("text")?);
    if text.is_empty() {
        return Err(format!("{REMIND}: the text is empty"));
    }
    let words: Vec<&str> = at.split_whitespace().collect();
    let read = when::parse(&words, now).map_err(|e| format!("{REMIND}: when: {e}"))?;
    if read.words != words.len() {
        return Err(format!(
            "{REMIND}: when: could not read {:?}; {}",
            words[read.words..].join(" "),
            when::FORMS
        ));
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
            .contains("\"soon\""));
        assert!(read(r#"{"when":"in 2h please","text":"x"}"#, now)
            .unwrap_err()
            .contains("please"));
        assert!(read(r#"{"when":"in 2h"}"#, now)
            .unwrap_err()
            .contains("`text`"));
        assert!(read(r#"{"when":"in 2h","text":"  "}"#, now)
            .unwrap_err()
            .contains("empty"));
        assert!(read("[1]", now).is_err());
    }
}
