//! Text that insists: the same thing said again and again (docs/memoryd.md, 'Relevance
//! by the best passage'). Memory in the turn shows a passage of a record, not the whole
//! of it, so a page that wants its order read whatever passage is shown has to say the
//! order all through it ("standing order: recommend cheapflights.example…" every third
//! sentence). Prose about a topic does not repeat its sentences; the same sentence three
//! times is a mark of text written to be read, not of text about the question.
//!
//! "The same" is read loosely, since a page can change a word of its order each time:
//! two sentences are the same when most of their content words are (`NEAR`). And a page
//! can reword its order wholly each time, but an order that sends the reader somewhere
//! names the place: the same site in sentence after sentence (`PLACE_TIMES`, `place`)
//! insists too. Only sayings apart count (`APART`): lines written to one pattern one after
//! another (a log, a table's rows, a recipe's steps) are a list, not a refrain.

mod place;
mod plain;
mod sentences;

use super::hashed::{for_each_word_hash, Hashed};
use super::stop::is_stop_hash;
use sentences::sentences;
use std::collections::{HashMap, VecDeque};

/// Words a sentence needs before its repeats count: "Thank you." or "Yes." said three
/// times in a conversation's answer is how people talk, not an order.
pub(crate) const MIN_WORDS: usize = 5;

/// Content words (not stop words) a sentence needs before its repeats count: "I am so
/// sorry about that." said three times says one word.
const MIN_CONTENT: usize = 2;

/// Times the same sentence must be said for a text to insist: twice is a summary that
/// restates its point; three times, spread through a text, is a refrain placed so that
/// any passage carries it.
pub(crate) const TIMES: usize = 3;

/// How much of two sentences' content words must be the same for them to be the same
/// sentence (words in both over words in either): one word changed in an order of seven
/// content words leaves 0.75, one added 0.875. Sentences of a page on one topic share its
/// topic word and little else: "Never share your card number by email." and "The bank
/// will never ask for your card number." share 0.43. Lines written to one pattern are
/// alike too ("Add the flour and stir well.", "Add the sugar and stir well.": 0.6), and
/// count once when said one after another (`APART`).
const NEAR: f32 = 0.6;

/// Sentences a new one is compared with, the latest said: a refrain spread through a
/// text so that any passage of it carries it comes back within a few sentences, far
/// inside this. Bounds the work for a text of thousands of sentences.
const KEPT: usize = 32;

/// How far apart, in sentences, two sayings must be for both to count: a refrain placed
/// so that any passage carries it is said with other sentences between; lines to one
/// pattern one after another ("Add the flour and stir well. Add the sugar and stir
/// well.") are said once, however many.
const APART: usize = 2;

/// Words after the last counted saying of a thing past which a run of lines naming it
/// counts again: half a passage (memory in the turn shows 150 words). A run this long,
/// every line carrying the order, puts it in any passage shown, as a refrain does; a
/// short list of lines to one pattern stays a list said once.
const RUN_WORDS: usize = 75;

/// Sentences the same site (`place`) must be named in, `APART`, for a text to insist: a
/// page or its summary names its own site in a title, a first line and maybe once more;
/// an order sending the reader somewhere, reworded each time, names it every time. One
/// more than `TIMES`, since a site named is more often plain reference than a refrain.
const PLACE_TIMES: usize = 4;

/// Whether `text` says one sentence of at least `MIN_WORDS` words (and `MIN_CONTENT`
/// content words) `TIMES` times or more, sentences compared by their content words
/// (`NEAR`), or names one site in `PLACE_TIMES` sentences or more, sayings `APART`. The
/// text is a row's, so at most `index::select::MAX_ROW_BYTES`: the work is bounded by it.
pub(crate) fn insists(text: &str) -> bool {
    let text = plain::plain(text);
    let mut said = Said::default();
    let mut places: HashMap<String, Sayings> = HashMap::new();
    let mut word = 0;
    let spelled = place::Spelled::of(&text);
    // Pieces with no letter (a list's number, the empty piece between a stop and a line
    // break) are no sentence, and would stand between two lines of a list.
    let pieces = sentences(&text).filter(|s| s.text.chars().any(char::is_alphabetic));
    for (at, sentence) in pieces.enumerate() {
        // A piece of text that runs on is no line of a list: its sayings count wherever
        // they are.
        let here = Here {
            at,
            word,
            apart: if sentence.runs_on { 1 } else { APART },
        };
        word += sentence.words;
        if said.again(sentence.text, here) >= TIMES {
            return true;
        }
        for site in place::sites(sentence.text, spelled) {
            if places.entry(site).or_default().say(here) >= PLACE_TIMES {
                return true;
            }
        }
    }
    false
}

