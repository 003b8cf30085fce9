//! Epoch head files: read back bounded and non-blocking with the epoch check (a head must
//! be the epoch its name says), and written atomically.

use crate::{atomic, Error};
use proto::head::{head_file_name, Head, MAX_HEAD_BYTES};
use std::path::Path;

/// Reads the head of `epoch` in the session directory `dir`.
pub fn read(dir: &Path, epoch: u64) -> Result<Head, Error> {
    let path = dir.join(head_file_name(epoch));
    let text =
        plumbing::bounded::read_text(&path, MAX_HEAD_BYTES).map_err(Error::io("read", &path))?;
    let head: Head = serde_json::from_str(&text).map_err(|e| Error::BadHead {
        path: path.clone(),
        message: json_error_words(&e),
    })?;
    if head.epoch != epoch {
        return Err(Error::BadHead {
            path,
            message: format!(
                "field `epoch` is {} but the file name says {epoch}",
                head.epoch
            ),
        });
    }
    Ok(head)
}

/// What is wrong with a head's JSON, never quoting a value from it: serde's words for a
/// value of the wrong type quote the value (`invalid type: string "…"`), which may be a
/// carried summary's text, and this reaches the journal and the owner's screen.
fn json_error_words(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let said = e.to_string();
    match e.classify() {
        // What JSON's grammar expected, or that the file ended: no value of the file's.
        Category::Syntax | Category::Eof | Category::Io => said,
        // A field of the head's own named: the name is ours.
        Category::Data if said.starts_with("missing field `") => said,
        // A wrong type, value or variant: serde's words quote the value.
        Category::Data => format!(
            "a field has a value of the wrong type or kind at line {} column {}",
            e.line(),
            e.column()
        ),
    }
}

/// Writes `head` as `epoch-NNNNNN.head.json` in `dir`, atomically.
pub fn write(dir: &Path, head: &Head) -> Result<(), Error> {
    atomic::write(dir, &head_file_name(head.epoch), &to_bytes(head)?)
}

/// The bytes of a head file: pretty JSON and a final newline, for a person reading it.
pub fn to_bytes(head: &Head) -> Result<Vec<u8>, Error> {
    let mut bytes = serde_json::to_vec_pretty(head).map_err(|e| Error::BadHead {
        path: head_file_name(head.epoch).into(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proto::head::{Reason, SummarySource};
    use proto::Label;

    fn head(epoch: u64) -> Head {
        Head {
            epoch,
            started: "2026-11-30T06:00:00.000Z".into(),
            system: "s".into(),
            tools: serde_json::json!([]),
            carry: None,
            carry_label: Label::PUBLIC,
            reason: Reason::Start,
            summary_source: SummarySource::Model,
        }
    }

    #[test]
    fn a_written_head_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &head(4)).unwrap();
        assert_eq!(read(dir.path(), 4).unwrap(), head(4));
    }

    #[test]
    fn a_head_that_is_another_epoch_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = to_bytes(&head(1)).unwrap();
        std::fs::write(dir.path().join(head_file_name(2)), bytes).unwrap();
        let e = read(dir.path(), 2).unwrap_err().to_string();
        assert!(e.contains("epoch-000002.head.json"), "{e}");
        assert!(e.contains("file name says 2"), "{e}");
    }

    /// Guards the journal and the owner's screen: serde's words for a wrong type quote
    /// the value, which in a damaged head may be conversation text.
    #[test]
    fn a_damaged_head_is_described_without_quoting_its_values() {
        let dir = tempfile::tempdir().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&to_bytes(&head(0)).unwrap()).unwrap();
        for (field, value) in [
            ("epoch", serde_json::json!("my pin is 4471")),
            ("reason", serde_json::json!("my pin is 4471")),
            ("epoch", serde_json::json!(4471.5)),
        ] {
            let mut v = v.clone();
            v[field] = value;
            std::fs::write(dir.path().join(head_file_name(0)), v.to_string()).unwrap();
            let e = read(dir.path(), 0).unwrap_err().to_string();
            assert!(!e.contains("4471"), "{e}");
            assert!(e.contains("wrong type or kind at line 1"), "{e}");
        }
        std::fs::write(dir.path().join(head_file_name(0)), "garbage{{{").unwrap();
        let e = read(dir.path(), 0).unwrap_err().to_string();
        assert!(e.contains("expected value at line 1 column 1"), "{e}");
    }
}
