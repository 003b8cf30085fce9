//! The inbox's file written again by the poll loop after a failed write
//! (docs/reminders.md, 'Delivery keeps its word'). The rig is the rooms' tests'.

use crate::channel::tests_rooms::Rig;

/// Found by a kill -9 campaign: with the disk full, a heartbeat's message was kept in
/// memory only, and nothing wrote the inbox again until another change came, so a crash
/// later lost it. The poll loop writes it again itself, at once and then every
/// `INBOX_RETRY`, until the disk allows.
#[test]
fn a_message_kept_in_memory_by_a_full_disk_is_written_by_the_poll_loop() {
    let mut rig = Rig::new();
    let blocker = rig.state.join("inbox.json");
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("x"), "x").unwrap();
    let (_, saved) = rig.ch.mail.inbox.with(|i| {
        i.add(
            "main",
            conversation::inbox::Kind::Heartbeat,
            vec![conversation::inbox::Piece::Text("news ZEBRA4455".into())],
            proto::Label::PUBLIC,
            false,
            None,
        )
    });
    assert!(saved.is_err());
    let now = std::time::Instant::now();
    assert!(rig.ch.unsaved_deadline().is_some_and(|at| at <= now));
    rig.ch.write_unsaved(now);
    let next = rig.ch.unsaved_deadline().unwrap();
    assert!(next > now, "tried again later, not in a spin");
    std::fs::remove_dir_all(&blocker).unwrap();
    rig.ch.write_unsaved(next);
    assert_eq!(rig.ch.unsaved_deadline(), None);
    let file = std::fs::read_to_string(&blocker).unwrap();
    assert!(file.contains("ZEBRA4455"), "{file}");
    // A notify queue stopped at a mark it could not write goes on once the file is
    // written, whichever write it was, at once (found by review: a retry time still
    // ahead kept the loop's timer firing without the queue moving).
    rig.ch.mail.save_retry_at = Some(next + std::time::Duration::from_secs(60));
    rig.ch.mail.notify_stalled = true;
    let at = rig.ch.unsaved_deadline().unwrap();
    rig.ch.write_unsaved(at);
    assert!(!rig.ch.mail.notify_stalled);
    assert_eq!(rig.ch.unsaved_deadline(), None);
}
