//! `/forget` on the worker (docs/forgetting.md): the list a query finds, kept per session
//! until the owner picks from it, and a removal carried through every place that holds
//! the text — the files (`crate::forget`), the open session reloaded from them, the
//! slots (`Engine::forget`), memoryd, and Honcho's hook — then logged as a `note` and
//! answered with what was removed where. At start, a removal a crash cut short is
//! finished from its plan the same way.

use super::{Failure, JobId, Reply, State};
use crate::forget::find::{find, Found, Place};
use crate::forget::plan::{self, Plan};
use crate::forget::{apply, Ask};
use crate::honcho::pause::Paused;
use crate::honcho::Reporter;
use crate::open_session::Session;
use crate::status::SessionView;
use crate::testhook::abort_at;
use proto::memory::LogRef;
use proto::{Record, SessionId};
use std::collections::HashMap;
use std::time::Instant;

/// The most entries a list shows with their whole text: the reply stays readable, and
/// `/forget all` still removes every match, shown or not.
pub const MAX_SHOWN: usize = 50;

/// Each session's last list.
#[derive(Default)]
pub struct Lists {
    last: HashMap<SessionId, Listed>,
}

struct Listed {
    query: String,
    found: Vec<Found>,
}

impl State {
    pub(super) fn forget(&mut self, id: JobId, session: &SessionId, ask: Ask) {
        let reply = match ask {
            Ask::List(query) => self.forget_list(session, query),
            Ask::All => self.forget_remove(session, None),
            Ask::Remove(numbers) => self.forget_remove(session, Some(numbers)),
        };
        self.notify.done(id, reply);
    }

    fn forget_list(&mut self, session: &SessionId, query: String) -> Reply {
        let dir = Session::dir_of(&self.engine.cfg().sessions_dir(), session);
        let found = match find(&dir, &query) {
            Ok(found) => found,
            Err(error) => return Err(forget_failed(session, error, false)),
        };
        plumbing::info!("session {session}: /forget listed {} records", found.len());
        if found.is_empty() {
            self.forgets.last.remove(session);
            return Ok(format!("nothing in session {session} holds that"));
        }
        let reply = render_list(session, &found);
        self.forgets
            .last
            .insert(session.clone(), Listed { query, found });
        Ok(reply)
    }

    fn forget_remove(&mut self, session: &SessionId, numbers: Option<Vec<usize>>) -> Reply {
        let Some(listed) = self.forgets.last.remove(session) else {
            return Err(Failure::Refused(format!(
                "nothing listed to forget in session {session}; /forget QUERY lists it first"
            )));
        };
        let chosen: Vec<&Found> = match &numbers {
            None => listed.found.iter().collect(),
            Some(numbers) => {
                let bad: Vec<String> = numbers
                    .iter()
                    .filter(|&&n| n > listed.found.len())
                    .map(|n| n.to_string())
                    .collect();
                if !bad.is_empty() {
                    let reply = format!(
                        "the list has {} entries; there is no {}",
                        listed.found.len(),
                        bad.join(", ")
                    );
                    self.forgets.last.insert(session.clone(), listed);
                    return Err(Failure::Refused(reply));
                }
                numbers.iter().map(|&n| &listed.found[n - 1]).collect()
            }
        };
        // Only appends and new epochs can have happened since the list (the list is
        // dropped by every removal), so each entry is where it was; checked anyway, as a
        // removal at the wrong line would take an unrelated record.
        // The plan is made from the files as they are now (each line's offset and length
        // with them), with the Honcho reporter held still from before the plan is written
        // until it is removed (see `forget_rest`).
        let started = Instant::now();
        let paused = self.honcho.as_ref().map(Reporter::pause);
        let dir = Session::dir_of(&self.engine.cfg().sessions_dir(), session);
        let now = match find(&dir, &listed.query) {
            Ok(now) => now,
            Err(error) => return Err(forget_failed(session, error, false)),
        };
        let Some(chosen) = chosen
            .iter()
            .map(|c| {
                now.iter()
                    .find(|f| f.place == c.place && f.offset == c.offset)
            })
            .collect::<Option<Vec<&Found>>>()
        else {
            return Err(Failure::Refused(
                "the list is out of date; /forget QUERY again".to_string(),
            ));
        };
        let plan = Plan::build(
            session.as_str(),
            proto::time::now_rfc3339(),
            &chosen,
            &listed.query,
        );
        let cfg = self.engine.cfg().clone();
        if let Err(e) = apply::run(&cfg.state_dir, &cfg.sessions_dir(), &plan) {
            plumbing::error!("session {session}: forget: {e}");
            // The plan (if written) stays: the next start finishes what it names.
            return Err(forget_failed(session, e, true));
        }
        let places = self.forget_rest(
            session,
            &plan,
            "by the owner",
            Some(&listed.query),
            paused.as_ref(),
        );
        drop(paused);
        if let Some(r) = &self.honcho {
            r.poke(session.as_str());
        }
        let records: usize = plan.logs.iter().map(|l| l.lines.len()).sum();
        plumbing::info!(
            "session {session}: forgot {records} records and {} carried summaries in {} ms",
            plan.carries.len(),
            started.elapsed().as_millis()
        );
        let mut reply = format!(
            "forgot {records} records and {} carried summaries in session {session}:",
            plan.carries.len()
        );
        for p in places {
            reply.push_str("\n- ");
            reply.push_str(&p);
        }
        Ok(reply)
    }

