//! loopd under the floods: 10 000 lines pipelined on one connection, behind a
//! turn, by a client that reads all the while, a full house of idle connections, and a full house of
//! connections each holding a line's first byte.

use super::{probes, table, Outcome, PROBE_TIMEOUT};
use crate::loopd::Loopd;
use crate::support::standin::{text, Gate, Reply};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// Lines the pipelining client sends in one go (the count).
const PIPELINED: usize = 10_000;

/// Connections that hold a slot: loopd's whole `MAX_CLIENTS`.
const HOLDERS: usize = 64;

/// How long the holders sit before the probes start, so they look like connections that
/// have been there a while rather than ones still being set up.
const HOLD_BEFORE: Duration = Duration::from_secs(2);

/// Reads one reply block; false at end of stream, on a timeout, or on an `error:` block.
fn read_block(reader: &mut impl BufRead) -> bool {
    let mut first = true;
    let mut ok = true;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
        if line == ".\n" {
            return ok;
        }
        if first && line.starts_with("error:") {
            ok = false;
        }
        first = false;
    }
}

/// `/session` on a fresh connection: the channel's own answer, no model involved.
fn session_probe(sock: &Path) -> bool {
    let Ok(mut s) = UnixStream::connect(sock) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(PROBE_TIMEOUT));
    if s.write_all(b"/session\n").is_err() {
        return false;
    }
    let Ok(clone) = s.try_clone() else {
        return false;
    };
    read_block(&mut BufReader::new(clone))
}

fn measure(l: &Loopd, flood: String) -> Outcome {
    let (answered, failed) = probes(20, Duration::from_millis(100), || {
        session_probe(&l.fx.loopd_sock)
    });
    Outcome {
        flood,
        peak_kib: l.daemon.peak_rss_kib(),
        after_kib: l.daemon.rss_kib(),
        answered,
        failed,
    }
}

fn pipelined() -> (Outcome, Outcome) {
    let l = Loopd::start("");
    l.llama.set_fallback(text(&["ok"]));
    let idle = measure(&l, "idle (baseline)".into());
    // The first line is a turn held at the stand-in, so the rest queue behind it, as
    // lines do behind a model that is thinking.
    let gate = Gate::new();
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["ok"]))));
    let mut s = UnixStream::connect(&l.fx.loopd_sock).unwrap();
    s.set_read_timeout(Some(PROBE_TIMEOUT)).unwrap();
    let reader = s.try_clone().unwrap();
    let counting = std::thread::spawn(move || {
        let mut reader = BufReader::new(reader);
        let mut answered = 0;
        while answered < PIPELINED && read_block(&mut reader) {
            answered += 1;
        }
        answered
    });
    let writing = std::thread::spawn(move || {
        let mut lines = String::from("think about this\n");
        lines.push_str(&"/session\n".repeat(PIPELINED - 1));
        let _ = s.write_all(lines.as_bytes());
        s
    });
    l.llama.wait_chats(1);
    let mut flood = measure(&l, String::new());
    let _s = writing.join();
    gate.open();
    let answered = counting.join().unwrap_or(0);
    flood.flood = format!(
        "{PIPELINED} lines pipelined behind a turn by a client that reads ({answered} answered without error)"
    );
    (idle, flood)
}

fn holders(partial: bool) -> Outcome {
    let l = Loopd::start("");
    let held: Vec<UnixStream> = (0..HOLDERS)
        .filter_map(|_| {
            let mut s = UnixStream::connect(&l.fx.loopd_sock).ok()?;
            if partial {
                s.write_all(b"h").ok()?;
            }
            Some(s)
        })
        .collect();
    std::thread::sleep(HOLD_BEFORE);
    let what = if partial {
        "holding one byte of a line each"
    } else {
        "idle"
    };
    let out = measure(&l, format!("{} connections {what}", held.len()));
    drop(held);
    out
}

#[test]
fn loopd_floods() {
    let (idle, pipelined) = pipelined();
    let idle_holders = holders(false);
    let partial_holders = holders(true);
    table(
        "loopd under floods (good client: `/session` on a fresh connection)",
        &idle,
        &[pipelined, idle_holders, partial_holders],
    );
}
