//! Every vector code in memory, in flat arrays, and the nearest codes to a query.
//!
//! Each row has its 8-bit code (`quant`, 384 bytes and a scale) and the 1-bit sign code
//! derived from it (`bits`, 48 bytes). Up to `EXACT_UP_TO` rows a recall scores every
//! 8-bit code: a few milliseconds, and exact. Above that it is two stages: a scan of the
//! sign codes by Hamming distance keeps the `RESCORE` nearest (honouring the class
//! filter), and only those are scored with their 8-bit codes; the top `k` of the exact
//! scores are returned as before (floor, ties to the newer row). At a million rows the
//! full 8-bit scan is about a quarter of a second on this machine's cores; the two
//! stages read an eighth of the bytes and score a fraction of a percent of the rows
//! (`scripts/bench memory` measures both, and the share of the exact top ten they find).
//! A graph index (HNSW and the like) would be faster still at ten million rows, but costs
//! its own memory, build time and misses, and one person's history stays well under that
//! (see `MAX_VECTORS`).

use super::bits::{self, Bits};
use super::quant::{dot, Code};
use super::DIM;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

/// The most vectors held. Each costs about 470 bytes of memory (8-bit code, scale, sign
/// code, id, class and its place in the id map), so this is about 1.9 GB at most: a bound
/// that decades of one person's conversations do not reach, and that a flood of records
/// cannot push past. Rows past it are found by their words alone, and memoryd says so
/// once.
pub const MAX_VECTORS: usize = 4_000_000;

/// Rows the sign-code stage hands to exact scoring. Sign codes of all-MiniLM-L6-v2's
/// vectors rank the true nearest rows well but loosely (the model's vectors are not
/// centred, so some bits say little), so the stage must keep far more than the `k` asked
/// for. Measured on real embeddings (`scripts/bench memory --ann`, the share of the rows
/// scaled to a million): 4 000 finds 0.96 of the exact top ten, 8 000 0.98, 16 000 0.99,
/// 32 000 0.997. Scoring costs about a microsecond a row (random reads of 384-byte codes),
/// so 16 000 adds some 17 ms to the sign scan's 8 ms at a million rows: 0.99 within the
/// recall budget, where doubling it would buy 0.007 for as many milliseconds again.
pub const RESCORE: usize = 16_000;

/// Up to this many rows a recall scores every 8-bit code: that exact scan costs about
/// what the two stages cost at a million rows (some 25 ms), and the two stages would
/// score a sixteenth of the rows or more anyway, so a small history loses nothing.
pub const EXACT_UP_TO: usize = 16 * RESCORE;

#[derive(Debug, Default)]
pub struct Store {
    ids: Vec<i64>,
    classes: Vec<u8>,
    inv_scales: Vec<f32>,
    codes: Vec<i8>,
    bits: Vec<Bits>,
    at: HashMap<i64, usize>,
}

/// One scored row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Near {
    pub id: i64,
    pub score: f32,
}

/// Orders a min-heap of the best so far: the worst score on top, and of equal scores the
/// older row (smaller id), so that recency breaks ties.
#[derive(PartialEq)]
struct Worst(Near);

impl Eq for Worst {}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .score
            .total_cmp(&self.0.score)
            .then(other.0.id.cmp(&self.0.id))
    }
}

