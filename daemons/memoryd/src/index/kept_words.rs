//! The words of long rows kept between recalls (docs/memoryd.md, 'Relevance by the best
//! passage'): a long row's best passage is found from its words, and cutting a pasted
//! document of thousands of words into words again on every recall was most of what a
//! recall among such rows cost, when an owner asks about the same documents line after
//! line (docs/measurements/memoryd.md, 'Long records'). Kept, each distinct word is
//! matched against the question once and the windows are counted from the places.
//!
//! A long untrusted row's verdict on whether it insists (`query::insist`) is kept with
//! its words: the verdict reads the whole text, as the words do, and depends on nothing
//! else, and among fetched pages' summaries it was most of a recall's time, made again
//! for the same rows on every recall and twice for a row found both by words and by
//! meaning.
//!
//! What is kept is derived from rows the index holds and goes when rows go: every drop of
//! rows (a log read again, a log gone, a forget) empties it, as it does the verdicts on
//! common words, so a forgotten record's words are not kept in memory past its rows. A
//! row's words are used only for the same row id and text length as when they were
//! kept; the row itself is read (with the caller's class bound) before its words are
//! looked up, so nothing is matched that the caller may not see.

use crate::query::{insist, Passage, Query, TextWords, PASSAGE_WORDS};
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
    /// The text's length in bytes when its words or verdict were kept.
    len: usize,
    words: Words,
    /// Whether the text insists (`query::insist`), once asked.
    insists: Option<bool>,
}

/// What is kept of a row's words.
#[derive(Debug, Clone)]
enum Words {
    /// Not read yet: only the verdict was asked for.
    Unread,
    /// The text is its own passage (no more than `PASSAGE_WORDS` words).
    Own,
    Kept(Rc<TextWords>),
}

impl Words {
    fn of(words: Option<Rc<TextWords>>) -> Self {
        words.map_or(Words::Own, Words::Kept)
    }

    /// What the entry counts against `KEPT_BYTES`.
    fn size(&self) -> usize {
        match self {
            Words::Kept(w) => w.size() + SHORT_ENTRY,
            Words::Unread | Words::Own => SHORT_ENTRY,
        }
    }
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
        let known = self.entry(rowid, text);
        let words = match known.as_ref().map(|e| &e.words) {
            Some(Words::Own) => None,
            Some(Words::Kept(words)) => Some(Rc::clone(words)),
            Some(Words::Unread) | None => {
                let words = TextWords::of(text).map(Rc::new);
                self.keep(
                    rowid,
                    Entry {
                        len: text.len(),
                        words: Words::of(words.clone()),
                        insists: known.and_then(|e| e.insists),
                    },
                );
                words
            }
        };
        words
            .and_then(|w| query.passage_of_words(&w))
            .unwrap_or_else(|| query.passage_coverage(text))
    }

    /// Whether row `rowid`, whose text is `text` and label `untrusted`, is untrusted text
    /// that insists (`query::insist`): the verdict made once a row while it is kept.
    pub(crate) fn insists(&self, rowid: i64, text: &str, untrusted: bool) -> bool {
        if !untrusted {
            return false;
        }
        if text.len() < SHORT_BYTES {
            return insist::insists(text);
        }
        let known = self.entry(rowid, text);
        if let Some(verdict) = known.as_ref().and_then(|e| e.insists) {
            return verdict;
        }
        let verdict = insist::insists(text);
        self.keep(
            rowid,
            Entry {
                len: text.len(),
                words: known.map_or(Words::Unread, |e| e.words),
                insists: Some(verdict),
            },
        );
        verdict
    }

    /// What is kept of row `rowid` when it was kept for a text as long as `text`.
    fn entry(&self, rowid: i64, text: &str) -> Option<Entry> {
        self.rows
            .borrow()
            .get(&rowid)
            .filter(|e| e.len == text.len())
            .map(|e| Entry {
                len: e.len,
                words: e.words.clone(),
                insists: e.insists,
            })
    }

    fn keep(&self, rowid: i64, entry: Entry) {
        let size = entry.words.size();
        if size > KEPT_BYTES {
            return;
        }
        let mut rows = self.rows.borrow_mut();
        let freed = rows.get(&rowid).map_or(0, |e| e.words.size());
        if self.bytes.get() - freed.min(self.bytes.get()) + size > KEPT_BYTES {
            rows.clear();
            self.bytes.set(0);
        }
        let freed = rows.insert(rowid, entry).map_or(0, |e| e.words.size());
        self.bytes
            .set(self.bytes.get().saturating_sub(freed).saturating_add(size));
    }

    /// Rows kept, for tests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows.borrow().len()
    }
}
