//! memoryd under the two floods: a client that writes many `Recall` frames whose
//! answers are about a MiB each and never reads, and a full house of connections that
//! each hold half a frame and trickle one byte every five seconds.

use super::{probes, table, Outcome, PROBE_TIMEOUT};
use crate::memoryd::{assistant, Epoch};
use crate::support::{Daemon, Fixture};
use proto::frame::{encode, read_frame, HEADER, MAX_FRAME};
use proto::label::DataClass;
use proto::memory::{Request, Response};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Recall frames the non-reading client writes in one go. The 2 000 took the
/// untouched daemon to 3.8 GiB; a quarter of that shows the same on a shared machine.
const RECALL_FLOOD: usize = 500;

/// Hits a flooding recall asks for, each about 90 KiB: together just over one frame, so
/// every answer is trimmed to about a MiB.
const BIG_HITS: usize = 12;

/// Connections holding half a frame: memoryd's whole `MAX_CLIENTS`.
const TRICKLERS: usize = 256;

/// Payload bytes each trickling connection sends before it starts trickling.
const TRICKLE_HEAD: usize = 512 * 1024;

/// How long the trickle flood runs: past memoryd's ten-second frame deadline with room
/// for the probes to see what follows.
const TRICKLE_FOR: Duration = Duration::from_secs(20);

/// One `Status` on a fresh connection, as loopd's `/status` asks it.
fn status_probe(sock: &Path) -> bool {
    let Ok(mut s) = UnixStream::connect(sock) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(PROBE_TIMEOUT));
    let _ = s.set_write_timeout(Some(PROBE_TIMEOUT));
    let Ok(bytes) = encode(&Request::Status) else {
        return false;
    };
    if s.write_all(&bytes).is_err() {
        return false;
    }
    matches!(read_frame::<Response>(&mut s), Ok(Response::Status(_)))
}

fn fixture_with_big_hits() -> Fixture {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    let long = format!("wombat {}", "x".repeat(90 * 1024));
    for _ in 0..BIG_HITS {
        epoch.add(&assistant(&long));
    }
    fx
}

fn idle_run(fx: &Fixture, d: &Daemon) -> Outcome {
    let (answered, failed) = probes(20, Duration::from_millis(50), || {
        status_probe(&fx.memoryd_sock)
    });
    Outcome {
        flood: "idle (baseline)".into(),
        peak_kib: d.peak_rss_kib(),
        after_kib: d.rss_kib(),
        answered,
        failed,
    }
}

fn recall_flood() -> (Outcome, Outcome) {
    let fx = fixture_with_big_hits();
    let d = Daemon::start("memoryd", &fx);
    let idle = idle_run(&fx, &d);
    let one = encode(&Request::Recall {
        query: "wombat".into(),
        max_class: DataClass::Private,
        limit: BIG_HITS as u32,
    })
    .unwrap();
    let mut flooder = UnixStream::connect(&fx.memoryd_sock).unwrap();
    flooder.write_all(&one.repeat(RECALL_FLOOD)).unwrap();
    let (answered, failed) = probes(20, Duration::from_millis(100), || {
        status_probe(&fx.memoryd_sock)
    });
    let flood = Outcome {
        flood: format!("{RECALL_FLOOD} recalls (~1 MiB answers) in one write, never read"),
        peak_kib: d.peak_rss_kib(),
        after_kib: d.rss_kib(),
        answered,
        failed,
    };
    drop(flooder);
    (idle, flood)
}

fn trickle_flood() -> Outcome {
    let fx = Fixture::new("");
    let d = Daemon::start("memoryd", &fx);
    let mut header = MAX_FRAME.to_be_bytes().to_vec();
    header.resize(HEADER + TRICKLE_HEAD, 7);
    assert_eq!(header.len(), HEADER + TRICKLE_HEAD);
    let mut held: Vec<UnixStream> = (0..TRICKLERS)
        .filter_map(|_| {
            let mut s = UnixStream::connect(&fx.memoryd_sock).ok()?;
            s.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
            s.write_all(&header).ok()?;
            Some(s)
        })
        .collect();
    let started = Instant::now();
    let trickler = std::thread::spawn(move || {
        while started.elapsed() < TRICKLE_FOR {
            for s in &mut held {
                let _ = s.write(&[7]);
            }
            std::thread::sleep(Duration::from_secs(5));
        }
        held
    });
    let count = (TRICKLE_FOR.as_millis() / 500) as usize;
    let (answered, failed) = probes(count, Duration::from_millis(500), || {
        status_probe(&fx.memoryd_sock)
    });
    let out = Outcome {
        flood: format!(
            "{TRICKLERS} half frames ({} KiB each) trickling 1 byte / 5 s for {} s",
            TRICKLE_HEAD / 1024,
            TRICKLE_FOR.as_secs()
        ),
        peak_kib: d.peak_rss_kib(),
        after_kib: d.rss_kib(),
        answered,
        failed,
    };
    drop(trickler.join());
    out
}

#[test]
fn memoryd_floods() {
    let (idle, recall) = recall_flood();
    let trickle = trickle_flood();
    table(
        "memoryd under floods (good client: `Status` on a fresh connection)",
        &idle,
        &[recall, trickle],
    );
}
