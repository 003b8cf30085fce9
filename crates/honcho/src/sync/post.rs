//! Posting one planned batch of a round: each part on its own thread (`flight`), the
//! cursor stored after every prefix Honcho took, and a batch Honcho refused (413, 422)
//! narrowed in halves down to the message at fault, which is passed over or, when too
//! long, cut smaller and sent again.

use super::{halt, AfterPost, Ctx, Doubt, Outcome, RoundFailure, SessionSync};
use crate::client::CallError;
use crate::flight::{self, Sent};
use crate::message::NextBatch;
use crate::refused::{rejection_line, sort_rejection, Rejection};
use std::path::Path;
use std::time::Duration;

/// How posting one planned batch ended, when Honcho took or passed over all of it.
pub(super) enum Posted {
    /// Every message is either held by Honcho or passed over for good.
    All(usize),
    /// Honcho refused a piece as too long: `ctx.max_chars` is lower now, and the rest of
    /// the batch is planned again from the cursor. The count is what went out before.
    Recut(usize),
    Halted(Outcome),
}

impl SessionSync {
    /// Posts `plan.batch`, narrowing a refused batch down to the message at fault: halves
    /// are posted in order, so the cursor only ever moves past a prefix Honcho took or
    /// passed over. A batch that goes through whole costs one request, as before.
    pub(super) fn post_plan(
        &mut self,
        ctx: &Ctx,
        target: &str,
        cursor_path: &Path,
        plan: &NextBatch,
    ) -> Result<Posted, RoundFailure> {
        let name = self.name.clone();
        let n = plan.batch.len();
        let mut posted = 0;
        // Ranges still to post, the next one on top.
        let mut todo = vec![(0, n)];
        while let Some((a, b)) = todo.pop() {
            if let Some(o) = halt(ctx) {
                return Ok(Posted::Halted(o));
            }
            let part = &plan.batch[a..b];
            flight::mark(ctx.state_dir(), &name).map_err(|e| RoundFailure::local(e.to_string()))?;
            let wake = ctx.wake.clone();
            let woken = name.clone();
            let sent = flight::post(
                &ctx.client,
                target,
                &name,
                part,
                ctx.request_timeout,
                move || {
                    let _ = wake.send(crate::Msg::Landed(woken));
                },
            );
            let answer = match sent {
                Sent::Answered(answer) => answer,
                Sent::Waiting(f) => {
                    let count = f.count;
                    self.doubt = Doubt::InFlight(f);
                    return Err(waiting(count, ctx.request_timeout));
                }
            };
            match answer {
                Ok(()) => {
                    posted += part.len();
                    match ctx.after_post {
                        AfterPost::Continue => {}
                        #[cfg(any(test, feature = "test-support"))]
                        AfterPost::ExitThread => return Ok(Posted::Halted(Outcome::Exit)),
                        AfterPost::Abort => std::process::abort(),
                    }
                    if b < n {
                        self.save(cursor_path, plan.ends[b - 1])?;
                    }
                }
                Err(CallError::Status {
                    status: status @ (413 | 422),
                    ..
                }) if part.len() > 1 => {
                    let mid = a + part.len() / 2;
                    plumbing::info!(
                        "honcho: session {name}: Honcho refused a batch of {} messages with HTTP {status}; sending it in halves to find the one at fault",
                        part.len()
                    );
                    todo.push((mid, b));
                    todo.push((a, mid));
                }
                Err(CallError::Status {
                    status: status @ (413 | 422),
                    body,
                    retry_after,
                }) => {
                    let m = &plan.batch[a];
                    match sort_rejection(status, &body, m.content.chars().count()) {
                        Rejection::TooLong(limit) => {
                            plumbing::warn!(
                                "honcho: session {name}: Honcho refused message {} ({} characters) as too long; texts are cut to {limit} characters from now on",
                                m.id,
                                m.content.chars().count()
                            );
                            ctx.max_chars.set(limit.min(ctx.max_chars.get()));
                            return Ok(Posted::Recut(posted));
                        }
                        Rejection::Message => {
                            plumbing::warn!("{}", rejection_line(&name, m, status, &body));
                            if b < n {
                                self.save(cursor_path, plan.ends[a])?;
                            }
                        }
                        Rejection::Request => {
                            return Err(RoundFailure::call(&CallError::Status {
                                status,
                                body,
                                retry_after,
                            }))
                        }
                    }
                }
                Err(e) => {
                    // Honcho may have stored the batch before the answer was lost, or may
                    // still be storing it, so the next round checks with it first. Nothing
                    // sent, or refused before storing: nothing to check.
                    if e.outcome_unknown() {
                        self.doubt = Doubt::Unknown { fenced: None };
                    } else {
                        flight::unmark(ctx.state_dir(), &name);
                    }
                    return Err(RoundFailure::call(&e));
                }
            }
        }
        Ok(Posted::All(posted))
    }
}

/// The failure a round ends with when a post was not answered within `timeout`: it keeps
/// waiting on its own thread, and the session with it.
fn waiting(count: usize, timeout: Duration) -> RoundFailure {
    RoundFailure {
        kind: "waiting".into(),
        message: format!(
            "Honcho has not answered a post of {count} messages within {:.1} s; loopd waits for its answer and posts nothing more of this session until it comes, since Honcho may still store it",
            timeout.as_secs_f32()
        ),
        retry_after: None,
    }
}
