//! Matrix rooms as the channel's clients (docs/matrix.md, 'The channel in loopd'), with no
//! thread, socket or homeserver: the sync thread's lines and the send thread's
//! acknowledgements are sent by hand, the turn worker's jobs are recorded, and what the
//! send thread would send is read from its queue.

use super::work::{Probe, Work};
use super::Channel;
use crate::matrix::store::{Store, Why};
use crate::matrix::{test_link, Down, Line, Up};
use crate::worker::{Command, Event, Job, JobId};
use conversation::status::{Board, SessionView};
use plumbing::{Outbox, Service};
use proto::config::Config;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

#[derive(Default)]
pub(in crate::channel) struct Recorder {
    jobs: Vec<Job>,
    /// The probes asked for (`/status`, `/recall`), for a test to run (review tests).
    pub(in crate::channel) probes: Vec<(JobId, Probe)>,
}

impl Work for Recorder {
    fn submit(&mut self, job: Job) -> bool {
        self.jobs.push(job);
        true
    }

    fn idle(&self) -> bool {
        self.jobs.is_empty()
    }

    fn probe(&mut self, id: JobId, probe: Probe, _cfg: &Config) {
        self.probes.push((id, probe));
    }
}

pub(in crate::channel) struct Rig {
    pub(in crate::channel) ch: Channel<Recorder>,
    events: Sender<Event>,
    up: SyncSender<Up>,
    down: Receiver<Down>,
    out: Outbox,
    pub(in crate::channel) state: std::path::PathBuf,
}

const ROOM: &str = "!room:example.org";

impl Rig {
    pub(in crate::channel) fn new() -> Rig {
        Rig::on(tempfile::tempdir().unwrap().keep())
    }

    /// A channel on `state` (another's, for a restart).
    pub(in crate::channel) fn on(state: std::path::PathBuf) -> Rig {
        let cfg = Config {
            state_dir: state.clone(),
            ..Config::default()
        };
        let book = remind::Book::load(&state).unwrap();
        let inbox = conversation::inbox::Inbox::load(&state).unwrap();
        let mail = super::broadcast::Mail::new(
            remind::Shared::new(book, None),
            conversation::inbox::Shared::new(inbox),
            None,
        );
        let (events, rx) = channel();
        let mut ch = Channel::new(
            "/nonexistent/boxmaker.toml".into(),
            std::sync::Arc::new(cfg),
            Recorder::default(),
            rx,
            Board::default(),
            mail,
        )
        .unwrap();
        let (link, up, down) = test_link();
        ch.attach_matrix(link, Store::load(&state).unwrap());
        Rig {
            ch,
            events,
            up,
            down,
            out: Outbox::default(),
            state,
        }
    }

    /// The sync thread hands over `lines` (event id, body); returns whether the loop
    /// said they are on disk.
    pub(in crate::channel) fn lines(&mut self, lines: &[(&str, &str)]) -> bool {
        let (on_disk, said) = sync_channel(1);
        let lines = lines
            .iter()
            .map(|(event, body)| Line {
                room: ROOM.into(),
                event: event.to_string(),
                body: body.to_string(),
            })
            .collect();
        self.up.send(Up::Lines { lines, on_disk }).unwrap();
        self.ch.wake(&mut self.out);
        said.try_recv().is_ok()
    }

    pub(in crate::channel) fn event(&mut self, event: Event) {
        self.events.send(event).unwrap();
        self.ch.wake(&mut self.out);
    }

    /// What the loop handed the send thread since the last look (typing left out).
    pub(in crate::channel) fn sent(&mut self) -> Vec<crate::matrix::store::Outgoing> {
        let mut out = Vec::new();
        while let Ok(d) = self.down.try_recv() {
            if let Down::Send(o) = d {
                out.push(o);
            }
        }
        out
    }

    pub(in crate::channel) fn store(&self) -> Store {
        Store::load(&self.state).unwrap()
    }

    pub(in crate::channel) fn turn(&self, n: usize) -> (JobId, String, Option<String>) {
        match self.ch.worker.jobs.get(n) {
            Some(Job::Asked {
                id,
                from,
                command: Command::Turn(text),
                ..
            }) => (*id, text.clone(), from.as_ref().map(|f| f.event.clone())),
            _ => panic!("job {n} is not a turn"),
        }
    }

