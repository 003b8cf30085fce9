//! Why a job failed (`Failure`): the error from below kept as it is until the channel
//! renders it after `error: ` (`channel::reply::Part::Error`, the only writer of that
//! prefix; docs/channel.md, "Errors"). Refusals loopd itself decides (an `/allow` or a
//! `/forget` that cannot be done) are words composed where the rule is, and travel as
//! such.

use crate::engine::EngineError;
use conversation::compact::CompactError;
use conversation::forget::ForgetError;
use conversation::memory::MemoryError;
use conversation::open_session::SessionError;
use proto::SessionId;
use std::fmt;

#[derive(Debug)]
pub(crate) enum Failure {
    /// The session could not be opened, created or written.
    Session {
        session: SessionId,
        error: SessionError,
    },
    /// The session is not one the job can use: it failed to open earlier (its error's
    /// words, as the status board keeps them), or it is new and has nothing to act on.
    Unusable { session: SessionId, why: String },
    /// `/session NAME` could not open NAME: the connection stays where it was, and is
    /// told so, or its next line would go somewhere it did not expect.
    NotSwitched {
        target: SessionId,
        why: String,
        still: SessionId,
    },
    /// A turn failed, or ended because the session is full.
    Turn(EngineError),
    /// `/compact` ran and failed.
    Compaction(CompactError),
    /// `/forget` could not read the session's logs, or stopped part way.
    Forget {
        session: SessionId,
        error: ForgetError,
        part_way: bool,
    },
    /// `/allow N` refused, in its rule's words.
    Allow { call: u64, why: String },
    /// A request loopd refused, in its rule's words (`/forget` with nothing listed, say).
    Refused(String),
    /// memoryd could not answer `/recall`.
    Memory(MemoryError),
    /// A thread for a probe could not be started.
    NoThread(std::io::Error),
    /// A job panicked; the log has the rest.
    Internal,
    /// The worker thread has stopped taking jobs.
    WorkerStopped,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Session { session, error } => write!(f, "session {session}: {error}"),
            Failure::Unusable { session, why } => write!(f, "session {session}: {why}"),
            Failure::NotSwitched { target, why, still } => write!(
                f,
                "session {target}: {why}; this connection stays in session {still}"
            ),
            Failure::Turn(e) => write!(f, "{e}"),
            Failure::Compaction(e) => write!(f, "compaction failed: {e}"),
            Failure::Forget {
                session,
                error,
                part_way: false,
            } => write!(f, "session {session}: {error}"),
            Failure::Forget {
                error,
                part_way: true,
                ..
            } => write!(
                f,
                "forgetting stopped part way: {error}; loopd finishes it at its next start"
            ),
            Failure::Allow { call, why } => write!(f, "/allow {call}: {why}"),
            Failure::Refused(why) => f.write_str(why),
            Failure::Memory(e) => write!(f, "memory unavailable: {e}"),
            Failure::NoThread(e) => write!(f, "cannot start a thread: {e}"),
            Failure::Internal => f.write_str("internal error in loopd (see its log)"),
            Failure::WorkerStopped => f.write_str("the turn worker has stopped; restart loopd"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_in_the_words_the_owner_has_always_seen() {
        let main = SessionId::parse("main").unwrap();
        let cases = [
            (Failure::Internal, "internal error in loopd (see its log)"),
            (
                Failure::WorkerStopped,
                "the turn worker has stopped; restart loopd",
            ),
            (
                Failure::Allow {
                    call: 7,
                    why: "session main has refused nothing".into(),
                },
                "/allow 7: session main has refused nothing",
            ),
            (
                Failure::Unusable {
                    session: main,
                    why: "it is new; there is nothing to compact".into(),
                },
                "session main: it is new; there is nothing to compact",
            ),
            (
                Failure::Refused("the list is out of date; /forget QUERY again".into()),
                "the list is out of date; /forget QUERY again",
            ),
        ];
        for (failure, words) in cases {
            assert_eq!(failure.to_string(), words);
        }
    }
}
