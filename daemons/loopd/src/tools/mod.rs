//! STUB of the tools module, which another engineer builds in parallel with exactly this
//! API. It is replaced by theirs at merge time; keep it trivial.

use proto::{DataClass, Label};
use serde_json::json;

pub struct ToolOutput {
    pub content: String,
    pub label: proto::Label,
}

/// The tool schemas the model is offered: read_file, http_fetch, recall.
pub fn schemas() -> serde_json::Value {
    let one = |name: &str, description: &str, arg: &str| {
        json!({"type": "function", "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object",
                "properties": {arg: {"type": "string"}},
                "required": [arg]}}})
    };
    json!([
        one("read_file", "Read a UTF-8 text file", "path"),
        one("http_fetch", "Fetch a web page as text", "url"),
        one("recall", "Search earlier conversations", "query"),
    ])
}

/// Runs read_file or http_fetch. The stub runs nothing.
pub fn run_local(name: &str, _arguments: &str, _cfg: &proto::config::Tools) -> ToolOutput {
    ToolOutput {
        content: format!("error: the tool {name} is not built yet"),
        label: Label::new(DataClass::Public, false),
    }
}

/// Whether `name` may run in a context labelled `context`.
pub fn policy(name: &str, context: proto::Label) -> Result<(), String> {
    if name == "http_fetch" && context.class == DataClass::Secret {
        return Err("http_fetch is not allowed once the context holds secret data".into());
    }
    Ok(())
}
