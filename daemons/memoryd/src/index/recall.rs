//! Answering a recall (docs/memoryd.md) in two steps, so another ranking (vectors)
//! can be fused beside the lexical one:
//!
//! 1. `candidates`: the records holding all of the query's groups first (their AND),
//!    then, when those do not fill the candidates, the records holding any (the OR),
//!    each ranked by bm25 and filtered to the caller's `max_class`: row ids with their
//!    score and rank, nothing read but the full-text index. An all-words match so ranks
//!    above a partial one (docs/memoryd.md), and a question of common words costs an AND, which
//!    FTS5 walks by its rarest term, instead of scoring every row holding any of them.
//! 2. `search`: the candidates' rows read (searched again, wider, when most of them
//!    are questions), the best candidates' neighbouring turns looked up (`near`),
//!    everything re-ranked by how much of the question each holds and its neighbours
//!    lend it (`rank`), identical texts collapsed, the best `limit` returned.

use super::memo::{Key, Memo};
use super::rank::{Candidate, Ranked, Rarity, Words};
use super::{class_rank, near, rank, Index, IndexError};
use crate::query::{self, time, Passage, Query};
use proto::label::DataClass;
use proto::memory::{Hit, MAX_HITS};
use rusqlite::{params, OptionalExtension};
use std::collections::{HashMap, HashSet};

/// Candidates the lexical step hands to the re-ranking per hit asked for, and at least
/// `MIN_CANDIDATES`: enough that the answer bm25 ranked a little low (it holds all the
/// words but a common one twice less) is still in reach, and that duplicates collapsing
/// leave `limit` hits; few enough that reading them costs little beside the search.
/// Measured on the evaluation set: 3 per hit and 30 at least rank exactly as these do.
pub(crate) const CANDIDATES_PER_HIT: u32 = 2;
pub(crate) const MIN_CANDIDATES: u32 = 20;

/// Candidates with their rows, in the search's order.
type Rows = Vec<(Candidate, Hit)>;

/// Rows already read in this recall, each with its log, by row id: a wider search's
/// candidates begin with the narrower one's.
type Read = HashMap<i64, (Hit, i64)>;

/// How many times more candidates are searched for when most of those found are
/// questions (an owner asking about the same thing again and again): enough to reach
/// past a few dozen such rows to the answers, and a second search only then.
const QUESTION_WIDEN: u32 = 4;

/// How one lexical search is made (see `common` for why there are three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Search<'a> {
    /// Ranked by bm25 over `expr`, rows with a rowid of at least `from`.
    Scored { expr: &'a str, from: i64 },
    /// Ranked by bm25 over `scored` (the rare groups), among the rows that also match
    /// `within` (every group): bm25 counts every row of each word it scores, which for
    /// a common word is most of the index.
    ScoredWithin { scored: &'a str, within: &'a str },
    /// The newest rows matching `expr`, unscored (`rank::UNSCORED`): every word is
    /// common, so bm25 would count most of the index to tell them apart by little.
    Newest { expr: &'a str },
}

impl Search<'_> {
    /// The search's key in the recall's memo (`memo`).
    fn key(&self) -> Key {
        let (kind, expr, second) = match *self {
            Search::Scored { expr, from } => ("scored", expr, from.to_string()),
            Search::ScoredWithin { scored, within } => ("within", scored, within.to_string()),
            Search::Newest { expr } => ("newest", expr, String::new()),
        };
        Key {
            kind,
            expr: expr.to_string(),
            second,
        }
    }
}

