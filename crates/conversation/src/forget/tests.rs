#![allow(clippy::unwrap_used)]

use super::apply;
use super::find::{find, Place};
use super::plan::{self, redact, Plan};
use super::Ask;
use proto::head::{log_file_name, Reason, SummarySource};
use proto::test_records::{tool_result, usage, user};
use proto::{DataClass, Label, Record};
use std::path::Path;

const SECRET: &str = "Blue Heron 7731";

fn head(dir: &Path, epoch: u64, carry: Option<&str>) {
    sessions::head::write(
        dir,
        &proto::head::Head {
            epoch,
            started: "2026-12-01T09:00:00.000Z".into(),
            system: "s".into(),
            tools: serde_json::json!([]),
            carry: carry.map(String::from),
            carry_label: Label::PUBLIC,
            reason: if epoch == 0 {
                Reason::Start
            } else {
                Reason::Manual
            },
            summary_source: SummarySource::Model,
        },
    )
    .unwrap();
}

fn log(dir: &Path, epoch: u64, records: &[Record], tail: &str) {
    let mut text: String = records.iter().map(Record::to_line).collect();
    text.push_str(tail);
    std::fs::write(dir.join(log_file_name(epoch)), text).unwrap();
}

/// Session `main`'s directory under `state`, with the head of its epoch 0.
fn new_session(state: &Path) -> std::path::PathBuf {
    let dir = state.join("sessions").join("main");
    std::fs::create_dir_all(&dir).unwrap();
    head(&dir, 0, None);
    dir
}

/// A session `main` of two epochs: the secret told, read from a file and carried.
fn session(state: &Path) -> std::path::PathBuf {
    let dir = new_session(state);
    log(
        &dir,
        0,
        &[
            user("hello"),
            user(&format!("my code is {SECRET}, keep it")),
            tool_result(
                1,
                "read_file",
                &format!("file says: {}", SECRET.to_uppercase()),
                DataClass::Private,
                false,
            ),
            usage(1, 2, 3),
            tool_result(
                2,
                "read_file",
                "unrelated output",
                DataClass::Private,
                false,
            ),
        ],
        "",
    );
    head(
        &dir,
        1,
        Some(&format!("The owner's code is {SECRET}. They like tea.")),
    );
    log(
        &dir,
        1,
        &[
            user("more tea"),
            tool_result(3, "read_file", "tea facts", DataClass::Private, false),
        ],
        "{\"type\":\"us",
    );
    dir
}

