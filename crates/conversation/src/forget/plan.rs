//! The plan of one removal, `<state_dir>/forget/<session>.json`, written atomically before
//! the first file changes and removed once everything is done. It names the logs, the
//! lines and the `forgotten` records that replace them, and the redacted carries — never the forgotten
//! text — so a removal cut short by a crash is finished from it at the next start.

use super::find::{Found, Place};
use super::{io, ForgetError};
use honcho::forget::Record as HonchoRecord;
use honcho::moved::{Replaced, Rewrite};
use proto::{Label, Record};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most bytes of a plan read back: its line edits are short, but it holds the redacted
/// carries, each at most a head (`proto::head::MAX_HEAD_BYTES`), and a removal rarely
/// touches more than a few epochs.
pub(crate) const MAX_PLAN_BYTES: u64 = 64 * 1024 * 1024;

/// What stands in place of forgotten text inside a carried summary.
pub(crate) fn redaction(chars: usize) -> String {
    format!("[forgotten: {chars} characters]")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub session: String,
    /// When the owner asked (RFC 3339 UTC): the `forgotten` records' time.
    pub time: String,
    pub logs: Vec<LogEdit>,
    pub carries: Vec<CarryEdit>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEdit {
    pub epoch: u64,
    pub lines: Vec<LineEdit>,
}

/// Line `line` (from 0) becomes a `forgotten` record carrying `label` (docs/forgetting.md,
/// 'Labels'). A plan written by an older loopd has no label: its line becomes the
/// unlabelled note `note` it named, which every reader counts as untrusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineEdit {
    pub line: u64,
    #[serde(default)]
    pub note: String,
    /// The record's type (`user`, `tool_result`, …) and time.
    pub kind: String,
    pub time: String,
    /// Where the line started in the log as it was before the removal, and its length
    /// with its newline. Kept here, taken from the files before the first change, so a
    /// removal finished after a crash still knows them: Honcho names a reported record
    /// by that offset, and the Honcho reporter's cursor moves by the change of length.
    pub offset: u64,
    pub len: u64,
    /// The characters of text that go.
    #[serde(default)]
    pub chars: u64,
    /// The label the record carried joined with the one it was read under.
    #[serde(default)]
    pub label: Option<Label>,
    /// The record's call number, kept so it is never used again.
    #[serde(default)]
    pub call: Option<u64>,
}

impl LineEdit {
    /// The line that replaces the record: a `forgotten` record at the plan's time.
    pub(crate) fn note_line(&self, time: &str) -> String {
        match self.label {
            Some(label) => Record::Forgotten {
                time: time.to_string(),
                records: 1,
                chars: self.chars,
                class: label.class,
                untrusted: label.untrusted,
                call: self.call,
            },
            None => Record::Note {
                time: time.to_string(),
                text: self.note.clone(),
            },
        }
        .to_line()
    }
}

/// The head of `epoch` gets `carry` as its carried summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarryEdit {
    pub epoch: u64,
    pub carry: String,
}

impl Plan {
    /// The plan that removes `chosen` (found by `query`) from `session`.
    pub fn build(session: &str, time: String, chosen: &[&Found], query: &str) -> Plan {
        let mut logs: BTreeMap<u64, Vec<LineEdit>> = BTreeMap::new();
        let mut carries = Vec::new();
        for f in chosen {
            match f.place {
                Place::Record { epoch, line } => logs.entry(epoch).or_default().push(LineEdit {
                    line,
                    note: String::new(),
                    kind: f.kind.to_string(),
                    time: f.time.clone(),
                    offset: f.offset,
                    len: f.len,
                    chars: f.text.chars().count() as u64,
                    label: Some(f.label),
                    call: f.call,
                }),
                Place::Carry { epoch } => carries.push(CarryEdit {
                    epoch,
                    carry: redact(&f.text, query),
                }),
                // Not in the session's files: `super::mail` removes them.
                Place::Reminder { .. } | Place::Inbox { .. } => {}
            }
        }
        Plan {
            session: session.to_string(),
            time,
            logs: logs
                .into_iter()
                .map(|(epoch, mut lines)| {
                    lines.sort_by_key(|l| l.line);
                    lines.dedup_by_key(|l| l.line);
                    LogEdit { epoch, lines }
                })
                .collect(),
            carries,
        }
    }

    /// How the removal moves the lines of the logs, for the Honcho reporter's cursor. Its
    /// id is the plan's time: two removals of one session never share it.
    pub fn rewrite(&self) -> Rewrite {
        Rewrite {
            id: self.time.clone(),
            epochs: self
                .logs
                .iter()
                .map(|log| {
                    let lines = log
                        .lines
                        .iter()
                        .map(|l| Replaced {
                            offset: l.offset,
                            old_len: l.len,
                            new_len: l.note_line(&self.time).len() as u64,
                        })
                        .collect();
                    (log.epoch, lines)
                })
                .collect(),
        }
    }

    /// The forgotten records Honcho may hold: the owner's messages and the answers (the
    /// only records ever reported), each by its epoch and its line's offset as reported.
    pub fn reported(&self) -> Vec<HonchoRecord> {
        self.logs
            .iter()
            .flat_map(|log| {
                log.lines
                    .iter()
                    .filter(|l| matches!(l.kind.as_str(), "user" | "assistant"))
                    .map(|l| HonchoRecord {
                        epoch: log.epoch,
                        offset: l.offset,
                        time: l.time.clone(),
                    })
            })
            .collect()
    }

