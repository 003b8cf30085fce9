//! A log rewrite as the reporter sees it: `/forget` replaces whole lines of an epoch's log
//! by `note` lines of another length (docs/forgetting.md), so every later line of that
//! epoch starts at another byte. The reporter's cursor names a byte offset, so it is
//! moved by the same amounts; this module owns that arithmetic and the one write of the
//! moved cursor.
//!
//! **Once only.** The cursor is moved while the forget's plan file exists, and a plan cut
//! short by a crash is applied again at the next start, so the move must not be made
//! twice: the moved cursor is stored with the rewrite's id (`moved_by`), in the same
//! atomic write, and a cursor already carrying that id is left alone. The id is dropped
//! by the reporter's next write, which only comes once the plan is gone (the reporter
//! does not report a session while its forget plan exists, see `sync`).

use super::cursor::{self, Cursor, CursorError};
use std::collections::BTreeMap;
use std::path::Path;

/// One replaced line, in the log as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replaced {
    /// Where the line started.
    pub offset: u64,
    /// Its length, newline included, before and after.
    pub old_len: u64,
    pub new_len: u64,
}

/// Every line one rewrite replaced, per epoch, and the rewrite's id (unique per session:
/// the forget's time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewrite {
    pub id: String,
    pub epochs: BTreeMap<u64, Vec<Replaced>>,
}

impl Rewrite {
    /// Where a line that started at `offset` of `epoch`'s log starts after the rewrite.
    /// A replaced line keeps its start; lines after it move by the change of its length.
    pub fn map(&self, epoch: u64, offset: u64) -> u64 {
        let Some(lines) = self.epochs.get(&epoch) else {
            return offset;
        };
        let delta: i128 = lines
            .iter()
            .filter(|r| r.offset < offset)
            .map(|r| i128::from(r.new_len) - i128::from(r.old_len))
            .sum();
        u64::try_from(i128::from(offset) + delta).unwrap_or(0)
    }

    /// Whether the line at `offset` of `epoch` was replaced.
    pub fn replaced(&self, epoch: u64, offset: u64) -> bool {
        self.epochs
            .get(&epoch)
            .is_some_and(|lines| lines.iter().any(|r| r.offset == offset))
    }

    /// `c` after the rewrite. When the line it rests on was replaced, the turn it counted
    /// messages of is gone (its `user` record is a note now), so none of it is done.
    pub fn cursor(&self, c: Cursor) -> Cursor {
        Cursor {
            epoch: c.epoch,
            offset: self.map(c.epoch, c.offset),
            done: if self.replaced(c.epoch, c.offset) {
                0
            } else {
                c.done
            },
        }
    }
}

/// Moves the stored cursor of `session` through `rewrite`, once: a cursor already moved by
/// it is left as it is. Returns the cursor as it is now (`None`: the session was never
/// reported). Only called while the reporter is paused or not running, so the file has
/// one writer at a time.
pub fn move_cursor(
    state_dir: &Path,
    session: &str,
    rewrite: &Rewrite,
) -> Result<Option<Cursor>, CursorError> {
    let path = cursor::path(state_dir, session);
    let Some((c, moved_by)) = cursor::load_marked(&path)? else {
        return Ok(None);
    };
    if moved_by.as_deref() == Some(rewrite.id.as_str()) {
        return Ok(Some(c));
    }
    let moved = rewrite.cursor(c);
    cursor::store_marked(&path, &moved, Some(&rewrite.id))?;
    Ok(Some(moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite() -> Rewrite {
        let mut r = Rewrite {
            id: "2026-12-01T10:00:00.000Z".into(),
            ..Rewrite::default()
        };
        r.epochs.insert(
            1,
            vec![
                Replaced {
                    offset: 100,
                    old_len: 50,
                    new_len: 80,
                },
                Replaced {
                    offset: 300,
                    old_len: 200,
                    new_len: 90,
                },
            ],
        );
        r
    }

    #[test]
    fn offsets_move_by_the_length_changes_before_them_and_only_in_their_epoch() {
        let r = rewrite();
        assert_eq!(r.map(1, 0), 0);
        assert_eq!(r.map(1, 100), 100, "a replaced line keeps its start");
        assert_eq!(r.map(1, 150), 180);
        assert_eq!(r.map(1, 300), 330);
        assert_eq!(r.map(1, 500), 420);
        assert_eq!(r.map(0, 500), 500);
        assert_eq!(r.map(2, 500), 500);
    }

    #[test]
    fn a_cursor_on_a_replaced_line_counts_nothing_of_it_done() {
        let r = rewrite();
        let on = Cursor {
            epoch: 1,
            offset: 300,
            done: 1,
        };
        assert_eq!(
            r.cursor(on),
            Cursor {
                epoch: 1,
                offset: 330,
                done: 0
            }
        );
        let after = Cursor {
            epoch: 1,
            offset: 150,
            done: 1,
        };
        assert_eq!(r.cursor(after).done, 1);
    }

    #[test]
    fn moving_the_stored_cursor_twice_by_the_same_rewrite_moves_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = rewrite();
        assert_eq!(move_cursor(dir.path(), "main", &r).unwrap(), None);
        let path = cursor::path(dir.path(), "main");
        let c = Cursor {
            epoch: 1,
            offset: 500,
            done: 0,
        };
        cursor::store(&path, &c).unwrap();
        let once = move_cursor(dir.path(), "main", &r).unwrap();
        let twice = move_cursor(dir.path(), "main", &r).unwrap();
        assert_eq!(once.map(|c| c.offset), Some(420));
        assert_eq!(twice, once);
        assert_eq!(cursor::load(&path).unwrap(), once);
        // The reporter's next write drops the mark: a later forget moves it again.
        cursor::store(&path, &once.unwrap()).unwrap();
        let later = Rewrite {
            id: "2026-12-01T11:00:00.000Z".into(),
            ..r
        };
        assert_eq!(
            move_cursor(dir.path(), "main", &later)
                .unwrap()
                .map(|c| c.offset),
            Some(340)
        );
    }
}
