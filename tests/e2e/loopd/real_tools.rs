//! Against the real llama.cpp server making real tool calls (SmolLM2 behind a
//! Hermes-style template at temperature 0, with worked examples in `system.md`:
//! `support/tool_llama.rs`). Here the bytes loopd's stream reader parses are
//! llama.cpp's own, not the stand-in's. The model is tiny: each test asks for what the
//! examples show ("Read PATH", "Fetch URL") and checks what loopd did with the call
//! llama.cpp streamed, not how well the model writes.

use super::{records_in, write_config};
use crate::support::real_llama::{RealLlama, CTX_PER_SLOT};
use crate::support::tool_llama::{one_at_a_time, tool_llama, tool_llama_cut_at, tool_system};
use crate::support::{Daemon, Fixture, LineClient};
use proto::frame::{read_frame, write_frame};
use proto::memory::{Hit, MemoryStatus, Request, Response};
use proto::{DataClass, Label};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

/// How long a reply may take before the test fails as hung. The real model on a
/// shared 2-core machine, reading a system prompt with three tool schemas, can take
/// minutes when the machine is busy; this guards against hangs, it measures nothing.
const REPLY_WITHIN: Duration = Duration::from_secs(1200);

/// The folder the tier's files are read from, emptied for each test (which holds
/// `one_at_a_time`). Its path is made of words and this process's id only: the tiny
/// model copies a path exactly when it looks like its examples', and a temporary
/// directory's random letters (`/tmp/boxmaker-e2eHycC1F/files/one.txt`) were once cut
/// short to the directory.
fn tier_files() -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("boxmaker-tool-tier-{}", std::process::id()))
        .join("files");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A loopd on the tool server with `[tools]` set up for the test's files and pages.
struct Tier {
    fx: Fixture,
    daemon: Daemon,
    files: PathBuf,
    /// Dropped last: the server is this test's until its loopd has stopped.
    _turn: std::sync::MutexGuard<'static, ()>,
}

fn config_for(fx: &Fixture, url: &str, files: &std::path::Path, extra: &str) {
    let tables = format!(
        "[tools.read_file]\nroots = [{files:?}]\n\n[tools.http_fetch]\nallow_private = true\n\n{extra}"
    );
    write_config(fx, url, "retries = 1", "", &tables);
    // The real server's slots hold CTX_PER_SLOT; a whole answer of the real model can
    // take minutes here, so llama.timeout_s is far above that.
    let config = std::fs::read_to_string(&fx.config)
        .unwrap()
        .replace(
            &format!("n_ctx = {}", super::N_CTX),
            &format!("n_ctx = {CTX_PER_SLOT}"),
        )
        .replace("timeout_s = 60", "timeout_s = 1200");
    std::fs::write(&fx.config, config).unwrap();
}

impl Tier {
    fn start(server: &RealLlama, extra: &str) -> Tier {
        let turn = one_at_a_time(server);
        let fx = Fixture::new("");
        std::fs::write(fx.prompts.join("system.md"), tool_system()).unwrap();
        let files = tier_files();
        config_for(&fx, &server.url, &files, extra);
        let daemon = Daemon::start("loopd", &fx);
        Tier {
            fx,
            daemon,
            files,
            _turn: turn,
        }
    }

    fn client(&self) -> LineClient {
        let c = LineClient::connect(&self.fx.loopd_sock);
        c.stream.set_read_timeout(Some(REPLY_WITHIN)).unwrap();
        c
    }

    fn records(&self, epoch: u64) -> Vec<Value> {
        records_in(
            &self
                .fx
                .state_dir
                .join(format!("sessions/main/epoch-{epoch:06}.jsonl")),
        )
    }