impl Store {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.ids.len() >= MAX_VECTORS
    }

    pub fn contains(&self, id: i64) -> bool {
        self.at.contains_key(&id)
    }

    /// Adds or replaces the code of row `id`. Returns false when the store is full.
    pub fn put(&mut self, id: i64, class: u8, code: &Code) -> bool {
        if let Some(&i) = self.at.get(&id) {
            self.classes[i] = class;
            self.inv_scales[i] = code.inv_scale;
            self.codes[i * DIM..(i + 1) * DIM].copy_from_slice(&code.q);
            self.bits[i] = bits::of(code);
            return true;
        }
        if self.is_full() {
            return false;
        }
        self.at.insert(id, self.ids.len());
        self.ids.push(id);
        self.classes.push(class);
        self.inv_scales.push(code.inv_scale);
        self.codes.extend_from_slice(&code.q);
        self.bits.push(bits::of(code));
        true
    }

    /// Forgets row `id` (its text row was dropped): the last code takes its place.
    pub fn remove(&mut self, id: i64) {
        let Some(i) = self.at.remove(&id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if i != last {
            let moved = self.ids[last];
            self.ids.swap(i, last);
            self.classes.swap(i, last);
            self.inv_scales.swap(i, last);
            self.bits.swap(i, last);
            let (head, tail) = self.codes.split_at_mut(last * DIM);
            head[i * DIM..(i + 1) * DIM].copy_from_slice(&tail[..DIM]);
            self.at.insert(moved, i);
        }
        self.ids.truncate(last);
        self.classes.truncate(last);
        self.inv_scales.truncate(last);
        self.codes.truncate(last * DIM);
        self.bits.truncate(last);
    }

    /// The `k` rows at or below class rank `max_class` nearest to `query`, best first,
    /// with at least `floor` cosine: exact up to `EXACT_UP_TO` rows, two stages above.
    pub fn nearest(&self, query: &Code, max_class: u8, k: usize, floor: f32) -> Vec<Near> {
        if self.len() <= EXACT_UP_TO {
            self.nearest_exact(query, max_class, k, floor)
        } else {
            self.nearest_two_stage(query, max_class, k, floor, RESCORE)
        }
    }

    /// The cosine of row `id` to `query` by their 8-bit codes; `None` when the row has
    /// no vector (yet).
    pub fn cosine(&self, query: &Code, id: i64) -> Option<f32> {
        self.at.get(&id).map(|&i| self.score(query, i))
    }

    /// The cosine of the row at place `i` to `query`, by their 8-bit codes.
    fn score(&self, query: &Code, i: usize) -> f32 {
        let code = &self.codes[i * DIM..(i + 1) * DIM];
        dot(&query.q, code) as f32 * self.inv_scales[i] * query.inv_scale
    }

    /// `nearest` by scoring every 8-bit code.
    pub fn nearest_exact(&self, query: &Code, max_class: u8, k: usize, floor: f32) -> Vec<Near> {
        self.best_of(0..self.len(), query, max_class, k, floor)
    }

    /// `nearest` by scoring the 8-bit codes of the `rescore` rows (at least `k`) nearest
    /// by sign code.
    pub fn nearest_two_stage(
        &self,
        query: &Code,
        max_class: u8,
        k: usize,
        floor: f32,
        rescore: usize,
    ) -> Vec<Near> {
        if k == 0 || query.inv_scale == 0.0 {
            return Vec::new();
        }
        let mut places = bits::nearest(
            &bits::of(query),
            &self.bits,
            &self.classes,
            &self.ids,
            max_class,
            rescore.max(k),
        );
        // In memory order, so the reads of the 8-bit codes go one way through memory.
        places.sort_unstable();
        self.best_of(places.into_iter(), query, max_class, k, floor)
    }

    /// The best `k` at or above `floor` of the rows at `places`, scored exactly.
    fn best_of(
        &self,
        places: impl Iterator<Item = usize>,
        query: &Code,
        max_class: u8,
        k: usize,
        floor: f32,
    ) -> Vec<Near> {
        if k == 0 || query.inv_scale == 0.0 {
            return Vec::new();
        }
        let mut best: BinaryHeap<Worst> = BinaryHeap::with_capacity(k + 1);
        // Comparing integer dot products against a threshold kept in the same units would
        // save the multiply, but the scales differ per row; the multiply is cheap beside
        // the 384 multiply-adds.
        let mut threshold = floor;
        for i in places {
            if self.classes[i] > max_class {
                continue;
            }
            let score = self.score(query, i);
            if score < threshold {
                continue;
            }
            best.push(Worst(Near {
                id: self.ids[i],
                score,
            }));
            if best.len() > k {
                best.pop();
                if let Some(w) = best.peek() {
                    threshold = w.0.score;
                }
            }
        }
        let mut out: Vec<Near> = best.into_iter().map(|w| w.0).collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::quant::encode;

    fn axis(i: usize, j: usize, mix: f32) -> [f32; DIM] {
        let mut v = [0f32; DIM];
        v[i] = (1.0 - mix * mix).sqrt();
        v[j] = mix;
        v
    }

    #[test]
    fn nearest_ranks_by_cosine_and_filters_class_and_floor() {
        let mut s = Store::default();
        s.put(1, 0, &encode(&axis(0, 1, 0.1)));
        s.put(2, 0, &encode(&axis(0, 1, 0.5)));
        s.put(3, 2, &encode(&axis(0, 1, 0.0)));
        s.put(4, 0, &encode(&axis(5, 6, 0.0)));
        let q = encode(&axis(0, 1, 0.0));
        let ids: Vec<i64> = s.nearest(&q, 1, 10, 0.2).iter().map(|n| n.id).collect();
        assert_eq!(
            ids,
            vec![1, 2],
            "class 2 filtered, the orthogonal row under the floor"
        );
        let ids: Vec<i64> = s.nearest(&q, 2, 1, 0.2).iter().map(|n| n.id).collect();
        assert_eq!(ids, vec![3]);
    }

    #[test]
    fn equal_scores_prefer_the_newer_row() {
        let mut s = Store::default();
        for id in [5, 9, 7] {
            s.put(id, 0, &encode(&axis(0, 1, 0.3)));
        }
        let ids: Vec<i64> = s
            .nearest(&encode(&axis(0, 1, 0.3)), 0, 2, 0.0)
            .iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(ids, vec![9, 7]);
    }

    #[test]
    fn put_replaces_and_remove_keeps_the_rest_findable() {
        let mut s = Store::default();
        for id in 0..5 {
            s.put(id, 0, &encode(&axis(id as usize, 100, 0.0)));
        }
        s.put(2, 0, &encode(&axis(50, 100, 0.0)));
        assert_eq!(s.len(), 5);
        s.remove(0);
        s.remove(42);
        assert_eq!(s.len(), 4);
        assert!(!s.contains(0));
        for id in 1..5 {
            let dim = if id == 2 { 50 } else { id as usize };
            let hit = s.nearest(&encode(&axis(dim, 100, 0.0)), 0, 1, 0.5);
            assert_eq!(hit.first().map(|n| n.id), Some(id));
        }
    }

    /// A direction spread over every component (xorshift, fixed by `seed`).
    fn spread(seed: u64) -> [f32; DIM] {
        let mut v = [0f32; DIM];
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).max(1);
        for x in v.iter_mut() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            *x = (s % 2001) as f32 / 1000.0 - 1.0;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    /// `a` moved towards `b` by `t` (then normalised): a near neighbour of `a`.
    fn towards(a: &[f32; DIM], b: &[f32; DIM], t: f32) -> [f32; DIM] {
        let mut v = [0f32; DIM];
        for ((x, p), q) in v.iter_mut().zip(a).zip(b) {
            *x = (1.0 - t) * p + t * q;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    #[test]
    fn two_stage_returns_what_the_exact_scan_returns_on_a_small_store() {
        let mut s = Store::default();
        for id in 0..400u64 {
            let base = spread(id % 40);
            s.put(
                id as i64,
                0,
                &encode(&towards(&base, &spread(1000 + id), 0.3)),
            );
        }
        for seed in 0..40 {
            let q = encode(&towards(&spread(seed), &spread(5000 + seed), 0.2));
            let exact = s.nearest_exact(&q, 0, 10, 0.0);
            assert_eq!(exact.len(), 10);
            // Rescoring every row is the exact scan.
            assert_eq!(s.nearest_two_stage(&q, 0, 10, 0.0, s.len()), exact);
            // A tenth of the rows finds the same nearest row: the query's own cluster
            // is far closer by sign than the rest.
            let coarse = s.nearest_two_stage(&q, 0, 10, 0.0, 40);
            assert_eq!(coarse.first(), exact.first(), "query {seed}");
        }
    }

    #[test]
    fn two_stage_honours_class_floor_and_the_newer_of_equals() {
        let q = spread(1);
        let mut s = Store::default();
        // Class 2 copies of the query itself: nearest by sign and by score.
        for id in 0..50 {
            s.put(id, 2, &encode(&q));
        }
        // Equal near neighbours, ids out of order; then unrelated rows.
        for id in [70, 90, 80, 60] {
            s.put(id, 0, &encode(&towards(&q, &spread(2), 0.2)));
        }
        for id in 100..300 {
            s.put(id, 0, &encode(&spread(id as u64 + 7)));
        }
        let qc = encode(&q);
        // Rescoring only `k` rows: the filtered copies must not take their places.
        let got: Vec<i64> = s
            .nearest_two_stage(&qc, 1, 2, 0.5, 2)
            .iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(got, vec![90, 80], "class 2 left out; of equals the newer");
        let got: Vec<i64> = s
            .nearest_two_stage(&qc, 1, 10, 0.5, 100)
            .iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(
            got,
            vec![90, 80, 70, 60],
            "the unrelated rows are under the floor"
        );
        let got = s.nearest_two_stage(&qc, 2, 3, 0.5, 3);
        assert_eq!(
            got.iter().map(|n| n.id).collect::<Vec<_>>(),
            vec![49, 48, 47]
        );
        assert!(s.nearest_two_stage(&qc, 1, 0, 0.0, 10).is_empty());
        assert!(s
            .nearest_two_stage(&encode(&[0.0; DIM]), 2, 5, 0.0, 10)
            .is_empty());
    }

    #[test]
    fn replaced_and_moved_rows_keep_their_sign_codes() {
        let mut s = Store::default();
        for id in 0..5 {
            s.put(id, 0, &encode(&spread(id as u64)));
        }
        s.put(2, 0, &encode(&spread(77)));
        s.remove(0);
        for (id, seed) in [(1, 1), (2, 77), (3, 3), (4, 4)] {
            let hit = s.nearest_two_stage(&encode(&spread(seed)), 0, 1, 0.5, 1);
            assert_eq!(hit.first().map(|n| n.id), Some(id));
        }
    }

    #[test]
    fn above_exact_up_to_rows_the_sign_stage_chooses_what_is_scored() {
        // The query leans on one large component; the wanted row shares it but has the
        // opposite sign everywhere else (close by cosine, far by sign). The filler rows
        // share every sign but the large one (close by sign, far by cosine).
        let mut query = [0.02f32; DIM];
        query[0] = 1.0;
        let mut wanted = [-0.01f32; DIM];
        wanted[0] = 1.0;
        let mut filler = [0.02f32; DIM];
        filler[0] = -1.0;
        let (query, wanted, filler) = (encode(&query), encode(&wanted), encode(&filler));
        let mut s = Store::default();
        s.put(0, 0, &wanted);
        for id in 1..EXACT_UP_TO as i64 {
            s.put(id, 0, &filler);
        }
        assert_eq!(s.len(), EXACT_UP_TO);
        let hit = s.nearest(&query, 0, 5, MIN);
        assert_eq!(
            hit.iter().map(|n| n.id).collect::<Vec<_>>(),
            vec![0],
            "exact scan"
        );
        s.put(EXACT_UP_TO as i64, 0, &filler);
        assert!(
            s.nearest(&query, 0, 5, MIN).is_empty(),
            "two stages: {RESCORE} fillers nearer by sign, all under the floor"
        );
        s.remove(1);
        assert_eq!(
            s.nearest(&query, 0, 5, MIN).len(),
            1,
            "back to the exact scan"
        );
    }

    const MIN: f32 = 0.25;
}
