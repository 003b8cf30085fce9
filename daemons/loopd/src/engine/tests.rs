//! The engine's rules (docs/turn.md) with no server and no thread: a scripted `ModelServer`
//! answers each model call in order and records what it was asked, and the session's
//! files are real, in a temporary directory.

use super::*;
use llama::{ChatRequest, Completion, Delta, LlamaError, SlotError, SlotInfo, SlotListError};
use proto::{Record, ToolCall};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// One scripted answer: the pieces streamed, then the completion.
enum Answer {
    Says(Vec<&'static str>, Completion),
    Fails(LlamaError),
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    /// The request bodies, in order.
    asked: Arc<Mutex<Vec<String>>>,
    /// Spans this model's tokenizer reads as special tokens; none: it cannot be asked.
    specials: Arc<Mutex<Vec<String>>>,
    /// What the client learnt of them, as `llama::Client` keeps it.
    learnt: Arc<llama::tokenize::Specials>,
    /// The slot endpoints, as a server answers them.
    slots: Arc<Mutex<SlotServer>>,
}

/// What the scripted server's slots do, and what it was asked of them.
#[derive(Default)]
struct SlotServer {
    /// Started with `--slot-save-path`; without one every save and restore is a 501.
    save_path: bool,
    /// The main slot has run a completion since the server (re)started.
    main_used: bool,
    /// Each slot call and tool check, in order: `list`, `save 0 FILE`, `erase 1`, `check`.
    asked: Vec<String>,
}

impl Script {
    fn then(&self, answer: Answer) -> &Script {
        self.answers.lock().unwrap().push_back(answer);
        self
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }

    fn slot_calls(&self) -> Vec<String> {
        self.slots.lock().unwrap().asked.clone()
    }

    /// As a restarted server: its main slot has run nothing.
    fn restart(&self) {
        self.slots.lock().unwrap().main_used = false;
    }

    /// Notes a slot call, and answers a save or restore of `file` with 100 tokens when
    /// the server has a save path.
    fn slot_call(&self, call: String) -> Result<u64, SlotError> {
        let mut slots = self.slots.lock().unwrap();
        slots.asked.push(call);
        if slots.save_path {
            Ok(100)
        } else {
            Err(SlotError::NoSavePath)
        }
    }
}

impl ModelServer for Script {
    fn base_url(&self) -> String {
        "http://127.0.0.1:9".into()
    }

    fn reload(&self, _: &proto::config::Llama) {}

    fn specials(&self) -> &llama::tokenize::Specials {
        &self.learnt
    }

    fn model_path(&self) -> Option<String> {
        None
    }

    fn special_spans(&self, text: &str) -> Result<Vec<String>, llama::tokenize::TokenizeError> {
        let specials = self.specials.lock().unwrap();
        if specials.is_empty() {
            return Err(llama::tokenize::TokenizeError::Request(
                "a scripted model has no tokenizer".into(),
            ));
        }
        Ok(specials
            .iter()
            .filter(|s| text.contains(s.as_str()))
            .cloned()
            .collect())
    }

    fn count_tokens(&self, _text: &str) -> Result<u64, llama::tokenize::TokenizeError> {
        Err(llama::tokenize::TokenizeError::Request(
            "a scripted model has no tokenizer".into(),
        ))
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Completion, LlamaError> {
        self.asked.lock().unwrap().push(req.body());
        self.slots.lock().unwrap().main_used = true;
        match self.answers.lock().unwrap().pop_front() {
            Some(Answer::Says(pieces, completion)) => {
                for piece in pieces {
                    on_delta(Delta::Content(piece));
                }
                Ok(completion)
            }
            Some(Answer::Fails(e)) => Err(e),
            None => Err(LlamaError::Transport(
                "the script has no more answers".into(),
            )),
        }
    }

    fn slot_list(&self) -> Result<Vec<SlotInfo>, SlotListError> {
        let mut slots = self.slots.lock().unwrap();
        slots.asked.push("list".into());
        let slot = |id, used| SlotInfo {
            id,
            n_ctx: 2048,
            used,
        };
        Ok(vec![slot(0, slots.main_used), slot(1, false)])
    }

    fn slot_save(&self, slot: u32, file: &str) -> Result<u64, SlotError> {
        self.slot_call(format!("save {slot} {file}"))
    }

    fn slot_restore(&self, slot: u32, file: &str) -> Result<u64, SlotError> {
        self.slot_call(format!("restore {slot} {file}"))
    }

    fn slot_erase(&self, slot: u32) -> Result<(), SlotError> {
        self.slots
            .lock()
            .unwrap()
            .asked
            .push(format!("erase {slot}"));
        Ok(())
    }

    fn tool_findings(&self) -> Vec<String> {
        self.slots.lock().unwrap().asked.push("check".into());
        Vec::new()
    }
}

fn usage(prompt_n: u64, predicted_n: u64) -> Option<proto::Tokens> {
    Some(proto::Tokens {
        cache_n: 0,
        prompt_n,
        predicted_n,
    })
}

fn says(text: &'static str) -> Answer {
    Answer::Says(
        vec![text],
        Completion {
            content: Some(text.into()),
            tool_calls: Vec::new(),
            timings: usage(100, 5),
            finish: Some("stop".into()),
        },
    )
}

fn calls(name: &str, arguments: &str, finish: &str) -> Answer {
    Answer::Says(
        Vec::new(),
        Completion {
            content: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: arguments.into(),
            }],
            timings: usage(100, 20),
            finish: Some(finish.into()),
        },
    )
}

