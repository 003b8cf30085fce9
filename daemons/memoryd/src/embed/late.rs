//! Late interaction (docs/memoryd.md, 'Late interaction'): a record's word pieces kept one
//! by one, so a question can be matched piece by piece against it instead of as one
//! sentence vector. "What kind of flowers does Audrey take care of?" finds "They're
//! called Peruvian Lilies" because the piece "flowers" lies near "lilies" in the model's
//! last layer, which neither the words (no word shared) nor the sentence vectors (a turn
//! about lilies among many about gardens) can see.
//!
//! This module owns the pieces' form and their score:
//! - a record's pieces are the sign codes (`bits::Bits`, 48 bytes) of its word pieces'
//!   last-layer rows, punctuation and the special tokens left out, at most `MAX_PIECES`;
//!   they are stored beside the record's vector (`table`) and read only for a recall's
//!   few candidates, so they cost disk, not memory;
//! - a question's pieces are its content word pieces' rows as unit vectors (stop words
//!   and punctuation left out), at most `MAX_QUESTION_PIECES`;
//! - `Question::best` gives, for each question piece, its best cosine against a set of
//!   record pieces: the MaxSim of late-interaction retrieval, each cosine estimated from
//!   the record piece's signs (a float question against a signed record loses little:
//!   measured on LoCoMo, recall@5 0.698 with float record pieces, 0.693 with signs).

use super::bits::{Bits, WORDS};
use super::DIM;

/// Word pieces kept of one record: a chat turn has a few dozen, so every turn is whole;
/// a pasted document is known by its first pages (12 KiB of codes), as its vector is by
/// its first windows.
pub const MAX_PIECES: usize = 256;

/// Word pieces of a question matched: a question is a sentence or two; past this the
/// lookup tables (48 KiB a piece) would grow with a pasted question for no gain.
pub const MAX_QUESTION_PIECES: usize = 32;

/// Bytes of one stored piece.
pub const PIECE_BYTES: usize = WORDS * 8;

/// The sign code of one last-layer row (bit set where the component is positive).
pub fn sign_code(row: &[f32]) -> Bits {
    let mut out = [0u64; WORDS];
    for (i, &x) in row.iter().take(DIM).enumerate() {
        if x > 0.0 {
            out[i / 64] |= 1 << (i % 64);
        }
    }
    out
}

