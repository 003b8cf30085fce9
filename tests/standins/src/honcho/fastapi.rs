//! Refusals as FastAPI and Pydantic write them: `{"detail": …}` bodies, validation errors
//! echoing what was sent, keys in Pydantic's order, and Honcho's rule for names.

use serde_json::{json, Value};

pub(super) fn detail(m: &str) -> Value {
    json!({ "detail": m })
}

/// FastAPI's answer for a request Pydantic refused, as Honcho sends it: `input` echoes
/// what was sent.
pub(super) fn invalid(
    loc: Value,
    kind: &str,
    msg: &str,
    input: Value,
    ctx: Option<Value>,
) -> Value {
    let mut e = json!({ "type": kind, "loc": loc, "msg": msg, "input": input });
    if let Some(ctx) = ctx {
        e["ctx"] = ctx;
    }
    json!({ "detail": [e] })
}

/// Honcho's `RESOURCE_NAME_PATTERN` and 512-character limit.
pub(super) fn good_name(name: &str) -> bool {
    (1..=512).contains(&name.chars().count())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An answer as FastAPI writes it: a validation error's keys in Pydantic's order (`type`,
/// `loc`, `msg`, `input`, `ctx`), so the echoed `input` comes after the words that say
/// what was wrong, as a client reading only the start of a long body sees them.
pub(super) fn in_fastapi_order(v: &Value) -> String {
    let Some(errors) = v.get("detail").and_then(Value::as_array) else {
        return v.to_string();
    };
    let order = ["type", "loc", "msg", "input", "ctx"];
    let items: Vec<String> = errors
        .iter()
        .map(|e| {
            let fields: Vec<String> = order
                .iter()
                .filter_map(|k| Some(format!("{}:{}", json!(k), e.get(*k)?)))
                .collect();
            format!("{{{}}}", fields.join(","))
        })
        .collect();
    format!("{{\"detail\":[{}]}}", items.join(","))
}
