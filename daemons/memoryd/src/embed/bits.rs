//! 1-bit sign codes, the first stage of a large vector search: one bit per component (set
//! when the 8-bit code's component is positive), 384 bits in `WORDS` words, 48 bytes a
//! row. Two unit vectors whose signs differ in fewer places point closer together (the
//! Hamming distance estimates the angle), so a scan of these codes, an eighth of the
//! 8-bit codes' bytes and a few word operations a row, finds the few thousand rows worth
//! scoring exactly (`store::Store::nearest`).
//!
//! Derived from the 8-bit code, so nothing new is stored: the database keeps the codes,
//! and the bits are made again when a code is loaded.

use super::quant::Code;
use super::DIM;

/// Words of a sign code.
pub const WORDS: usize = DIM / 64;

/// A sign code: bit `i % 64` of word `i / 64` is component `i`'s sign.
pub type Bits = [u64; WORDS];

/// The sign code of an 8-bit code (a zero component counts as negative).
pub fn of(code: &Code) -> Bits {
    let mut out = [0u64; WORDS];
    for (i, &x) in code.q.iter().enumerate() {
        if x > 0 {
            out[i / 64] |= 1 << (i % 64);
        }
    }
    out
}

/// The number of components whose signs differ. `count_ones` on plain x86-64 (no
/// `popcnt`) is a shift-and-mask sequence; summing the six words' per-byte counts before
/// folding the bytes together does that sequence's last, dearest step once instead of
/// six times.
#[inline]
pub fn distance(a: &Bits, b: &Bits) -> u32 {
    const M1: u64 = 0x5555_5555_5555_5555;
    const M2: u64 = 0x3333_3333_3333_3333;
    const M4: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const M8: u64 = 0x00ff_00ff_00ff_00ff;
    let mut bytes = 0u64;
    for (x, y) in a.iter().zip(b) {
        let v = x ^ y;
        let v = v - ((v >> 1) & M1);
        let v = (v & M2) + ((v >> 2) & M2);
        // Each byte now counts its own bits (at most 8); six words make at most 48.
        bytes += (v + (v >> 4)) & M4;
    }
    // Pairs of bytes into 16-bit lanes (at most 96 each), then the four lanes summed
    // into the top one (at most 384, no overflow).
    let lanes = (bytes & M8) + ((bytes >> 8) & M8);
    (lanes.wrapping_mul(0x0001_0001_0001_0001) >> 48) as u32
}

/// The places (indices into `codes`) of the `n` rows at or below class rank `max_class`
/// nearest to `query` by sign, in no particular order; of equal distances the newer row
/// (larger id) is kept. `codes`, `classes` and `ids` are parallel.
///
/// Distances are small integers (0 to `DIM`), so the cut is found by counting, not by
/// keeping a heap: every distance in one branch-free pass (which the compiler
/// vectorises), a count of each, then the rows under the cut and the newest of those at
/// it. A heap of the `RESCORE` best took every row at the running cut (a large share
/// of rows, distances bunching near half of `DIM`) through a push and a pop.
pub fn nearest(
    query: &Bits,
    codes: &[Bits],
    classes: &[u8],
    ids: &[i64],
    max_class: u8,
    n: usize,
) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    /// Marks a row the class filter leaves out: past every real distance.
    const OUT: u16 = u16::MAX;
    let mut dist: Vec<u16> = codes
        .iter()
        .map(|code| distance(query, code) as u16)
        .collect();
    let mut counts = [0usize; DIM + 1];
    for (d, &class) in dist.iter_mut().zip(classes) {
        if class > max_class {
            *d = OUT;
        } else {
            counts[usize::from(*d).min(DIM)] += 1;
        }
    }
    // The smallest distance `cut` with at least `n` rows at or under it (or every row).
    let (mut cut, mut under) = (DIM, 0);
    for (d, &c) in counts.iter().enumerate() {
        if under + c >= n {
            cut = d;
            break;
        }
        under += c;
    }
    let cut = cut as u16;
    let mut out: Vec<usize> = Vec::with_capacity(n);
    let mut ties: Vec<usize> = Vec::new();
    for (i, &d) in dist.iter().enumerate() {
        if d < cut {
            out.push(i);
        } else if d == cut {
            ties.push(i);
        }
    }
    let room = n.saturating_sub(out.len()).min(ties.len());
    if room == 0 {
        ties.clear();
    } else if room < ties.len() {
        // The `room` newest of the rows at the cut.
        let from = ties.len() - room;
        ties.select_nth_unstable_by_key(from, |&i| ids[i]);
        ties.drain(..from);
    }
    out.extend(ties);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::quant::encode;

    fn code_with_signs(signs: &[bool]) -> Code {
        let mut v = [0f32; DIM];
        for (x, &s) in v.iter_mut().zip(signs.iter().cycle()) {
            *x = if s { 0.05 } else { -0.05 };
        }
        encode(&v)
    }

    #[test]
    fn distance_counts_differing_signs_up_to_every_component() {
        let plus = of(&code_with_signs(&[true]));
        let minus = of(&code_with_signs(&[false]));
        let half = of(&code_with_signs(&[true, false]));
        assert_eq!(distance(&plus, &plus), 0);
        assert_eq!(distance(&plus, &minus), DIM as u32);
        assert_eq!(distance(&plus, &half), DIM as u32 / 2);
        // Against the plain per-word count, on irregular words.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100 {
            let mut a = [0u64; WORDS];
            let mut b = [0u64; WORDS];
            for w in a.iter_mut().chain(b.iter_mut()) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *w = s;
            }
            let plain: u32 = a.iter().zip(&b).map(|(x, y)| (x ^ y).count_ones()).sum();
            assert_eq!(distance(&a, &b), plain);
        }
    }

    #[test]
    fn a_zero_component_reads_as_negative() {
        let mut v = [0.1f32; DIM];
        v[3] = 0.0;
        let bits = of(&encode(&v));
        assert_eq!(bits[0] & (1 << 3), 0);
        assert_eq!(bits[0].count_ones(), 63);
        assert_eq!(bits[WORDS - 1], u64::MAX);
    }

    #[test]
    fn nearest_keeps_the_closest_allowed_and_the_newer_of_equals() {
        // Row i differs from the query in i % 300 bits; the three nearest distances are
        // class 2.
        let query = [0u64; WORDS];
        let codes: Vec<Bits> = (0..600)
            .map(|i| {
                let mut b = [0u64; WORDS];
                for bit in 0..(i % 300) {
                    b[bit / 64] |= 1 << (bit % 64);
                }
                b
            })
            .collect();
        let classes: Vec<u8> = (0..600).map(|i| if i % 300 < 3 { 2 } else { 0 }).collect();
        let ids: Vec<i64> = (0..600).collect();
        let mut got = nearest(&query, &codes, &classes, &ids, 1, 4);
        got.sort_unstable();
        // Distances 3 and 4 twice each (rows 3, 4, 303, 304): all four kept.
        assert_eq!(got, vec![3, 4, 303, 304]);
        let mut got = nearest(&query, &codes, &classes, &ids, 1, 3);
        got.sort_unstable();
        assert_eq!(got, vec![3, 303, 304], "of rows 4 and 304 the newer");
        assert!(nearest(&query, &codes, &classes, &ids, 1, 0).is_empty());
    }
}