    /// The room's first line `line` (event `event`), its turn answered `reply`: a room an
    /// owner wrote in, so unasked messages of its session go there.
    pub(in crate::channel) fn answered(&mut self, event: &str, line: &str, reply: &str) {
        self.lines(&[(event, line)]);
        let (id, ..) = self.turn(0);
        self.event(Event::Done {
            id,
            reply: Ok(reply.into()),
        });
    }

    /// The room's `/forget "4471"` as `event`, its list (one entry, the owner's "my PIN is
    /// 4471") answered by the worker.
    pub(in crate::channel) fn listed(&mut self, event: &str) {
        self.lines(&[(event, "/forget \"4471\"")]);
        let id = self.last_job();
        self.event(Event::Done {
            id,
            reply: Ok(
                "1 entries on the box hold that:\n1. session main: user: my PIN is 4471".into(),
            ),
        });
    }

    /// The id of the last job handed to the worker, which must be a line's.
    pub(in crate::channel) fn last_job(&self) -> JobId {
        match self.ch.worker.jobs.last() {
            Some(Job::Asked { id, .. }) => *id,
            _ => panic!("the last job is not a line's"),
        }
    }

    /// The homeserver acknowledged the event of transaction `txn` as `event`.
    pub(in crate::channel) fn acked(&mut self, txn: &str, event: &str) {
        self.up
            .send(Up::Sent {
                txn: txn.into(),
                room: ROOM.into(),
                event: event.into(),
            })
            .unwrap();
        self.ch.wake(&mut self.out);
    }

    /// The homeserver refused the event of transaction `txn` for good.
    pub(in crate::channel) fn refused(&mut self, txn: &str) {
        self.up.send(Up::Refused { txn: txn.into() }).unwrap();
        self.ch.wake(&mut self.out);
    }

    /// The events the store's outbox holds redactions of.
    pub(in crate::channel) fn redactions(&self) -> Vec<String> {
        self.store()
            .outbox
            .iter()
            .filter_map(|o| match &o.why {
                Why::Redact { event } => Some(event.clone()),
                _ => None,
            })
            .collect()
    }

    /// The events the store keeps for `/forget`, as (event, key).
    pub(in crate::channel) fn kept(&self) -> Vec<(String, String)> {
        self.store()
            .sent
            .iter()
            .map(|s| (s.event.clone(), s.line.clone()))
            .collect()
    }

    /// An unasked message of `kind` in `main`'s inbox, labelled `label`, that reached no
    /// client.
    pub(in crate::channel) fn unasked(
        &mut self,
        kind: conversation::inbox::Kind,
        text: &str,
        label: proto::Label,
    ) -> conversation::inbox::Message {
        let text = vec![conversation::inbox::Piece::Text(text.into())];
        let (m, saved) = self
            .ch
            .mail
            .inbox
            .with(|i| i.add("main", kind, text, label, false, None));
        saved.unwrap();
        m
    }
}

#[test]
fn a_rooms_line_is_on_disk_before_the_sync_moves_on_and_its_reply_is_planned_as_text() {
    let mut rig = Rig::new();
    assert!(rig.lines(&[("$e1", "hi\nthere")]));
    assert_eq!(rig.store().inbound.len(), 1, "on disk before the answer");
    let (id, text, from) = rig.turn(0);
    assert_eq!(text, "hi\nthere");
    assert_eq!(from.as_deref(), Some("$e1"));
    rig.event(Event::Text {
        id,
        text: "Hello.".into(),
    });
    rig.event(Event::Done {
        id,
        reply: Ok(String::new()),
    });
    let sent = rig.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].content["msgtype"], "m.text");
    assert_eq!(sent[0].content["body"], "Hello.");
    assert!(sent[0].content.get("format").is_none());
    assert_eq!(
        sent[0].why,
        Why::Reply {
            event: "$e1".into()
        }
    );
    let store = rig.store();
    assert!(
        store.inbound.is_empty(),
        "answered in the write that planned it"
    );
    assert_eq!(store.outbox.len(), 1);
    // Acknowledged: it leaves the store, and its event is kept for /forget.
    rig.up
        .send(Up::Sent {
            txn: sent[0].txn.clone(),
            room: ROOM.into(),
            event: "$r1".into(),
        })
        .unwrap();
    rig.ch.wake(&mut rig.out);
    let store = rig.store();
    assert!(store.outbox.is_empty());
    assert!(store
        .sent
        .iter()
        .any(|s| s.event == "$r1" && s.line == "$e1"));
}