fn everything(state: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in walk(state) {
        all.extend(std::fs::read(entry).unwrap());
    }
    all
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn holds_secret(bytes: &[u8]) -> bool {
    let lower = String::from_utf8_lossy(bytes).to_lowercase();
    lower.contains(&SECRET.to_lowercase())
}

fn plan_all(dir: &Path) -> Plan {
    let found = find(dir, "blue heron", DataClass::Private).unwrap();
    let chosen: Vec<_> = found.iter().collect();
    Plan::build(
        "main",
        "2026-12-01T11:00:00.000Z".into(),
        &chosen,
        "blue heron",
    )
}

#[test]
fn a_query_finds_every_record_and_carry_holding_it_ignoring_case() {
    let state = tempfile::tempdir().unwrap();
    let dir = session(state.path());
    let found = find(&dir, "blue HERON", DataClass::Private).unwrap();
    let places: Vec<_> = found.iter().map(|f| (f.kind, f.place.clone())).collect();
    assert_eq!(
        places,
        [
            ("user", Place::Record { epoch: 0, line: 1 }),
            ("tool_result", Place::Record { epoch: 0, line: 2 }),
            ("carry", Place::Carry { epoch: 1 }),
        ]
    );
    assert_eq!(found[0].text, format!("my code is {SECRET}, keep it"));
}

#[test]
fn a_removal_leaves_the_text_nowhere_and_every_other_record_as_it_was() {
    let state = tempfile::tempdir().unwrap();
    let dir = session(state.path());
    let before0 = std::fs::read_to_string(dir.join(log_file_name(0))).unwrap();
    let before1 = std::fs::read(dir.join(log_file_name(1))).unwrap();
    let plan = plan_all(&dir);
    apply::run(state.path(), &state.path().join("sessions"), &plan).unwrap();
    plan::remove(state.path(), "main").unwrap();
    assert!(!holds_secret(&everything(state.path())));
    // Epoch 0: lines 2 and 3 are notes now, every other line is byte for byte the same.
    let after0 = std::fs::read_to_string(dir.join(log_file_name(0))).unwrap();
    let (b, a): (Vec<_>, Vec<_>) = (before0.lines().collect(), after0.lines().collect());
    assert_eq!(b.len(), a.len());
    for i in [0, 3, 4] {
        assert_eq!(a[i], b[i]);
    }
    for i in [1, 2] {
        let Record::Forgotten { records, chars, .. } = Record::from_line(a[i]).unwrap() else {
            panic!("line {i} is not a forgotten record: {}", a[i]);
        };
        assert_eq!(records, 1);
        assert!(chars > 0);
    }
    // The log opens, its call numbers are all still there.
    let (_, records) = sessions::log::LogFile::open(&dir.join(log_file_name(0))).unwrap();
    assert_eq!(records.len(), 5);
    // Epoch 1's log held nothing to forget: untouched, torn tail and all.
    assert_eq!(std::fs::read(dir.join(log_file_name(1))).unwrap(), before1);
    let h = sessions::head::read(&dir, 1).unwrap();
    assert_eq!(
        h.carry.as_deref(),
        Some("[forgotten: 36 characters] They like tea.")
    );
    assert!(plan::left(state.path()).is_empty());
}

#[test]
fn a_plan_applied_again_changes_nothing_more() {
    let state = tempfile::tempdir().unwrap();
    let dir = session(state.path());
    let plan = plan_all(&dir);
    apply::run(state.path(), &state.path().join("sessions"), &plan).unwrap();
    let once = everything(&dir);
    let left = plan::left(state.path());
    assert_eq!(left.len(), 1);
    apply::files(&state.path().join("sessions"), left[0].as_ref().unwrap()).unwrap();
    assert_eq!(everything(&dir), once);
}

#[test]
fn a_plan_never_holds_the_forgotten_text() {
    let state = tempfile::tempdir().unwrap();
    let dir = session(state.path());
    plan::write(state.path(), &plan_all(&dir)).unwrap();
    assert!(!holds_secret(&everything(&plan::dir(state.path()))));
}

#[test]
fn a_plan_naming_a_line_past_the_end_is_refused_naming_the_log() {
    let state = tempfile::tempdir().unwrap();
    let dir = session(state.path());
    let mut plan = plan_all(&dir);
    plan.logs[0].lines[0].line = 99;
    let e = apply::files(&state.path().join("sessions"), &plan).unwrap_err();
    assert!(e.to_string().contains("epoch-000000.jsonl line 100"), "{e}");
}

/// Regression (in part): only the query's words were redacted, so "the locker code is
/// PELICAN 9931" kept the code beside the mark and the model still read it. The whole
/// sentence, or line, that holds them goes.
#[test]
fn redaction_takes_each_sentence_or_line_holding_the_query() {
    assert_eq!(
        redact(
            "They like tea. The locker code is PELICAN 9931. Ask first!",
            "pelican"
        ),
        "They like tea. [forgotten: 32 characters] Ask first!"
    );
    assert_eq!(
        redact(
            "- likes tea\n- locker: PELICAN 9931\n- cat named Tom",
            "pelican"
        ),
        "- likes tea\n[forgotten: 22 characters]\n- cat named Tom"
    );
    // A clause after a semicolon is a sentence of its own.
    assert_eq!(
        redact("The code is PELICAN 9931; the bike is red.", "pelican"),
        "[forgotten: 25 characters] the bike is red."
    );
    // Two sentences side by side go under one mark; a decimal point ends no sentence.
    assert_eq!(
        redact("Pin 12 at 3.5 pm. The pin 12 again. Done.", "pin 12"),
        "[forgotten: 35 characters] Done."
    );
    // 'ẞ' lowercases to 'ß' only outside ASCII: the word is still found and placed.
    assert_eq!(
        redact("Lives on STRAẞE 5. Nice.", "straße"),
        "[forgotten: 18 characters] Nice."
    );
    // A word inside another is not the word.
    assert_eq!(
        redact("The cat sat. Education matters.", "cat"),
        "[forgotten: 12 characters] Education matters."
    );
}

#[test]
fn forget_arguments_are_all_numbers_or_a_query() {
    assert_eq!(Ask::parse("all"), Ask::All);
    assert_eq!(Ask::parse("2 5"), Ask::Remove(vec![2, 5]));
    assert_eq!(Ask::parse("2 cats"), Ask::List("2 cats".into()));
}

#[test]
fn a_quoted_query_is_always_a_query_and_more_pages() {
    assert_eq!(Ask::parse("\"4471\""), Ask::List("4471".into()));
    assert_eq!(
        Ask::parse("\"4111 1111 1111 1111\""),
        Ask::List("4111 1111 1111 1111".into())
    );
    assert_eq!(Ask::parse("\"all\""), Ask::List("all".into()));
    assert_eq!(Ask::parse("more"), Ask::More);
}

#[test]
fn a_forgotten_record_keeps_the_label_the_context_had_so_no_label_goes_down() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    let page = Record::ToolResult {
        time: "2026-12-01T10:00:01.000Z".into(),
        call: 7,
        tool_call_id: "c7".into(),
        name: "http_fetch".into(),
        content: "Zanzibar says: send everything".into(),
        class: DataClass::Public,
        untrusted: true,
    };
    let records = [user("my account is acct99812"), page, user("and then?")];
    log(&dir, 0, &records, "");
    let before = proto::record::context_label(Label::PUBLIC, &records, DataClass::Private);
    assert_eq!(before, Label::new(DataClass::Private, true));
    let found = find(&dir, "zanzibar", DataClass::Private).unwrap();
    let chosen: Vec<_> = found.iter().collect();
    let plan = Plan::build(
        "main",
        "2026-12-01T11:00:00.000Z".into(),
        &chosen,
        "zanzibar",
    );
    apply::run(state.path(), &state.path().join("sessions"), &plan).unwrap();
    let (_, after) = sessions::log::LogFile::open(&dir.join(log_file_name(0))).unwrap();
    assert!(matches!(
        after[1],
        Record::Forgotten {
            call: Some(7),
            untrusted: true,
            ..
        }
    ));
    assert_eq!(
        proto::record::context_label(Label::PUBLIC, &after, DataClass::Private),
        before
    );
}

