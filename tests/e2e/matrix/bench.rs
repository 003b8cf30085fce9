//! What the library adds to a message's way through a homeserver: a message sent by the
//! phone and seen by the library's long-poll sync (the way in), a reply sent through the
//! library (the way out), against a plain HTTP round trip to the same Synapse; and
//! messages a second through one room. Compiled only with the crate's `bench` feature
//! (timings on a shared machine assert nothing): `scripts/bench matrix`.

use super::{owners_room, Driver};
use crate::support::synapse::{matrix_seg, Synapse};
use ::matrix::decide::Action;
use ::matrix::outgoing::{plan, Style};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Round trips timed per row.
const ROUNDS: usize = 200;

/// Messages sent through one room for the throughput rows.
const MESSAGES: usize = 300;

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn row(name: &str, mut times: Vec<Duration>) -> String {
    times.sort();
    format!(
        "| {name} | {} | {:.2} | {:.2} |",
        times.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    )
}

#[test]
fn bench_matrix_round_trips_and_throughput() {
    let Some(syn) = Synapse::start() else { return };
    let cast = syn.cast("bench");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(&syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let room = owners_room(&syn, &cast, &mut d);

    // Plain HTTP: the homeserver's cheapest answer, and a send without the library.
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let versions = format!("{}/_matrix/client/versions", syn.url);
    let plain: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            agent.get(&versions).call().unwrap().into_string().unwrap();
            t.elapsed()
        })
        .collect();
    let plain_send: Vec<Duration> = (0..ROUNDS)
        .map(|i| {
            let url = format!(
                "{}/_matrix/client/v3/rooms/{}/send/m.room.message/plain{i}",
                syn.url,
                matrix_seg(&room)
            );
            let body = serde_json::json!({"msgtype": "m.notice", "body": format!("plain {i}")});
            let t = Instant::now();
            agent
                .put(&url)
                .set("Authorization", &format!("Bearer {}", cast.boxmaker.token))
                .set("Content-Type", "application/json")
                .send_string(&body.to_string())
                .unwrap()
                .into_string()
                .unwrap();
            t.elapsed()
        })
        .collect();
    // Out: a reply planned and sent through the library, acknowledged.
    let out: Vec<Duration> = (0..ROUNDS)
        .map(|i| {
            let t = Instant::now();
            let p = &plan("bench", i as u64, Style::Notice, "", &format!("reply {i}"))[0];
            d.client.send(&room, &p.txn, &p.content).unwrap();
            t.elapsed()
        })
        .collect();
    // Catch the driver up on everything above before timing the way in.
    d.round();

    // In: the phone sends; the library's long-poll sync, already waiting, takes the line.
    let (tx, rx) = mpsc::channel::<(String, Instant)>();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let mut driver = d;
    let reader = std::thread::spawn(move || {
        while stop_rx.try_recv().is_err() {
            for a in driver.round().actions {
                if let Action::Line { body, .. } = a {
                    tx.send((body, Instant::now())).unwrap();
                }
            }
        }
        driver
    });
    let mut inward = Vec::new();
    for i in 0..ROUNDS {
        let body = format!("in {i}");
        let t = Instant::now();
        syn.say(&cast.phone, &room, &body);
        let (seen, at) = rx.recv_timeout(super::WITHIN).unwrap();
        assert_eq!(seen, body);
        inward.push(at - t);
    }

    // Through one room: the phone sends as fast as Synapse takes them; the library takes
    // them all.
    let t = Instant::now();
    for i in 0..MESSAGES {
        syn.say(&cast.phone, &room, &format!("burst {i}"));
    }
    let sent_in = t.elapsed();
    for _ in 0..MESSAGES {
        rx.recv_timeout(super::WITHIN).unwrap();
    }
    let taken_in = t.elapsed();
    stop_tx.send(()).unwrap();
    syn.say(&cast.phone, &room, "stop");
    let d = reader.join().unwrap();
    // Out through one room: the library's sends back to back.
    let t = Instant::now();
    for i in 0..MESSAGES {
        let p = &plan("burst", i as u64, Style::Text, "", &format!("out {i}"))[0];
        d.client.send(&room, &p.txn, &p.content).unwrap();
    }
    let sent_out = t.elapsed();

    println!("\n### a message's way through Synapse (loopback, SQLite, one room)\n");
    println!("| path | rounds | p50 ms | p99 ms |");
    println!("|---|---|---|---|");
    println!("{}", row("plain HTTP: GET /_matrix/client/versions", plain));
    println!(
        "{}",
        row("plain HTTP: PUT send (m.notice), acknowledged", plain_send)
    );
    println!(
        "{}",
        row("library out: reply planned and sent, acknowledged", out)
    );
    println!(
        "{}",
        row(
            "library in: phone's send until the library's waiting sync takes the line",
            inward
        )
    );
    let rate = |n: usize, d: Duration| n as f64 / d.as_secs_f64();
    println!("\n### messages a second through one room\n");
    println!("| what | messages | seconds | messages/s |");
    println!("|---|---|---|---|");
    println!(
        "| phone sends back to back (plain HTTP) | {MESSAGES} | {:.2} | {:.0} |",
        sent_in.as_secs_f64(),
        rate(MESSAGES, sent_in)
    );
    println!(
        "| ... all taken by the library's sync | {MESSAGES} | {:.2} | {:.0} |",
        taken_in.as_secs_f64(),
        rate(MESSAGES, taken_in)
    );
    println!(
        "| library sends back to back | {MESSAGES} | {:.2} | {:.0} |",
        sent_out.as_secs_f64(),
        rate(MESSAGES, sent_out)
    );
}