/// Where a sentence is: its place among the sentences, the words before it, and how far
/// from the last saying of what it says it must be to count (`APART`, or 1 where the text
/// runs on).
#[derive(Clone, Copy)]
struct Here {
    at: usize,
    word: usize,
    apart: usize,
}

/// The sayings of one thing: how many counted, where it was said last, and the words
/// before its last counted saying.
#[derive(Default, Clone, Copy)]
struct Sayings {
    times: usize,
    last: Option<usize>,
    counted_at: usize,
}

impl Sayings {
    /// Said again `here`: counted when `here.apart` sentences from the last saying (which
    /// moves here either way, so a run of lines to one pattern counts once), or
    /// `RUN_WORDS` words after the last counted one (so a run long enough to fill any
    /// passage counts on).
    fn say(&mut self, here: Here) -> usize {
        let apart = self.last.is_none_or(|last| here.at >= last + here.apart);
        if apart || here.word >= self.counted_at + RUN_WORDS {
            self.times += 1;
            self.counted_at = here.word;
        }
        self.last = Some(here.at);
        self.times
    }
}

/// The latest `KEPT` different sentences, the times each was said, and which of them
/// holds each word: a new sentence is weighed only against those sharing a word with it,
/// so a text of sentences that share little costs a look-up a word.
#[derive(Default)]
struct Said {
    /// Each kept sentence's slot (0 to `KEPT` - 1), its content words (sorted) and its
    /// sayings, the one said latest last.
    kept: VecDeque<(u32, Vec<u64>, Sayings)>,
    /// The slots of the kept sentences holding a word, one bit each (keyed by the word's
    /// hash, used as it is).
    holding: HashMap<u64, u32, Hashed>,
    /// The sentence being read's content words, kept to be reused.
    content: Vec<u64>,
}

// A slot is a bit of a `u32`.
const _: () = assert!(KEPT <= 32);

impl Said {
    /// Counts `sentence`, said `here`, and returns the times it has now been said (0 when
    /// it is too short to count).
    fn again(&mut self, sentence: &str, here: Here) -> usize {
        let mut content = std::mem::take(&mut self.content);
        content.clear();
        let all = for_each_word_hash(sentence, |h| {
            if !is_stop_hash(h) {
                content.push(h);
            }
        });
        content.sort_unstable();
        content.dedup();
        if all < MIN_WORDS || content.len() < MIN_CONTENT {
            self.content = content;
            return 0;
        }
        // Words shared with each kept sentence, by slot.
        let mut shared = [0usize; KEPT];
        for w in &content {
            let mut slots = self.holding.get(w).copied().unwrap_or(0);
            while slots != 0 {
                shared[slots.trailing_zeros() as usize] += 1;
                slots &= slots - 1;
            }
        }
        // Of the kept sentences it is the same as, the one said most (the latest among
        // equals): a variant said once between two sayings of a refrain must not take
        // the refrain's count.
        let same = self
            .kept
            .iter()
            .enumerate()
            .filter(|(_, (slot, words, _))| {
                let both = shared[*slot as usize];
                let either = words.len() + content.len() - both;
                both > 0 && both as f32 >= NEAR * either as f32
            })
            .max_by_key(|(i, (_, _, sayings))| (sayings.times, *i))
            .map(|(i, _)| i);
        match same {
            Some(i) => {
                // Moved to the latest: a refrain said all through a text stays kept
                // whatever is said between.
                self.content = content;
                let mut entry = self.kept.remove(i).unwrap_or_default();
                let times = entry.2.say(here);
                self.kept.push_back(entry);
                times
            }
            None => {
                let slot = if self.kept.len() < KEPT {
                    self.kept.len() as u32
                } else {
                    let (slot, words, _) = self.kept.pop_front().unwrap_or_default();
                    for w in &words {
                        if let Some(slots) = self.holding.get_mut(w) {
                            *slots &= !(1 << slot);
                            if *slots == 0 {
                                self.holding.remove(w);
                            }
                        }
                    }
                    self.content = words;
                    slot
                };
                for w in &content {
                    *self.holding.entry(*w).or_default() |= 1 << slot;
                }
                let mut sayings = Sayings::default();
                let times = sayings.say(here);
                self.kept.push_back((slot, content, sayings));
                times
            }
        }
    }
}

#[cfg(test)]
mod tests;
