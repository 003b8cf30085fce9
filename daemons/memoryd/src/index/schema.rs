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

/// Bumped whenever the tables change shape; an index of another version is rebuilt.
const SCHEMA_VERSION: i64 = 1;

/// How long a statement waits for a lock before failing. Only memoryd writes the index,
/// but a person may hold a read transaction open in the sqlite3 shell; a few seconds of
/// patience covers that without hanging the poll loop for long.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

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
    broken_mtime INTEGER
);
CREATE VIRTUAL TABLE docs USING fts5(
    text,
    session UNINDEXED, epoch UNINDEXED, time UNINDEXED, kind UNINDEXED,
    role UNINDEXED, class UNINDEXED, untrusted UNINDEXED, file UNINDEXED
);
";

/// Opens the database at `path` ready for use, rebuilding it when it was made for another
/// schema version or another `max_class`.
pub(super) fn open(path: &Path, max_class: DataClass) -> Result<Connection, IndexError> {
    let sql = |source| IndexError::Sql {
        path: path.to_path_buf(),
        source,
    };
    let conn = connect(path).map_err(sql)?;
    if fits(&conn, max_class).map_err(sql)? {
        return Ok(conn);
    }
    drop(conn);
    remove(path)?;
    let mut conn = connect(path).map_err(sql)?;
    let tx = conn.transaction().map_err(sql)?;
    tx.execute_batch(CREATE).map_err(sql)?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('max_class', ?1)",
        [class_rank(max_class)],
    )
    .map_err(sql)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(sql)?;
    tx.commit().map_err(sql)?;
    Ok(conn)
}

/// A connection with the settings every user of the index needs: WAL so readers never
/// block the writer, and `synchronous = NORMAL`, which in WAL mode may lose the last
/// commits on power loss but never corrupts; since each commit carries its own offsets,
/// lost commits are simply read again from the logs.
pub(crate) fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

/// True when the database holds this schema built for this `max_class`.
fn fits(conn: &Connection, max_class: DataClass) -> rusqlite::Result<bool> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version != SCHEMA_VERSION {
        return Ok(false);
    }
    let built_for: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'max_class'", [], |r| {
            r.get::<_, String>(0)
        })
        .optional()?
        .and_then(|v| v.parse().ok());
    if built_for != Some(class_rank(max_class)) {
        plumbing::notice!("the index was built for another memory.max_class; rebuilding it");
        return Ok(false);
    }
    Ok(true)
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
