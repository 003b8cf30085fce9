//! `/forget` on the worker (docs/forgetting.md): a query listed (its pages are
//! `forget_list`'s), and a removal carried through every place that holds the text — the
//! files (`conversation::forget`), the open session reloaded from them, the slots
//! (`Engine::forget`), memoryd and Honcho (`forget_places`) — then logged as a `note` and
//! answered with what was removed where. At start, a removal a crash cut short is
//! finished from its plan the same way.

use super::forget_honcho;
pub(super) use super::forget_list::Lists;
use super::forget_list::{render_page, Listed, Passed, ShownTo};
use super::forget_places::{file_places, honcho_forget, matrix_said, memoryd_forget, plural};
use super::{Failure, JobId, Reply, State};
use conversation::forget::find::{find_all, Found};
use conversation::forget::plan::{self, Plan};
use conversation::forget::{apply, Ask};
use conversation::status::SessionView;
use conversation::testhook::abort_at;
use honcho::pause::Paused;
use honcho::Reporter;
use proto::{FromMatrix, Record, SessionId};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

impl State {
    /// `/forget` in `session`; `from`: the Matrix event it was, when a room asked. A
    /// room's list quotes nothing above `matrix.max_class` (`forget_list::ShownTo`), and
    /// a room's removal keeps its own command and answer there.
    pub(super) fn forget(
        &mut self,
        id: JobId,
        session: &SessionId,
        ask: Ask,
        from: Option<&FromMatrix>,
    ) {
        let to = ShownTo::of(self.engine.cfg(), from.is_some());
        let asked_by = from.map(|f| f.event.clone());
        let reply = match ask {
            Ask::List(query) => self.forget_list(session, query, to),
            Ask::More => self.forget_more(session, to),
            Ask::All => self.forget_remove(session, None, asked_by),
            Ask::Remove(numbers) => self.forget_remove(session, Some(numbers), asked_by),
        };
        self.notify.done(id, reply);
    }

    fn forget_list(&mut self, session: &SessionId, query: String, to: ShownTo) -> Reply {
        let cfg = Arc::clone(self.engine.cfg());
        let searched = find_all(&cfg.sessions_dir(), &query, cfg.channel.owner_class)
            .map_err(|error| forget_failed(session, error, false))?;
        let passed = Passed::of(session, &searched);
        let mut found = searched.found;
        // Reminders and inbox messages are copies too, entries of their own kind.
        found.extend(self.mail.find(&query));
        plumbing::info!(
            "session {session}: /forget listed {} records box-wide",
            found.len()
        );
        let (honcho, honcho_failed) = forget_honcho::search(&cfg, &query);
        if found.is_empty() && honcho.is_empty() {
            self.forgets.last.remove(session);
            let mut reply = if passed.nothing() {
                "nothing on the box holds that (every session searched)".to_string()
            } else {
                format!("nothing {} holds that{}", passed.place, passed.said)
            };
            if let Some(why) = &honcho_failed {
                reply.push_str(&forget_honcho::unsearched(why));
            }
            return Ok(reply);
        }
        let mut listed = Listed {
            query,
            found,
            honcho,
            honcho_failed,
            unread: passed.said,
            shown: 0,
        };
        let reply = render_page(&mut listed, to);
        self.forgets.last.insert(session.clone(), listed);
        Ok(reply)
    }

    fn forget_more(&mut self, session: &SessionId, to: ShownTo) -> Reply {
        let Some(listed) = self.forgets.last.get_mut(session) else {
            return Err(Failure::Refused(format!(
                "nothing listed to forget in session {session}; /forget QUERY lists it first"
            )));
        };
        if listed.shown >= listed.total() {
            return Ok(format!(
                "the list's {} entries have all been shown; /forget N… or /forget all removes them",
                listed.total()
            ));
        }
        Ok(render_page(listed, to))
    }

