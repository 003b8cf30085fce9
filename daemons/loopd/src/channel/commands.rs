//! The channel's commands (docs/channel.md): parsing a line into a well-formed command
//! or the words of what is wrong with it, and the help text. What the worker runs (a
//! plain line, `/session NAME`, `/compact`, `/allow N`, `/forget …`) is one
//! `crate::worker::Command`, parsed by its own `parse`; the two commands that ask other
//! servers run in `probes`; the rest the channel answers on the spot.

use crate::worker;

/// A line whose arguments are well formed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    Help,
    Status,
    /// `/session` alone: shows the current session.
    Session,
    /// `/recall QUERY`, never empty.
    Recall(String),
    /// `/remind`, `/remind WHEN TEXT` or `/remind cancel N`: the rest of the line.
    Remind(String),
    Inbox,
    /// `/testclock SECONDS`: moves the reminders' clock forward (a test hook).
    #[cfg(feature = "testhooks")]
    TestClock(i64),
    Quit,
    /// A job for the worker: a message, or a command that acts on a session.
    Worker(worker::Command),
}

impl Command {
    /// Whether running it leaves something behind besides its reply block, and may run
    /// with nobody to read that: a turn, a session switch, a compaction, an allowed call,
    /// a reminder set or cancelled, a `/quit` (which ends what follows it). A line of a
    /// client that went away runs only then: a reply nobody reads is work for nothing,
    /// and `/inbox` would count messages as shown to a connection that is not there.
    pub(crate) fn acts(&self) -> bool {
        match self {
            // Not `/forget`, list or removal: a list is kept per session, so a departed
            // client's list would replace a live client's, and a removal's answer (what
            // the homeserver and Honcho keep) is for someone to read. The text stays
            // until the owner asks again, which takes nothing away.
            Command::Worker(worker::Command::Forget(_)) => false,
            Command::Worker(_) | Command::Quit => true,
            Command::Remind(arg) => !arg.trim().is_empty(),
            #[cfg(feature = "testhooks")]
            Command::TestClock(_) => true,
            Command::Help
            | Command::Status
            | Command::Session
            | Command::Recall(_)
            | Command::Inbox => false,
        }
    }
}

/// What `line` asks: a command, or a message (a line not starting with `/`) as the
/// worker's turn. A blank line, an unknown command or a malformed argument is the reason,
/// in words, for the error line.
pub(crate) fn parse(line: &str) -> Result<Command, String> {
    if line.trim().is_empty() {
        return Err("empty line; /help lists the commands".into());
    }
    let Some(rest) = line.strip_prefix('/') else {
        return Ok(Command::Worker(worker::Command::Turn(line.to_string())));
    };
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    if let Some(asked) = worker::Command::parse(word, arg) {
        return asked.map(Command::Worker);
    }
    match word {
        "help" => Ok(Command::Help),
        "status" => Ok(Command::Status),
        "session" => Ok(Command::Session),
        "recall" if arg.is_empty() => Err("/recall needs a query".into()),
        "recall" => Ok(Command::Recall(arg.to_string())),
        "remind" => Ok(Command::Remind(arg.to_string())),
        "inbox" => Ok(Command::Inbox),
        #[cfg(feature = "testhooks")]
        "testclock" => arg
            .trim_start_matches('+')
            .parse()
            .map(Command::TestClock)
            .map_err(|_| format!("/testclock needs seconds, got {arg:?}")),
        "quit" => Ok(Command::Quit),
        _ => Err(format!("unknown command /{word}; /help lists the commands")),
    }
}

pub(crate) const HELP: &str = "\
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

#[cfg(test)]
mod tests {
    use super::*;
    use conversation::forget::Ask;
    use proto::SessionId;
    use worker::Command::{Allow, Forget, Open, Turn};

    fn ok(line: &str) -> Option<Command> {
        match parse(line).unwrap() {
            Command::Worker(Turn(_)) => None,
            command => Some(command),
        }
    }

    fn asked(command: worker::Command) -> Option<Command> {
        Some(Command::Worker(command))
    }

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(parse("hello"), Ok(Command::Worker(Turn("hello".into()))));
        assert_eq!(ok("/help"), Some(Command::Help));
        assert_eq!(
            ok("/recall  tea time "),
            Some(Command::Recall("tea time".into()))
        );
        assert_eq!(ok("/session"), Some(Command::Session));
        assert_eq!(
            ok("/session work"),
            asked(Open(SessionId::parse("work").unwrap()))
        );
        assert_eq!(ok("/allow 7"), asked(Allow(7)));
        assert_eq!(
            ok("/forget my bank pin"),
            asked(Forget(Ask::List("my bank pin".into())))
        );
        assert_eq!(
            ok("/forget 1 3,4"),
            asked(Forget(Ask::Remove(vec![1, 3, 4])))
        );
        assert_eq!(ok("/forget all"), asked(Forget(Ask::All)));
        assert_eq!(
            ok("/remind in 2h tea"),
            Some(Command::Remind("in 2h tea".into()))
        );
        assert_eq!(ok("/remind"), Some(Command::Remind(String::new())));
        assert_eq!(ok("/inbox"), Some(Command::Inbox));
        assert_eq!(ok("/forget 0"), asked(Forget(Ask::List("0".into()))));
    }

    #[test]
    fn a_malformed_command_is_refused_by_the_parser_with_what_is_wrong() {
        let refused = |line: &str| parse(line).unwrap_err();
        assert_eq!(
            refused("/frob x"),
            "unknown command /frob; /help lists the commands"
        );
        assert_eq!(
            refused("/allow x"),
            "/allow needs the number of a refused call, got \"x\""
        );
        assert_eq!(refused("/recall"), "/recall needs a query");
        assert_eq!(
            refused("/forget"),
            "/forget needs a query, numbers from its list, or all"
        );
        assert_eq!(
            refused("/forget \"\""),
            "/forget needs a query, numbers from its list, or all"
        );
        assert!(refused("/session Work").contains("\"Work\""));
        assert_eq!(refused(" \t"), "empty line; /help lists the commands");
    }
}