    /// What follows the files of a removal: the session reloaded from them, the slots,
    /// memoryd, Honcho (the reporter's cursor moved with the lines, then what its API
    /// allows), the `note`, and the plan removed. Returns each place in words. The
    /// Honcho reporter, if running, is `paused` by the caller from before the plan was
    /// written until this returns: its cursor must not be written by both.
    /// `words` is the query the owner forgot by, which Honcho's conclusions are searched
    /// for; it is never on disk, so a removal finished at start has none.
    fn forget_rest(
        &mut self,
        session: &SessionId,
        plan: &Plan,
        by: &str,
        words: Option<&str>,
        paused: Option<&Paused>,
    ) -> Vec<String> {
        let mut places = Vec::new();
        for log in &plan.logs {
            let lines: Vec<String> = log.lines.iter().map(|l| (l.line + 1).to_string()).collect();
            places.push(format!(
                "session log of epoch {}: line {} replaced by a note (file rewritten)",
                log.epoch,
                lines.join(", ")
            ));
        }
        for c in &plan.carries {
            places.push(format!(
                "carried summary of epoch {}: redacted (head rewritten)",
                c.epoch
            ));
        }
        // The open epoch's records and its log's handle are from before the rewrite.
        self.sessions.open.remove(session);
        let epochs = plan.epochs();
        places.push(format!(
            "llama.cpp: {}; the next turn reads its whole prompt again",
            self.engine.forget(session, &epochs)
        ));
        let cfg = self.engine.cfg().clone();
        let logs = epochs
            .iter()
            .map(|&epoch| LogRef {
                session: session.to_string(),
                epoch,
            })
            .collect();
        places.push(match crate::memory::forget(&cfg.memory.socket, logs) {
            Ok(rows) => format!("memoryd: {rows} rows removed from its index"),
            Err(e) => {
                plumbing::warn!("session {session}: forget: memoryd: {e}");
                format!("memoryd was not told ({e}): it re-reads the rewritten logs when it next catches up")
            }
        });
        let (honcho, cursor_moved) = honcho_forget(&cfg, session, plan, words, paused);
        places.extend(honcho);
        let records: usize = plan.logs.iter().map(|l| l.lines.len()).sum();
        let note = format!(
            "forgotten {by}: {records} records and {} carried summaries in epochs {epochs:?}",
            plan.carries.len()
        );
        self.sessions.open_existing(&cfg, session);
        match self.sessions.get_or_create(&cfg, session) {
            Ok(s) => {
                if let Err(e) = s.append(Record::Note {
                    time: proto::time::now_rfc3339(),
                    text: note,
                }) {
                    plumbing::error!("session {session}: forget: {e}");
                }
                self.board.set(session.as_str(), SessionView::of(s));
            }
            Err(e) => plumbing::error!("session {session}: forget: reopening: {e}"),
        }
        abort_at("forget-before-plan-removed");
        // Without the cursor moved, the plan stays: the reporter holds the session back
        // while it exists, and the next start moves the cursor from it.
        if cursor_moved {
            if let Err(e) = plan::remove(&cfg.state_dir, session.as_str()) {
                plumbing::error!("session {session}: forget: {e}");
            }
        }
        places
    }

