//! Bursts of reminders (docs/reminders.md, 'Delivery keeps its word'): many due at once,
//! with loopd aborted at each write of the inbox while a client is connected, or with
//! nobody connected at all. Nothing is lost, and what may have been shown before a crash
//! comes again marked `(again)`. The book is written before loopd starts, due at a fixed
//! time the reminders' clock is moved past (`/testclock`, `BOXMAKER_TEST_CLOCK_OFFSET_S`).

use crate::loopd::{write_config, N_CTX};
use crate::support::channel::LineClient;
use crate::support::standin::Standin;
use crate::support::{Daemon, Fixture};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When every reminder of a burst is due: 2030-01-01T00:00:00Z, as Unix seconds.
const DUE_UNIX: u64 = 1_893_456_000;

/// How long a client waits for the next block before the test calls what is missing
/// lost: far above a burst's delivery, far below the suite's hang limit.
const READ_LIMIT: Duration = Duration::from_secs(15);

/// Seconds the reminders' clock must move to be past `DUE_UNIX`.
pub(super) fn past_due() -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    i64::try_from(DUE_UNIX - now).unwrap() + 60
}

/// Writes a book of `count` reminders of session main, all due at `DUE_UNIX`, texts
/// `burst 1` to `burst {count}`.
pub(super) fn write_book(fx: &Fixture, count: usize) {
    let reminders: Vec<serde_json::Value> = (1..=count)
        .map(|n| {
            serde_json::json!({"n": n, "session": "main", "due": "2030-01-01T00:00:00Z",
                "text": format!("burst {n}"), "set": "2026-12-01T00:00:00Z", "by": "owner",
                "class": "private"})
        })
        .collect();
    let book = serde_json::json!({"next": count + 1, "reminders": reminders});
    std::fs::create_dir_all(&fx.state_dir).unwrap();
    std::fs::write(fx.state_dir.join("reminders.json"), book.to_string()).unwrap();
}

/// loopd on `fx` with its reminders' clock `offset` ahead and `env` set; READY=1 seen.
pub(super) fn spawn(fx: &Fixture, offset: i64, env: &[(&str, String)]) -> Daemon {
    let mut cmd = Daemon::command("loopd", fx);
    cmd.env("BOXMAKER_TEST_CLOCK_OFFSET_S", offset.to_string());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut d = Daemon::spawn(cmd, fx);
    d.ready();
    d
}

/// A connected client's reader of whole blocks, which stops at end of stream (a block
/// cut by a crash is not whole, so not delivered) or after `READ_LIMIT` of silence.
struct Reader(BufReader<std::os::unix::net::UnixStream>);

impl Reader {
    fn of(c: &LineClient) -> Reader {
        let stream = c.stream.try_clone().unwrap();
        stream.set_read_timeout(Some(READ_LIMIT)).unwrap();
        Reader(BufReader::new(stream))
    }

    fn block(&mut self) -> Option<Vec<String>> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            match self.0.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = line.strip_suffix('\n')?;
            if line == "." {
                return Some(lines);
            }
            lines.push(line.strip_prefix('.').unwrap_or(line).to_string());
        }
    }
}

/// The reminders a block shows (by number) and whether it is marked as a repeat.
fn shown(block: &[String]) -> Option<(usize, bool)> {
    let n = block
        .iter()
        .find_map(|l| l.strip_prefix("burst ").and_then(|n| n.parse().ok()))?;
    Some((n, block.iter().any(|l| l.contains("(again)"))))
}

/// Reads blocks until every one of `1..=count` has been seen (in `seen` too) or the
/// stream ends or falls silent; returns each reminder seen here, with its repeat marks.
fn read_reminders(
    r: &mut Reader,
    count: usize,
    seen: &BTreeMap<usize, Vec<bool>>,
) -> BTreeMap<usize, Vec<bool>> {
    let mut here: BTreeMap<usize, Vec<bool>> = BTreeMap::new();
    let all = |here: &BTreeMap<usize, Vec<bool>>| {
        (1..=count).all(|n| here.contains_key(&n) || seen.contains_key(&n))
    };
    while !all(&here) {
        let Some(block) = r.block() else { break };
        if let Some((n, again)) = shown(&block) {
            here.entry(n).or_default().push(again);
        }
    }
    here
}

