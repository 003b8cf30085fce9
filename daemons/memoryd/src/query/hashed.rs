//! Words as 64-bit hashes, for sets that are asked of every word of a long text: a hash
//! made in one pass over the word's bytes, and a hasher that takes it as it is, where
//! the standard one would hash a word's string a second time.

use std::hash::{BuildHasherDefault, Hasher};

/// A word's 64-bit hash (FNV-1a). Two different words of one text sharing one is as rare
/// as it gets; where one is, two sentences look a word more alike, or a word is taken
/// for a function word.
pub(crate) fn word_hash(word: &str) -> u64 {
    word.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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
