//! The retrievers compared: memoryd itself, and bare FTS5 tables holding exactly the rows
//! memoryd indexed, asked the way a plain FTS5 user would.

use crate::System;
use memoryd::index::{Budget, Index};
use proto::label::DataClass;
use std::path::Path;

pub struct World {
    index: Index,
    /// The same index with a word in more than `SCALED[i]` rows common: the plan for
    /// common words (`index::common`) as it works at a million rows, where most words of
    /// a question are in more than 5 000.
    scaled: Vec<Index>,
    bare: rusqlite::Connection,
    pub records: usize,
    pub logs: u64,
    pub rows: u64,
}

impl World {
    /// memoryd's index of the logs under `state/sessions`, and a bare `fts5(text)` table
    /// (the default `unicode61` tokenizer) with the same rows in the same order.
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
        bare.execute_batch("CREATE VIRTUAL TABLE t USING fts5(text)")
            .unwrap();
        for t in &texts {
            bare.execute("INSERT INTO t (text) VALUES (?1)", [t])
                .unwrap();
        }
        let records = count_records(&state.join("sessions"));
        let scaled = SCALED
            .iter()
            .map(|&(rows, _)| {
                Index::open(state, DataClass::Private)
                    .unwrap()
                    .with_common_rows(rows)
            })
            .collect();
        World {
            scaled,
            index,
            bare,
            records,
            logs: status.logs,
            rows: status.rows,
        }
    }

    /// The columns of the table, in order.
    pub fn systems(&self, depth: usize) -> Vec<System<'_>> {
        let mut out = vec![
            System {
                name: "memoryd",
                ask: Box::new(move |q| {
                    self.index
                        .search(q, DataClass::Private, depth as u32)
                        .unwrap()
                        .into_iter()
                        .map(|h| h.text)
                        .collect()
                }),
            },
            System {
                name: "bare FTS5 (OR of the words, bm25)",
                ask: Box::new(move |q| bare(&self.bare, &or_of_words(q), depth)),
            },
            System {
                name: "memoryd before issue 10 (AND of the tokens)",
                ask: Box::new(move |q| bare(&self.bare, &and_of_tokens(q), depth)),
            },
        ];
        for (ix, &(_, name)) in self.scaled.iter().zip(SCALED) {
            out.push(System {
                name,
                ask: Box::new(move |q| {
                    ix.search(q, DataClass::Private, depth as u32)
                        .unwrap()
                        .into_iter()
                        .map(|h| h.text)
                        .collect()
                }),
            });
        }
        out
    }
}

/// Bounds for the common-word columns, with their names: 2 rows of 306 is about the
/// share 5 000 is of a million, 10 a milder one.
const SCALED: &[(u32, &str)] = &[
    (10, "memoryd, words in > 10 rows common"),
    (2, "memoryd, words in > 2 rows common"),
];

fn bare(conn: &rusqlite::Connection, expr: &str, depth: usize) -> Vec<String> {
    if expr.is_empty() {
        return Vec::new();
    }
    let mut stmt = conn
        .prepare_cached("SELECT text FROM t WHERE t MATCH ?1 ORDER BY bm25(t), rowid DESC LIMIT ?2")
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

/// memoryd's query before issue 10: each whitespace token quoted, all required.
fn and_of_tokens(q: &str) -> String {
    q.split_whitespace()
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn count_records(sessions: &Path) -> usize {
    let mut n = 0;
    for s in std::fs::read_dir(sessions).unwrap() {
        for f in std::fs::read_dir(s.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                n += std::fs::read_to_string(&p).unwrap().lines().count();
            }
        }
    }
    n
}
