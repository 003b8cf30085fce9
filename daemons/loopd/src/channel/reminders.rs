//! The channel's side of the reminders (docs/reminders.md): the poll loop's timer follows
//! the soonest due time, and what fell due goes into the inbox (`conversation::inbox`) and out
//! as unasked blocks (`super::broadcast`), a bounded number a turn; `/remind`.

use super::work::Work;
use super::Channel;
use conversation::inbox::{self, Kind, Message, Piece};
use plumbing::{ConnId, Outbox};
use proto::{Label, SessionId};
use remind::{self, clock};
use std::time::{Duration, Instant};

/// The longest the poll loop's timer waits for a reminder before looking again. Due times
/// are wall-clock times and the timer is monotonic: a suspend or a clock step moves one
/// against the other, and looking every minute bounds how late that makes a reminder.
/// It is also how soon a reminder the full inbox left in the book is looked at again.
pub(crate) const REMINDER_RECHECK: Duration = Duration::from_secs(60);

/// Due reminders taken from the book in one turn of the poll loop. Each is an fsynced
/// write of the inbox, so a burst of hundreds in one turn would hold the loop for
/// seconds on a slow disk, long enough to miss the watchdog's pings; the rest are taken
/// in the next turns, right after this one's blocks went out.
pub(crate) const MAX_DUE_PER_TURN: usize = 32;

/// How long after a failed write of the inbox the due reminders are tried again. They
/// stay in the book meanwhile (a reminder leaves it only once the inbox holds it on
/// disk); a disk that filled is often freed within seconds of the journal's error, and
/// trying every ten seconds keeps that error to a few lines a minute.
pub(crate) const INBOX_RETRY: Duration = Duration::from_secs(10);

impl<W: Work> Channel<W> {
    /// When the poll loop should next look at the reminders.
    pub(super) fn reminders_deadline(&self) -> Option<Instant> {
        if !self.mail.offered {
            return Some(self.mail.born);
        }
        let next = self.mail.reminders.with(|b| b.next_due())?;
        let now = clock::now();
        if next <= now {
            if let Some(at) = self.mail.retry_at.filter(|&at| at > Instant::now()) {
                return Some(at);
            }
            // Asked on every turn of the loop: the inbox is counted only when one is due.
            if self.mail.inbox.with(|i| i.waiting_reminders()) < inbox::MAX_WAITING_REMINDERS {
                return Some(self.mail.born);
            }
            // Due, and the inbox full of waiting reminders: looked at again in a minute.
            // The time until a due time is 0, and a deadline of now never fires.
            return Some(Instant::now() + REMINDER_RECHECK);
        }
        Some(Instant::now() + clock::until(now, next).min(REMINDER_RECHECK))
    }

    /// Delivers every reminder that fell due, through the inbox, then takes them out of
    /// the book; and, once after start, offers what waits in the inbox to the notify
    /// command (a message that came while it was unset, or before a crash).
    pub(super) fn reminders_due(&mut self, out: &mut Outbox) {
        if !self.mail.offered {
            self.mail.offered = true;
            let waiting = self.mail.inbox.with(|i| i.unnotified());
            for message in waiting {
                self.hand_over(message.n);
            }
        }
        if self.mail.retry_at.is_some_and(|at| at > Instant::now()) {
            return;
        }
        self.mail.retry_at = None;
        let reminders = self.mail.reminders.clone();
        let inbox = self.mail.inbox.clone();
        // The book, then the inbox, held together (as `/forget` takes them): a reminder a
        // removal takes from the book is never added to the inbox after it.
        let offered = reminders.with(|book| {
            let mut due = book.due(clock::now());
            due.truncate(MAX_DUE_PER_TURN);
            if due.is_empty() {
                return Vec::new();
            }
            let offered = inbox.with(|inbox| self.reminders_to_inbox(inbox, due));
            let done: Vec<u64> = offered.iter().map(|(n, ..)| *n).collect();
            if let Err(e) = book.remove(&done) {
                // The inbox knows they were delivered; they are not delivered again.
                plumbing::error!("reminders: {e}");
            }
            offered
        });
        for (_, message, targets) in offered {
            let Some(message) = message else { continue };
            self.offer(out, &targets, &message);
        }
    }