#[test]
fn a_line_taken_before_is_not_queued_again_but_still_acknowledged() {
    let mut rig = Rig::new();
    assert!(rig.lines(&[("$e1", "hi")]));
    assert!(rig.lines(&[("$e1", "hi")]));
    assert_eq!(rig.ch.worker.jobs.len(), 1);
}

#[test]
fn a_commands_answer_is_a_notice_and_quit_does_nothing() {
    let mut rig = Rig::new();
    rig.lines(&[("$c1", "/session"), ("$c2", "/quit"), ("$c3", "after")]);
    let sent = rig.sent();
    assert_eq!(sent.len(), 1, "/quit sends nothing: {sent:?}");
    assert!(sent.iter().all(|o| o.content["msgtype"] == "m.notice"));
    assert_eq!(sent[0].content["body"], "session main");
    // The room goes on: the next line is a turn.
    assert_eq!(rig.turn(0).1, "after");
}

#[test]
fn a_restart_answers_the_lines_the_store_still_holds() {
    let mut rig = Rig::new();
    rig.lines(&[("$e1", "question")]);
    // A new channel on the same state: the store's waiting line is run again.
    let mut again = Rig::on(rig.state.clone());
    again.ch.wake(&mut again.out);
    let (_, text, from) = again.turn(0);
    assert_eq!(text, "question");
    assert_eq!(from.as_deref(), Some("$e1"));
}

/// A room's `/forget QUERY` is the worker's, as on the socket, with the room's event: the
/// worker lists nothing above `matrix.max_class` for it (`worker::forget_list`).
#[test]
fn a_forget_list_asked_in_a_room_goes_to_the_worker_with_its_event() {
    let mut rig = Rig::new();
    rig.lines(&[("$q3", "/forget pin")]);
    assert!(rig.sent().is_empty(), "answered by the worker, not refused");
    match rig.ch.worker.jobs.first() {
        Some(Job::Asked {
            from: Some(from),
            command: Command::Forget(conversation::forget::Ask::List(query)),
            ..
        }) => {
            assert_eq!(from.event, "$q3");
            assert_eq!(query, "pin");
        }
        _ => panic!("the first job is not the room's /forget list"),
    }
}

// ---- Regressions found by trying to break the room channel: each test's comment says
// what used to go wrong, and the test guards against it.

fn open_view(class: proto::DataClass, memory: Option<(proto::Label, String)>) -> SessionView {
    SessionView::Open {
        epoch: 0,
        records: 4,
        usage: None,
        label: proto::Label::new(class, false),
        memory,
    }
}

