//! A compaction or session creation that fails on a full disk leaves a temporary head
//! and an empty log behind; loopd's next start removes them.

use super::{write_session, Loopd};
use crate::support::Daemon;
use serde_json::json;

#[test]
fn leftovers_of_a_failed_epoch_start_are_removed_at_the_next_start() {
    let mut l = Loopd::start("");
    let _ = l.daemon.child.kill();
    let _ = l.daemon.child.wait();
    let head = json!({"epoch": 0, "started": "2026-11-30T06:00:00.000Z", "system": "You are terse.",
        "tools": [], "carry": null, "carry_label": {"class": "public", "untrusted": false},
        "reason": "start", "summary_source": "model"});
    let record = json!({"type": "user", "time": "2026-11-30T06:00:00.000Z", "content": "kept", "origin": "owner"});
    write_session(&l.fx, "main", &head, &[record]);
    let dir = l.session_dir("main");
    std::fs::write(dir.join("epoch-000001.head.json.tmp"), b"{\"epoch\":").unwrap();
    std::fs::write(dir.join("epoch-000001.jsonl"), b"").unwrap();
    // A session whose first head never landed.
    let fresh = l.session_dir("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    std::fs::write(fresh.join("epoch-000000.head.json.tmp"), b"").unwrap();
    l.daemon = Daemon::start("loopd", &l.fx);
    l.daemon.wait_log("epoch-000001.head.json.tmp: removed");
    assert!(!dir.join("epoch-000001.head.json.tmp").exists());
    assert!(!dir.join("epoch-000001.jsonl").exists());
    assert!(!fresh.join("epoch-000000.head.json.tmp").exists());
    assert_eq!(
        l.records("main")[0]["content"],
        "kept",
        "the epoch itself is kept"
    );
    assert_eq!(
        l.client().ask("/session fresh"),
        ["session fresh: new; it starts with your first message"]
    );
}
