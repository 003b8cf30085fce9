//! Unasked blocks and the reply blocks of lines already read (docs/channel.md, 'Unasked
//! blocks'): a script pairs each line with the next block, so nothing unasked may come
//! before the reply to a line loopd has read.

use super::reminders::book_reminder;
use super::*;

/// Regression: a reminder falling due while a connection's line was read but not yet
/// started (here its output was full) was written at once, ahead of that line's reply.
#[test]
fn an_unasked_block_waits_for_the_reply_of_a_line_already_read() {
    let mut rig = Rig::new();
    rig.out.set_room(ME, 0);
    rig.send(ME, "hello\n");
    assert!(
        rig.jobs().is_empty(),
        "read, not started: its output is full"
    );
    // loopd has run for a while: the reminder falls due now, not late from before start.
    rig.ch.mail.started = remind::clock::now() - chrono::Duration::hours(1);
    book_reminder(
        &rig.ch.mail,
        remind::clock::now(),
        "water the plants",
        remind::By::Owner,
        proto::DataClass::Private,
    );
    rig.ch.reminders_due(&mut rig.out);
    assert_eq!(rig.written(ME), "", "held for after the line's reply");
    rig.out.set_room(ME, 1 << 20);
    rig.send(ME, "");
    // The reminder's delivery note went to the worker first.
    let turn = (0..rig.jobs().len())
        .find(|&n| {
            matches!(
                rig.jobs()[n],
                Job::Asked {
                    command: Command::Turn(_),
                    ..
                }
            )
        })
        .expect("the line's turn started");
    let (id, _) = rig.turn(turn);
    rig.done(id, "hi", true);
    let shown = rig.written(ME);
    assert!(shown.starts_with("hi\n.\n"), "{shown}");
    assert!(shown.contains("water the plants"), "{shown}");
}
