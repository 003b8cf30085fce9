//! What every model call on an epoch shares, below both `turn` and `compact`: the replay
//! of an epoch into messages (`replay`), the one character cap, whether calls ask for the
//! model's thinking, and `TurnCtx` (the config and client a call needs). Nothing here
//! imports `turn`, `compact` or `engine`, so those point down at it and never at each
//! other.

pub(crate) mod replay;

use llama::ModelServer;
use proto::config::Config;

/// Model calls ask for the model's thinking: the owner's questions deserve it, and
/// llama.cpp keeps the reasoning out of `content`, so it is neither streamed nor
/// replayed. The summary calls send the same flag so their prompt prefix is the turns'.
pub(crate) const THINKING: bool = true;

/// What a model call needs besides its session.
pub struct TurnCtx<'a> {
    pub cfg: &'a Config,
    /// The model server: llama.cpp in the daemon, a script in the engine's unit tests.
    pub client: &'a dyn ModelServer,
    /// The reminders' book the `remind` tool writes to; `None` where no reminder can be
    /// set (the engine's unit tests).
    pub reminders: Option<&'a remind::Shared>,
}

/// The first `n` characters of `s`, never splitting a character. It borrows, so the
/// replay can cap every tool result of a long epoch without copying it. This is the one
/// character cap in loopd: the replay's tool results, the tool summaries and the carried
/// summary are all cut by it.
pub(crate) fn cap_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((end, _)) => &s[..end],
        None => s,
    }
}

/// The last `n` characters of `s`, never splitting a character: what the fallback
/// summary keeps when the epoch's user texts are too long (docs/turn.md, the newest kept).
pub(crate) fn cap_chars_from_end(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((start, _)) => &s[start..],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_chars_keeps_multibyte_characters_whole() {
        assert_eq!(cap_chars("日本語", 2), "日本");
        assert_eq!(cap_chars("abc", 10), "abc");
        assert_eq!(cap_chars("héllo", 2), "hé");
        assert_eq!(cap_chars("héllo", 0), "");
        assert_eq!(cap_chars("héllo", 5), "héllo");
    }

    #[test]
    fn cap_chars_from_end_keeps_the_last_characters_whole() {
        assert_eq!(cap_chars_from_end("日本語", 2), "本語");
        assert_eq!(cap_chars_from_end("abc", 10), "abc");
        assert_eq!(cap_chars_from_end("héllo", 4), "éllo");
        assert_eq!(cap_chars_from_end("héllo", 0), "");
        assert_eq!(cap_chars_from_end("héllo", 5), "héllo");
        assert_eq!(cap_chars_from_end("", 3), "");
    }
}