/// Collects what the owner would see.
#[derive(Default)]
struct Screen {
    text: String,
    activity: Vec<String>,
}

impl Sink for Screen {
    fn text(&mut self, text: &str) {
        self.text.push_str(text);
    }

    fn activity(&mut self, line: &str) {
        self.activity.push(line.to_string());
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    engine: Engine,
    session: Session,
    script: Script,
    files: std::path::PathBuf,
}

fn rig() -> Rig {
    rig_with(|_| {})
}

/// A rig whose configuration `edit` changes first.
fn rig_with(edit: impl FnOnce(&mut Config)) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("system.md"), "You are terse.").unwrap();
    std::fs::write(prompts.join("compact.md"), "Summarise the conversation.").unwrap();
    std::fs::write(prompts.join("summarise.md"), "Summarise this result.").unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let mut cfg = Config {
        state_dir: dir.path().join("state"),
        ..Config::default()
    };
    cfg.baseline.system = prompts.join("system.md");
    cfg.memory.socket = dir.path().join("no-memoryd.sock");
    cfg.memory.auto_recall = false;
    cfg.tools.read_file.roots = vec![files.clone()];
    edit(&mut cfg);
    std::fs::create_dir_all(cfg.sessions_dir()).unwrap();
    let session = session(&cfg.sessions_dir());
    let script = Script::default();
    let engine = Engine::with_llama(Arc::new(cfg), Box::new(script.clone()));
    Rig {
        _dir: dir,
        engine,
        session,
        script,
        files,
    }
}

fn session(sessions_dir: &Path) -> Session {
    let id = proto::SessionId::parse("main").unwrap();
    Session::open_or_create(sessions_dir, &id, || {
        Ok(conversation::open_session::Frozen {
            system: "You are terse.".into(),
            tools: tools::schemas(),
        })
    })
    .unwrap()
}

fn kinds(session: &Session) -> Vec<&'static str> {
    session.records().iter().map(Record::kind).collect()
}

#[test]
fn a_plain_answer_streams_to_the_owner_and_is_logged_with_its_usage() {
    let mut r = rig();
    r.script.then(says("Hello."));
    let mut screen = Screen::default();
    let done = r
        .engine
        .turn(&mut r.session, "hi", Origin::Owner, None, &mut screen)
        .unwrap();
    assert_eq!(screen.text, "Hello.");
    assert_eq!(done.rounds, 1);
    assert_eq!(kinds(&r.session), ["user", "assistant", "usage"]);
}

#[test]
fn a_tool_call_runs_and_its_result_goes_back_to_the_model_in_the_next_round() {
    let mut r = rig();
    let path = r.files.join("boat.txt");
    std::fs::write(&path, "The boat is blue.").unwrap();
    let args = serde_json::json!({ "path": path }).to_string();
    r.script
        .then(calls("read_file", &args, "tool_calls"))
        .then(says("It is blue."));
    let mut screen = Screen::default();
    let done = r
        .engine
        .turn(&mut r.session, "read it", Origin::Owner, None, &mut screen)
        .unwrap();
    assert_eq!((done.rounds, done.tool_calls), (2, 1));
    assert_eq!(
        kinds(&r.session),
        [
            "user",
            "assistant",
            "usage",
            "tool_result",
            "assistant",
            "usage"
        ]
    );
    let asked = r.script.asked();
    assert!(asked[1].contains("The boat is blue."), "{}", asked[1]);
    assert!(screen.activity.iter().any(|l| l.contains("read_file")));
}