    /// A file under the read_file root.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.files.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

/// The tool calls of every `assistant` record, as `(name, arguments as JSON)`.
fn calls(records: &[Value]) -> Vec<(String, Value)> {
    records
        .iter()
        .filter(|r| r["type"] == "assistant")
        .flat_map(|r| r["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            let args = c["arguments"].as_str().unwrap_or("");
            (
                c["name"].as_str().unwrap_or("").to_string(),
                serde_json::from_str(args).unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn results(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "tool_result")
        .map(|r| r["content"].as_str().unwrap_or("").to_string())
        .collect()
}

fn assert_no_error(reply: &[String], d: &Daemon) {
    assert!(
        !reply.iter().any(|l| l.starts_with("error:")),
        "{reply:?}\n{}",
        d.log_text()
    );
}

#[test]
fn the_real_model_reads_a_file_through_a_streamed_tool_call() {
    let Some(server) = tool_llama() else { return };
    let t = Tier::start(server, "");
    let path = t.file("boat.txt", "The boat is blue.");
    let reply = t.client().ask(&format!("Read {path}"));
    assert_no_error(&reply, &t.daemon);
    let recs = t.records(0);
    let calls = calls(&recs);
    assert_eq!(calls.len(), 1, "{recs:?}");
    assert_eq!(calls[0].0, "read_file", "{recs:?}");
    assert_eq!(calls[0].1["path"], path.as_str(), "{recs:?}");
    let results = results(&recs);
    assert_eq!(results.len(), 1, "{recs:?}");
    assert!(results[0].contains("The boat is blue."), "{results:?}");
    // The answer after the result was read back by llama.cpp: the turn ends with a
    // second model call whose usage is logged.
    let kinds: Vec<&str> = recs.iter().filter_map(|r| r["type"].as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "usage").count(),
        2,
        "{kinds:?}"
    );
}

/// A one-page web server on loopback; the pages it served go to the channel.
fn page_server(body: &'static str) -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/kettle.html", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tx.send(head.lines().next().unwrap_or("").to_string());
        }
    });
    (url, rx)
}

#[test]
fn the_real_model_fetches_a_loopback_page_through_a_tool_call() {
    let Some(server) = tool_llama() else { return };
    let t = Tier::start(server, "");
    let (url, served) = page_server("<html><body><p>The kettle is green.</p></body></html>");
    let reply = t.client().ask(&format!("Fetch {url}"));
    assert_no_error(&reply, &t.daemon);
    let recs = t.records(0);
    let calls = calls(&recs);
    assert_eq!(calls.len(), 1, "{recs:?}");
    assert_eq!(calls[0].0, "http_fetch", "{recs:?}");
    assert_eq!(calls[0].1["url"], url.as_str(), "{recs:?}");
    assert_eq!(
        served.recv_timeout(Duration::from_secs(5)).unwrap(),
        "GET /kettle.html HTTP/1.1"
    );
    assert!(
        results(&recs)[0].contains("The kettle is green."),
        "{recs:?}"
    );
}

#[test]
fn two_calls_in_one_real_answer_both_run() {
    let Some(server) = tool_llama() else { return };
    let t = Tier::start(server, "");
    let one = t.file("one.txt", "First file.");
    let two = t.file("two.txt", "Second file.");
    let reply = t.client().ask(&format!("Read {one} and {two}"));
    assert_no_error(&reply, &t.daemon);
    let recs = t.records(0);
    let first = recs
        .iter()
        .find(|r| r["type"] == "assistant")
        .expect("an assistant record");
    let names: Vec<&str> = first["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file", "read_file"], "{recs:?}");
    let ids: Vec<&str> = first["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_ne!(ids[0], ids[1], "each call keeps its own id");
    let results = results(&recs);
    assert_eq!(results.len(), 2, "{recs:?}");
    assert!(results[0].contains("First file."), "{results:?}");
    assert!(results[1].contains("Second file."), "{results:?}");
}

/// A memoryd stand-in on `fx`'s socket answering every recall with one hit.
fn memoryd_with_one_hit(fx: &Fixture) -> std::sync::mpsc::Receiver<String> {
    let listener = std::os::unix::net::UnixListener::bind(&fx.memoryd_sock).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Ok(request) = read_frame::<Request>(&mut stream) else {
                continue;
            };
            let response = match &request {
                Request::Recall { query, .. } => {
                    let _ = tx.send(query.clone());
                    Response::Hits(vec![Hit {
                        session: "main".into(),
                        epoch: 0,
                        time: "2026-11-30T06:00:00.000Z".into(),
                        kind: "session".into(),
                        role: "owner".into(),
                        label: Label::new(DataClass::Private, false),
                        text: "the dentist is on Tuesday at nine".into(),
                        // Below memory in the turn's floor: the model must ask for it.
                        relevance: 0,
                    }])
                }
                _ => Response::Status(MemoryStatus::default()),
            };
            let _ = write_frame(&mut stream, &response);
        }
    });
    rx
}

