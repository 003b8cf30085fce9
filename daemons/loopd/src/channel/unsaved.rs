//! The inbox's file written again after a write failed (docs/reminders.md, 'Delivery
//! keeps its word'): a full disk leaves a heartbeat's message, or a mark, in memory only,
//! and nothing else may change the inbox for a while, so the poll loop tries the write
//! itself, at once and then every `INBOX_RETRY`, until it succeeds; then what waits its
//! turn for the notify command goes on.

use super::reminders::INBOX_RETRY;
use super::work::Work;
use super::Channel;
use std::time::Instant;

impl<W: Work> Channel<W> {
    /// When the inbox's file is next tried, while it holds less than memory does; at
    /// once when it was written since and the notify queue waits for that.
    pub(super) fn unsaved_deadline(&self) -> Option<Instant> {
        if !self.mail.inbox.with(|i| i.unsaved()) {
            return self.mail.notify_stalled.then_some(self.mail.born);
        }
        Some(self.mail.save_retry_at.unwrap_or(self.mail.born))
    }

    /// Tries the inbox's file again when it is due; once it is written (by this or by
    /// another change), lets the notify queue go on.
    pub(super) fn write_unsaved(&mut self, now: Instant) {
        if !self.mail.inbox.with(|i| i.unsaved()) {
            self.mail.save_retry_at = None;
            if std::mem::take(&mut self.mail.notify_stalled) {
                self.notify_pump();
            }
            return;
        }
        if self.mail.save_retry_at.is_some_and(|at| at > now) {
            return;
        }
        match self.mail.inbox.with(|i| i.save_again()) {
            Ok(()) => {
                self.mail.save_retry_at = None;
                self.mail.notify_stalled = false;
                plumbing::notice!("inbox: written again; what waited in memory only is on disk");
                self.notify_pump();
            }
            Err(e) => {
                self.mail.save_retry_at = Some(now + INBOX_RETRY);
                plumbing::error!("inbox: {e}; tried again in {} s", INBOX_RETRY.as_secs());
            }
        }
    }
}