/// The daemon's exit status once it exits, or `None` when it is still running after
/// `within`.
fn exit_within(d: &mut Daemon, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + within;
    while std::time::Instant::now() < deadline {
        if let Some(status) = d.child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// What one run found wrong.
#[derive(Debug, Default, PartialEq, Eq)]
struct Found {
    /// The hook was to abort loopd and it did not.
    not_aborted: bool,
    lost: Vec<usize>,
    /// Shown again without `(again)`.
    unmarked: Vec<usize>,
}

/// One run: loopd aborted at its `nth` write of the inbox during a burst of `count`
/// reminders falling due with the owner connected (when the burst has that many writes:
/// `writes`), then started again and the owner connected again.
fn crash_once(llama: &Standin, count: usize, nth: usize, writes: usize) -> Found {
    let fx = Fixture::new("");
    write_config(&fx, &llama.url, "retries = 2", "", "");
    write_book(&fx, count);
    let abort = [
        ("BOXMAKER_TEST_ABORT_AT", "inbox-write".to_string()),
        ("BOXMAKER_TEST_ABORT_NTH", nth.to_string()),
    ];
    let mut d = spawn(&fx, 0, &abort);
    let mut c = LineClient::connect(&fx.loopd_sock);
    let mut r = Reader::of(&c);
    c.send("/session");
    assert_eq!(r.block().unwrap(), ["session main"]);
    let offset = past_due();
    c.send(&format!("/testclock {offset}"));
    let before = read_reminders(&mut r, count, &BTreeMap::new());
    // Aborted by the hook, or (past the burst's last write) killed here.
    let mut not_aborted = false;
    if nth <= writes {
        let aborted = exit_within(&mut d, READ_LIMIT)
            .is_some_and(|s| s.signal() == Some(nix::sys::signal::Signal::SIGABRT as i32));
        not_aborted = !aborted;
    }
    let _ = d.child.kill();
    let _ = d.child.wait();
    drop((r, c));

    let d = spawn(&fx, offset, &[]);
    let c = LineClient::connect(&fx.loopd_sock);
    let mut r = Reader::of(&c);
    let mut c = c;
    c.send("/session");
    let after = read_reminders(&mut r, count, &before);
    drop(d);
    let lost = (1..=count)
        .filter(|n| !before.contains_key(n) && !after.contains_key(n))
        .collect();
    let mut unmarked = BTreeSet::new();
    for (n, marks) in &after {
        let earlier = before.get(n).map_or(0, Vec::len);
        // Every showing after the first must say it is a repeat.
        if marks
            .iter()
            .skip(usize::from(earlier == 0))
            .any(|again| !again)
        {
            unmarked.insert(*n);
        }
        if earlier > 1 {
            unmarked.insert(*n);
        }
    }
    Found {
        not_aborted,
        lost,
        unmarked: unmarked.into_iter().collect(),
    }
}

/// Regression: 120 reminders due at once with the owner connected, loopd killed after
/// the 60th rewrite of `inbox.json`: the client had received nothing yet, the inbox
/// already said delivered, and 50 never reached the owner. Now a message is delivered
/// once its block was written whole, and one that may have been shown comes again marked.
/// 100 runs, each aborting at another of the burst's writes of the inbox (one a
/// reminder, and one a turn marking what went out delivered), and one run past the last.
#[test]
fn a_crash_at_any_write_of_a_burst_loses_no_reminder_and_marks_every_repeat() {
    const BURST: usize = 120;
    const RUNS: usize = 100;
    // One write a reminder, and one marking delivered what each turn of loopd's poll
    // loop sent: it takes 32 due reminders a turn (`MAX_DUE_PER_TURN`).
    let writes = BURST + BURST.div_ceil(32);
    let llama = Standin::start(N_CTX);
    let mut failures = Vec::new();
    for run in 0..=RUNS {
        let nth = 1 + run * writes / RUNS;
        let found = crash_once(&llama, BURST, nth, writes);
        if found != Found::default() {
            failures.push(format!("abort at write {nth}: {found:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Regression: 500 reminders falling due with nobody connected: 100 waited and 400 were
/// dropped, a warning each. All wait and all are delivered.
#[test]
fn five_hundred_reminders_due_with_nobody_connected_all_wait_and_are_delivered() {
    const MANY: usize = 500;
    let llama = Standin::start(N_CTX);
    let fx = Fixture::new("");
    write_config(&fx, &llama.url, "retries = 2", "", "");
    write_book(&fx, MANY);
    // Started past their time: due at start, before anyone can connect.
    let d = spawn(&fx, past_due(), &[]);
    d.wait_log("reminder for nobody connected; it waits in the inbox as message 500");
    let mut c = LineClient::connect(&fx.loopd_sock);
    // One reader for the whole connection: the blocks follow the reply at once.
    let mut r = Reader::of(&c);
    c.send("/status");
    let status = r.block().unwrap();
    assert!(
        status.contains(&format!(
            "inbox: {MANY} messages waiting (/inbox shows the last ones)"
        )),
        "{status:?}"
    );
    let got = read_reminders(&mut r, MANY, &BTreeMap::new());
    let missing: Vec<usize> = (1..=MANY).filter(|n| !got.contains_key(n)).collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}");
    assert!(!d.log_text().contains("dropped"), "nothing dropped");
}

/// Regression: killed at the write that released the inbox to a new connection, every
/// waiting message was already marked delivered before its bytes left, and the owner got
/// none of them, before or after the restart. They come after the restart, marked.
#[test]
fn a_crash_at_the_write_releasing_the_inbox_loses_nothing_and_marks_the_repeats() {
    const WAITING: usize = 5;
    let llama = Standin::start(N_CTX);
    let fx = Fixture::new("");
    write_config(&fx, &llama.url, "retries = 2", "", "");
    write_book(&fx, WAITING);
    let offset = past_due();
    // Due at start with nobody connected: one write of the inbox each; the next write is
    // the one that releases them to the owner's connection.
    let abort = [
        ("BOXMAKER_TEST_ABORT_AT", "inbox-write".to_string()),
        ("BOXMAKER_TEST_ABORT_NTH", (WAITING + 1).to_string()),
    ];
    let mut d = spawn(&fx, offset, &abort);
    d.wait_log(&format!("it waits in the inbox as message {WAITING}"));
    let mut c = LineClient::connect(&fx.loopd_sock);
    let mut r = Reader::of(&c);
    c.send("/session");
    let before = read_reminders(&mut r, WAITING, &BTreeMap::new());
    let aborted = exit_within(&mut d, READ_LIMIT)
        .is_some_and(|s| s.signal() == Some(nix::sys::signal::Signal::SIGABRT as i32));
    assert!(aborted, "loopd was to abort at the release");
    assert!(
        before.is_empty(),
        "nothing left before the crash: {before:?}"
    );
    drop((r, c, d));

    let _d = spawn(&fx, offset, &[]);
    let c = LineClient::connect(&fx.loopd_sock);
    let mut r = Reader::of(&c);
    let mut c = c;
    c.send("/session");
    let after = read_reminders(&mut r, WAITING, &before);
    for n in 1..=WAITING {
        assert_eq!(after.get(&n), Some(&vec![true]), "reminder {n}: {after:?}");
    }
}