/// The statement for a search: bm25 ranks better matches lower; ties go to the newer
/// record, the larger rowid (see `rowid`). Only row ids and scores are selected, so the
/// sort holds small rows. `?1` is the expression, `?2` the lower rowid (FTS5 starts its
/// doclist walk there, so rows before it cost nothing) or, for `ScoredWithin`, the
/// expression to be within, `?3` how many, `?4` the class bound when `filtered`: that
/// filter reads each matching row's stored columns, so a caller allowed everything the
/// index may hold goes without it. The `+` keeps SQLite from handing the `IN` to FTS5 as
/// rowid lookups, one full query each; the rowids are gathered once instead.
fn sql(search: &Search<'_>, filtered: bool) -> String {
    let class = if filtered { " AND class <= ?4" } else { "" };
    match search {
        Search::Scored { .. } => format!(
            "SELECT rowid, bm25_by_phrase(docs, 'docs', ?1) FROM docs WHERE docs MATCH ?1 AND rowid >= ?2{class} \
             ORDER BY bm25_by_phrase(docs, 'docs', ?1), rowid DESC LIMIT ?3"
        ),
        Search::ScoredWithin { .. } => format!(
            "SELECT rowid, bm25_by_phrase(docs, 'docs', ?1) FROM docs WHERE docs MATCH ?1 \
             AND +rowid IN (SELECT rowid FROM docs WHERE docs MATCH ?2){class} \
             ORDER BY bm25_by_phrase(docs, 'docs', ?1), rowid DESC LIMIT ?3"
        ),
        Search::Newest { .. } => format!(
            "SELECT rowid, {:.1} FROM docs WHERE docs MATCH ?1 AND rowid >= ?2{class} \
             ORDER BY rowid DESC LIMIT ?3",
            rank::UNSCORED
        ),
    }
}

/// Candidates read per one asked for when they are found unscored (`Search::Newest`):
/// the re-ranking then has more than the very newest to find the phrase among, and rows
/// cost a few microseconds each to read.
const NEWEST_WIDEN: u32 = 4;

/// Common groups a question needs beside its rare ones before the newest rows holding
/// all of them are candidates too: one common word alone is too weak to bring a row.
const MIN_COMMON_FOR_NEWEST: usize = 2;

/// Appends the rows of `rows` not already in `found`, as partial (any-words) matches,
/// while `found` holds fewer than `cap`.
fn add_new(found: &mut Vec<(i64, f64, bool)>, rows: Vec<(i64, f64)>, cap: usize) {
    for (rowid, bm25) in rows {
        if found.len() >= cap {
            break;
        }
        if !found.iter().any(|f| f.0 == rowid) {
            found.push((rowid, bm25, false));
        }
    }
}

impl Index {
    /// The best `limit` hits (at most `MAX_HITS`) for `query` at or below `max_class`,
    /// from what is indexed now; callers catch up first for read-your-writes. Time cues
    /// ("yesterday") count from today's date.
    pub fn search(
        &self,
        query: &str,
        max_class: DataClass,
        limit: u32,
    ) -> Result<Vec<Hit>, IndexError> {
        Ok(self
            .search_at(query, max_class, limit, time::today())?
            .into_iter()
            .map(|r| r.hit)
            .collect())
    }

    /// `search` with each hit's relevance, relative time cues counted from `now`.
    pub fn search_at(
        &self,
        query: &str,
        max_class: DataClass,
        limit: u32,
        now: time::Day,
    ) -> Result<Vec<Ranked>, IndexError> {
        Ok(self.search_words(query, max_class, limit, now)?.hits)
    }

