//! `heartbeat.md` is read at each beat: a missing one is a `loopd:` error line, and beats
//! go on once it is back. At start, heartbeats on and no `heartbeat.md` is refused with the
//! path named. Outside `active_hours` no beat runs.

use super::{is_beat, start, EVERY};
use crate::loopd::{write_config, N_CTX};
use crate::support::standin::{text, Standin};
use crate::support::{Daemon, Fixture};

#[test]
fn a_missing_heartbeat_md_is_a_loopd_error_line_and_beats_resume_when_it_is_back() {
    let lp = start(EVERY, "", |llama| {
        llama.set_fallback(text(&["HEARTBEAT_OK"]))
    });
    let first = lp.llama.wait_chats(1).remove(0);
    assert!(is_beat(&lp, &first));
    let path = lp.fx.prompts.join("heartbeat.md");
    std::fs::remove_file(&path).unwrap();

    let line = lp.daemon.wait_log("heartbeat: cannot read");
    assert!(line.starts_with("loopd: "), "{line}");
    assert!(line.contains(&path.display().to_string()), "{line}");

    std::fs::write(&path, "Check the mail.").unwrap();
    let back = lp.llama.wait_chat(|r| r.last() == "Check the mail.");
    assert!(back.first_byte > first.first_byte);
}

#[test]
fn heartbeats_on_without_heartbeat_md_are_refused_at_start_naming_the_path() {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "", "", EVERY);
    let path = fx.prompts.join("heartbeat.md");
    std::fs::remove_file(&path).unwrap();
    let mut daemon = Daemon::spawn(Daemon::command("loopd", &fx), &fx);
    let status = daemon.wait();
    assert!(!status.success());
    // The exit can be seen before the last stderr line is read.
    let line = daemon.wait_log(&path.display().to_string());
    assert!(line.starts_with("loopd: "), "{line}");
}

/// The local time now as minutes after midnight, from `date` (the test crate has no
/// timezone code of its own).
fn local_minutes() -> u32 {
    let out = std::process::Command::new("date")
        .arg("+%H %M")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut parts = text.split_whitespace().map(|p| p.parse::<u32>().unwrap());
    parts.next().unwrap() * 60 + parts.next().unwrap()
}

fn hhmm(minutes: u32) -> String {
    let m = minutes % (24 * 60);
    format!("{:02}:{:02}", m / 60, m % 60)
}

#[test]
fn outside_active_hours_no_heartbeat_runs() {
    // A window that opens two hours from now and shuts an hour later, wrapping past
    // midnight when it must.
    let now = local_minutes();
    let window = format!("{}-{}", hhmm(now + 120), hhmm(now + 180));
    let heartbeat = format!("{EVERY}active_hours = {window:?}\n");
    let lp = start(&heartbeat, "", |llama| {
        llama.set_fallback(text(&["Should not be asked."]))
    });
    let mut client = lp.client();
    lp.daemon.wait_log("heartbeat: outside active_hours");
    assert!(lp.llama.chats().is_empty());
    assert_eq!(client.ask("/session"), ["session main"]);
    assert!(lp.records("main").is_empty());
}
