//! The neighbours' words as a second, lower-weighted field of every row (docs/memoryd.md,
//! 'The neighbours' field').
//!
//! This module owns the `near` table: a contentless FTS5 table keyed by the row ids of
//! `docs`, holding for each row the words of the turns up to `near::NEAR_TURNS` before and
//! after it in the same epoch log (never across a log, so never across a session or an
//! epoch). It keeps that table in step with `docs`:
//!
//! - as rows land (`refresh`, in the chunk's own transaction): the new rows' field, and
//!   the field of the rows just before them, whose later neighbours have only now arrived;
//! - as rows go (`drop_file`): rows only ever leave `docs` a whole log at a time (a log
//!   rewritten, shrunk, removed or set aside), and a field only holds words of its own
//!   log, so dropping the log's fields drops every copy of its words;
//! - at open (`fill`), for an index made before the table existed.
//!
//! And it answers the searches of the field for `recall`: the rows whose neighbours
//! best match a question (`Index::near_matching`), and rows' bm25 in either table
//! (`Index::scores_of`).

use super::near::NEAR_TURNS;
use super::{Index, IndexError};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;

/// The table. Contentless (`content=''`): it keeps only the words' postings, not a copy
/// of the neighbours' text, so a row's text is stored once, in `docs`, and a forgotten
/// record's text is in no second place. `contentless_delete` lets a row's field be
/// replaced and dropped by row id alone. The tokenizer is `docs`'s, so word forms match
/// alike in both fields.
pub(super) const CREATE: &str = "CREATE VIRTUAL TABLE IF NOT EXISTS near USING fts5(
    words, content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
)";

/// Bytes of each neighbour's text that go into a row's field. A chat turn is a few
/// hundred bytes; a pasted page beside a short reply would otherwise put its 32 KiB of
/// words into the reply's field four times over (the index's size) and drown what the
/// turns next to it say. The first words of a long record are what a reply to it is
/// most likely about.
const NEIGHBOUR_BYTES: usize = 2 * 1024;

/// A log's rows from a row id on, in log order, with the text and class each lends.
const ROWS_FROM: &str =
    "SELECT id, c0, c6 FROM docs_content WHERE c8 = ?1 AND id >= ?2 ORDER BY id";
/// Up to `?3` rows of a log before a row id, nearest first.
const ROWS_BEFORE: &str =
    "SELECT id, c0, c6 FROM docs_content WHERE c8 = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3";
const DELETE: &str = "DELETE FROM near WHERE rowid = ?1";
const INSERT: &str = "INSERT INTO near (rowid, words) VALUES (?1, ?2)";

/// One row of a log as its neighbours see it.
struct Turn {
    id: i64,
    text: String,
    class: i64,
}

/// Brings the field of log `file`'s rows from `first` on (the rows a chunk just added),
/// and of the `NEAR_TURNS` rows before them, up to date. Runs in the chunk's transaction,
/// so the field never lags the rows a commit holds.
pub(super) fn refresh(conn: &Connection, file: i64, first: i64) -> rusqlite::Result<()> {
    let reach = i64::from(NEAR_TURNS);
    let read = |r: &rusqlite::Row<'_>| {
        Ok(Turn {
            id: r.get(0)?,
            text: r.get(1)?,
            class: r.get(2)?,
        })
    };
    // Twice the reach before: the earliest row whose field changes needs its own
    // `NEAR_TURNS` earlier neighbours too.
    let mut turns: Vec<Turn> = conn
        .prepare_cached(ROWS_BEFORE)?
        .query_map(params![file, first, 2 * reach], read)?
        .collect::<rusqlite::Result<_>>()?;
    turns.reverse();
    let earlier = turns.len();
    let later: Vec<Turn> = conn
        .prepare_cached(ROWS_FROM)?
        .query_map(params![file, first], read)?
        .collect::<rusqlite::Result<_>>()?;
    turns.extend(later);
    let from = earlier.saturating_sub(NEAR_TURNS as usize);
    write(conn, &turns, from)
}

