//! Reading a log line back into a [`Record`]: by hand over a `serde_json::Value`, so that
//! every mistake in a log file on disk names the field that is wrong (`tool_calls[2].id`),
//! which serde's own messages for internally tagged enums do not. The one error of reading
//! is [`RecordError`].

use super::{FromMatrix, Origin, Record, Tokens, ToolCall, VIA_MATRIX};
use crate::label::DataClass;
use serde_json::{Map, Value};
use std::fmt;

impl Record {
    /// Parses one log line (without its newline).
    pub fn from_line(line: &str) -> Result<Record, RecordError> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| RecordError::NotJson(e.to_string()))?;
        let Value::Object(obj) = value else {
            return Err(RecordError::NotObject);
        };
        let f = Fields {
            obj: &obj,
            prefix: String::new(),
        };
        let kind = f.string("type")?;
        // Read in each known type's arm, so a line of an unknown type is refused for its
        // type, not for a field that type might not have had.
        let time = || f.string("time");
        Ok(match kind.as_str() {
            "user" => Record::User {
                time: time()?,
                content: f.string("content")?,
                origin: match f.string("origin")?.as_str() {
                    "owner" => Origin::Owner,
                    "heartbeat" => Origin::Heartbeat,
                    other => {
                        return Err(RecordError::BadValue {
                            field: "origin".into(),
                            message: format!("{other:?} is not owner or heartbeat"),
                        })
                    }
                },
                matrix: f.via()?,
            },
            "assistant" => Record::Assistant {
                time: time()?,
                content: f.opt_string("content")?,
                tool_calls: f.tool_calls("tool_calls")?,
                cut: f.opt_bool("cut")?.unwrap_or(false),
            },
            "memory" => Record::Memory {
                time: time()?,
                content: f.string("content")?,
                class: f.class("class")?,
                untrusted: f.bool("untrusted")?,
            },
            "tool_result" => Record::ToolResult {
                time: time()?,
                call: f.u64("call")?,
                tool_call_id: f.string("tool_call_id")?,
                name: f.string("name")?,
                content: f.string("content")?,
                class: f.class("class")?,
                untrusted: f.bool("untrusted")?,
            },
            "tool_summary" => Record::ToolSummary {
                time: time()?,
                call: f.u64("call")?,
                tool_call_id: f.string("tool_call_id")?,
                content: f.string("content")?,
                class: f.class("class")?,
                untrusted: f.bool("untrusted")?,
            },
            "usage" => Record::Usage {
                time: time()?,
                slot: f.u32("slot")?,
                tokens: Tokens {
                    cache_n: f.u64("cache_n")?,
                    prompt_n: f.u64("prompt_n")?,
                    predicted_n: f.u64("predicted_n")?,
                },
            },
            "note" => Record::Note {
                time: time()?,
                text: f.string("text")?,
            },
            "forgotten" => Record::Forgotten {
                time: time()?,
                records: f.u64("records")?,
                chars: f.u64("chars")?,
                class: f.class("class")?,
                untrusted: f.bool("untrusted")?,
                call: f.opt_u64("call")?,
            },
            "refused" => Record::Refused {
                time: time()?,
                call: f.u64("call")?,
                url: f.string("url")?,
                reason: f.string("reason")?,
                offered: f.bool("offered")?,
            },
            "allowed" => Record::Allowed {
                time: time()?,
                call: f.u64("call")?,
            },
            other => return Err(RecordError::UnknownType(other.to_string())),
        })
    }
}

/// Why a log line is not a record. Each variant names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    NotJson(String),
    NotObject,
    UnknownType(String),
    Missing {
        field: String,
    },
    WrongType {
        field: String,
        expected: &'static str,
    },
    BadValue {
        field: String,
        message: String,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::NotJson(e) => write!(f, "not valid json: {e}"),
            RecordError::NotObject => f.write_str("a record must be a json object"),
            RecordError::UnknownType(t) => write!(f, "unknown record type {t:?}"),
            RecordError::Missing { field } => write!(f, "field `{field}` is missing"),
            RecordError::WrongType { field, expected } => {
                write!(f, "field `{field}` must be {expected}")
            }
            RecordError::BadValue { field, message } => write!(f, "field `{field}`: {message}"),
        }
    }
}

