use super::*;
use proto::head::Reason;
use proto::{Label, Origin};
use serde_json::{json, Value};

fn head() -> Head {
    Head {
        epoch: 2,
        started: "2026-11-30T06:00:00.000Z".into(),
        system: "You are terse.".into(),
        tools: json!([{"type": "function", "function": {"name": "read_file"}}]),
        carry: Some("before".into()),
        carry_label: Label::PUBLIC,
        reason: Reason::Threshold,
        summary_source: SummarySource::Model,
    }
}

#[test]
fn the_summary_request_is_the_epoch_prompt_plus_compact_md_with_the_epochs_tools() {
    let recs = vec![Record::User {
        time: "t".into(),
        content: "hello".into(),
        origin: Origin::Owner,
        matrix: None,
    }];
    let req = request(&head(), &recs, 100, "Summarise.\n", 0);
    let v: Value = serde_json::from_str(&req.body()).unwrap();
    assert_eq!(v["id_slot"], 0);
    assert_eq!(v["tools"], head().tools);
    assert_eq!(v["chat_template_kwargs"]["enable_thinking"], THINKING);
    let prefix = serde_json::to_value(replay::messages(&head(), &recs, 100)).unwrap();
    let messages = v["messages"].as_array().unwrap();
    assert_eq!(messages[..2], prefix.as_array().unwrap()[..2]);
    assert_eq!(messages.len(), 4);
    assert_eq!(
        messages[3],
        json!({"role": "user", "content": "Summarise."})
    );
}

#[test]
fn the_carry_is_trimmed_neutralised_then_capped() {
    let tag = format!("{}{}", "<", "tool_call>");
    let text = carry_text(&format!("\n {tag}x and more "), 13);
    assert_eq!(text, "<\u{200D}tool_call>x");
    assert_eq!(carry_text("héllo", 2), "hé");
    assert_eq!(carry_text("  ", 10), "");
}
