//! What the owner asks of the worker (`Command`), in the manner of one type per request
//! with its own parse and apply: a line to answer (a turn), or a command that acts on a
//! session (`/session NAME`, `/compact`, `/allow N`, `/forget …`). The channel parses a
//! `/` word with `Command::parse`, hands the result to the worker as one `Job::Asked`,
//! and the worker runs it with `State::apply`: each one's body is here but `/forget`'s,
//! which is `worker/forget.rs`.

use super::report::{done_line, EventSink};
use super::{after, Failure, JobId, Reply, State};
use crate::engine::Engine;
use conversation::allow::AllowError;
use conversation::forget::Ask;
use conversation::open_session::Session;
use conversation::status::SessionView;
use proto::{FromMatrix, Origin, SessionId};
use std::time::Instant;

/// A request of the owner's the worker runs, its arguments well formed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// A line that is not a command: a turn answering it.
    Turn(String),
    /// `/session NAME`: open `NAME` (without creating it); the connection switches to it
    /// once it opened.
    Open(SessionId),
    /// `/compact`: start a new epoch of the session now.
    Compact,
    /// `/allow N`: fetch the URL the label policy refused for call `N`, or set the
    /// reminder it held (`conversation::allow`).
    Allow(u64),
    /// `/forget QUERY` (never empty), `/forget more`, `/forget N…` or `/forget all`
    /// (`worker/forget.rs`).
    Forget(Ask),
}

impl Command {
    /// The worker's command named `word` with its argument `arg` (trimmed); `None` when
    /// `word` names none of the worker's, or is `/session` alone (the channel answers
    /// that). A malformed argument is the reason, in words, for the error line.
    pub(crate) fn parse(word: &str, arg: &str) -> Option<Result<Command, String>> {
        Some(match word {
            "compact" => Ok(Command::Compact),
            "session" if arg.is_empty() => return None,
            "session" => SessionId::parse(arg)
                .map(Command::Open)
                .map_err(|e| e.to_string()),
            "allow" => arg
                .parse()
                .map(Command::Allow)
                .map_err(|_| format!("/allow needs the number of a refused call, got {arg:?}")),
            "forget" => match Ask::parse(arg) {
                Ask::List(query) if query.is_empty() => {
                    Err("/forget needs a query, numbers from its list, or all".into())
                }
                ask => Ok(Command::Forget(ask)),
            },
            _ => return None,
        })
    }

    /// The session the asking connection moves to once the job succeeded.
    pub(crate) fn switches_to(&self) -> Option<SessionId> {
        match self {
            Command::Open(target) => Some(target.clone()),
            _ => None,
        }
    }

    /// Whether the reply block first says, in a `· ` line, what after-turn work the job
    /// waits for (docs/turn.md, 'After the turn'): a turn, `/session NAME` and
    /// `/compact` do; `/allow N` and `/forget` have not so far.
    pub(crate) fn says_what_it_waits_for(&self) -> bool {
        matches!(self, Command::Turn(_) | Command::Open(_) | Command::Compact)
    }
}

impl State {
    /// Runs what the owner asked in `session` for job `id`; `from`: the Matrix event the
    /// line was.
    pub(super) fn apply(
        &mut self,
        id: JobId,
        session: &SessionId,
        from: Option<FromMatrix>,
        command: Command,
    ) {
        match command {
            Command::Turn(text) => self.turn(id, session, &text, from.as_ref()),
            Command::Open(target) => self.open_reply(id, target, session),
            Command::Compact => self.compact(id, session),
            Command::Allow(call) => self.allow(id, session, call),
            Command::Forget(ask) => self.forget(id, session, ask, from.as_ref()),
        }
    }

