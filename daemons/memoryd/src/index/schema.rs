//! The index's tables and connection settings, and rebuilding an index that was made for
//! another schema or another `memory.max_class`.
//!
//! `docs` is the FTS5 table: the text is its one indexed column and everything a hit
//! needs rides along as UNINDEXED columns, so adding a record is a single insert.
//! `files` holds, per log file, how far it has been read (byte offset and line count),
//! the rolling label at that point, its row count, and whether it was set aside as
//! broken. `meta` remembers the `max_class` the index was built for.

use super::{class_rank, IndexError};
use proto::label::DataClass;
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;
use std::time::Duration;

/// Bumped whenever the tables or the tokenizer change; an index of another version is
/// rebuilt. 1: `unicode61` words. 2: `porter` stems over `unicode61` without diacritics.
/// 3: each log's identity (device, inode, time, CRC-32 of the indexed prefix), so a
/// rewritten log is noticed; rows capped at `select::MAX_ROW_BYTES`. An index added to
/// a table that every version keeps alike (`TURNS`) is not a new version: it is created
/// at open where it is missing (`add_turns`), and a memoryd that does not know it reads
/// and writes the tables as before while SQLite keeps it up to date. 4: each row's
/// neighbouring turns' words in the table `near` (`near_field`); a version-3 index gains
/// it in place, keeping its rows and vectors (`MIGRATES_FROM`), while a memoryd of
/// version 3 opening a version-4 index rebuilds it: it would add and drop rows without
/// their fields, and leave a forgotten record's words in its neighbours' fields.
const SCHEMA_VERSION: i64 = 4;

/// The version an index is brought to `SCHEMA_VERSION` from in place, without a rebuild.
const MIGRATES_FROM: i64 = 3;

/// What each version's index matches, for the line saying why an index is rebuilt.
fn describe(version: i64) -> &'static str {
    match version {
        1 => "whole words",
        2 => "word stems, without diacritics",
        3 => "word stems, without diacritics; rewritten logs noticed",
        4 => "word stems, without diacritics; rewritten logs noticed; neighbouring turns' words",
        _ => "an unknown layout",
    }
}

/// How long a statement waits for a lock before failing. Only memoryd writes the index,
/// but a person may hold a read transaction open in the sqlite3 shell; a few seconds of
/// patience covers that without hanging the poll loop for long.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// SQLite's page cache per connection, in KiB. The default 2 MiB is less than one
/// chunk's FTS5 segment flush and merge touch at a million rows, so SQLite spills dirty
/// pages mid-transaction and reads them back; 16 MiB keeps a chunk's pages in memory
/// (measured with `scripts/bench memory --index-only`) and is a small, fixed part of
/// memoryd's memory bound.
pub(crate) const CACHE_KIB: i64 = 16 * 1024;

/// Prepared statements a connection keeps for reuse. rusqlite keeps 16; a recall alone
/// runs more kinds than that (each search's variants, the rows' reads, the neighbours'
/// field, the logs looked into before it), so the oldest were thrown away and prepared
/// again on every recall, a twentieth of its time among pasted documents. Each kept
/// statement is a few KiB.
const STATEMENTS: usize = 64;

/// The FTS5 tokenizer of `docs`: porter stems over `unicode61` words with diacritics
/// removed, so "meetings" finds "meeting" and "reuniao" finds "reunião". Measured on the
/// evaluation set (`scripts/bench recall`) against `unicode61` alone: recall@1 0.776 vs
/// 0.759, recall@5 0.983 vs 1.000, MRR@10 0.868 vs 0.874 — a wash there, and kept for
/// the word forms docs/memoryd.md asks to match, which that set barely exercises.
pub const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";

const CREATE: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    session     TEXT NOT NULL,
    epoch       INTEGER NOT NULL,
    offset      INTEGER NOT NULL,
    line        INTEGER NOT NULL,
    class       INTEGER NOT NULL,
    untrusted   INTEGER NOT NULL,
    rows        INTEGER NOT NULL,
    broken      TEXT,
    broken_size INTEGER,
    broken_mtime INTEGER,
    dev         INTEGER NOT NULL DEFAULT 0,
    ino         INTEGER NOT NULL DEFAULT 0,
    mtime       INTEGER NOT NULL DEFAULT 0,
    crc         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX files_session ON files (session);