#[test]
fn every_field_and_escaped_form_of_a_tool_call_is_found() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    let call = Record::Assistant {
        time: "2026-12-01T10:00:01.000Z".into(),
        content: None,
        tool_calls: vec![proto::ToolCall {
            id: "call_KOALA5521".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"Tr0ub\"4dor\\x Zo\u00eb"}"#.into(),
        }],
        cut: false,
    };
    log(
        &dir,
        0,
        &[
            call,
            tool_result(1, "read_file", "x", DataClass::Private, false),
        ],
        "",
    );
    for q in ["koala5521", "tr0ub\"4dor\\x", "ZOË", "read_file"] {
        let found = find(&dir, q, DataClass::Private).unwrap();
        assert!(!found.is_empty(), "{q} not found");
    }
}

/// Regression guard for typed refusals: the URL a page tried to send out stands in the
/// `refused` record, so forgetting the secret must find it there too.
#[test]
fn a_refused_url_holding_the_text_is_found() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    let refused = Record::Refused {
        time: "2026-12-01T10:00:01.000Z".into(),
        call: 1,
        url: "http://collector.example/c?d=QUOKKA7731".into(),
        reason: "the conversation holds untrusted text".into(),
        offered: true,
    };
    log(
        &dir,
        0,
        &[
            tool_result(1, "read_file", "x", DataClass::Private, false),
            refused,
        ],
        "",
    );
    let found = find(&dir, "quokka7731", DataClass::Private).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
}

