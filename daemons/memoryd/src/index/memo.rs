//! One recall's searches, each made once (docs/memoryd.md, 'Questions are not answers').
//!
//! A recall whose candidates are mostly the owner's earlier questions searches again for
//! `recall::QUESTION_WIDEN` times as many. Without this memo the second search made every
//! statement of the first again. It owns, for the length of one recall:
//!
//! - each search's rows (`rows`). A scored search costs the same for 20 rows as for 80:
//!   FTS5 scores every match to sort them. So it is run once for `ahead` times the rows
//!   asked, and each ask gets the first of them. The best `n` by (bm25, newest) are the
//!   first `n` of the best `4n`, because that order is total (row ids are unique), so
//!   every ask gets exactly the rows its own statement would have returned. An unscored
//!   search (the newest matches) costs by the rows it walks, so it runs for what is asked,
//!   and again only when more are asked than it ran for;
//! - each window start (`window`), and whether a row is an answer (`answer`).
//!
//! Nothing here outlives the recall, so a row written or forgotten meanwhile cannot be
//! answered from it: the recall runs on one connection with no write between its
//! statements.

use std::collections::HashMap;

/// Which search, as its statement's kind and parameters: equal keys run equal statements.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub kind: &'static str,
    pub expr: String,
    pub second: String,
}

/// A search's rows, with the limit its statement ran with.
struct Found {
    limit: u32,
    rows: Vec<(i64, f64)>,
}

#[derive(Default)]
pub(super) struct Memo {
    /// How many times the rows asked a scored search is run for: the most a later ask
    /// of the same recall can want, or 1 when no later ask can want more.
    ahead: u32,
    found: HashMap<Key, Found>,
    windows: HashMap<String, i64>,
    answers: HashMap<i64, bool>,
}

impl Memo {
    /// A memo whose scored searches run for `ahead` times what is first asked of them.
    pub(super) fn new(ahead: u32) -> Memo {
        Memo {
            ahead: ahead.max(1),
            ..Memo::default()
        }
    }

    /// From now on no ask will want more than it asks: searches not yet made run for
    /// what is asked only.
    pub(super) fn last_ask(&mut self) {
        self.ahead = 1;
    }

    /// The first `limit` rows of the search `key`. `run(n)` runs its statement with
    /// `LIMIT n`; `scored` says whether its cost is the same for any `n` (see the module
    /// doc).
    pub(super) fn rows<E>(
        &mut self,
        key: Key,
        limit: u32,
        scored: bool,
        run: impl FnOnce(u32) -> Result<Vec<(i64, f64)>, E>,
    ) -> Result<Vec<(i64, f64)>, E> {
        let first = |rows: &[(i64, f64)]| rows.iter().take(limit as usize).copied().collect();
        if let Some(found) = self.found.get(&key) {
            // Fewer rows than its limit: the statement returned every match.
            let complete = found.rows.len() < found.limit as usize;
            if found.limit >= limit || complete {
                return Ok(first(&found.rows));
            }
        }
        let ask = if scored {
            limit.saturating_mul(self.ahead)
        } else {
            limit
        };
        let rows = run(ask)?;
        let out = first(&rows);
        self.found.insert(key, Found { limit: ask, rows });
        Ok(out)
    }

    /// The window start for `expr`, found by `run` once.
    pub(super) fn window<E>(
        &mut self,
        expr: &str,
        run: impl FnOnce() -> Result<i64, E>,
    ) -> Result<i64, E> {
        if let Some(&start) = self.windows.get(expr) {
            return Ok(start);
        }
        let start = run()?;
        self.windows.insert(expr.to_string(), start);
        Ok(start)
    }

    /// Whether row `rowid` is an answer (it exists and is not a question), told by `run`
    /// once.
    pub(super) fn answer<E>(
        &mut self,
        rowid: i64,
        run: impl FnOnce() -> Result<bool, E>,
    ) -> Result<bool, E> {
        if let Some(&answer) = self.answers.get(&rowid) {
            return Ok(answer);
        }
        let answer = run()?;
        self.answers.insert(rowid, answer);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn key(expr: &str) -> Key {
        Key {
            kind: "scored",
            expr: expr.to_string(),
            second: String::new(),
        }
    }

    /// A statement over `matches` rows, best first, recording each limit it ran with.
    fn statement(
        matches: usize,
        ran: &RefCell<Vec<u32>>,
    ) -> impl Fn(u32) -> Result<Vec<(i64, f64)>, ()> + '_ {
        move |n| {
            ran.borrow_mut().push(n);
            Ok((0..matches.min(n as usize))
                .map(|i| (i as i64, -(i as f64)))
                .collect())
        }
    }

    #[test]
    fn a_scored_search_runs_once_for_the_widest_ask_and_each_ask_gets_its_first_rows() {
        let ran = RefCell::new(Vec::new());
        let run = statement(1000, &ran);
        let mut memo = Memo::new(4);
        let narrow = memo.rows(key("a"), 20, true, &run).unwrap();
        memo.last_ask();
        let wide = memo.rows(key("a"), 80, true, &run).unwrap();
        assert_eq!(*ran.borrow(), vec![80]);
        assert_eq!(narrow, run(20).unwrap());
        assert_eq!(wide, run(80).unwrap());
    }

    #[test]
    fn an_unscored_search_runs_for_what_is_asked_and_again_for_more() {
        let ran = RefCell::new(Vec::new());
        let run = statement(1000, &ran);
        let mut memo = Memo::new(4);
        memo.rows(key("a"), 20, false, &run).unwrap();
        memo.rows(key("a"), 10, false, &run).unwrap();
        let wide = memo.rows(key("a"), 80, false, &run).unwrap();
        assert_eq!(*ran.borrow(), vec![20, 80]);
        assert_eq!(wide.len(), 80);
    }

    #[test]
    fn a_search_that_returned_every_match_is_not_run_again_for_more() {
        let ran = RefCell::new(Vec::new());
        let run = statement(7, &ran);
        let mut memo = Memo::new(1);
        memo.rows(key("a"), 20, false, &run).unwrap();
        let wide = memo.rows(key("a"), 80, false, &run).unwrap();
        assert_eq!(*ran.borrow(), vec![20]);
        assert_eq!(wide.len(), 7);
    }

    #[test]
    fn after_the_last_ask_a_new_search_runs_for_what_is_asked() {
        let ran = RefCell::new(Vec::new());
        let run = statement(1000, &ran);
        let mut memo = Memo::new(4);
        memo.last_ask();
        memo.rows(key("b"), 80, true, &run).unwrap();
        assert_eq!(*ran.borrow(), vec![80]);
    }

    #[test]
    fn different_searches_are_kept_apart() {
        let ran = RefCell::new(Vec::new());
        let run = statement(1000, &ran);
        let mut memo = Memo::new(1);
        memo.rows(key("a"), 5, true, &run).unwrap();
        memo.rows(key("b"), 5, true, &run).unwrap();
        assert_eq!(ran.borrow().len(), 2);
    }
}