    fn forget_remove(
        &mut self,
        session: &SessionId,
        numbers: Option<Vec<usize>>,
        asked_by: Option<String>,
    ) -> Reply {
        // A removal a crash cut short was finished at start: the line asking for it,
        // run again, is answered with what it took, not told nothing was listed.
        if !self.forgets.last.contains_key(session) {
            if let Some(done) = self.forgets.finished.remove(session) {
                // Said once, wherever it is asked first.
                self.forgets.finished.retain(|_, d| *d != done);
                return Ok(done);
            }
        }
        let listed = self.take_list(session, numbers.as_deref())?;
        // The removal is of what is there now: the files are searched again, with the
        // Honcho reporter held still from before the plans are written until they are
        // removed (see `forget_rest`).
        let started = Instant::now();
        let paused = self.honcho.as_ref().map(Reporter::pause);
        let cfg = Arc::clone(self.engine.cfg());
        let searched = find_all(&cfg.sessions_dir(), &listed.query, cfg.channel.owner_class)
            .map_err(|error| forget_failed(session, error, false))?;
        let passed = Passed::of(session, &searched);
        let mut now = searched.found;
        now.extend(self.mail.find(&listed.query));
        let (ours, in_honcho) =
            forget_honcho::split(numbers.as_deref(), listed.found.len(), &listed.honcho);
        let (chosen, copied_since) = choose(&listed, &now, ours.as_deref())?;
        let (in_files, in_mail): (Vec<&Found>, Vec<&Found>) =
            chosen.into_iter().partition(|f| f.place.in_session_files());
        // The reminders and the inbox first: a reminder due meanwhile is then never
        // delivered with the text the logs are about to lose.
        let taken = self.mail.remove(&in_mail).map_err(|e| {
            plumbing::error!("session {session}: forget: {e}");
            Failure::Refused(format!("nothing was removed: {e}"))
        })?;
        let plans = plans_by_session(&in_files, &listed.query);
        // The Matrix events of the lines whose turns held the text (docs/matrix.md,
        // 'Forgetting'): redacted once the files no longer hold it.
        let mut redact: Vec<String> = Vec::new();
        for event in in_files.iter().filter_map(|f| f.event.clone()) {
            if !redact.contains(&event) {
                redact.push(event);
            }
        }
        // The owner's room messages among them, for the answer's count; the other keys
        // stand for events loopd itself showed (a reminder, an inbox message, `/allow`).
        let room_lines = redact.len();
        // An `/allow N` that wrote a record holding the text: the room events of that
        // command (its confirmation names what it fetched or set) are found by this.
        for f in &in_files {
            if let Some(n) = f.allowed {
                let key = format!("allow {} {n}", f.session);
                if !redact.contains(&key) {
                    redact.push(key);
                }
            }
        }
        // A heartbeat turn holding the text: the room event that showed its message, kept
        // under the turn once the inbox let the message go.
        for f in &in_files {
            if let Some(key) = &f.heartbeat {
                if !redact.contains(key) {
                    redact.push(key.clone());
                }
            }
        }
        // A reminder a removed note says was set or cancelled, though the book no longer
        // holds it: the room events of its command and confirmation hold its words.
        for f in &in_files {
            if let Some(n) = f.reminder {
                let key = format!("remind {n}");
                if !redact.contains(&key) {
                    redact.push(key);
                }
            }
        }
        // Reminders and inbox messages removed: the room events that showed them (the
        // owner's `/remind`, its confirmation, the delivered message) are found by these.
        redact.extend(taken.reminders.iter().map(|n| format!("remind {n}")));
        redact.extend(taken.inbox.iter().map(|n| format!("inbox {n}")));
        // A room's `/recall` and `/inbox` commands and answers are no records, nor is a
        // room's `/forget` list (which may quote Honcho's text): the rooms redact them at
        // every removal, so they hear of each one that removes anything, one naming no
        // room event, or only Honcho's entries, too (docs/matrix.md, 'Forgetting').
        let rooms_told = cfg.matrix.on()
            && (!in_files.is_empty() || !in_mail.is_empty() || !in_honcho.is_empty());
        // On disk before any file changes: a crash in the removal is finished at start,
        // its redactions with it.
        if rooms_told {
            if let Err(e) =
                crate::redactions::pending_write(&cfg.state_dir, &redact, asked_by.as_deref())
            {
                plumbing::error!("session {session}: forget: {e}");
            }
        }
        let mut removed = self.remove_planned(&cfg, plans, &listed.query, paused.as_ref())?;
        if rooms_told {
            self.notify
                .send(super::Event::Redact(redact.clone(), asked_by.clone()));
        }
        self.note_mail_forgotten(&cfg, session, &taken);
        // Logged where it was asked even when nothing of this session's own changed
        // (the copies were in other sessions, or only in Honcho): counts only.
        if !removed.touched.contains(session) && taken.lines().is_empty() {
            self.append_note(
                &cfg,
                session,
                format!(
                    "forgotten by the owner from this session: {} and {} in other sessions, {} in Honcho",
                    plural(removed.records, "record", "records"),
                    plural(removed.carries, "carried summary", "carried summaries"),
                    plural(in_honcho.len(), "entry", "entries")
                ),
            );
        }
        for line in taken.lines() {
            removed.reply.push('\n');
            removed.reply.push_str(&line);
        }
        drop(paused);
        let honcho_deleted = forget_honcho::delete(&cfg, &in_honcho);
        let honcho_kept = listed.honcho.len() - in_honcho.len();
        if let Some(r) = &self.honcho {
            for owner in &removed.touched {
                r.poke(owner.as_str());
            }
        }
        plumbing::info!(
            "session {session}: forgot {}, {}, {} and {} box-wide in {} ms",
            plural(removed.records, "record", "records"),
            plural(removed.carries, "carried summary", "carried summaries"),
            plural(taken.reminders.len(), "reminder", "reminders"),
            plural(taken.inbox.len(), "inbox message", "inbox messages"),
            started.elapsed().as_millis()
        );
        let mail = if taken.reminders.is_empty() && taken.inbox.is_empty() {
            String::new()
        } else {
            format!(
                ", {} and {}",
                plural(taken.reminders.len(), "reminder", "reminders"),
                plural(taken.inbox.len(), "inbox message", "inbox messages")
            )
        };
        let place = passed.place;
        let mut head = format!(
            "forgot {} and {}{mail} {place}:",
            plural(removed.records, "record", "records"),
            plural(removed.carries, "carried summary", "carried summaries")
        );
        if copied_since > 0 {
            head.push_str(&format!(
                " {copied_since} of them were copied since the list was shown and are removed too;"
            ));
        }
        // A session passed over is said first: the rest of the reply is about where the
        // text is gone, and that is not everywhere.
        let mut reply = match passed.said.strip_prefix('\n') {
            Some(first) => format!("{first}\n{head}{}", removed.reply),
            None => head + &removed.reply,
        };
        if let Some(said) = honcho_deleted {
            reply.push('\n');
            reply.push_str(&said);
        }
        if honcho_kept > 0 {
            reply.push_str(&format!(
                "\nHoncho: {honcho_kept} of the list's entries there were not chosen and stay; /forget with the words lists them again."
            ));
        }
        // Only with rooms to redact in: without Matrix no event ever held the text.
        if rooms_told {
            reply.push_str(&matrix_said(room_lines));
        }
        Ok(reply)
    }

