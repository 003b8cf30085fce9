//! The notify command's queue (docs/reminders.md, 'The notify command'): inbox messages
//! no client received wait their turn, by number, and at most `notify.max_running`
//! commands run at once. A message is marked just before its command starts and again
//! once it has, so a crash between the two hands it over once more, saying so, and never
//! not at all. What the command reads is the text as the screen shows it, or, for a
//! message that may not leave the box, one line saying it waits
//! (docs/reminders.md, 'What the command sees'); running it is `conversation::inbox::notify`.

use super::unasked::local;
use super::work::Work;
use super::Channel;
use conversation::inbox::notify;
use conversation::inbox::Message;
use std::sync::Arc;
use std::time::Duration;

/// What the notify command reads for message `m` when its text may not leave the box:
/// one line saying a message waits, with its kind and time only.
/// `again` adds the repeat's mark to that one line rather than a line of its own.
fn waits_line(m: &Message, again: bool) -> String {
    format!(
        "· a {} message from {} waits in the inbox{}\n",
        m.kind.word(),
        local(&m.time),
        if again { " (again)" } else { "" }
    )
}

/// The first line of a message that may have been handed over before a restart: the
/// same `(again)` mark the socket's and the room's headers carry.
const AGAIN: &str = "· (again) this message may have been handed over before loopd restarted\n";

impl<W: Work> Channel<W> {
    /// Puts message `n` in line for `notify.command` and starts what may start.
    pub(super) fn hand_over(&mut self, n: u64) {
        if self.cfg.notify.command.is_empty() || self.mail.turn.contains(&n) {
            return;
        }
        self.mail.turn.push_back(n);
        self.notify_pump();
    }

    /// Starts the notify command for messages waiting their turn, while fewer than
    /// `notify.max_running` run. A message is marked handed over once a command was
    /// started with it; one delivered or forgotten meanwhile is skipped.
    pub(super) fn notify_pump(&mut self) {
        let notify = Arc::clone(&self.cfg);
        let notify = &notify.notify;
        if notify.command.is_empty() {
            self.mail.turn.clear();
            return;
        }
        while self.mail.runner.running() < notify.max_running {
            let Some(n) = self.mail.turn.pop_front() else {
                return;
            };
            let message = self.mail.inbox.with(|i| i.get(n).cloned());
            let Some(message) = message.filter(|m| m.delivered.is_none() && !m.notified) else {
                continue;
            };
            let what = format!(
                "inbox message {} ({}) of session {}",
                message.n,
                message.kind.word(),
                message.session
            );
            // Marked before the command starts and again once it has: a crash between
            // the two hands it over once more, saying so, rather than never.
            if let Err(e) = self.mail.inbox.with(|i| i.notify_tried(n)) {
                // Not handed over unmarked: it keeps its turn, first, and the queue
                // waits for the inbox's file to be written again (`unsaved`).
                plumbing::error!(
                    "inbox: {e}; message {n} is handed to notify.command once the inbox can be written"
                );
                // The mark was set in memory before the write failed: taken back unless
                // it was there before (a crash's repeat), or the retry would write it
                // and the command be told a first handing over is a repeat. That write
                // fails as this one did; the retry writes what memory holds.
                if !message.notify_tried {
                    let _ = self.mail.inbox.with(|i| i.notify_untried(n));
                }
                self.mail.turn.push_front(n);
                self.mail.notify_stalled = true;
                return;
            }
            let again = message.notify_tried;
            let over = message.class > notify.max_class;
            let text = if over || message.untrusted {
                plumbing::info!(
                    "notify: {what} is {}{} (notify.max_class is {}); only a line saying it waits is handed over",
                    message.class,
                    if message.untrusted { " and untrusted" } else { "" },
                    notify.max_class
                );
                waits_line(&message, again)
            } else {
                let body = super::unasked::screen_text(&message.pieces);
                format!("{}{body}", if again { AGAIN } else { "" })
            };
            let env = notify::environment(&notify.env);
            let timeout = Duration::from_secs(notify.timeout_s);
            // A command that could not be started was not handed the message: it stays
            // unmarked, waits in the inbox, and is offered again at the next start
            // (the command may be installed by then).
            if let Err(why) =
                self.mail
                    .runner
                    .start(&notify.command, &env, timeout, what.clone(), text)
            {
                plumbing::warn!(
                    "notify: {} {why} for {what}; the message waits in the inbox and is offered to the command again when loopd next starts",
                    notify.command[0]
                );
                if let Err(e) = self.mail.inbox.with(|i| i.notify_untried(n)) {
                    plumbing::error!(
                        "inbox: {e}; message {n} may be marked as a repeat when it is handed over"
                    );
                }
                continue;
            }
            if let Err(e) = self.mail.inbox.with(|i| i.notified(n)) {
                plumbing::error!(
                    "inbox: {e}; message {n} may be handed over again after a restart"
                );
            }
            if over || message.untrusted {
                let why = if over {
                    format!(
                        "it is {} and notify.max_class is {}",
                        message.class, notify.max_class
                    )
                } else {
                    "it was written while the context was untrusted".to_string()
                };
                self.note(
                    &message.session,
                    format!(
                        "inbox message {} ({}): notify.command got only a line saying it waits: {why}",
                        message.n,
                        message.kind.word(),
                    ),
                );
            }
        }
    }
}