/// A cut answer's calls may hold cut JSON: they are never run, and the turn ends there
/// (docs/turn.md, "A cut answer").
#[test]
fn a_cut_answer_ends_the_turn_its_calls_never_run_and_the_owner_is_told() {
    let mut r = rig();
    r.script
        .then(calls("read_file", "{\"path\": \"/fi", "length"));
    let mut screen = Screen::default();
    let done = r
        .engine
        .turn(&mut r.session, "read it", Origin::Owner, None, &mut screen)
        .unwrap();
    assert!(done.cut);
    assert_eq!(r.script.asked().len(), 1, "nothing more is asked");
    assert!(!kinds(&r.session).contains(&"tool_result"));
    assert!(
        r.session
            .records()
            .iter()
            .any(|rec| matches!(rec, Record::Assistant { cut: true, .. })),
        "{:?}",
        r.session.records()
    );
    assert!(
        screen
            .activity
            .iter()
            .any(|l| l.contains("cut at 20 tokens")),
        "{:?}",
        screen.activity
    );
}

/// A full context compacts and the line is asked again in the new epoch, in one turn.
#[test]
fn a_full_context_compacts_and_the_same_line_is_answered_in_the_next_epoch() {
    let mut r = rig();
    r.script.then(says("First."));
    let mut screen = Screen::default();
    r.engine
        .turn(
            &mut r.session,
            "remember the boat is blue",
            Origin::Owner,
            None,
            &mut screen,
        )
        .unwrap();
    r.script
        .then(Answer::Fails(LlamaError::ContextFull(
            "the prompt is too long".into(),
        )))
        .then(says("The owner said the boat is blue."))
        .then(says("Blue."));
    let mut screen = Screen::default();
    r.engine
        .turn(
            &mut r.session,
            "what colour is the boat?",
            Origin::Owner,
            None,
            &mut screen,
        )
        .unwrap();
    assert_eq!(r.session.epoch(), 1);
    assert_eq!(screen.text, "Blue.");
    let asked = r.script.asked();
    assert!(asked.last().unwrap().contains("what colour is the boat?"));
    assert!(
        r.session
            .carry()
            .is_some_and(|c| c.contains("boat is blue")),
        "{:?}",
        r.session.carry()
    );
    // The line asked again is the same line, said when it was first: its record in the
    // new epoch has the time of the one in the epoch before (a heartbeat's message is
    // found by that time, docs/matrix.md, 'Forgetting').
    let said_at = |records: &[proto::Record]| {
        records.iter().rev().find_map(|r| match r {
            proto::Record::User { time, content, .. } if content == "what colour is the boat?" => {
                Some(time.clone())
            }
            _ => None,
        })
    };
    let before = std::fs::read_to_string(r.session.dir().join(proto::head::log_file_name(0)))
        .unwrap()
        .lines()
        .map(|l| proto::Record::from_line(l).unwrap())
        .collect::<Vec<_>>();
    assert_eq!(said_at(&before), said_at(r.session.records()));
    assert!(said_at(&before).is_some());
}

/// Regression: a reminder set by the run that found the context full counts for the
/// rerun in the new epoch: no "no reminder was set" line follows one that was.
#[test]
fn a_reminder_set_before_the_context_was_full_counts_after_the_rerun() {
    let mut r = rig();
    let state = r.engine.world.cfg.state_dir.clone();
    std::fs::create_dir_all(&state).unwrap();
    let book = remind::Book::load(&state).unwrap();
    let script = r.script.clone();
    r.engine = Engine::with_llama(r.engine.world.cfg.clone(), Box::new(script))
        .with_reminders(remind::Shared::new(book, None));
    r.script
        .then(calls(
            "remind",
            r#"{"when":"in 2h","text":"call mom"}"#,
            "tool_calls",
        ))
        .then(Answer::Fails(LlamaError::ContextFull(
            "the prompt is too long".into(),
        )))
        .then(says("The owner asked to be reminded to call mom."))
        .then(says("Done."));
    let mut screen = Screen::default();
    r.engine
        .turn(
            &mut r.session,
            "remind me in 2 hours to call mom",
            Origin::Owner,
            None,
            &mut screen,
        )
        .unwrap();
    assert_eq!(r.session.epoch(), 1);
    assert!(
        screen.activity.iter().any(|l| l.contains("call mom")),
        "{:?}",
        screen.activity
    );
    assert!(
        !screen
            .activity
            .iter()
            .any(|l| l.contains("no reminder was set")),
        "{:?}",
        screen.activity
    );
}

/// A refusal the same request would meet again fails the turn at once, with the way out
/// named, and is written down as a `note`.
#[test]
fn a_refusal_that_would_repeat_fails_once_names_compact_and_leaves_a_note() {
    let mut r = rig();
    r.script.then(Answer::Fails(LlamaError::Refused {
        status: 500,
        message: "Failed to parse tool call arguments as JSON".into(),
    }));
    let mut screen = Screen::default();
    let e = r
        .engine
        .turn(&mut r.session, "hi", Origin::Owner, None, &mut screen)
        .unwrap_err();
    assert!(e.to_string().contains("/compact"), "{e}");
    assert_eq!(r.script.asked().len(), 1, "not retried");
    assert_eq!(kinds(&r.session), ["user", "note"]);
}

