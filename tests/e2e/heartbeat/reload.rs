//! Heartbeat settings follow a SIGHUP reload: turning them on starts beats without a
//! restart, and turning them on without a `heartbeat.md` is refused, keeping the old
//! settings.

use super::{is_beat, start, EVERY};
use crate::loopd::{write_config, Loopd};
use crate::support::standin::text;
use crate::support::HANG;
use nix::sys::signal::Signal;

fn reload(lp: &mut Loopd, heartbeat: &str) {
    write_config(&lp.fx, &lp.llama.url, "retries = 2", "", heartbeat);
    lp.daemon.signal(Signal::SIGHUP);
    lp.daemon.notify.wait_for_new("RELOADING=1", HANG).unwrap();
    lp.daemon.notify.wait_for_new("READY=1", HANG).unwrap();
}

#[test]
fn a_reload_turns_heartbeats_on() {
    let mut lp = start("", "", |llama| llama.set_fallback(text(&["HEARTBEAT_OK"])));
    let mut client = lp.client();
    assert_eq!(client.ask("/session"), ["session main"]);
    assert!(lp.llama.chats().is_empty());
    reload(&mut lp, EVERY);
    let beat = lp.llama.wait_chats(1).remove(0);
    assert!(is_beat(&lp, &beat));
}

#[test]
fn a_reload_turning_heartbeats_on_without_heartbeat_md_is_refused() {
    let mut lp = start("", "", |llama| llama.set_fallback(text(&["HEARTBEAT_OK"])));
    let path = lp.fx.prompts.join("heartbeat.md");
    std::fs::remove_file(&path).unwrap();
    reload(&mut lp, EVERY);
    let line = lp.daemon.wait_log("reload refused");
    assert!(line.contains(&path.display().to_string()), "{line}");
}