    /// `session`'s last list, taken for a removal; with `numbers` past its end it stays,
    /// and the owner is told which.
    fn take_list(
        &mut self,
        session: &SessionId,
        numbers: Option<&[usize]>,
    ) -> Result<Listed, Failure> {
        let Some(listed) = self.forgets.last.remove(session) else {
            return Err(Failure::Refused(format!(
                "nothing listed to forget in session {session}; /forget QUERY lists it first"
            )));
        };
        let bad: Vec<String> = numbers
            .unwrap_or_default()
            .iter()
            .filter(|&&n| n > listed.total())
            .map(|n| n.to_string())
            .collect();
        if bad.is_empty() {
            return Ok(listed);
        }
        let reply = format!(
            "the list has {} entries; there is no {}",
            listed.total(),
            bad.join(", ")
        );
        self.forgets.last.insert(session.clone(), listed);
        Err(Failure::Refused(reply))
    }

    /// Writes every plan, then carries each out: its files, then the rest
    /// (`forget_rest`). Every session's plan is on disk before any file changes, so a
    /// crash part way finishes the removal in every session at the next start, not only
    /// in those already begun.
    fn remove_planned(
        &mut self,
        cfg: &proto::config::Config,
        plans: Vec<(SessionId, Plan)>,
        query: &str,
        paused: Option<&Paused>,
    ) -> Result<Removed, Failure> {
        for (owner, plan) in &plans {
            if let Err(e) = plan::write(&cfg.state_dir, plan) {
                plumbing::error!("session {owner}: forget: {e}");
                return Err(forget_failed(owner, e, true));
            }
        }
        let mut removed = Removed::default();
        for (owner, plan) in plans {
            abort_at("forget-after-plan");
            if let Err(e) = apply::files(&cfg.sessions_dir(), &plan) {
                plumbing::error!("session {owner}: forget: {e}");
                // The plan stays: the next start finishes what it names.
                return Err(forget_failed(&owner, e, true));
            }
            let places = self.forget_rest(&owner, &plan, "by the owner", Some(query), paused);
            let records: usize = plan.logs.iter().map(|l| l.lines.len()).sum();
            removed.records += records;
            removed.carries += plan.carries.len();
            removed.reply.push_str(&format!(
                "\nsession {owner}: {} and {}",
                plural(records, "record", "records"),
                plural(plan.carries.len(), "carried summary", "carried summaries")
            ));
            for p in places {
                removed.reply.push_str("\n- ");
                removed.reply.push_str(&p);
            }
            removed.touched.push(owner);
        }
        Ok(removed)
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
        let mut places = file_places(plan);
        // The open epoch's records and its log's handle are from before the rewrite.
        self.sessions.let_go(session);
        let epochs = plan.epochs();
        places.push(format!(
            "llama.cpp: {}; the next turn reads its whole prompt again",
            self.engine.forget(session, &epochs)
        ));
        let cfg = Arc::clone(self.engine.cfg());
        places.push(memoryd_forget(&cfg, session, &epochs));
        let (honcho, cursor_moved) = honcho_forget(&cfg, session, plan, words, paused);
        places.extend(honcho);
        self.note_forgotten(&cfg, session, plan, by);
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

    /// The session reopened from its rewritten files, with a `note` of the removal `by`
    /// whom, and shown so on `/status`.
    fn note_forgotten(
        &mut self,
        cfg: &proto::config::Config,
        session: &SessionId,
        plan: &Plan,
        by: &str,
    ) {
        let records: usize = plan.logs.iter().map(|l| l.lines.len()).sum();
        let note = format!(
            "forgotten {by}: {} and {} in epochs {:?}",
            plural(records, "record", "records"),
            plural(plan.carries.len(), "carried summary", "carried summaries"),
            plan.epochs()
        );
        self.sessions.open_existing(cfg, session);
        match self.sessions.get_or_create(cfg, session) {
            Ok(s) => {
                if let Err(e) = s.append(Record::Note {
                    time: proto::time::now_rfc3339(),
                    text: note,
                }) {
                    plumbing::error!("session {session}: forget: {e}");
                }
                self.board.set(
                    session.as_str(),
                    SessionView::of(s, cfg.channel.owner_class),
                );
            }
            Err(e) => plumbing::error!("session {session}: forget: reopening: {e}"),
        }
    }

    /// A `note` in `session` naming the reminders and inbox messages a removal took (by
    /// number, never their text).
    fn note_mail_forgotten(
        &mut self,
        cfg: &proto::config::Config,
        session: &SessionId,
        taken: &conversation::forget::mail::Taken,
    ) {
        let lines = taken.lines();
        if lines.is_empty() {
            return;
        }
        let note = format!("forgotten by the owner: {}", lines.join("; "));
        self.append_note(cfg, session, note);
    }

    /// Appends `text` to `session` as a `note`; a failure is logged (the removal itself
    /// is done).
    fn append_note(&mut self, cfg: &proto::config::Config, session: &SessionId, text: String) {
        match self.sessions.get_or_create(cfg, session) {
            Ok(s) => {
                if let Err(e) = s.append(Record::Note {
                    time: proto::time::now_rfc3339(),
                    text,
                }) {
                    plumbing::error!("session {session}: forget: {e}");
                }
            }
            Err(e) => plumbing::error!("session {session}: forget: {e}"),
        }
    }

    /// At start: every removal a crash cut short is finished from its plan.
    pub(super) fn finish_forgets(&mut self) {
        let cfg = Arc::clone(self.engine.cfg());
        // What was finished, in words, and the sessions it was in.
        let mut finished: Option<String> = None;
        let mut sessions: Vec<SessionId> = Vec::new();
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
                    let places = self.forget_rest(
                        &session,
                        &plan,
                        "by the owner (finished at start)",
                        None,
                        paused.as_ref(),
                    );
                    let records: usize = plan.logs.iter().map(|l| l.lines.len()).sum();
                    let done = finished.get_or_insert_with(|| {
                        "a removal a restart cut short was finished when loopd started:"
                            .to_string()
                    });
                    sessions.push(session.clone());
                    done.push_str(&format!(
                        "\nsession {session}: {} and {}",
                        plural(records, "record", "records"),
                        plural(plan.carries.len(), "carried summary", "carried summaries")
                    ));
                    for p in places {
                        done.push_str("\n- ");
                        done.push_str(&p);
                    }
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
        // The room events that showed the text are redacted from the list written before
        // the crash (`redactions`): the answer says so, as the removal's own would have.
        if let Some(mut done) = finished {
            if cfg.matrix.on() {
                done.push_str(&matrix_said(0));
            }
            for session in sessions {
                self.forgets.finished.insert(session, done.clone());
            }
        }
    }
}

/// What a removal took, box-wide.
#[derive(Default)]
struct Removed {
    records: usize,
    carries: usize,
    /// A paragraph a session: what was removed where.
    reply: String,
    /// The sessions whose files were rewritten.
    touched: Vec<SessionId>,
}

/// Whether two finds are the same record or carry, at the same place of the same log.
fn same_place(a: &Found, b: &Found) -> bool {
    a.session == b.session && a.place == b.place && a.offset == b.offset
}

/// What to remove of what a search finds `now`, and how many of those were copied since
/// the list was shown. `/forget all` takes every copy found now, also one made since the
/// list (memory in the turn copies text between sessions); `numbers` name entries of the
/// list, each checked to be where it was, since a removal at the wrong line would take
/// an unrelated record.
fn choose<'a>(
    listed: &Listed,
    now: &'a [Found],
    numbers: Option<&[usize]>,
) -> Result<(Vec<&'a Found>, usize), Failure> {
    let Some(numbers) = numbers else {
        let copied_since = now
            .iter()
            .filter(|f| !listed.found.iter().any(|l| same_place(l, f)))
            .count();
        return Ok((now.iter().collect(), copied_since));
    };
    // `take_list` refused numbers past the list's end, and the parser refuses 0.
    numbers
        .iter()
        .map(|&n| {
            let entry = listed.found.get(n.checked_sub(1)?)?;
            now.iter().find(|f| same_place(f, entry))
        })
        .collect::<Option<Vec<&Found>>>()
        .map(|chosen| (chosen, 0))
        .ok_or_else(|| Failure::Refused("the list is out of date; /forget QUERY again".to_string()))
}

/// One plan for each session the chosen finds are in, all stamped with the same time.
fn plans_by_session(chosen: &[&Found], query: &str) -> Vec<(SessionId, Plan)> {
    let mut by_session: BTreeMap<&str, Vec<&Found>> = BTreeMap::new();
    for f in chosen {
        by_session.entry(f.session.as_str()).or_default().push(f);
    }
    let time = proto::time::now_rfc3339();
    by_session
        .into_iter()
        .filter_map(|(name, chosen)| {
            let owner = SessionId::parse(name).ok()?;
            Some((owner, Plan::build(name, time.clone(), &chosen, query)))
        })
        .collect()
}

fn forget_failed(
    session: &SessionId,
    error: conversation::forget::ForgetError,
    part_way: bool,
) -> Failure {
    Failure::Forget {
        session: session.clone(),
        error,
        part_way,
    }
}
