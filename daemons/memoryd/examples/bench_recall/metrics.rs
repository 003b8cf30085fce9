//! Recall@k and mean reciprocal rank over a question set.

/// Where each question's first answering hit was (`None`: not in the depth asked).
#[derive(Default)]
pub struct Scores {
    positions: Vec<Option<usize>>,
}

impl Scores {
    pub fn add(&mut self, at: Option<usize>) {
        self.positions.push(at);
    }

    /// The share of questions answered in the first `k` hits.
    pub fn recall_at(&self, k: usize) -> f64 {
        let n = self
            .positions
            .iter()
            .filter(|p| p.is_some_and(|i| i < k))
            .count();
        n as f64 / self.positions.len().max(1) as f64
    }

    /// The mean of 1/(position+1) of the first answer, 0 when none.
    pub fn mrr(&self) -> f64 {
        let sum: f64 = self
            .positions
            .iter()
            .map(|p| p.map_or(0.0, |i| 1.0 / (i + 1) as f64))
            .sum();
        sum / self.positions.len().max(1) as f64
    }
}

/// The position of the first of `hits` (up to `depth`) that contains `answer`.
pub fn first_answer(hits: &[String], answer: &str, depth: usize) -> Option<usize> {
    let answer = answer.to_lowercase();
    hits.iter()
        .take(depth)
        .position(|h| h.to_lowercase().contains(&answer))
}
