//! `proto`: the vocabulary boxmaker's two daemons share — log records and labels, the
//! frame codec, memoryd's messages, `neutralise`, recall rendering, session ids, and what
//! the owner may be shown (`shown`).
//!
//! **Architecture Invariant:** proto does no I/O of its own. It reads and writes only
//! through `io::Read`/`io::Write` values its callers hand it; it opens no file or socket.

pub mod config;
pub mod frame;
pub mod head;
pub mod label;
pub mod memory;
pub mod neutralise;
pub mod query;
pub mod record;
pub mod session_id;
pub mod shown;
#[cfg(any(test, feature = "test-support"))]
pub mod test_records;
pub mod time;

pub use label::{DataClass, Label};
pub use neutralise::{neutralise, neutralise_spans};
pub use record::{FromMatrix, Origin, Record, RecordError, Tokens, ToolCall};
pub use session_id::SessionId;
