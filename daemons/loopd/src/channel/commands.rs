//! The channel's commands (docs/channel.md): parsing a `/` line, the help text and `/session`'s
//! name check. The two commands that ask other servers run in `probes`.

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
    /// `/forget QUERY`, `/forget N…` or `/forget all`.
    Forget(crate::forget::Ask),
    /// `/remind`, `/remind WHEN TEXT` or `/remind cancel N`: the rest of the line.
    Remind(String),
    Inbox,
    /// `/testclock SECONDS`: moves the reminders' clock forward (a test hook).
    #[cfg(feature = "testhooks")]
    TestClock(Result<i64, String>),
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
        "forget" => Command::Forget(crate::forget::Ask::parse(arg)),
        "remind" => Command::Remind(arg.to_string()),
        "inbox" => Command::Inbox,
        #[cfg(feature = "testhooks")]
        "testclock" => Command::TestClock(
            arg.trim_start_matches('+')
                .parse()
                .map_err(|_| arg.to_string()),
        ),
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
/forget QUERY    list the records of every session holding QUERY (in quotes: always a query, digits too)
/forget more     show the next page of that list
/forget N… | all remove those records (and every copy) for good
/remind WHEN TEXT  remind you at WHEN: 17:30, tomorrow 9:00, in 2h, 2026-12-24 09:00
/remind [cancel N] list this session's reminders, or cancel reminder N
/inbox           show the last messages sent while nobody was here to read them
/quit            close this connection
Lines that start with a middle dot and a space are loopd's, showing tool activity;
the assistant's text never starts a line that way or spells loopd's error mark.";

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
        use crate::forget::Ask;
        assert_eq!(
            parse("/forget my bank pin"),
            Some(Command::Forget(Ask::List("my bank pin".into())))
        );
        assert_eq!(
            parse("/forget 1 3,4"),
            Some(Command::Forget(Ask::Remove(vec![1, 3, 4])))
        );
        assert_eq!(parse("/forget all"), Some(Command::Forget(Ask::All)));
        assert_eq!(
            parse("/remind in 2h tea"),
            Some(Command::Remind("in 2h tea".into()))
        );
        assert_eq!(parse("/remind"), Some(Command::Remind(String::new())));
        assert_eq!(parse("/inbox"), Some(Command::Inbox));
        assert_eq!(
            parse("/forget 0"),
            Some(Command::Forget(Ask::List("0".into())))
        );
    }
}
