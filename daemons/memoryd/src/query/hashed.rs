//! Words as 64-bit hashes, for sets that are asked of every word of a long text: a hash
//! made in one pass over the word's bytes, and a hasher that takes it as it is, where
//! the standard one would hash a word's string a second time.

use std::hash::{BuildHasherDefault, Hasher};

/// A word's 64-bit hash (FNV-1a). Two different words of one text sharing one is as rare
/// as it gets; where one is, two sentences look a word more alike, or a word is taken
/// for a function word.
pub(crate) fn word_hash(word: &str) -> u64 {
    word.bytes().fold(FNV_START, fnv_step)
}

/// FNV-1a's starting value.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a's step: the hash so far with one more byte.
fn fnv_step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
}

/// Calls `f` with the `word_hash` of each word of `text` as `query::for_each_word` cuts
/// and lower-cases it, and the number of words: the same hashes without making each word
/// a string first.
pub(crate) fn for_each_word_hash(text: &str, mut f: impl FnMut(u64)) -> usize {
    let (mut h, mut in_word, mut n) = (FNV_START, false, 0);
    let mut end = |h: &mut u64, in_word: &mut bool| {
        if *in_word {
            f(*h);
            n += 1;
        }
        *h = FNV_START;
        *in_word = false;
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            h = fnv_step(h, c.to_ascii_lowercase() as u8);
            in_word = true;
        } else if c.is_alphanumeric() {
            let mut buf = [0u8; 4];
            for l in c.to_lowercase() {
                for &b in super::fold(l).encode_utf8(&mut buf).as_bytes() {
                    h = fnv_step(h, b);
                }
            }
            in_word = true;
        } else {
            end(&mut h, &mut in_word);
        }
    }
    end(&mut h, &mut in_word);
    n
}

/// Builds `AsIs` hashers, for a map or set keyed by `word_hash`.
pub(crate) type Hashed = BuildHasherDefault<AsIs>;

/// A hasher for keys that are hashes already.
#[derive(Default)]
pub(crate) struct AsIs(u64);

impl Hasher for AsIs {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