CREATE VIRTUAL TABLE docs USING fts5(
    text,
    session UNINDEXED, epoch UNINDEXED, time UNINDEXED, kind UNINDEXED,
    role UNINDEXED, class UNINDEXED, untrusted UNINDEXED, file UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
";

/// A log's rows in log order: an index of FTS5's own content table on its `file` column
/// (`c8`, the ninth column of `docs`), so the turns before and after a row in the same
/// log are an index range away (`near`). FTS5 keeps the content table; SQLite keeps this
/// index with it on every insert and delete, so a dropped or forgotten row leaves it in
/// the same transaction and no code path can forget to. Row ids follow record time
/// within a log (`rowid`), which is log order.
const TURNS: &str = "CREATE INDEX IF NOT EXISTS docs_turns ON docs_content (c8)";

/// Opens the database at `path` ready for use, rebuilding it when it was made for another
/// schema version or another `max_class`. Returns, with the connection, why the old
/// index was dropped when it was: its rows come back from the logs as the catch-up reads
/// them (see `rebuild`).
pub(super) fn open(
    path: &Path,
    max_class: DataClass,
) -> Result<(Connection, Option<String>), IndexError> {
    let sql = |source| IndexError::Sql {
        path: path.to_path_buf(),
        source,
    };
    let mut conn = connect(path).map_err(sql)?;
    let why = match fits(&conn, max_class).map_err(sql)? {
        Fit::Fits => {
            add_turns(&conn).map_err(sql)?;
            return Ok((conn, None));
        }
        Fit::Migrate => {
            add_turns(&conn).map_err(sql)?;
            if super::near_field::fill(&mut conn).map_err(sql)? {
                plumbing::notice!(
                    "gave each row its neighbouring turns' words as a second field, for ranking"
                );
            }
            conn.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(sql)?;
            return Ok((conn, None));
        }
        Fit::New => None,
        Fit::Rebuild(why) => Some(why),
    };
    drop(conn);
    remove(path)?;
    let mut conn = connect(path).map_err(sql)?;
    let tx = conn.transaction().map_err(sql)?;
    tx.execute_batch(CREATE).map_err(sql)?;
    tx.execute_batch(TURNS).map_err(sql)?;
    tx.execute_batch(super::near_field::CREATE).map_err(sql)?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('max_class', ?1)",
        [class_rank(max_class)],
    )
    .map_err(sql)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(sql)?;
    tx.commit().map_err(sql)?;
    Ok((conn, why))
}

/// A connection with the settings every user of the index needs: WAL so readers never
/// block the writer, and `synchronous = NORMAL`, which in WAL mode may lose the last
/// commits on power loss but never corrupts; since each commit carries its own offsets,
/// lost commits are simply read again from the logs. `secure_delete` makes SQLite zero
/// what it deletes (cells and freed pages) instead of leaving it in free space, so text
/// dropped from the index (a forgotten record, see `purge`) is not still on disk.
pub(crate) fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "secure_delete", "ON")?;
    // Negative: a size in KiB rather than in pages.
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    super::bm25::register(&conn)?;
    Ok(conn)
}

/// What an existing database is to this memoryd.
enum Fit {
    /// This schema, built for this `max_class`.
    Fits,
    /// Nothing there yet (a new or emptied file).
    New,
    /// The version before, built for this `max_class`: brought up to date in place.
    Migrate,
    /// An index made otherwise, and why it has to go.
    Rebuild(String),
}

fn fits(conn: &Connection, max_class: DataClass) -> rusqlite::Result<Fit> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version == 0 {
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
        if tables == 0 {
            return Ok(Fit::New);
        }
    }
    if version != SCHEMA_VERSION && version != MIGRATES_FROM {
        return Ok(Fit::Rebuild(format!(
            "it was made by schema {version} ({}) and this memoryd uses schema {SCHEMA_VERSION} ({})",
            describe(version),
            describe(SCHEMA_VERSION)
        )));
    }
    let built_for: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'max_class'", [], |r| {
            r.get::<_, String>(0)
        })
        .optional()?
        .and_then(|v| v.parse().ok());
    if built_for != Some(class_rank(max_class)) {
        return Ok(Fit::Rebuild(
            "it was built for another memory.max_class".to_string(),
        ));
    }
    Ok(if version == MIGRATES_FROM {
        Fit::Migrate
    } else {
        Fit::Fits
    })
}

/// Gives an index made before `TURNS` existed that index, built from the rows already
/// there in one pass over the content table (a few seconds at a million rows), in place:
/// rebuilding from the logs instead would embed every row again, hours at a million.
fn add_turns(conn: &Connection) -> rusqlite::Result<()> {
    let has: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'docs_turns'",
        [],
        |r| r.get(0),
    )?;
    if has == 0 {
        conn.execute_batch(TURNS)?;
        plumbing::notice!(
            "indexed each log's rows in log order, for ranking by neighbouring turns"
        );
    }
    Ok(())
}

/// Removes the database and its WAL side files, so a rebuild starts from nothing and the
/// old rows do not linger in free pages.
fn remove(path: &Path) -> Result<(), IndexError> {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(IndexError::Io {
                    path: p.into(),
                    source,
                })
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_uses_the_named_tokenizer() {
        assert!(super::CREATE.contains(&format!("tokenize = '{}'", super::TOKENIZER)));
    }
}