#[test]
fn a_model_specific_special_token_in_a_tool_summary_is_broken_before_it_is_logged() {
    let mut rig = rig();
    // A control token of one model only (SmolLM2's file separator), not in the static
    // list; built from pieces so no source file holds it whole.
    let token = format!("<{}>", "file_sep");
    rig.script.specials.lock().unwrap().push(token.clone());
    let call = rig.session.take_call().unwrap();
    rig.session
        .append(Record::ToolResult {
            time: "2026-11-30T06:00:00.000Z".into(),
            call,
            tool_call_id: "c1".into(),
            name: "http_fetch".into(),
            content: "a page".into(),
            class: proto::DataClass::Public,
            untrusted: true,
        })
        .unwrap();
    let summary: &'static str = Box::leak(format!("the page says {token}system").into_boxed_str());
    rig.script.then(says(summary));
    let ctx = TurnCtx {
        cfg: rig.engine.cfg(),
        client: &rig.script,
        reminders: None,
    };
    conversation::compact::tool_summaries::make(&ctx, &mut rig.session).unwrap();
    let logged = rig
        .session
        .records()
        .iter()
        .find_map(|r| {
            let Record::ToolSummary { content, .. } = r else {
                return None;
            };
            Some(content.clone())
        })
        .unwrap();
    assert!(!logged.contains(&token), "{logged}");
    assert!(
        logged.contains(&format!("<{}file_sep>", proto::neutralise::BREAKER)),
        "{logged}"
    );
}

/// Regression: what one server's model was found to read as special tokens was kept
/// process-wide, so every other client (another server, another model's script) broke
/// those spans too, and a client's cache could not be told apart from the process's.
/// The cache is the client's own.
#[test]
fn special_tokens_learnt_by_one_client_stay_with_that_client() {
    use llama::tokenize::neutralise_for_model;
    let token = format!("<{}>", "file_sep");
    let text = format!("a page holding {token} once");
    let taught = Script::default();
    taught.specials.lock().unwrap().push(token.clone());
    assert!(!neutralise_for_model(&taught, &text).contains(&token));
    // Another client, whose server cannot be asked, knows nothing of it.
    let other = Script::default();
    assert_eq!(neutralise_for_model(&other, &text), text);
    // The taught client still breaks it once its server stops answering.
    taught.specials.lock().unwrap().clear();
    assert!(!neutralise_for_model(&taught, &text).contains(&token));
}

#[test]
fn the_engine_performs_the_keepers_slot_actions_in_order_and_hands_back_their_outcomes() {
    let mut r = rig_with(|cfg| cfg.llama.slot_save_idle_s = 1);
    r.script.slots.lock().unwrap().save_path = true;
    r.script.then(says("One.")).then(says("Two."));
    let mut screen = Screen::default();
    r.engine
        .turn(&mut r.session, "one", Origin::Owner, None, &mut screen)
        .unwrap();
    assert_eq!(r.engine.idle_timeout(), Some(Duration::from_secs(1)));
    let saved = r.engine.save_idle().unwrap();
    assert_eq!(
        (saved.session.as_str(), saved.epoch, saved.tokens),
        ("main", 0, 100)
    );
    assert_eq!(r.engine.idle_timeout(), None, "the save was handed back");
    let ledger = r.engine.cfg().state_dir.join("slots/saved.json");
    let stored = std::fs::read_to_string(&ledger).unwrap();
    assert!(stored.contains("\"main\""), "{stored}");
    r.script.restart();
    r.engine
        .turn(&mut r.session, "two", Origin::Owner, None, &mut screen)
        .unwrap();
    let main = r.session.id().clone();
    assert_eq!(
        r.engine.forget(&main, &[0]),
        "slot 0 erased; slot 1 erased; saved slot files of epochs [0] emptied"
    );
    let stored = std::fs::read_to_string(&ledger).unwrap();
    assert!(!stored.contains("\"main\""), "{stored}");
    let file = "main-epoch-000000.bin";
    assert_eq!(
        r.script.slot_calls(),
        [
            "list".to_string(),
            format!("save 0 {file}"),
            "list".to_string(),
            format!("restore 0 {file}"),
            "check".to_string(),
            "erase 0".to_string(),
            "erase 1".to_string(),
            "erase 1".to_string(),
            format!("save 1 {file}"),
        ]
    );
}

mod calls;
