//! A tool call written as text: small models served through a template that cannot
//! express calls natively (Qwen2.5-Coder through llama.cpp's generic parser, for one)
//! answer with the call as a JSON object in the reply text, often fenced. Measured on the
//! default model (docs/models.md, "Tool calls written as text"), taking such an answer as
//! the call it spells helps more often than it misfires, so it is taken — but only when
//! the whole answer is that one call, and only for a tool the epoch offers.

use proto::ToolCall;
use serde_json::Value;

/// The call `text` spells, when the whole of it (trimmed, without a Markdown fence) is one
/// JSON object `{"name": NAME, "arguments": {...}}` naming one of `offered`.
pub(crate) fn recover(text: &str, offered: &[&str]) -> Option<ToolCall> {
    let body = unfenced(text.trim())?;
    let Value::Object(call) = serde_json::from_str::<Value>(body).ok()? else {
        return None;
    };
    if call.len() != 2 {
        return None;
    }
    let name = call.get("name")?.as_str()?;
    let arguments = call.get("arguments")?;
    if !arguments.is_object() || !offered.contains(&name) {
        return None;
    }
    Some(ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    })
}

/// `text` without one surrounding Markdown code fence (```` ```json ```` … ```` ``` ````),
/// or as it is when it has none.
fn unfenced(text: &str) -> Option<&str> {
    let Some(rest) = text.strip_prefix("```") else {
        return Some(text);
    };
    let (lang, rest) = rest.split_once('\n')?;
    if !lang.trim().chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(rest.trim_end().strip_suffix("```")?.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &["read_file", "recall", "http_fetch"];

    #[test]
    fn a_fenced_call_of_an_offered_tool_is_taken() {
        let text = "```json\n{ \"name\": \"read_file\", \"arguments\": { \"path\": \"/x\" } }\n```";
        let call = recover(text, TOOLS).unwrap();
        assert_eq!(call.name, "read_file");
        assert_eq!(call.arguments, r#"{"path":"/x"}"#);
        let bare = r#"{"name": "recall", "arguments": {"query": "dentist"}}"#;
        assert_eq!(recover(bare, TOOLS).unwrap().name, "recall");
    }

    #[test]
    fn prose_around_it_other_tools_and_other_shapes_are_left_as_text() {
        let call = r#"{"name": "read_file", "arguments": {"path": "/x"}}"#;
        assert!(recover(&format!("Sure! {call}"), TOOLS).is_none());
        assert!(recover(r#"{"name": "delete_all", "arguments": {}}"#, TOOLS).is_none());
        assert!(recover(r#"{"name": "recall", "arguments": "dentist"}"#, TOOLS).is_none());
        assert!(recover(r#"{"name": "recall", "arguments": {}, "extra": 1}"#, TOOLS).is_none());
        assert!(recover("The dentist is on Thursday.", TOOLS).is_none());
        assert!(recover("```\nnot json\n```", TOOLS).is_none());
    }
}