    /// A turn answering the owner's `text` in `session_id`: the reply streamed, its `.` as
    /// soon as the answer is complete, then the after-turn work and Honcho's report.
    fn turn(&mut self, id: JobId, session_id: &SessionId, text: &str, from: Option<&FromMatrix>) {
        let started = Instant::now();
        let State {
            engine,
            board,
            notify,
            sessions,
            honcho,
            ..
        } = self;
        board.turn_started(session_id.as_str());
        let session = match sessions.get_or_create(engine.cfg(), session_id) {
            Ok(s) => s,
            Err(e) => {
                plumbing::error!("session {session_id}: {e}");
                board.set(session_id.as_str(), SessionView::Broken(e.to_string()));
                board.turn_ended();
                notify.done(
                    id,
                    Err(Failure::Session {
                        session: session_id.clone(),
                        error: e,
                    }),
                );
                return;
            }
        };
        let mut sink = EventSink { id, notify };
        let outcome = engine.turn(session, text, Origin::Owner, from, &mut sink);
        board.set(
            session_id.as_str(),
            SessionView::of(session, engine.cfg().channel.owner_class),
        );
        let ok = outcome.is_ok();
        let reply = done_line(session_id, outcome, started.elapsed().as_secs_f64());
        // The answer is complete: the `.` goes out now, before the after-turn work.
        notify.done(id, reply);
        after(engine, session, ok, notify, board);
        board.set(
            session_id.as_str(),
            SessionView::of(session, engine.cfg().channel.owner_class),
        );
        board.turn_ended();
        // After the reply is on its way: reporting never holds up the owner's answer.
        if let Some(honcho) = honcho {
            honcho.poke(session_id.as_str());
        }
    }

    /// `/session NAME`: opens `session` (never creating it) and says what it holds.
    fn open_reply(&mut self, id: JobId, session: SessionId, still: &SessionId) {
        let reply = match self.open(&session) {
            SessionView::Open { epoch, records, .. } => Ok(format!(
                "session {session}: epoch {epoch}, {records} records"
            )),
            SessionView::New => Ok(format!(
                "session {session}: new; it starts with your first message"
            )),
            SessionView::Broken(why) => Err(Failure::NotSwitched {
                target: session,
                why,
                still: still.clone(),
            }),
        };
        self.notify.done(id, reply);
    }

    /// `/compact` for `session_id`, which must exist: a new session has nothing to carry.
    fn compact(&mut self, id: JobId, session_id: &SessionId) {
        let why = match self.open(session_id) {
            SessionView::Open { .. } => None,
            SessionView::New => Some("it is new; there is nothing to compact".to_string()),
            SessionView::Broken(why) => Some(why),
        };
        if let Some(why) = why {
            let session = session_id.clone();
            return self
                .notify
                .done(id, Err(Failure::Unusable { session, why }));
        }
        self.on_open_session(id, session_id, |engine, session, _| {
            match engine.compact(session) {
                Ok(done) => Ok(format!("compacted: {done}")),
                Err(e) => Err(Failure::Compaction(e)),
            }
        });
    }

    /// `/allow N` in `session_id`, which must exist: a new session refused nothing.
    fn allow(&mut self, id: JobId, session_id: &SessionId, call: u64) {
        if !matches!(self.open(session_id), SessionView::Open { .. }) {
            let why = format!("session {session_id} has refused nothing");
            return self.notify.done(id, Err(Failure::Allow { call, why }));
        }
        self.on_open_session(id, session_id, |engine, session, sink| {
            // It calls no model, so the slot is untouched: no engine step around it.
            match conversation::allow::run(&engine.ctx(), session, call, sink) {
                Ok(reply) => Ok(reply),
                Err(AllowError::Denied(why)) => Err(Failure::Allow { call, why }),
                Err(AllowError::Reminders(e)) => Err(Failure::Allow {
                    call,
                    why: e.to_string(),
                }),
                Err(AllowError::Session(error)) => Err(Failure::Session {
                    session: session_id.clone(),
                    error,
                }),
            }
        });
    }

    /// Runs `job` on `session_id` (known to exist), with the job's activity sink, then
    /// updates the status board and sends `id`'s reply: the one shape of every job that
    /// changes a session besides a turn.
    fn on_open_session(
        &mut self,
        id: JobId,
        session_id: &SessionId,
        job: impl FnOnce(&mut Engine, &mut Session, &mut EventSink<'_>) -> Reply,
    ) {
        let State {
            engine,
            board,
            notify,
            sessions,
            ..
        } = self;
        let mut sink = EventSink { id, notify };
        let reply = match sessions.get_or_create(engine.cfg(), session_id) {
            Ok(session) => {
                let reply = job(engine, session, &mut sink);
                board.set(
                    session_id.as_str(),
                    SessionView::of(session, engine.cfg().channel.owner_class),
                );
                reply
            }
            Err(error) => Err(Failure::Session {
                session: session_id.clone(),
                error,
            }),
        };
        notify.done(id, reply);
    }
}
