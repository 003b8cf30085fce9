//! Log lines on stderr: `loopd: …` or `memoryd: …`, with the `<N>` syslog priority prefix
//! when stderr is the journal (`JOURNAL_STREAM` set), so `journalctl -p warning` filters
//! them. Each line goes out in one `write` so lines from two threads never interleave.
//!
//! Log lines quote text from outside (a server's error, a path, a status line), so every
//! one is written through the rule every output shares (`proto::shown::one_line`,
//! docs/channel.md, 'What the owner sees is true'): no control character, nothing hidden,
//! no newline reaches the journal as itself.

use std::io::Write;
use std::sync::OnceLock;

static NAME: OnceLock<&'static str> = OnceLock::new();
static JOURNAL: OnceLock<bool> = OnceLock::new();

/// Syslog priorities used here, as journald reads them from the `<N>` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error = 3,
    Warning = 4,
    Notice = 5,
    Info = 6,
}

/// Names the program for every later line. Call once at the top of `main`.
pub fn init(name: &'static str) {
    let _ = NAME.set(name);
    let _ = JOURNAL.set(std::env::var_os("JOURNAL_STREAM").is_some());
}

/// Formats one line without writing it; the tests and `write` share it.
pub fn format_line(level: Level, journal: bool, name: &str, msg: &str) -> String {
    // ESC in a quoted status line would act on the terminal that reads the journal, and a
    // newline would start an entry without the prefix (one that can pass for another
    // program's): each is shown as its escape, and the message stays one line.
    let msg = proto::shown::one_line(msg);
    if journal {
        format!("<{}>{name}: {msg}\n", level as u8)
    } else {
        format!("{name}: {msg}\n")
    }
}

pub fn write(level: Level, msg: &str) {
    let name = NAME.get().copied().unwrap_or("boxmaker");
    let journal = JOURNAL.get().copied().unwrap_or(false);
    let line = format_line(level, journal, name, msg);
    // If stderr is gone there is nowhere left to report that, so the error is dropped.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Error, &format!($($arg)*)) };
}

#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Warning, &format!($($arg)*)) };
}

#[macro_export]
macro_rules! notice {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Notice, &format!($($arg)*)) };
}

#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => { $crate::log::write($crate::log::Level::Info, &format!($($arg)*)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_appears_only_for_the_journal() {
        assert_eq!(
            format_line(Level::Warning, true, "loopd", "x"),
            "<4>loopd: x\n"
        );
        assert_eq!(
            format_line(Level::Error, false, "memoryd", "y"),
            "memoryd: y\n"
        );
    }

    #[test]
    fn a_message_stays_on_one_line() {
        assert_eq!(
            format_line(Level::Info, false, "loopd", "a\nb"),
            "loopd: a\\u{a}b\n"
        );
    }

    /// Regression: a server's malformed status line, quoted by the HTTP client's error,
    /// put a raw ESC sequence into the journal.
    #[test]
    fn control_characters_from_outside_reach_the_journal_as_escapes() {
        assert_eq!(
            format_line(
                Level::Warning,
                true,
                "loopd",
                "Bad Status: unable to parse status as u16 (\u{1b}[J)\r\u{202e}"
            ),
            "<4>loopd: Bad Status: unable to parse status as u16 (\\u{1b}[J)\\u{d}\\u{202e}\n"
        );
    }
}
