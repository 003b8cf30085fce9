//! Careless and hostile clients of memoryd's socket (docs/memoryd.md): one that writes
//! many requests and never reads is not answered past its queue, a trickle cannot hold a
//! half frame past the frame deadline, and a client over the connection limit gets an
//! `Error` frame before the close.

use super::*;
use crate::support::HANG;
use proto::frame::{encode, read_frame};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

fn connect(fx: &Fixture) -> UnixStream {
    let s = UnixStream::connect(&fx.memoryd_sock).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    s
}

fn error_message(s: &mut UnixStream) -> String {
    match read_frame::<Response>(s) {
        Ok(Response::Error { message }) => message,
        other => panic!("expected an Error frame, got {other:?}"),
    }
}

/// Regression: 2 000 `Recall` frames in one write, never read, took memoryd to 3.8 GiB
/// (every buffered frame was answered before the output limit was looked at) and kept
/// another client's `Status` waiting.
#[test]
fn a_client_that_writes_many_recalls_and_never_reads_is_not_answered_past_its_queue() {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    // Twelve hits of 90 KiB: every answer is trimmed to about one MiB.
    let long = format!("wombat {}", "x".repeat(90 * 1024));
    for _ in 0..12 {
        epoch.add(&assistant(&long));
    }
    let d = Daemon::start("memoryd", &fx);
    assert!(!recall(&fx, "wombat").is_empty());
    let before = d.peak_rss_kib();
    let requests = 100;
    let one = encode(&Request::Recall {
        query: "wombat".into(),
        max_class: DataClass::Private,
        limit: 12,
    })
    .unwrap();
    let mut flood = connect(&fx);
    flood.write_all(&one.repeat(requests)).unwrap();
    // Another client is served meanwhile.
    assert!(matches!(status(&fx), MemoryStatus { .. }));
    let grown_mib = (d.peak_rss_kib().saturating_sub(before)) / 1024;
    // Two frames of answers (~2 MiB) plus working memory; a hundred would be ~100 MiB.
    assert!(grown_mib < 40, "peak RSS grew by {grown_mib} MiB");
    // Nothing was lost: once it reads, every request is answered.
    for i in 0..requests {
        match read_frame::<Response>(&mut flood) {
            Ok(Response::Hits(h)) => assert!(!h.is_empty(), "answer {i}"),
            other => panic!("answer {i}: {other:?}"),
        }
    }
}

/// Regression: connections trickling one byte every few seconds kept their half frames
/// past the partial-frame timeout, which counted from the last byte.
#[test]
fn a_trickled_frame_is_closed_at_the_deadline_from_its_first_byte() {
    let fx = Fixture::new("");
    let mut cmd = Daemon::command("memoryd", &fx);
    cmd.env("BOXMAKER_MEMORYD_PARTIAL_TIMEOUT_MS", "300");
    let mut d = Daemon::spawn(cmd, &fx);
    d.ready();
    let mut s = connect(&fx);
    s.write_all(&1000u32.to_be_bytes()).unwrap();
    let mut writer = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // One byte every 20 ms, far past the 300 ms deadline, until closed.
        let deadline = Instant::now() + HANG;
        while Instant::now() < deadline {
            if writer.write_all(&[1]).is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    });
    let message = error_message(&mut s);
    assert!(
        message.contains("did not arrive whole within 0.3 s of its first byte"),
        "{message}"
    );
    assert!(trickle.join().unwrap(), "the trickling client was closed");
    d.wait_log("did not arrive whole");
    assert!(matches!(status(&fx), MemoryStatus { .. }));
}

/// Regression: with every slot held, a newcomer (loopd's `/recall`) was cut off with
/// `frame i/o: Broken pipe` and no word of why.
#[test]
fn a_client_over_the_connection_limit_gets_an_error_frame_before_the_close() {
    let fx = Fixture::new("");
    let _d = Daemon::start("memoryd", &fx);
    // 256 = memoryd::MAX_CLIENTS, each sending a byte of a frame every 100 ms so that
    // none is quiet long enough to give its slot away.
    let mut held: Vec<UnixStream> = (0..256).map(|_| connect(&fx)).collect();
    for s in &mut held {
        s.write_all(&100_000u32.to_be_bytes()).unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&stop);
    let keeping = std::thread::spawn(move || {
        while !flag.load(std::sync::atomic::Ordering::SeqCst) {
            for s in &mut held {
                let _ = s.write_all(&[1]);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    // A status on a fresh connection is refused once all 256 are accepted; before that
    // it may still be served, so ask until refused.
    let deadline = Instant::now() + HANG;
    let message = loop {
        assert!(Instant::now() < deadline, "never refused");
        let mut s = connect(&fx);
        let _ = s.write_all(&encode(&Request::Status).unwrap());
        match read_frame::<Response>(&mut s) {
            Ok(Response::Error { message }) => {
                let mut rest = Vec::new();
                let _ = s.read_to_end(&mut rest);
                assert!(rest.is_empty(), "closed after the error frame");
                break message;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("a newcomer got no word: {e}"),
        }
    };
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    keeping.join().unwrap();
    assert!(
        message.starts_with("too many clients: all 256"),
        "{message}"
    );
}