impl std::error::Error for RecordError {}

/// Typed access to one JSON object's fields, with `prefix` naming where the object sits
/// (`tool_calls[2].`) so nested errors still name the whole path.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: String,
}

impl Fields<'_> {
    fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// A user record's `via` and `event`: both absent (the socket, or a record older than
    /// the Matrix channel), or `"matrix"` and the event's id.
    fn via(&self) -> Result<Option<FromMatrix>, RecordError> {
        if !self.obj.contains_key("via") {
            return match self.obj.contains_key("event") {
                true => Err(RecordError::BadValue {
                    field: self.path("event"),
                    message: "an event without via".into(),
                }),
                false => Ok(None),
            };
        }
        let via = self.string("via")?;
        if via != VIA_MATRIX {
            return Err(RecordError::BadValue {
                field: self.path("via"),
                message: format!("{via:?} is not {VIA_MATRIX}"),
            });
        }
        Ok(Some(FromMatrix {
            event: self.string("event")?,
        }))
    }

    fn get(&self, name: &str) -> Result<&Value, RecordError> {
        self.obj.get(name).ok_or_else(|| RecordError::Missing {
            field: self.path(name),
        })
    }

    fn wrong(&self, name: &str, expected: &'static str) -> RecordError {
        RecordError::WrongType {
            field: self.path(name),
            expected,
        }
    }

    fn string(&self, name: &str) -> Result<String, RecordError> {
        match self.get(name)? {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.wrong(name, "a string")),
        }
    }

    fn opt_string(&self, name: &str) -> Result<Option<String>, RecordError> {
        match self.get(name)? {
            Value::String(s) => Ok(Some(s.clone())),
            Value::Null => Ok(None),
            _ => Err(self.wrong(name, "a string or null")),
        }
    }

    fn u64(&self, name: &str) -> Result<u64, RecordError> {
        self.get(name)?
            .as_u64()
            .ok_or_else(|| self.wrong(name, "a non-negative integer"))
    }

    fn opt_u64(&self, name: &str) -> Result<Option<u64>, RecordError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(name, "a non-negative integer")),
        }
    }

    fn u32(&self, name: &str) -> Result<u32, RecordError> {
        let n = self.u64(name)?;
        u32::try_from(n).map_err(|_| self.wrong(name, "an integer below 2^32"))
    }

    fn bool(&self, name: &str) -> Result<bool, RecordError> {
        self.get(name)?
            .as_bool()
            .ok_or_else(|| self.wrong(name, "true or false"))
    }

    fn opt_bool(&self, name: &str) -> Result<Option<bool>, RecordError> {
        match self.obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.wrong(name, "true or false")),
        }
    }

    fn class(&self, name: &str) -> Result<DataClass, RecordError> {
        let s = self.string(name)?;
        s.parse()
            .map_err(|e: crate::label::UnknownClass| RecordError::BadValue {
                field: self.path(name),
                message: e.to_string(),
            })
    }

    fn tool_calls(&self, name: &str) -> Result<Vec<ToolCall>, RecordError> {
        let Value::Array(items) = self.get(name)? else {
            return Err(self.wrong(name, "a list of tool calls"));
        };
        let mut calls = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = format!("{}{name}[{i}]", self.prefix);
            let Value::Object(obj) = item else {
                return Err(RecordError::WrongType {
                    field: at,
                    expected: "an object with id, name and arguments",
                });
            };
            let f = Fields {
                obj,
                prefix: format!("{at}."),
            };
            calls.push(ToolCall {
                id: f.string("id")?,
                name: f.string("name")?,
                arguments: f.string("arguments")?,
            });
        }
        Ok(calls)
    }
}
