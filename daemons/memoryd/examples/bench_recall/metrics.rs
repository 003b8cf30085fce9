//! Recall@k, mean reciprocal rank and the evidence found, over a question set.

/// How one question fared: where its first answering hit was (`None`: not in the depth
/// asked) and the share of its evidence in the first 5 and 10 hits.
pub struct One {
    pub first: Option<usize>,
    pub evidence_at_5: f64,
    pub evidence_at_10: f64,
}

#[derive(Default, Clone)]
pub struct Scores {
    all: Vec<(Option<usize>, f64, f64)>,
}

/// A measure's name and how it is computed.
pub type Measure = (&'static str, fn(&Scores) -> f64);

/// The measures printed, in order, one table each.
pub const MEASURES: [Measure; 6] = [
    ("recall@1", |s| s.recall_at(1)),
    ("recall@5", |s| s.recall_at(5)),
    ("recall@10", |s| s.recall_at(10)),
    ("MRR@10", Scores::mrr),
    ("evidence found at 5", |s| s.mean(|e| e.1)),
    ("evidence found at 10", |s| s.mean(|e| e.2)),
];

impl Scores {
    /// Adds every question `other` scored (another haystack's).
    pub fn extend(&mut self, other: &Scores) {
        self.all.extend_from_slice(&other.all);
    }

    pub fn add(&mut self, one: &One) {
        self.all
            .push((one.first, one.evidence_at_5, one.evidence_at_10));
    }

    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// The share of questions answered in the first `k` hits.
    pub fn recall_at(&self, k: usize) -> f64 {
        self.mean(|e| f64::from(u8::from(e.0.is_some_and(|i| i < k))))
    }

    /// The mean of 1/(position+1) of the first answer, 0 when none.
    pub fn mrr(&self) -> f64 {
        self.mean(|e| e.0.map_or(0.0, |i| 1.0 / (i + 1) as f64))
    }

    fn mean(&self, f: impl Fn(&(Option<usize>, f64, f64)) -> f64) -> f64 {
        self.all.iter().map(f).sum::<f64>() / self.all.len().max(1) as f64
    }
}
