use super::*;
use serde_json::Value;

const T: &str = "2026-11-30T06:00:00.000Z";

fn all_variants() -> Vec<Record> {
    vec![
        Record::User {
            time: T.into(),
            content: "hi".into(),
            origin: Origin::Owner,
            matrix: None,
        },
        Record::Assistant {
            cut: false,
            time: T.into(),
            content: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"/x"}"#.into(),
            }],
        },
        Record::ToolResult {
            time: T.into(),
            call: 1,
            tool_call_id: "c1".into(),
            name: "read_file".into(),
            content: "body".into(),
            class: DataClass::Secret,
            untrusted: false,
        },
        Record::ToolSummary {
            time: T.into(),
            call: 1,
            tool_call_id: "c1".into(),
            content: "short".into(),
            class: DataClass::Public,
            untrusted: true,
        },
        Record::Usage {
            time: T.into(),
            slot: 0,
            tokens: Tokens {
                cache_n: 10,
                prompt_n: 5,
                predicted_n: 7,
            },
        },
        Record::Note {
            time: T.into(),
            text: "compaction failed".into(),
        },
        Record::Forgotten {
            time: T.into(),
            records: 1,
            chars: 12,
            class: DataClass::Private,
            untrusted: true,
            call: Some(3),
        },
        Record::Refused {
            time: T.into(),
            call: 4,
            url: "http://example.com/collect?d=x".into(),
            reason: "the conversation holds untrusted text".into(),
            offered: true,
        },
        Record::Allowed {
            time: T.into(),
            call: 4,
        },
    ]
}

#[test]
fn refused_and_allowed_are_written_with_the_documented_fields() {
    let refused: Value = serde_json::from_str(&all_variants()[7].to_line()).unwrap();
    assert_eq!(
        refused,
        serde_json::json!({
            "type": "refused", "time": T, "call": 4,
            "url": "http://example.com/collect?d=x",
            "reason": "the conversation holds untrusted text", "offered": true
        })
    );
    let allowed: Value = serde_json::from_str(&all_variants()[8].to_line()).unwrap();
    assert_eq!(
        allowed,
        serde_json::json!({"type": "allowed", "time": T, "call": 4})
    );
    // Neither carries a label: a refusal or an allow changes nothing the context holds.
    assert_eq!(all_variants()[7].label(), None);
    assert_eq!(all_variants()[8].label(), None);
}

#[test]
fn every_variant_round_trips_through_a_line() {
    for r in all_variants() {
        let line = r.to_line();
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert_eq!(Record::from_line(line.trim_end()).unwrap(), r, "{line}");
    }
}

#[test]
fn tags_and_field_names_are_the_specs() {
    let line = all_variants()[2].to_line();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["type"], "tool_result");
    for key in [
        "time",
        "call",
        "tool_call_id",
        "name",
        "content",
        "class",
        "untrusted",
    ] {
        assert!(v.get(key).is_some(), "{key} missing in {line}");
    }
    assert_eq!(v["class"], "secret");
    let a: Value = serde_json::from_str(&all_variants()[1].to_line()).unwrap();
    assert_eq!(a["content"], Value::Null);
    assert_eq!(a["tool_calls"][0]["arguments"], r#"{"path":"/x"}"#);
}

fn err(line: &str) -> String {
    Record::from_line(line).unwrap_err().to_string()
}

