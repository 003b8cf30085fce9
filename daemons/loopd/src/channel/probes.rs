//! The two commands that ask other servers — `/status` (llama.cpp, memoryd and the status
//! board) and `/recall` (memoryd) — each on a short-lived thread of its own, so neither the
//! poll loop nor the turn worker waits on them. The reply comes back as the job's `Done`.

use crate::llama::Client;
use crate::status::{context_text, Board, SessionView};
use crate::worker::{JobId, Notifier};
use proto::config::Config;
use proto::SessionId;

/// Runs `/status` on its own thread and sends the reply as job `id`'s `Done`.
pub fn spawn_status(id: JobId, cfg: &Config, session: SessionId, board: Board, notify: Notifier) {
    let client = Client::new(&cfg.llama);
    let memory = cfg.memory.socket.clone();
    let n_ctx = cfg.expect.n_ctx;
    spawn(notify.clone(), id, move || {
        let mut out = format!("session: {session}\n");
        match board.get(session.as_str()) {
            Some(SessionView::Open {
                epoch,
                records,
                usage,
                label,
            }) => {
                out.push_str(&format!("epoch: {epoch} ({records} records)\n"));
                out.push_str(&format!(
                    "context: {}\n",
                    context_text(usage.as_ref(), n_ctx)
                ));
                out.push_str(&format!("label: {label}\n"));
            }
            Some(SessionView::New) => {
                out.push_str("epoch: 0 (new: nothing written yet)\n");
                out.push_str(&format!("context: {}\n", context_text(None, n_ctx)));
                out.push_str("label: public\n");
            }
            Some(SessionView::Broken(e)) => out.push_str(&format!("log: cannot be opened: {e}\n")),
            None => out.push_str("epoch: not opened yet\n"),
        }
        match client.health() {
            Ok(()) => out.push_str(&format!("llama.cpp: reachable at {}\n", client.base_url())),
            Err(e) => out.push_str(&format!("llama.cpp: unreachable: {e}\n")),
        }
        match crate::memory::status(&memory) {
            Ok(s) => out.push_str(&format!(
                "memoryd: reachable at {} ({} logs, {} rows)",
                memory.display(),
                s.logs,
                s.rows
            )),
            Err(crate::memory::MemoryError::Refused(m)) => out.push_str(&format!(
                "memoryd: reachable at {}, but: {m}",
                memory.display()
            )),
            Err(e) => out.push_str(&format!("memoryd: unreachable: {e}")),
        }
        (out, true)
    });
}

/// Runs `/recall QUERY` against memoryd on its own thread.
pub fn spawn_recall(id: JobId, cfg: &Config, query: String, notify: Notifier) {
    let memory = cfg.memory.clone();
    spawn(notify.clone(), id, move || {
        match crate::memory::recall(&memory, &query) {
            Ok(hits) => (crate::memory::render(&hits), true),
            Err(e) => (format!("error: memory unavailable: {e}"), false),
        }
    });
}

fn spawn(notify: Notifier, id: JobId, f: impl FnOnce() -> (String, bool) + Send + 'static) {
    let fallback = notify.clone();
    let spawned = std::thread::Builder::new()
        .name("command".into())
        .spawn(move || {
            let (reply, ok) = f();
            notify.done(id, reply, ok);
        });
    if let Err(e) = spawned {
        fallback.done(id, format!("error: cannot start a thread: {e}"), false);
    }
}
