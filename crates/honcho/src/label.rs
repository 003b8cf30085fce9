//! The label of a message Honcho would be sent (docs/labels.md, docs/honcho.md), and so whether it may go.
//!
//! The owner's message carries `channel.owner_class`. An assistant answer carries the
//! context label it was written under — the epoch's `carry_label` joined with the label
//! of every record before it, the owner's words counted as `owner_class` — and not only
//! that of its own text: a reply written after a secret file was read may quote it in
//! words no rule would recognise. A message above `honcho.max_class` is held back for
//! good; the reporter passes over it.
//!
//! The context label is `proto::record::context_label_after`, stepped record by record as
//! loopd's session steps it. The labels are read from the logs, like everything the
//! reporter knows. Turns are asked
//! about in log order, so the reader keeps its place and reads each log once per scan.

use proto::head::log_file_name;
use proto::record::context_label_after;
use proto::{DataClass, Label};
use sessions::lines::{Line, LineReader};
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a message's context label could not be read from the logs.
#[derive(Debug)]
pub enum LabelError {
    /// A head or log could not be read (the error names the file).
    Files(sessions::Error),
    /// The epoch's log is not there.
    Missing { path: PathBuf },
    /// The log ends (or is torn) before the message.
    Short { path: PathBuf, end: u64, at: u64 },
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelError::Files(e) => e.fmt(f),
            LabelError::Missing { path } => write!(f, "log {} is missing", path.display()),
            LabelError::Short { path, end, at } => write!(
                f,
                "log {} ends at byte {end}, before the message at {at}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for LabelError {}

impl From<sessions::Error> for LabelError {
    fn from(e: sessions::Error) -> LabelError {
        LabelError::Files(e)
    }
}

/// The classes that decide what may be posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classes {
    /// `channel.owner_class`.
    pub owner: DataClass,
    /// `honcho.max_class`.
    pub max: DataClass,
}

/// Reads context labels from one session's logs, keeping its place between questions.
pub struct Labeller {
    dir: PathBuf,
    owner: DataClass,
    /// The epoch read, the offset read up to, and the label there.
    at: Option<(u64, u64, Label)>,
}

impl Labeller {
    pub fn new(dir: &Path, owner: DataClass) -> Labeller {
        Labeller {
            dir: dir.to_path_buf(),
            owner,
            at: None,
        }
    }

    /// The label of what the owner says.
    pub fn owner_label(&self) -> Label {
        Label::new(self.owner, false)
    }

    /// The context label in `epoch` just before the record whose line starts at `offset`.
    pub fn context_at(&mut self, epoch: u64, offset: u64) -> Result<Label, LabelError> {
        let (from, mut label) = match self.at {
            Some((e, o, l)) if e == epoch && o <= offset => (o, l),
            _ => {
                let head = sessions::head::read(&self.dir, epoch)?;
                (0, head.carry_label)
            }
        };
        let path = self.dir.join(log_file_name(epoch));
        // The reader counts lines only for its error messages; the count from `from` on
        // is unknown here and not needed, since every error names the byte offset too.
        let Some(mut reader) = LineReader::open(&path, from, 0)? else {
            return Err(LabelError::Missing { path });
        };
        while reader.pos() < offset {
            match reader.next_line()? {
                Line::Record { record, .. } => {
                    label = context_label_after(label, &record, self.owner);
                }
                Line::Torn { .. } | Line::End => {
                    return Err(LabelError::Short {
                        end: reader.pos(),
                        path,
                        at: offset,
                    })
                }
            }
        }
        self.at = Some((epoch, reader.pos(), label));
        Ok(label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::head::{head_file_name, Head, Reason, SummarySource};
    use proto::{Origin, Record};

    fn write_epoch(dir: &Path, epoch: u64, carry_label: Label, records: &[Record]) -> Vec<u64> {
        let head = Head {
            epoch,
            started: "t".into(),
            system: "s".into(),
            tools: serde_json::json!([]),
            carry: None,
            carry_label,
            reason: Reason::Start,
            summary_source: SummarySource::Model,
        };
        std::fs::write(
            dir.join(head_file_name(epoch)),
            serde_json::to_string(&head).unwrap(),
        )
        .unwrap();
        let mut offsets = Vec::new();
        let mut text = String::new();
        for r in records {
            offsets.push(text.len() as u64);
            text.push_str(&r.to_line());
        }
        std::fs::write(dir.join(log_file_name(epoch)), text).unwrap();
        offsets
    }

    #[test]
    fn an_answer_after_a_secret_read_carries_secret_and_one_before_it_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let user = Record::User {
            time: "t".into(),
            content: "hi".into(),
            origin: Origin::Owner,
            matrix: None,
        };
        let answer = Record::Assistant {
            cut: false,
            time: "t".into(),
            content: Some("a".into()),
            tool_calls: Vec::new(),
        };
        let secret = Record::ToolResult {
            time: "t".into(),
            call: 1,
            tool_call_id: "c".into(),
            name: "read_file".into(),
            content: "k".into(),
            class: DataClass::Secret,
            untrusted: false,
        };
        let at = write_epoch(
            dir.path(),
            0,
            Label::PUBLIC,
            &[user.clone(), answer.clone(), secret, answer],
        );
        let mut l = Labeller::new(dir.path(), DataClass::Private);
        assert_eq!(l.context_at(0, at[1]).unwrap().class, DataClass::Private);
        assert_eq!(l.context_at(0, at[3]).unwrap().class, DataClass::Secret);
        // Asked again from the start, it reads the log again rather than guessing.
        assert_eq!(l.context_at(0, at[1]).unwrap().class, DataClass::Private);
        // The carry label of a later epoch starts it.
        let at = write_epoch(dir.path(), 1, Label::new(DataClass::Secret, false), &[user]);
        assert_eq!(l.context_at(1, at[0]).unwrap().class, DataClass::Secret);
    }
}