    /// Adds each due reminder to the inbox (one the inbox has from before a crash is not
    /// added again), while the inbox has room for waiting reminders and its file can be
    /// written; the rest stay in the book (after a failed write, until `INBOX_RETRY` has
    /// passed). Returns each reminder taken, its message and the clients it goes to.
    fn reminders_to_inbox(
        &mut self,
        inbox: &mut inbox::Inbox,
        due: Vec<remind::Reminder>,
    ) -> Vec<(u64, Option<Message>, Vec<ConnId>)> {
        let mut taken = Vec::new();
        for r in due {
            let source = inbox::reminder_source(r.n);
            if inbox.has_source(&source) {
                taken.push((r.n, None, Vec::new()));
                continue;
            }
            let Ok(session) = SessionId::parse(&r.session) else {
                plumbing::warn!(
                    "reminder {}: {:?} is not a session name; dropped",
                    r.n,
                    r.session
                );
                taken.push((r.n, None, Vec::new()));
                continue;
            };
            if inbox.waiting_reminders() >= inbox::MAX_WAITING_REMINDERS {
                plumbing::warn!(
                    "inbox: {} reminders wait already; reminder {} stays in the book until there is room",
                    inbox::MAX_WAITING_REMINDERS,
                    r.n
                );
                break;
            }
            let late = r.due_at() < self.mail.started;
            let header = if late {
                format!(
                    "reminder {} (late: due {}, while loopd was not running)",
                    r.n,
                    remind::shown(r.due_at())
                )
            } else {
                format!("reminder {}, due {}", r.n, remind::shown(r.due_at()))
            };
            // An allowed reminder's words may be a page's: loopd's line above them says
            // so, as every other way the message is shown does.
            let header = if r.untrusted {
                format!("{header}{}", super::unasked::UNTRUSTED)
            } else {
                header
            };
            let pieces = vec![Piece::Activity(header), Piece::Text(r.text.clone())];
            let mut targets = self.targets(&session);
            let connected = targets.len();
            if late {
                // Due while loopd was down, it fires as loopd starts, when a connection
                // may have sent a line loopd has not read yet (the one that started it,
                // under socket activation): it reaches such a connection as waiting mail
                // does, after that line's reply block, never before it. Held for it
                // instead, it would wait without end for a connection that only listens,
                // out of `/status`'s count and the notify command's reach.
                targets.retain(|id| self.conns.get(id).is_some_and(|c| c.answered));
            }
            let unanswered = connected - targets.len();
            let label = Label {
                class: r.class,
                untrusted: r.untrusted,
            };
            let added = inbox.add_saved(
                session.as_str(),
                Kind::Reminder,
                pieces,
                label,
                self.some_between_blocks(&targets),
                Some(source),
            );
            let message = match added {
                Ok(message) => message,
                Err(e) => {
                    plumbing::error!(
                        "inbox: {e}; reminder {} stays in the book and is tried again in {} s",
                        r.n,
                        INBOX_RETRY.as_secs()
                    );
                    self.mail.retry_at = Some(Instant::now() + INBOX_RETRY);
                    break;
                }
            };
            if message.tried {
                self.mail.tried_here.insert(message.n);
            }
            let late = if late { " late" } else { "" };
            let whom = if targets.is_empty() && unanswered > 0 {
                format!(
                    "it waits in the inbox for the first reply block of the {unanswered} connections not yet answered"
                )
            } else if targets.is_empty() {
                "nobody was connected; it waits in the inbox".to_string()
            } else {
                format!("to {} connected clients", targets.len())
            };
            plumbing::info!(
                "session {session}: reminder {} delivered{late}: {whom}",
                r.n
            );
            // The note names the reminder, never its text: the text is in the note of
            // its setting, which `/forget` finds, and a note written now could bring
            // back text a removal running on the worker has just taken.
            self.note(
                session.as_str(),
                format!("reminder {} delivered{late}: {whom}", r.n),
            );
            taken.push((r.n, Some(message), targets));
        }
        taken
    }

    /// `/remind …` in `session`: the reply block.
    pub(super) fn remind_command(&mut self, id: ConnId, session: &SessionId, arg: &str) -> String {
        let owner = self.cfg.channel.owner_class;
        let room = super::rooms::is_room(id);
        let max_class = self.cfg.matrix.max_class;
        // In a room the answer is loopd's notice: it quotes only the owner's own
        // reminders at or below `matrix.max_class`, never the model's words.
        let quote =
            |r: &remind::Reminder| !room || (r.by == remind::By::Owner && r.class <= max_class);
        let said = self.mail.reminders.with(|b| {
            remind::command::run_quoting(b, session.as_str(), arg, clock::now(), owner, &quote)
        });
        match said {
            Err(e) => super::reply::failed(e),
            Ok(said) => {
                if let Some(note) = said.note {
                    self.note(session.as_str(), note);
                }
                super::reply::whole(&said.reply)
            }
        }
    }
}
