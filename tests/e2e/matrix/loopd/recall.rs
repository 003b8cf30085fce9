//! `/recall` from the phone: a line "exactly as on the socket", answered in the room with
//! the hits memoryd holds at or below `matrix.max_class`, as loopd's notice.

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