/// Writes the field of `turns[from..]` from their neighbours within `turns`.
fn write(conn: &Connection, turns: &[Turn], from: usize) -> rusqlite::Result<()> {
    let mut delete = conn.prepare_cached(DELETE)?;
    let mut insert = conn.prepare_cached(INSERT)?;
    let reach = NEAR_TURNS as usize;
    for (i, turn) in turns.iter().enumerate().skip(from) {
        let lo = i.saturating_sub(reach);
        let hi = (i + reach).min(turns.len().saturating_sub(1));
        let mut words = String::new();
        for (j, n) in turns.iter().enumerate().take(hi + 1).skip(lo) {
            // A neighbour above this row's class lends it nothing: a caller allowed this
            // row but not that one must not find this row by that one's words. Within a
            // log the rolling label only rises, so this leaves out later turns only
            // after a rise.
            if j == i || n.class > turn.class {
                continue;
            }
            words.push_str(clip(&n.text));
            words.push('\n');
        }
        delete.execute([turn.id])?;
        if !words.is_empty() {
            insert.execute(params![turn.id, words])?;
        }
    }
    Ok(())
}

/// The first `NEIGHBOUR_BYTES` of `text`, cut on a character boundary.
fn clip(text: &str) -> &str {
    if text.len() <= NEIGHBOUR_BYTES {
        return text;
    }
    let mut end = NEIGHBOUR_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Drops the fields of log `file`'s rows: called in the transaction that drops the
/// rows themselves, before it does (the rows say which fields are theirs).
pub(super) fn drop_file(conn: &Connection, file: i64) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM near WHERE rowid IN (SELECT id FROM docs_content WHERE c8 = ?1)",
        [file],
    )
    .map(drop)
}

/// Logs filled per transaction when an older index gains the table (`fill`): each
/// commit records how far the fill got, so a memoryd stopped part way (a start-up
/// timeout at a million rows) goes on from there at its next start instead of starting
/// over; a few hundred logs are a fraction of a second of work.
const FILL_LOGS: usize = 256;

/// Gives an index made before the table existed its table, filled from the rows already
/// there, a log at a time, `FILL_LOGS` logs a transaction, resuming where a fill that was
/// stopped left off: a rebuild from the logs instead would embed every row again (hours
/// at a million). Returns whether it filled anything.
pub(super) fn fill(conn: &mut Connection) -> rusqlite::Result<bool> {
    conn.execute_batch(CREATE)?;
    let done: i64 = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'near_filled'",
            [],
            |r| r.get::<_, String>(0),
        )
        .optional()?
        .and_then(|v| v.parse().ok())
        .unwrap_or(i64::MIN);
    let files: Vec<i64> = conn
        .prepare("SELECT id FROM files WHERE id > ?1 ORDER BY id")?
        .query_map([done], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for batch in files.chunks(FILL_LOGS) {
        let tx = conn.transaction()?;
        for &file in batch {
            refresh(&tx, file, i64::MIN)?;
        }
        if let Some(last) = batch.last() {
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('near_filled', ?1)",
                [last.to_string()],
            )?;
        }
        tx.commit()?;
    }
    conn.execute("DELETE FROM meta WHERE key = 'near_filled'", [])?;
    Ok(!files.is_empty())
}

/// Fields a search of the field scores at most: the newest this many matching the
/// question. Each word is in up to four fields, so a rare word's fields alone can be
/// four times `COMMON_ROWS`, and bm25 sorts every row it scores; bounded as the rows'
/// own search of several rare words is (`Index::window_start`), a recall costs the same
/// at a million rows. The answer is most often recent talk.
const WINDOW_ROWS: u32 = super::common_words::COMMON_ROWS;

/// The smallest row id among the newest `?2 + 1` fields matching `?1`.
const WINDOW_START: &str =
    "SELECT rowid FROM near WHERE near MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2";