/// Every body and formatted body the loop handed the send thread.
fn texts(sent: &[crate::matrix::store::Outgoing]) -> String {
    sent.iter()
        .map(|o| o.content.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Regression (it used to be so): `/remind` (the list) in a room is a command, so its whole answer is one
/// `m.notice` and is never weighed against `matrix.max_class`. It quotes every reminder of
/// the session, including those the model set through the `remind` tool: their text is
/// the model's (labelled with the context it was written in, here `secret`). The room
/// gets secret text, and the model's words as loopd's own notice.
#[test]
fn review_remind_list_in_a_room_sends_a_secret_reminder_the_model_set() {
    let mut rig = Rig::new();
    let due = chrono::Utc::now() + chrono::Duration::hours(2);
    crate::channel::tests::reminders::book_reminder(
        &rig.ch.mail,
        due,
        "the vault code is 4471",
        remind::By::Assistant,
        proto::DataClass::Secret,
    );
    rig.lines(&[("$r1", "/remind")]);
    let sent = rig.sent();
    assert!(!sent.is_empty(), "the list is answered in the room");
    assert!(
        !texts(&sent).contains("4471"),
        "a secret reminder's text (the model's) went to the room as {:?}",
        sent.iter()
            .map(|o| &o.content["msgtype"])
            .collect::<Vec<_>>()
    );
}

/// Regression (it used to be so): `/status` in a room quotes "last turn from memory", the text memoryd brought
/// into the session's last turn (from any session, any label up to `memory.max_class`),
/// as one `m.notice`, never weighed against `matrix.max_class`. The probe run here is the
/// daemon's own (`probes::spawn_status`).
#[test]
fn review_status_in_a_room_quotes_memory_above_max_class() {
    let mut rig = Rig::new();
    let memory = (
        proto::Label::new(proto::DataClass::Secret, false),
        "memory · session bank · 2026-12-01\nthe card PIN is 4471".to_string(),
    );
    rig.ch
        .board
        .set("main", open_view(proto::DataClass::Secret, Some(memory)));
    rig.lines(&[("$s1", "/status")]);
    let (id, probe) = rig.ch.worker.probes.pop().expect("/status asks its probe");
    let super::work::Probe::Status { session, mail } = probe else {
        panic!("not the status probe");
    };
    let poll = mio::Poll::new().unwrap();
    let waker = std::sync::Arc::new(mio::Waker::new(poll.registry(), mio::Token(0)).unwrap());
    let notify = crate::worker::Notifier::new(rig.events.clone(), waker);
    let mut cfg = Config {
        state_dir: rig.state.clone(),
        ..Config::default()
    };
    cfg.llama.url = "http://127.0.0.1:9".into();
    cfg.memory.socket = rig.state.join("no-memoryd.sock");
    let llama = llama::Client::new(&cfg.llama);
    super::probes::spawn_status(id, &cfg, llama, session, mail, rig.ch.board.clone(), notify);
    let start = std::time::Instant::now();
    let mut sent = Vec::new();
    while sent.is_empty() && start.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        rig.ch.wake(&mut rig.out);
        sent = rig.sent();
    }
    assert!(!sent.is_empty(), "the status answer was planned");
    assert!(
        !texts(&sent).contains("4471"),
        "secret memory text went to the room: {}",
        texts(&sent)
    );
}

/// Regression (it used to be so): a reply's label is read from the session its room's connection is in when
/// the block is flushed, not from the session the turn ran in. The phone sends a
/// question and `/session other` right after it; when the turn ends the switch runs at
/// once (an `Open` of a new session is quick) and both blocks are flushed in one wake:
/// the secret session's reply is weighed by `other`'s label (none yet) and sent.
#[test]
fn review_a_reply_is_weighed_by_its_own_sessions_label_not_the_one_switched_to() {
    let mut rig = Rig::new();
    rig.ch
        .board
        .set("main", open_view(proto::DataClass::Secret, None));
    rig.lines(&[("$e1", "what is my balance?"), ("$e2", "/session other")]);
    let (id, ..) = rig.turn(0);
    rig.events
        .send(Event::Text {
            id,
            text: "SECRET-BALANCE 91 234".into(),
        })
        .unwrap();
    rig.events
        .send(Event::Done {
            id,
            reply: Ok(String::new()),
        })
        .unwrap();
    // The `/session other` job the loop submits when the turn ends is job id + 1; the
    // worker answers it before the loop looks again.
    rig.events
        .send(Event::Done {
            id: id + 1,
            reply: Ok("session other (new)".into()),
        })
        .unwrap();
    rig.ch.wake(&mut rig.out);
    assert!(
        matches!(
            rig.ch.worker.jobs.get(1),
            Some(Job::Asked {
                command: Command::Open(_),
                ..
            })
        ),
        "{:?}",
        rig.ch.worker.jobs.len()
    );
    let sent = rig.sent();
    assert!(
        !texts(&sent).contains("SECRET-BALANCE"),
        "a reply of a secret session was sent: {}",
        texts(&sent)
    );
}

/// Regression (it used to be so): `/forget` while a reply is still waiting for the homeserver (an outage, a
/// rate limit) leaves that reply in `store.json`'s outbox with the forgotten text, and it
/// is still sent once the homeserver answers (to be redacted only after). docs/forgetting.md: once
/// `/forget` returns the text is nowhere on the box; loopd's Matrix store is on the box,
/// and sending the text to the homeserver after it was forgotten is the opposite of
/// forgetting. (An unasked message whose inbox entry `/forget` removed is the same: its
/// planned event stays in the outbox and goes out.)
#[test]
fn review_forget_leaves_a_waiting_reply_with_the_text_in_the_store_and_sends_it() {
    let mut rig = Rig::new();
    rig.lines(&[("$e1", "my PIN is 4471")]);
    let (id, ..) = rig.turn(0);
    rig.event(Event::Text {
        id,
        text: "Noted: your PIN is 4471.".into(),
    });
    rig.event(Event::Done {
        id,
        reply: Ok(String::new()),
    });
    assert_eq!(rig.sent().len(), 1, "the reply is planned and handed over");
    // No acknowledgement yet (the homeserver is down). The owner forgets the PIN: the
    // worker removed it from the logs and asks for the line's events to be redacted.
    rig.event(Event::Redact(vec!["$e1".into()], None));
    let file =
        std::fs::read_to_string(crate::matrix::store::dir(&rig.state).join("store.json")).unwrap();
    assert!(
        !file.contains("4471"),
        "store.json still holds the forgotten text: {file}"
    );
}

/// Regression (it used to be so): a removal redacts the `/forget` commands rooms sent since the last one,
/// except the newest, taken to be "the removal being answered now". When the removal is
/// made at the terminal, the newest is instead the owner's own `/forget "4471"` from the
/// phone (its list answered), whose body holds the query, the very text being
/// forgotten: it stays in the room.
#[test]
fn review_a_removal_at_the_terminal_redacts_the_rooms_forget_query_too() {
    let mut rig = Rig::new();
    rig.answered("$e1", "my PIN is 4471", "Noted.");
    rig.listed("$f1");
    let sent = rig.sent();
    for (i, o) in sent.iter().enumerate() {
        rig.up
            .send(Up::Sent {
                txn: o.txn.clone(),
                room: ROOM.into(),
                event: format!("$r{i}"),
            })
            .unwrap();
    }
    rig.ch.wake(&mut rig.out);
    // At the terminal: `/forget "4471"`, `/forget all`; the worker asks for the turn's
    // events to be redacted.
    rig.event(Event::Redact(vec!["$e1".into()], None));
    let redacted = rig.redactions();
    assert!(
        redacted.contains(&"$e1".to_string()),
        "the turn is redacted: {redacted:?}"
    );
    assert!(
        redacted.contains(&"$f1".to_string()),
        "the owner's `/forget \"4471\"` event, holding the text, is left: {redacted:?}"
    );
    // And the list the room was shown, which quotes it.
    let list = "$r1".to_string();
    assert!(
        redacted.contains(&list),
        "the room's list is left: {redacted:?}"
    );
}

/// A turn's block in a room is split by each line's kind as the block wrote it, with a
/// line queued behind it: loopd's activity and error lines are notices, the model's
/// text (its forged marks shown after `┃ `) is text.
#[test]
fn a_turns_lines_go_as_notices_or_text_by_the_kind_their_block_wrote() {
    let mut rig = Rig::new();
    assert!(rig.lines(&[("$e1", "first"), ("$e2", "second")]));
    let (id, ..) = rig.turn(0);
    rig.event(Event::Activity {
        id,
        line: "read_file {}".into(),
    });
    rig.event(Event::Text {
        id,
        text: "· x\nerror: y\nfine".into(),
    });
    rig.event(Event::Done {
        id,
        reply: Err(crate::worker::Failure::Internal),
    });
    let (second, ..) = rig.turn(1);
    rig.event(Event::Text {
        id: second,
        text: "ok".into(),
    });
    rig.event(Event::Done {
        id: second,
        reply: Ok(String::new()),
    });
    let sent: Vec<(String, String)> = rig
        .sent()
        .iter()
        .map(|o| {
            (
                o.content["msgtype"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                o.content["body"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expected = [
        ("m.notice", "· read_file {}"),
        ("m.text", "┃ · x\n┃ error: y\nfine"),
        ("m.notice", "error: internal error in loopd (see its log)"),
        ("m.text", "ok"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(sent, expected);
}
