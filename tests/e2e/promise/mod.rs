//! The promise of a bounded context with a lasting memory, end to end: what the owner
//! said reaches the model after compaction without a tool call (memory in the turn), a
//! summary that lost the conversation is replaced by the owner's own words, and an answer
//! the server cut at its token limit never wedges the session.

#[cfg(feature = "bench")]
mod bench;
#[cfg(feature = "bench")]
mod bench_pipelined;
mod cut;
mod prose;
mod recollect;
mod shown;
mod summaries;

use crate::loopd::{records_in, Loopd};
use crate::support::Daemon;
use serde_json::Value;

/// loopd with the stand-in and a real memoryd beside it.
fn with_memoryd(extra: &str) -> (Loopd, Daemon) {
    let l = Loopd::start(extra);
    let m = Daemon::start("memoryd", &l.fx);
    (l, m)
}

/// The records of `session`'s `epoch`.
fn epoch_records(l: &Loopd, session: &str, epoch: u64) -> Vec<Value> {
    l.settle();
    records_in(
        &l.session_dir(session)
            .join(format!("epoch-{epoch:06}.jsonl")),
    )
}

/// The head of `session`'s `epoch`.
fn head(l: &Loopd, session: &str, epoch: u64) -> Value {
    let path = l
        .session_dir(session)
        .join(format!("epoch-{epoch:06}.head.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