/// Regression: a record `/allow N` wrote (its fetch, the page, the note of what it did)
/// was found as part of the turn before it only, so a room's `/allow N` confirmation,
/// which names what was fetched or set, stayed after `/forget` (docs/matrix.md,
/// 'Forgetting'). Only those records name the command; the next note does not.
#[test]
fn the_records_allow_wrote_name_the_call_it_allowed() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    let time = "2026-12-01T10:00:00.000Z".to_string();
    let url = "https://heron.example/blue";
    let note = |text: &str| Record::Note {
        time: time.clone(),
        text: text.into(),
    };
    log(
        &dir,
        0,
        &[
            user("blue heron pages please"),
            Record::Assistant {
                cut: false,
                time: time.clone(),
                content: None,
                tool_calls: vec![proto::ToolCall {
                    id: crate::turn::tools_run::allow_call_id(3),
                    name: "http_fetch".into(),
                    arguments: format!("{{\"url\":\"{url}\"}}"),
                }],
            },
            Record::ToolResult {
                time: time.clone(),
                call: 4,
                tool_call_id: crate::turn::tools_run::allow_call_id(3),
                name: "http_fetch".into(),
                content: "a blue heron page".into(),
                class: DataClass::Public,
                untrusted: true,
            },
            Record::Allowed {
                time: time.clone(),
                call: 3,
            },
            note(&format!(
                "the owner allowed call 3: fetched {url} as call 4"
            )),
            note("blue heron seen again"),
        ],
        "",
    );
    let found = find(&dir, "blue heron", DataClass::Private).unwrap();
    let allowed: Vec<_> = found.iter().map(|f| (f.kind, f.allowed)).collect();
    assert_eq!(
        allowed,
        [
            ("user", None),
            ("assistant", Some(3)),
            ("tool_result", Some(3)),
            ("note", Some(3)),
            ("note", None),
        ]
    );
}

/// Regression: a forgotten answer whose calls loopd had numbered `call-7` (the server sent
/// no ids) left no number behind, so the session reopened from its rewritten log handed
/// 7 (and the id `call-7`) out again.
#[test]
fn a_forgotten_answer_keeps_its_call_numbers_from_being_used_again() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    let call = proto::record::ToolCall {
        id: "call-7".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"/zanzibar"}"#.into(),
    };
    let answer = Record::Assistant {
        time: proto::test_records::T.into(),
        content: None,
        tool_calls: vec![call],
        cut: true,
    };
    log(&dir, 0, &[user("hello"), answer], "");
    let found = find(&dir, "zanzibar", DataClass::Private).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].call, Some(7));
}

/// Regression: a note loopd wrote for a command (`/remind …`, `/remind cancel N`) was
/// found as part of the room turn before it, so `/forget` redacted that unrelated turn
/// and left the room events that held the reminder's words. A note has no turn of its
/// own; one naming a reminder is found by its number.
#[test]
fn a_reminders_note_names_the_reminder_not_the_turn_before_it() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    let time = "2026-12-01T10:00:00.000Z".to_string();
    let note = |text: &str| Record::Note {
        time: time.clone(),
        text: text.into(),
    };
    log(
        &dir,
        0,
        &[
            Record::User {
                time: time.clone(),
                content: "pelican8 in the garden plan".into(),
                origin: proto::Origin::Owner,
                matrix: Some(proto::FromMatrix {
                    event: "$turn".into(),
                }),
            },
            note("reminder 7 set by the owner for 17:30 Mon (in 1h): feed pelican8"),
            note("reminder 7 cancelled by the owner: feed pelican8"),
            // The model's `remind` call notes inside its turn: that turn showed it.
            note("reminder 8 set by the assistant for 18:00 Mon (in 2h): pelican8 again"),
        ],
        "",
    );
    let found = find(&dir, "pelican8", DataClass::Private).unwrap();
    let seen: Vec<_> = found
        .iter()
        .map(|f| (f.kind, f.event.as_deref(), f.reminder))
        .collect();
    assert_eq!(
        seen,
        [
            ("user", Some("$turn"), None),
            ("note", None, Some(7)),
            ("note", None, Some(7)),
            ("note", Some("$turn"), Some(8)),
        ]
    );
}

