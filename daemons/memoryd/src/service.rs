//! The frame server: decodes requests from each connection's bytes and answers them.

use plumbing::{ConnId, Outbox, Peer, Service};
use proto::config::Config;
use proto::frame::{self, FrameError};
use proto::memory::{Request, Response};
use std::path::PathBuf;

pub struct FrameService {
    config_path: PathBuf,
    cfg: Config,
    served: u64,
}

impl FrameService {
    pub fn new(config_path: PathBuf, cfg: Config) -> FrameService {
        FrameService {
            config_path,
            cfg,
            served: 0,
        }
    }

    fn answer(&mut self, request: Request) -> Response {
        self.served += 1;
        match request {
            Request::Recall { .. } | Request::Nudge { .. } | Request::Status => Response::Error {
                message: "the index is not built yet".into(),
            },
        }
    }
}

impl Service for FrameService {
    fn accept(&mut self, _out: &mut Outbox, _id: ConnId, _peer: Peer) {}

    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>) {
        loop {
            let payload = match frame::take_payload(input) {
                Ok(Some(p)) => p,
                Ok(None) => return,
                Err(e) => return refuse(out, id, input, &e),
            };
            let response = match frame::decode::<Request>(&payload) {
                Ok(request) => self.answer(request),
                Err(e) => return refuse(out, id, input, &e),
            };
            match frame::encode(&response) {
                Ok(bytes) => out.send(id, bytes),
                Err(e) => plumbing::error!("encode response for client {}: {e}", id.0),
            }
        }
    }

    fn input_closed(&mut self, out: &mut Outbox, id: ConnId) {
        out.close(id);
    }

    fn closed(&mut self, _id: ConnId) {}

    fn reload(&mut self) -> Result<(), String> {
        self.cfg = crate::load_config(&self.config_path).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn status(&self) -> String {
        format!("serving; {} requests answered", self.served)
    }
}

/// A stream that sent a bad frame cannot be resynchronised: say why, then close it.
fn refuse(out: &mut Outbox, id: ConnId, input: &mut Vec<u8>, e: &FrameError) {
    plumbing::warn!("client {}: {e}; closing", id.0);
    input.clear();
    if let Ok(bytes) = frame::encode(&Response::Error {
        message: e.to_string(),
    }) {
        out.send(id, bytes);
    }
    out.close(id);
}
