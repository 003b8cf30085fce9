//! An unasked block queued for a connection that closed before a byte of it was written
//! reached nobody: the next connection gets it as new, not marked `(again)`.

use super::*;

/// Regression: a waiting message released to a client whose socket had closed (its
/// peer gone before loopd had read the end) was marked tried when its block was queued;
/// the write failed, and the next connection was told it may have seen it already.
#[test]
fn a_block_not_a_byte_of_which_was_written_comes_to_the_next_connection_as_new() {
    let mut rig = Rig::with(Config::default());
    waiting(&mut rig, "news");
    rig.ch.accept(&mut rig.out, ME, peer());
    rig.send(ME, "/session\n");
    assert!(rig.written(ME).contains("\nnews\n.\n"));
    rig.ch.closed(ME, plumbing::Left::Unwritten);
    assert_eq!(rig.ch.mail.inbox.with(|i| i.waiting("main").len()), 1);
    rig.ch.accept(&mut rig.out, OTHER, peer());
    rig.send(OTHER, "/session\n");
    let next = rig.written(OTHER);
    assert!(
        next.contains("\n· while you were away: heartbeat at ") && next.contains("\nnews\n"),
        "{next}"
    );
    assert!(!next.contains("(again)"), "{next}");
}

/// A message that went to two clients, one of which may have read part of it, stays
/// marked though the other's block was never written.
#[test]
fn a_block_one_client_may_have_read_stays_marked_when_another_goes_unwritten() {
    let mut rig = Rig::with(Config::default());
    for id in [ME, OTHER] {
        rig.ch.accept(&mut rig.out, id, peer());
        rig.send(id, "/session\n");
    }
    let past = remind::clock::now() - chrono::Duration::minutes(1);
    super::reminders::book_reminder(
        &rig.ch.mail,
        past,
        "ring the garage",
        remind::By::Owner,
        proto::DataClass::Private,
    );
    rig.ch.reminders_due(&mut rig.out);
    // Both were sent the block (taken at once: `written` takes every connection's).
    let sent: Vec<ConnId> = rig
        .out
        .take()
        .into_iter()
        .filter_map(|a| match a {
            plumbing::Asked::Send(to, bytes)
                if String::from_utf8_lossy(&bytes).contains("ring the garage") =>
            {
                Some(to)
            }
            _ => None,
        })
        .collect();
    assert!(sent.contains(&ME) && sent.contains(&OTHER), "{sent:?}");
    rig.ch.closed(ME, plumbing::Left::Partly);
    rig.ch.closed(OTHER, plumbing::Left::Unwritten);
    let third = ConnId(3);
    rig.ch.accept(&mut rig.out, third, peer());
    rig.send(third, "/session\n");
    let next = rig.written(third);
    assert!(
        next.contains(" (again)") && next.contains("ring the garage"),
        "{next}"
    );
}

/// Regression: `/inbox` showed a waiting message whole without marking it tried; a reply
/// partly written before its client left brought the message to the next connection
/// unmarked.
#[test]
fn a_message_inbox_showed_comes_again_marked_after_a_partly_written_reply() {
    let mut rig = Rig::with(Config::default());
    waiting(&mut rig, "news");
    rig.ch.accept(&mut rig.out, ME, peer());
    rig.send(ME, "/inbox\n");
    assert!(rig.written(ME).contains("news"));
    rig.ch.closed(ME, plumbing::Left::Partly);
    rig.ch.accept(&mut rig.out, OTHER, peer());
    rig.send(OTHER, "/session\n");
    let next = rig.written(OTHER);
    assert!(
        next.contains(" (again)") && next.contains("\nnews\n"),
        "{next}"
    );
}