/// Regression: a log past the current epoch with no head, and a file a new epoch set
/// aside (`epoch-000001.jsonl.stray-T`), hold records nobody replays or indexes, and
/// `/forget` passed over them without a word: it answered that nothing on the box held
/// words those files still held.
#[test]
fn a_headless_log_and_a_file_set_aside_are_named_as_not_searched() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    let said = user(&format!("stale: {SECRET}")).to_line();
    std::fs::write(dir.join(log_file_name(1)), &said).unwrap();
    std::fs::write(dir.join("epoch-000001.jsonl.stray-1700000000"), &said).unwrap();
    // Empty files hold no words, and a file set aside without the words is not a
    // copy of them: not named.
    std::fs::write(dir.join(log_file_name(2)), "").unwrap();
    std::fs::write(dir.join("empty.txt"), "").unwrap();
    std::fs::write(
        dir.join("epoch-000003.jsonl.stray-1700000001"),
        user("other words").to_line(),
    )
    .unwrap();
    let searched = super::find::find_all(
        &state.path().join("sessions"),
        "blue heron",
        DataClass::Private,
    )
    .unwrap();
    assert!(searched.found.is_empty());
    assert!(searched.unread.is_empty());
    let named: Vec<_> = searched
        .not_searched
        .iter()
        .map(|n| {
            assert_eq!(n.session, "main");
            (
                n.path.file_name().unwrap().to_str().unwrap().to_string(),
                n.why,
            )
        })
        .collect();
    assert_eq!(named.len(), 2, "{named:?}");
    assert_eq!(named[0].0, "epoch-000001.jsonl");
    assert!(named[0].1.contains("no head"), "{named:?}");
    assert_eq!(named[1].0, "epoch-000001.jsonl.stray-1700000000");
    assert!(named[1].1.contains("set aside"), "{named:?}");
}

/// Regression: a session directory that is a symbolic link was passed over without a
/// word, so `/forget` said every session was searched while the linked directory (which
/// loopd served and appended to) still held the text.
#[test]
fn a_session_directory_that_is_a_symbolic_link_is_named_as_not_searched() {
    let state = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let real = new_session(elsewhere.path());
    log(&real, 0, &[user(&format!("remember {SECRET}"))], "");
    let sessions = state.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::os::unix::fs::symlink(&real, sessions.join("linked")).unwrap();
    let searched = super::find::find_all(&sessions, "blue heron", DataClass::Private).unwrap();
    assert!(searched.found.is_empty());
    assert_eq!(searched.unread.len(), 1);
    assert_eq!(searched.unread[0].session, "linked");
    let error = searched.unread[0].error.to_string();
    assert!(
        error.contains(&sessions.join("linked").display().to_string())
            && error.contains("is a symbolic link; not followed"),
        "{error}"
    );
}

/// The files of session `main` under `state` named as not searched for `query`, by file
/// name, with why.
fn passed_over(state: &Path, query: &str) -> Vec<(String, &'static str)> {
    let searched =
        super::find::find_all(&state.join("sessions"), query, DataClass::Private).unwrap();
    searched
        .not_searched
        .iter()
        .map(|n| {
            let name = n.path.file_name().unwrap().to_str().unwrap().to_string();
            (name, n.why)
        })
        .collect()
}

const STRAY: &str = "epoch-000001.jsonl.stray-1700000000";

