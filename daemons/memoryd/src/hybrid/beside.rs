//! The two halves of a recall searched at the same time. The vector side (embedding the
//! question, scanning the codes) works on memory alone and the words' search on the
//! database connection the loop's thread owns, so they share nothing and can run side by
//! side: a recall then waits for the slower half instead of for both
//! (docs/memoryd.md, "What a recall costs").

use std::thread;

/// `meaning` on a thread of its own and `words` on this one; both results. The thread is
/// joined before this returns, so a recall holds one thread more than the loop, for no
/// longer than its own question takes to embed and search: the loop waits as long as the
/// slower half, where it waited for their sum. When no thread can be started (the system
/// is out of them), `meaning` runs here after `words`, as it always did. A panic on the
/// thread is a panic of the recall, as it was on the loop's thread.
pub(super) fn beside<M: Send, W>(
    meaning: impl Fn() -> M + Sync,
    words: impl FnOnce() -> W,
) -> (M, W) {
    thread::scope(|scope| {
        let spawned = thread::Builder::new()
            .name("memoryd-meaning".into())
            .spawn_scoped(scope, &meaning);
        let found = words();
        let meant = match spawned {
            Ok(handle) => match handle.join() {
                Ok(meant) => meant,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(e) => {
                plumbing::warn!(
                    "no thread for a recall's meaning half ({e}); it runs after the words"
                );
                meaning()
            }
        };
        (meant, found)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::time::Duration;

    /// Longer than either half could take here; only reached when they do not overlap.
    const WAIT: Duration = Duration::from_secs(10);

    /// Says it started, then waits for the other half to say so too.
    fn meet(tell: &Sender<()>, hear: &Receiver<()>) -> bool {
        tell.send(()).is_ok() && hear.recv_timeout(WAIT).is_ok()
    }

    /// Both halves run at once: each hears from the other while it is still running,
    /// which cannot happen when one runs after the other.
    #[test]
    fn the_halves_run_at_the_same_time() {
        let (to_words, words_hear) = channel();
        let (to_meaning, meaning_hears) = channel();
        let meaning_hears = std::sync::Mutex::new(meaning_hears);
        let (meaning, words) = beside(
            || {
                let hear = meaning_hears.lock().unwrap();
                (
                    meet(&to_words, &hear),
                    thread::current().name().map(str::to_owned),
                )
            },
            || meet(&to_meaning, &words_hear),
        );
        assert_eq!(meaning, (true, Some("memoryd-meaning".to_owned())));
        assert!(words);
    }
}
