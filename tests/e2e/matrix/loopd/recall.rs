//! `/recall` from the phone: a line "exactly as on the socket", answered in the room with
//! the hits memoryd holds at or below `matrix.max_class`, as loopd's notice.

use super::forget::{shows, wait_gone};
use super::{said, Boxed};
use crate::support::daemon::Daemon;
use crate::support::standin::text;

#[test]
fn recall_from_the_phone_is_answered_in_the_room_with_what_the_room_may_read() {
    let Some(mut b) = Boxed::start("recall", "") else {
        return;
    };
    let _memoryd = Daemon::start("memoryd", &b.l.fx);
    b.l.llama
        .push(text(&["Noted: the spare key is under the blue pot."]));
    b.say("the spare key is under the blue pot");
    b.wait_box("the reply", 1);
    b.say("/recall spare key");
    let got = b.wait_box("the recall's answer", 2);
    let (kind, answer) = said(&got[1]);
    assert_eq!(kind, "m.notice", "loopd's words: {answer}");
    assert!(answer.contains("memory · session"), "{answer}");
    assert!(answer.contains("blue pot"), "{answer}");
}

/// Guards `/forget` against a room's `/recall`: neither the command nor its answer is a
/// record, yet both hold the text, so a removal redacts them, even when the text was
/// said at the terminal and no room turn held it.
#[test]
fn forgetting_what_a_recall_showed_in_the_room_redacts_the_recall_and_its_answer() {
    let Some(mut b) = Boxed::start("recall-forget", "") else {
        return;
    };
    b.make_moderator();
    let _memoryd = Daemon::start("memoryd", &b.l.fx);
    b.l.llama.push(text(&["Noted."]));
    let mut c = b.l.client();
    c.ask("my locker code is OTTER5521");
    b.say("/recall OTTER5521");
    let got = b.wait_box("the recall's answer", 1);
    assert!(said(&got[0]).1.contains("OTTER5521"), "{got:#?}");
    let list = c.ask("/forget \"OTTER5521\"").join("\n");
    assert!(list.contains("OTTER5521"), "{list}");
    let answer = c.ask("/forget all").join("\n");
    drop(c);
    wait_gone(&b, "OTTER5521");
    assert!(
        shows(&b, "OTTER5521").is_empty(),
        "after /forget ({answer}) the room still shows {:#?}",
        shows(&b, "OTTER5521").iter().map(said).collect::<Vec<_>>()
    );
}
