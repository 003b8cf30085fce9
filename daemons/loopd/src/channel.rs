//! The channel socket's line protocol (SPEC §5). For now it frames lines and answers each
//! with one reply block; turns arrive with the loopd issue.

use plumbing::{ConnId, Outbox, Peer, Service};
use proto::config::Config;
use std::path::PathBuf;

pub struct Channel {
    config_path: PathBuf,
    cfg: Config,
}

impl Channel {
    pub fn new(config_path: PathBuf, cfg: Config) -> Channel {
        Channel { config_path, cfg }
    }
}

impl Service for Channel {
    fn accept(&mut self, _out: &mut Outbox, _id: ConnId, _peer: Peer) {}

    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>) {
        while let Some(end) = input.iter().position(|&b| b == b'\n') {
            input.drain(..=end);
            out.send(id, "error: turns are not built yet\n.\n");
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
        format!("session {}", self.cfg.session)
    }
}
