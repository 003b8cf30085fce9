//! The words of long rows kept between recalls (docs/memoryd.md, 'Relevance by the best
//! passage'): a long row's best passage is found from its words, and cutting a pasted
//! document of thousands of words into words again on every recall was most of what a
//! recall among such rows cost, when an owner asks about the same documents line after
//! line (docs/measurements/memoryd.md, 'Long records'). Kept, each distinct word is
//! matched against the question once and the windows are counted from the places.
//!
//! What is kept is derived from rows the index holds and goes when rows go: every drop of
//! rows (a log read again, a log gone, a forget) empties it, as it does the verdicts on
//! common words, so a forgotten record's words are not kept in memory past its rows. A
//! row's words are used only for the same row id and text length as when they were
//! kept; the row itself is read (with the caller's class bound) before its words are
//! looked up, so nothing is matched that the caller may not see.

use crate::query::{Passage, Query, TextWords, PASSAGE_WORDS};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// Bytes of words kept, about (`TextWords::size`): a pasted document's 32 KiB row keeps
/// some 25 KiB, so this holds the 40 candidates and the neighbours of some twenty
/// recalls' worth of different documents (memory-turn's 200 documents all fit) while
/// keeping the daemon's memory bounded. Past it, everything kept is let go and kept
/// again as recalls read rows: simple, and a recall never pays more than it did
/// without keeping.
pub(crate) const KEPT_BYTES: usize = 16 * 1024 * 1024;

/// What a row shorter than one passage counts against `KEPT_BYTES`: its entry only.
const SHORT_ENTRY: usize = 64;

/// Text bytes under which a row cannot hold more than `PASSAGE_WORDS` words (each word
/// a character and a separator): such a row is its own passage, read whole each time,
/// as cheap as looking it up.
const SHORT_BYTES: usize = 2 * PASSAGE_WORDS;

/// The words kept, by row id.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    rows: RefCell<HashMap<i64, Entry>>,
    bytes: Cell<usize>,
}

#[derive(Debug)]
struct Entry {
    /// The text's length in bytes when its words were kept.
    len: usize,
    /// `None`: the text is its own passage (no more than `PASSAGE_WORDS` words).
    words: Option<Rc<TextWords>>,
}

impl Kept {
    /// Lets go of everything kept: rows were dropped.
    pub(crate) fn forget(&self) {
        self.rows.borrow_mut().clear();
        self.bytes.set(0);
    }

    /// `query.passage_coverage(text)` of row `rowid`, whose text is `text`: the same
    /// passage, from the row's words kept when it is long and the question is of words.
    pub(crate) fn passage(&self, query: &Query, rowid: i64, text: &str) -> Passage {
        if text.len() < SHORT_BYTES {
            return query.passage_coverage(text);
        }
        let known = self
            .rows
            .borrow()
            .get(&rowid)
            .filter(|e| e.len == text.len())
            .map(|e| e.words.clone());
        let words = match known {
            Some(words) => words,
            None => {
                let words = TextWords::of(text).map(Rc::new);
                self.keep(rowid, text.len(), words.clone());
                words
            }
        };
        words
            .and_then(|w| query.passage_of_words(&w))
            .unwrap_or_else(|| query.passage_coverage(text))
    }

    fn keep(&self, rowid: i64, len: usize, words: Option<Rc<TextWords>>) {
        let size = words
            .as_ref()
            .map_or(SHORT_ENTRY, |w| w.size() + SHORT_ENTRY);
        if size > KEPT_BYTES {
            return;
        }
        let mut rows = self.rows.borrow_mut();
        if self.bytes.get() + size > KEPT_BYTES {
            rows.clear();
            self.bytes.set(0);
        }
        let old = rows.insert(rowid, Entry { len, words });
        let freed = old.map_or(0, |e| {
            e.words
                .as_ref()
                .map_or(SHORT_ENTRY, |w| w.size() + SHORT_ENTRY)
        });
        self.bytes
            .set(self.bytes.get().saturating_sub(freed).saturating_add(size));
    }

    /// Rows kept, for tests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows.borrow().len()
    }
}