/// How one search of the field is made: the expression, the window's start, how many.
const MATCHING: &str =
    "SELECT rowid, bm25_by_phrase(near, 'near', ?1) FROM near WHERE near MATCH ?1 \
    AND rowid >= ?2 ORDER BY bm25_by_phrase(near, 'near', ?1), rowid DESC LIMIT ?3";
/// Rows' bm25 in a table, for rows found by the other's search: every row asked about
/// in one statement, within the range of their ids (FTS5 walks the expression's matches
/// from `?2` to `?3` only) and then kept to those asked for (`?4`, a JSON array; the `+`
/// keeps SQLite from handing the list to FTS5 as one query per id). FTS5's bm25 counts
/// each phrase's rows over the whole table once a statement, so the score of a row is
/// the same asked alone or among others; asked a row at a time, that count was made
/// again for every row, most of a recall's searching among long records
/// (docs/measurements/memoryd.md, 'Long records').
const NEAR_SCORES: &str =
    "SELECT rowid, bm25_by_phrase(near, 'near', ?1) FROM near WHERE near MATCH ?1 \
    AND rowid >= ?2 AND rowid <= ?3 AND +rowid IN (SELECT value FROM json_each(?4))";
const OWN_SCORES: &str =
    "SELECT rowid, bm25_by_phrase(docs, 'docs', ?1) FROM docs WHERE docs MATCH ?1 \
    AND rowid >= ?2 AND rowid <= ?3 AND +rowid IN (SELECT value FROM json_each(?4))";

impl Index {
    /// Up to `n` (rowid, bm25 of the field) whose neighbours' words best match `expr`,
    /// among the newest `WINDOW_ROWS` fields matching it. Not filtered by class: the
    /// caller reads each row with its class bound.
    ///
    /// `rows` is how many rows of `docs` match `expr` at most: each lends its words to the
    /// fields of at most `2 * NEAR_TURNS` neighbours, so when that many fields are fewer
    /// than the window, the window starts at the first and is not looked for.
    pub(super) fn near_matching(
        &self,
        expr: &str,
        rows: u64,
        n: u32,
    ) -> Result<Vec<(i64, f64)>, IndexError> {
        let fields = rows.saturating_mul(2 * u64::from(NEAR_TURNS));
        let run = || -> rusqlite::Result<Vec<(i64, f64)>> {
            let from: i64 = if fields < u64::from(WINDOW_ROWS) {
                i64::MIN
            } else {
                self.conn
                    .prepare_cached(WINDOW_START)?
                    .query_row(params![expr, WINDOW_ROWS - 1], |r| r.get(0))
                    .optional()?
                    .unwrap_or(i64::MIN)
            };
            let mut stmt = self.conn.prepare_cached(MATCHING)?;
            let rows = stmt.query_map(params![expr, from, n], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        };
        run().map_err(|e| self.sql(e))
    }

    /// The bm25 of each of `rowids` for `expr` in the field (`near: true`) or in its own
    /// text, by row id; a row that does not match there is left out (it scores 0).
    pub(super) fn scores_of(
        &self,
        near: bool,
        expr: &str,
        rowids: &[i64],
    ) -> Result<HashMap<i64, f64>, IndexError> {
        let (Some(&low), Some(&high)) = (rowids.iter().min(), rowids.iter().max()) else {
            return Ok(HashMap::new());
        };
        let ids: Vec<String> = rowids.iter().map(i64::to_string).collect();
        let ids = format!("[{}]", ids.join(","));
        let run = || -> rusqlite::Result<HashMap<i64, f64>> {
            let mut stmt = self
                .conn
                .prepare_cached(if near { NEAR_SCORES } else { OWN_SCORES })?;
            let rows = stmt.query_map(params![expr, low, high, ids], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
            })?;
            rows.collect()
        };
        run().map_err(|e| self.sql(e))
    }
}
