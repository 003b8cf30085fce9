//! The body of `POST /v1/chat/completions` as loopd sends it: the replayed messages, the
//! slot and prompt-cache settings, streaming on, and the frozen tool schemas (no `tools`
//! key at all when there are none). Serialised from typed structs, so the same request
//! always gives the same bytes. There is no `max_tokens`: how long an answer may run is
//! the llama.cpp server's own setting (`--n-predict`), as docs/turn.md leaves the request.

use serde::Serialize;

/// One chat message on the wire, in the OpenAI form llama.cpp reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireFunction {
    pub name: String,
    /// The JSON text the model wrote, sent back byte for byte.
    pub arguments: String,
}

impl WireToolCall {
    pub fn from_record(call: &proto::ToolCall) -> WireToolCall {
        WireToolCall {
            id: call.id.clone(),
            kind: "function",
            function: WireFunction {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
        }
    }
}

/// What a caller asks of the model.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub slot: u32,
    pub messages: Vec<Message>,
    /// A JSON array of tool schemas; empty (or not an array) sends no `tools` key.
    pub tools: serde_json::Value,
    pub thinking: bool,
}

#[derive(Serialize)]
struct Body<'a> {
    messages: &'a [Message],
    stream: bool,
    id_slot: u32,
    cache_prompt: bool,
    chat_template_kwargs: TemplateKwargs,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a serde_json::Value>,
}

#[derive(Serialize)]
struct TemplateKwargs {
    enable_thinking: bool,
}

impl ChatRequest {
    /// The request body as JSON text.
    pub fn body(&self) -> String {
        let tools = match &self.tools {
            serde_json::Value::Array(list) if !list.is_empty() => Some(&self.tools),
            _ => None,
        };
        let body = Body {
            messages: &self.messages,
            stream: true,
            id_slot: self.slot,
            cache_prompt: true,
            chat_template_kwargs: TemplateKwargs {
                enable_thinking: self.thinking,
            },
            tools,
        };
        // Strings, numbers, bools and JSON values only: serialising cannot fail.
        serde_json::to_string(&body).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn request(tools: Value) -> ChatRequest {
        ChatRequest {
            slot: 1,
            messages: vec![Message::User {
                content: "hi".into(),
            }],
            tools,
            thinking: false,
        }
    }

    #[test]
    fn the_body_has_the_slot_cache_stream_and_thinking_settings() {
        let v: Value =
            serde_json::from_str(&request(json!([{"type": "function"}])).body()).unwrap();
        assert_eq!(v["id_slot"], 1);
        assert_eq!(v["cache_prompt"], true);
        assert_eq!(v["stream"], true);
        assert_eq!(v["chat_template_kwargs"]["enable_thinking"], false);
        assert_eq!(v["tools"], json!([{"type": "function"}]));
        assert_eq!(v["messages"], json!([{"role": "user", "content": "hi"}]));
    }

    #[test]
    fn no_tools_means_no_tools_key() {
        for empty in [json!([]), Value::Null] {
            let v: Value = serde_json::from_str(&request(empty).body()).unwrap();
            assert!(v.get("tools").is_none(), "{v}");
        }
    }

    #[test]
    fn assistant_tool_calls_are_in_the_openai_shape() {
        let m = Message::Assistant {
            content: None,
            tool_calls: vec![WireToolCall::from_record(&proto::ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{\"path\":\"/x\"}".into(),
            })],
        };
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"/x\"}"}}]})
        );
    }
}
