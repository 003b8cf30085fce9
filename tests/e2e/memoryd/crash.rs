//! `kill -9` in the middle of indexing a large log, then a restart: the index must equal
//! one rebuilt from scratch, with no row lost or doubled.

use super::*;
use std::os::unix::process::ExitStatusExt;

/// Records in the large log: several chunks' worth, so the kill lands after at least
/// one commit and inside a later transaction.
const RECORDS: usize = 30_000;

const WORDS: [&str; 8] = [
    "amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor",
];

fn write_large_log(state_dir: &Path) {
    let epoch = Epoch::begin(state_dir, "big", 0, Label::PUBLIC);
    let mut text = String::new();
    for i in 0..RECORDS {
        let words = format!("record u{i} mentions {} and {}", WORDS[i % 8], WORDS[i % 5]);
        let record = if i % 2 == 0 {
            user(&words)
        } else {
            assistant(&words)
        };
        text.push_str(&record.to_line());
    }
    epoch.raw(text.as_bytes());
}

/// What can be asked of an index through its socket: its counts and the answers to a
/// fixed set of queries, unique tokens spread over the log and common words.
fn snapshot(fx: &Fixture) -> (u64, u64, Vec<Vec<Hit>>) {
    let mut answers = Vec::new();
    for i in (0..RECORDS).step_by(997).chain([RECORDS - 1]) {
        let hits = recall(fx, &format!("u{i}"));
        assert_eq!(hits.len(), 1, "u{i}: {hits:?}");
        answers.push(hits);
    }
    for w in WORDS {
        answers.push(recall(fx, w));
    }
    let s = status(fx);
    (s.logs, s.rows, answers)
}

#[test]
fn kill_9_while_indexing_then_restart_equals_a_rebuild_from_scratch() {
    let fx = Fixture::new("");
    write_large_log(&fx.state_dir);
    let mut cmd = Daemon::command("memoryd", &fx);
    cmd.env("BOXMAKER_MEMORYD_TEST_KILL_AFTER_ROWS", "5000");
    let mut doomed = Daemon::spawn(cmd, &fx);
    let status = doomed.wait();
    assert_eq!(
        status.signal(),
        Some(9),
        "{status:?}\n{}",
        doomed.log_text()
    );
    doomed.wait_log("killing myself in the middle of a transaction");

    let _d = Daemon::start("memoryd", &fx);
    let after_crash = snapshot(&fx);
    assert_eq!(after_crash.1, RECORDS as u64);

    let fresh = Fixture::new("");
    write_large_log(&fresh.state_dir);
    let _f = Daemon::start("memoryd", &fresh);
    assert_eq!(snapshot(&fresh), after_crash);
}
