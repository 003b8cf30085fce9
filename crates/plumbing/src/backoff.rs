//! Doubling backoff, the one retry pacing both daemons' clients use: a first wait, each
//! next one twice the last, never more than a cap. The waits are the caller's, each named
//! with its reason where it is chosen.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first.min(max),
        }
    }

    /// The wait before retry number `n` (1 for the first retry), without any state.
    pub fn nth(first: Duration, max: Duration, n: u32) -> Duration {
        let doublings = n.saturating_sub(1).min(16);
        first.saturating_mul(1u32 << doublings).min(max)
    }

    /// The wait to use now; the one after it is doubled.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        wait
    }

    /// The wait `next_wait` will give, without taking it.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// Back to the first wait, after a success.
    pub fn reset(&mut self) {
        self.next = self.first.min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_reset() {
        let s = Duration::from_secs;
        let mut b = Backoff::new(s(1), s(5));
        let waits: Vec<_> = (0..5).map(|_| b.next_wait()).collect();
        assert_eq!(waits, [s(1), s(2), s(4), s(5), s(5)]);
        b.reset();
        assert_eq!(b.next_wait(), s(1));
        assert_eq!(Backoff::nth(s(1), s(5), 3), s(4));
        assert_eq!(Backoff::nth(s(1), s(5), u32::MAX), s(5));
    }
}
