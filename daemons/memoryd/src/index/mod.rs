//! The index: an SQLite FTS5 database at `<state_dir>/memory/index.sqlite` built from the
//! session logs under `<state_dir>/sessions/`, which it only ever reads.
//!
//! The index owns three things: the schema (`schema`), bringing the index up to date with
//! the logs (`catchup` finds the files, `ingest` reads one file's new lines within a
//! `budget`, `select`
//! decides which records become rows), and answering queries (`recall`). Every write for
//! a file's new lines is one transaction that also moves that file's offset and rolling
//! label, so a crash at any point leaves the index equal to a prefix of each log and the
//! next catch-up continues from exactly there.

mod bm25;
mod budget;
mod byid;
mod catchup;
pub mod common_words;
mod forget;
mod hot;
mod ingest;
mod kept_words;
mod memo;
mod near;
mod near_field;
mod purge;
mod rank;
mod rebuild;
pub(crate) mod recall;
mod rowid;
mod schema;
mod select;
mod tidy;
mod verified;

use proto::label::DataClass;
use proto::memory::{Hit, MemoryStatus};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub use budget::{Budget, Progress};
pub use near::Around;
pub(crate) use rank::{discount, is_question, said};
pub use rank::{Ranked, Rarity, Words, NEAR_WEIGHT};
pub use schema::TOKENIZER;
pub use select::{clipped_marker, MAX_ROW_BYTES};

/// Why the index could not do what was asked. File-level problems (a log that cannot be
/// read, a bad line) are not here: they are logged and that file is skipped, so one bad
/// file never stops the rest from being indexed.
#[derive(Debug)]
pub enum IndexError {
    /// The database at `path` failed.
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// A directory or file the index needs could not be created or removed.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexError::Sql { path, source } => write!(f, "index {}: {source}", path.display()),
            IndexError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for IndexError {}

impl IndexError {
    /// The error for a log line about a request: SQLite's own message can quote a query's
    /// words (an FTS5 syntax error names the token), and no log line may quote a query or
    /// a record, so only the database and SQLite's error code are named. The client gets
    /// the whole message.
    pub(crate) fn for_log(&self) -> String {
        match self {
            IndexError::Sql { path, source } => match source {
                rusqlite::Error::SqliteFailure(code, _) => {
                    format!("index {}: sqlite error {:?}", path.display(), code.code)
                }
                _ => format!("index {}: a database error", path.display()),
            },
            IndexError::Io { .. } => self.to_string(),
        }
    }
}

pub struct Index {
    conn: rusqlite::Connection,
    db_path: PathBuf,
    sessions: PathBuf,
    /// The most sensitive class this index may hold; records above it never reach disk.
    max_class: DataClass,
    /// `channel.owner_class`: the label of the owner's words in rows (docs/labels.md).
    owner_class: DataClass,
    committed_rows: u64,
    /// `committed_rows` when the segments were last merged (see `tidy`).
    tidied_at: u64,
    rowids: rowid::RowIds,
    /// The last problem reported per log file, so a file that stays broken is reported
    /// once rather than on every recall.
    reported: HashMap<PathBuf, String>,
    /// Why and since when the index is being filled again, until a catch-up finishes.
    rebuild: Option<rebuild::Rebuild>,
    /// The query groups known to match more rows than a recall scores (see `common`).
    common: common_words::Common,
    /// Long rows' words kept between recalls (`kept_words`).
    kept: kept_words::Kept,
    /// The logs verified lately, so a growing one is not checksummed whole at every look
    /// (`verified`).
    verified: verified::Verified,
    /// Matches past which a group is common: `common_words::COMMON_ROWS` but for measuring.
    common_rows: u32,
    /// The whole pass over `sessions/` under way, kept between slices (see `catchup`).
    pass: Option<catchup::Pass>,
    /// Sessions active lately, newest first, which a recall looks into (`catchup`).
    hot: std::collections::VecDeque<String>,
    /// The time of `sessions/` when it was last listed, once settled (see `catchup`).
    sessions_mtime: Option<i64>,
    /// Rows were dropped and may still be on disk until `purge` (see `purge`).
    purge_pending: bool,
}

impl Index {
    /// Opens (or creates) the index of `state_dir`. An index built for another schema or
    /// another `max_class` is rebuilt from the logs: it is derived data, and keeping rows
    /// above a lowered `max_class` would keep text the owner no longer wants on disk.
    pub fn open(state_dir: &Path, max_class: DataClass) -> Result<Index, IndexError> {
        let dir = state_dir.join("memory");
        std::fs::create_dir_all(&dir).map_err(|source| IndexError::Io {
            path: dir.clone(),
            source,
        })?;
        let db_path = dir.join("index.sqlite");
        let (conn, why) = schema::open(&db_path, max_class)?;
        let rebuild = why.map(|why| rebuild::Rebuild::start(&db_path, why));
        let sql = |source| IndexError::Sql {
            path: db_path.clone(),
            source,
        };
        let rowids = rowid::RowIds::load(&conn).map_err(sql)?;
        let purge_pending = purge::marked(&conn).map_err(sql)?;
        // A WAL left by a crash may hold pages of rows dropped since; emptying it at
        // open costs little and leaves only what the database holds.
        purge::checkpoint(&conn).map_err(sql)?;
        let mut index = Index {
            rowids,
            conn,
            db_path,
            sessions: state_dir.join("sessions"),
            max_class,
            owner_class: DataClass::Private,
            committed_rows: 0,
            tidied_at: 0,
            reported: HashMap::new(),
            rebuild,
            common: common_words::Common::default(),
            kept: kept_words::Kept::default(),
            verified: verified::Verified::default(),
            common_rows: common_words::COMMON_ROWS,
            pass: None,
            hot: std::collections::VecDeque::new(),
            sessions_mtime: None,
            purge_pending,
        };
        // The sessions the index knows, newest first, are looked into before a recall
        // from the start: after a restart nothing has been nudged or grown yet.
        index.warm_hot()?;
        Ok(index)
    }