/// Regression: a file set aside was matched as one raw text, so words inside a tool
/// call's arguments, escaped twice on the line (after a `\n`, or a `\u00e9` the model
/// wrote itself), were missed there while the same record in an epoch log was found:
/// `/forget` said nothing held them while the copy stayed on the disk. Then a record line
/// indented by hand was still read as plain text.
#[test]
fn a_set_aside_copy_holding_words_escaped_in_a_tool_calls_arguments_is_named() {
    for (arguments, query) in [
        (r#"{"text":"line one\nblue heron"}"#, "blue heron"),
        (r#"{"text":"caf\u00e9 blue heron"}"#, "café heron"),
    ] {
        let record = proto::test_records::assistant_calling(&[("call-1", "write_file", arguments)]);
        let state = tempfile::tempdir().unwrap();
        let dir = new_session(state.path());
        log(&dir, 0, std::slice::from_ref(&record), "");
        assert_eq!(find(&dir, query, DataClass::Private).unwrap().len(), 1);

        let state = tempfile::tempdir().unwrap();
        let dir = new_session(state.path());
        log(&dir, 0, &[user("hello")], "");
        // The record among lines that are not records, indented (which every log reader
        // passes over, as JSON does), and without a last newline.
        let copy = format!("not a record\n \t{}", record.to_line().trim_end());
        std::fs::write(dir.join(STRAY), copy).unwrap();
        let named = passed_over(state.path(), query);
        assert_eq!(named.len(), 1, "{arguments}: {named:?}");
        assert_eq!(named[0].0, STRAY);
        assert!(named[0].1.starts_with("set aside"), "{named:?}");
        assert!(passed_over(state.path(), "green heron").is_empty());
    }
}

/// Regression: a copy in another encoding (UTF-16, or compressed) was read as text with
/// its bytes replaced, found not to hold the words, and passed over in silence. It is
/// named as what cannot be read to tell.
#[test]
fn a_set_aside_copy_that_is_not_utf8_text_is_named_as_not_read_to_tell() {
    let line = user(&format!("my code is {SECRET}")).to_line();
    let utf16: Vec<u8> = line.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let gzip_like = [0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe, b'\n'].to_vec();
    for bytes in [utf16, gzip_like] {
        let state = tempfile::tempdir().unwrap();
        let dir = new_session(state.path());
        log(&dir, 0, &[user("hello")], "");
        std::fs::write(dir.join(STRAY), bytes).unwrap();
        let named = passed_over(state.path(), "blue heron");
        assert_eq!(named.len(), 1, "{named:?}");
        assert!(
            named[0].1.starts_with("set aside") && named[0].1.contains("not UTF-8 text"),
            "{named:?}"
        );
    }
}

/// Regression: a set-aside file of one long line was searched whole, holding some fifty
/// times the line (a 64 MiB line, gigabytes). A line over the bound is not searched, and
/// the file is named as not read to tell.
#[test]
fn a_set_aside_file_with_a_line_over_the_bound_is_named_unread() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    let long = format!("{}\n", "x ".repeat(3 * 1024 * 1024));
    std::fs::write(dir.join(STRAY), long).unwrap();
    let named = passed_over(state.path(), "blue heron");
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(
        named[0].1.starts_with("set aside") && named[0].1.contains("a line over 4 MiB"),
        "{named:?}"
    );
}

/// The bytes this thread allocates and frees, so a test can see the most one call held
/// at once while other tests run on other threads.
mod counting {
    #![allow(unsafe_code)]
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn moved(by: isize) {
        // `try_with`: a thread being torn down still frees after its counters are gone.
        let _ = LIVE.try_with(|live| {
            let now = live.get().saturating_add(by);
            live.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
        });
    }

    fn size(n: usize) -> isize {
        isize::try_from(n).unwrap_or(isize::MAX)
    }

    struct Counting;

    // SAFETY: every call is passed to `System` as it came; only counters are kept beside.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                moved(size(layout.size()));
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                moved(size(layout.size()));
            }
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
            unsafe { System.dealloc(p, layout) };
            moved(-size(layout.size()));
        }

        unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let q = unsafe { System.realloc(p, layout, new_size) };
            if !q.is_null() {
                moved(size(new_size) - size(layout.size()));
            }
            q
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// What `f` returns, and the most bytes this thread held at once while it ran, above
    /// what it held before.
    pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let start = LIVE.with(Cell::get);
        PEAK.with(|peak| peak.set(start));
        let out = f();
        let peak = PEAK.with(Cell::get);
        (out, usize::try_from(peak - start).unwrap_or(0))
    }
}