#[test]
fn every_type_mismatch_names_its_field() {
    let cases = [
        (
            r#"{"type":"user","time":1,"content":"x","origin":"owner"}"#,
            "`time`",
        ),
        (
            r#"{"type":"user","time":"t","content":5,"origin":"owner"}"#,
            "`content`",
        ),
        (
            r#"{"type":"user","time":"t","content":"x","origin":"cat"}"#,
            "`origin`",
        ),
        (
            r#"{"type":"user","time":"t","content":"x"}"#,
            "`origin` is missing",
        ),
        (
            r#"{"type":"assistant","time":"t","content":[],"tool_calls":[]}"#,
            "`content`",
        ),
        (
            r#"{"type":"assistant","time":"t","content":null,"tool_calls":{}}"#,
            "`tool_calls`",
        ),
        (
            r#"{"type":"assistant","time":"t","content":null,"tool_calls":[{"id":"a","name":"n","arguments":{}}]}"#,
            "`tool_calls[0].arguments`",
        ),
        (
            r#"{"type":"assistant","time":"t","content":null,"tool_calls":[7]}"#,
            "`tool_calls[0]`",
        ),
        (
            r#"{"type":"tool_result","time":"t","call":-1,"tool_call_id":"a","name":"n","content":"c","class":"public","untrusted":false}"#,
            "`call`",
        ),
        (
            r#"{"type":"tool_result","time":"t","call":1,"tool_call_id":"a","name":"n","content":"c","class":"top","untrusted":false}"#,
            "`class`",
        ),
        (
            r#"{"type":"tool_summary","time":"t","call":1,"tool_call_id":"a","content":"c","class":"public","untrusted":"no"}"#,
            "`untrusted`",
        ),
        (
            r#"{"type":"usage","time":"t","slot":4294967296,"cache_n":0,"prompt_n":0,"predicted_n":0}"#,
            "`slot`",
        ),
        (
            r#"{"type":"usage","time":"t","slot":0,"cache_n":1.5,"prompt_n":0,"predicted_n":0}"#,
            "`cache_n`",
        ),
        (r#"{"type":"note","time":"t","text":null}"#, "`text`"),
        (r#"{"type":7,"time":"t"}"#, "`type`"),
    ];
    for (line, want) in cases {
        let got = err(line);
        assert!(got.contains(want), "{line}: {got}");
    }
}

#[test]
fn non_records_are_clear_errors() {
    assert!(err("not json").starts_with("not valid json"));
    assert_eq!(err("[1,2]"), "a record must be a json object");
    assert_eq!(
        err(r#"{"type":"poem","time":"t"}"#),
        "unknown record type \"poem\""
    );
}

// Regression: a line whose type is unknown and that has no `time` (`{"type":"bogus"}`) was
// refused as "field `time` is missing", pointing away from the real fault, its type.
#[test]
fn an_unknown_type_is_named_before_any_missing_field() {
    assert_eq!(err(r#"{"type":"bogus"}"#), "unknown record type \"bogus\"");
    assert_eq!(
        err(r#"{"type":"bogus","time":7}"#),
        "unknown record type \"bogus\""
    );
    assert_eq!(
        err(r#"{"type":"note","text":"x"}"#),
        "field `time` is missing"
    );
}

#[test]
fn a_usage_line_is_flat_in_the_specs_order() {
    // docs/sessions.md: the counts sit beside `slot`, not under a key of their own.
    let r = Record::Usage {
        time: "t".into(),
        slot: 1,
        tokens: Tokens {
            cache_n: 10,
            prompt_n: 5,
            predicted_n: 7,
        },
    };
    assert_eq!(
        r.to_line(),
        "{\"type\":\"usage\",\"time\":\"t\",\"slot\":1,\"cache_n\":10,\"prompt_n\":5,\"predicted_n\":7}\n"
    );
}

/// The one rule of a context label, which loopd's session, Honcho's reporter and
/// memoryd's rolling label all step through record by record: owner words at the owner's
/// class, a heartbeat's prompt at none, every other labelled record at its own label, and
/// the label never falls.
#[test]
fn the_context_label_steps_record_by_record_to_the_same_label_as_the_whole_epoch() {
    let heartbeat = Record::User {
        time: T.into(),
        content: "beat".into(),
        origin: Origin::Heartbeat,
        matrix: None,
    };
    let tainted = Record::Memory {
        time: T.into(),
        content: "remembered".into(),
        class: DataClass::Public,
        untrusted: true,
    };
    let mut records = vec![heartbeat.clone(), tainted];
    records.extend(all_variants());
    let carry = Label::PUBLIC;
    let mut stepped = carry;
    let mut seen = Vec::new();
    for r in &records {
        let next = context_label_after(stepped, r, DataClass::Private);
        assert!(next.class >= stepped.class && next.untrusted >= stepped.untrusted);
        stepped = next;
        seen.push(stepped);
    }
    assert_eq!(
        stepped,
        context_label(carry, &records, DataClass::Private),
        "stepping and folding disagree"
    );
    // A heartbeat's prompt adds nothing; the memory record taints; the owner's line is
    // private; the secret tool result raises it to secret for good.
    assert_eq!(seen[0], Label::PUBLIC);
    assert_eq!(seen[1], Label::new(DataClass::Public, true));
    assert_eq!(seen[2], Label::new(DataClass::Private, true));
    assert_eq!(seen[4], Label::new(DataClass::Secret, true));
    assert_eq!(stepped, Label::new(DataClass::Secret, true));
}

#[test]
fn a_line_from_matrix_keeps_its_event_and_old_lines_still_read() {
    let rec = Record::User {
        time: T.into(),
        content: "hi\nthere".into(),
        origin: Origin::Owner,
        matrix: Some(FromMatrix {
            event: "$ev1:example.org".into(),
        }),
    };
    let line = rec.to_line();
    assert!(
        line.contains(r#""via":"matrix","event":"$ev1:example.org""#),
        "{line}"
    );
    assert_eq!(Record::from_line(line.trim_end()).unwrap(), rec);
    let old =
        r#"{"type":"user","time":"2026-11-30T06:00:00.000Z","content":"hi","origin":"owner"}"#;
    assert!(matches!(
        Record::from_line(old).unwrap(),
        Record::User { matrix: None, .. }
    ));
    for bad in [
        r#"{"type":"user","time":"t","content":"hi","origin":"owner","via":"irc","event":"x"}"#,
        r#"{"type":"user","time":"t","content":"hi","origin":"owner","via":"matrix"}"#,
        r#"{"type":"user","time":"t","content":"hi","origin":"owner","event":"x"}"#,
    ] {
        let e = Record::from_line(bad).unwrap_err().to_string();
        assert!(e.contains("via") || e.contains("event"), "{bad}: {e}");
    }
}