    /// The index with the owner's words labelled `owner_class` (`channel.owner_class`,
    /// default private) in the rows it adds from now on. Rows already indexed keep theirs:
    /// delete `memory/` to relabel them.
    #[must_use]
    pub(crate) fn with_owner_class(mut self, owner_class: DataClass) -> Index {
        self.set_owner_class(owner_class);
        self
    }

    /// [`Index::with_owner_class`] for an open index (a reload).
    pub fn set_owner_class(&mut self, owner_class: DataClass) {
        self.owner_class = owner_class;
    }

    pub fn max_class(&self) -> DataClass {
        self.max_class
    }

    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    /// What the index holds, for `Status`.
    pub fn status(&self) -> Result<MemoryStatus, IndexError> {
        let (logs, rows): (i64, i64) = self
            .conn
            .query_row(
                "SELECT count(*), coalesce(sum(rows), 0) FROM files",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.sql(e))?;
        let index_bytes = std::fs::metadata(&self.db_path)
            .map(|m| m.len())
            .unwrap_or(0);
        Ok(MemoryStatus {
            logs: u64::try_from(logs).unwrap_or(0),
            rows: u64::try_from(rows).unwrap_or(0),
            index_bytes,
            ..MemoryStatus::default()
        })
    }

    /// Whether row `rowid`, read as `hit`, is untrusted text saying one sentence again
    /// and again (`query::insist`): text a fetched page wrote that wants to be read
    /// whatever passage of it is shown. Decided once a row while its words are kept
    /// (`kept_words`).
    pub(crate) fn insists(&self, rowid: i64, hit: &Hit) -> bool {
        self.kept.insists(rowid, &hit.text, hit.label.untrusted)
    }

    /// A database error on this index, named by its file.
    pub(crate) fn sql_error(&self, source: rusqlite::Error) -> IndexError {
        self.sql(source)
    }

    fn sql(&self, source: rusqlite::Error) -> IndexError {
        IndexError::Sql {
            path: self.db_path.clone(),
            source,
        }
    }

    /// Logs a problem with one log file unless the same one was already reported.
    fn report(&mut self, path: &Path, message: String) {
        if self.reported.get(path) != Some(&message) {
            plumbing::error!("{message}");
            self.reported.insert(path.to_path_buf(), message);
        }
    }

    fn clear_report(&mut self, path: &Path) {
        self.reported.remove(path);
    }
}

/// Classes are stored as their rank, so `class <= ?` in SQL is the class order.
pub(crate) fn class_rank(c: DataClass) -> i64 {
    match c {
        DataClass::Public => 0,
        DataClass::Private => 1,
        DataClass::Secret => 2,
    }
}

/// The class of a stored rank. An unknown rank can only come from a damaged database;
/// it reads as secret so that damage never lowers what a row is allowed to reach.
fn class_of_rank(rank: i64) -> DataClass {
    match rank {
        0 => DataClass::Public,
        1 => DataClass::Private,
        _ => DataClass::Secret,
    }
}

/// A row selected as `session, epoch, time, kind, role, class, untrusted, text` (as
/// `recall`, `near` and `byid` do) as a hit.
fn hit_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<proto::memory::Hit> {
    Ok(proto::memory::Hit {
        session: r.get(0)?,
        epoch: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
        time: r.get(2)?,
        kind: r.get(3)?,
        role: r.get(4)?,
        label: proto::label::Label::new(class_of_rank(r.get(5)?), r.get(6)?),
        text: r.get(7)?,
        // Set by whoever ranked the row: the words (`rank`) or the vectors (`hybrid`).
        relevance: 0,
    })
}

#[cfg(test)]
mod tests;