    /// `search_at` with how rare each of the question's groups is, for the fusion
    /// (`hybrid`) to weigh a hit by which of the question's words it holds.
    pub fn search_words(
        &self,
        query: &str,
        max_class: DataClass,
        limit: u32,
        now: time::Day,
    ) -> Result<Words, IndexError> {
        let limit = limit.min(MAX_HITS);
        let Some(parsed) = query::parse(query) else {
            return Ok(Words::default());
        };
        if limit == 0 {
            return Ok(Words::default());
        }
        let span = time::cue(query, now);
        // Each phrase's rows counted once for all of this recall's statements (`bm25`).
        let _counted = super::bm25::Recall::begin();
        let wanted = (limit * CANDIDATES_PER_HIT).max(MIN_CANDIDATES);
        let frequencies = self.frequencies(&parsed)?;
        let mut memo = Memo::new(QUESTION_WIDEN);
        let (mut rows, mut files) = self.read(
            &self.candidates(&mut memo, &parsed, &frequencies, max_class, wanted, limit)?,
            max_class,
            &mut Read::new(),
        )?;
        // Earlier questions hold a question's words better than its answer does, and
        // rank low (`rank::is_question`); when they are most of the candidates, the
        // answer may be just past them, so the search is made again, wider.
        let questions = rows
            .iter()
            .filter(|(_, h)| rank::is_question(&h.text))
            .count();
        if questions * 2 > rows.len() {
            let wider = wanted.saturating_mul(QUESTION_WIDEN);
            memo.last_ask();
            let candidates =
                self.candidates(&mut memo, &parsed, &frequencies, max_class, wider, limit)?;
            let mut read: Read = rows
                .into_iter()
                .zip(files)
                .map(|((c, hit), file)| (c.rowid, (hit, file)))
                .collect();
            (rows, files) = self.read(&candidates, max_class, &mut read)?;
        }
        // The neighbours' field counts through the groups each row lacks (`near_field`):
        // a turn among turns on the same words must not be lifted by them past a rarer
        // match, and a row holding every group needs no field.
        // Each row's best passage, found once and handed to the ranking: a pasted
        // document's windows are the most of what a recall among such records costs.
        let mut passages: HashMap<i64, Passage> = HashMap::with_capacity(rows.len());
        // Rows lacking the same groups are scored in one statement (`scores_of`).
        let mut lacking: HashMap<String, Vec<i64>> = HashMap::new();
        for (c, hit) in &rows {
            let passage = self.passage(&parsed, c.rowid, hit);
            passages.insert(c.rowid, passage);
            let held = passage.cover.held;
            let expr = parsed.expression_of(|i| {
                held & (1 << i) == 0 && frequencies.get(i).is_some_and(|&f| f <= self.common_rows)
            });
            if let Some(expr) = expr {
                lacking.entry(expr).or_default().push(c.rowid);
            }
        }
        let mut near_scores: HashMap<i64, f64> = HashMap::new();
        for (expr, rowids) in &lacking {
            near_scores.extend(self.scores_of(true, expr, rowids)?);
        }
        for (c, _) in &mut rows {
            c.near_bm25 = near_scores.get(&c.rowid).copied().unwrap_or(0.0);
        }
        // The best candidates' neighbours (`near`): each link lends the neighbour part
        // of the candidate's relevance; a neighbour not itself a candidate is read too.
        let mut links = Vec::new();
        let mut known: HashSet<i64> = rows.iter().map(|(c, _)| c.rowid).collect();
        let sources: Vec<(i64, i64)> = rows
            .iter()
            .zip(&files)
            .take(near::NEAR_SOURCES)
            .map(|((c, _), &f)| (c.rowid, f))
            .collect();
        // Rows reached only as neighbours are read up to `near::REACHED_BYTES` of text.
        let mut reached = 0usize;
        for (rowid, file) in sources {
            for n in self.neighbours(file, rowid)? {
                if reached < near::REACHED_BYTES && known.insert(n) {
                    let Some((hit, _)) = self.neighbour_row(n, max_class)? else {
                        continue;
                    };
                    reached += hit.text.len();
                    rows.push((Candidate::reached(n, rows.len()), hit));
                }
                links.push((rowid, n));
            }
        }
        for (c, hit) in &rows {
            if c.reached {
                passages.insert(c.rowid, self.passage(&parsed, c.rowid, hit));
            }
        }
        let ranked = rank::rerank(
            &parsed,
            span.as_ref(),
            rows,
            &links,
            &passages,
            limit as usize,
        );
        Ok(Words {
            hits: ranked,
            rarity: Rarity::of(&frequencies),
        })
    }

    /// How many rows match each of the query's groups, counted up to `COMMON_ROWS + 1`
    /// (`common_words`).
    pub(crate) fn frequencies(&self, query: &Query) -> Result<Vec<u32>, IndexError> {
        (0..query.groups().len())
            .map(|i| self.frequency(&query.group_expression(i).unwrap_or_default()))
            .collect()
    }

