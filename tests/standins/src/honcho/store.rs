//! Creates: a batch of messages checked as Honcho checks it (sizes, metadata, times,
//! tiktoken's special tokens; NUL stripped) and stored, and a peer got or created.

use super::fastapi::{detail, good_name, invalid};
use super::state::{
    cl100k_special_tokens, o200k_special_tokens, Fault, State, Stored, HONCHO_MAX_MESSAGE_SIZE,
    METADATA_MAX_DEPTH, METADATA_MAX_KEYS,
};
use super::time::{now_utc, utc_micros};
use serde_json::{json, Map, Value};

/// Honcho's get-or-create of a peer: a new name must keep the rule; a configuration sent
/// replaces the one held, none sent leaves it.
pub(super) fn peer(st: &mut State, body: &Value) -> (u16, Value) {
    let Some(name) = body["id"].as_str() else {
        return (
            422,
            invalid(
                json!(["body", "id"]),
                "missing",
                "Field required",
                body.clone(),
                None,
            ),
        );
    };
    if !good_name(name) {
        return (
            422,
            invalid(
                json!(["body", "id"]),
                "string_pattern_mismatch",
                "String should match pattern '^[a-zA-Z0-9_-]+$'",
                json!(name),
                Some(json!({ "pattern": "^[a-zA-Z0-9_-]+$" })),
            ),
        );
    }
    let sent = body.get("configuration").filter(|c| !c.is_null()).cloned();
    let (status, config) = match st.peers.iter_mut().find(|(n, _)| n == name) {
        Some((_, held)) => {
            if let Some(c) = sent {
                *held = c;
            }
            (200, held.clone())
        }
        None => {
            let c = sent.unwrap_or(json!({}));
            st.peers.push((name.to_string(), c.clone()));
            (201, c)
        }
    };
    (
        status,
        json!({ "id": name, "workspace_id": "ws", "metadata": {}, "configuration": config, "created_at": now_utc() }),
    )
}

/// Honcho's metadata rule: the 422 message when `v` breaks it.
fn metadata_fault(v: &Map<String, Value>, depth: usize) -> Option<String> {
    if depth > METADATA_MAX_DEPTH {
        return Some(format!(
            "Value error, Metadata nesting exceeds maximum depth of {METADATA_MAX_DEPTH}"
        ));
    }
    if depth == 1 && v.len() > METADATA_MAX_KEYS {
        return Some(format!(
            "Value error, Metadata exceeds maximum of {METADATA_MAX_KEYS} top-level keys"
        ));
    }
    v.values()
        .filter_map(Value::as_object)
        .find_map(|o| metadata_fault(o, depth + 1))
}

/// `v` with NUL taken out of every string, keys too.
fn strip_nul(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace('\0', "")),
        Value::Array(a) => Value::Array(a.iter().map(strip_nul).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.replace('\0', ""), strip_nul(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

pub(super) fn create(st: &mut State, session: &str, body: &Value) -> (u16, Value) {
    let fault = match st.post_faults.front() {
        Some(Fault::StoreThen(_)) => st.post_faults.pop_front(),
        _ => None,
    };
    let Some(batch) = body["messages"].as_array() else {
        return (
            422,
            invalid(
                json!(["body", "messages"]),
                "missing",
                "Field required",
                body.clone(),
                None,
            ),
        );
    };
    if batch.is_empty() || batch.len() > 100 {
        let (kind, msg) = if batch.is_empty() {
            (
                "too_short",
                "List should have at least 1 item after validation, not 0".to_string(),
            )
        } else {
            (
                "too_long",
                format!(
                    "List should have at most 100 items after validation, not {}",
                    batch.len()
                ),
            )
        };
        return (
            422,
            invalid(
                json!(["body", "messages"]),
                kind,
                &msg,
                Value::Array(batch.clone()),
                Some(json!({ "field_type": "List", "actual_length": batch.len() })),
            ),
        );
    }
    let mut new = Vec::new();
    let limit = st.max_message_size.unwrap_or(HONCHO_MAX_MESSAGE_SIZE);
    for (i, m) in batch.iter().enumerate() {
        let (Some(content), Some(peer)) = (m["content"].as_str(), m["peer_id"].as_str()) else {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "content"]),
                    "missing",
                    "Field required",
                    m.clone(),
                    None,
                ),
            );
        };
        if content.chars().count() > limit {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "content"]),
                    "string_too_long",
                    &format!("String should have at most {limit} characters"),
                    json!(content),
                    Some(json!({ "max_length": limit })),
                ),
            );
        }
        if st
            .refuse_containing
            .as_deref()
            .is_some_and(|bad| content.contains(bad))
        {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "content"]),
                    "value_error",
                    "Value error, refused by the stand-in",
                    json!(content),
                    Some(json!({ "error": {} })),
                ),
            );
        }
        let metadata = m.get("metadata").cloned().unwrap_or(json!({}));
        if let Some(msg) = metadata.as_object().and_then(|o| metadata_fault(o, 1)) {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "metadata"]),
                    "value_error",
                    &msg,
                    metadata.clone(),
                    Some(json!({ "error": {} })),
                ),
            );
        }
        let created_at = match m["created_at"].as_str() {
            None => now_utc(),
            Some(t) => match utc_micros(t) {
                Some(t) => t,
                None => {
                    return (
                        422,
                        invalid(
                            json!(["body", "messages", i, "created_at"]),
                            "datetime_from_date_parsing",
                            "Input should be a valid datetime or date",
                            json!(t),
                            None,
                        ),
                    )
                }
            },
        };
        // `MessageCreate`'s validator counts the tokens of the content NUL was stripped
        // from, with tiktoken refusing special tokens (Pydantic runs it once every field
        // has passed).
        let counted = content.replace('\0', "");
        if let Some(token) = o200k_special_tokens()
            .into_iter()
            .find(|t| counted.contains(t.as_str()))
        {
            return (
                422,
                invalid(
                    json!(["body", "messages", i]),
                    "value_error",
                    &format!("Value error, Encountered text corresponding to disallowed special token '{token}'.\nTo disable this check for all special tokens, pass `disallowed_special=()`.\n"),
                    m.clone(),
                    Some(json!({ "error": {} })),
                ),
            );
        }
        st.next_id += 1;
        new.push(Stored {
            id: format!("msg{}", st.next_id),
            session: session.to_string(),
            peer_id: peer.to_string(),
            content: content.replace('\0', ""),
            created_at,
            metadata: strip_nul(&metadata),
        });
    }
    // The create chunks each content that is not blank for embedding before it commits,
    // with the embedding model's encoding; a special token there is an unhandled
    // `ValueError`: Honcho's 500, and the transaction rolled back.
    let chunked = cl100k_special_tokens();
    if new
        .iter()
        .any(|m| !m.content.trim().is_empty() && chunked.iter().any(|t| m.content.contains(t)))
    {
        return (500, detail("An unexpected error occurred"));
    }
    let answer: Vec<Value> = new.iter().map(to_json).collect();
    st.messages.extend(new);
    match fault {
        Some(Fault::StoreThen(s)) => (s, detail("stand-in fault after storing")),
        _ => (201, Value::Array(answer)),
    }
}

pub(super) fn to_json(m: &Stored) -> Value {
    json!({
        "id": m.id,
        "content": m.content,
        "peer_id": m.peer_id,
        "session_id": m.session,
        "workspace_id": "ws",
        "created_at": m.created_at,
        "token_count": 1,
        "metadata": m.metadata,
    })
}
