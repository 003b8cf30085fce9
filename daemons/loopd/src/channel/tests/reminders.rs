//! Reminders in the channel's book as the poll loop meets them, and the helper the
//! channel's tests put them there with.

use super::*;

/// Puts a reminder into the channel's book due at `due`, as `/remind` (`By::Owner`) or
/// the `remind` tool (`By::Assistant`) would.
pub(in crate::channel) fn book_reminder(
    mail: &crate::channel::broadcast::Mail,
    due: chrono::DateTime<chrono::Utc>,
    text: &str,
    by: remind::By,
    class: proto::DataClass,
) {
    mail.reminders
        .with(|b| b.add("main", due, text, by, class))
        .unwrap();
}

#[test]
fn a_reminder_due_while_the_inbox_is_full_of_reminders_is_looked_at_in_a_minute() {
    // Regression: the deadline was "now plus the time until it is due", which for a due
    // reminder is now, so the poll loop's timer never fired and the loop spun a core.
    let mut rig = Rig::new();
    rig.ch.mail.inbox.with(|i| {
        for n in 0..conversation::inbox::MAX_WAITING_REMINDERS {
            let pieces = vec![conversation::inbox::Piece::Text(format!("r{n}"))];
            let (_, saved) = i.add(
                "main",
                conversation::inbox::Kind::Reminder,
                pieces,
                proto::Label::PUBLIC,
                false,
                None,
            );
            saved.unwrap();
        }
    });
    let past = remind::clock::now() - chrono::Duration::minutes(1);
    book_reminder(
        &rig.ch.mail,
        past,
        "one more",
        remind::By::Owner,
        proto::DataClass::Private,
    );
    rig.ch.reminders_due(&mut rig.out);
    let deadline = rig.ch.reminders_deadline().unwrap();
    assert!(
        deadline > std::time::Instant::now() + crate::channel::reminders::REMINDER_RECHECK / 2,
        "{deadline:?}"
    );
}
