//! Forgetting, memoryd's part: loopd rewrites a log without a record (a `note` in its
//! place), names the log in a `Forget`, and afterwards the text is nowhere in the index's
//! files (database, WAL, WAL index), recall finds nothing, and every other row is there.

use super::*;
use proto::memory::LogRef;
use std::os::unix::process::ExitStatusExt;

/// The phrase to forget: words porter leaves as they are, so the index's terms are the
/// same bytes as the text.
const PHRASE: &str = "quokkavault zephyrpin";

/// Rewrites `log` as forgetting does: each line holding `phrase` replaced by a note, a
/// new file fsynced, renamed over the log, the directory fsynced.
fn forget_in_log(log: &Path, phrase: &str) {
    let old = std::fs::read_to_string(log).unwrap();
    let mut new = String::new();
    for line in old.lines() {
        if line.contains(phrase) {
            new.push_str(&note("a record was forgotten here (27 characters)").to_line());
        } else {
            new.push_str(line);
            new.push('\n');
        }
    }
    let tmp = log.with_extension("jsonl.forget");
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(new.as_bytes()).unwrap();
    f.sync_all().unwrap();
    std::fs::rename(&tmp, log).unwrap();
    std::fs::File::open(log.parent().unwrap())
        .unwrap()
        .sync_all()
        .unwrap();
}

fn absent_from_the_index(fx: &Fixture) {
    let bytes = index_bytes(fx);
    assert!(!bytes.is_empty());
    for word in PHRASE.split(' ') {
        assert!(
            !contains(&bytes, word),
            "{word:?} is still in the index files"
        );
    }
}

/// A log holding the phrase among other records, and another session's log.
fn history(fx: &Fixture) -> Epoch {
    let epoch = Epoch::start(fx, "main");
    for i in 0..200 {
        epoch.add(&user(&format!("ordinary line {i} about the garden")));
    }
    epoch.add(&user(&format!("my pin is {PHRASE}, keep it safe")));
    epoch.add(&assistant("I will keep the garden pin safe"));
    Epoch::start(fx, "other").add(&user("another session about the garden"));
    epoch
}

fn forget(fx: &Fixture, session: &str, epoch: u64) -> Response {
    frames::ask(
        &fx.memoryd_sock,
        &Request::Forget {
            logs: vec![LogRef {
                session: session.into(),
                epoch,
            }],
        },
    )
    .unwrap()
}

#[test]
fn a_forgotten_record_is_in_no_index_file_and_every_other_row_stays() {
    let fx = Fixture::new("");
    let epoch = history(&fx);
    let d = Daemon::start("memoryd", &fx);
    assert_eq!(recall(&fx, "zephyrpin").len(), 1);
    let rows = status(&fx).rows;
    assert!(contains(&index_bytes(&fx), "zephyrpin"));
    forget_in_log(&epoch.log, PHRASE);
    let answer = forget(&fx, "main", 0);
    assert_eq!(answer, Response::Forgot { rows: 1 }, "{}", d.log_text());
    absent_from_the_index(&fx);
    assert!(recall(&fx, "zephyrpin").is_empty());
    assert!(recall(&fx, "quokkavault").is_empty());
    assert_eq!(status(&fx).rows, rows - 1);
    assert_eq!(
        recall(&fx, "ordinary line 150")
            .first()
            .map(|h| h.text.as_str()),
        Some("ordinary line 150 about the garden")
    );
    assert!(recall(&fx, "another session")
        .iter()
        .any(|h| h.session == "other"));
    assert!(!d.log_text().contains("quokkavault"), "{}", d.log_text());
}

#[test]
fn kill_9_mid_forget_then_restart_finishes_it() {
    let fx = Fixture::new("");
    let epoch = history(&fx);
    let mut d = Daemon::start("memoryd", &fx);
    assert_eq!(recall(&fx, "zephyrpin").len(), 1);
    let rows = status(&fx).rows;
    // Killed after the log was rewritten and before memoryd heard of it: the WAL and the
    // segments still hold the phrase.
    d.signal(nix::sys::signal::Signal::SIGKILL);
    assert_eq!(d.wait().signal(), Some(9));
    forget_in_log(&epoch.log, PHRASE);
    // The next run dies in the middle of reading the log again, after the drop.
    let mut cmd = Daemon::command("memoryd", &fx);
    cmd.env("BOXMAKER_MEMORYD_TEST_KILL_AFTER_ROWS", "0");
    let mut doomed = Daemon::spawn(cmd, &fx);
    assert_eq!(doomed.wait().signal(), Some(9), "{}", doomed.log_text());
    let d = Daemon::start("memoryd", &fx);
    d.wait_log("caught up");
    absent_from_the_index(&fx);
    assert!(recall(&fx, "zephyrpin").is_empty());
    assert_eq!(status(&fx).rows, rows - 1);
    // And a Forget now has nothing left to do.
    assert_eq!(forget(&fx, "main", 0), Response::Forgot { rows: 0 });
}