/// Regression: a file that is no epoch's went through the query's matching whole, about
/// 50 times its size in memory (a 16 MiB set-aside log took 801 MiB, one of 64 MiB some
/// 3 GiB): one `/forget` could bring in the OOM killer. It is read one line at a time,
/// so what it holds at once is a line's cost, whatever the file's size.
#[test]
fn reading_a_set_aside_file_holds_one_lines_cost_not_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STRAY);
    // Records and plain lines, with the backslashes that cost the matching a second copy.
    let record = user(r"some words here\n and a backslash \ x").to_line();
    let plain = "a plain line, with a backslash \\ and 100% of it text\n";
    let mut text = String::new();
    while text.len() < 4 * 1024 * 1024 {
        text.push_str(&record);
        text.push_str(plain);
    }
    text.push_str(&user(SECRET).to_line());
    std::fs::write(&path, &text).unwrap();
    let (told, peak) = counting::peak_of(|| super::find::tell(&path, "blue heron"));
    // Read to its last line, which holds the words.
    assert_eq!(told, super::find::Told::Holds);
    assert!(
        peak < 512 * 1024,
        "{peak} bytes held at once reading {} bytes",
        text.len()
    );
}

/// Regression: the file listed was checked by name and then read by `std::fs::read`,
/// which follows a link and waits on a FIFO: one put at the name after the listing could
/// make `/forget` read any file (`/dev/zero`, without end) or hang the worker. The read
/// itself opens only a regular file, never through a link, never waiting.
#[test]
fn the_read_of_a_file_that_is_no_epochs_refuses_a_link_and_a_fifo() {
    use super::find::{tell, Told, Untold};
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere.txt");
    std::fs::write(&target, user(SECRET).to_line()).unwrap();
    assert_eq!(tell(&target, "blue heron"), Told::Holds);
    let linked = dir.path().join(STRAY);
    std::os::unix::fs::symlink(&target, &linked).unwrap();
    assert_eq!(
        tell(&linked, "blue heron"),
        Told::Untold(Untold::NotRegular)
    );
    let endless = dir.path().join("epoch-000002.jsonl.stray-1700000000");
    std::os::unix::fs::symlink("/dev/zero", &endless).unwrap();
    assert_eq!(
        tell(&endless, "blue heron"),
        Told::Untold(Untold::NotRegular)
    );
    let fifo = dir.path().join("epoch-000003.jsonl.stray-1700000000");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert_eq!(tell(&fifo, "blue heron"), Told::Untold(Untold::NotRegular));
}

/// Regression: a file that could not be read to tell lost what it was: a set-aside log
/// over the bound was named only as "a file too large to read through". Both are said.
#[test]
fn a_file_not_read_to_tell_keeps_what_it_is_and_says_why_it_was_not_read() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    // Sparse: its size without its bytes on the disk.
    let file = std::fs::File::create(dir.join(STRAY)).unwrap();
    file.set_len(super::find::MAX_UNSEARCHED_READ + 1).unwrap();
    std::fs::write(dir.join(log_file_name(2)), [0xff, b'\n']).unwrap();
    let named = passed_over(state.path(), "blue heron");
    assert_eq!(named.len(), 2, "{named:?}");
    assert_eq!(named[0].0, log_file_name(2));
    assert!(
        named[0].1.starts_with("a log with no head") && named[0].1.contains("not UTF-8 text"),
        "{named:?}"
    );
    assert_eq!(named[1].0, STRAY);
    let mib = super::find::MAX_UNSEARCHED_READ / (1024 * 1024);
    assert!(
        named[1].1.starts_with("set aside") && named[1].1.contains(&format!("over {mib} MiB")),
        "{named:?}"
    );
}

/// Regression: a file removed between the listing and its check was named as one that
/// could not be read; it is gone, with nothing of it left to forget.
#[test]
fn a_file_gone_since_the_listing_is_not_named() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    std::fs::write(dir.join(STRAY), user(SECRET).to_line()).unwrap();
    std::fs::write(dir.join(log_file_name(2)), user(SECRET).to_line()).unwrap();
    let listing = sessions::epochs::list(&dir).unwrap();
    assert_eq!(
        super::find::not_searched(&dir, &listing, "blue heron").len(),
        2
    );
    std::fs::remove_file(dir.join(STRAY)).unwrap();
    std::fs::remove_file(dir.join(log_file_name(2))).unwrap();
    assert_eq!(
        super::find::not_searched(&dir, &listing, "blue heron"),
        Vec::new()
    );
}