    /// The lexical step: up to `n` rows at or below `max_class` holding all of the
    /// query's groups, best first by bm25, then newest; then, only when fewer than
    /// `enough` (the hits asked for) hold them all, the rows holding any. All-words
    /// matches rank above partial ones, so with `enough` of them the partial ones could
    /// not reach the answer, and the OR, which scores every row holding any common word,
    /// is not run. Common words are left out of the OR when rarer ones are asked for,
    /// and a search of common words only is made over its newest matches (`common`):
    /// `frequencies` are the groups' matching rows (`frequencies`).
    pub(super) fn candidates(
        &self,
        memo: &mut Memo,
        query: &Query,
        frequencies: &[u32],
        max_class: DataClass,
        n: u32,
        enough: u32,
    ) -> Result<Vec<Candidate>, IndexError> {
        let groups = query.groups().len();
        let common: Vec<bool> = (0..groups)
            .map(|i| frequencies.get(i).is_some_and(|&f| f > self.common_rows))
            .collect();
        let rare = common.iter().filter(|&&c| !c).count();
        let rare_all = query.all_expression_of(|i| !common[i]);
        let rare_any = query.expression_of(|i| !common[i]);
        let mut found: Vec<(i64, f64, bool)> = Vec::new();
        let all = query.all_expression();
        if let Some(all) = &all {
            let search = match &rare_all {
                None => Search::Newest { expr: all },
                Some(_) if rare == groups => Search::Scored {
                    expr: all,
                    from: i64::MIN,
                },
                // The rare groups bound the AND by their own matches.
                Some(scored) => Search::ScoredWithin {
                    scored,
                    within: all,
                },
            };
            found.extend(
                self.matching(memo, search, max_class, n)?
                    .into_iter()
                    .map(|(r, s)| (r, s, true)),
            );
        }
        // Questions holding every word are not answers (`rank::is_question`): the
        // owner asking the same thing again must not keep the answer out of the
        // candidates, so only the other all-words rows count as enough.
        if all.is_none()
            || self.answers(memo, &found, enough.min(n) as usize)? < enough.min(n) as usize
        {
            let any = query.expression();
            let search = match &rare_any {
                None => Search::Newest { expr: &any },
                // One rare group matches no more than `COMMON_ROWS`; several may, so
                // they are ranked over the newest that many of their matches.
                Some(expr) => Search::Scored {
                    expr,
                    from: if rare == 1 {
                        i64::MIN
                    } else {
                        memo.window(expr, || self.window_start(expr))?
                    },
                },
            };
            let cap = match search {
                Search::Newest { .. } => n.saturating_mul(NEWEST_WIDEN),
                _ => n,
            } as usize;
            add_new(&mut found, self.matching(memo, search, max_class, n)?, cap);
            // The rare groups' rows leave out a record holding the question's common
            // words but none of its rare ones ("daily" asked, "every morning" written):
            // the newest rows holding every common group join the candidates, and the
            // re-ranking weighs them by how much of the question they hold.
            let common_groups = groups - rare;
            if rare > 0 && common_groups >= MIN_COMMON_FOR_NEWEST {
                if let Some(expr) = query.all_expression_of(|i| common[i]) {
                    let room = found.len() + n as usize;
                    let newest =
                        self.matching(memo, Search::Newest { expr: &expr }, max_class, n)?;
                    add_new(&mut found, newest, room);
                }
            }
        }
        let mut out: Vec<Candidate> = found
            .into_iter()
            .enumerate()
            .map(|(rank, (rowid, bm25, all))| Candidate {
                rowid,
                all,
                bm25,
                rank,
                reached: false,
                near_bm25: 0.0,
                by_near: false,
            })
            .collect();
        // The neighbours' field (`near_field`): the rows whose neighbours best hold the
        // question's rarer words join the candidates, after every row found by its own
        // words. A question of common words only does not search it: its words are in
        // most fields. Each row's field score is taken later, by the groups it lacks.
        if let Some(expr) = &rare_any {
            // The rare groups' rows, each counted exactly (`frequencies`).
            let rows: u64 = (0..groups)
                .filter(|&i| !common[i])
                .map(|i| u64::from(frequencies.get(i).copied().unwrap_or(u32::MAX)))
                .sum();
            let mut by_near: Vec<i64> = Vec::new();
            let key = Key {
                kind: "near",
                expr: expr.clone(),
                second: String::new(),
            };
            let near = memo.rows(key, n, true, |n| self.near_matching(expr, rows, n))?;
            for (rowid, _) in near {
                if !out.iter().any(|c| c.rowid == rowid) && !by_near.contains(&rowid) {
                    by_near.push(rowid);
                }
            }
            let own = self.scores_of(false, expr, &by_near)?;
            for rowid in by_near {
                let rank = out.len();
                out.push(Candidate {
                    rowid,
                    all: false,
                    bm25: own.get(&rowid).copied().unwrap_or(0.0),
                    rank,
                    reached: false,
                    near_bm25: 0.0,
                    by_near: true,
                });
            }
        }
        Ok(out)
    }