#[test]
fn the_real_model_recalls_through_a_tool_call() {
    let Some(server) = tool_llama() else { return };
    let t = Tier::start(server, "");
    let asked = memoryd_with_one_hit(&t.fx);
    // The worked example is "Recall what I said about the plumber": the tiny model
    // makes the call for an ask of that shape (docs/llama-api.md, "Tools").
    let reply = t.client().ask("Recall what I said about the dentist");
    assert_no_error(&reply, &t.daemon);
    let recs = t.records(0);
    let calls = calls(&recs);
    assert!(
        calls
            .iter()
            .any(|(name, args)| name == "recall" && args["query"].is_string()),
        "{recs:?}"
    );
    assert!(asked.try_iter().count() >= 1);
    assert!(
        results(&recs)
            .iter()
            .any(|r| r.contains("the dentist is on Tuesday at nine")),
        "{recs:?}"
    );
}

#[test]
fn compact_after_real_tool_calls_starts_the_next_epoch() {
    let Some(server) = tool_llama() else { return };
    let t = Tier::start(server, "");
    let path = t.file("plan.txt", "Plant the beans in May.");
    let mut c = t.client();
    assert_no_error(&c.ask(&format!("Read {path}")), &t.daemon);
    assert!(!results(&t.records(0)).is_empty(), "{:?}", t.records(0));
    let reply = c.ask("/compact");
    assert_no_error(&reply, &t.daemon);
    assert!(
        t.fx.state_dir
            .join("sessions/main/epoch-000001.head.json")
            .exists(),
        "{reply:?}\n{}",
        t.daemon.log_text()
    );
    assert_no_error(&c.ask("Say hello."), &t.daemon);
}

#[test]
fn a_restart_of_loopd_between_a_real_call_and_its_result_leaves_a_session_that_answers() {
    let Some(server) = tool_llama() else { return };
    let _turn = one_at_a_time(server);
    let fx = Fixture::new("");
    std::fs::write(fx.prompts.join("system.md"), tool_system()).unwrap();
    let files = tier_files();
    let path = files.join("cup.txt");
    std::fs::write(&path, "The cup is red.").unwrap();
    config_for(&fx, &server.url, &files, "");
    // loopd dies right after the assistant record with the call is on disk: the call
    // has no result and no usage.
    let mut cmd = Daemon::command("loopd", &fx);
    cmd.env("BOXMAKER_TEST_ABORT_AT", "after-assistant-append");
    let mut d = Daemon::spawn(cmd, &fx);
    d.ready();
    let mut c = LineClient::connect(&fx.loopd_sock);
    c.stream.set_read_timeout(Some(REPLY_WITHIN)).unwrap();
    c.send(&format!("Read {}", path.display()));
    // The crash point comes after the real model's call, which can take minutes here.
    assert!(!d.wait_within(REPLY_WITHIN).success());
    drop(d);
    let recs = records_in(&fx.state_dir.join("sessions/main/epoch-000000.jsonl"));
    assert_eq!(calls(&recs).len(), 1, "{recs:?}");
    assert!(results(&recs).is_empty(), "{recs:?}");

    let d = Daemon::start("loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    c.stream.set_read_timeout(Some(REPLY_WITHIN)).unwrap();
    let reply = c.ask("Say hello.");
    assert_no_error(&reply, &d);
    assert!(!reply.is_empty());
}

#[test]
fn a_real_call_cut_mid_arguments_is_followed_by_a_line_that_is_answered() {
    // n_predict 24 stops the answer inside the call's arguments (`{"path": "/tmp/…`): the
    // worked examples take the model through the tool-call tag and the name in about 14 tokens.
    let Some(server) = tool_llama_cut_at(24) else {
        return;
    };
    let fx = Fixture::new("");
    std::fs::write(fx.prompts.join("system.md"), tool_system()).unwrap();
    let files = fx.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("long-name-of-a-file.txt"), "unread").unwrap();
    config_for(&fx, &server.url, &files, "");
    let d = Daemon::start("loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    c.stream.set_read_timeout(Some(REPLY_WITHIN)).unwrap();
    let first = c.ask(&format!(
        "Read {}",
        files.join("long-name-of-a-file.txt").display()
    ));
    let second = c.ask("Say hi.");
    let recs = records_in(&fx.state_dir.join("sessions/main/epoch-000000.jsonl"));
    eprintln!("first reply: {first:?}\nsecond reply: {second:?}\nrecords: {recs:#?}");
    let cut: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] == "assistant" && r["cut"] == true)
        .collect();
    assert!(!cut.is_empty(), "{recs:?}");
    assert!(results(&recs).is_empty(), "a cut call never runs: {recs:?}");
    assert!(
        first
            .iter()
            .any(|l| l.starts_with("· ") && l.contains("cut")),
        "{first:?}"
    );
    assert_no_error(&second, &d);
}