    /// At start: every removal a crash cut short is finished from its plan.
    pub(super) fn finish_forgets(&mut self) {
        let cfg = self.engine.cfg().clone();
        for plan in plan::left(&cfg.state_dir) {
            let plan = match plan {
                Ok(plan) => plan,
                Err(e) => {
                    plumbing::error!("{e}; the forget it names is not finished");
                    continue;
                }
            };
            let Ok(session) = SessionId::parse(&plan.session) else {
                plumbing::error!("forget plan for {:?}: not a session id", plan.session);
                continue;
            };
            let paused = self.honcho.as_ref().map(Reporter::pause);
            match apply::files(&cfg.sessions_dir(), &plan) {
                Ok(()) => {
                    self.forget_rest(
                        &session,
                        &plan,
                        "by the owner (finished at start)",
                        None,
                        paused.as_ref(),
                    );
                    drop(paused);
                    if let Some(r) = &self.honcho {
                        r.poke(session.as_str());
                    }
                    plumbing::info!(
                        "session {session}: finished a forget cut short (epochs {:?})",
                        plan.epochs()
                    );
                }
                Err(e) => plumbing::error!(
                    "session {session}: finishing a forget cut short: {e}; tried again at the next start"
                ),
            }
        }
    }
}

/// Honcho's part of a removal: the reporter's cursor moved with the rewritten lines
/// (once, however often the plan is applied), then what Honcho's API allows done for the
/// forgotten records (`honcho::forget`), each by the offset it had when it was reported.
/// Returns the sentences for the reply and whether the cursor is where it should be.
/// The calls are blocking, each bounded by the Honcho client's timeouts.
fn honcho_forget(
    cfg: &proto::config::Config,
    session: &SessionId,
    plan: &Plan,
    words: Option<&str>,
    paused: Option<&Paused>,
) -> (Vec<String>, bool) {
    let mut said = Vec::new();
    let moved = match crate::honcho::moved::move_cursor(
        &cfg.state_dir,
        session.as_str(),
        &plan.rewrite(),
    ) {
        Ok(_) => {
            if let Some(p) = paused {
                p.reload(session.as_str());
            }
            true
        }
        Err(e) => {
            plumbing::error!("session {session}: forget: {e}");
            said.push(format!(
                "Honcho reports of this session wait: the report cursor could not be moved past the rewritten lines ({e}); loopd tries again at its next start"
            ));
            false
        }
    };
    if let Some(done) =
        crate::honcho::forget::forget(&cfg.honcho, session.as_str(), &plan.reported(), words)
    {
        plumbing::info!(
            "session {session}: forget: Honcho keeps {} messages of it, {} conclusions deleted{}",
            done.messages_left.len(),
            done.conclusions_deleted,
            if done.failed.is_some() {
                ", not finished"
            } else {
                ""
            }
        );
        said.push(done.sentence());
    }
    (said, moved)
}

/// The numbered list, with each entry's whole text.
fn render_list(session: &SessionId, found: &[Found]) -> String {
    let mut out = format!("{} entries of session {session} hold that:", found.len());
    for (n, f) in found.iter().enumerate().take(MAX_SHOWN) {
        let place = match f.place {
            Place::Record { epoch, line } => format!("epoch {epoch} line {}", line + 1),
            Place::Carry { epoch } => format!("epoch {epoch} head"),
        };
        out.push_str(&format!("\n{}. {} ({place}, {}):", n + 1, f.kind, f.time));
        for line in f.text.lines() {
            out.push_str("\n   ");
            out.push_str(line);
        }
    }
    if found.len() > MAX_SHOWN {
        out.push_str(&format!(
            "\n… and {} more not shown; /forget all removes them too",
            found.len() - MAX_SHOWN
        ));
    }
    out.push_str("\n/forget N… removes those entries, /forget all every one; nothing is removed until you do.");
    out
}

fn forget_failed(
    session: &SessionId,
    error: crate::forget::ForgetError,
    part_way: bool,
) -> Failure {
    Failure::Forget {
        session: session.clone(),
        error,
        part_way,
    }
}
