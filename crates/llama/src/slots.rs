//! llama.cpp's slot endpoints beyond the completion: `GET /slots` (which slots exist and
//! whether each has run a task since the server started) and `POST /slots/{id}?action=
//! save|restore|erase` (a slot's KV cache to and from a file under the server's
//! `--slot-save-path`). The facts these rely on are in `docs/llama-api.md`.

use super::{body, error_body, Client, Deadline, ProbeError};
use std::fmt;

/// The most of a slot action's answer read: a few numbers and a file name.
pub const MAX_ACTION_BODY: u64 = 64 * 1024;

/// One slot as `GET /slots` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotInfo {
    pub id: u64,
    pub n_ctx: u64,
    /// The slot has run a task since the server started (it shows `id_task`). A slot
    /// that has not holds nothing of ours, whatever we last put there: the server was
    /// restarted.
    pub used: bool,
}

/// Why a slot action did not happen.
#[derive(Debug)]
pub enum SlotError {
    /// 501: the server was started without `--slot-save-path`.
    NoSavePath,
    /// Any other refusal (a missing or unreadable file on restore is a 400).
    Refused { status: u16, message: String },
    /// The server could not be reached, or its answer was not what the action returns.
    Transport(String),
    /// The action did not finish within `llama.timeout_s` (`secs`).
    Timeout { secs: u64 },
}

impl fmt::Display for SlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlotError::NoSavePath => f.write_str("llama.cpp has no --slot-save-path"),
            SlotError::Refused { status, message } => {
                write!(f, "llama.cpp answered {status}: {message}")
            }
            SlotError::Transport(m) => write!(f, "llama.cpp: {m}"),
            SlotError::Timeout { secs } => write!(
                f,
                "llama.cpp: timed out: the slot action did not finish within {secs} s (llama.timeout_s)"
            ),
        }
    }
}

impl std::error::Error for SlotError {}

/// Why `GET /slots` gave no list of slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotListError {
    Probe(ProbeError),
    /// The answer was json but not an array.
    NotAList,
    /// A slot without `id` and `n_ctx` (its json, clipped).
    Slot(String),
}

impl From<ProbeError> for SlotListError {
    fn from(e: ProbeError) -> SlotListError {
        SlotListError::Probe(e)
    }
}

impl fmt::Display for SlotListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlotListError::Probe(e) => e.fmt(f),
            SlotListError::NotAList => write!(f, "GET /slots did not answer a json array"),
            SlotListError::Slot(s) => write!(f, "GET /slots: a slot without id and n_ctx: {s}"),
        }
    }
}

impl std::error::Error for SlotListError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SlotListError::Probe(e) => Some(e),
            SlotListError::NotAList | SlotListError::Slot(_) => None,
        }
    }
}

impl Client {
    /// Every slot, from `GET /slots`.
    pub fn slot_list(&self) -> Result<Vec<SlotInfo>, SlotListError> {
        let v: serde_json::Value =
            super::probe::get(self.agent(), &format!("{}/slots", self.base_url()))?;
        let list = v.as_array().ok_or(SlotListError::NotAList)?;
        list.iter()
            .map(|s| match (s["id"].as_u64(), s["n_ctx"].as_u64()) {
                (Some(id), Some(n_ctx)) => Ok(SlotInfo {
                    id,
                    n_ctx,
                    used: s.get("id_task").is_some(),
                }),
                // A bad server could send a huge slot object: the error quotes its start.
                _ => Err(SlotListError::Slot(
                    s.to_string().chars().take(200).collect(),
                )),
            })
            .collect()
    }

    /// Saves slot `slot` to `filename` under the server's save path; the tokens saved.
    pub fn slot_save(&self, slot: u32, filename: &str) -> Result<u64, SlotError> {
        let v = self.slot_action(slot, "save", Some(filename))?;
        count(&v, "n_saved")
    }

    /// Loads `filename` into slot `slot`; the tokens restored.
    pub fn slot_restore(&self, slot: u32, filename: &str) -> Result<u64, SlotError> {
        let v = self.slot_action(slot, "restore", Some(filename))?;
        count(&v, "n_restored")
    }

    /// Empties slot `slot`.
    pub fn slot_erase(&self, slot: u32) -> Result<(), SlotError> {
        self.slot_action(slot, "erase", None).map(|_| ())
    }

    fn slot_action(
        &self,
        slot: u32,
        action: &str,
        filename: Option<&str>,
    ) -> Result<serde_json::Value, SlotError> {
        let settings = self.settings();
        let url = format!("{}/slots/{slot}?action={action}", settings.base);
        let request = match filename {
            Some(name) => serde_json::json!({ "filename": name }).to_string(),
            None => "{}".to_string(),
        };
        // One deadline, `llama.timeout_s`, for the whole action: writing a large slot's
        // cache to disk can take a while, but it is one request, and the worker waits.
        let deadline = Deadline::start(settings.timeout);
        let timed_out = SlotError::Timeout {
            secs: deadline.secs,
        };
        let left = deadline.left().ok_or(SlotError::Timeout {
            secs: deadline.secs,
        })?;
        let outcome = self
            .agent()
            .post(&url)
            .timeout(left)
            .set("Content-Type", "application/json")
            .send_string(&request);
        match outcome {
            Ok(r) => {
                let bytes = match body::read_capped(r.into_reader(), MAX_ACTION_BODY) {
                    Ok(bytes) => bytes,
                    Err(body::BodyError::TimedOut) => return Err(timed_out),
                    Err(e) => return Err(SlotError::Transport(format!("POST {url}: {e}"))),
                };
                serde_json::from_slice(&bytes)
                    .map_err(|e| SlotError::Transport(format!("POST {url}: bad json: {e}")))
            }
            Err(ureq::Error::Status(501, _)) => Err(SlotError::NoSavePath),
            Err(ureq::Error::Status(status, r)) => match error_body(r) {
                Ok((_, message)) => Err(SlotError::Refused { status, message }),
                Err(body::BodyError::TimedOut) => Err(timed_out),
                Err(e) => Err(SlotError::Refused {
                    status,
                    message: e.to_string(),
                }),
            },
            Err(ureq::Error::Transport(t)) if super::retry::is_timeout(&t) => Err(timed_out),
            Err(ureq::Error::Transport(t)) => Err(SlotError::Transport(format!(
                "POST {url}: {}",
                super::transport_words(&t)
            ))),
        }
    }
}

fn count(v: &serde_json::Value, key: &str) -> Result<u64, SlotError> {
    v[key]
        .as_u64()
        .ok_or_else(|| SlotError::Transport(format!("the answer has no {key}: {v}")))
}
