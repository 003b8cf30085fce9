//! Settling a round's doubt before it posts: whether Honcho already holds the batch at
//! the cursor (docs/honcho.md, 'Nothing lost, nothing twice'). A post still waiting for
//! its answer holds the session, Honcho's answer lets a list be believed at once, and
//! otherwise a fence and [`COMMIT_WINDOW`](super::COMMIT_WINDOW) come first; a record
//! Honcho holds twice is warned about once.

use super::{Ctx, Cut, Doubt, RoundFailure, SessionSync};
use crate::client::CallError;
use crate::message::NextBatch;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

impl SessionSync {
    /// `plan` once what Honcho holds of it is known, without the messages it holds; until
    /// then a [`Cut`] saying when to look again. A post still waiting for its answer holds
    /// the session; one answered (by a status Honcho gives only once the create has ended)
    /// lets a list be believed at once; otherwise Honcho is asked to answer a write that
    /// passes the same session set-up (the fence), and a list is believed
    /// [`COMMIT_WINDOW`](super::COMMIT_WINDOW) after that answer.
    pub(super) fn settled(
        &mut self,
        ctx: &Ctx,
        target: &str,
        plan: NextBatch,
    ) -> Result<NextBatch, Cut> {
        loop {
            match &self.doubt {
                Doubt::Sure => return Ok(plan),
                Doubt::InFlight(f) => match f.landed() {
                    None => {
                        return Err(Cut::Failed(RoundFailure {
                            kind: "waiting".into(),
                            message: format!(
                                "a post of {} messages has waited {} s for Honcho's answer; nothing more is posted until it comes, since Honcho may still store it",
                                f.count,
                                f.since.elapsed().as_secs()
                            ),
                            retry_after: None,
                        }))
                    }
                    // Honcho's own answer comes once the create has committed or failed;
                    // a 5xx may be a proxy's, and no answer says nothing.
                    Some(Ok(())) => self.doubt = Doubt::Ended,
                    // A 408 is a timeout, not Honcho's end of the create: as any answer
                    // that leaves the outcome open, it goes through the fence.
                    Some(Err(e)) if !e.outcome_unknown() => self.doubt = Doubt::Ended,
                    Some(Err(_)) => self.doubt = Doubt::Unknown { fenced: None },
                },
                Doubt::Ended => return self.unheld(ctx, target, plan),
                Doubt::Start | Doubt::Unknown { fenced: None } => {
                    let peers = ctx.peers();
                    match ctx.client.fence(target, [peers.owner, peers.assistant]) {
                        Ok(()) => {}
                        // Refused before any set-up (a token that may not, say): the answer
                        // still says Honcho runs, and the window is counted from it.
                        Err(CallError::Status { status, .. }) if status < 500 => {}
                        Err(e) => return Err(Cut::Failed(RoundFailure::call(&e))),
                    }
                    self.doubt = Doubt::Unknown {
                        fenced: Some(Instant::now()),
                    };
                    return Err(Cut::Settle(ctx.commit_window));
                }
                Doubt::Unknown { fenced: Some(t) } => {
                    let ripe = *t + ctx.commit_window;
                    let now = Instant::now();
                    if now < ripe {
                        return Err(Cut::Settle(ripe - now));
                    }
                    return self.unheld(ctx, target, plan);
                }
            }
        }
    }

    /// Warns once per record Honcho holds more than once among `recent`, and counts it
    /// for `/status`.
    pub(super) fn warn_duplicates(&mut self, ctx: &Ctx, target: &str, recent: &[(String, String)]) {
        let name = &self.name;
        let mut held: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (record, id) in recent {
            held.entry(record).or_default().push(id);
        }
        for (record, ids) in held.iter().filter(|(_, ids)| ids.len() > 1) {
            if self.warned.insert(record.to_string()) {
                ctx.duplicates.set(ctx.duplicates.get() + 1);
                plumbing::warn!(
                    "honcho: session {name}: Honcho holds message {record} {} times (Honcho ids {}): a post was stored more than once; Honcho cannot delete a message. See them with POST {}/v3/workspaces/{}/sessions/{target}/messages/list and {{\"filters\": {{\"metadata\": {{\"boxmaker_record\": \"{record}\"}}}}}}",
                    ids.len(),
                    ids.join(", "),
                    ctx.client.base(),
                    ctx.client.workspace(),
                );
            }
        }
    }

    /// `plan` without the messages Honcho holds, asking it for the session's newest
    /// messages (one request) and believing the answer.
    fn unheld(&mut self, ctx: &Ctx, target: &str, plan: NextBatch) -> Result<NextBatch, Cut> {
        let name = self.name.clone();
        let recent = ctx
            .client
            .recent(target, &name)
            .map_err(|e| RoundFailure::call(&e))?;
        self.warn_duplicates(ctx, target, &recent);
        let held: BTreeSet<&str> = recent.iter().map(|(r, _)| r.as_str()).collect();
        let mut kept = NextBatch {
            batch: Vec::new(),
            ends: Vec::new(),
            after: plan.after,
        };
        let mut skipped = 0;
        for (m, end) in plan.batch.into_iter().zip(plan.ends) {
            if held.contains(m.record.as_str()) {
                skipped += 1;
            } else {
                kept.batch.push(m);
                kept.ends.push(end);
            }
        }
        if skipped > 0 {
            plumbing::notice!(
                "honcho: session {name}: Honcho already holds {skipped} of the {} messages at the cursor; only the others are posted",
                skipped + kept.batch.len()
            );
        }
        self.doubt = Doubt::Sure;
        self.verify = true;
        // The post marker stays until the caller has stored the cursor past what Honcho
        // holds: a cursor that cannot be stored (a full disk) or a stop between the two
        // must leave the marker, or the next start posts the batch again.
        Ok(kept)
    }
}
