//! Both daemons together, as the owner runs them: loopd's turns land in the logs, memoryd
//! indexes them, and recall (the `/recall` command and the model's `recall` tool) brings
//! them back with their labels. llama.cpp is the scripted stand-in.

use crate::loopd::Loopd;
use crate::support::standin::{text, tool_calls};
use crate::support::Daemon;

fn with_memoryd(extra: &str) -> (Loopd, Daemon) {
    let l = Loopd::start(extra);
    let m = Daemon::start("memoryd", &l.fx);
    (l, m)
}

#[test]
fn what_the_owner_said_is_recalled_through_memoryd() {
    let (l, _m) = with_memoryd("");
    l.llama.push(text(&["Noted: oolong."]));
    let mut c = l.client();
    assert_eq!(c.ask("my favourite tea is oolong"), vec!["Noted: oolong."]);
    let block = c.ask("/recall oolong");
    assert!(
        block
            .iter()
            .any(|line| line.starts_with("memory · session main · ")),
        "{block:?}"
    );
    assert!(
        block
            .iter()
            .any(|line| line == "the owner said: my favourite tea is oolong"),
        "{block:?}"
    );
    assert!(
        block
            .iter()
            .any(|line| line == "the assistant said: Noted: oolong."),
        "{block:?}"
    );
}

#[test]
fn the_recall_tool_reads_the_index_and_labels_its_result() {
    let (l, _m) = with_memoryd("");
    let mut c = l.client();
    l.llama.push(text(&["Remembered."]));
    c.ask("the spare key is under the blue pot");
    l.llama
        .push(tool_calls(&[("c1", "recall", "{\"query\":\"spare key\"}")]));
    l.llama.push(text(&["Under the blue pot."]));
    let block = c.ask("where is the spare key?");
    assert_eq!(
        block.last().map(String::as_str),
        Some("Under the blue pot.")
    );
    let result = l
        .records("main")
        .into_iter()
        .find(|r| r["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["name"], "recall");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("the owner said: the spare key is under the blue pot"),
        "{content}"
    );
    // Owner text is private by the index's rolling label default (the head's carry label
    // is public; nothing raised it), so the result's label is the hits' join.
    assert_eq!(result["untrusted"], false);
}

#[test]
fn text_after_a_secret_file_never_reaches_the_index() {
    let home = tempfile::tempdir().unwrap();
    let secret_dir = home.path().join("secret");
    std::fs::create_dir_all(&secret_dir).unwrap();
    std::fs::write(secret_dir.join("pin.txt"), "the pin is 4711").unwrap();
    let root = home.path().canonicalize().unwrap();
    let tools = format!(
        "[tools.read_file]\nroots = [{root:?}]\n[[tools.read_file.class]]\nprefix = {:?}\nclass = \"secret\"\n",
        root.join("secret")
    );
    let (l, _m) = with_memoryd(&tools);
    let mut c = l.client();
    let args = format!("{{\"path\":{:?}}}", root.join("secret/pin.txt"));
    l.llama.push(tool_calls(&[("c1", "read_file", &args)]));
    l.llama.push(text(&["The pin is 4711, zebra."]));
    c.ask("what is my pin?");
    // The assistant's answer follows a secret tool result, so its rolling label is secret
    // and memoryd (max_class private) skips it; the owner's question came before and is
    // indexed.
    let zebra = c.ask("/recall zebra");
    assert!(!zebra.iter().any(|line| line.contains("4711")), "{zebra:?}");
    let pin = c.ask("/recall pin");
    assert!(
        pin.iter()
            .any(|line| line == "the owner said: what is my pin?"),
        "{pin:?}"
    );
    assert!(!pin.iter().any(|line| line.contains("4711")), "{pin:?}");
}