    /// Row `rowid`'s best passage for `query`, and whether it insists, both from what is
    /// kept of the row when it was read before (`kept_words`).
    fn passage(&self, query: &Query, rowid: i64, hit: &Hit) -> Passage {
        Passage {
            insists: self.kept.insists(rowid, &hit.text, hit.label.untrusted),
            ..self.kept.passage(query, rowid, &hit.text)
        }
    }

    /// The candidates' rows that still exist at or below `max_class`, with their logs,
    /// taken from `read` when this recall read them already.
    fn read(
        &self,
        found: &[Candidate],
        max_class: DataClass,
        read: &mut Read,
    ) -> Result<(Rows, Vec<i64>), IndexError> {
        let mut rows = Vec::with_capacity(found.len());
        let mut files = Vec::with_capacity(found.len());
        for c in found {
            let row = match read.remove(&c.rowid) {
                Some(row) => Some(row),
                None => self.neighbour_row(c.rowid, max_class)?,
            };
            if let Some((hit, file)) = row {
                rows.push((*c, hit));
                files.push(file);
            }
        }
        Ok((rows, files))
    }

    /// How many of `found` (up to `enough`) are not questions (`rank::is_question`).
    fn answers(
        &self,
        memo: &mut Memo,
        found: &[(i64, f64, bool)],
        enough: usize,
    ) -> Result<usize, IndexError> {
        if found.len() < enough {
            return Ok(found.len());
        }
        let is_answer = |rowid: i64| -> rusqlite::Result<bool> {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT text FROM docs WHERE rowid = ?1")?;
            let text: Option<String> = stmt.query_row([rowid], |r| r.get(0)).optional()?;
            Ok(text.is_some_and(|t| !rank::is_question(&t)))
        };
        let mut count = 0;
        for &(rowid, _, _) in found {
            if memo
                .answer(rowid, || is_answer(rowid))
                .map_err(|e| self.sql(e))?
            {
                count += 1;
                if count >= enough {
                    break;
                }
            }
        }
        Ok(count)
    }

    /// Up to `n` (rowid, bm25) found by `search` at or below `max_class`, best first
    /// (`NEWEST_WIDEN` times as many for an unscored search).
    fn matching(
        &self,
        memo: &mut Memo,
        search: Search<'_>,
        max_class: DataClass,
        n: u32,
    ) -> Result<Vec<(i64, f64)>, IndexError> {
        let read = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?));
        // Everything in the index is at or below its own class, so a caller cleared for
        // that much needs no per-row filter.
        let filtered = max_class < self.max_class;
        let (expr, second, n): (&str, rusqlite::types::Value, u32) = match search {
            Search::Scored { expr, from } => (expr, from.into(), n),
            Search::ScoredWithin { scored, within } => (scored, within.to_string().into(), n),
            Search::Newest { expr } => (expr, i64::MIN.into(), n.saturating_mul(NEWEST_WIDEN)),
        };
        let run = |n: u32| -> rusqlite::Result<Vec<(i64, f64)>> {
            let mut stmt = self.conn.prepare_cached(&sql(&search, filtered))?;
            let rows = if filtered {
                stmt.query_map(params![expr, second, n, class_rank(max_class)], read)?
            } else {
                stmt.query_map(params![expr, second, n], read)?
            };
            rows.collect()
        };
        let scored = !matches!(search, Search::Newest { .. });
        memo.rows(search.key(), n, scored, run)
            .map_err(|e| self.sql(e))
    }
}
