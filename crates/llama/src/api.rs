//! `ModelServer`: everything loopd asks of its model server, as one trait. The daemon's is
//! [`Client`] (HTTP to llama.cpp); the engine's unit tests script answers instead, so the
//! turn's rules (the tool loop, a cut answer, compaction after a full context, a failure
//! the same request would meet again) are checked with no server and no thread.

use super::tokenize::{Specials, TokenizeError};
use super::{
    ChatRequest, Client, Completion, Delta, LlamaError, SlotError, SlotInfo, SlotListError,
};

pub trait ModelServer: Send {
    /// Where the server is, for log lines.
    fn base_url(&self) -> String;
    /// A reloaded `[llama]`, in force from the next call on.
    fn reload(&self, cfg: &proto::config::Llama);
    /// What this server's model is known to read as special tokens; the client owns it
    /// so every call through it learns from and uses the same (`tokenize.rs`).
    fn specials(&self) -> &Specials;
    /// One completion, streamed: each delta goes to `on_delta` as it arrives.
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Completion, LlamaError>;
    fn slot_list(&self) -> Result<Vec<SlotInfo>, SlotListError>;
    /// Saves slot `slot` to `filename`; the tokens saved.
    fn slot_save(&self, slot: u32, filename: &str) -> Result<u64, SlotError>;
    /// Loads `filename` into slot `slot`; the tokens restored.
    fn slot_restore(&self, slot: u32, filename: &str) -> Result<u64, SlotError>;
    fn slot_erase(&self, slot: u32) -> Result<(), SlotError>;
    /// What is wrong with the served chat template's tool support, one line each.
    fn tool_findings(&self) -> Vec<String>;
    /// The served model's path, the key its special spans are remembered by; `None`
    /// when the server cannot say (`tokenize.rs`).
    fn model_path(&self) -> Option<String>;
    /// The spans of `text` the served model's tokenizer reads as special tokens, or why
    /// the server could not say (`tokenize.rs`).
    fn special_spans(&self, text: &str) -> Result<Vec<String>, TokenizeError>;
    /// How many tokens the served model reads in `text`, or why the server could not say
    /// (`tokenize.rs`).
    fn count_tokens(&self, text: &str) -> Result<u64, TokenizeError>;
}

impl ModelServer for Client {
    fn base_url(&self) -> String {
        Client::base_url(self)
    }

    fn reload(&self, cfg: &proto::config::Llama) {
        Client::reload(self, cfg)
    }

    fn specials(&self) -> &Specials {
        Client::specials(self)
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Completion, LlamaError> {
        Client::chat(self, req, on_delta)
    }

    fn slot_list(&self) -> Result<Vec<SlotInfo>, SlotListError> {
        Client::slot_list(self)
    }

    fn slot_save(&self, slot: u32, filename: &str) -> Result<u64, SlotError> {
        Client::slot_save(self, slot, filename)
    }

    fn slot_restore(&self, slot: u32, filename: &str) -> Result<u64, SlotError> {
        Client::slot_restore(self, slot, filename)
    }

    fn slot_erase(&self, slot: u32) -> Result<(), SlotError> {
        Client::slot_erase(self, slot)
    }

    fn tool_findings(&self) -> Vec<String> {
        Client::tool_findings(self)
    }

    /// The served model's path, from `GET /props`; `None` when the server cannot say.
    fn model_path(&self) -> Option<String> {
        let props = self.props().ok()?;
        props["model_path"].as_str().map(str::to_string)
    }

    /// On the client's own agent (connections reused), each request bounded by
    /// `TOKENIZE_TIMEOUT`.
    fn special_spans(&self, text: &str) -> Result<Vec<String>, TokenizeError> {
        super::tokenize::special_spans(self.agent(), &self.base_url(), text)
    }

    /// On the client's own agent, bounded by `TOKENIZE_TIMEOUT`.
    fn count_tokens(&self, text: &str) -> Result<u64, TokenizeError> {
        super::tokenize::count_tokens(self.agent(), &self.base_url(), text)
    }
}
