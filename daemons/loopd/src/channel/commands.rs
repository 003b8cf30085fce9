//! The channel's commands (SPEC §5): parsing a `/` line, the help text, and the two
//! commands that ask other servers — `/status` and `/recall` — which run on a short-lived
//! thread of their own so neither the poll loop nor the turn worker waits on them.

use crate::llama::Client;
use crate::status::{context_text, Board, SessionView};
use crate::worker::{JobId, Notifier};
use proto::config::Config;
use proto::SessionId;

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Status,
    Compact,
    /// `/session` alone shows the current session; with a name it switches.
    Session(Option<String>),
    Recall(String),
    /// `/allow N`: the call number, or the text that is not one.
    Allow(Result<u64, String>),
    Quit,
    Unknown(String),
}

/// The command on `line`, or `None` when the line is a message.
pub fn parse(line: &str) -> Option<Command> {
    let rest = line.strip_prefix('/')?;
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    Some(match word {
        "help" => Command::Help,
        "status" => Command::Status,
        "compact" => Command::Compact,
        "session" => Command::Session((!arg.is_empty()).then(|| arg.to_string())),
        "recall" => Command::Recall(arg.to_string()),
        "allow" => Command::Allow(arg.parse().map_err(|_| arg.to_string())),
        "quit" => Command::Quit,
        _ => Command::Unknown(word.to_string()),
    })
}

pub const HELP: &str = "\
Each line you send is a message to the assistant; its reply ends with a line holding only `.`.
Lines starting with / are commands:
/help            this text
/status          session, epoch, context used, label, llama.cpp and memoryd reachability
/session [NAME]  show this connection's session, or switch to NAME
/recall QUERY    search memory directly, without the model
/compact         start a new epoch now, carrying a summary
/allow N         fetch the url of refused call N, as if you had sent it
/quit            close this connection
Tool activity shows as lines starting with `· `.";

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

/// Validates a `/session` name.
pub fn session_name(name: &str) -> Result<SessionId, String> {
    SessionId::parse(name).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(
            parse("/recall  tea time "),
            Some(Command::Recall("tea time".into()))
        );
        assert_eq!(parse("/session"), Some(Command::Session(None)));
        assert_eq!(
            parse("/session work"),
            Some(Command::Session(Some("work".into())))
        );
        assert_eq!(parse("/frob x"), Some(Command::Unknown("frob".into())));
        assert_eq!(parse("/allow 7"), Some(Command::Allow(Ok(7))));
        assert_eq!(parse("/allow x"), Some(Command::Allow(Err("x".into()))));
    }
}
