//! The text retrievers compared: memoryd's words-only recall, and bare FTS5 tables holding
//! exactly the rows memoryd indexed, asked the way a plain FTS5 user would, with the
//! default tokenizer and with porter stemming.

use crate::System;
use memoryd::index::{Budget, Index};
use memoryd::query::time;
use proto::label::DataClass;
use std::path::Path;

pub const WORDS: &str = "words only";
pub const VECTORS: &str = "vector only";
pub const FUSED: &str = "default (fused)";
pub const FTS5: &str = "plain FTS5";
pub const PORTER: &str = "FTS5 porter";

/// The place of a column: the order, then anything else (sweeps).
pub fn column(name: &str) -> usize {
    [WORDS, VECTORS, FUSED, FTS5, PORTER]
        .iter()
        .position(|n| *n == name)
        .unwrap_or(usize::MAX)
}

pub struct World {
    index: Index,
    bare: rusqlite::Connection,
    /// The day relative time cues count from: the day after the newest record, as if
    /// the questions were asked then.
    pub now: time::Day,
    pub logs: u64,
    pub rows: u64,
}

impl World {
    /// memoryd's index of the logs under `state/sessions`, and bare FTS5 tables with the
    /// same rows in the same order.
    pub fn build(state: &Path) -> World {
        let mut index = Index::open(state, DataClass::Private).unwrap();
        index.catch_up(Budget::UNLIMITED).unwrap();
        let status = index.status().unwrap();
        let db = rusqlite::Connection::open(index.db_path()).unwrap();
        let mut stmt = db.prepare("SELECT text FROM docs ORDER BY rowid").unwrap();
        let texts: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let bare = rusqlite::Connection::open_in_memory().unwrap();
        bare.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(text);
             CREATE VIRTUAL TABLE p USING fts5(text, tokenize='porter unicode61');
             BEGIN;",
        )
        .unwrap();
        for t in &texts {
            bare.execute("INSERT INTO t (text) VALUES (?1)", [t])
                .unwrap();
            bare.execute("INSERT INTO p (text) VALUES (?1)", [t])
                .unwrap();
        }
        bare.execute_batch("COMMIT").unwrap();
        let newest: String = db
            .query_row("SELECT max(time) FROM docs", [], |r| r.get(0))
            .unwrap();
        let now = time::day_of(&newest).unwrap();
        World {
            now,
            index,
            bare,
            logs: status.logs,
            rows: status.rows,
        }
    }

    pub fn systems(&self, depth: usize) -> Vec<System<'_>> {
        vec![
            System {
                name: WORDS,
                ask: Box::new(move |q| {
                    self.index
                        .search_at(q, DataClass::Private, depth as u32, self.now)
                        .unwrap()
                        .into_iter()
                        .map(|r| r.hit.text)
                        .collect()
                }),
            },
            System {
                name: FTS5,
                ask: Box::new(move |q| bare(&self.bare, "t", &or_of_words(q), depth)),
            },
            System {
                name: PORTER,
                ask: Box::new(move |q| bare(&self.bare, "p", &or_of_words(q), depth)),
            },
        ]
    }
}

fn bare(conn: &rusqlite::Connection, table: &str, expr: &str, depth: usize) -> Vec<String> {
    if expr.is_empty() {
        return Vec::new();
    }
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT text FROM {table} WHERE {table} MATCH ?1 ORDER BY bm25({table}), rowid DESC LIMIT ?2"
        ))
        .unwrap();
    stmt.query_map(rusqlite::params![expr, depth as i64], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Every run of letters and digits quoted, OR-ed: what someone who knows FTS5 writes.
fn or_of_words(q: &str) -> String {
    q.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}
