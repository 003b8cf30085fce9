//! Every vector code in memory, in one flat array, and the nearest codes to a query by a
//! full scan. A million rows are 388 MB of codes; a scan of them is a few tens of
//! milliseconds on one core, which is the whole cost of the vector half of a recall. An
//! approximate index (HNSW and the like) would be faster at ten million rows, but costs
//! its own memory, build time and recall misses, and one person's history stays well
//! under that (see `MAX_VECTORS`).

use super::quant::{dot, Code};
use super::DIM;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

/// The most vectors held. Each costs about 420 bytes of memory (code, scale, id, class
/// and its place in the id map), so this is about 1.7 GB at most: a bound that decades of
/// one person's conversations do not reach, and that a flood of records cannot push past.
/// Rows past it are found by their words alone, and memoryd says so once.
pub const MAX_VECTORS: usize = 4_000_000;

#[derive(Debug, Default)]
pub struct Store {
    ids: Vec<i64>,
    classes: Vec<u8>,
    inv_scales: Vec<f32>,
    codes: Vec<i8>,
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
            let (head, tail) = self.codes.split_at_mut(last * DIM);
            head[i * DIM..(i + 1) * DIM].copy_from_slice(&tail[..DIM]);
            self.at.insert(moved, i);
        }
        self.ids.truncate(last);
        self.classes.truncate(last);
        self.inv_scales.truncate(last);
        self.codes.truncate(last * DIM);
    }

    /// The `k` rows at or below class rank `max_class` nearest to `query`, best first,
    /// with at least `floor` cosine.
    pub fn nearest(&self, query: &Code, max_class: u8, k: usize, floor: f32) -> Vec<Near> {
        if k == 0 || query.inv_scale == 0.0 {
            return Vec::new();
        }
        let mut best: BinaryHeap<Worst> = BinaryHeap::with_capacity(k + 1);
        // Comparing integer dot products against a threshold kept in the same units would
        // save the multiply, but the scales differ per row; the multiply is cheap beside
        // the 384 multiply-adds.
        let mut threshold = floor;
        for (i, code) in self.codes.chunks_exact(DIM).enumerate() {
            if self.classes[i] > max_class {
                continue;
            }
            let score = dot(&query.q, code) as f32 * self.inv_scales[i] * query.inv_scale;
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
}
