//! Matrix rooms as the channel's clients (docs/matrix.md, 'The channel in loopd'), with no
//! thread, socket or homeserver: the sync thread's lines and the send thread's
//! acknowledgements are sent by hand, the turn worker's jobs are recorded, and what the
//! send thread would send is read from its queue.

use super::work::{Probe, Work};
use super::Channel;
use crate::matrix::store::{Store, Why};
use crate::matrix::{test_link, Down, Line, Up};
use crate::worker::{Event, Job, JobId};
use conversation::status::Board;
use plumbing::{Outbox, Service};
use proto::config::Config;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

#[derive(Default)]
struct Recorder {
    jobs: Vec<Job>,
}

impl Work for Recorder {
    fn submit(&mut self, job: Job) -> bool {
        self.jobs.push(job);
        true
    }

    fn idle(&self) -> bool {
        self.jobs.is_empty()
    }

    fn probe(&mut self, _id: JobId, _probe: Probe, _cfg: &Config) {}
}

struct Rig {
    ch: Channel<Recorder>,
    events: Sender<Event>,
    up: SyncSender<Up>,
    down: Receiver<Down>,
    out: Outbox,
    state: std::path::PathBuf,
}

const ROOM: &str = "!room:example.org";

impl Rig {
    fn new() -> Rig {
        Rig::on(tempfile::tempdir().unwrap().keep())
    }

    /// A channel on `state` (another's, for a restart).
    fn on(state: std::path::PathBuf) -> Rig {
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
    fn lines(&mut self, lines: &[(&str, &str)]) -> bool {
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

    fn event(&mut self, event: Event) {
        self.events.send(event).unwrap();
        self.ch.wake(&mut self.out);
    }

    /// What the loop handed the send thread since the last look (typing left out).
    fn sent(&mut self) -> Vec<crate::matrix::store::Outgoing> {
        let mut out = Vec::new();
        while let Ok(d) = self.down.try_recv() {
            if let Down::Send(o) = d {
                out.push(o);
            }
        }
        out
    }

    fn store(&self) -> Store {
        Store::load(&self.state).unwrap()
    }

    fn turn(&self, n: usize) -> (JobId, String, Option<String>) {
        match self.ch.worker.jobs.get(n) {
            Some(Job::Turn { id, text, from, .. }) => {
                (*id, text.clone(), from.as_ref().map(|f| f.event.clone()))
            }
            _ => panic!("job {n} is not a turn"),
        }
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
fn a_commands_answer_is_a_notice_and_quit_closes_nothing() {
    let mut rig = Rig::new();
    rig.lines(&[("$c1", "/session"), ("$c2", "/quit"), ("$c3", "after")]);
    let sent = rig.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
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

#[test]
fn a_command_quoting_stored_text_is_kept_for_the_terminal_in_a_room() {
    let mut rig = Rig::new();
    rig.lines(&[
        ("$q1", "/recall my pin"),
        ("$q2", "/inbox"),
        ("$q3", "/forget pin"),
    ]);
    let sent = rig.sent();
    assert_eq!(sent.len(), 3, "{sent:?}");
    for o in &sent {
        assert_eq!(o.content["msgtype"], "m.notice");
        assert!(o.content["body"]
            .as_str()
            .unwrap()
            .contains("ask at the terminal"));
    }
    assert!(rig.ch.worker.jobs.is_empty(), "nothing was asked");
}
