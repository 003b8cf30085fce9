//! The channel's rules (docs/channel.md) with no thread, socket or HTTP: lines go in as
//! bytes, jobs are recorded instead of run, the worker's events are sent by hand, and what
//! the loop would write is read back from the `Outbox`.

use super::work::{Probe, Work};
use super::{Channel, MAX_PENDING_LINES};
use crate::worker::{Command, Event, Job, JobId};
use conversation::status::Board;
use plumbing::{Asked, ConnId, Outbox, Peer, Service};
use proto::config::Config;
use proto::SessionId;
use std::sync::mpsc::{channel, Sender};

mod gone;
mod order;
pub(in crate::channel) mod reminders;
mod unwritten;

/// Records what the channel asked for; `stopped` plays a worker thread that has died.
#[derive(Default)]
struct Recorder {
    jobs: Vec<Job>,
    probes: Vec<(JobId, Probe)>,
    stopped: bool,
}

impl Work for Recorder {
    fn submit(&mut self, job: Job) -> bool {
        if self.stopped {
            return false;
        }
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

struct Rig {
    ch: Channel<Recorder>,
    events: Sender<Event>,
    out: Outbox,
}

const ME: ConnId = ConnId(1);
const OTHER: ConnId = ConnId(2);

fn peer() -> Peer {
    Peer {
        uid: 1000,
        gid: 1000,
        pid: 1,
    }
}

/// Reminders and an inbox in a directory of their own, kept for the test's run.
fn mail() -> super::broadcast::Mail {
    let dir = tempfile::tempdir().unwrap().keep();
    let book = remind::Book::load(&dir).unwrap();
    let inbox = conversation::inbox::Shared::new(conversation::inbox::Inbox::load(&dir).unwrap());
    super::broadcast::Mail::new(remind::Shared::new(book, None), inbox, None)
}

impl Rig {
    fn with(cfg: Config) -> Rig {
        let (events, rx) = channel();
        let ch = Channel::new(
            "/nonexistent/boxmaker.toml".into(),
            std::sync::Arc::new(cfg),
            Recorder::default(),
            rx,
            Board::default(),
            mail(),
        )
        .unwrap();
        Rig {
            ch,
            events,
            out: Outbox::default(),
        }
    }

    fn new() -> Rig {
        let mut rig = Rig::with(Config::default());
        rig.ch.accept(&mut rig.out, ME, peer());
        rig
    }

    fn send(&mut self, id: ConnId, bytes: &str) -> Vec<u8> {
        let mut input = bytes.as_bytes().to_vec();
        self.ch.input(&mut self.out, id, &mut input);
        input
    }

    /// The worker (or a probe) reports: delivered as the loop's `wake` would.
    fn event(&mut self, event: Event) {
        self.events.send(event).unwrap();
        self.ch.wake(&mut self.out);
    }

    fn done(&mut self, id: JobId, reply: &str, ok: bool) {
        let reply = if ok {
            Ok(reply.to_string())
        } else {
            Err(crate::worker::Failure::Refused(reply.to_string()))
        };
        self.event(Event::Done { id, reply });
    }

    /// Everything written to `id` since the last look, as text.
    fn written(&mut self, id: ConnId) -> String {
        let mut text = String::new();
        for asked in self.out.take() {
            match asked {
                Asked::Send(to, bytes) if to == id => {
                    text.push_str(&String::from_utf8(bytes).unwrap())
                }
                Asked::Close(to) if to == id => text.push_str("<closed>"),
                _ => {}
            }
        }
        text
    }

    fn jobs(&self) -> &[Job] {
        &self.ch.worker.jobs
    }

    /// The id and text of the `n`th turn submitted.
    fn turn(&self, n: usize) -> (JobId, String) {
        match self.jobs().get(n) {
            Some(Job::Asked {
                id,
                command: Command::Turn(text),
                ..
            }) => (*id, text.clone()),
            _ => panic!("job {n} is not a turn"),
        }
    }
}

#[test]
fn a_message_becomes_one_turn_whose_streamed_reply_ends_the_block_with_a_dot() {
    let mut rig = Rig::new();
    rig.send(ME, "hello\n");
    let (id, text) = rig.turn(0);
    assert_eq!(text, "hello");
    rig.event(Event::Text {
        id,
        text: "Hi".into(),
    });
    rig.event(Event::Text {
        id,
        text: " there.".into(),
    });
    rig.done(id, "", true);
    assert_eq!(rig.written(ME), "Hi there.\n.\n");
}

#[test]
fn a_second_line_waits_until_the_first_has_its_whole_reply_block() {
    let mut rig = Rig::new();
    rig.send(ME, "one\ntwo\n");
    assert_eq!(rig.jobs().len(), 1, "the second line is not started yet");
    let (first, _) = rig.turn(0);
    rig.done(first, "1", true);
    assert_eq!(rig.jobs().len(), 2);
    let (second, text) = rig.turn(1);
    assert_eq!(text, "two");
    rig.done(second, "2", true);
    assert_eq!(rig.written(ME), "1\n.\n2\n.\n");
}

#[test]
fn lines_past_the_pending_limit_stay_unread_in_the_socket() {
    let mut rig = Rig::new();
    let many: String = (0..MAX_PENDING_LINES + 5)
        .map(|i| format!("line {i}\n"))
        .collect();
    let rest = rig.send(ME, &many);
    assert!(!rest.is_empty(), "what did not fit is left for later");
    // One line is in flight, so one more fits beside the queue; then the queue is full.
    let rest = rig.send(ME, std::str::from_utf8(&rest).unwrap());
    assert!(!rest.is_empty());
    assert!(!rig.ch.wants_input(ME));
    // Answering lines makes room again.
    let (id, _) = rig.turn(0);
    rig.done(id, "ok", true);
    assert!(rig.ch.wants_input(ME));
}

#[test]
fn a_client_that_does_not_read_gets_no_new_block_until_it_does() {
    let mut rig = Rig::new();
    rig.out.set_room(ME, 0);
    rig.send(ME, "hello\n");
    assert!(
        rig.jobs().is_empty(),
        "nothing starts while its output is full"
    );
    rig.out.set_room(ME, 1 << 20);
    rig.send(ME, "");
    assert_eq!(rig.turn(0).1, "hello");
}

#[test]
fn quit_says_bye_closes_and_drops_the_lines_behind_it() {
    let mut rig = Rig::new();
    rig.send(ME, "/quit\nnever run\n");
    assert_eq!(rig.written(ME), "bye\n.\n<closed>");
    assert!(rig.jobs().is_empty());
}

#[test]
fn empty_lines_unknown_commands_and_bad_arguments_are_errors_without_a_job() {
    let mut rig = Rig::new();
    rig.send(
        ME,
        "   \n/frobnicate\n/allow x\n/recall\n/forget\n/session ../etc\n",
    );
    let text = rig.written(ME);
    let blocks: Vec<&str> = text.split(".\n").filter(|b| !b.is_empty()).collect();
    assert_eq!(blocks.len(), 6, "{text:?}");
    for block in &blocks {
        assert!(block.starts_with("error: "), "{block:?}");
    }
    assert!(
        blocks[1].contains("unknown command /frobnicate"),
        "{text:?}"
    );
    assert!(rig.jobs().is_empty() && rig.ch.worker.probes.is_empty());
}

#[test]
fn a_stopped_worker_is_an_error_reply_and_the_next_line_is_still_answered() {
    let mut rig = Rig::new();
    rig.ch.worker.stopped = true;
    rig.send(ME, "hello\n/help\n");
    let text = rig.written(ME);
    assert!(
        text.starts_with("error: the turn worker has stopped; restart loopd\n.\n"),
        "{text:?}"
    );
    assert!(text.ends_with(".\n") && text.matches(".\n").count() >= 2);
}

#[test]
fn recall_and_status_run_as_probes_and_their_answer_ends_their_block() {
    let mut rig = Rig::new();
    rig.send(ME, "/recall the dentist\n/status\n");
    assert!(rig.jobs().is_empty(), "probes never wait behind the worker");
    let (id, probe) = rig.ch.worker.probes[0].clone();
    assert_eq!(
        probe,
        Probe::Recall {
            query: "the dentist".into(),
            max_class: proto::DataClass::Private,
        }
    );
    rig.done(id, "no memories match", true);
    let (id, probe) = rig.ch.worker.probes[1].clone();
    assert!(matches!(probe, Probe::Status { .. }), "{probe:?}");
    rig.done(id, "session: main", true);
    assert_eq!(rig.written(ME), "no memories match\n.\nsession: main\n.\n");
}

#[test]
fn after_turn_work_is_told_to_each_line_that_waits_on_the_worker() {
    let mut rig = Rig::new();
    rig.event(Event::Waiting(Some("saving the slot".into())));
    rig.send(ME, "hello\n");
    assert_eq!(rig.written(ME), "· saving the slot\n");
    rig.event(Event::Waiting(None));
    let (id, _) = rig.turn(0);
    rig.done(id, "hi", true);
    assert_eq!(rig.written(ME), "hi\n.\n");
}

#[test]
fn session_switches_only_once_the_open_succeeded() {
    let mut rig = Rig::new();
    rig.send(ME, "/session work\n");
    let id = match &rig.jobs()[0] {
        Job::Asked {
            id,
            command: Command::Open(session),
            ..
        } => {
            assert_eq!(session.as_str(), "work");
            *id
        }
        _ => panic!("not an open"),
    };
    rig.done(id, "no session work", false);
    rig.send(ME, "/session\n");
    assert!(rig.written(ME).ends_with("session main\n.\n"));
    rig.send(ME, "/session work\n");
    let id = match &rig.jobs()[1] {
        Job::Asked {
            id,
            command: Command::Open(_),
            ..
        } => *id,
        _ => panic!("not an open"),
    };
    rig.done(id, "session work", true);
    rig.send(ME, "hello\n");
    match &rig.jobs()[2] {
        Job::Asked {
            session,
            command: Command::Turn(_),
            ..
        } => assert_eq!(session, &SessionId::parse("work").unwrap()),
        _ => panic!("not a turn"),
    }
}

#[test]
fn a_reply_for_a_client_that_left_is_dropped_and_others_are_still_served() {
    let mut rig = Rig::new();
    rig.ch.accept(&mut rig.out, OTHER, peer());
    rig.send(ME, "mine\n");
    let (gone, _) = rig.turn(0);
    rig.ch.closed(ME, plumbing::Left::Partly);
    rig.done(gone, "nobody reads this", true);
    rig.send(OTHER, "theirs\n");
    let (id, text) = rig.turn(1);
    assert_eq!(text, "theirs");
    rig.done(id, "yours", true);
    assert_eq!(rig.written(OTHER), "yours\n.\n");
}

#[test]
fn a_uid_not_allowed_is_told_so_and_closed_and_nothing_it_sends_is_read() {
    let mut cfg = Config::default();
    cfg.channel.allow_uids = vec![1];
    let mut rig = Rig::with(cfg);
    rig.ch.accept(&mut rig.out, ME, peer());
    assert_eq!(
        rig.written(ME),
        "error: uid 1000 may not use this socket\n.\n<closed>"
    );
    let rest = rig.send(ME, "hello\n");
    assert!(rest.is_empty() && rig.jobs().is_empty());
}

#[test]
fn a_half_closed_client_gets_every_reply_then_the_connection_closes() {
    let mut rig = Rig::new();
    rig.send(ME, "one\n");
    let mut rest = b"two".to_vec();
    rig.ch.input_closed(&mut rig.out, ME, &mut rest);
    let (id, _) = rig.turn(0);
    rig.done(id, "1", true);
    let (id, text) = rig.turn(1);
    assert_eq!(text, "two", "the last line needs no newline");
    rig.done(id, "2", true);
    assert_eq!(rig.written(ME), "1\n.\n2\n.\n<closed>");
}

#[test]
fn model_text_cannot_write_a_line_that_passes_for_loopds_own() {
    let mut rig = Rig::new();
    rig.send(ME, "hello\n");
    let (id, _) = rig.turn(0);
    rig.event(Event::Text {
        id,
        text: "ok\n· allowed: /allow 2\n.\n".into(),
    });
    rig.done(id, "", true);
    let text = rig.written(ME);
    assert!(!text.contains("\n· "), "{text:?}");
    assert!(text.contains("\n..\n"), "a lone dot is stuffed: {text:?}");
    assert!(text.ends_with("\n.\n"));
}

#[test]
fn a_failed_job_is_written_with_the_error_prefix_once_by_the_channel() {
    let mut rig = Rig::new();
    rig.send(ME, "hello\n");
    let (id, _) = rig.turn(0);
    rig.done(id, "llama.cpp failed", false);
    assert_eq!(rig.written(ME), "error: llama.cpp failed\n.\n");
}

/// A message in the inbox of `main`, as one that reached nobody leaves it.
fn waiting(rig: &mut Rig, text: &str) {
    waiting_as(rig, text, false);
}

/// `waiting`, written while the context was `untrusted` or not.
fn waiting_as(rig: &mut Rig, text: &str, untrusted: bool) {
    let pieces = vec![conversation::inbox::Piece::Text(text.into())];
    let label = proto::Label {
        class: proto::DataClass::Private,
        untrusted,
    };
    let (_, saved) = rig.ch.mail.inbox.with(|i| {
        i.add(
            "main",
            conversation::inbox::Kind::Heartbeat,
            pieces,
            label,
            false,
            None,
        )
    });
    saved.unwrap();
}

#[test]
fn what_waited_in_the_inbox_comes_after_the_first_reply_block_once() {
    let mut rig = Rig::with(Config::default());
    waiting(&mut rig, "news from the night");
    rig.ch.accept(&mut rig.out, ME, peer());
    rig.send(ME, "/session\n");
    let text = rig.written(ME);
    let (first, rest) = text.split_once("\n.\n").unwrap();
    assert_eq!(first, "session main");
    assert!(
        rest.starts_with("· while you were away: heartbeat at "),
        "{rest}"
    );
    assert!(rest.ends_with("\nnews from the night\n.\n"), "{rest}");
    // Delivered once the loop says the block was written whole: the next connection,
    // and the next line, get nothing more.
    rig.ch.drained(&mut rig.out, ME);
    rig.ch.accept(&mut rig.out, OTHER, peer());
    rig.send(OTHER, "/session\n");
    assert_eq!(rig.written(OTHER), "session main\n.\n");
    rig.send(ME, "/session\n");
    assert_eq!(rig.written(ME), "session main\n.\n");
}

/// The next connection gets what waited even when it half-closed after its line
/// (`printf '/session\n' | socat …`): it reads until loopd closes, and the message is
/// delivered once its block was written whole.
#[test]
fn a_client_that_half_closed_gets_what_waited_after_its_first_reply_then_the_close() {
    let mut rig = Rig::with(Config::default());
    waiting(&mut rig, "news");
    rig.ch.accept(&mut rig.out, ME, peer());
    let mut rest = b"/session\n".to_vec();
    rig.ch.input_closed(&mut rig.out, ME, &mut rest);
    let text = rig.written(ME);
    assert!(
        text.starts_with("session main\n.\n· while you were away: heartbeat at "),
        "{text}"
    );
    assert!(text.ends_with("\nnews\n.\n<closed>"), "{text}");
    rig.ch.drained(&mut rig.out, ME);
    assert_eq!(rig.ch.mail.inbox.with(|i| i.waiting("main").len()), 0);
}

/// A client that half-closed and still waits for its reply is one of the session's
/// clients: a message nobody asked for that comes meanwhile goes to it too.
#[test]
fn a_half_closed_client_waiting_for_its_reply_is_a_target_of_unasked_messages() {
    let mut rig = Rig::with(Config::default());
    rig.ch.accept(&mut rig.out, ME, peer());
    let mut rest = b"a question\n".to_vec();
    rig.ch.input_closed(&mut rig.out, ME, &mut rest);
    assert_eq!(rig.jobs().len(), 1, "its turn runs");
    let session = SessionId::parse("main").unwrap();
    assert_eq!(rig.ch.targets(&session), vec![ME]);
}

/// Regression: `/quit` as a connection's first line was answered `bye`, and then what
/// waited in the inbox was sent after it, to a connection leaving. It stays for the next.
#[test]
fn quit_as_the_first_line_leaves_the_inbox_for_the_next_connection() {
    let mut rig = Rig::with(Config::default());
    waiting(&mut rig, "news");
    rig.ch.accept(&mut rig.out, ME, peer());
    rig.send(ME, "/quit\n");
    assert_eq!(rig.written(ME), "bye\n.\n<closed>");
    assert_eq!(rig.ch.mail.inbox.with(|i| i.waiting("main").len()), 1);
}

#[test]
fn a_client_of_another_session_does_not_get_mains_inbox() {
    let mut rig = Rig::with(Config::default());
    waiting(&mut rig, "news");
    rig.ch.accept(&mut rig.out, ME, peer());
    rig.send(ME, "/session other\n");
    let (id, _) = match rig.jobs().first() {
        Some(Job::Asked {
            id,
            command: Command::Open(session),
            ..
        }) => (*id, session.clone()),
        _ => panic!("no open job"),
    };
    rig.done(id, "session other: new", true);
    assert_eq!(rig.written(ME), "session other: new\n.\n");
    assert_eq!(rig.ch.mail.inbox.with(|i| i.waiting("main").len()), 1);
}

/// Regression: what waited for a session was released only after a connection's first
/// reply block, for the session it was in then; a client that switched to the session
/// later never got it, though `/status` there counted it waiting. A switch makes it a
/// connection to that session: what waits follows the switch's reply.
#[test]
fn a_client_that_switches_to_a_session_gets_what_waits_there_after_the_switch() {
    let mut rig = Rig::with(Config::default());
    rig.ch.accept(&mut rig.out, ME, peer());
    let open = |rig: &mut Rig| match rig.jobs().last() {
        Some(Job::Asked {
            id,
            command: Command::Open(_),
            ..
        }) => *id,
        _ => panic!("no open job"),
    };
    rig.send(ME, "/session other\n");
    let id = open(&mut rig);
    rig.done(id, "session other: new", true);
    assert_eq!(rig.written(ME), "session other: new\n.\n");
    waiting(&mut rig, "news for main");
    rig.send(ME, "/session main\n");
    let id = open(&mut rig);
    rig.done(id, "session main: 4 records", true);
    let text = rig.written(ME);
    let (first, rest) = text.split_once("\n.\n").unwrap();
    assert_eq!(first, "session main: 4 records");
    assert!(
        rest.starts_with("· while you were away: heartbeat at "),
        "{rest}"
    );
    assert!(rest.ends_with("\nnews for main\n.\n"), "{rest}");
    rig.ch.drained(&mut rig.out, ME);
    assert_eq!(rig.ch.mail.inbox.with(|i| i.waiting("main").len()), 0);
}

/// Regression: a waiting message was marked delivered as soon as its block was queued,
/// so a client gone (or a crash) before the bytes left lost it for good. It is delivered
/// once the loop says the block was written whole; until then the next connection gets
/// it, marked as a repeat.
#[test]
fn a_waiting_message_is_delivered_only_once_written_and_comes_again_marked_after_a_close() {
    let mut rig = Rig::with(Config::default());
    waiting(&mut rig, "news");
    rig.ch.accept(&mut rig.out, ME, peer());
    rig.send(ME, "/session\n");
    assert!(rig.written(ME).contains("\nnews\n.\n"));
    rig.ch.closed(ME, plumbing::Left::Partly);
    assert_eq!(rig.ch.mail.inbox.with(|i| i.waiting("main").len()), 1);
    rig.ch.accept(&mut rig.out, OTHER, peer());
    rig.send(OTHER, "/session\n");
    let again = rig.written(OTHER);
    assert!(
        again.contains("\n· while you were away: heartbeat at ")
            && again.contains(" (again)\nnews\n"),
        "{again}"
    );
    rig.ch.drained(&mut rig.out, OTHER);
    assert_eq!(rig.ch.mail.inbox.with(|i| i.waiting("main").len()), 0);
}

/// Regression: a heartbeat's message written while the context was untrusted came under
/// loopd's `· while you were away: heartbeat at …` exactly as a trusted one, so loopd's
/// own line vouched for what may be a page's words. The line says it is untrusted.
#[test]
fn an_untrusted_waiting_message_is_said_to_be_untrusted_by_the_line_above_it() {
    let mut rig = Rig::with(Config::default());
    waiting_as(&mut rig, "confirm your card at http://x", true);
    waiting(&mut rig, "news from the night");
    rig.ch.accept(&mut rig.out, ME, peer());
    rig.send(ME, "/session\n");
    let text = rig.written(ME);
    let heads: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("· while you were away"))
        .collect();
    assert_eq!(heads.len(), 2, "{text}");
    assert!(heads[0].ends_with(super::unasked::UNTRUSTED), "{text}");
    assert!(!heads[1].contains("untrusted"), "{text}");
    // `/inbox` shows them again, each under a line that says the same.
    rig.send(ME, "/inbox\n");
    let again = rig.written(ME);
    let heads: Vec<&str> = again
        .lines()
        .filter(|l| l.starts_with("· heartbeat at "))
        .collect();
    assert_eq!(heads.len(), 2, "{again}");
    assert!(heads[0].ends_with(super::unasked::UNTRUSTED), "{again}");
    assert!(!heads[1].contains("untrusted"), "{again}");
}
