//! What an error answer of Honcho's is, in words fit for `/status` and the journal
//! (docs/honcho.md, 'What Honcho's answers do'): one of Honcho's own fixed details is
//! shown as it is, since it names the fix ("JWT expired"); anything else is described by
//! its kind and length, never quoted. Honcho's 422s echo the refused input (FastAPI's
//! `input`), and a server that is not Honcho can put anything anywhere, so even the error
//! types and field paths of a validation list are shown only when they are words from a
//! fixed list.

use serde_json::Value;

/// Every `{"detail": …}` Honcho 3.0.12 answers as a fixed string (its `exceptions.py`
/// defaults, `security.py`, the routers loopd calls) and Starlette's own. A detail built
/// with a name or a value in it is not here: it is described, not shown.
pub const KNOWN_DETAILS: &[&str] = &[
    "No access token provided",
    "Invalid JWT",
    "JWT expired",
    "JWT not permissioned for this resource",
    "Invalid JWT scope: peer/session token missing workspace",
    "Resource requires admin privileges",
    "Unauthorized access to resource",
    "Authentication failed",
    "Not authorized to access this resource",
    "Session ID not found in query parameter or JWT",
    "Peer ID not found in query parameter or JWT",
    "Resource not found",
    "Session not found",
    "Peer not found",
    "Message not found",
    "Conclusion not found",
    "Validation error",
    "Invalid filter configuration",
    "Resource conflict",
    "Feature is disabled",
    "File too large",
    "An unexpected error occurred",
    "Not Found",
    "Method Not Allowed",
];

/// Pydantic's error types a Honcho 422 can carry for what loopd sends: shown by name.
const KNOWN_ERROR_TYPES: &[&str] = &[
    "missing",
    "string_too_long",
    "string_too_short",
    "string_type",
    "string_pattern_mismatch",
    "too_long",
    "too_short",
    "list_type",
    "dict_type",
    "json_invalid",
    "json_type",
    "value_error",
    "assertion_error",
    "extra_forbidden",
    "model_type",
    "model_attributes_type",
    "datetime_from_date_parsing",
    "datetime_parsing",
    "datetime_type",
    "int_parsing",
    "int_type",
    "bool_parsing",
    "bool_type",
    "greater_than_equal",
    "less_than_equal",
    "literal_error",
    "enum",
];

/// The places (`loc` parts) of those errors in what loopd sends: shown by name; a number
/// (a message's index) is shown too.
const KNOWN_FIELDS: &[&str] = &[
    "body",
    "query",
    "path",
    "messages",
    "content",
    "peer_id",
    "peer_name",
    "metadata",
    "created_at",
    "configuration",
    "observe_me",
    "id",
    "peers",
    "peer_card",
    "filters",
    "page",
    "size",
    "reverse",
    "workspace_id",
    "session_id",
    "observer_id",
    "observed_id",
];

/// How many errors of a validation list are named; the rest are counted.
const MAX_NAMED_ERRORS: usize = 4;

/// What to do about a fixed detail, when Honcho's words alone do not say it.
fn hint(detail: &str) -> Option<&'static str> {
    Some(match detail {
        "No access token provided" => "set honcho.token_file",
        "Invalid JWT" | "Invalid JWT scope: peer/session token missing workspace" => {
            "honcho.token_file holds a token this server did not sign"
        }
        "JWT expired" => "put a new token in honcho.token_file",
        "JWT not permissioned for this resource" | "Unauthorized access to resource" => {
            "the token in honcho.token_file is not for this workspace or session"
        }
        _ => return None,
    })
}

/// Honcho's own detail, when the body is `{"detail": D}` with D one of [`KNOWN_DETAILS`].
pub fn known_detail(body: &str) -> Option<&'static str> {
    let v: Value = serde_json::from_str(body).ok()?;
    let d = v.get("detail")?.as_str()?;
    KNOWN_DETAILS.iter().copied().find(|k| *k == d)
}

/// An error body in words: a known detail as it is (with what to do about it), anything
/// else by its shape and length.
pub fn body_kind(body: &str) -> String {
    let len = body.len();
    if let Some(d) = known_detail(body) {
        return match hint(d) {
            Some(h) => format!("\"{d}\": {h}"),
            None => format!("\"{d}\""),
        };
    }
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return if body.is_empty() {
            "no body".into()
        } else {
            format!("a body of {len} bytes that is not json")
        };
    };
    match v.get("detail") {
        Some(Value::Array(errors)) => {
            let named: Vec<String> = errors
                .iter()
                .take(MAX_NAMED_ERRORS)
                .map(validation_error)
                .collect();
            format!(
                "{} validation error{} ({}), {len} bytes",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                named.join(", ")
            )
        }
        Some(Value::String(d)) => format!("a detail message of {} bytes", d.len()),
        _ => format!("a json body of {len} bytes"),
    }
}

/// One FastAPI validation error as `type at loc`, each word shown only when it is a known
/// one (`?` otherwise).
fn validation_error(e: &Value) -> String {
    let kind = e
        .get("type")
        .and_then(Value::as_str)
        .and_then(|t| KNOWN_ERROR_TYPES.iter().find(|k| **k == t))
        .copied()
        .unwrap_or("?");
    let loc: Vec<String> = e
        .get("loc")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .map(|p| match p {
                    Value::String(s) if KNOWN_FIELDS.contains(&s.as_str()) => s.clone(),
                    Value::Number(n) if n.is_u64() => n.to_string(),
                    _ => "?".into(),
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{kind} at {}", loc.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_detail_of_honchos_is_shown_with_what_to_do() {
        assert_eq!(
            body_kind(r#"{"detail":"JWT expired"}"#),
            "\"JWT expired\": put a new token in honcho.token_file"
        );
        assert_eq!(
            body_kind(r#"{"detail":"Session not found"}"#),
            "\"Session not found\""
        );
        // One character off is not Honcho's: described, not shown.
        assert_eq!(
            body_kind(r#"{"detail":"Invalid JWT!"}"#),
            "a detail message of 12 bytes"
        );
    }

    /// Regression: a hostile server's 422 put words of its choosing, shaped like field
    /// names, verbatim into `/status` and the journal.
    #[test]
    fn a_validation_list_names_only_known_types_and_fields() {
        let body = r#"{"detail":[{"type":"my_pin_is_4471","loc":["body","the_code_is_4471",2,"content"],"msg":"x","input":"x"},{"type":"string_too_long","loc":["body","messages",3,"content"]}]}"#;
        let shown = body_kind(body);
        assert!(!shown.contains("4471"), "{shown}");
        assert_eq!(
            shown,
            format!(
                "2 validation errors (? at body.?.2.content, string_too_long at body.messages.3.content), {} bytes",
                body.len()
            )
        );
    }
}