    /// The epochs whose prompt the removal changes.
    pub fn epochs(&self) -> Vec<u64> {
        let mut e: Vec<u64> = self
            .logs
            .iter()
            .map(|l| l.epoch)
            .chain(self.carries.iter().map(|c| c.epoch))
            .collect();
        e.sort_unstable();
        e.dedup();
        e
    }
}

/// `carry` with every sentence (or line) holding a word or phrase of `query` (as
/// `proto::query` matches them) replaced by a redaction mark; sentences side by side,
/// with only white space between, under one mark. The whole sentence goes, not only the
/// query's words: a summary says the forgotten thing in a sentence ("the locker code is
/// PELICAN 9931"), and the words beside the query's are as much of it. Should the text
/// still hold the query after that, the whole carry goes.
pub(crate) fn redact(carry: &str, query: &str) -> String {
    // Sentences overlapping or apart by white space only become one.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (start, end) in proto::query::Query::parse(query).spans(carry) {
        let (start, end) = sentence_around(carry, start, end);
        match runs.last_mut() {
            Some(last) if start <= last.1 || carry[last.1..start].trim().is_empty() => {
                last.1 = last.1.max(end);
            }
            _ => runs.push((start, end)),
        }
    }
    let mut out = String::with_capacity(carry.len());
    let mut rest = 0;
    for (start, end) in runs {
        out.push_str(&carry[rest..start]);
        out.push_str(&redaction(carry[start..end].chars().count()));
        rest = end;
    }
    out.push_str(&carry[rest..]);
    if super::find::holds(&out, query) {
        return redaction(carry.chars().count());
    }
    out
}

/// The sentence of `text` holding bytes `start..end`: back to just after the last
/// sentence end (`.`, `!`, `?` or `;` followed by white space: a clause after a
/// semicolon is a fact of its own) or line break before it, on to
/// the next sentence end (kept) or line break (not kept); the text's ends otherwise.
fn sentence_around(text: &str, start: usize, end: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let ends_sentence = |i: usize| {
        matches!(bytes[i], b'.' | b'!' | b'?' | b';')
            && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace())
    };
    let mut from = start;
    while from > 0 {
        let i = from - 1;
        if bytes[i] == b'\n' || (bytes[i].is_ascii_whitespace() && i > 0 && ends_sentence(i - 1)) {
            break;
        }
        from = i;
    }
    let mut to = end;
    while to < bytes.len() && bytes[to] != b'\n' {
        if ends_sentence(to) {
            to += 1;
            break;
        }
        to += 1;
    }
    // Both ends are ASCII bytes or the text's ends, so both are character boundaries.
    (from, to)
}

pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("forget")
}

fn file_name(session: &str) -> String {
    format!("{session}.json")
}

/// The plan file of `session` when one exists: a removal is under way or was cut short.
pub fn pending(state_dir: &Path, session: &str) -> Option<PathBuf> {
    let path = dir(state_dir).join(file_name(session));
    path.exists().then_some(path)
}

/// Writes `plan` atomically, creating the directory (durably) the first time.
pub fn write(state_dir: &Path, plan: &Plan) -> Result<(), ForgetError> {
    let d = dir(state_dir);
    if !d.is_dir() {
        std::fs::create_dir_all(&d).map_err(io("create", &d))?;
        sessions::atomic::sync_dir(state_dir)?;
    }
    let bytes = serde_json::to_vec(plan).map_err(|e| ForgetError::BadPlan {
        path: d.join(file_name(&plan.session)),
        message: e.to_string(),
    })?;
    sessions::atomic::write(&d, &file_name(&plan.session), &bytes)?;
    Ok(())
}

/// Removes the plan of `session`: the removal is done.
pub fn remove(state_dir: &Path, session: &str) -> Result<(), ForgetError> {
    let d = dir(state_dir);
    let path = d.join(file_name(session));
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(sessions::atomic::sync_dir(&d)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove", &path)(e)),
    }
}

/// Every plan left in `state_dir` (a removal a crash cut short), each read back or the
/// reason it could not be. Temporary files from a write cut short are removed: their
/// plan never took effect, so nothing was changed after them.
pub fn left(state_dir: &Path) -> Vec<Result<Plan, ForgetError>> {
    let d = dir(state_dir);
    let Ok(entries) = std::fs::read_dir(&d) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json.tmp") {
            if let Err(e) = std::fs::remove_file(&path) {
                plumbing::warn!("{}: {e}", path.display());
            }
            continue;
        }
        if !name.ends_with(".json") {
            continue;
        }
        out.push(
            plumbing::bounded::read_text(&path, MAX_PLAN_BYTES)
                .map_err(|e| ForgetError::BadPlan {
                    path: path.clone(),
                    message: e.to_string(),
                })
                .and_then(|text| {
                    serde_json::from_str(&text).map_err(|e| ForgetError::BadPlan {
                        path: path.clone(),
                        message: e.to_string(),
                    })
                }),
        );
    }
    out
}
