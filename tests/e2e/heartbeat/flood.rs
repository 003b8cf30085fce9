//! A flood of heartbeat messages, as a page whose text steers the model ("say X on every
//! beat") would make: they are folded on their own, so the owner's reminder still waits,
//! is delivered, and `/inbox` shows it (docs/reminders.md, 'Delivery keeps its word').

use super::{start_with, EVERY};
use crate::support::standin::text;

/// Heartbeat messages the flood makes after the reminder fell due: past the 100 places
/// the inbox had for everything at once.
const FLOOD: usize = 150;

/// The heartbeat period the flood runs at (the test hook), so it takes seconds.
const BEAT_MS: &str = "10";

/// How many of loopd's log lines so far hold `needle`.
fn count(lp: &crate::loopd::Loopd, needle: &str) -> usize {
    lp.daemon
        .log_text()
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

/// Regression: a page that steered the heartbeat filled the inbox's 100 places, and the
/// owner's own `/remind in 1s pick up the kids` was dropped as "the oldest": it never
/// showed, and `/inbox` did not have it.
#[test]
fn a_flood_of_heartbeats_never_pushes_the_owners_reminder_out() {
    let lp = start_with(
        EVERY,
        "",
        |llama| llama.set_fallback(text(&["X marks the spot."])),
        |cmd| {
            cmd.env("BOXMAKER_TEST_HEARTBEAT_MS", BEAT_MS);
        },
    );
    let mut owner = lp.client();
    let set = owner.ask("/remind in 1s pick up the kids");
    assert!(set[0].starts_with("reminder 1 set for "), "{set:?}");
    drop(owner);
    lp.daemon
        .wait_log("reminder for nobody connected; it waits in the inbox");
    let base = count(&lp, "heartbeat for nobody connected");
    let deadline = std::time::Instant::now() + crate::support::HANG;
    while count(&lp, "heartbeat for nobody connected") < base + FLOOD {
        assert!(
            std::time::Instant::now() < deadline,
            "the flood did not come: {} beats",
            count(&lp, "heartbeat for nobody connected") - base
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The page's orders stop; the last beat in flight ends before the owner comes.
    lp.llama.set_fallback(text(&["HEARTBEAT_OK"]));
    lp.daemon.wait_log("heartbeat: nothing to report");

    let mut owner = lp.client();
    assert_eq!(owner.ask("/session"), ["session main"]);
    let mut blocks = Vec::new();
    while !blocks
        .iter()
        .any(|b: &Vec<String>| b.iter().any(|l| l == "pick up the kids"))
    {
        assert!(blocks.len() < 20, "the reminder never came: {blocks:?}");
        blocks.push(owner.block());
    }
    assert!(
        blocks[0][0].starts_with("· ")
            && blocks[0][0].contains(" older heartbeat messages were folded away"),
        "the folded ones are counted first: {blocks:?}"
    );
    // The newest heartbeat messages that waited come after it; then `/inbox`'s reply.
    owner.send("/inbox");
    let inbox = loop {
        let block = owner.block();
        if !block[0].starts_with("· while you were away: ") {
            break block;
        }
    };
    assert!(inbox.iter().any(|l| l == "pick up the kids"), "{inbox:?}");
}