/// A record's pieces as stored: each code's words little-endian, in order.
pub fn to_bytes(pieces: &[Bits]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pieces.len() * PIECE_BYTES);
    for p in pieces.iter().take(MAX_PIECES) {
        for w in p {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
    out
}

/// A stored blob back as pieces; `None` when it is not a whole number of pieces or holds
/// more than `MAX_PIECES` (a damaged row: `table::pieces` has it embedded again).
pub fn from_bytes(blob: &[u8]) -> Option<Vec<Bits>> {
    if !blob.len().is_multiple_of(PIECE_BYTES) || blob.len() > MAX_PIECES * PIECE_BYTES {
        return None;
    }
    Some(
        blob.chunks_exact(PIECE_BYTES)
            .map(|c| {
                let mut p = [0u64; WORDS];
                for (w, b) in p.iter_mut().zip(c.chunks_exact(8)) {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(b);
                    *w = u64::from_le_bytes(word);
                }
                p
            })
            .collect(),
    )
}

/// A question's pieces, ready to be scored against record pieces: for each piece, a
/// table per byte of a sign code of what that byte's eight signs add to the cosine, so
/// a record piece costs 48 lookups instead of 384 multiply-adds.
pub struct Question {
    tables: Vec<Vec<f32>>,
}

/// The entries of one piece's tables: 256 sign patterns for each of a code's bytes.
const TABLE: usize = PIECE_BYTES * 256;

impl Question {
    /// From the question's piece rows (any length, each made unit length here); at most
    /// `MAX_QUESTION_PIECES` are kept, in order.
    pub fn new(rows: &[Vec<f32>]) -> Question {
        // A signed record piece is the unit vector with components ±1/sqrt(DIM).
        let scale = 1.0 / (DIM as f32).sqrt();
        let tables = rows
            .iter()
            .take(MAX_QUESTION_PIECES)
            .filter_map(|row| {
                let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
                if !norm.is_finite() || norm <= 0.0 || row.len() < DIM {
                    return None;
                }
                let mut t = vec![0f32; TABLE];
                for byte in 0..PIECE_BYTES {
                    let q = &row[byte * 8..byte * 8 + 8];
                    for pattern in 0..256usize {
                        let mut sum = 0f32;
                        for (bit, x) in q.iter().enumerate() {
                            sum += if pattern >> bit & 1 == 1 { *x } else { -*x };
                        }
                        t[byte * 256 + pattern] = sum * scale / norm;
                    }
                }
                Some(t)
            })
            .collect();
        Question { tables }
    }

    /// Pieces the question has (0: nothing to match, every score is 0).
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// For each question piece, its best cosine against `pieces` (-1 when there are none).
    pub fn best(&self, pieces: &[Bits]) -> Vec<f32> {
        self.tables
            .iter()
            .map(|t| {
                pieces
                    .iter()
                    .map(|p| {
                        let mut sum = 0f32;
                        for (w, word) in p.iter().enumerate() {
                            for b in 0..8 {
                                let byte = w * 8 + b;
                                let pattern = (word >> (8 * b) & 0xff) as usize;
                                sum += t[byte * 256 + pattern];
                            }
                        }
                        sum
                    })
                    .fold(-1f32, f32::max)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seed: u32) -> Vec<f32> {
        (0..DIM)
            .map(|i| {
                (((i as u32).wrapping_mul(2654435761) ^ seed.wrapping_mul(40503)) % 1000) as f32
                    - 500.0
            })
            .collect()
    }

    #[test]
    fn a_piece_scores_its_own_signs_as_the_cosine_of_its_sign_vector() {
        let r = row(7);
        let q = Question::new(std::slice::from_ref(&r));
        let code = sign_code(&r);
        // The cosine of r with its own sign vector: sum |x| / (|r| sqrt(DIM)).
        let norm = r.iter().map(|x| x * x).sum::<f32>().sqrt();
        let want = r.iter().map(|x| x.abs()).sum::<f32>() / (norm * (DIM as f32).sqrt());
        let got = q.best(&[code])[0];
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
        // Every sign flipped: the opposite.
        let flipped: Bits = code.map(|w| !w);
        assert!((q.best(&[flipped])[0] + want).abs() < 1e-4);
    }

    #[test]
    fn each_question_piece_takes_its_best_record_piece() {
        let (a, b) = (row(1), row(2));
        let q = Question::new(&[a.clone(), b.clone()]);
        let best = q.best(&[sign_code(&b), sign_code(&a)]);
        let alone = q.best(&[sign_code(&a)]);
        assert_eq!(best[0], alone[0]);
        assert!(best[1] > alone[1]);
        assert_eq!(q.best(&[]), vec![-1.0, -1.0]);
    }

    #[test]
    fn stored_pieces_read_back_and_a_damaged_blob_is_refused() {
        let pieces = vec![sign_code(&row(3)), sign_code(&row(4))];
        assert_eq!(from_bytes(&to_bytes(&pieces)), Some(pieces));
        assert_eq!(from_bytes(&[0u8; PIECE_BYTES + 1]), None);
        assert_eq!(from_bytes(&vec![0u8; (MAX_PIECES + 1) * PIECE_BYTES]), None);
    }

    #[test]
    fn a_zero_or_short_question_row_is_left_out() {
        let q = Question::new(&[vec![0.0; DIM], vec![1.0; 3], row(5)]);
        assert_eq!(q.len(), 1);
    }
}
